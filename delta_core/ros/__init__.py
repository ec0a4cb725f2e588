"""Helpers shared by every rclpy node of the stack (need rclpy)."""
