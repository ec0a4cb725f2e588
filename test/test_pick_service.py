"""The hardware node's ~/pick service (delta_msgs/srv/Pick) over real DDS on the simulated robot,
in simulated time: a pick run ends at its start after the cycles with the plan's cycle time, a
stop during a run holds it (latched: nothing of the run resumes), bad requests are refused with
their reasons and the robot holds; a linear Delta runs a cycle too; ``delta-ctl pick`` prints
the figures."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.ros

from delta_dynamics.algorithms import forward_kinematics, inverse_kinematics
from delta_dynamics.kinds import model_for
from delta_dynamics.motion import plan_pick
from delta_dynamics.motion.trajectories import workspace_centre
from ros_helpers import SIM_TIME, HardwareProbe, NodeProcess, RosClient

CARRIAGES = ["carriage_1_joint", "carriage_2_joint", "carriage_3_joint"]

Pick = pytest.importorskip("delta_msgs.srv").Pick
from geometry_msgs.msg import Point
from std_srvs.srv import Trigger

NT = model_for("nt_robot")
A, B = [-0.1525, 0.0, -0.78], [0.1525, 0.0, -0.78]
SCALE = 0.99                              # motion_limit_scale's default


def request(a, b, **kw):
    return Pick.Request(from_point=Point(x=float(a[0]), y=float(a[1]), z=float(a[2])),
                        to_point=Point(x=float(b[0]), y=float(b[1]), z=float(b[2])), **kw)


@pytest.fixture(scope="module")
def stack():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__ns:=/pk", "-r", "/clock:=/pk/clock",
                       "-p", "feedforward:=model", *SIM_TIME)
    client = RosClient("pick_test")
    robot = HardwareProbe(client, namespace="/pk")
    try:
        robot.wait_ready(60.0)
        yield node, client, robot
    finally:
        client.close()
        code = node.stop()
        out = node.output()
        node.close()
        assert code == 0, f"hardware node exited with {code}:\n{out[-3000:]}"
        assert "Traceback" not in out, out[-3000:]


def call(client, srv_type, name, req, timeout=120.0):
    """The answer of service ``name`` to ``req`` from a new client; a status query is sent
    again while unanswered (a new client's first answer can be lost on a busy host)."""
    cli = client.node.create_client(srv_type, name)
    try:
        return client.call(cli, req, timeout, resend=name.endswith("/status"))
    finally:
        client.node.destroy_client(cli)


def test_a_pick_run_ends_at_its_start_with_the_plans_cycle_time(stack):
    node, client, robot = stack
    ref = plan_pick(NT, A, B, 0.025, 0.01, 0.05, limit_scale=SCALE)         # (seconds of CPU: before)
    res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B, cycles=2, dwell=0.05))
    assert res.success, (res.message, node.output()[-3000:])
    assert res.cycle_time == pytest.approx(ref.cycle_time, rel=1e-9)
    assert res.picks_per_minute == pytest.approx(60.0 / ref.cycle_time, rel=1e-9)
    assert res.duration > 2 * res.cycle_time                   # the move to the start first
    # the platform goes up and across to B and back, and ends at A (the PD with the model's
    # feedforward on the simulated plant settles to within 1.5 mm in 0.5 s, closer later)
    t_end, seen = robot.sim_time + res.duration + 0.5, []
    while robot.sim_time < t_end:
        robot.wait_sim(0.01)
        seen.append(forward_kinematics(NT, robot.q))
    seen = np.array(seen)
    assert seen[:, 0].max() > B[0] - 2e-3 and seen[:, 2].max() > A[2] + 0.02, seen[:, [0, 2]].max(axis=0)
    np.testing.assert_allclose(seen[-1], A, atol=1.5e-3)
    st = json.loads(call(client, Trigger, "/pk/delta_hardware/status", Trigger.Request()).message)
    assert not st["stopped"], st


@pytest.mark.parametrize("change, reason", [
    (dict(b=[0.0, 0.0, -3.0]), "to_point (0, 0, -3) m is outside the workspace"),
    (dict(a=[float("nan"), 0.0, -0.78]), "from_point must be 3 finite numbers"),
    (dict(height=-0.01), "height must be a finite number >= 0 m"),
    (dict(dwell=-1.0), "dwell must be a finite number >= 0 s"),
    (dict(blend=float("inf")), "blend must be a finite number >= 0 m"),
    (dict(cycles=0), "cycles must be an integer in [1, 100000]"),
    (dict(height=0.01, blend=0.05), "does not fit"),
])
def test_bad_requests_are_refused_with_their_reason_and_the_robot_holds(stack, change, reason):
    node, client, robot = stack
    kw = dict(change)
    a, b = kw.pop("a", A), kw.pop("b", B)
    n0 = len(robot.events)
    res = call(client, Pick, "/pk/delta_hardware/pick", request(a, b, **kw))
    assert not res.success and reason in res.message, res.message
    assert res.message.startswith("pick refused: ") and "\n" not in res.message
    assert res.duration == res.cycle_time == res.picks_per_minute == 0.0
    robot.event_after(n0, res.message)                      # said on ~/events too
    assert not any("pick accepted" in e for e in robot.events[n0:]), robot.events[n0:]


