"""The feedforward node over real DDS: the node runs in a subprocess, the test talks to it with rclpy."""
import math
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from delta_core.robot_file import resolve_robot_path
from delta_dynamics.rotary.dynamics import cartesian_state, inverse_dynamics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import NodeProcess, RosClient, patient, run_node

pytestmark = [pytest.mark.ros, pytest.mark.timeout(60)]

MODULE = "delta_dynamics.ros.dynamics_node"
JOINTS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]
# one state in robot order (rad, rad/s, rad/s^2), reachable by both presets
Q, QD, QDD = [0.40, 0.52, 0.31], [0.3, -0.2, 0.5], [2.0, -1.5, 0.7]


def expected_tau(robot, q=Q, qd=QD, qdd=QDD):
    m = RotaryModel.from_robot(robot)
    return inverse_dynamics(m, *cartesian_state(m, q, qd, qdd))


def desired(stamp_ns, names=JOINTS, q=Q, qd=QD, qdd=QDD, points=1):
    """A desired state; ``names`` may be permuted, the values are permuted with them."""
    order = [JOINTS.index(n) if n in JOINTS else 0 for n in names]
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
    msg.header.frame_id = "desired"
    def pick(v):
        return [v[k] for k in order] if len(names) == len(v) == 3 else list(v)
    msg.points = [JointTrajectoryPoint(positions=pick(q), velocities=pick(qd), accelerations=pick(qdd))
                  for _ in range(points)]
    return msg


def stamp_ns(header):
    return header.stamp.sec * 10**9 + header.stamp.nanosec


class Harness:
    def __init__(self):
        self.client = RosClient("test_dynamics_client")
        n = self.client.node
        self.received = {}
        n.create_subscription(JointState, "/delta/feedforward",
                              lambda m: self.received.setdefault(stamp_ns(m.header), m), 10)
        self.pub = n.create_publisher(JointTrajectory, "/delta/desired_state", 10)
        self.stamp = 1_700_000_000 * 10**9

    def next_stamp(self):
        self.stamp += 1_000_003
        return self.stamp

    def connect(self):
        assert self.client.spin_until(lambda: self.pub.get_subscription_count() > 0, 15), \
            "the node never subscribed to /delta/desired_state"

    def ask(self, **kw):
        """Publish a (good) desired state until its feedforward arrives; the answer."""
        s = self.next_stamp()
        msg = desired(s, **kw)
        assert self.client.spin_until(lambda: s in self.received, 10, every=lambda: self.pub.publish(msg)), \
            "no feedforward for a valid desired state"
        return self.received[s]


@pytest.fixture
def node():
    yield from run_node(MODULE, Harness(), "-p", "robot:=nt_robot")


def test_feedforward_equals_inverse_dynamics_and_copies_the_stamp(node):
    proc, h = node
    ff = h.ask(names=["arm_3_joint", "arm_1_joint", "arm_2_joint"])   # permuted: matched by name
    assert list(ff.name) == JOINTS
    np.testing.assert_allclose(ff.effort, expected_tau("nt_robot"), rtol=0, atol=1e-9)
    assert ff.header.frame_id == "desired"
    assert stamp_ns(ff.header) == h.stamp
    # a second state, in robot order
    ff2 = h.ask(q=[0.1, 0.2, 0.3], qd=[0.0] * 3, qdd=[0.0] * 3)
    np.testing.assert_allclose(ff2.effort, expected_tau("nt_robot", [0.1, 0.2, 0.3], [0.0] * 3, [0.0] * 3),
                               rtol=0, atol=1e-9)


BAD = [
    ("NaN", dict(q=[0.4, math.nan, 0.3]), "positions must be finite"),
    ("inf acceleration", dict(qdd=[0.0, math.inf, 0.0]), "accelerations must be finite"),
    ("unknown joint", dict(names=["arm_1_joint", "arm_2_joint", "gripper"]), "joint_names must be the arm joints"),
    ("two joints", dict(names=["arm_1_joint", "arm_2_joint"], q=[0.4, 0.4], qd=[0.0] * 2, qdd=[0.0] * 2),
     "joint_names must be the arm joints"),
    ("short velocities", dict(qd=[0.0, 0.0]), "velocities has 2 values, expected 3"),
    ("no points", dict(points=0), "expected exactly one trajectory point, got 0"),
    ("outside the limits", dict(q=[3.0, 0.4, 0.4]), "outside its limits"),
]


def test_bad_messages_are_dropped_with_a_reason_and_the_node_survives(node):
    proc, h = node
    h.ask()
    bad_stamps = []
    for label, kw, reason in BAD:
        s = h.next_stamp()
        bad_stamps.append(s)
        msg = desired(s, **kw)
        # resend until the node has logged this reason (delivery is best effort)
        deadline = time.monotonic() + 10
        while reason not in proc.output() and time.monotonic() < deadline:
            h.pub.publish(msg)
            h.client.spin_for(0.1)
        assert reason in proc.output(), f"{label}: no warning '{reason}' in\n{proc.output()}"
    ff = h.ask()                                  # still alive and answering
    np.testing.assert_allclose(ff.effort, expected_tau("nt_robot"), rtol=0, atol=1e-9)
    assert not set(bad_stamps) & set(h.received), "a bad desired state was answered"
    assert "dropped /delta/desired_state message" in proc.output()


