"""The control loop and trajectory plans without ROS: tracking, smooth replacement,
validation, watchdog, limits, faults and emergency stop on the simulated drives."""
import numpy as np
import pytest

from delta_dynamics.rotary.kinematics import forward_kinematics, inverse_kinematics
from delta_dynamics.rotary.model import RotaryModel
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives import DriveError, DriveState
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.trajectory_plan import (Setpoint, TrajectoryRejected, build_plan,
                                            cartesian_to_joint, match_joint_names)

DT = 0.002


@pytest.fixture
def rig():
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot", torque_noise=0.02, seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    return model, drives, loop


def run(loop, t0, seconds):
    t = t0
    outs = []
    for _ in range(int(round(seconds / DT))):
        outs.append(loop.cycle(t))
        t += DT
    return t, outs


def test_follows_a_trajectory_with_model_feedforward(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.1)
    plan = build_plan(model, t, loop.current_setpoint(), t, [0.5, 1.0],
                      [[0.4, 0.2, 0.1], [0.1, 0.3, 0.2]])
    loop.submit_plan(plan)
    t, outs = run(loop, t, 1.3)
    err = max(np.abs(o.setpoint.q - np.array(o.position)).max() for o in outs)
    assert err < 2e-3
    np.testing.assert_allclose(outs[-1].position, [0.1, 0.3, 0.2], atol=2e-4)
    assert any("trajectory finished" in e for o in outs for e in o.events)


def test_pd_only_tracks_worse_than_with_feedforward():
    model = RotaryModel.from_robot("nt_robot")
    errs = {}
    for ff in ("none", "model"):
        drives = SimulatedDriveSet("nt_robot", seed=1)
        loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward=ff))
        loop.activate()
        t, _ = run(loop, 0.0, 0.2)
        loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.6], [[0.5, 0.0, -0.2]]))
        t, outs = run(loop, t, 0.6)
        errs[ff] = np.sqrt(np.mean([np.sum((o.setpoint.q - np.array(o.position)) ** 2) for o in outs]))
    assert errs["model"] < errs["none"] / 5


def test_a_new_plan_replaces_the_running_one_smoothly(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [1.0], [[0.5, 0.5, 0.5]]))
    t, before = run(loop, t, 0.4)
    cur = loop.current_setpoint()
    assert np.abs(cur.qd).max() > 0.1                      # moving
    loop.submit_plan(build_plan(model, t, cur, t, [1.0], [[0.0, 0.2, 0.4]]))
    t, after = run(loop, t, 0.05)
    sp0, sp1 = before[-1].setpoint, after[0].setpoint
    assert np.abs(sp1.q - sp0.q).max() < 0.02                # no jump in position
    assert np.abs(sp1.qd - sp0.qd).max() < 0.2               # nor in velocity
    t, _ = run(loop, t, 1.2)
    np.testing.assert_allclose(loop.drives.read().position, [0.0, 0.2, 0.4], atol=5e-4)


def test_every_bad_trajectory_is_rejected_with_its_reason(rig):
    model, _, loop = rig
    cur = Setpoint.hold([0.2, 0.2, 0.2])
    cases = [
        (([0.5], [[np.nan, 0.2, 0.2]]), "point 0: positions must be finite"),
        (([0.5, 0.5], [[0.3, 0.2, 0.2], [0.3, 0.2, 0.2]]), "point 1: time_from_start must increase"),
        (([0.02], [[0.8, 0.2, 0.2]]), "too fast: arm_1_joint velocity"),
        (([0.5], [[1.8, 0.2, 0.2]]), r"arm_1_joint position 1\.50\d* rad leaves its limits"),
        (([0.0], [[0.5, 0.2, 0.2]]), "point 0 at time 0 is at"),
        (([], np.zeros((0, 3))), "no points"),
    ]
    for (times, q), reason in cases:
        with pytest.raises(TrajectoryRejected, match=reason):
            build_plan(model, 1.0, cur, 1.0, times, q)
    with pytest.raises(TrajectoryRejected, match="ended .* ago"):
        build_plan(model, 10.0, cur, 1.0, [0.5], [[0.3, 0.2, 0.2]])
    with pytest.raises(TrajectoryRejected, match=r"unknown joint names \['bogus'\]"):
        match_joint_names(model, ["arm_1_joint", "arm_2_joint", "bogus"])
    with pytest.raises(TrajectoryRejected, match="unreachable"):
        cartesian_to_joint(model, [[0.0, 0.0, -3.0]])
    kind, order = match_joint_names(model, ["platform_z", "platform_x", "platform_y"])
    assert kind == "platform" and order == [1, 2, 0]


