"""Synthetic identification data with known parameters (tests, benchmark, docs).

* :func:`perturbed_model`: a "true" robot whose lumped parameters differ from the robot file's
  (per joint, seeded), as a real robot differs from its manufacturer data.
* :func:`measure`: turn exact joint motion and torques into what a drive reports: encoder
  quantisation of the positions (``counts_per_rev`` at the arm) and Gaussian torque noise of
  ``noise`` times each joint's RMS torque.
* :func:`open_loop_data`: torques by inverse dynamics of the true model along a joint
  trajectory (exact, friction included), then :func:`measure`.
* :func:`closed_loop_data`: the fixed-step simulator (:func:`delta_dynamics.algorithms.step`)
  driven by a PD + feedforward controller that only knows the nominal model; the recorded
  torque is what the controller commanded, the positions what the simulated robot did.

Either kind of Delta (:mod:`delta_dynamics.algorithms`); on a linear one the "torques" are
carriage forces (N) and the positions carriage heights (m).
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.algorithms import (cartesian_state, inverse_dynamics, joint_state, step,
                                       parameters_from_vector)
from delta_dynamics.data_files.joint_data import JointData


def perturbed_model(model, spread: float = 0.2, seed: int = 1,
                    viscous=(1.2, 1.6, 1.4), coulomb=(1.8, 2.3, 2.0), static=None):
    """The model with every lumped mass/inertia/moment scaled by 1 + U(-spread, spread)
    (per joint for the arm or carriage terms: the first 8 lumped parameters, in their order)
    and the given per-joint friction (``static``: Stribeck break-away efforts; None means
    none, i.e. static = coulomb). Either kind of model."""
    rng = np.random.default_rng(seed)
    v = model.params.as_vector()
    for k in range(8):
        v[k] = v[k] * (1.0 + spread * rng.uniform(-1.0, 1.0))
    v[8:11], v[11:14] = viscous, coulomb
    return model.with_parameters(parameters_from_vector(
        model, v, static=tuple(float(s) for s in (static if static is not None else coulomb))))


def measure(t, q, tau, noise: float = 0.01, counts_per_rev: int | None = 2 ** 17, seed: int = 0,
            source: str = "synthetic", gear_ratio: float = 1.0) -> JointData:
    """Quantised positions and noisy torques (see the module docstring): positions rounded to
    the encoder's increment at the joint, 2 pi / (counts_per_rev gear_ratio) (rad at an arm
    with ``gear_ratio`` 1, the default; m on a carriage with the motor's rad per metre)."""
    rng = np.random.default_rng(seed)
    q = np.asarray(q, dtype=float)
    tau = np.asarray(tau, dtype=float)
    if counts_per_rev:
        step = 2.0 * math.pi / (counts_per_rev * gear_ratio)
        q = np.round(q / step) * step
    if noise:
        rms = np.sqrt(np.mean(tau * tau, axis=0))
        tau = tau + rng.normal(size=tau.shape) * (noise * rms)
    return JointData(t=np.asarray(t, dtype=float).copy(), q=q, tau=tau, source=source)


def open_loop_data(true_model, traj, duration: float | None = None, dt: float = 1e-3,
                   noise: float = 0.01, counts_per_rev: int | None = 2 ** 17, seed: int = 0,
                   t0: float = 0.0, gear_ratio: float = 1.0):
    """(JointData, exact torques) along a joint trajectory (e.g. a FourierTrajectory);
    ``counts_per_rev`` and ``gear_ratio`` as in :func:`measure`."""
    dur = traj.period if duration is None else duration
    t = t0 + np.arange(int(round(dur / dt)) + 1) * dt
    q, qd, qdd = traj.evaluate(t)
    X, Xd, Xdd = cartesian_state(true_model, q, qd, qdd)
    tau = inverse_dynamics(true_model, X, Xd, Xdd)
    return measure(t, q, tau, noise, counts_per_rev, seed, gear_ratio=gear_ratio), tau


def closed_loop_data(true_model, nominal_model, traj, duration: float | None = None, dt: float = 1e-3,
                     kp: float = 4000.0, kd: float = 120.0, noise: float = 0.01,
                     counts_per_rev: int | None = 2 ** 17, seed: int = 0, substeps: int = 2,
                     gear_ratio: float = 1.0):
    """Simulated closed-loop run (see the module docstring); returns (JointData, tracking RMS in
    rad, or m on a linear robot). ``counts_per_rev`` and ``gear_ratio`` as in :func:`measure`;
    ``kp``, ``kd`` in N m/rad, N m s/rad (N/m, N s/m).

    Controller (updated every ``dt`` from the quantised position and its backward difference):
    tau = tau_ff(q_ref, q_d_ref, q_dd_ref; nominal model) + kp (q_ref - q) + kd (q_d_ref - q_d).
    The robot is integrated with the semi-implicit step in ``substeps`` steps per sample.
    """
    dur = traj.period if duration is None else duration
    n = int(round(dur / dt)) + 1
    t = np.arange(n) * dt
    qr, qdr, qddr = traj.evaluate(t)
    Xr, Xdr, Xddr = cartesian_state(nominal_model, qr, qdr, qddr)
    tff = inverse_dynamics(nominal_model, Xr, Xdr, Xddr)
    X, V = tuple(Xr[0].tolist()), tuple(Xdr[0].tolist())
    qs = np.empty((n, 3))
    taus = np.empty((n, 3))
    quant = 2.0 * math.pi / (counts_per_rev * gear_ratio) if counts_per_rev else 0.0
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
    data = measure(t, qs, taus, noise, counts_per_rev, seed, source="synthetic closed loop",
                   gear_ratio=gear_ratio)
    return data, float(np.sqrt(np.mean((qs - qr) ** 2)))
