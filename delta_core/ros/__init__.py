"""Helpers shared by the stack's rclpy nodes (``node_util`` needs rclpy; ``names`` does not)."""
