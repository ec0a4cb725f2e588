"""The hardware node's FollowJointTrajectory action against joint_trajectory_controller's
behaviour, over real DDS, in simulated time: invalid goals rejected in the goal callback with
the reason, path / goal / component tolerances with JTC's error codes, stamped feedback,
preemption and cancel, the trajectories MoveIt produces for the generated groups, the
companion node's own name under a launch-style ``__node:=`` remap, and a clean exit (no
SIGABRT) while a goal runs.

Needs ``control_msgs``: ``make setup`` builds it into .venv where no ROS install has it
(interfaces/README.md), so these tests run everywhere, CI included."""
import math
import signal
import time

import numpy as np
import pytest

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointComponentTolerance, JointTolerance
from geometry_msgs.msg import Transform, Vector3
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectoryPoint

pytestmark = pytest.mark.ros

from delta_core.robot_file import load_robot
from delta_description.moveit_config import joint_limits
from delta_dynamics.rotary.kinematics import forward_kinematics, inverse_kinematics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import ARMS, SIM_TIME, HardwareProbe, NodeProcess, RosClient

MODEL = RotaryModel.from_robot("nt_robot")
PLATFORM = ["platform_x", "platform_y", "platform_z"]
Result = FollowJointTrajectory.Result
NS = "/r1"
ACTION = f"{NS}/delta_hardware/follow_joint_trajectory"


def dur(t):
    return Duration(sec=int(t), nanosec=min(int(round((t - int(t)) * 1e9)), 999_999_999))


@pytest.fixture(scope="module")
def stack():
    # as ros2 launch starts it: __node and __ns remaps apply to every node of the process
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hardware", "-r", f"__ns:={NS}",
                       "-r", f"/clock:={NS}/clock", "-p", "feedforward:=model", *SIM_TIME)
    client = RosClient("fjt_test")
    robot = HardwareProbe(client, namespace=NS)
    action = ActionClient(client.node, FollowJointTrajectory, ACTION)
    try:
        robot.wait_ready(60.0)
        assert action.wait_for_server(timeout_sec=30.0), node.output()
        yield node, robot, action
    finally:
        action.destroy()
        client.close()
        code = node.stop()
        out = node.output()
        node.close()
        assert code == 0, f"hardware node exited with {code} on SIGINT:\n{out[-3000:]}"
        assert "terminate called" not in out and "Traceback" not in out, out[-3000:]


def run_goal(robot, action, goal, timeout=60.0):
    """(accepted, status, result, feedback list, events since)."""
    feedback = []
    n0 = len(robot.events)
    fut = action.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
    assert robot.c.spin_until(fut.done, 20.0), "no goal response"
    handle = fut.result()
    if not handle.accepted:
        robot.c.spin_until(lambda: any("action goal rejected" in e for e in robot.events[n0:]), 10.0)
        return False, None, None, feedback, robot.events[n0:]
    res = handle.get_result_async()
    assert robot.c.spin_until(res.done, timeout), "no result"
    return True, res.result().status, res.result().result, feedback, robot.events[n0:]


def test_the_action_runs_on_the_hardware_nodes_time_with_no_clock_subscription_of_its_own(stack):
    """The companion node's clock is the hardware node's simulated time (a goal's accepted stamp),
    set in-process: neither node of the hardware process subscribes /clock, which it publishes."""
    _, robot, action = stack
    robot.wait_sim(0.1)
    # the node's clock is at least the newest stamp seen, less a /clock period (clock_rate 100 Hz)
    q, t0 = robot.q.copy(), robot.sim_time - 0.02
    fut = action.send_goal_async(joint_goal(ARMS, [(0.2, q)]))
    assert robot.c.spin_until(fut.done, 20.0), "no goal response"
    handle = fut.result()
    assert handle.accepted
    stamp = handle.stamp.sec + 1e-9 * handle.stamp.nanosec
    assert t0 <= stamp < t0 + 100.0, (stamp, t0)        # simulated time, not the wall clock (~1.8e9 s)
    res = handle.get_result_async()
    assert robot.c.spin_until(res.done, 60.0), "no result"
    readers = {info.node_name for info in robot.c.node.get_subscriptions_info_by_topic(f"{NS}/clock")}
    assert not readers & {"delta_hardware", "delta_hardware_actions"}, readers


