"""View a Delta robot: robot_state_publisher + the state node (``delta_state``) + RViz.

    ros2 launch delta_robot description.launch.py [robot:=d3s800] [launch_rviz:=false]

Nothing here drives the robot: the state node turns whatever arrives on ``/joint_states`` (the
hardware node, a bag, ``joint_state_publisher_gui``) into ``/delta/robot_joint_states``, which
robot_state_publisher turns into TF. ``launch/delta.launch.py`` includes this file.

Arguments (``ros2 launch delta_robot description.launch.py -s`` lists them):

* ``robot``: robot preset name (``config/robots/<name>.yaml``) or robot file path. Empty: the
  ``robot`` of the params file (section ``delta_hardware``, else ``delta_state``, else
  ``delta_dynamics``), else ``nt_robot``. Resolved here to an absolute file path that every node
  and the URDF get, so they all use the same file.
* ``params_file``: ROS 2 parameter file for the nodes (default ``<share>/config/delta.yaml``).
* ``ros2_control``: ``none`` | ``mock`` | ``topic``: the ``<ros2_control>`` block in the URDF.
* ``use_robot_state_publisher``, ``use_state_node``, ``launch_rviz``: start those (true/false).
* ``rviz_config``: RViz config (default ``<share>/config/delta.rviz``, ``delta_linear.rviz`` for a
  linear Delta).
* ``namespace``: ROS namespace of every node (e.g. ``r1``); their topics are relative, and
  ``/clock`` is remapped to ``<namespace>/clock`` (docs/ros_interfaces.md, "Namespaces and
  prefixes"). ``prefix``: joint and frame name prefix (e.g. ``r1_``) of the URDF and every node.

The URDF is generated in this process from ``delta.urdf.xacro`` with the xacro Python API
(``delta_description.xacro_urdf.robot_description``; the same as
``xacro delta.urdf.xacro robot_file:=<path> ros2_control:=<mode>``), after the robot file has
been validated, so a bad robot file stops the launch with the loader's message.
"""
import os

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'delta_robot'
DEFAULT_ROBOT = 'nt_robot'
TRUE = ('true', '1', 'yes', 'on')


def share_path(*parts):
    """A data file of delta_robot (installed share dir or source tree); '' if not found."""
    try:
        from delta_core.share import share_file
        return str(share_file(*parts))
    except (ImportError, FileNotFoundError):
        pass
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory(PACKAGE), *parts)
        return path if os.path.exists(path) else ''
    except Exception:  # PackageNotFoundError, no ament index
        return ''


def require_package(package, hint):
    """Fail before anything starts if ``package`` is not installed (launch would otherwise start
    the processes before it and then stop on the missing one, leaving those running)."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        get_package_prefix(package)
    except (PackageNotFoundError, KeyError, ValueError, OSError):   # OSError: no AMENT_PREFIX_PATH
        raise RuntimeError(f"package '{package}' not found (AMENT_PREFIX_PATH="
                           f"{os.environ.get('AMENT_PREFIX_PATH', '')!r}): {hint}") from None


def flag(context, name):
    value = LaunchConfiguration(name).perform(context).strip().lower()
    if value not in TRUE + ('false', '0', 'no', 'off'):
        raise RuntimeError(f"launch argument {name}:={value!r}: expected true or false")
    return value in TRUE


def robot_from_params(params_file):
    """The ``robot`` parameter of the params file (hardware, state, dynamics section), or None."""
    if not params_file:
        return None
    from delta_core.text_input import TextInputError, read_text
    try:       # a FIFO, a device, a directory: refused by name, no open blocks (delta_core.paths)
        data = yaml.safe_load(read_text(params_file, 16 << 20, 'a ROS 2 parameter file')) or {}
    except TextInputError as e:
        raise RuntimeError(f"params_file {e}") from None
    except OSError as e:
        raise RuntimeError(f"params_file {params_file}: cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise RuntimeError(f"params_file {params_file}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"params_file {params_file}: not a ROS 2 parameter file (no node sections)")
    for node in ('delta_hardware', 'delta_state', 'delta_dynamics'):
        for key in node_sections(node) + ('/**',):
            section = data.get(key)
            if isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict):
                robot = section['ros__parameters'].get('robot')
                if isinstance(robot, str) and robot.strip():
                    return robot.strip()
    return None


def node_sections(node):
    """The keys a params file may give ``node``'s section under ("/**/node" applies in any namespace)."""
    return ('/**/' + node, node, '/' + node)


def namespace(context):
    """The ``namespace`` argument as an absolute namespace ('' for the root)."""
    from delta_core.ros.names import check_namespace
    try:
        return check_namespace(LaunchConfiguration('namespace').perform(context))
    except ValueError as e:
        raise RuntimeError(f"namespace:=: {e}") from None


def prefix(context):
    from delta_core.ros.names import check_prefix
    try:
        return check_prefix(LaunchConfiguration('prefix').perform(context).strip())
    except ValueError as e:
        raise RuntimeError(f"prefix:=: {e}") from None


def clock_remappings(context):
    """``remappings=`` entries of every node of a namespaced stack: its own /clock."""
    ns = namespace(context)
    return [('/clock', f'{ns}/clock')] if ns else []


def params_file_value(context, node, name, default):
    """The parameter ``name`` of ``node`` in the params file, or ``default``."""
    params_file = LaunchConfiguration('params_file').perform(context)
    if not params_file or not os.path.isfile(params_file):
        return default
    from delta_core.text_input import read_text
    data = yaml.safe_load(read_text(params_file, 16 << 20, 'a ROS 2 parameter file')) or {}
    for key in node_sections(node):
        section = data.get(key) if isinstance(data, dict) else None
        if isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict):
            return section['ros__parameters'].get(name, default)
    return default