def test_torque_demand_beyond_the_limits_is_rejected():
    model = RotaryModel.from_robot("nt_robot")
    cur = Setpoint.hold([0.0, 0.0, 0.0])
    # within velocity/acceleration limits of a weak variant, but not its torque limits
    r = model.robot
    weak = RotaryModel(r.replace(limits=r.limits.__class__(**{**r.limits.__dict__, "torque": (5.0, 5.0, 5.0)})))
    with pytest.raises(TrajectoryRejected, match="needs .* N m, more than its torque limit 5"):
        build_plan(weak, 0.0, cur, 0.0, [1.0], [[0.3, 0.3, 0.3]])


def test_past_start_time_skips_the_points_already_due(rig):
    model, _, loop = rig
    cur = Setpoint.hold([0.0, 0.0, 0.0])
    plan = build_plan(model, 10.0, cur, 9.5, [1.0, 2.0], [[0.1, 0.1, 0.1], [0.2, 0.2, 0.2]])
    assert plan.start_time == 10.0 and plan.end_time == pytest.approx(11.5)
    future = build_plan(model, 10.0, cur, 12.0, [1.0], [[0.1, 0.1, 0.1]])
    np.testing.assert_allclose(future.sample(11.0).q, 0.0)       # holds until its start


def test_watchdog_holds_the_robot_when_streamed_commands_stop(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.05)
    q0 = np.array(drives.read().position)
    events = []
    for k in range(100):                                         # 0.2 s of streaming towards +0.1 rad
        loop.submit_command(t, q=q0 + 0.001 * k)
        t, outs = run(loop, t, DT)
        events += [e for o in outs for e in o.events]
    assert not any("watchdog" in e for e in events)
    t, outs = run(loop, t, loop.cfg.command_timeout + 0.3)
    events += [e for o in outs for e in o.events]
    assert sum("watchdog" in e for e in events) == 1
    held = [np.array(o.position) for o in outs[-50:]]
    assert np.abs(held[-1] - held[0]).max() < 1e-4               # standing still
    assert np.abs(held[-1] - (q0 + 0.099)).max() < 0.02


def test_emergency_stop_holds_and_refuses_commands_until_reset(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [1.0], [[0.5, 0.5, 0.5]]))
    t, _ = run(loop, t, 0.3)
    loop.emergency_stop("test")
    assert drives.state is DriveState.QUICK_STOP
    t, outs = run(loop, t, 0.3)
    assert np.abs(np.array(outs[-1].position) - np.array(outs[0].position)).max() < 1e-9
    with pytest.raises(DriveError, match="stopped"):
        loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [1.0], [[0.1, 0.1, 0.1]]))
    loop.reset()
    assert drives.state is DriveState.ENABLED
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [1.0], [[0.1, 0.1, 0.1]]))
    t, _ = run(loop, t, 1.2)
    np.testing.assert_allclose(drives.read().position, [0.1, 0.1, 0.1], atol=5e-4)


def test_drive_fault_quick_stops_and_names_the_axis(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.05)
    drives.inject_fault(1, "overcurrent")
    t, outs = run(loop, t, 0.05)
    events = [e for o in outs for e in o.events]
    assert any("arm_2_joint: overcurrent" in e for e in events)
    assert "drive fault" in loop.stopped_reason
    with pytest.raises(DriveError):
        drives.write(torque=[0, 0, 0])


