"""The control loop's one-sample monitoring path on Python floats (:meth:`LoopMonitor.update`:
the observer's :func:`~delta_dynamics.monitoring.observer.sample_terms_one`, the payload
estimator's and the collision detector's float updates) gives the numbers of the vectorised
path it replaced (numpy over one sample: :func:`~delta_dynamics.monitoring.observer.sample_terms`,
``np.linalg.inv`` of :func:`~delta_dynamics.algorithms.jacobian`, the estimator's
:meth:`~delta_dynamics.monitoring.payload.PayloadEstimator.regressor`, the detector's
:meth:`~delta_dynamics.monitoring.collision.CollisionDetector.band_step`), cycle by cycle, on a
real simulated motion (the explicit plant tracking a fast pick cycle, pushed half-way) for both
kinds, and the batch form of the observer."""
from __future__ import annotations

import math

import numpy as np
import pytest

from monitoring_rig import pick_motion, run

from delta_dynamics.algorithms import jacobian, joint_space_inertia, joint_space_sample, workspace_centre
from delta_dynamics.kinds import model_for
from delta_dynamics.monitoring.collision import CollisionDetector, thresholds_from_envelope
from delta_dynamics.monitoring.observer import MomentumObserver, platform_force, sample_terms, sample_terms_one
from delta_dynamics.monitoring.payload import PayloadEstimator
from delta_dynamics.plant import ExplicitPlant
from delta_hardware.loop_monitor import LoopMonitor

DT = 0.002
RTOL = 1e-12
SPAN = {"nt_robot": 0.305, "colombo2020": 0.1}
PUSH = {"nt_robot": 30.0, "colombo2020": 10.0}


class VectorisedMonitor:
    """The loop monitor's cycle as it was computed before the float path: every model term
    through the vectorised functions on one sample (arrays), the same equations."""

    def __init__(self, m, gain, thresholds):
        self.m, self.gain = m, gain
        self.det = CollisionDetector.for_model(m, thresholds, gain)
        self.est = PayloadEstimator(m, gain)
        self.prev = None

    def update(self, q, qd, tau, dt):
        q, qd, tau = (np.asarray(v, dtype=float) for v in (q, qd, tau))
        Mq, h, fric, X = sample_terms(self.m, q, qd)
        Ji = np.linalg.inv(jacobian(self.m, X))
        Xd = Ji @ qd
        if self.prev is None:                      # start: residual 0, payload sums empty
            self.r, self.band = np.zeros(3), self.det.start()
            self.psi, self.S, self.B, self.A, self.n = np.zeros(3), 0.0, 0.0, 0.0, 0.0
            self.prev = (Mq, qd, h, Xd)
            return None
        Mq0, qd0, h0, Xd0 = self.prev
        e = (0.5 / dt) * ((Mq + Mq0) @ (qd - qd0)) - tau + 0.5 * (h + h0) + fric
        a = math.exp(-self.gain * dt)
        self.r = a * self.r + (1.0 - a) * e
        lam = math.exp(-dt / self.est.memory)
        psi = self.est.regressor(X, Xd, Xd0, dt, Ji)
        self.psi = a * self.psi + (1.0 - a) * psi
        self.S = lam * self.S + float(self.psi @ self.psi)
        self.B = lam * self.B + float(self.psi @ self.r)
        self.A = lam * self.A + float(self.r @ self.r)
        self.n = lam * self.n + 1.0
        self.payload = self.B / self.S
        self.F = platform_force(self.m, X, self.r)
        self.prev = (Mq, qd, h, Xd)
        self.det.band_step(self.band, qd, dt)
        excess = np.abs(self.r) - (np.asarray(self.det.thresholds) + self.band
                                   + np.asarray(self.det.speed_slope) * np.abs(qd))
        i = int(np.argmax(excess / np.asarray(self.det.thresholds)))
        return i if excess[i] > 0.0 else None