def joint_goal(names, points, **tolerances):
    traj = JointTrajectory(joint_names=list(names))
    for t, q in points:
        traj.points.append(JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=dur(t)))
    return FollowJointTrajectory.Goal(trajectory=traj, **tolerances)


def moveit_like(start, goal, vmax, amax, dt=0.05):
    """What MoveIt's time-optimal parameterisation gives for a straight line in joint (or
    platform) space: a trapezoidal profile within ``vmax``/``amax`` per coordinate, sampled at
    ``dt``, a first point at time 0 equal to the start state, positions, velocities and
    accelerations on every point."""
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    d = goal - start
    L = float(np.max(np.abs(d)))            # the largest coordinate distance: |u_i| <= 1 below
    v, a = vmax, amax
    ta = v / a
    if L < v * ta:                       # triangular
        ta = math.sqrt(L / a)
        v = a * ta
    T = 2 * ta + (L - v * ta) / v
    ts = np.append(np.arange(0.0, T, dt), T)
    s, sd, sdd = [], [], []
    for t in ts:
        if t < ta:
            s.append(0.5 * a * t * t), sd.append(a * t), sdd.append(a)
        elif t <= T - ta:
            s.append(0.5 * a * ta * ta + v * (t - ta)), sd.append(v), sdd.append(0.0)
        else:
            r = T - t
            s.append(L - 0.5 * a * r * r), sd.append(a * r), sdd.append(-a)
    u = d / L
    return ts, [start + u * x for x in s], [u * x for x in sd], [u * x for x in sdd]


def trajectory(names, ts, q, qd, qdd):
    traj = JointTrajectory(joint_names=list(names))
    for k, t in enumerate(ts):
        traj.points.append(JointTrajectoryPoint(positions=list(map(float, q[k])), velocities=list(map(float, qd[k])),
                                                accelerations=list(map(float, qdd[k])), time_from_start=dur(t)))
    return traj


def test_the_companion_node_has_a_name_of_its_own_and_parameters_answer(stack):
    from rcl_interfaces.srv import GetParameters
    _, robot, _ = stack
    node = robot.c.node
    robot.c.spin_until(lambda: f"{NS}/delta_hardware_actions" in node.get_fully_qualified_node_names(), 20)
    names = node.get_fully_qualified_node_names()
    assert names.count(f"{NS}/delta_hardware") == 1 and names.count(f"{NS}/delta_hardware_actions") == 1, names
    client = robot.c.node.create_client(GetParameters, f"{NS}/delta_hardware/get_parameters")
    for _ in range(4):                        # one node answers, every time
        res = robot.c.call(client, GetParameters.Request(names=["kp", "prefix"]), resend=True)
        assert list(res.values[0].double_array_value) == [600.0, 600.0, 600.0]
    servers = robot.c.node.get_action_names_and_types() if hasattr(robot.c.node, "get_action_names_and_types") else None
    from rclpy.action import get_action_server_names_and_types_by_node
    per_node = {n: get_action_server_names_and_types_by_node(robot.c.node, n, NS)
                for n in ("delta_hardware", "delta_hardware_actions")}
    assert [a for a, _ in per_node["delta_hardware_actions"]] == [ACTION] and per_node["delta_hardware"] == []
    del servers


