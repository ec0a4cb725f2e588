"""ROS 2 adapters of the hardware layer (the only modules of delta_hardware that import rclpy)."""
