"""Two simulated Deltas on one ROS network (one domain): each stack in its own namespace with
its own joint name prefix and its own simulated clock (``<ns>/clock``). Each is moved by its own
client (``delta-ctl`` for r1, the trajectory topic for r2); neither reacts to the other's
commands, and pausing one's time leaves the other's running. Real rclpy over DDS, simulated
time throughout."""
import os
import subprocess
import sys

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Transform, Vector3
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

from delta_dynamics.rotary.kinematics import forward_kinematics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import SIM_TIME, HardwareProbe, NodeProcess, RosClient

pytestmark = pytest.mark.ros
MODEL = RotaryModel.from_robot("nt_robot")


def stack_args(ns, prefix):
    return ("-r", f"__ns:=/{ns}", "-r", f"/clock:=/{ns}/clock", "-p", f"prefix:={prefix}", *SIM_TIME)


def ctl(*args, timeout=120):
    """Run delta-ctl in a process of its own (the installed command's module)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "delta_bringup.ctl", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def two():
    procs = {ns: NodeProcess("delta_hardware.ros.hardware_node", "-p", "feedforward:=model", *stack_args(ns, f"{ns}_"))
             for ns in ("r1", "r2")}
    state = NodeProcess("delta_description.ros.state_node", *stack_args("r1", "r1_"), "-p", "max_rate:=0.0")
    client = RosClient("two_stacks_test")
    robots = {ns: HardwareProbe(client, namespace=f"/{ns}", prefix=f"{ns}_") for ns in procs}
    try:
        for r in robots.values():
            r.wait_ready(60.0)
        yield client, robots, procs, state
    finally:
        client.close()
        for p in (*procs.values(), state):
            code = p.stop()
            out = p.output()
            p.close()
            assert code == 0, f"exit {code}:\n{out[-3000:]}"
            assert "Traceback" not in out, out


def test_each_stack_has_its_own_names_clock_and_topics(two):
    client, robots, procs, _ = two
    for ns, r in robots.items():
        assert r.js.name == [f"{ns}_arm_1_joint", f"{ns}_arm_2_joint", f"{ns}_arm_3_joint"]
    topics = dict(client.node.get_topic_names_and_types())
    for ns in ("r1", "r2"):
        for t in ("joint_states", "clock", "diagnostics", "delta/desired_state", "delta_hardware/events"):
            assert f"/{ns}/{t}" in topics, (t, sorted(topics))
    # nobody owns the global clock or the global joint states
    node = client.node
    assert node.count_publishers("/clock") == 0 and node.count_publishers("/joint_states") == 0
    assert node.count_publishers("/r1/clock") == 1 and node.count_publishers("/r2/clock") == 1
    clocks = {}
    for ns in ("r1", "r2"):
        node.create_subscription(Clock, f"/{ns}/clock", lambda m, ns=ns: clocks.__setitem__(ns, m.clock), 10)
    assert client.spin_until(lambda: len(clocks) == 2, 20)


def test_each_stack_follows_only_its_own_commands(two):
    client, robots, _, _ = two
    r1, r2 = robots["r1"], robots["r2"]
    q2_before = r2.q.copy()
    # r1 is moved by delta-ctl in its namespace (platform point); r2 must not move
    goal = [0.04, -0.02, -0.72]
    res = ctl("--namespace", "r1", "--prefix", "r1_", "move", *map(str, goal), "--duration", "1.0", "--wait")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "accepted" in res.stdout and "trajectory finished" in res.stdout
    r1.wait_sim(0.3)
    np.testing.assert_allclose(forward_kinematics(MODEL, r1.q), goal, atol=1e-3)
    r2.wait_sim(0.3)
    np.testing.assert_allclose(r2.q, q2_before, atol=1e-4)
    # r2 is moved on its own topic with its own names; r1 holds
    q1_before = r1.q.copy()
    n0 = r2.move([0.25, 0.15, 0.35], 0.8)
    r2.event_after(n0, "trajectory finished")
    r2.wait_sim(0.3)
    np.testing.assert_allclose(r2.q, [0.25, 0.15, 0.35], atol=2e-3)
    np.testing.assert_allclose(r1.q, q1_before, atol=1e-4)
    # r1's names on r2's topic are refused with the reason; r2 stays
    n0 = r2.send(r1.arms, [(1.0, [0.1, 0.1, 0.1])])
    assert "lack this robot's prefix 'r2_'" in r2.event_after(n0, "rejected")
    # a Cartesian trajectory must name r2's platform joint, with r2's prefix (any name moved it)
    for names in (["platform"], ["r1_platform"], ["bogus"]):
        msg = MultiDOFJointTrajectory(joint_names=names, points=[MultiDOFJointTrajectoryPoint(
            transforms=[Transform(translation=Vector3(x=0.03, y=0.0, z=-0.74))], time_from_start=Duration(sec=1))])
        n0 = len(r2.events)
        r2.cart.publish(msg)
        assert "joint_names must be ['r2_platform']" in r2.event_after(n0, "cartesian trajectory rejected")
    r2.wait_sim(0.3)
    np.testing.assert_allclose(r2.q, [0.25, 0.15, 0.35], atol=2e-3)


def test_pausing_one_clock_leaves_the_other_running(two):
    _, robots, _, _ = two
    r1, r2 = robots["r1"], robots["r2"]
    res = ctl("--namespace", "r1", "pause")
    assert res.returncode == 0, res.stderr
    try:
        # joint states published before the pause may still be in flight on a busy host: wait
        # until r1's time has stood still for 0.5 s (it must, within 30 s)
        t1, settled = None, False
        for _ in range(60):
            t1 = r1.sim_time
            r1.c.spin_for(0.5)
            if r1.sim_time == t1:
                settled = True
                break
        assert settled, "r1's time went on after the pause"
        r2.wait_sim(0.5)                        # r2's time goes on ...
        assert r1.sim_time - t1 < 0.01          # ... r1's stands still
    finally:
        assert ctl("--namespace", "r1", "resume").returncode == 0
    r1.wait_sim(0.2)


def test_the_state_node_publishes_the_full_prefixed_state_in_its_namespace(two):
    client, robots, _, _ = two
    got = []
    client.node.create_subscription(JointState, "/r1/delta/robot_joint_states", got.append, 10)
    assert client.spin_until(lambda: got, 20)
    names = list(got[-1].name)
    assert names[:3] == robots["r1"].arms and "r1_platform_z" in names and "r1_forearm_3b_tilt_joint" in names
    assert all(n.startswith("r1_") for n in names)


def test_delta_ctl_status_and_a_stack_that_is_not_there(two):
    res = ctl("--namespace", "r2", "status")
    assert res.returncode == 0, res.stderr
    assert '"node": "/r2/delta_hardware"' in res.stdout and '"r2_arm_1_joint"' in res.stdout
    res = ctl("--namespace", "r9", "--timeout", "1", "status")
    assert res.returncode == 1
    assert "no /r9/delta_hardware/status service" in res.stderr and "ROS_DOMAIN_ID" in res.stderr
