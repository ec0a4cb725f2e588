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

from delta_core.ros.service_call import NoAnswer, answer, waiting_by


def patience() -> float:
    """How much longer than on an idle machine to wait for a process: the 1-minute load
    average per CPU, at least 1, at most 10 (``DELTA_TEST_PATIENCE`` overrides it).

    Every wait in these helpers is a deadline for something that *will* happen (a node comes
    up, answers, stops), not a claim about speed: on a host whose other work takes most of the
    CPU (two busy processes on 2 cores: load ~4, x2; a saturated one: x10) the same steps take
    that much longer, and a deadline sized for an idle machine failed tests that were right
    ('hardware node did not come up' at load 35). A hung process still fails, later."""
    env = os.environ.get("DELTA_TEST_PATIENCE")
    if env:
        return max(1.0, float(env))
    try:
        per_cpu = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 1.0
    return min(10.0, max(1.0, per_cpu))


def patient(seconds: float) -> float:
    """``seconds`` stretched by :func:`patience`."""
    return seconds * patience()


#: Parameters for hardware-node processes in tests that are not about the stall guard: a shared
#: CI machine can pause a process for a few hundred milliseconds, which the node (rightly)
#: answers with a quick stop (default ``max_stall`` 0.25 s). The guard itself is tested in
#: test_control_loop.py with a controlled clock.
TOLERATE_PAUSES = ("-p", "max_stall:=1.0")
#: Parameters for simulated-robot processes: simulated time, so that a busy or paused test
#: machine slows the simulation instead of changing what the robot does.
SIM_TIME = ("-p", "use_sim_time:=true")