def test_robot_parameter_changes_the_model_at_run_time(node):
    proc, h = node
    before = np.array(h.ask().effort)
    result = h.client.set_parameter("delta_dynamics", "robot", "d3s800")
    assert result.successful, result.reason
    after = np.array(h.ask().effort)
    np.testing.assert_allclose(after, expected_tau("d3s800"), rtol=0, atol=1e-9)
    assert np.max(np.abs(after - before)) > 1e-3


def test_invalid_robot_parameter_is_rejected_with_a_reason(node, tmp_path):
    proc, h = node
    result = h.client.set_parameter("delta_dynamics", "robot", "no_such_robot")
    assert not result.successful
    assert "no_such_robot" in result.reason and "no such preset" in result.reason
    data = yaml.safe_load(Path(resolve_robot_path("nt_robot")).read_text())
    data["geometry"]["forearm_length"] = -0.3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = h.client.set_parameter("delta_dynamics", "robot", str(bad))
    assert not result.successful
    assert "geometry.forearm_length must be > 0" in result.reason
    result = h.client.set_parameter("delta_dynamics", "robot", 3)       # wrong type
    assert not result.successful
    # the old model is still in use
    np.testing.assert_allclose(h.ask().effort, expected_tau("nt_robot"), rtol=0, atol=1e-9)


def test_a_robot_file_of_the_other_kind_or_a_special_file_is_refused(node, tmp_path):
    """A linear Delta's file for a rotary robot's feedforward (it was taken: the linear model
    then computed forces for carriages that are not there); a FIFO (the executor blocked in
    open forever) and a symlink loop (it said 'not found'): refused by name, the answer comes,
    the old model stays."""
    import os
    proc, h = node
    os.mkfifo(tmp_path / "fifo.yaml")
    os.symlink("loop.yaml", tmp_path / "loop.yaml")
    for value, reason in [
            ("colombo2020", "is a linear Delta, but the robot driven (nt_robot) is a rotary one"),
            (str(tmp_path / "fifo.yaml"), "fifo.yaml: a FIFO (named pipe), not a robot file"),
            (str(tmp_path / "loop.yaml"), "loop.yaml: a symlink loop"),
            (str(tmp_path), "a directory, not a robot file")]:
        result = h.client.set_parameter("delta_dynamics", "robot", value)
        assert not result.successful and reason in result.reason, (value, result.reason)
    np.testing.assert_allclose(h.ask().effort, expected_tau("nt_robot"), rtol=0, atol=1e-9)


def test_reload_rereads_the_robot_file(node, tmp_path):
    proc, h = node
    data = yaml.safe_load(Path(resolve_robot_path("nt_robot")).read_text())
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data))
    assert h.client.set_parameter("delta_dynamics", "robot", str(path)).successful
    np.testing.assert_allclose(h.ask().effort, expected_tau(path), rtol=0, atol=1e-9)
    data["mass_properties"]["payload"] = {"mass": 2.0}
    path.write_text(yaml.safe_dump(data))
    reload = h.client.node.create_client(Trigger, "/delta_dynamics/reload")
    response = h.client.call(reload, Trigger.Request())
    assert response.success, response.message
    heavy = expected_tau(path)
    np.testing.assert_allclose(h.ask().effort, heavy, rtol=0, atol=1e-9)
    # a file broken on disk: reload fails with the reason and keeps the loaded model
    data["geometry"]["upper_arm_length"] = 0.0
    path.write_text(yaml.safe_dump(data))
    response = h.client.call(reload, Trigger.Request())
    assert not response.success and "geometry.upper_arm_length must be > 0" in response.message
    np.testing.assert_allclose(h.ask().effort, heavy, rtol=0, atol=1e-9)


@pytest.mark.parametrize("delay", [0.002, 0.03])
def test_two_sigints_while_busy_exit_cleanly(delay):
    """ros2 launch and the terminal both send SIGINT on Ctrl-C; the node must still exit 0."""
    proc = NodeProcess(MODULE)
    h = Harness()
    try:
        h.connect()
        msg = desired(h.next_stamp())
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:          # keep the node busy (about 2 kHz)
            h.pub.publish(msg)
            time.sleep(0.0005)
        rc = proc.stop(second_sigint_after=delay)
        assert rc == 0, f"exit code {rc}:\n{proc.output()}"
        assert "Traceback" not in proc.output(), proc.output()
    finally:
        h.client.close()
        proc.close()


def test_invalid_robot_at_startup_exits_1_with_the_reason():
    proc = NodeProcess(MODULE, "-p", "robot:=no_such_robot")
    try:
        proc.proc.wait(patient(60))   # a busy host: importing and failing took 23 s at load 20
        assert proc.proc.returncode == 1, proc.output()
        assert "cannot start" in proc.output() and "no such preset" in proc.output()
    finally:
        proc.close()
