"""ROS 2 adapters of delta_dynamics (need rclpy): the feedforward node (``dynamics_node``).

Nothing outside this subpackage imports rclpy; see ``docs/ros_interfaces.md``.
"""