def children(pid: int) -> list:
    """PIDs whose parent is ``pid`` (a hardware node's control-loop process)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


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
        deadline = time.monotonic() + patient(timeout)
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
                self.proc.wait(patient(timeout))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.returncode = self.proc.returncode
        return self.returncode

    def close(self):
        self.stop()
        self._out.close()
        os.unlink(self._out.name)


def run_node(module: str, harness, *ros_args: str):
    """Generator for pytest fixtures: start ``module`` as a node process, connect ``harness``
    (an object with ``connect()`` and ``client``), yield (process, harness), then require a
    clean exit on SIGINT (status 0, no traceback)."""
    proc = NodeProcess(module, *ros_args)
    try:
        harness.connect()
        yield proc, harness
        rc = proc.stop()
        assert rc == 0, f"node exited with {rc} on SIGINT:\n{proc.output()}"
        assert "Traceback" not in proc.output(), proc.output()
    finally:
        harness.client.close()
        proc.close()


class RosClient:
    """A node of the test's own in a private context, spun by hand."""

    def __init__(self, name: str):
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_until(self, predicate, timeout: float = 10.0, every=None, period: float = 0.2) -> bool:
        """Spin until ``predicate()``; call ``every()`` first and then every ``period`` s (e.g. publish).
        ``timeout`` is an idle machine's; a busy one waits longer (:func:`patient`)."""
        deadline = time.monotonic() + patient(timeout)
        next_call = 0.0
        while time.monotonic() < deadline:
            if every is not None and time.monotonic() >= next_call:
                every()
                next_call = time.monotonic() + period
            self.executor.spin_once(timeout_sec=0.02)
            if predicate():
                return True
        return predicate()

    def spin_within(self, seconds: float, done) -> bool:
        """Spin for up to ``seconds`` (not stretched) until ``done()``; whether it is."""
        return waiting_by(lambda: self.executor.spin_once(timeout_sec=0.02))(seconds, done)

    def spin_for(self, seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def call(self, client, request, timeout: float = 10.0, resend: bool = False):
        """The answer of ``client``'s service to ``request`` within ``timeout`` (patient).

        ``resend``: a query (GetState, status, GetParameters) is sent again every 2 s while
        unanswered (:mod:`delta_core.ros.service_call`: a busy host's Fast DDS drops an answer
        to a client it has not matched yet); a command is not."""
        assert client.wait_for_service(timeout_sec=patient(timeout)), f"service {client.srv_name} not available"
        try:
            return answer(client, request, patient(timeout), self.spin_within, patient(2.0) if resend else None)
        except NoAnswer as e:
            raise AssertionError(f"no answer: {e}") from None

    def set_parameter(self, node_name: str, name: str, value):
        """SetParameters on another node; the rcl_interfaces SetParametersResult."""
        client = self.node.create_client(SetParameters, f"/{node_name}/set_parameters")
        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        result = self.call(client, request, resend=True).results[0]     # setting a value twice is setting it
        self.node.destroy_client(client)
        return result

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


class HardwareProbe:
    """The test's view of one hardware node: its latest arm joint state, events and
    diagnostics, the publishers of its command topics and the clients of its services."""

    def __init__(self, client: RosClient, node: str = "delta_hardware", joint_states: str = "/joint_states",
                 hardware_id: str = "nt_robot", namespace: str = "", prefix: str = "", joints=ARMS):
        """``namespace`` (e.g. "/r1") and ``prefix`` (e.g. "r1_"): a stack started with them;
        ``joints``: the robot's actuated joints (the carriages of a linear Delta)."""
        from diagnostic_msgs.msg import DiagnosticArray
        from lifecycle_msgs.srv import GetState
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
        self.c = client
        n = client.node
        self.prefix = prefix
        self.arms = [prefix + a for a in joints]
        if namespace:
            node = f"{namespace.strip('/')}/{node}"
            joint_states = f"{namespace}/joint_states"
        self.js = None
        self.events = []
        self.diag = []
        n.create_subscription(JointState, joint_states, self._on_js, 50)
        n.create_subscription(String, f"/{node}/events", lambda m: self.events.append(m.data), 50)
        n.create_subscription(DiagnosticArray, f"{namespace}/diagnostics",
                              lambda m: self.diag.extend(s for s in m.status if s.hardware_id == hardware_id
                                                         and s.name.startswith(node.rsplit("/", 1)[-1])), 10)
        self.traj = n.create_publisher(JointTrajectory, f"/{node}/joint_trajectory", 10)
        self.cart = n.create_publisher(MultiDOFJointTrajectory, f"/{node}/cartesian_trajectory", 10)
        self.cmd = n.create_publisher(JointState, f"{namespace}/delta/joint_commands", 10)
        self.estop = n.create_client(Trigger, f"/{node}/emergency_stop")
        self.reset = n.create_client(Trigger, f"/{node}/reset")
        self.status = n.create_client(Trigger, f"/{node}/status")
        self.get_state = n.create_client(GetState, f"/{node}/get_state")

    def _on_js(self, m):
        if list(m.name) == self.arms:
            self.js = m

    @property
    def q(self):
        import numpy as np
        return np.array(self.js.position)

    def wait_ready(self, timeout: float = 120.0):          # a loaded 2-core host starts a node slowly
        """Until the node is active: its joint states flow and its trajectory topic is subscribed
        as soon as the loop runs, a moment before the activation has returned (a goal sent in
        between is rightly refused: "the hardware node is not active")."""
        import time
        from lifecycle_msgs.srv import GetState
        t0 = time.monotonic()
        ok = self.c.spin_until(lambda: self.js is not None and self.traj.get_subscription_count() > 0, timeout)
        assert ok, "hardware node did not come up"
        label = ""
        while time.monotonic() - t0 < timeout:
            label = self.c.call(self.get_state, GetState.Request(),
                                timeout=max(1.0, timeout - (time.monotonic() - t0)), resend=True)
            label = label.current_state.label
            if label == "active":
                return
            self.c.spin_for(0.05)
        raise AssertionError(f"hardware node did not become active (it is {label!r})")

    @property
    def sim_time(self) -> float:
        """The stamp of the newest joint state (simulated time when the node owns it)."""
        s = self.js.header.stamp
        return s.sec + 1e-9 * s.nanosec

    def wait_sim(self, seconds: float, timeout: float = 60.0):
        """Spin until the robot's time (its joint-state stamps) has advanced ``seconds``."""
        self.c.spin_until(lambda: self.js is not None, timeout)
        t0 = self.sim_time
        ok = self.c.spin_until(lambda: self.sim_time >= t0 + seconds, timeout)
        assert ok, f"the robot's time did not advance {seconds} s within {timeout} s"

    def event_after(self, n0: int, text: str, timeout: float = 30.0) -> str:
        ok = self.c.spin_until(lambda: any(text in e for e in self.events[n0:]), timeout)
        assert ok, f"no event containing {text!r}; got {self.events[n0:]}"
        return next(e for e in self.events[n0:] if text in e)

    def send(self, names, points) -> int:
        """Publish a JointTrajectory of (time, positions) points; the event count before it."""
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        msg = JointTrajectory(joint_names=list(names))
        for t, pos in points:
            msg.points.append(JointTrajectoryPoint(positions=list(pos), time_from_start=Duration(
                sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))))
        n0 = len(self.events)
        self.traj.publish(msg)
        return n0

    def move(self, goal, seconds: float = 0.8) -> int:
        """Move the arm joints to ``goal`` in ``seconds``; the event count before it."""
        return self.send(self.arms, [(seconds, goal)])