def _record(name):
    """q, q_dot and the applied effort of a fast pick cycle on the explicit plant, pushed at the
    platform for 60 ms half-way (so that the collision decisions change during the run; a skew
    push: the motion along x loads mirror joints alike)."""
    m = model_for(name)
    mo = pick_motion(m, span=SPAN[name])
    t_on = 0.1 + 0.5 * mo.duration
    R = run(m, ExplicitPlant(m), mo, push=(t_on, t_on + 0.06, [PUSH[name], 0.3 * PUSH[name], -PUSH[name]]), settle=0.05)
    return m, R


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020"])
def test_float_path_equals_the_vectorised_path_on_a_simulated_motion(name):
    m, R = _record(name)
    assert len(R.t) > 200
    gain = 100.0
    # thresholds between the free motion's residual and the push's: some cycles over, most not
    env = np.abs(R.r).max(axis=0)
    thresholds = tuple((0.5 * env).tolist())
    fast, ref = LoopMonitor(m, gain, thresholds), VectorisedMonitor(m, gain, thresholds)
    got, want = {k: [] for k in ("r", "F", "payload", "band")}, {k: [] for k in ("r", "F", "payload", "band")}
    hits = 0
    for k in range(len(R.t)):
        c = fast.update(R.q[k], R.qd[k], R.tau[k], DT)
        i = ref.update(R.q[k], R.qd[k], R.tau[k], DT)
        if k == 0:
            assert c is None and fast.residual == (0.0, 0.0, 0.0)
            continue
        for d, v in ((got, (fast.residual, fast.force, fast.payload[0], fast.band.copy())),
                     (want, (ref.r, ref.F, ref.payload, ref.band.copy()))):
            for key, x in zip(("r", "F", "payload", "band"), v):
                d[key].append(x)
        assert (c is None) == (i is None), k                   # the decision
        if c is not None and c.joint != i:                    # the joint: only a tie (mirror joints) may differ
            ratio = (np.abs(ref.r) - (np.asarray(thresholds) + ref.band + np.asarray(ref.det.speed_slope)
                                      * np.abs(R.qd[k]))) / np.asarray(thresholds)
            assert ratio[c.joint] == pytest.approx(ratio[i], rel=RTOL, abs=RTOL), k
        hits += i is not None
    for key in got:                                           # relative to each quantity's size over the run
        w = np.asarray(want[key])
        np.testing.assert_allclose(got[key], w, rtol=RTOL, atol=RTOL * np.abs(w).max(), err_msg=key)
    assert 0 < hits < len(R.t) // 2                 # the decisions were exercised both ways
    assert math.isfinite(fast.payload[1])


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020", "rotary-per-arm", "linear-per-arm"])
def test_one_sample_terms_equal_the_vectorised_terms(name):
    """sample_terms_one (the kind's joint_space_sample) = sample_terms, J, J^-1, X_dot and
    J^-T M J^-1 of the algorithms, over random states of the workspace; also with per-arm
    geometry (``geometry.per_arm``, the perturbed arms of test_per_arm_dynamics.py)."""
    if name.endswith("per-arm"):
        from test_per_arm_dynamics import PERTURBED, with_per_arm
        kind = name.split("-")[0]
        m = model_for(with_per_arm(kind, PERTURBED[kind]))
        assert m.arms is not None
    else:
        m = model_for(name)
    rng = np.random.default_rng(4)
    X = workspace_centre(m) + 0.03 * rng.standard_normal((40, 3))
    from delta_dynamics.algorithms import joint_state
    q, qd, _ = joint_state(m, X, rng.standard_normal((40, 3)))
    Mq, h, fric, Xv = sample_terms(m, q, qd)
    J = jacobian(m, Xv)
    Ji = np.linalg.inv(J)
    for k in range(40):
        Mq1, h1, f1, X1, Xd1, J1, Ji1 = sample_terms_one(m, tuple(q[k].tolist()), tuple(qd[k].tolist()))
        for got, want in ((Mq1, Mq[k]), (h1, h[k]), (f1, fric[k]), (X1, Xv[k]), (J1, J[k]), (Ji1, Ji[k]),
                          (Xd1, Ji[k] @ qd[k]), (Mq1, joint_space_inertia(m, Xv[k]))):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * np.abs(want).max())
    assert joint_space_sample(m, tuple(q[-1].tolist()), tuple(qd[-1].tolist()))[4] == Mq1   # what the observer takes


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020"])
def test_float_observer_equals_the_batch_form_on_a_simulated_motion(name):
    m, R = _record(name)
    obs = MomentumObserver(m)
    st = obs.start(R.q[0], R.qd[0])
    one = np.array([st.r] + [obs.update(st, R.q[k], R.qd[k], R.tau[k], DT) for k in range(1, len(R.t))])
    batch = obs.residuals(R.q, R.qd, R.tau, DT)
    np.testing.assert_allclose(one, batch, rtol=RTOL, atol=RTOL * np.abs(batch).max())