@pytest.mark.parametrize("make, reason", [
    (lambda: joint_goal(ARMS, [(1.0, [float("nan"), 0.2, 0.2])]), "must be finite"),
    (lambda: joint_goal(["arm_1_joint", "arm_2_joint", "gripper"], [(1.0, [0.2, 0.2, 0.2])]), "unknown joint names"),
    (lambda: joint_goal(PLATFORM, [(1.0, [0.0, 0.0, -0.2])]), "unreachable"),
    (lambda: joint_goal(ARMS, [(1.0, [2.5, 0.2, 0.2])]), "limit"),
    (lambda: joint_goal(ARMS, [(0.05, [1.2, 0.2, 0.2])]), "too fast"),
    (lambda: joint_goal(ARMS, [(0.0, [0.5, 0.5, 0.5]), (1.0, [0.2, 0.2, 0.2])]), "action_start_tolerance"),
    (lambda: joint_goal(ARMS, [(1.0, [0.2, 0.2, 0.2])], path_tolerance=[JointTolerance(name="arm_1_joint", position=-2.0)]),
     "must be -1 (no check), 0 (default) or positive"),
    (lambda: joint_goal(ARMS, [(1.0, [0.2, 0.2, 0.2])], goal_tolerance=[JointTolerance(name="platform_x", position=0.1)]),
     "not a joint of this goal"),
    (lambda: FollowJointTrajectory.Goal(), "exactly one of trajectory and multi_dof_trajectory"),
])
def test_invalid_goals_are_rejected_in_the_goal_callback_with_the_reason(stack, make, reason):
    _, robot, action = stack
    robot.wait_sim(0.1)
    q0 = robot.q.copy()
    accepted, _, _, _, events = run_goal(robot, action, make())
    assert not accepted
    assert any("action goal rejected" in e and reason in e for e in events), events
    robot.wait_sim(0.2)
    np.testing.assert_allclose(robot.q, q0, atol=2e-4)      # nothing moved


def test_moveit_trajectories_for_both_groups_succeed_with_stamped_feedback(stack):
    _, robot, action = stack
    limits = joint_limits(load_robot("nt_robot"))["joint_limits"]
    # platform group, as MoveIt plans it: from the measured state (forward kinematics of the arms)
    robot.wait_sim(0.2)
    X0 = forward_kinematics(MODEL, robot.q)
    X1 = np.array([0.08, -0.05, -0.80])
    v = min(limits[n]["max_velocity"] for n in PLATFORM)
    a = min(limits[n]["max_acceleration"] for n in PLATFORM)
    ts, q, qd, qdd = moveit_like(X0, X1, v, a)
    goal = FollowJointTrajectory.Goal(trajectory=trajectory(PLATFORM, ts, q, qd, qdd),
                                      goal_tolerance=[JointTolerance(name=n, position=1e-3) for n in PLATFORM],
                                      goal_time_tolerance=dur(0.5))
    accepted, status, result, fb, _ = run_goal(robot, action, goal)
    assert accepted and status == GoalStatus.STATUS_SUCCEEDED, result
    robot.wait_sim(0.2)
    np.testing.assert_allclose(forward_kinematics(MODEL, robot.q), X1, atol=1e-3)
    stamps = [f.header.stamp.sec + 1e-9 * f.header.stamp.nanosec for f in fb]
    assert len(fb) >= 3 and stamps[0] > 0 and all(b >= a for a, b in zip(stamps, stamps[1:]))
    assert fb[-1].joint_names == PLATFORM and len(fb[-1].actual.positions) == 3
    # arms group: joint space
    robot.wait_sim(0.2)
    q0 = robot.q.copy()
    q1 = inverse_kinematics(MODEL, [-0.05, 0.06, -0.72])
    vj = min(limits[n]["max_velocity"] for n in ARMS) * 0.5
    aj = min(limits[n]["max_acceleration"] for n in ARMS) * 0.5
    ts, q, qd, qdd = moveit_like(q0, q1, vj, aj)
    accepted, status, result, _, events = run_goal(robot, action, FollowJointTrajectory.Goal(
        trajectory=trajectory(ARMS, ts, q, qd, qdd), goal_tolerance=[JointTolerance(name=n, position=2e-3) for n in ARMS]))
    assert accepted and status == GoalStatus.STATUS_SUCCEEDED, (result, events)
    robot.wait_sim(0.2)
    np.testing.assert_allclose(robot.q, q1, atol=2e-3)


