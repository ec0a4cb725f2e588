"""The delta_robot stack, one process per node.

    ros2 launch delta_robot delta.launch.py                       # simulated drives + RViz
    ros2 launch delta_robot delta.launch.py robot:=d3s800 hardware:=canopen \\
        can_interface:=socketcan can_channel:=can0 launch_rviz:=false
    ros2 launch delta_robot delta.launch.py use_ros2_control:=true  # + controller_manager

Processes (topics: ``docs/ros_interfaces.md``):

* ``delta_hardware`` (``delta-hardware-node``): the control loop on the drives;
* ``delta_dynamics`` (``delta-dynamics-node``): feedforward torques for the loop's desired state;
* ``delta_state`` (``delta-state-node``), ``robot_state_publisher`` and ``rviz2``: as in
  ``description.launch.py`` (whose arguments this file shares);
* ``delta_identification`` (``delta-identification-node``) with ``launch_identification:=true``;
* with ``use_ros2_control:=true``: ``controller_manager``'s ``ros2_control_node`` on the URDF with
  ``ros2_control:=topic`` (it publishes commands on ``/delta/joint_commands`` and reads
  ``/joint_states``, both served by the hardware node), and spawners for
  ``joint_state_broadcaster`` and ``joint_trajectory_controller`` (``controllers_file``, default
  ``<share>/config/ros2_controllers.yaml``). The broadcaster is remapped to
  ``/delta/ros2_control/joint_states`` so that it does not feed its own input.

Arguments besides those of ``description.launch.py`` (``robot``, ``params_file``,
``launch_rviz``, ``rviz_config``, ``use_robot_state_publisher``, ``use_state_node``):
``hardware`` (``sim``, also ``mock`` | ``canopen``), ``can_interface``, ``can_channel`` (empty: the params
file's or the node's default), ``use_sim_time`` (``auto``: true with the simulated drives, whose
node then publishes ``/clock``), ``real_time_factor``, ``plant`` (``explicit`` | ``multibody`` |
``mujoco``), ``use_ros2_control``, ``controllers_file``, ``launch_identification``.
``namespace`` and ``prefix`` (from description.launch.py) apply to every node: two stacks run
side by side with ``namespace:=r1 prefix:=r1_`` and ``namespace:=r2 prefix:=r2_``, each on its
own ``<namespace>/clock`` in simulated time.
The robot file is resolved once here and given to every node (and the URDF) as an absolute path;
``robot:=`` and ``hardware:=`` / ``can_*:=`` override the params file.
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.launch_description_sources.python_launch_file_utilities import \
    load_python_launch_file_as_module
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = 'delta_robot'
# the shared helpers and arguments live in description.launch.py, next to this file
description = load_python_launch_file_as_module(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), 'description.launch.py'))

HARDWARE = ('sim', 'mock', 'canopen')              # mock: ros2_control's name for the simulated drives
JOINT_STATE_BROADCASTER_TOPIC = 'delta/ros2_control/joint_states'


def hardware_overrides(context):
    out = {}
    for name in ('hardware', 'can_interface', 'can_channel', 'drives_config', 'plant'):
        value = LaunchConfiguration(name).perform(context).strip()
        if value:
            out[name] = value
    if out.get('hardware', HARDWARE[0]) not in HARDWARE:
        raise RuntimeError(f"hardware:={out['hardware']}: expected one of {', '.join(HARDWARE)}")
    rtf = LaunchConfiguration('real_time_factor').perform(context).strip()
    if rtf:
        try:
            out['real_time_factor'] = float(rtf)
        except ValueError:
            raise RuntimeError(f"real_time_factor:={rtf}: expected a number >= 0 (0: as fast as possible)") from None
    return out


def sim_time(context, hardware):
    """use_sim_time:= true | false | auto (auto: true with the simulated drives)."""
    value = LaunchConfiguration('use_sim_time').perform(context).strip().lower()
    if value not in ('auto', 'true', 'false'):
        raise RuntimeError(f"use_sim_time:={value}: expected true, false or auto")
    return hardware in ('sim', 'mock') if value == 'auto' else value == 'true'


def ros2_control_nodes(context):
    for package in ('controller_manager', 'joint_state_broadcaster', 'joint_trajectory_controller'):
        description.require_package(package, f"install ros-jazzy-{package.replace('_', '-')} "
                                             "or pass use_ros2_control:=false")
    controllers = LaunchConfiguration('controllers_file').perform(context)
    if not os.path.isfile(controllers):
        raise RuntimeError(f"controllers_file {controllers!r}: no such file")
    ns = description.namespace(context)
    clock = description.clock_remappings(context)
    spawner_args = ['--controller-manager', f'{ns}/controller_manager', '--param-file', controllers]
    broadcaster = JOINT_STATE_BROADCASTER_TOPIC if not ns else f'{ns}/{JOINT_STATE_BROADCASTER_TOPIC}'
    return [
        # Jazzy: the controller manager takes the URDF from robot_state_publisher's topic
        Node(package='controller_manager', executable='ros2_control_node', output='screen', namespace=ns,
             parameters=[controllers],
             remappings=[('~/robot_description', f'{ns}/robot_description'), *clock]),
        Node(package='controller_manager', executable='spawner', output='screen', namespace=ns,
             arguments=['joint_state_broadcaster', *spawner_args, '--controller-ros-args',
                        f'-r joint_states:=/{broadcaster.lstrip("/")}'], remappings=clock),
        Node(package='controller_manager', executable='spawner', output='screen', namespace=ns,
             arguments=['joint_trajectory_controller', *spawner_args], remappings=clock),
    ]


def launch_setup(context):
    robot = description.resolve_robot(context)
    use_ros2_control = description.flag(context, 'use_ros2_control')
    description.require_package(PACKAGE, 'build delta_robot with colcon and source install/setup.bash')
    hw = hardware_overrides(context)
    use_sim_time = sim_time(context, hw.get('hardware', description.params_file_value(
        context, 'delta_hardware', 'hardware', 'sim')))
    params = lambda **kw: description.node_parameters(context, robot, use_sim_time=use_sim_time, **kw)  # noqa: E731
    ns = description.namespace(context)
    clock = description.clock_remappings(context)
    actions = [
        Node(package=PACKAGE, executable='delta-hardware-node', name='delta_hardware', namespace=ns,
             output='screen', parameters=params(**hw), remappings=clock),
        Node(package=PACKAGE, executable='delta-dynamics-node', name='delta_dynamics', namespace=ns,
             output='screen', parameters=params(), remappings=clock),
    ]
    if description.flag(context, 'launch_identification'):
        actions.append(Node(package=PACKAGE, executable='delta-identification-node',
                            name='delta_identification', namespace=ns, output='screen', parameters=params(),
                            remappings=clock))
    actions += description.description_nodes(context, robot, 'topic' if use_ros2_control else 'none',
                                             use_sim_time=use_sim_time)
    if use_ros2_control:
        actions += ros2_control_nodes(context)
    return actions


def generate_launch_description():
    return LaunchDescription([
        *description.declare_arguments(ros2_control=False),
        DeclareLaunchArgument('hardware', default_value='', description=(
            'sim (also: mock) | canopen; empty: the params file (delta_hardware.hardware), else sim')),
        DeclareLaunchArgument('can_interface', default_value='',
                              description='python-can interface for hardware:=canopen (e.g. socketcan)'),
        DeclareLaunchArgument('can_channel', default_value='',
                              description='CAN channel for hardware:=canopen (e.g. can0)'),
        DeclareLaunchArgument('drives_config', default_value='', description=(
            'hardware:=canopen: config/drives/<name>.yaml or a path (sim_cia402: simulated '
            'drives in-process, with can_interface:=virtual)')),
        DeclareLaunchArgument('use_sim_time', default_value='auto', description=(
            'true | false | auto: simulated time, owned by the simulated robot (/clock), for every '
            'node; auto: true with the simulated drives')),
        DeclareLaunchArgument('real_time_factor', default_value='', description=(
            'simulated seconds per wall second in simulated time (0: as fast as possible); empty: 1')),
        DeclareLaunchArgument('plant', default_value='', description=(
            'the simulated robot\'s physics: explicit | multibody | mujoco; empty: explicit')),
        DeclareLaunchArgument('use_ros2_control', default_value='false',
                              description='start controller_manager with the topic-based ros2_control system'),
        DeclareLaunchArgument('controllers_file',
                              default_value=description.share_path('config', 'ros2_controllers.yaml'),
                              description='controller_manager parameters (use_ros2_control:=true)'),
        DeclareLaunchArgument('launch_identification', default_value='false',
                              description='start the online identification node delta_identification'),
        OpaqueFunction(function=launch_setup),
    ])
