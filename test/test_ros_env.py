"""The ROS 2 wheels from requirements-ros.txt work: a real DDS round trip in-process."""
import os
import time

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_publish_and_receive_string():
    assert 1 <= int(os.environ['ROS_DOMAIN_ID']) <= 101  # set per run by conftest.py
    context = Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('delta_env_check', context=context)
        received = []
        node.create_subscription(String, 'delta_env_check', lambda msg: received.append(msg.data), 10)
        publisher = node.create_publisher(String, 'delta_env_check', 10)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 20
        while not received and time.monotonic() < deadline:
            publisher.publish(String(data='hello delta'))
            executor.spin_once(timeout_sec=0.1)
        assert received and received[0] == 'hello delta'
        assert rclpy.get_rmw_implementation_identifier() == os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