def test_limits_trip_a_quick_stop():
    """A joint driven past its limits while running (here by a streamed effort) quick-stops."""
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot")
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, command_timeout=5.0, kp=(0, 0, 0), kd=(0, 0, 0),
                                                 feedforward="none"))
    loop.activate()
    t, events = 0.0, []
    for _ in range(500):
        if not loop.stopped_reason:
            loop.submit_command(t, tau=[120.0, 0.0, 0.0])
        events += loop.cycle(t).events
        t += DT
    assert any("arm_1_joint" in e and ("outside its limits" in e or "moves at" in e) for e in events), events
    assert drives.state is DriveState.QUICK_STOP


def test_outside_the_limits_only_a_slow_way_back_is_accepted():
    """Started (or reset) with a joint outside its limits: no quick stop, a notice; a plan
    further out or too fast is rejected; a slow plan back is executed, then full speed again."""
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot")
    q0 = np.array([model.q_hi[0] + 0.08, 0.5, 0.5])
    drives.set_joint_positions(q0)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    assert any("only slow motion" in n and "arm_1_joint" in n for n in loop.notices)
    t, outs = run(loop, 0.0, 0.2)
    assert not loop.stopped_reason
    sp = loop.current_setpoint()
    with pytest.raises(TrajectoryRejected, match="leaves its limits"):
        build_plan(model, t, sp, t, [2.0], [sp.q + [0.05, 0, 0]], limits=loop.limits())
    with pytest.raises(TrajectoryRejected, match="too fast"):
        build_plan(model, t, sp, t, [0.1], [sp.q - [0.2, 0, 0]], limits=loop.limits())
    plan = build_plan(model, t, sp, t, [1.0], [[model.q_hi[0] - 0.05, 0.5, 0.5]], limits=loop.limits())
    loop.submit_plan(plan)
    t, outs = run(loop, t, 1.5)
    assert not loop.stopped_reason
    assert any("back within the joint limits" in e for o in outs for e in o.events)
    lo, hi, v = loop.limits()
    np.testing.assert_array_equal(hi, model.q_hi)
    np.testing.assert_array_equal(v, model.robot.limits.velocity)


def test_position_mode_drives_follow_too():
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot", mode="position")
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.8], [[0.3, 0.1, 0.2]]))
    t, _ = run(loop, t, 1.2)
    np.testing.assert_allclose(drives.read().position, [0.3, 0.1, 0.2], atol=1e-3)


def test_platform_points_go_through_inverse_kinematics(rig):
    model, drives, loop = rig
    X_goal = np.array([0.05, -0.04, -0.7])
    q, qd, qdd = cartesian_to_joint(model, [X_goal])
    np.testing.assert_allclose(q[0], inverse_kinematics(model, X_goal))
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [1.0], q))
    t, _ = run(loop, t, 1.3)
    np.testing.assert_allclose(forward_kinematics(model, drives.read().position), X_goal, atol=2e-4)


def test_a_stalled_loop_quick_stops_but_a_reset_does_not_count_as_a_stall(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.1)
    out = loop.cycle(t + 0.4)                          # 400 ms without a cycle while controlling
    assert any("control loop stalled for 40" in e for e in out.events)
    assert drives.state.value == "quick_stop_active"
    # the stop and the reset may take long: the first cycle after them is no stall
    loop.reset()
    t, outs = run(loop, t + 2.0, 0.1)
    assert not any("stalled" in e for o in outs for e in o.events)
    assert drives.state.value == "operation_enabled"


def test_a_step_of_the_wall_clock_is_no_stall_but_a_steady_gap_is(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.1)
    # the stamp clock jumps 2 s ahead (an NTP step) while only one period passed
    out = loop.cycle(t + 2.0, elapsed=DT)
    assert not any("stalled" in e for e in out.events), out.events
    assert drives.state.value == "operation_enabled"
    # ... and a real 400 ms gap is a stall even when the stamp clock stepped back
    out = loop.cycle(t + 1.0, elapsed=0.4)
    assert any("control loop stalled for 400" in e for e in out.events)


