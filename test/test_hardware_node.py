"""The hardware node in its own process, driven over real DDS from the test process:
trajectories (arm joints, platform joints, Cartesian), rejected messages with the robot
holding still, streamed commands and the watchdog, emergency stop and reset, lifecycle
transitions, and a clean exit on SIGINT."""

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Transform, Vector3
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

from delta_dynamics.kinematics import forward_kinematics
from delta_dynamics.model import DeltaModel
from ros_helpers import ARMS, TOLERATE_PAUSES, HardwareProbe, NodeProcess, RosClient

pytestmark = pytest.mark.ros
MODEL = DeltaModel.from_robot("nt_robot")


def _dur(t):
    return Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


@pytest.fixture(scope="module")
def stack():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-p", "feedforward:=model",
                       "-p", "command_timeout:=0.6", *TOLERATE_PAUSES)
    client = RosClient("hw_test")
    robot = HardwareProbe(client)
    try:
        robot.wait_ready()
        yield node, robot
    finally:
        client.close()
        code = node.stop()
        out = node.output()
        node.close()
        assert code == 0, f"hardware node exited with {code} on SIGINT:\n{out[-3000:]}"


def test_joint_trajectory_reaches_its_goal(stack):
    _, robot = stack
    goal = {"arm_2_joint": 0.30, "arm_1_joint": 0.20, "arm_3_joint": 0.10}
    names = list(goal)
    n0 = robot.send(names, [(0.5, [0.25, 0.1, 0.05]), (1.0, [goal[n] for n in names])])
    assert "accepted" in robot.event_after(n0, "joint trajectory")
    robot.event_after(n0, "trajectory finished", timeout=5)
    robot.c.spin_for(0.3)
    np.testing.assert_allclose(robot.q, [0.20, 0.30, 0.10], atol=2e-3)


def test_platform_joints_and_cartesian_trajectories_reach_their_goals(stack):
    _, robot = stack
    goal = [0.06, -0.03, -0.70]
    n0 = robot.send(["platform_z", "platform_x", "platform_y"], [(1.0, [goal[2], goal[0], goal[1]])])
    robot.event_after(n0, "trajectory finished", timeout=5)
    robot.c.spin_for(0.3)
    np.testing.assert_allclose(forward_kinematics(MODEL, robot.q), goal, atol=1e-3)

    goal = [-0.08, 0.05, -0.78]
    msg = MultiDOFJointTrajectory(joint_names=["platform"])
    for t, X in ((0.6, [-0.02, 0.01, -0.74]), (1.2, goal)):
        msg.points.append(MultiDOFJointTrajectoryPoint(
            transforms=[Transform(translation=Vector3(x=X[0], y=X[1], z=X[2]))], time_from_start=_dur(t)))
    n0 = len(robot.events)
    robot.cart.publish(msg)
    assert "accepted" in robot.event_after(n0, "cartesian trajectory")
    robot.event_after(n0, "trajectory finished", timeout=5)
    robot.c.spin_for(0.3)
    np.testing.assert_allclose(forward_kinematics(MODEL, robot.q), goal, atol=1e-3)


@pytest.mark.parametrize("names, points, reason", [
    (ARMS, [(1.0, [float("nan"), 0.2, 0.2])], "positions must be finite"),
    (["arm_1_joint", "arm_2_joint", "gripper"], [(1.0, [0.2, 0.2, 0.2])], "unknown joint names ['gripper']"),
    (ARMS, [(1.0, [0.2, 0.2, 0.2]), (0.5, [0.3, 0.3, 0.3])], "time_from_start must increase"),
    (["platform_x", "platform_y", "platform_z"], [(1.0, [0.0, 0.0, -3.0])], "unreachable"),
    (ARMS, [(0.05, [1.2, 0.2, 0.2])], "too fast"),
    (ARMS, [(1.0, [0.2, 0.2])], "point 0: positions has 2 values for 3 joint names"),
])
def test_bad_trajectories_are_rejected_and_the_robot_holds_still(stack, names, points, reason):
    _, robot = stack
    robot.c.spin_for(0.2)
    q0 = robot.q.copy()
    n0 = robot.send(names, points)
    event = robot.event_after(n0, "rejected")
    assert reason in event, event
    robot.c.spin_for(0.5)
    assert np.abs(robot.q - q0).max() < 1e-4