def test_a_tight_path_tolerance_on_a_fast_motion_aborts_and_the_robot_holds(stack):
    _, robot, action = stack
    robot.wait_sim(0.1)
    q0 = robot.q
    goal = joint_goal(ARMS, [(0.6, q0 + [0.4, -0.3, 0.3])],
                      path_tolerance=[JointTolerance(name=n, position=1e-5) for n in ARMS])
    accepted, status, result, _, _ = run_goal(robot, action, goal)
    assert accepted and status == GoalStatus.STATUS_ABORTED
    assert result.error_code == Result.PATH_TOLERANCE_VIOLATED == -4
    assert "path tolerance violated" in result.error_string
    robot.wait_sim(1.0)                                        # settled on the hold setpoint
    q_hold = robot.q.copy()
    robot.wait_sim(0.5)
    np.testing.assert_allclose(robot.q, q_hold, atol=2e-3)    # holds where it stopped
    assert np.abs(q_hold - (q0 + [0.4, -0.3, 0.3])).max() > 0.05


def test_goal_tolerance_and_goal_time(stack):
    _, robot, action = stack
    robot.wait_sim(0.1)
    goal = joint_goal(ARMS, [(0.5, robot.q + 0.1)], goal_tolerance=[JointTolerance(name=n, position=1e-9) for n in ARMS],
                      goal_time_tolerance=dur(0.05))
    accepted, status, result, _, _ = run_goal(robot, action, goal)
    assert accepted and status == GoalStatus.STATUS_ABORTED
    assert result.error_code == Result.GOAL_TOLERANCE_VIOLATED == -5 and "goal_time_tolerance 0.05" in result.error_string


def test_multi_dof_platform_goal_with_component_tolerances(stack):
    _, robot, action = stack

    def cart_goal(X, T, **tol):
        goal = FollowJointTrajectory.Goal(**tol)
        goal.multi_dof_trajectory.joint_names = ["platform"]
        goal.multi_dof_trajectory.points = [MultiDOFJointTrajectoryPoint(
            transforms=[Transform(translation=Vector3(x=X[0], y=X[1], z=X[2]))], time_from_start=dur(T))]
        return goal

    comp = lambda c, p: JointComponentTolerance(joint_name="platform", component=c, position=p)  # noqa: E731
    accepted, status, result, fb, _ = run_goal(robot, action, cart_goal(
        [0.02, 0.03, -0.75], 1.0, component_goal_tolerance=[comp(JointComponentTolerance.TRANSLATION, 1e-3)],
        goal_time_tolerance=dur(0.5)))
    assert accepted and status == GoalStatus.STATUS_SUCCEEDED, result
    assert fb[-1].multi_dof_joint_names == ["platform"]
    robot.wait_sim(0.2)
    np.testing.assert_allclose(forward_kinematics(MODEL, robot.q), [0.02, 0.03, -0.75], atol=1e-3)
    accepted, status, result, _, _ = run_goal(robot, action, cart_goal(
        [-0.06, 0.0, -0.70], 0.5, component_path_tolerance=[comp(JointComponentTolerance.Z_AXIS, 1e-6)]))
    assert accepted and status == GoalStatus.STATUS_ABORTED and result.error_code == -4
    assert "platform_z" in result.error_string or "z position" in result.error_string


def test_a_newer_goal_replaces_the_running_one_and_cancel_holds(stack):
    _, robot, action = stack
    robot.wait_sim(0.1)
    q0 = robot.q.copy()
    first = action.send_goal_async(joint_goal(ARMS, [(3.0, q0 + 0.3)]))
    assert robot.c.spin_until(first.done, 20) and first.result().accepted
    robot.wait_sim(0.3)
    second = action.send_goal_async(joint_goal(ARMS, [(3.0, q0 - 0.2)]))
    assert robot.c.spin_until(second.done, 20) and second.result().accepted
    r1 = first.result().get_result_async()
    assert robot.c.spin_until(r1.done, 20)
    assert r1.result().status == GoalStatus.STATUS_ABORTED and r1.result().result.error_code == Result.INVALID_GOAL
    robot.wait_sim(0.3)
    cancel = second.result().cancel_goal_async()
    assert robot.c.spin_until(cancel.done, 20)
    r2 = second.result().get_result_async()
    assert robot.c.spin_until(r2.done, 20) and r2.result().status == GoalStatus.STATUS_CANCELED
    robot.wait_sim(1.0)
    q_hold = robot.q.copy()
    robot.wait_sim(0.5)
    np.testing.assert_allclose(robot.q, q_hold, atol=2e-3)
    assert np.abs(q_hold - (q0 - 0.2)).max() > 0.05           # stopped on the way


