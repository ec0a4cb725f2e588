"""Bad messages, service calls and parameters for the hardware node, over real DDS: every case
is refused with its reason on ``~/events`` (or in the service/parameter answer), the robot holds
still, the node lives. The cases are data: add a row to a table.

Tables: TRAJECTORIES (``~/joint_trajectory``), CARTESIAN (``~/cartesian_trajectory``),
COMMANDS (``/delta/joint_commands``), RUNTIME_PARAMETERS (``set_parameters`` while active),
START_PARAMETERS (a node started with the value stays unconfigured, the log names it).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Transform, Vector3
from lifecycle_msgs.srv import GetState
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,
                                 MultiDOFJointTrajectoryPoint)

from bad_input_harness import SPECIALS
from ros_helpers import ARMS, SIM_TIME, HardwareProbe, NodeProcess, RosClient

pytestmark = pytest.mark.ros
NAN, INF = math.nan, math.inf
PLATFORM = ["platform_x", "platform_y", "platform_z"]
HOLD = "HOLD"                     # placeholder: the robot's current joint positions


def _dur(t):
    sec = math.floor(t) if math.isfinite(t) else 0
    return Duration(sec=int(sec), nanosec=int(round((t - sec) * 1e9)) if math.isfinite(t) else 0)


# (id, joint names, points: (time, positions[, velocities[, accelerations[, effort]]]), expected text)
TRAJECTORIES = [
    ("nan-position", ARMS, [(1.0, [NAN, 0.2, 0.2])], "positions must be finite"),
    ("inf-position", ARMS, [(1.0, [0.2, INF, 0.2])], "positions must be finite"),
    ("nan-velocity", ARMS, [(1.0, [0.2, 0.2, 0.2], [NAN, 0, 0])], "velocities must be finite"),
    ("unknown-joint", ["arm_1_joint", "arm_2_joint", "gripper"], [(1.0, [0.2, 0.2, 0.2])], "unknown joint names ['gripper']"),
    ("repeated-joint", ["arm_1_joint", "arm_1_joint", "arm_3_joint"], [(1.0, [0.2, 0.2, 0.2])], "joint names repeat"),
    ("two-joints", ["arm_1_joint", "arm_2_joint"], [(1.0, [0.2, 0.2])], "must be all of"),
    ("mixed-kinds", ["arm_1_joint", "platform_y", "platform_z"], [(1.0, [0.2, 0.0, -0.7])], "must be all of"),
    ("no-names", [], [(1.0, [])], "must be all of"),
    ("no-points", ARMS, [], "trajectory has no points"),
    ("times-decrease", ARMS, [(1.0, [0.2, 0.2, 0.2]), (0.5, [0.3, 0.3, 0.3])], "time_from_start must increase"),
    ("times-repeat", ARMS, [(1.0, [0.2, 0.2, 0.2]), (1.0, [0.3, 0.3, 0.3])], "time_from_start must increase"),
    ("short-positions", ARMS, [(1.0, [0.2, 0.2])], "point 0: positions has 2 values for 3 joint names"),
    ("long-positions", ARMS, [(1.0, [0.2, 0.2, 0.2, 0.2])], "positions has 4 values"),
    ("no-positions", ARMS, [(1.0, [])], "every point needs positions"),
    ("some-velocities", ARMS, [(0.5, [0.2, 0.2, 0.2], [0, 0, 0]), (1.0, [0.3, 0.3, 0.3])],
     "velocities must be given for every point or for none"),
    ("accelerations-alone", ARMS, [(1.0, [0.2, 0.2, 0.2], [], [0, 0, 0])], "accelerations need velocities"),
    ("beyond-limits", ARMS, [(2.0, [1.8, 0.2, 0.2])], "leaves its limits"),
    ("unreachable-platform", PLATFORM, [(1.0, [0.0, 0.0, -3.0])], "unreachable"),
    ("platform-above-base", PLATFORM, [(1.0, [0.0, 0.0, 0.5])], "for platform position (0, 0, 0.5) m"),
    ("too-fast", ARMS, [(0.05, [1.2, 0.2, 0.2])], "too fast"),
    ("jump-at-zero", ARMS, [(0.0, [1.0, 1.0, 1.0]), (1.0, [0.3, 0.3, 0.3])], "a jump"),
    ("effort-short", ARMS, [(1.0, [0.2, 0.2, 0.2], [], [], [1.0, 2.0])], "point 0: effort has 2 values for 3 joint"),
    ("effort-nan", ARMS, [(1.0, [0.2, 0.2, 0.2], [], [], [NAN, 0.0, 0.0])], "point 0: effort must be finite"),
    ("effort-inf", ARMS, [(0.5, [0.2, 0.2, 0.2]), (1.0, [0.3, 0.3, 0.3], [], [], [0.0, INF, 0.0])],
     "point 1: effort must be finite"),
    ("too-long", ARMS, [(1e5, HOLD)], "longer than max_trajectory_duration 3600 s"),
    ("huge-time", ARMS, [(2.0e9, HOLD)], "longer than max_trajectory_duration"),
]


@pytest.fixture(scope="module")
def robot():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_bad",
                       "-r", "/joint_states:=/bad/joint_states", "-r", "/delta/joint_commands:=/bad/joint_commands",
                       "-p", "feedforward:=model", *SIM_TIME)
    client = RosClient("bad_messages")
    probe = HardwareProbe(client, node="delta_hw_bad", joint_states="/bad/joint_states")
    probe.cmd = client.node.create_publisher(JointState, "/bad/joint_commands", 10)
    try:
        probe.wait_ready(60)
        probe.node = node
        yield probe
    finally:
        client.close()
        assert node.stop() == 0, node.output()[-3000:]
        assert "Traceback" not in node.output(), node.output()[-3000:]
        node.close()


def _holds_still_and_lives(robot, q0):
    robot.wait_sim(0.15)
    assert np.abs(robot.q - q0).max() < 1e-4, "the robot moved"
    assert robot.node.proc.poll() is None, "the node died"
    assert robot.c.call(robot.get_state, GetState.Request(), resend=True).current_state.label == "active"


@pytest.mark.parametrize("case", TRAJECTORIES, ids=[c[0] for c in TRAJECTORIES])
def test_bad_joint_trajectory(robot, case):
    _, names, points, expect = case
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    msg = JointTrajectory(joint_names=list(names))
    for p in points:
        t, pos, *rest = p
        pt = JointTrajectoryPoint(positions=list(q0) if pos == HOLD else list(pos), time_from_start=_dur(t))
        if rest:
            pt.velocities = list(rest[0])
        if len(rest) > 1:
            pt.accelerations = list(rest[1])
        if len(rest) > 2:
            pt.effort = list(rest[2])
        msg.points.append(pt)
    n0 = len(robot.events)
    robot.traj.publish(msg)
    event = robot.event_after(n0, "rejected")
    assert expect in event, event
    _holds_still_and_lives(robot, q0)


def test_a_future_header_stamp_counts_toward_max_trajectory_duration(robot):
    """A trajectory of 1000 s stamped to start 3000 s from now ends 4000 s from now: more than
    max_trajectory_duration (3600 s); its points alone were accepted before."""
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    for topic, msg in (("joint trajectory", JointTrajectory(joint_names=ARMS, points=[
            JointTrajectoryPoint(positions=list(q0), time_from_start=_dur(1000.0))])),
                       ("cartesian trajectory", MultiDOFJointTrajectory(joint_names=["platform"], points=[
                           MultiDOFJointTrajectoryPoint(transforms=[Transform(translation=Vector3(
                               x=X_OK[0], y=X_OK[1], z=X_OK[2]))], time_from_start=_dur(1000.0))]))):
        msg.header.stamp = Time(sec=int(robot.sim_time) + 3000)
        n0 = len(robot.events)
        (robot.traj if topic == "joint trajectory" else robot.cart).publish(msg)
        event = robot.event_after(n0, f"{topic} rejected")
        assert "s from now (header.stamp) and lasts 1000 s" in event and \
            "longer than max_trajectory_duration 3600 s" in event, event
    _holds_still_and_lives(robot, q0)


def test_a_trajectory_that_ended_before_it_arrived(robot):
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    msg = JointTrajectory(joint_names=ARMS, points=[JointTrajectoryPoint(positions=list(q0 + 0.01),
                                                                         time_from_start=_dur(0.5))])
    msg.header.stamp = Time(sec=0, nanosec=1)             # 1 ns after the epoch: long over
    n0 = len(robot.events)
    robot.traj.publish(msg)
    assert "trajectory ended" in robot.event_after(n0, "rejected")
    _holds_still_and_lives(robot, q0)


def test_too_many_points(robot):
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    msg = JointTrajectory(joint_names=ARMS)
    msg.points = [JointTrajectoryPoint(positions=list(q0), time_from_start=_dur(0.01 * (k + 1)))
                  for k in range(100_001)]
    n0 = len(robot.events)
    robot.traj.publish(msg)
    assert "more than max_trajectory_points 100000" in robot.event_after(n0, "rejected", timeout=120)
    _holds_still_and_lives(robot, q0)


P = ["platform"]
X_OK = [0.02, 0.0, -0.75]
TURN = (0.0, 0.0, math.sin(0.05), math.cos(0.05))      # 0.1 rad about z


# (id, joint names, points as (time, position or None, velocity or None[, extras]), expected text);
# extras: "R" the rotation (x, y, z, w), "transforms" how many, "W" the angular velocity
CARTESIAN = [
    ("no-transform", P, [(1.0, None, None)], "no transform"),
    ("nan-position", P, [(1.0, [NAN, 0.0, -0.7], None)], "platform position must be finite"),
    ("unreachable", P, [(1.0, [0.0, 0.0, -3.0], None)], "unreachable"),
    ("some-velocities", P, [(0.5, [0.0, 0.0, -0.7], [0, 0, 0]), (1.0, [0.01, 0.0, -0.7], None)],
     "velocities must be given for every point or for none"),
    ("no-points", P, [], "trajectory has no points"),
    ("bogus-joint-name", ["bogus"], [(1.0, X_OK, None)], "joint_names must be ['platform'] (the platform"),
    ("no-joint-name", [], [(1.0, X_OK, None)], "joint_names must be ['platform']"),
    ("two-joint-names", ["platform", "platform2"], [(1.0, X_OK, None)], "joint_names must be ['platform']"),
    ("two-transforms", P, [(1.0, X_OK, None, {"transforms": 2})], "point 0: 2 transforms for 1 joint name"),
    ("two-velocities", P, [(1.0, X_OK, [0, 0, 0], {"velocities": 2})], "point 0: 2 velocities for 1 joint name"),
    ("rotation", P, [(1.0, X_OK, None, {"R": TURN})], "rotation turns the platform by 5.73 deg"),
    ("nan-rotation", P, [(1.0, X_OK, None, {"R": (NAN, 0.0, 0.0, 1.0)})], "rotation must be finite"),
    ("zero-quaternion", P, [(1.0, X_OK, None, {"R": (0.0, 0.0, 0.0, 0.0)})], "must be a unit quaternion"),
    ("angular-velocity", P, [(1.0, X_OK, [0, 0, 0], {"W": (0.0, 0.0, 0.2)})], "velocities[0].angular must be zero"),
    ("nan-angular-velocity", P, [(1.0, X_OK, [0, 0, 0], {"W": (NAN, 0.0, 0.0)})],
     "velocities[0].angular must be finite"),
]


@pytest.mark.parametrize("case", CARTESIAN, ids=[c[0] for c in CARTESIAN])
def test_bad_cartesian_trajectory(robot, case):
    from geometry_msgs.msg import Quaternion, Twist
    _, names, points, expect = case
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    msg = MultiDOFJointTrajectory(joint_names=list(names))
    for t, X, V, *extras in points:
        extra = extras[0] if extras else {}
        p = MultiDOFJointTrajectoryPoint(time_from_start=_dur(t))
        if X is not None:
            r = extra.get("R", (0.0, 0.0, 0.0, 1.0))
            tf = Transform(translation=Vector3(x=X[0], y=X[1], z=X[2]),
                           rotation=Quaternion(x=r[0], y=r[1], z=r[2], w=r[3]))
            p.transforms = [tf] * extra.get("transforms", 1)
        if V is not None:
            w = extra.get("W", (0.0, 0.0, 0.0))
            tw = Twist(linear=Vector3(x=V[0], y=V[1], z=V[2]), angular=Vector3(x=w[0], y=w[1], z=w[2]))
            p.velocities = [tw] * extra.get("velocities", 1)
        msg.points.append(p)
    n0 = len(robot.events)
    robot.cart.publish(msg)
    event = robot.event_after(n0, "rejected")
    assert expect in event, event
    _holds_still_and_lives(robot, q0)


# (id, names, position (HOLD+offset: a list of offsets from the current position), effort, expected)
COMMANDS = [
    ("unknown-joint", ["arm_1_joint", "arm_2_joint", "x"], [0.2, 0.2, 0.2], [], "unknown joint names"),
    ("platform-joints", PLATFORM, [0.0, 0.0, -0.7], [], "must name the actuated joints"),
    ("nothing", ARMS, [], [], "needs position or effort"),
    ("nan-position", ARMS, ("offset", [NAN, 0, 0]), [], "position must be finite"),
    ("inf-effort", ARMS, [], [INF, 0.0, 0.0], "effort must be finite"),
    ("short-position", ARMS, [0.2, 0.2], [], "position has 2 values for 3 joint names"),
    ("beyond-limits", ARMS, [1.8, 0.3, 0.3], [], "outside its limits"),
    ("too-far", ARMS, ("offset", [0.5, 0, 0]), [], "too far"),
    ("effort-over-limit", ARMS, [], [500.0, 0.0, 0.0], "exceeds the torque limits"),
]


@pytest.mark.parametrize("case", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_bad_joint_command(robot, case):
    _, names, position, effort, expect = case
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    if isinstance(position, tuple):
        position = (q0 + np.array(position[1])).tolist()
    n0 = len(robot.events)
    robot.cmd.publish(JointState(name=list(names), position=list(position), effort=list(effort)))
    event = robot.event_after(n0, "joint command rejected")
    assert expect in event, event
    _holds_still_and_lives(robot, q0)


# (id, parameter, value, expected text of the refusal)
RUNTIME_PARAMETERS = [
    ("kp-nan", "kp", [NAN, 600.0, 600.0], "kp must be 3 finite numbers"),
    ("kp-two", "kp", [600.0, 600.0], "kp must be 3 finite numbers"),
    ("kp-negative", "kp", [-1.0, 600.0, 600.0], "kp must be 3 finite numbers >= 0"),
    ("kd-unstable", "kd", [5000.0, 30.0, 30.0], "the largest gain the 500 Hz loop can run stably"),
    ("kp-unstable", "kp", [1e6, 600.0, 600.0], "the largest gain"),
    ("feedforward-unknown", "feedforward", "magic", "feedforward must be one of topic, model, none"),
    ("feedforward-robot-missing", "feedforward_robot", "/no/such/robot.yaml", "robot file not found"),
    ("feedforward-robot-other-kind", "feedforward_robot", "colombo2020",
     "colombo2020.yaml) is a linear Delta, but the robot driven (nt_robot) is a rotary one"),
    # special files ({tmp}/<kind>: made by the test, bad_input_harness.SPECIALS): the answer comes
    # at once (a FIFO blocked the executor: no answer, e-stop and status dead) and names the file
    *[(f"feedforward-robot-{k}", "feedforward_robot", f"{{tmp}}/{k}.yaml", f"{k}.yaml: {w}")
      for k, (_, w) in SPECIALS.items()],
    ("control-rate-while-active", "control_rate", 1000.0, "can only change while unconfigured"),
    ("robot-while-active", "robot", "d3s800", "can only change while unconfigured"),
    ("pause-at-negative", "pause_at", -1.0, "pause_at must be >= 0"),
]


@pytest.mark.parametrize("case", RUNTIME_PARAMETERS, ids=[c[0] for c in RUNTIME_PARAMETERS])
def test_bad_runtime_parameter(robot, case, tmp_path):
    _, name, value, expect = case
    if isinstance(value, str) and value.startswith("{tmp}/"):
        kind = value[len("{tmp}/"):-len(".yaml")]
        value = str(tmp_path / f"{kind}.yaml")
        SPECIALS[kind][0](tmp_path / f"{kind}.yaml")
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    res = robot.c.set_parameter("delta_hw_bad", name, value)
    assert not res.successful and expect in res.reason, res.reason
    status = robot.c.call(robot.status, __import__("std_srvs.srv", fromlist=["Trigger"]).Trigger.Request(), resend=True)
    assert '"active": true' in status.message, status.message
    _holds_still_and_lives(robot, q0)


# (id, --ros-args -p value, expected text in the log: the node stays unconfigured)
START_PARAMETERS = [
    ("control-rate-too-low", "control_rate:=2.0", "control_rate must be >= 100"),
    ("max-command-step-nan", "max_command_step:=.nan", "max_command_step must be a finite number"),
    ("hardware-unknown", "hardware:=robotnik", "hardware must be one of sim, mock, canopen"),
    ("thread-priority-200", "thread_priority:=200", "thread_priority must be an integer 0-99"),
    ("real-time-factor-negative", "real_time_factor:=-1.0", "real_time_factor must be >= 0"),
    ("kd-too-large", "kd:=[5000.0,30.0,30.0]", "the largest gain"),
    ("plant-unknown", "plant:=gazebo", "plant must be one of explicit, multibody, mujoco"),
    ("max-trajectory-points-0", "max_trajectory_points:=0", "max_trajectory_points must be an integer 2"),
    ("feedforward-robot-other-kind", "feedforward_robot:=colombo2020",
     "colombo2020.yaml) is a linear Delta, but the robot driven (nt_robot) is a rotary one"),
    ("true-robot-other-kind", "true_robot:=linear_delta_xl", "true_robot: linear_delta_xl ("),
]


@pytest.mark.parametrize("case", START_PARAMETERS, ids=[c[0] for c in START_PARAMETERS])
def test_bad_start_parameter_leaves_the_node_unconfigured(case):
    _, arg, expect = case
    # its own clock topic: the module's robot (delta_hw_bad) may still publish /clock, and a
    # second /clock publisher is another stack (stack_guard), refused before some checks run
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_badp",
                       "-r", "/clock:=/delta_hw_badp/clock", "-p", arg, *SIM_TIME)
    client = RosClient("bad_start")
    try:
        get = client.node.create_client(GetState, "/delta_hw_badp/get_state")
        assert node.wait_for_output("configure failed", 60), node.output()[-2000:]
        assert expect in node.output(), node.output()[-2000:]
        assert client.call(get, GetState.Request(), resend=True).current_state.label == "unconfigured"
    finally:
        client.close()
        assert node.stop() == 0
        assert "Traceback" not in node.output()
        node.close()
