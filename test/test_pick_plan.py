"""Pick runs and time-optimal retiming as the hardware node plans them, without ROS
(delta_hardware.pick_run, delta_hardware.knot_plan, delta_dynamics.motion.knots): the knot
plan follows the time-optimal timing and passes every check of the node's plans, where 1 ms
samples of the same timing overshoot the acceleration limit; the run's cycle time is
plan_pick's; retimed joint paths keep their end point; bad requests are refused in one line."""
import numpy as np
import pytest

from delta_dynamics.algorithms import forward_kinematics, inverse_kinematics
from delta_dynamics.kinds import model_for
from delta_dynamics.motion import plan_pick
from delta_dynamics.motion.trajectories import workspace_centre
from delta_hardware.joint_plan import Setpoint
from delta_hardware.knot_plan import knot_plan
from delta_hardware.pick_run import PickRefused, plan_pick_run, retime_joint_path
from delta_hardware.trajectory_plan import TrajectoryRejected, build_plan

NT = model_for("nt_robot")
A, B = [-0.1525, 0.0, -0.78], [0.1525, 0.0, -0.78]


def test_the_knot_plan_passes_the_node_checks_where_uniform_samples_overshoot():
    run = plan_pick_run(NT, inverse_kinematics(NT, np.array(A)), A, B, limit_scale=0.99)
    plan = knot_plan(NT, 0.0, Setpoint.hold(run.knots.q[0]), run.knots)          # raises if over a limit
    assert plan.end_time == pytest.approx(run.duration)
    ref = plan_pick(NT, A, B, limit_scale=0.99)
    assert run.cycle_time == pytest.approx(ref.cycle_time, rel=1e-12) and run.approach == 0.0
    # the plan follows the sampled time-optimal motion (1 ms samples of the same legs)
    mo = ref.motion
    q = np.array([plan.sample(t).q for t in mo.t])
    assert np.abs(q - mo.q).max() < 1e-6
    # the same timing handed over as uniform 1 ms samples overshoots between them
    with pytest.raises(TrajectoryRejected, match="too fast"):
        build_plan(NT, 0.0, Setpoint.hold(mo.q[0]), 0.0, mo.t[1:], mo.q[1:], mo.qd[1:], mo.qdd[1:])


def test_a_run_from_elsewhere_moves_to_the_start_first_and_a_moving_robot_is_refused():
    q0 = inverse_kinematics(NT, np.array([0.0, 0.05, -0.8]))
    run = plan_pick_run(NT, q0, A, B, cycles=3, limit_scale=0.99)
    assert run.approach > 0 and run.duration == pytest.approx(run.approach + 3 * run.cycle_time)
    plan = knot_plan(NT, 5.0, Setpoint.hold(q0), run.knots)
    np.testing.assert_allclose(forward_kinematics(NT, plan.sample(5.0 + run.approach).q), A, atol=1e-9)
    np.testing.assert_allclose(forward_kinematics(NT, plan.sample(plan.end_time).q), A, atol=1e-9)
    with pytest.raises(TrajectoryRejected, match="the robot is moving"):
        knot_plan(NT, 0.0, Setpoint(q0, np.array([0.1, 0, 0]), np.zeros(3)), run.knots)


@pytest.mark.parametrize("kw, reason", [
    (dict(end=[0, 0, -3.0]), "to_point (0, 0, -3) m is outside the workspace"),
    (dict(start=[0, float("nan"), -0.8]), "from_point must be 3 finite numbers"),
    (dict(height=-1e-3), "height must be a finite number >= 0 m"),
    (dict(dwell=float("inf")), "dwell must be a finite number >= 0 s"),
    (dict(cycles=0), "cycles must be an integer"),
    (dict(cycles=1000, max_points=10_000), "more than max_trajectory_points 10000"),
])
def test_bad_requests_are_refused_in_one_line(kw, reason):
    args = {"start": A, "end": B, **kw}
    with pytest.raises(PickRefused) as e:
        plan_pick_run(NT, inverse_kinematics(NT, np.array(A)), args.pop("start"), args.pop("end"), **args)
    assert reason in str(e.value) and "\n" not in str(e.value)



def test_retimed_joint_path_keeps_its_end_and_is_faster_than_a_slow_timing():
    lin = model_for("colombo2020")
    for m, X0 in ((NT, np.array([0.0, 0.0, -0.8])), (lin, workspace_centre(lin))):
        Xs = X0 + np.linspace(0, 1, 12)[:, None] * np.array([0.06, -0.04, 0.03])
        q = inverse_kinematics(m, Xs)
        knots = retime_joint_path(m, q, limit_scale=0.99)
        plan = knot_plan(m, 0.0, Setpoint.hold(q[0]), knots)
        np.testing.assert_allclose(plan.sample(plan.end_time).q, q[-1], atol=1e-9)
        assert knots.duration < 2.0                   # the slow timing the test FJT goal uses