def test_sigint_while_a_goal_runs_exits_cleanly_without_sigabrt():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__ns:=/r7", "-r", "/clock:=/r7/clock", *SIM_TIME)
    client = RosClient("fjt_exit_test")
    robot = HardwareProbe(client, namespace="/r7")
    action = ActionClient(client.node, FollowJointTrajectory, "/r7/delta_hardware/follow_joint_trajectory")
    try:
        robot.wait_ready(60.0)
        assert action.wait_for_server(timeout_sec=30.0)
        fut = action.send_goal_async(joint_goal(ARMS, [(20.0, [0.3, 0.3, 0.3])]))
        assert client.spin_until(fut.done, 20) and fut.result().accepted, node.output()[-3000:]
        robot.wait_sim(0.3)
        node.proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        while node.proc.poll() is None and time.monotonic() - t0 < 30:
            client.spin_for(0.1)
        assert node.proc.poll() == 0, node.output()[-3000:]
        assert "terminate called" not in node.output() and "Traceback" not in node.output(), node.output()[-3000:]
    finally:
        action.destroy()
        client.close()
        node.close()


CARRIAGES = ["carriage_1_joint", "carriage_2_joint", "carriage_3_joint"]


def test_a_linear_delta_follows_platform_and_carriage_goals_and_holds_on_failure():
    """A linear Delta (colombo2020): platform_x/y/z goals go through the robot interface of its
    kind (the rotary forward kinematics gave a traceback, an ABORTED result with error code 0
    and an empty string, and the robot went on to the end of the motion); every failure has
    its code and reason, and the robot holds when a goal fails."""
    from delta_dynamics.algorithms import forward_kinematics as fk
    from delta_dynamics.algorithms import inverse_kinematics as ik
    from delta_dynamics.kinds import model_for
    lin = model_for("colombo2020")
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__ns:=/lin", "-r", "/clock:=/lin/clock",
                       "-p", "robot:=colombo2020", "-p", "feedforward:=model", *SIM_TIME)
    client = RosClient("fjt_linear_test")
    robot = HardwareProbe(client, namespace="/lin", hardware_id="colombo2020", joints=CARRIAGES)
    action = ActionClient(client.node, FollowJointTrajectory, "/lin/delta_hardware/follow_joint_trajectory")
    try:
        robot.wait_ready(60.0)
        assert action.wait_for_server(timeout_sec=30.0), node.output()[-3000:]
        robot.wait_sim(0.2)
        # platform goal as MoveIt plans it (m, from the measured state)
        X0 = fk(lin, robot.q)
        X1 = X0 + [0.03, -0.02, 0.03]
        ts, q, qd, qdd = moveit_like(X0, X1, 0.05, 1.0)
        accepted, status, result, fb, events = run_goal(robot, action, FollowJointTrajectory.Goal(
            trajectory=trajectory(PLATFORM, ts, q, qd, qdd),
            goal_tolerance=[JointTolerance(name=n, position=1e-3) for n in PLATFORM],
            path_tolerance=[JointTolerance(name=n, position=5e-3) for n in PLATFORM]))
        assert accepted and status == GoalStatus.STATUS_SUCCEEDED, (result, events, node.output()[-3000:])
        robot.wait_sim(0.2)
        np.testing.assert_allclose(fk(lin, robot.q), X1, atol=1e-3)
        assert fb and fb[-1].joint_names == PLATFORM and len(fb[-1].error.positions) == 3
        # carriage goal in m
        q1 = ik(lin, X0)
        accepted, status, result, _, events = run_goal(robot, action, joint_goal(CARRIAGES, [(1.5, q1)],
                                                       goal_tolerance=[JointTolerance(name=n, position=1e-3)
                                                                       for n in CARRIAGES],
                                                       goal_time_tolerance=dur(1.0)))
        assert accepted and status == GoalStatus.STATUS_SUCCEEDED, (result, events)
        # a platform goal that breaks its path tolerance: aborted with the code and the reason, held
        robot.wait_sim(0.2)
        X0 = fk(lin, robot.q)
        X2 = X0 + [0.0, 0.0, 0.06]
        goal = joint_goal(PLATFORM, [(1.5, X2)], path_tolerance=[JointTolerance(name="platform_z", position=1e-6)])
        accepted, status, result, _, _ = run_goal(robot, action, goal)
        assert accepted and status == GoalStatus.STATUS_ABORTED
        assert result.error_code == Result.PATH_TOLERANCE_VIOLATED and "platform_z position off by" in \
            result.error_string and " m (tolerance" in result.error_string, result
        robot.wait_sim(1.0)
        q_hold = robot.q.copy()
        robot.wait_sim(1.0)
        np.testing.assert_allclose(robot.q, q_hold, atol=1e-4)              # holds, m
        assert abs(fk(lin, q_hold)[2] - X2[2]) > 0.02                        # did not go on to the end
        assert "Traceback" not in node.output(), node.output()[-3000:]
    finally:
        action.destroy()
        client.close()
        node.stop()
        node.close()