def test_the_loop_thread_keeps_its_rate_across_a_backwards_step_of_the_stamp_clock():
    import threading
    import time

    from delta_hardware.loop_thread import LoopThread
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot", seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=200.0, feedforward="none"))
    loop.activate()
    offset = [0.0]
    outs, lock = [], threading.Lock()

    def on_cycle(out):
        with lock:
            outs.append(out)

    thread = LoopThread(loop, on_cycle, clock=lambda: time.monotonic() + offset[0])
    thread.start()
    try:
        time.sleep(0.3)
        offset[0] = -5.0                                  # the wall clock is set back 5 s
        with lock:
            n0 = len(outs)
        # a loop scheduled on the stepped clock would wait 5 s for its next cycle; 50 cycles
        # (0.25 s at 200 Hz) well before that, however busy the host
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            with lock:
                n1 = len(outs)
            if n1 - n0 > 50:
                break
            time.sleep(0.01)
    finally:
        thread.stop()
    assert thread.error is None
    assert n1 - n0 > 50, f"only {n1 - n0} cycles in 4 s at 200 Hz after the clock step"
    # no stop (a busy host may make a cycle late, which is reported, not a fault)
    stops = [e for o in outs for e in o.events if "late" not in str(e)]
    assert not stops, stops
    assert drives.state.value == "operation_enabled"


@pytest.mark.parametrize("field, value", [("max_stall", -1.0), ("max_stall", float("nan")),
                                          ("command_timeout", 0.0), ("feedforward_timeout", float("inf")),
                                          ("rate", 0.0), ("rate", 50.0), ("rate", 5000.0), ("kp", (1.0, 2.0)),
                                          ("feedforward", "magic")])
def test_a_bad_loop_setting_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match="control_rate" if field == "rate" else field):
        LoopConfig(**{field: value})


@pytest.mark.parametrize("gap", [0.05, 0.1, 0.15, 0.2])
def test_a_late_cycle_holds_the_previous_torque_and_never_runs_away(gap):
    """A cycle that comes ``gap`` s late (a paused process, below max_stall): the drives held
    the torque computed before the gap, the loop then reads fresh feedback. Computing the
    torque from the stale feedback and integrating it over the gap drove a joint to
    7.8 rad/s (100 ms) and 19.4 rad/s (150 ms), and out of the workspace at 200 ms."""
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot", seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model", max_stall=0.25))
    loop.activate()
    t, _ = run(loop, 0.0, 0.1)
    q0 = loop.current_setpoint().q
    # a fast swing of every arm (near the velocity limit), paused three times on the way
    plan = build_plan(model, t, loop.current_setpoint(), t, [0.35, 0.7, 1.05],
                      [q0 + 0.6, q0 - 0.2, q0 + 0.6])
    loop.submit_plan(plan)
    peak, events = 0.0, []
    for k in range(int(1.4 / DT)):
        if k in (60, 200, 380):
            t += gap
            out = loop.cycle(t, elapsed=gap + DT)
        else:
            out = loop.cycle(t, elapsed=DT)
        t += DT
        peak = max(peak, float(np.abs(out.velocity).max()))
        events += out.events
    v_max = min(model.robot.limits.velocity)
    assert not loop.stopped_reason, events
    assert peak <= v_max, f"{peak:.2f} rad/s after {gap * 1e3:.0f} ms pauses (limit {v_max})"
    assert any(e.startswith("control cycle late") for e in events)


def test_streamed_commands_are_followed_within_the_velocity_limits():
    """Steps of 0.09 rad every 5 ms ask for 18 rad/s (the limit is 8): the setpoint follows
    them at the limits, the robot never trips the overspeed guard."""
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot", seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=1000.0, feedforward="model", command_timeout=0.5))
    loop.activate()
    t, target = 0.0, np.array(loop.current_setpoint().q)
    peak_sp, peak_q, events = 0.0, 0.0, []
    for k in range(600):
        if k % 5 == 0 and k < 300:
            target = target + [0.09, -0.03, 0.0]
            target = np.clip(target, model.q_lo, model.q_hi)
            loop.submit_command(t, q=target)
        out = loop.cycle(t, elapsed=0.001)
        t += 0.001
        events += out.events
        if out.setpoint is not None:
            peak_sp = max(peak_sp, float(np.abs(out.setpoint.qd).max()))
        peak_q = max(peak_q, float(np.abs(out.velocity).max()))
    v_max = min(model.robot.limits.velocity)
    assert not loop.stopped_reason, events
    assert peak_sp <= v_max + 1e-9
    assert peak_q <= 1.1 * v_max
    np.testing.assert_allclose(loop.current_setpoint().q, target, atol=1e-6)