def test_the_node_plans_with_its_current_model_the_feedforward_robot(stack, tmp_path):
    """feedforward_robot (an identified file: here 2 kg of payload) is the model ~/pick plans
    with: the cycle time is that model's, not the nominal one's."""
    from delta_core.robot_file import load_robot, save_robot
    node, client, robot = stack
    r = load_robot("nt_robot")
    heavy = save_robot(r.replace(mass=r.mass.__class__(**{**r.mass.__dict__, "payload_mass": 2.0})),
                       tmp_path / "identified.yaml")
    ref = plan_pick(model_for(str(heavy)), A, B, limit_scale=SCALE)
    nominal = plan_pick(NT, A, B, limit_scale=SCALE)
    assert ref.cycle_time > nominal.cycle_time * 1.02
    robot.wait_sim(0.3)
    assert client.set_parameter("pk/delta_hardware", "feedforward_robot", str(heavy)).successful
    try:
        res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B))
        assert res.success, res.message
        assert res.cycle_time == pytest.approx(ref.cycle_time, rel=1e-9)
        robot.wait_sim(res.duration + 0.3)
    finally:
        assert client.set_parameter("pk/delta_hardware", "feedforward_robot", "").successful


def test_a_plan_beyond_the_limits_is_refused(stack):
    """Too many knots; and planned to the limits themselves (motion_limit_scale 1: TOPP-RA meets
    them at its gridpoints, a hair above between), the node's plan check refuses the run."""
    node, client, robot = stack
    res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B, cycles=100_000))
    assert not res.success and "max_trajectory_points" in res.message, res.message
    assert not client.set_parameter("pk/delta_hardware", "motion_limit_scale", 1.5).successful
    assert client.set_parameter("pk/delta_hardware", "motion_limit_scale", 1.0).successful
    try:
        res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B))
        assert not res.success and "too fast" in res.message and "exceeds its limit" in res.message, res.message
    finally:
        assert client.set_parameter("pk/delta_hardware", "motion_limit_scale", 0.99).successful


def test_an_emergency_stop_during_a_run_holds_latched_and_a_stopped_node_refuses(stack):
    node, client, robot = stack
    res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B, cycles=20))
    assert res.success, res.message
    robot.wait_sim(0.3)
    stop = call(client, Trigger, "/pk/delta_hardware/emergency_stop", Trigger.Request())
    assert stop.success, stop.message
    robot.wait_sim(0.3)
    q_stop = robot.q.copy()
    robot.wait_sim(1.0)                                    # the run would go on for seconds
    np.testing.assert_allclose(robot.q, q_stop, atol=1e-3)
    st = json.loads(call(client, Trigger, "/pk/delta_hardware/status", Trigger.Request()).message)
    assert st["stopped"], st
    res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B))
    assert not res.success and "stopped" in res.message, res.message
    reset = call(client, Trigger, "/pk/delta_hardware/reset", Trigger.Request())
    assert reset.success, reset.message
    robot.wait_sim(0.5)
    np.testing.assert_allclose(robot.q, q_stop, atol=2e-3)       # reset holds; the run does not resume


