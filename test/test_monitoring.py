"""The monitoring package on real simulated robots: the momentum observer's residual against
a known push (explicit plant of both kinds, MuJoCo), no false collision along fast motion,
detection of a push during a fast pick cycle, the payload after one pick cycle on MuJoCo."""
from __future__ import annotations

import math

import numpy as np
import pytest

from monitoring_rig import pick_motion, run

from delta_dynamics.algorithms import (cartesian_state, forward_dynamics, inverse_dynamics_joint, jacobian,
                                       joint_state, workspace_centre)
from delta_dynamics.kinds import model_for
from delta_dynamics.monitoring.collision import CollisionDetector, thresholds_from_envelope
from delta_dynamics.monitoring.observer import GAIN_MAX, GAIN_MIN, MomentumObserver, momentum_terms
from delta_dynamics.monitoring.payload import PayloadEstimate, PayloadEstimator, payload_event
from delta_dynamics.plant import ExplicitPlant

DT = 0.002          # the loop's 500 Hz
LINEAR_SPAN = 0.1   # colombo2020 cannot reach 305 mm at its workspace centre: a 25/100/25 mm door


def mujoco_plant(name="nt_robot"):
    pytest.importorskip("mujoco")
    from delta_dynamics.reference.mujoco_model.plant import MujocoPlant
    return MujocoPlant(name)


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020"])
def test_momentum_derivative_is_the_model(name):
    """p_dot (finite difference along the model's own motion) = tau - tau_fric - beta."""
    m = model_for(name)
    X = workspace_centre(m) + np.array([0.03, -0.02, 0.01])
    Xd, tau = np.array([1.0, -0.5, 0.7]), np.array([1.0, 2.0, -1.0])
    q, qd, qdd = joint_state(m, X, Xd, forward_dynamics(m, X, Xd, tau))
    h = 1e-6
    p_plus = momentum_terms(m, q + h * qd + 0.5 * h * h * qdd, qd + h * qdd)[0]
    p_minus = momentum_terms(m, q - h * qd + 0.5 * h * h * qdd, qd - h * qdd)[0]
    _, beta, fric, _ = momentum_terms(m, q, qd)
    np.testing.assert_allclose((p_plus - p_minus) / (2 * h), tau - fric - beta, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020"])
def test_batch_form_equals_one_sample_path(name):
    m = model_for(name)
    rng = np.random.default_rng(1)
    X0 = workspace_centre(m)
    X = X0 + 0.01 * np.cumsum(rng.normal(size=(40, 3)), 0) * 0.1
    Xd = rng.normal(size=(40, 3)) * 0.3
    q, qd, _ = joint_state(m, X, Xd)
    tau = rng.normal(size=(40, 3))
    obs = MomentumObserver(m, 80.0)
    batch = obs.residuals(q, qd, tau, DT)
    st = obs.start(q[0], qd[0])
    one = [st.r.copy()] + [obs.update(st, q[k], qd[k], tau[k], DT).copy() for k in range(1, 40)]
    np.testing.assert_allclose(batch, one, rtol=1e-9, atol=1e-9)


def test_gain_bounds_and_bad_input():
    m = model_for("nt_robot")
    for bad in (GAIN_MIN / 2, GAIN_MAX * 2, float("nan"), "x"):
        with pytest.raises(ValueError, match="observer gain"):
            MomentumObserver(m, bad)
    obs = MomentumObserver(m)
    st = obs.start([0.3, 0.3, 0.3], [0, 0, 0])
    with pytest.raises(ValueError, match="joint effort"):
        obs.update(st, [0.3, 0.3, 0.3], [0, 0, 0], [0, float("inf"), 0], DT)
    with pytest.raises(ValueError, match="dt"):
        obs.update(st, [0.3, 0.3, 0.3], [0, 0, 0], [0, 0, 0], 0.0)


def _push_at_rest(m, plant, F, gain=100.0, t_push=0.1, t_end=0.4):
    """Hold the robot at its start pose with the model's holding effort plus a stiff PD; push
    with F from t_push. Returns (t, r, F_est, tau_ext expected)."""
    mo = pick_motion(m, span=0.305 if m.ops.kind.name == "rotary" else LINEAR_SPAN)
    still = type(mo)(mo.t[:1], mo.X[:1], 0 * mo.Xd[:1], 0 * mo.Xdd[:1], mo.q[:1], 0 * mo.qd[:1], 0 * mo.qdd[:1],
                     mo.effort[:1], mo.effort_column, 0.0, mo.report)
    R = run(m, plant, still, gain=gain, settle=t_end, push=(t_push, 10.0, F))
    tau_ext = np.einsum("kji,j->ki", np.linalg.inv(jacobian(m, R.X)), np.asarray(F, float))
    return R, tau_ext


@pytest.mark.parametrize("name,plant", [("nt_robot", "explicit"), ("colombo2020", "explicit"), ("nt_robot", "mujoco")])
def test_residual_follows_the_push_with_the_observer_time_constant(name, plant):
    """r -> J^-T F as the first-order response 1 - exp(-(t - t0) K), and J^T r -> F."""
    m = model_for(name)
    F = [12.0, -8.0, -30.0] if name == "nt_robot" else [3.0, -2.0, -10.0]
    gain = 100.0
    R, tau_ext = _push_at_rest(m, ExplicitPlant(m) if plant == "explicit" else mujoco_plant(name), F, gain)
    k0 = int(round(0.1 / DT))                      # first sample whose interval carries the push
    for n in (5, 10, 25, 100):                     # 1, 2, 5, 20 time constants
        k = k0 + n
        expected = tau_ext[k] * (1.0 - math.exp(-gain * DT * n))
        # 5 %: stiction holds part of the push while a rotary arm breaks away (nt_robot's c_s = 2.5 N m)
        np.testing.assert_allclose(R.r[k], expected, atol=0.05 * np.abs(tau_ext[k]).max())
    assert np.abs(R.r[:k0]).max() < 0.02 * np.abs(tau_ext).max()          # nothing before the push
    np.testing.assert_allclose(R.F[-1], F, atol=0.02 * np.abs(F).max())   # J^T r = F in base_link


def test_plants_take_a_push_and_a_payload():
    """The explicit and the MuJoCo plant: a held push accelerates the platform by M^-1 F (zero
    removes it), a payload changes what holding costs; bad values are refused by name."""
    m = model_for("nt_robot")
    plants = [ExplicitPlant(m), mujoco_plant()]
    X = workspace_centre(m)
    q, _, _ = joint_state(m, X, np.zeros(3))
    hold = inverse_dynamics_joint(m, q, np.zeros(3), np.zeros(3))
    for plant in plants:
        plant.place(q)
        plant.set_external_force([0.0, 20.0, 0.0])
        plant.step(hold, 0.001)
        _, Xd, _ = cartesian_state(m, *plant.joint_state())
        assert Xd[1] > 1e-3 and abs(Xd[0]) < 1e-3 * Xd[1]
        plant.set_external_force([0, 0, 0])
        plant.place(q)
        plant.step(hold, 0.001)
        assert np.abs(plant.joint_state()[1]).max() < 1e-4
        plant.set_payload(5.0)                                         # 5 kg: 5.6 N m per arm, over c_s
        plant.place(q)
        plant.step(hold, 0.001)
        assert all(v > 1e-3 for v in plant.joint_state()[1])          # heavier: the arms sink (q grows)
        plant.set_payload(0.0)
        plant.place(q)
        plant.step(hold, 0.001)
        assert np.abs(plant.joint_state()[1]).max() < 1e-4             # back to the robot file's payload
        for bad in ([1, 2], [0, float("nan"), 0], "abc"):
            with pytest.raises(ValueError, match="external platform force"):
                plant.set_external_force(bad)
        for bad in (-1.0, float("inf"), None):
            with pytest.raises(ValueError, match="payload mass"):
                plant.set_payload(bad)


# ----------------------------------------------------------------------------- collisions

CASES = {  # name, plant, push (N), the fast motion's span
    "nt_robot-mujoco": ("nt_robot", "mujoco", 30.0, 0.305),
    "colombo2020-explicit": ("colombo2020", "explicit", 10.0, LINEAR_SPAN),
}


def _plant(name, plant):
    return ExplicitPlant(model_for(name)) if plant == "explicit" else mujoco_plant(name)


def _cycle(m, direction, span, dz=0.0, cycles=1):
    from delta_dynamics.motion import plan_pick
    c = workspace_centre(m) + [0.0, 0.0, dz]
    d = 0.5 * span * np.asarray(direction, float) / np.linalg.norm(direction)
    return plan_pick(m, c - d, c + d, cycles=cycles).motion


@pytest.fixture(scope="module", params=sorted(CASES))
def calibrated(request):
    """Thresholds from fast pick cycles without contact along x and along y (the calibration
    a user runs: the envelope of the residual over the motions the robot will make)."""
    name, plant, push, span = CASES[request.param]
    m = model_for(name)
    probe = CollisionDetector.for_model(m, (1, 1, 1))
    rs, bands = [], []
    for direction in ([1, 0, 0], [0, 1, 0]):
        R = run(m, _plant(name, plant), _cycle(m, direction, span))
        rs.append(R.r)
        bands.append(probe.bands(R.qd, DT))
    det = CollisionDetector.for_model(m, thresholds_from_envelope(np.vstack(rs), np.vstack(bands)))
    return name, plant, push, span, m, pick_motion(m, span=span), det


def test_no_false_collision_along_other_fast_motion(calibrated):
    """Three fast cycles along a diagonal, 10 mm higher than the calibration: no collision."""
    name, plant, push, span, m, _, det = calibrated
    R = run(m, _plant(name, plant), _cycle(m, [1, 1, 0], span, dz=0.01, cycles=3))
    assert det.first_collision(m, R.X, R.r, R.qd, DT) is None


def test_push_during_a_fast_cycle_is_detected_within_10_ms(calibrated):
    name, plant, push, span, m, mo, det = calibrated
    for t_on in np.linspace(0.15, 0.1 + mo.duration - 0.05, 4):
        for d in ([1, 0, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]):
            F = push * np.asarray(d, float)
            R = run(m, _plant(name, plant), mo, push=(t_on, t_on + 0.05, F))
            c = det.first_collision(m, R.X, R.r, R.qd, DT)
            k_on = int(np.searchsorted(R.t, t_on - 1e-9))
            assert c is not None and c.sample >= k_on, (t_on, d)
            assert R.t[c.sample] - t_on <= 0.010 + 1e-9, (t_on, d, R.t[c.sample] - t_on)
            assert np.dot(c.direction, d) > 0.5, (c.force, d)              # the force points the right way


def test_no_false_collision_where_a_band_below_the_stribeck_velocity_tripped_on_mujoco():
    """MuJoCo's dry friction takes over gradually while the model's switches within 2 mrad/s:
    joints slowing through 0.1-0.25 rad/s leave up to c_s in the residual. The first 15 random
    fast pick motions of the bench's soak (seed 1) with the bench's calibration (x, y and 6 random
    cycles, seed 0): none trips the detector ``for_model`` builds (band below 12 Stribeck
    velocities, 1 % of c_v per unit of speed); the band below the Stribeck velocity alone (as
    before) trips the 15th, so these motions do test it."""
    from monitoring_rig import random_cycles
    m = model_for("nt_robot")
    cal = [_cycle(m, d, 0.305) for d in ([1, 0, 0], [0, 1, 0])]
    gen = random_cycles(m, 0.305, seed=0)
    cal += [next(gen) for _ in range(6)]
    cal_runs = [run(m, mujoco_plant(), mo, settle=0.05) for mo in cal]
    gen = random_cycles(m, 0.305, seed=1)
    soak = [run(m, mujoco_plant(), next(gen), settle=0.05) for _ in range(15)]

    def detector(**rule):
        probe = CollisionDetector.for_model(m, (1, 1, 1), **rule)
        th = thresholds_from_envelope(np.vstack([R.r for R in cal_runs]),
                                      np.vstack([probe.bands(R.qd, DT) for R in cal_runs]))
        return CollisionDetector.for_model(m, th, **rule)

    now, before = detector(), detector(speed_factor=1.0, viscous_share=0.0)
    assert [k for k, R in enumerate(soak) if now.first_collision(m, R.X, R.r, R.qd, DT) is not None] == []
    assert [k for k, R in enumerate(soak) if before.first_collision(m, R.X, R.r, R.qd, DT) is not None] == [14]


# ----------------------------------------------------------------------------- payload

def test_payload_after_one_pick_cycle_on_mujoco():
    """One 25/305/25 mm cycle carrying 0.1-2 kg: within 20 g or 5 % once the empty robot's
    reading is tared; picked / lost events between the two ends."""
    m = model_for("nt_robot")
    mo = pick_motion(m)
    est = PayloadEstimator(m, memory=math.inf)

    def cycle(kg):
        plant = mujoco_plant()
        plant.set_payload(kg)
        R = run(m, plant, mo, settle=0.05)
        X, Xd, _ = cartesian_state(m, R.q, R.qd)
        return est.estimate_record(X, Xd, R.r, DT)

    empty = cycle(0.0)
    assert abs(empty.mass) < 0.05                   # the model's own error on MuJoCo
    tared = est.tare(empty)
    estimates = {}
    for kg in (0.1, 0.5, 2.0):
        e = cycle(kg)
        estimates[kg] = PayloadEstimate(e.mass - tared.offset, e.std, e.samples)
        assert abs(estimates[kg].mass - kg) <= max(0.02, 0.05 * kg), (kg, estimates[kg])
        assert 0 < estimates[kg].std < 0.05
    assert payload_event(PayloadEstimate(0.0, empty.std), estimates[0.5]) == "picked"
    assert payload_event(estimates[2.0], estimates[0.1]) == "lost"
    assert payload_event(estimates[0.1], PayloadEstimate(0.1 + 0.01, estimates[0.1].std)) is None


def test_the_loop_reads_the_payload_of_one_whole_motion():
    """LoopMonitor (the control loop's monitor): once a motion has run, its payload is the
    least-squares fit of that motion's samples alone (no forgetting, not the rest before it),
    the batch fit to 1e-9, and after one 25/305/25 mm door on MuJoCo carrying 0.1, 0.5 or 2 kg
    within 20 g or 5 % of it once the empty robot's reading is tared; the running estimate (about
    the last second, rest included) is not what it reports."""
    from delta_hardware.loop_monitor import LoopMonitor
    m = model_for("nt_robot")
    mo = pick_motion(m)

    def cycle(kg):
        plant = mujoco_plant()
        plant.set_payload(kg)
        R = run(m, plant, mo, settle=0.3)
        moving = np.r_[False, np.any(R.q_ref[1:] != R.q_ref[:-1], axis=1)]     # the setpoint over (t[k-1], t[k]]
        mon, running = LoopMonitor(m), PayloadEstimator(m)
        X, Xd, _ = cartesian_state(m, R.q, R.qd)
        st = running.start(Xd[0])
        for k in range(len(R.t)):
            mon.update(R.q[k], R.qd[k], R.tau[k], DT, bool(moving[k]))
            if k:
                running.update(st, X[k], Xd[k], R.r[k], DT)
        # the batch fit over the last motion's samples (the cycle is there and back: two motions,
        # the regressor filtered from the observer's start)
        from scipy.signal import lfilter
        a = math.exp(-mon.observer.gain * DT)
        psi = lfilter([1 - a], [1, -a], running.regressor(X[1:], Xd[1:], Xd[:-1], DT), axis=0)
        k_rest = np.nonzero(~moving[:-1] & moving[1:])[0]
        assert len(k_rest) == 2                                  # two motions
        sel = moving[1:].copy()
        sel[:k_rest[-1]] = False
        batch = float(np.sum(psi[sel] * R.r[1:][sel]) / np.sum(psi[sel] * psi[sel]))
        assert mon.payload[0] == pytest.approx(batch, rel=1e-9), kg
        return mon.payload, running.estimate(st, DT).mass

    (empty, _), _ = cycle(0.0), None
    for kg in (0.1, 0.5, 2.0):
        (loaded, std), run_est = cycle(kg)
        assert abs(loaded - empty[0] - kg) <= max(0.02, 0.05 * kg) and 0 < std < 0.05, (kg, loaded, empty)
        assert abs(run_est - loaded) > 1e-4, kg                  # the running estimate is another number


def test_payload_tracked_with_forgetting_on_the_explicit_plant():
    """The recursive form follows a payload change (picked mid-run) within its memory."""
    m = model_for("colombo2020")
    mo = pick_motion(m, span=LINEAR_SPAN, cycles=3)
    R = run(m, ExplicitPlant(m), mo, payload=(0.1 + mo.duration / 3, 0.8))
    est = PayloadEstimator(m, memory=0.3)
    X, Xd, _ = cartesian_state(m, R.q, R.qd)
    st = est.start(Xd[0])
    before = after = None
    k_change = int(np.searchsorted(R.t, 0.1 + mo.duration / 3))
    for k in range(1, len(R.t)):
        est.update(st, X[k], Xd[k], R.r[k], DT)
        if k == k_change - 1:
            before = est.estimate(st, DT)
    after = est.estimate(st, DT)
    assert abs(before.mass) < 0.02 and abs(after.mass - 0.8) < 0.04, (before, after)
    assert payload_event(before, after) == "picked"