def test_streamed_commands_then_the_watchdog_holds(stack):
    _, robot = stack
    robot.c.spin_for(0.2)
    q0 = robot.q.copy()
    n0 = len(robot.events)
    k = [0]

    def stream():
        k[0] += 1
        q = q0 + min(0.002 * k[0], 0.05)
        robot.cmd.publish(JointState(name=ARMS, position=q.tolist()))

    robot.c.spin_until(lambda: False, timeout=1.0, every=stream, period=0.01)
    assert not any("watchdog" in e for e in robot.events[n0:])
    moved = robot.q - q0
    assert moved.min() > 0.02
    event = robot.event_after(n0, "watchdog", timeout=2.0)
    assert "holding position" in event
    robot.c.spin_for(0.2)
    q1 = robot.q.copy()
    robot.c.spin_for(0.5)
    assert np.abs(robot.q - q1).max() < 2e-4
    # a command that jumps is refused
    n0 = len(robot.events)
    robot.cmd.publish(JointState(name=ARMS, position=(q1 + 0.5).tolist()))
    assert "too fast" in robot.event_after(n0, "joint command rejected")


def test_emergency_stop_and_reset(stack):
    _, robot = stack
    n0 = robot.send(ARMS, [(1.5, [0.5, 0.5, 0.5])])
    robot.event_after(n0, "accepted")
    robot.c.spin_for(0.4)
    assert robot.c.call(robot.estop, Trigger.Request()).success
    robot.c.spin_for(0.1)
    q_stop = robot.q.copy()
    robot.c.spin_for(0.5)
    assert np.abs(robot.q - q_stop).max() < 1e-6              # brakes hold
    n0 = robot.send(ARMS, [(1.0, [0.1, 0.1, 0.1])])
    assert "stopped" in robot.event_after(n0, "rejected")
    assert robot.c.call(robot.reset, Trigger.Request()).success
    n0 = robot.send(ARMS, [(1.0, [0.1, 0.1, 0.1])])
    robot.event_after(n0, "trajectory finished", timeout=5)
    robot.c.spin_for(0.3)
    np.testing.assert_allclose(robot.q, [0.1, 0.1, 0.1], atol=2e-3)


def test_lifecycle_transitions_without_autostart():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_lc",
                       "-r", "/joint_states:=/lc/joint_states",
                       "-p", "autostart:=false", "-p", "feedforward:=none", *TOLERATE_PAUSES)
    client = RosClient("lc_test")
    try:
        robot = HardwareProbe(client, node="delta_hw_lc", joint_states="/lc/joint_states")
        change = client.node.create_client(ChangeState, "/delta_hw_lc/change_state")
        get = client.node.create_client(GetState, "/delta_hw_lc/get_state")
        assert client.call(get, GetState.Request()).current_state.label == "unconfigured"
        client.spin_for(0.5)
        assert robot.js is None                                  # nothing until active

        def transition(tid):
            return client.call(change, ChangeState.Request(transition=Transition(id=tid))).success

        assert transition(Transition.TRANSITION_CONFIGURE)
        assert client.call(get, GetState.Request()).current_state.label == "inactive"
        assert transition(Transition.TRANSITION_ACTIVATE)
        assert client.spin_until(lambda: robot.js is not None, 5.0)
        assert transition(Transition.TRANSITION_DEACTIVATE)
        client.spin_for(0.3)
        stamp = robot.js.header.stamp
        client.spin_for(0.3)
        assert robot.js.header.stamp == stamp                    # the loop stopped
        assert transition(Transition.TRANSITION_CLEANUP)
        assert client.call(get, GetState.Request()).current_state.label == "unconfigured"
    finally:
        client.close()
        assert node.stop() == 0
        node.close()


def test_a_bad_robot_file_leaves_the_node_unconfigured(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_bad",
                       "-p", f"robot:={bad}")
    client = RosClient("bad_test")
    try:
        get = client.node.create_client(GetState, "/delta_hw_bad/get_state")
        assert client.call(get, GetState.Request()).current_state.label == "unconfigured"
        assert node.wait_for_output("configure failed, staying unconfigured")
        assert "bad.yaml: joint_names is missing" in node.output()
    finally:
        client.close()
        assert node.stop() == 0
        node.close()
