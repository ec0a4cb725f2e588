"""The generalised-momentum observer (De Luca & Mattone 2005; Haddadin, De Luca & Albu-Schaeffer
2017) for the reduced joint-space model of either kind of Delta (``docs/monitoring.md``).

The reduced model in the actuated joints q (rad or m) is Lagrangian: with the joint-space mass
matrix M_q = J^-T M(X) J^-1 (:func:`delta_dynamics.algorithms.joint_space_inertia`, J the
kinematic Jacobian q_dot = J X_dot), the momentum p = M_q q_dot obeys

    p_dot = tau - tau_fric(q_dot) + tau_ext - beta(q, q_dot),
    beta  = g_q + C_q q_dot - M_q_dot q_dot   (= g_q - C_q^T q_dot for a Christoffel C_q)

where g_q + C_q q_dot + tau_fric is the model's inverse dynamics at q_ddot = 0
(:func:`delta_dynamics.algorithms.inverse_dynamics_joint`) and M_q_dot is M_q's derivative
along the motion (:func:`momentum_terms` gives these continuous-time terms, M_q_dot by a
central difference). No acceleration is measured. The residual

    r(t) = K [p(t) - p(0) - int_0^t (tau - tau_fric - beta + r) ds]

follows r_dot = K (tau_ext - r): a first-order filter of the external joint effort with time
constant 1/K. Here it is discretised exactly for an effort held over each sample interval
(zero-order hold, as a drive holds its target), a = exp(-K dt): r_k = a r_{k-1} + (1 - a) e_k
with e_k the mean external effort over (t_{k-1}, t_k], from the momentum balance over the
interval, the conservative terms by the trapezoid rule and M_q_dot q_dot as
(M_q,k - M_q,k-1) / dt times the mean velocity:

    e_k = [p_k - p_{k-1} - (M_q,k - M_q,k-1) (q_dot_k + q_dot_{k-1}) / 2] / dt - tau_k
          + (h_k + h_{k-1}) / 2 + tau_fric(q_dot_k)
        = (M_q,k + M_q,k-1) / 2 (q_dot_k - q_dot_{k-1}) / dt - tau_k + (h_k + h_{k-1}) / 2 + tau_fric(q_dot_k)

with h = g_q + C_q q_dot (:func:`sample_terms`: one mass matrix, one Jacobian and one inverse
dynamics per sample, no difference quotient of M_q). ``tau_k`` is the effort applied over
(t_{k-1}, t_k], i.e. commanded at the previous sample; friction is taken at the interval's end
as the plants' linearly implicit integrators apply it. The filter is stable for every K dt.

:class:`MomentumObserver` is the immutable part (model, gain); :class:`ObserverState` the
per-run workspace; :meth:`MomentumObserver.update` the loop's one-sample path on Python floats
(:func:`sample_terms_one`), :meth:`MomentumObserver.residuals` the vectorised batch form over a
record (:func:`sample_terms`; the same numbers to rounding, ``test/test_monitoring_fast.py``).

>>> from delta_dynamics.algorithms import inverse_dynamics_joint
>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.plant import ExplicitPlant
>>> m = model_for("nt_robot")
>>> plant, obs = ExplicitPlant(m), MomentumObserver(m)
>>> q, qd = plant.joint_state()
>>> tau = inverse_dynamics_joint(m, q, qd, [0.0, 0.0, 0.0])        # hold still
>>> state = obs.start(q, qd)
>>> plant.set_external_force([0.0, 0.0, -30.0])                     # a 30 N push down
>>> for k in range(100):                                            # 0.2 s at 500 Hz
...     plant.step(tau, 0.002)
...     r = obs.update(state, *plant.joint_state(), tau, 0.002)
>>> F = obs.platform_force(state)                                   # J^T r, N in base_link
>>> bool(abs(F[2] + 30.0) < 1.0 and abs(F[0]) < 1.0)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from delta_dynamics.algorithms import (cartesian_state, forward_kinematics, friction_torque, inverse_dynamics,
                                      jacobian, jacobian_derivative, joint_space_inertia, joint_space_sample,
                                      mass_matrix)

#: The observer gain K (1/s) unless told: a 10 ms time constant, 5 cycles at 500 Hz. A larger K
#: follows a collision faster and passes more model error and velocity noise.
GAIN_DEFAULT = 100.0
#: The gain's bounds (1/s): below 1/s the residual lags by seconds (useless for collisions);
#: above 2000/s (the fastest control rate, :data:`delta_core.rates.CONTROL_RATE_MAX`) the
#: filter passes every sample's noise unfiltered.
GAIN_MIN = 1.0
GAIN_MAX = 2000.0
#: Step (m) of the central difference that gives M_q_dot along the platform's motion.
DIFF_STEP = 1e-5


def check_gain(gain) -> float:
    """``gain`` (1/s) as a float if finite and within [:data:`GAIN_MIN`, :data:`GAIN_MAX`], else
    ValueError naming it.

    >>> check_gain(50)
    50.0
    """
    try:
        k = float(gain)
    except (TypeError, ValueError):
        k = float("nan")
    if not (math.isfinite(k) and GAIN_MIN <= k <= GAIN_MAX):
        raise ValueError(f"observer gain must be a finite number in [{GAIN_MIN:g}, {GAIN_MAX:g}] 1/s, got {gain!r}")
    return k


def _joint_array(v, what: str, n: int | None = None) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape[-1:] != (3,) or a.ndim > 2 or (n is not None and a.shape != (n, 3)):
        want = "(3,)" if n is None else f"({n}, 3)"
        raise ValueError(f"momentum observer: {what} must have shape {want}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"momentum observer: {what} holds a non-finite value")
    return a


def momentum_terms(m, q, qd):
    """The continuous-time terms (p, beta, tau_fric, X) of the reduced joint-space model at the joint state (q, q_dot),
    one sample (3,) or N samples (N, 3): the momentum p = M_q q_dot, the known conservative
    part beta = g_q + C_q q_dot - M_q_dot q_dot and the model's friction tau_fric(q_dot) of
    p_dot = tau - tau_fric + tau_ext - beta (module docstring), and the platform position X
    (m). Vectorised over samples.

    >>> from delta_dynamics.kinds import model_for
    >>> from delta_dynamics.algorithms import inverse_kinematics
    >>> m = model_for("colombo2020")
    >>> q = inverse_kinematics(m, [0.0, 0.0, 0.05])
    >>> p, beta, fric, X = momentum_terms(m, q, [0.0, 0.0, 0.0])
    >>> p.tolist(), bool(np.allclose(beta, inverse_dynamics(m, X, [0, 0, 0], [0, 0, 0])))
    ([0.0, 0.0, 0.0], True)
    """
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    X, Xd, Xdd = cartesian_state(m, q, qd, np.zeros_like(qd))          # q_ddot = 0
    speed = np.linalg.norm(Xd, axis=-1)
    safe = np.where(speed > 0.0, speed, 1.0)
    u = Xd / safe[..., None] * DIFF_STEP
    Mq = joint_space_inertia(m, np.stack((X, X - u, X + u)).reshape(-1, 3)).reshape((3,) + X.shape + (3,))
    p = np.einsum("...ij,...j->...i", Mq[0], qd)
    dM = (Mq[2] - Mq[1]) * (speed / (2.0 * DIFF_STEP))[..., None, None]
    beta = inverse_dynamics(m, X, Xd, Xdd, friction=False) - np.einsum("...ij,...j->...i", dM, qd)
    return p, beta, friction_torque(m, qd), X


def sample_terms(m, q, qd):
    """(M_q, h, tau_fric, X) at the joint state (q, q_dot), one sample (3,) or N samples (N, 3):
    the joint-space mass matrix M_q = J^-T M J^-1 (3, 3), h = g_q + C_q q_dot (the inverse
    dynamics at q_ddot = 0 without friction), the model's friction and the platform position
    X (m): what the discrete observer needs per sample. Vectorised over samples."""
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    X = forward_kinematics(m, q)
    J = jacobian(m, X)
    Ji = np.linalg.inv(J)
    Xd = (Ji @ qd[..., None])[..., 0]                                   # matmul: one sample or N
    Xdd = -(Ji @ (jacobian_derivative(m, X, Xd) @ Xd[..., None]))[..., 0]
    Mq = Ji.swapaxes(-1, -2) @ mass_matrix(m, X) @ Ji
    return Mq, inverse_dynamics(m, X, Xd, Xdd, friction=False), friction_torque(m, qd), X


def sample_terms_one(m, q, qd):
    """:func:`sample_terms` of one sample on Python floats (``q``, ``qd``: three finite floats
    each), the control loop's path: ``(Mq, h, fric, X, Xd, J, Jinv)`` with M_q = J^-T M J^-1 (three
    row 3-tuples), h = g_q + C_q q_dot (the inverse dynamics at q_ddot = 0, i.e. at X_ddot =
    -J^-1 J_dot X_dot, without friction), the friction at q_dot, the platform position X = FK(q)
    (m) and velocity X_dot = J^-1 q_dot (m/s) as 3-tuples, and J, J^-1 (row 3-tuples): the
    same maths as :func:`sample_terms`, one mass matrix, one pair of chain evaluations and one
    inverse dynamics per sample, without arrays (the kind's
    :func:`~delta_dynamics.algorithms.joint_space_sample`).

    >>> from delta_dynamics.kinds import model_for
    >>> from delta_dynamics.algorithms import inverse_kinematics
    >>> m = model_for("nt_robot")
    >>> q, qd = tuple(inverse_kinematics(m, [0.0, 0.0, -0.8]).tolist()), (0.5, -0.2, 0.1)
    >>> Mq, h, fric, X = sample_terms(m, q, qd)
    >>> one = sample_terms_one(m, q, qd)
    >>> bool(np.allclose(one[0], Mq, rtol=1e-14) and np.allclose(one[1], h, rtol=1e-14))
    True
    """
    X, Xd, J, Jinv, Mq, h, fric = joint_space_sample(m, q, qd)
    return Mq, h, fric, X, Xd, J, Jinv


def _three_floats(v, what: str) -> tuple:
    """``v`` (3 joint values) as a tuple of three finite floats; ValueError naming ``what`` otherwise."""
    if type(v) is tuple and len(v) == 3 and type(v[0]) is type(v[1]) is type(v[2]) is float:
        t = v
    elif type(v) is np.ndarray and v.shape == (3,) and v.dtype == np.float64:
        t = tuple(v.tolist())
    else:
        a = _joint_array(v, what)
        if a.shape != (3,):
            raise ValueError(f"momentum observer: {what} must have shape (3,), got {a.shape}")
        return tuple(a.tolist())
    a, b, c = t
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        raise ValueError(f"momentum observer: {what} holds a non-finite value")
    return t


@dataclass
class ObserverState:
    """The observer's workspace for one run (mutable; one per robot and thread): at the last
    sample the joint-space mass matrix ``Mq`` (three rows of three floats), joint velocity ``qd``,
    known term ``h`` and platform position ``X`` (m) (3-tuples of floats), the residual ``r``
    (N m or N per joint, array (3,)) and the number of samples seen; also the platform velocity
    ``Xd`` (m/s) and the Jacobian ``J`` and its inverse ``Jinv`` (row 3-tuples) at the last sample,
    which the loop's payload estimate and platform force reuse."""

    Mq: tuple
    qd: tuple
    h: tuple
    X: tuple
    r: np.ndarray = field(default_factory=lambda: np.zeros(3))
    samples: int = 0
    Xd: tuple = (0.0, 0.0, 0.0)
    J: tuple = None
    Jinv: tuple = None


