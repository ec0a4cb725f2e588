"""Helpers for the node tests: a node in a subprocess and an rclpy client in the test process.

The ROS domain and discovery range come from conftest.py (environment, inherited by children).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rcl_interfaces.srv import SetParameters


class NodeProcess:
    """``python -m <module> --ros-args ...`` with its output (stdout + stderr) in a temp file."""

    def __init__(self, module: str, *ros_args: str):
        self._out = tempfile.NamedTemporaryFile(prefix="node_", suffix=".log", delete=False)
        env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0",
                   RCUTILS_COLORIZED_OUTPUT="0")
        cmd = [sys.executable, "-m", module]
        if ros_args:
            cmd += ["--ros-args", *ros_args]
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, env=env)
        self.returncode = None

    def output(self) -> str:
        with open(self._out.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_for_output(self, text: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                return text in self.output()
            time.sleep(0.05)
        return False

    def stop(self, timeout: float = 10.0, second_sigint_after: float | None = None) -> int:
        """SIGINT (and a second one after ``second_sigint_after`` s, as ``ros2 launch`` plus a
        terminal's Ctrl-C send), then SIGKILL after ``timeout``; the exit code (-9 if killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            if second_sigint_after is not None:
                time.sleep(second_sigint_after)
                if self.proc.poll() is None:
                    self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.returncode = self.proc.returncode
        return self.returncode

    def close(self):
        self.stop()
        self._out.close()
        os.unlink(self._out.name)


class RosClient:
    """A node of the test's own in a private context, spun by hand."""

    def __init__(self, name: str):
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_until(self, predicate, timeout: float = 10.0, every=None, period: float = 0.2) -> bool:
        """Spin until ``predicate()``; call ``every()`` first and then every ``period`` s (e.g. publish)."""
        deadline = time.monotonic() + timeout
        next_call = 0.0
        while time.monotonic() < deadline:
            if every is not None and time.monotonic() >= next_call:
                every()
                next_call = time.monotonic() + period
            self.executor.spin_once(timeout_sec=0.02)
            if predicate():
                return True
        return predicate()

    def spin_for(self, seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def call(self, client, request, timeout: float = 10.0):
        assert client.wait_for_service(timeout_sec=timeout), f"service {client.srv_name} not available"
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout), f"no answer from {client.srv_name}"
        return future.result()

    def set_parameter(self, node_name: str, name: str, value):
        """SetParameters on another node; the rcl_interfaces SetParametersResult."""
        client = self.node.create_client(SetParameters, f"/{node_name}/set_parameters")
        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        result = self.call(client, request).results[0]
        self.node.destroy_client(client)
        return result

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