def test_a_stop_while_a_pick_is_planned_wins(stack):
    """The stop comes while the node plans (the pick's answer is still out): whether the plan
    was refused as void or reached the loop first, the robot does not run it."""
    node, client, robot = stack
    robot.wait_sim(0.2)
    if json.loads(call(client, Trigger, "/pk/delta_hardware/status", Trigger.Request()).message)["stopped"]:
        assert call(client, Trigger, "/pk/delta_hardware/reset", Trigger.Request()).success
    pick_cli = client.node.create_client(Pick, "/pk/delta_hardware/pick")
    stop_cli = client.node.create_client(Trigger, "/pk/delta_hardware/emergency_stop")
    status_cli = client.node.create_client(Trigger, "/pk/delta_hardware/status")
    try:
        assert all(c.wait_for_service(timeout_sec=30.0) for c in (pick_cli, stop_cli, status_cli))
        n0 = len(robot.events)
        far = [0.1, 0.1, -0.8]                               # from elsewhere: it would move at once
        pick = pick_cli.call_async(request(far, [-0.1, -0.1, -0.8], cycles=5))
        stop = stop_cli.call_async(Trigger.Request())
        status = status_cli.call_async(Trigger.Request())
        assert client.spin_until(lambda: pick.done() and stop.done() and status.done(), 120.0)
        assert stop.result().success, stop.result().message
        assert json.loads(status.result().message)["lifecycle"] == "active"
        robot.wait_sim(0.2)
        q_stop = robot.q.copy()
        robot.wait_sim(1.0)
        np.testing.assert_allclose(robot.q, q_stop, atol=1e-3)
        assert np.linalg.norm(forward_kinematics(NT, robot.q) - far) > 0.05
        if not pick.result().success:
            assert "void" in pick.result().message or "stopped" in pick.result().message, pick.result().message
    finally:
        for c in (pick_cli, stop_cli, status_cli):
            client.node.destroy_client(c)


def ctl(*args, timeout=300):
    """Run delta-ctl in a process of its own (the installed command's module)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "delta_bringup.ctl", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_ctl_pick_prints_the_cycle_time_and_picks_per_minute_and_waits_for_the_end(stack):
    node, client, robot = stack
    if json.loads(call(client, Trigger, "/pk/delta_hardware/status", Trigger.Request()).message)["stopped"]:
        assert call(client, Trigger, "/pk/delta_hardware/reset", Trigger.Request()).success
    ref = plan_pick(NT, A, B, 0.02, 0.008, 0.1, limit_scale=SCALE)
    r = ctl("--namespace", "pk", "pick", *map(str, A + B), "--height", "0.02", "--blend", "0.008", "--dwell", "0.1",
            "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert f"cycle time {ref.cycle_time:.4f} s, {ref.picks_per_minute:.1f} picks per minute" in lines[1], r.stdout
    assert lines[-1].startswith("trajectory finished"), r.stdout
    r = ctl("--namespace", "pk", "pick", *map(str, A + B), "--cycles", "0")
    assert r.returncode == 1 and "pick refused: cycles must be an integer in [1, 100000]" in r.stdout, r.stdout


def test_a_linear_delta_runs_a_pick_cycle():
    lin = model_for("colombo2020")
    c = workspace_centre(lin)
    a, b = (c + [-0.05, 0, 0]).tolist(), (c + [0.05, 0, 0]).tolist()
    ref = plan_pick(lin, a, b, 0.02, 0.008, 0.05, limit_scale=SCALE)
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__ns:=/lpk", "-r", "/clock:=/lpk/clock",
                       "-p", "robot:=colombo2020", "-p", "feedforward:=model", *SIM_TIME)
    client = RosClient("pick_linear_test")
    robot = HardwareProbe(client, namespace="/lpk", hardware_id="colombo2020", joints=CARRIAGES)
    try:
        robot.wait_ready(60.0)
        res = call(client, Pick, "/lpk/delta_hardware/pick", request(a, b, height=0.02, blend=0.008))
        assert res.success, (res.message, node.output()[-3000:])
        assert res.cycle_time == pytest.approx(ref.cycle_time, rel=1e-9)
        t_end, seen = robot.sim_time + res.duration + 0.5, []
        while robot.sim_time < t_end:
            robot.wait_sim(0.01)
            seen.append(forward_kinematics(lin, robot.q))
        seen = np.array(seen)
        assert seen[:, 0].max() > b[0] - 2e-3, seen[:, 0].max()
        np.testing.assert_allclose(seen[-1], a, atol=1.5e-3)
    finally:
        client.close()
        assert node.stop() == 0
        node.close()


def test_an_inactive_node_refuses_a_pick(stack):
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState
    node, client, robot = stack
    change = client.node.create_client(ChangeState, "/pk/delta_hardware/change_state")
    try:
        assert client.call(change, ChangeState.Request(transition=Transition(id=Transition.TRANSITION_DEACTIVATE)),
                           timeout=60).success
        res = call(client, Pick, "/pk/delta_hardware/pick", request(A, B))
        assert not res.success and res.message == "pick refused: the hardware node is not active", res.message
    finally:
        assert client.call(change, ChangeState.Request(transition=Transition(id=Transition.TRANSITION_ACTIVATE)),
                           timeout=60).success
        client.node.destroy_client(change)