@dataclass(frozen=True)
class MomentumObserver:
    """The momentum observer of ``model`` (either kind, :func:`delta_dynamics.kinds.model_for`;
    the loop's model, the identified one when present) with gain ``gain`` (1/s, default
    :data:`GAIN_DEFAULT`, within [:data:`GAIN_MIN`, :data:`GAIN_MAX`]). Immutable; the state
    of a run lives in the :class:`ObserverState` of :meth:`start`."""

    model: object
    gain: float = GAIN_DEFAULT

    def __post_init__(self):
        object.__setattr__(self, "gain", check_gain(self.gain))

    @property
    def time_constant(self) -> float:
        """1/K (s): the residual reaches 63 % of a step of external effort after this long."""
        return 1.0 / self.gain

    def start(self, q, qd, r0=None) -> ObserverState:
        """A fresh :class:`ObserverState` at the joint state (q, q_dot), residual ``r0`` (zero)."""
        q = _three_floats(q, "joint position")
        qd = _three_floats(qd, "joint velocity")
        Mq, h, _, X, Xd, J, Jinv = sample_terms_one(self.model, q, qd)
        r = np.zeros(3) if r0 is None else _joint_array(r0, "initial residual").copy()
        return ObserverState(Mq, qd, h, X, r, 0, Xd, J, Jinv)

    def update(self, state: ObserverState, q, qd, tau, dt: float) -> np.ndarray:
        """One sample: the joint state (q, q_dot) now, the efforts ``tau`` applied since the
        previous sample (N m or N, measured or commanded) and the interval ``dt`` (s). Updates
        ``state`` and returns the residual r (3,) (module docstring), a new array. On Python
        floats (:func:`sample_terms_one`): the numbers of :meth:`residuals` to rounding."""
        if not (dt > 0.0 and math.isfinite(dt)):
            raise ValueError(f"momentum observer: dt must be a finite number > 0 s, got {dt!r}")
        t0, t1, t2 = _three_floats(tau, "joint effort")
        qd = _three_floats(qd, "joint velocity")
        Mq, h, fric, X, Xd, J, Jinv = sample_terms_one(self.model, _three_floats(q, "joint position"), qd)
        # e = (Mq + Mq_prev) / (2 dt) (qd - qd_prev) - tau + (h + h_prev) / 2 + fric
        k = 0.5 / dt
        p0, p1, p2 = state.qd
        d0, d1, d2 = qd[0] - p0, qd[1] - p1, qd[2] - p2
        (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = Mq
        (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = state.Mq
        g0, g1, g2 = state.h
        e0 = k * ((a00 + b00) * d0 + (a01 + b01) * d1 + (a02 + b02) * d2) - t0 + 0.5 * (h[0] + g0) + fric[0]
        e1 = k * ((a10 + b10) * d0 + (a11 + b11) * d1 + (a12 + b12) * d2) - t1 + 0.5 * (h[1] + g1) + fric[1]
        e2 = k * ((a20 + b20) * d0 + (a21 + b21) * d1 + (a22 + b22) * d2) - t2 + 0.5 * (h[2] + g2) + fric[2]
        a = math.exp(-self.gain * dt)
        c = 1.0 - a
        r0, r1, r2 = state.r.tolist()
        state.r = np.array((a * r0 + c * e0, a * r1 + c * e1, a * r2 + c * e2))
        state.Mq, state.qd, state.h, state.X = Mq, qd, h, X
        state.Xd, state.J, state.Jinv = Xd, J, Jinv
        state.samples += 1
        return state.r

    def platform_force(self, state: ObserverState) -> np.ndarray:
        """The external platform force (N, ``base_link``) that explains the residual at the
        last sample: :func:`platform_force` at ``state.X``."""
        return platform_force(self.model, state.X, state.r)

    def residuals(self, q, qd, tau, dt: float, r0=None) -> np.ndarray:
        """The batch form: residuals (N, 3) over a record of N samples of (q, q_dot) (N, 3)
        taken every ``dt`` s, ``tau[k]`` (N, 3) the effort applied over (t_{k-1}, t_k]
        (``tau[0]`` unused); r[0] = ``r0`` (zero). The same numbers as :meth:`update` sample by
        sample, vectorised (a linear filter over the per-interval estimates e_k)."""
        from scipy.signal import lfilter   # optional heavy import: only the batch form needs it
        q = _joint_array(q, "joint positions")
        n = len(q) if q.ndim == 2 else 0
        if n < 1:
            raise ValueError("momentum observer: the batch form needs joint positions of shape (N, 3)")
        qd = _joint_array(qd, "joint velocities", n)
        tau = _joint_array(tau, "joint efforts", n)
        if not (dt > 0.0 and math.isfinite(dt)):
            raise ValueError(f"momentum observer: dt must be a finite number > 0 s, got {dt!r}")
        Mq, h, fric, _ = sample_terms(self.model, q, qd)
        r = np.zeros((n, 3))
        r[0] = 0.0 if r0 is None else _joint_array(r0, "initial residual")
        if n > 1:
            e = ((0.5 / dt) * np.einsum("kij,kj->ki", Mq[1:] + Mq[:-1], qd[1:] - qd[:-1])
                 - tau[1:] + 0.5 * (h[1:] + h[:-1]) + fric[1:])
            a = math.exp(-self.gain * dt)
            r[1:], _ = lfilter([1.0 - a], [1.0, -a], e, axis=0, zi=(a * r[0])[None, :])
        return r


def platform_force(m, X, r) -> np.ndarray:
    """The external force F (N, ``base_link``) at the platform centre that causes the joint
    residual r: tau_ext = J^-T F (virtual work with q_dot = J X_dot), so F = J(X)^T r, the
    least-squares solution of J^-T F = r (exact: three joints, three force components). One
    sample (3,) or N samples (N, 3).

    >>> from delta_dynamics.kinds import model_for
    >>> m = model_for("nt_robot"); X = np.array([0.0, 0.0, -0.8])
    >>> r = inverse_dynamics(m, X, [0, 0, 0], [0, 0, 0], F_P=[0, 0, 10.0], friction=False) \\
    ...     - inverse_dynamics(m, X, [0, 0, 0], [0, 0, 0], friction=False)
    >>> platform_force(m, X, -r).round(6).tolist()
    [0.0, 0.0, 10.0]
    """
    J = jacobian(m, np.asarray(X, dtype=float))
    return np.einsum("...ji,...j->...i", J, np.asarray(r, dtype=float))
