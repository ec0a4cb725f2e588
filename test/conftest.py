"""Test-session setup shared by all tests.

Set at import time (before any test or rclpy import) so every subprocess a test
spawns inherits the same values.
"""
import os

# A ROS domain of its own per test run, so parallel runs / CI jobs on one host
# don't see each other's topics. Fast DDS accepts 0..101 (port range); we use 10..99.
os.environ['ROS_DOMAIN_ID'] = str(os.getpid() % 90 + 10)
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
