"""ROS 2 adapters of delta_description (need rclpy): the state node (``state_node``).

Nothing outside this subpackage imports rclpy; see ``docs/ros_interfaces.md``.
"""
