"""Synthetic identification data with known parameters (tests, benchmark, docs).

* :func:`perturbed_model`: a "true" robot whose lumped parameters differ from the robot file's
  (per joint, seeded), as a real robot differs from its manufacturer data.
* :func:`measure`: turn exact joint motion and torques into what a drive reports: encoder
  quantisation of the positions (``counts_per_rev`` at the arm) and Gaussian torque noise of
  ``noise`` times each joint's RMS torque.
* :func:`open_loop_data`: torques by inverse dynamics of the true model along a joint
  trajectory (exact, friction included), then :func:`measure`.
* :func:`closed_loop_data`: the fixed-step simulator (:func:`delta_dynamics.simulate.step`)
  driven by a PD + feedforward controller that only knows the nominal model; the recorded
  torque is what the controller commanded, the positions what the simulated robot did.
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.dynamics import cartesian_state, inverse_dynamics, joint_state
from delta_dynamics.model import DeltaModel, DynamicParameters

from .data import JointData


def perturbed_model(model: DeltaModel, spread: float = 0.2, seed: int = 1,
                    viscous=(1.2, 1.6, 1.4), coulomb=(1.8, 2.3, 2.0), static=None) -> DeltaModel:
    """The model with every lumped mass/inertia/moment scaled by 1 + U(-spread, spread)
    (per joint for the arm terms) and the given per-joint friction (``static``: Stribeck
    break-away torques; None means none, i.e. static = coulomb)."""
    rng = np.random.default_rng(seed)
    p = model.params
    f = lambda: 1.0 + spread * rng.uniform(-1.0, 1.0)
    return model.with_parameters(DynamicParameters(
        m_x=p.m_x * f(), m_k=p.m_k * f(),
        arm_inertia=tuple(v * f() for v in p.arm_inertia),
        arm_moment=tuple(v * f() for v in p.arm_moment),
        viscous=tuple(float(v) for v in viscous), coulomb=tuple(float(v) for v in coulomb),
        static=tuple(float(v) for v in (static if static is not None else coulomb)),
        stribeck_velocity=p.stribeck_velocity, smoothing_velocity=p.smoothing_velocity))


def measure(t, q, tau, noise: float = 0.01, counts_per_rev: int | None = 2 ** 17, seed: int = 0,
            source: str = "synthetic") -> JointData:
    """Quantised positions and noisy torques (see the module docstring)."""
    rng = np.random.default_rng(seed)
    q = np.asarray(q, dtype=float)
    tau = np.asarray(tau, dtype=float)
    if counts_per_rev:
        step = 2.0 * math.pi / counts_per_rev
        q = np.round(q / step) * step
    if noise:
        rms = np.sqrt(np.mean(tau * tau, axis=0))
        tau = tau + rng.normal(size=tau.shape) * (noise * rms)
    return JointData(t=np.asarray(t, dtype=float).copy(), q=q, tau=tau, source=source)


def open_loop_data(true_model, traj, duration: float | None = None, dt: float = 1e-3,
                   noise: float = 0.01, counts_per_rev: int | None = 2 ** 17, seed: int = 0,
                   t0: float = 0.0):
    """(JointData, exact torques) along a joint trajectory (e.g. a FourierTrajectory)."""
    dur = traj.period if duration is None else duration
    t = t0 + np.arange(int(round(dur / dt)) + 1) * dt
    q, qd, qdd = traj.evaluate(t)
    X, Xd, Xdd = cartesian_state(true_model, q, qd, qdd)
    tau = inverse_dynamics(true_model, X, Xd, Xdd)
    return measure(t, q, tau, noise, counts_per_rev, seed), tau


def closed_loop_data(true_model, nominal_model, traj, duration: float | None = None, dt: float = 1e-3,
                     kp: float = 4000.0, kd: float = 120.0, noise: float = 0.01,
                     counts_per_rev: int | None = 2 ** 17, seed: int = 0, substeps: int = 2):
    """Simulated closed-loop run (see the module docstring); returns (JointData, tracking RMS in rad).

    Controller (updated every ``dt`` from the quantised position and its backward difference):
    tau = tau_ff(q_ref, q_d_ref, q_dd_ref; nominal model) + kp (q_ref - q) + kd (q_d_ref - q_d).
    The robot is integrated with the semi-implicit step in ``substeps`` steps per sample.
    """
    from delta_dynamics.simulate import step

    dur = traj.period if duration is None else duration
    n = int(round(dur / dt)) + 1
    t = np.arange(n) * dt
    qr, qdr, qddr = traj.evaluate(t)
    Xr, Xdr, Xddr = cartesian_state(nominal_model, qr, qdr, qddr)
    tff = inverse_dynamics(nominal_model, Xr, Xdr, Xddr)
    X, V = tuple(Xr[0].tolist()), tuple(Xdr[0].tolist())
    qs = np.empty((n, 3))
    taus = np.empty((n, 3))
    quant = 2.0 * math.pi / counts_per_rev if counts_per_rev else 0.0
    q_prev = None
    h = dt / substeps
    for k in range(n):
        q, _, _ = joint_state(true_model, X, V)
        qm = np.round(q / quant) * quant if quant else q
        qd_est = (qm - q_prev) / dt if q_prev is not None else qdr[k]
        q_prev = qm
        tau = tff[k] + kp * (qr[k] - qm) + kd * (qdr[k] - qd_est)
        qs[k] = q
        taus[k] = tau
        tl = tuple(float(v) for v in tau)
        for _ in range(substeps):
            X, V = step(true_model, X, V, tl, h)
    data = measure(t, qs, taus, noise, counts_per_rev, seed, source="synthetic closed loop")
    return data, float(np.sqrt(np.mean((qs - qr) ** 2)))