def test_non_finite_feedforward_is_never_written_and_quick_stops(rig):
    """A model that answers NaN (a broken robot file) must not reach the drives."""
    model, drives, loop = rig
    run(loop, 0.0, 0.05)
    written = []
    real_write = drives.write
    drives.write = lambda **kw: (written.append(kw), real_write(**kw))
    loop.reconfigure(function=lambda sp: np.array([np.nan, 0.0, 0.0]))
    out = loop.cycle(0.1)
    assert any("non-finite torque" in e for e in out.events)
    assert loop.stopped_reason.startswith("non-finite torque")
    assert written == []
    assert drives.state is DriveState.QUICK_STOP


def test_an_exception_in_the_loop_thread_quick_stops_and_is_reported():
    """The loop thread dies on an exception: its error handler runs (the node quick-stops and
    takes the lifecycle through error processing), nothing is swallowed."""
    import threading

    from delta_hardware.loop_thread import SimTimeLoopThread
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot")
    loop = ControlLoop(model, drives, LoopConfig(rate=500.0, feedforward="model"))
    loop.activate()
    calls = {"n": 0}

    def broken(sp):
        calls["n"] += 1
        if calls["n"] > 20:
            raise RuntimeError("model exploded")
        return np.zeros(3)
    loop.reconfigure(function=broken)
    done = threading.Event()
    seen = []
    thread = SimTimeLoopThread(loop, lambda out: None, real_time_factor=0)
    thread.on_error = lambda e: (seen.append(e), loop.emergency_stop(f"control loop error: {e}"), done.set())
    thread.start()
    assert done.wait(10)
    thread.stop()
    assert isinstance(seen[0], RuntimeError) and "model exploded" in str(seen[0])
    assert thread.error is seen[0]
    assert drives.state is DriveState.QUICK_STOP


def test_simulated_time_advances_exactly_one_period_per_cycle_and_pauses_on_request():
    from delta_hardware.loop_thread import SimTimeLoopThread
    model = RotaryModel.from_robot("nt_robot")
    drives = SimulatedDriveSet("nt_robot")
    loop = ControlLoop(model, drives, LoopConfig(rate=500.0, feedforward="model"))
    loop.activate()
    stamps, paused_at = [], []
    thread = SimTimeLoopThread(loop, lambda out: stamps.append(out.time), real_time_factor=0, paused=True)
    thread.on_pause = paused_at.append
    thread.pause_at = 0.5
    thread.start()
    import time as _time
    _time.sleep(0.2)
    assert stamps == [] and thread.paused                  # started paused: no cycle, no time
    thread.resume()
    deadline = _time.monotonic() + 30
    while not paused_at and _time.monotonic() < deadline:
        _time.sleep(0.01)
    n = len(stamps)
    _time.sleep(0.1)
    assert len(stamps) == n                                 # paused at pause_at
    thread.stop()
    assert paused_at == [pytest.approx(0.5)]
    np.testing.assert_allclose(np.diff(stamps), 0.002, atol=1e-12)
    assert stamps[-1] == pytest.approx(0.5)


@pytest.mark.parametrize("on_receipt", [True, False])
def test_a_plan_that_starts_on_receipt_and_comes_late_starts_when_taken(rig, on_receipt):
    """A plan built at t (no header.stamp: "now") that reaches the loop 0.1 s later (a slow
    sender; the loop's time went on) starts where the loop is then: the setpoint does not jump
    ahead along it. A plan with an explicit start time keeps it (its past part is skipped)."""
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.1)
    plan = build_plan(model, t, loop.current_setpoint(), t, [0.5], [[0.4, 0.2, 0.1]])
    plan.on_receipt = on_receipt
    q0 = loop.current_setpoint().q.copy()
    t, _ = run(loop, t, 0.1)                                 # the loop goes on while the plan is in transit
    start = plan.start_time
    loop.submit_plan(plan)
    t, outs = run(loop, t, 0.002)
    jump = np.abs(outs[0].setpoint.q - q0).max()
    if on_receipt:
        assert plan.start_time == pytest.approx(t - 2 * DT, abs=1e-9)      # the loop's last cycle before it
        assert plan.start_time > start + 0.09
        assert jump < 1e-4, jump                             # one cycle into the plan from rest
    else:
        assert plan.start_time == start
        assert jump > 1e-2, jump                             # 0.1 s into the plan at once