def test_float_path_refuses_bad_input_by_name():
    m = model_for("colombo2020")
    mon = LoopMonitor(m, thresholds=(1.0, 1.0, 1.0))
    X = workspace_centre(m)
    from delta_dynamics.algorithms import inverse_kinematics
    q = inverse_kinematics(m, X)
    mon.update(q, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], DT)
    for bad, what in (([0.1, float("nan"), 0.1], "joint position"), ([0.1, 0.2], "joint position")):
        with pytest.raises(ValueError, match=what):
            mon.update(bad, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], DT)
    with pytest.raises(ValueError, match="joint velocity"):
        mon.update(q, [0.0, float("inf"), 0.0], [0.0, 0.0, 0.0], DT)
    with pytest.raises(ValueError, match="joint effort"):
        mon.update(q, [0.0, 0.0, 0.0], np.zeros((3, 3)), DT)
    assert mon.update(q, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), DT) is None            # tuples of floats: the same path
    assert mon.state.samples == 1


def test_the_nodes_calibration_leaves_out_what_the_detectors_band_adds():
    """``~/calibrate_collision``'s thresholds (:func:`calibration_thresholds`): a motion whose
    residual holds a joint's static friction while it breaks away (2.4 N m at rest, as any model
    error of a resting joint can) and 0.3 N m once moving gets 1.5 x 0.3 N m, not 1.5 x 2.4:
    the detector's band covers the resting joint; with the loop's detector over the same record
    nothing trips, and a 1 N m step in motion does."""
    from delta_hardware.ros.monitoring import CALIBRATION_FLOOR, calibration_thresholds
    m = model_for("nt_robot")
    dt, n = 0.002, 400
    t = np.arange(n) * dt
    qd = np.zeros((n, 3))
    qd[50:] = np.minimum(1.0, (t[50:, None] - t[50]) * 5.0) * [1.0, -1.0, 0.5]
    r = np.full((n, 3), 0.3) * np.sin(7 * t)[:, None]
    r[:60, 0] = 2.4                                     # joint 1 breaking away
    th = calibration_thresholds(m, 50.0, [(t[k], r[k], qd[k]) for k in range(n)])
    assert 0.3 < th[0] < 0.46 and max(th) < 0.46 and min(th) >= CALIBRATION_FLOOR, th
    assert thresholds_from_envelope(r)[0] == pytest.approx(3.6)          # the raw envelope's
    det = CollisionDetector.for_model(m, th, 50.0)
    band = det.start()
    band[:] = det.rested_band(qd[0])
    assert all(det.check(band, r[k], qd[k], dt) is None for k in range(n))
    r[300:, 1] += 1.0
    band[:] = det.rested_band(qd[0])
    hits = [k for k in range(n) if det.check(band, r[k], qd[k], dt) is not None]
    assert hits and hits[0] == 300