def test_time_optimal_timing_keeps_the_path_and_ends_faster_than_a_slow_moveit_timing(stack):
    """trajectory_timing: time_optimal: the goal's path retimed under the model's limits: the
    same final point, far sooner than the deliberately slow timing sent, within the limits
    (the plan's check), with the goal's tolerances; follow (the default) again afterwards."""
    node, robot, action = stack
    assert robot.c.set_parameter("r1/delta_hardware", "trajectory_timing", "time_optimal").successful
    try:
        robot.wait_sim(0.5)
        q0 = robot.q.copy()
        X1 = np.array([0.04, -0.03, -0.76])
        if np.linalg.norm(forward_kinematics(MODEL, q0) - X1) < 0.04:       # wherever the tests before left it
            X1 = np.array([-0.04, 0.03, -0.80])
        q1 = inverse_kinematics(MODEL, X1)
        ts, q, qd, qdd = moveit_like(q0, q1, 0.1, 1.0)            # slow: 0.1 rad/s of 8
        assert ts[-1] > 1.0
        n0 = len(robot.events)
        accepted, status, result, _, events = run_goal(robot, action, FollowJointTrajectory.Goal(
            trajectory=trajectory(ARMS, ts, q, qd, qdd),
            goal_tolerance=[JointTolerance(name=n, position=3e-3) for n in ARMS], goal_time_tolerance=dur(3.0)))
        assert accepted and status == GoalStatus.STATUS_SUCCEEDED, (result, events, node.output()[-2000:])
        line = robot.event_after(n0, "action goal (time-optimal")
        sent, took = float(line.split(", ")[1].split(" s")[0]), float(line.split("points, ")[1].split(" s")[0])
        assert sent == pytest.approx(ts[-1], abs=1e-3) and took < 0.5 * sent, line
        robot.wait_sim(0.3)
        np.testing.assert_allclose(robot.q, q1, atol=3e-3)
    finally:
        assert robot.c.set_parameter("r1/delta_hardware", "trajectory_timing", "follow").successful
    # following again: the same goal back takes its own time
    robot.wait_sim(0.3)
    n0 = len(robot.events)
    ts, q, qd, qdd = moveit_like(robot.q.copy(), q0, 0.1, 1.0)
    accepted, status, result, _, events = run_goal(robot, action, FollowJointTrajectory.Goal(
        trajectory=trajectory(ARMS, ts, q, qd, qdd)))
    assert accepted and status == GoalStatus.STATUS_SUCCEEDED, (result, events)
    line = robot.event_after(n0, "action goal accepted")
    # its own time (the event counts from when the node built it: a loop that takes the plan late,
    # on a busy host, adds that wait), not a retimed one (about 0.1 s)
    assert float(line.split("points, ")[1].split(" s")[0]) >= ts[-1] - 0.05, line