def test_monitoring_is_opt_in_and_switches_at_run_time(rig, monkeypatch):
    """Default (``monitoring`` false): the loop never calls the monitor and its outputs stay NaN;
    turned on by reconfigure the observer starts from the current state (a residual, a payload
    estimate), off again every output is NaN at the next cycle and the calls stop."""
    import math
    from delta_hardware.loop_monitor import LoopMonitor
    model, drives, loop = rig
    calls = []
    original = LoopMonitor.update
    monkeypatch.setattr(LoopMonitor, "update", lambda self, *a: calls.append(1) or original(self, *a))
    t, _ = run(loop, 0.0, 0.1)
    assert loop.monitoring is False and not calls
    assert all(math.isnan(v) for v in loop.monitor.residual + loop.monitor.force + loop.monitor.payload)
    loop.reconfigure(monitoring=True)
    t, _ = run(loop, t, 0.1)
    assert len(calls) == 50
    assert all(math.isfinite(v) for v in loop.monitor.residual + loop.monitor.force + loop.monitor.payload)
    assert abs(loop.monitor.state.samples - 49) <= 1                 # started at the first cycle after the switch
    loop.reconfigure(monitoring=False)
    t, _ = run(loop, t, 0.1)
    assert len(calls) == 50
    assert all(math.isnan(v) for v in loop.monitor.residual + loop.monitor.force + loop.monitor.payload)


def test_collision_thresholds_need_monitoring():
    with pytest.raises(ValueError, match="collision detection needs monitoring: true"):
        LoopConfig(rate=1 / DT, collision_threshold=(2.0, 2.0, 2.0))
    assert LoopConfig(rate=1 / DT, monitoring=True, collision_threshold=(2.0, 2.0, 2.0)).monitoring is True


def test_payload_feedforward_carries_the_payload_of_the_last_motion():
    """``payload_feedforward`` (with monitoring) on a simulated robot carrying 1 kg its model
    lacks: the first motion is followed as without it; from its end the feedforward carries the
    payload the monitor read over it (within 20 g or 5 %) and the next motion tracks better than
    without; turned off, the feedforward is the model's again at the next cycle."""
    model = RotaryModel.from_robot("nt_robot")
    q1 = [0.35, 0.15, -0.1]

    def two_motions(payload_feedforward):
        drives = SimulatedDriveSet("nt_robot", seed=1)
        loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model", monitoring=True,
                                                     payload_feedforward=payload_feedforward))
        loop.activate()
        drives.set_payload(1.0)
        t, _ = run(loop, 0.0, 0.2)
        q0 = loop.current_setpoint().q.copy()
        rms, carried = [], []
        for target in (q1, q0.tolist()):
            loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.4], [target]))
            t, outs = run(loop, t, 0.6)
            e = np.array([o.setpoint.q - o.position for o in outs[:int(round(0.4 / DT))]])     # while it moves
            rms.append(float(np.sqrt((e ** 2).mean())))
            carried.append(loop.payload_in_feedforward)
        return rms, carried, loop, t

    (off1, off2), off_kg, _, _ = two_motions(False)
    (on1, on2), on_kg, loop, t = two_motions(True)
    assert off_kg == [0.0, 0.0]
    assert abs(on_kg[0] - 1.0) <= 0.05 and abs(on_kg[1] - 1.0) <= 0.05, on_kg
    assert on1 == pytest.approx(off1, rel=1e-6)              # no estimate before the first motion's end
    assert on2 < 0.5 * off2, (on2, off2)
    loop.reconfigure(payload_feedforward=False)
    run(loop, t, 0.01)
    assert loop.payload_in_feedforward == 0.0