def resolve_robot(context):
    """Absolute path of the robot file chosen by ``robot:=`` / the params file / the default."""
    from delta_core.robot_file import RobotFileError, load_robot, resolve_robot_path
    robot = LaunchConfiguration('robot').perform(context).strip()
    if not robot:
        robot = robot_from_params(LaunchConfiguration('params_file').perform(context)) or DEFAULT_ROBOT
    try:
        path = resolve_robot_path(robot).resolve()
        load_robot(path)
    except RobotFileError as e:
        raise RuntimeError(f"robot:={robot}: {e}") from None
    return str(path)


def node_parameters(context, robot_path, **overrides):
    """``parameters=`` for one of our nodes: the params file, then the overrides."""
    params_file = LaunchConfiguration('params_file').perform(context)
    out = []
    if params_file:
        if not os.path.isfile(params_file):
            raise RuntimeError(f"params_file {params_file}: no such file")
        out.append(params_file)
    out.append({'robot': robot_path, 'prefix': prefix(context), **overrides})
    return out


def urdf_text(context, robot_path, ros2_control='none'):
    """The URDF of the robot file with the ``prefix`` on every link and joint; a namespaced
    ros2_control topic system uses the namespace's topics."""
    from delta_description.prefix import prefix_urdf
    from delta_description.xacro_urdf import robot_description
    topics = {}
    if ros2_control == 'topic' and namespace(context):
        topics = {'joint_commands_topic': 'delta/joint_commands', 'joint_states_topic': 'joint_states'}
    return prefix_urdf(robot_description(robot_path, ros2_control=ros2_control, **topics), prefix(context))


def description_nodes(context, robot_path, ros2_control, use_sim_time=False):
    """robot_state_publisher, the state node and RViz, as chosen by the arguments (on
    simulated time with ``use_sim_time``), in the ``namespace``."""
    sim = {'use_sim_time': bool(use_sim_time)}
    ns = namespace(context)
    clock = clock_remappings(context)
    actions = []
    if flag(context, 'use_robot_state_publisher'):
        require_package('robot_state_publisher', 'install ros-jazzy-robot-state-publisher '
                        'or pass use_robot_state_publisher:=false')
        urdf = urdf_text(context, robot_path, ros2_control)
        actions.append(Node(
            package='robot_state_publisher', executable='robot_state_publisher',
            name='robot_state_publisher', namespace=ns, output='screen',
            parameters=[{'robot_description': ParameterValue(urdf, value_type=str), **sim}],
            remappings=[('joint_states', 'delta/robot_joint_states'), *clock]))
    if flag(context, 'use_state_node'):
        require_package(PACKAGE, 'build delta_robot with colcon and source install/setup.bash')
        actions.append(Node(
            package=PACKAGE, executable='delta-state-node', name='delta_state', namespace=ns, output='screen',
            parameters=node_parameters(context, robot_path, **sim), remappings=clock))
    if flag(context, 'launch_rviz'):
        require_package('rviz2', 'install ros-jazzy-rviz2 or pass launch_rviz:=false')
        config = LaunchConfiguration('rviz_config').perform(context).strip()
        if not config:                      # the view of the robot's kind
            from delta_core.robot_file import load_robot
            linear = load_robot(robot_path).type == 'linear'
            config = share_path('config', 'delta_linear.rviz' if linear else 'delta.rviz')
        actions.append(Node(
            package='rviz2', executable='rviz2', name='rviz2', namespace=ns, output='log', parameters=[sim],
            arguments=['-d', config] if config else [], remappings=clock))
    return actions


def launch_setup(context):
    ros2_control = LaunchConfiguration('ros2_control').perform(context).strip()
    return description_nodes(context, resolve_robot(context), ros2_control)


def declare_arguments(ros2_control=True):
    """The arguments of this file (``delta.launch.py`` declares them too, but ros2_control)."""
    return [
        DeclareLaunchArgument('robot', default_value='', description=(
            'robot preset name or robot file path; empty: the robot of params_file, else nt_robot')),
        DeclareLaunchArgument('params_file', default_value=share_path('config', 'delta.yaml'),
                              description='ROS 2 parameter file for the delta_robot nodes'),
        *([DeclareLaunchArgument('ros2_control', default_value='none', choices=['none', 'mock', 'topic'],
                                 description='<ros2_control> block of the URDF')] if ros2_control else []),
        DeclareLaunchArgument('use_robot_state_publisher', default_value='true',
                              description='start robot_state_publisher (TF from /delta/robot_joint_states)'),
        DeclareLaunchArgument('use_state_node', default_value='true',
                              description='start delta_state (full joint state, platform position and path)'),
        DeclareLaunchArgument('launch_rviz', default_value='true', description='start RViz'),
        DeclareLaunchArgument('rviz_config', default_value='', description=(
            'RViz config file; empty: <share>/config/delta.rviz, or delta_linear.rviz for a linear Delta')),
        DeclareLaunchArgument('namespace', default_value='', description=(
            'ROS namespace of every node (e.g. r1): topics, services and actions under it, /clock '
            'remapped to <namespace>/clock; several robots on one network')),
        DeclareLaunchArgument('prefix', default_value='', description=(
            'joint and frame name prefix (e.g. r1_) of the URDF and every node')),
    ]


def generate_launch_description():
    return LaunchDescription([*declare_arguments(), OpaqueFunction(function=launch_setup)])
