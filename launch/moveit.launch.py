"""MoveIt 2 on a Delta robot: move_group over the delta_robot stack.

    ros2 launch delta_robot moveit.launch.py                            # simulated robot + move_group
    ros2 launch delta_robot moveit.launch.py namespace:=r1 prefix:=r1_   # one of several robots
    ros2 launch delta_robot moveit.launch.py launch_stack:=false        # move_group only

The configuration is generated here from the robot file, as the URDF is
(:mod:`delta_description.moveit_config`: SRDF with the ``platform`` group on
``platform_x/y/z`` and the ``arms`` group, joint limits of the robot file and of the reachable
workspace, ``kinematics.yaml``, ``moveit_controllers.yaml``); the OMPL pipeline is
``config/moveit/ompl_planning.yaml``. ``delta-description moveit --robot <file> --out <dir>``
writes the same files for a configuration of your own. docs/moveit.md.

* move_group runs in ``namespace`` and executes through the hardware node's
  ``<namespace>/delta_hardware/follow_joint_trajectory`` action (one controller for both
  groups; the goal callback checks reachability and limits and refuses what the robot cannot do).
* MoveIt's state monitor reads the **full** joint state (arm, passive and platform joints):
  ``joint_states`` is remapped to ``delta/robot_joint_states`` (the state node's output) for
  move_group; ``joint_states`` itself keeps the arm joints only (identification, bags).
* ``launch_stack:=true`` (default) also starts ``delta.launch.py`` with the same arguments
  (RViz off unless ``launch_rviz:=true``).

Arguments: those of ``delta.launch.py`` and ``launch_stack``.
"""
import os

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.launch_description_sources.python_launch_file_utilities import \
    load_python_launch_file_as_module
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

HERE = os.path.dirname(os.path.abspath(__file__))
stack = load_python_launch_file_as_module(os.path.join(HERE, 'delta.launch.py'))
description = stack.description
FULL_JOINT_STATES = 'delta/robot_joint_states'


def moveit_parameters(context, robot_path, use_sim_time):
    """The parameters of move_group (one dict) for the robot file and the arguments."""
    from delta_core.robot_file import load_robot
    from delta_description.moveit_config import moveit_config
    prefix = description.prefix(context)
    urdf = description.urdf_text(context, robot_path)
    config = moveit_config(load_robot(robot_path), prefix, urdf=urdf)
    ompl_file = description.share_path('config', 'moveit', 'ompl_planning.yaml')
    if not ompl_file:
        raise RuntimeError("config/moveit/ompl_planning.yaml not found in delta_robot's share folder")
    with open(ompl_file, encoding='utf-8') as f:
        ompl = yaml.safe_load(f)
    controllers = config['moveit_controllers.yaml']
    return {
        'robot_description': ParameterValue(urdf, value_type=str),
        'robot_description_semantic': ParameterValue(config['delta.srdf'], value_type=str),
        'robot_description_kinematics': config['kinematics.yaml'],
        'robot_description_planning': config['joint_limits.yaml'],
        'planning_pipelines': ['ompl'],
        'default_planning_pipeline': 'ompl',
        'ompl': ompl,
        'moveit_controller_manager': controllers['moveit_controller_manager'],
        'moveit_simple_controller_manager': controllers['moveit_simple_controller_manager'],
        'trajectory_execution': controllers['trajectory_execution'],
        'moveit_manage_controllers': False,
        'publish_planning_scene': True,
        'publish_geometry_updates': True,
        'publish_state_updates': True,
        'publish_transforms_updates': True,
        'use_sim_time': bool(use_sim_time),
    }


def launch_setup(context):
    robot = description.resolve_robot(context)
    description.require_package('moveit_ros_move_group', 'install ros-jazzy-moveit (MoveIt 2) or use the '
                                'FollowJointTrajectory action without MoveIt')
    hw = stack.hardware_overrides(context)
    use_sim_time = stack.sim_time(context, hw.get('hardware', description.params_file_value(
        context, 'delta_hardware', 'hardware', 'sim')))
    actions = stack.launch_setup(context) if description.flag(context, 'launch_stack') else []
    actions.append(Node(
        package='moveit_ros_move_group', executable='move_group', name='move_group', output='screen',
        namespace=description.namespace(context),
        parameters=[moveit_parameters(context, robot, use_sim_time)],
        remappings=[('joint_states', FULL_JOINT_STATES), *description.clock_remappings(context)]))
    return actions


def generate_launch_description():
    declared = [e for e in stack.generate_launch_description().entities
                if isinstance(e, DeclareLaunchArgument) and e.name != 'launch_rviz']
    return LaunchDescription([
        *declared,
        DeclareLaunchArgument('launch_rviz', default_value='false', description='start RViz (the stack\'s config)'),
        DeclareLaunchArgument('launch_stack', default_value='true', description=(
            'also start the delta_robot stack (delta.launch.py) with the same arguments')),
        OpaqueFunction(function=launch_setup),
    ])
