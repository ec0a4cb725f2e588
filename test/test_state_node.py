"""The state node over real DDS: full joint state, platform position and path for /joint_states."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PointStamped
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker

from delta_description.passive_joints import full_joint_state
from delta_description.xacro_urdf import robot_description
from delta_dynamics.rotary.kinematics import forward_kinematics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import RosClient, run_node

pytestmark = [pytest.mark.ros, pytest.mark.timeout(60)]

MODULE = "delta_description.ros.state_node"
JOINTS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def stamp_ns(header):
    return header.stamp.sec * 10**9 + header.stamp.nanosec


def urdf_movable_joints(robot):
    root = ET.fromstring(robot_description(robot))
    return {j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"}


class Harness:
    def __init__(self):
        self.client = RosClient("test_state_client")
        n = self.client.node
        self.joints, self.points, self.paths = {}, {}, []
        n.create_subscription(JointState, "/delta/robot_joint_states",
                              lambda m: self.joints.setdefault(stamp_ns(m.header), m), 10)
        n.create_subscription(PointStamped, "/delta/platform_position",
                              lambda m: self.points.setdefault(stamp_ns(m.header), m), 10)
        n.create_subscription(Marker, "/delta/platform_path", self.paths.append, 10)
        self.pub = n.create_publisher(JointState, "/joint_states", 10)
        self.stamp = 1_700_000_000 * 10**9

    def connect(self):
        assert self.client.spin_until(lambda: self.pub.get_subscription_count() > 0, 15), \
            "the node never subscribed to /joint_states"

    def joint_states(self, names, position, velocity=()):
        self.stamp += 1_000_003
        msg = JointState(name=list(names), position=list(position), velocity=list(velocity))
        msg.header.stamp = Time(sec=self.stamp // 10**9, nanosec=self.stamp % 10**9)
        return self.stamp, msg

    def send(self, names, position, velocity=()):
        """Publish until both outputs for this message arrived; (joint state, point) answers."""
        s, msg = self.joint_states(names, position, velocity)
        ok = self.client.spin_until(lambda: s in self.joints and s in self.points, 10,
                                    every=lambda: self.pub.publish(msg))
        assert ok, "no /delta/robot_joint_states or /delta/platform_position for a valid /joint_states"
        return self.joints[s], self.points[s]


@pytest.fixture
def node():
    yield from run_node(MODULE, Harness(), "-p", "robot:=nt_robot", "-p", "path_length:=3")


def test_full_joint_state_and_platform_position(node):
    proc, h = node
    m = RotaryModel.from_robot("nt_robot")
    q, qd = [0.45, 0.30, 0.62], [0.2, -0.1, 0.05]
    # other joints on the shared topic, arm joints in another order
    names = ["gripper_joint", "arm_3_joint", "arm_1_joint", "arm_2_joint"]
    js, pt = h.send(names, [0.01, q[2], q[0], q[1]], [0.0, qd[2], qd[0], qd[1]])
    assert set(js.name) == urdf_movable_joints("nt_robot")
    assert len(js.name) == len(set(js.name)) == 3 + 3 + 12
    want = full_joint_state(m, q, qd)
    got = dict(zip(js.name, js.position))
    for n, v in zip(want.names, want.position):
        assert got[n] == pytest.approx(v, abs=1e-12), n
    assert [got[j] for j in JOINTS] == q                       # passed through
    gotv = dict(zip(js.name, js.velocity))
    for n, v in zip(want.names, want.velocity):
        assert gotv[n] == pytest.approx(v, abs=1e-12), n
    assert stamp_ns(js.header) == h.stamp
    assert pt.header.frame_id == "base_link" and stamp_ns(pt.header) == h.stamp
    np.testing.assert_allclose([pt.point.x, pt.point.y, pt.point.z], forward_kinematics(m, q), rtol=0, atol=1e-12)
    # without velocities: positions only
    js, _ = h.send(JOINTS, q)
    assert len(js.position) == 18 and len(js.velocity) == 0


def test_messages_without_the_arm_joints_are_ignored(node):
    proc, h = node
    s_other, other = h.joint_states(["gripper_joint", "arm_1_joint"], [0.0, 0.3])
    for _ in range(5):
        h.pub.publish(other)
        h.client.spin_for(0.05)
    h.send(JOINTS, [0.3, 0.3, 0.3])                       # a good one afterwards gets through
    h.client.spin_for(0.2)
    assert s_other not in h.joints and s_other not in h.points
    assert "WARN" not in proc.output(), proc.output()       # ignored silently


def test_bad_positions_are_dropped_with_a_warning(node):
    proc, h = node
    s, msg = h.joint_states(JOINTS, [0.3, float("nan"), 0.3])
    assert h.client.spin_until(lambda: "dropped /joint_states message" in proc.output(), 10,
                               every=lambda: h.pub.publish(msg))
    assert "finite" in proc.output()
    h.send(JOINTS, [0.3, 0.3, 0.3])
    assert s not in h.joints


def test_platform_path_holds_the_last_positions(node):
    proc, h = node
    m = RotaryModel.from_robot("nt_robot")
    qs = [[0.3 + 0.05 * k, 0.3, 0.35 - 0.03 * k] for k in range(5)]
    for q in qs:
        h.send(JOINTS, q)
    want = [forward_kinematics(m, q) for q in qs[-3:]]          # path_length:=3

    def path_complete():
        return bool(h.paths) and len(h.paths[-1].points) == 3 and np.allclose(
            [[p.x, p.y, p.z] for p in h.paths[-1].points], want, atol=1e-12)

    assert h.client.spin_until(path_complete, 5), [len(p.points) for p in h.paths]
    marker = h.paths[-1]
    assert marker.type == Marker.LINE_STRIP and marker.header.frame_id == "base_link"
    assert marker.action == Marker.ADD and marker.scale.x > 0 and marker.color.a > 0
