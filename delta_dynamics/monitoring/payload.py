"""Payload estimation from the momentum observer's residual (:mod:`delta_dynamics.monitoring.observer`).

A payload of mass m_pl at the platform centre adds m_pl to the model's platform mass m_x:
M -> M + m_pl I and G -> G + m_pl g e_z in the platform equation (Asadi & Heydari eq. 39;
Colombo & Lentini eq. 13). Seen by an observer built on the model without it, it is an
external platform force F = -m_pl (X_ddot + g e_z), a joint effort tau_ext = J^-T F. Over a
sample interval the observer's mean external effort e_k is therefore m_pl psi_k with the
regressor

    psi_k = -J(X_k)^-T ((X_dot_k - X_dot_k-1) / dt + g e_z)

(no acceleration measured: the velocity difference over the interval). The residual is e
through the observer's filter (r_k = a r_k-1 + (1 - a) e_k, a = exp(-K dt)); passing psi
through the same filter gives psi_bar with r_k = m_pl psi_bar_k exactly (for a payload and
nothing else), whatever the motion. The mass is the recursive least-squares fit of r on
psi_bar with forgetting factor lambda = exp(-dt / memory):

    S_k = lambda S_k-1 + psi_bar_k . psi_bar_k,   B_k = lambda B_k-1 + psi_bar_k . r_k,
    m_pl = B_k / S_k - offset,

its standard deviation sqrt(s^2 / S_k (1 + a) / (1 - a)) with s^2 the weighted residual
variance per equation (the factor (1 + a) / (1 - a) counts the filter's correlation of
neighbouring samples). ``offset`` is the mass the estimator reads on the empty robot (the
model's error, a tare: :meth:`PayloadEstimator.tare`).

:func:`payload_event` names a change between the two ends of a pick cycle: ``picked`` or
``lost`` when the estimate moves by more than a threshold and three standard deviations.

>>> payload_event(PayloadEstimate(0.01, 0.005), PayloadEstimate(0.52, 0.01))
'picked'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import jacobian
from delta_dynamics.monitoring.observer import GAIN_DEFAULT, check_gain

#: The estimator's memory (s) unless told: lambda = exp(-dt / memory), about the last second.
MEMORY_DEFAULT = 1.0
#: A payload event needs the estimate to move by more than this (kg) between the two ends of a cycle...
EVENT_THRESHOLD = 0.05
#: ... and by more than this many standard deviations of the difference.
EVENT_SIGMAS = 3.0


@dataclass(frozen=True)
class PayloadEstimate:
    """An estimated payload: ``mass`` (kg), its standard deviation ``std`` (kg), and the
    effective number of samples behind it (``samples``)."""

    mass: float
    std: float
    samples: float = 0.0


@dataclass
class PayloadState:
    """The estimator's per-run workspace: the filtered regressor ``psi`` and the previous
    platform velocity ``Xd`` (m/s) (3-tuples of floats), the weighted sums ``S`` (psi.psi), ``B``
    (psi.r), ``A`` (r.r) and ``n`` (samples)."""

    psi: tuple
    Xd: tuple
    S: float = 0.0
    B: float = 0.0
    A: float = 0.0
    n: float = 0.0


@dataclass(frozen=True)
class PayloadEstimator:
    """The payload estimator of ``model`` (the observer's model, either kind) for an observer
    of gain ``gain`` (1/s, the same as the observer's), with ``memory`` (s, > 0; ``math.inf``:
    no forgetting) and the empty robot's reading ``offset`` (kg)."""

    model: object
    gain: float = GAIN_DEFAULT
    memory: float = MEMORY_DEFAULT
    offset: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "gain", check_gain(self.gain))
        if not (self.memory > 0):
            raise ValueError(f"payload estimator: memory must be > 0 s (inf: no forgetting), got {self.memory!r}")
        if not math.isfinite(self.offset):
            raise ValueError(f"payload estimator: offset must be a finite number of kg, got {self.offset!r}")

    def start(self, Xd) -> PayloadState:
        """A fresh state at platform velocity ``Xd`` (m/s); start it with the observer."""
        return PayloadState((0.0, 0.0, 0.0), _floats3(Xd))

    def regressor(self, X, Xd, Xd_prev, dt: float, Jinv=None) -> np.ndarray:
        """psi (module docstring) for one interval or N intervals: -J^-T (dX_dot/dt + g e_z)
        (``Jinv``: J(X)^-1 when the caller has it)."""
        phi = (np.asarray(Xd, dtype=float) - np.asarray(Xd_prev, dtype=float)) / dt
        phi[..., 2] += self.model.g
        if Jinv is None:
            Jinv = np.linalg.inv(jacobian(self.model, np.asarray(X, dtype=float)))
        return -np.einsum("...ji,...j->...i", np.asarray(Jinv, dtype=float), phi)

    def update(self, state: PayloadState, X, Xd, r, dt: float, Jinv=None) -> None:
        """One sample: the platform state (X, X_dot) now (m, m/s), the observer's residual
        ``r`` now (after its update with the same sample) and the interval ``dt`` (s);
        ``Jinv``: J(X)^-1 if the caller has it (the control loop's one-sample path, e.g. the
        observer state's ``Jinv``). On Python floats: psi_i = -sum_j (J^-1)_ji phi_j with phi =
        (X_dot - X_dot_prev) / dt + g e_z, the numbers of :meth:`regressor`."""
        a = math.exp(-self.gain * dt)
        lam = math.exp(-dt / self.memory)
        v0, v1, v2 = Xd = _floats3(Xd)
        w0, w1, w2 = state.Xd
        f0, f1, f2 = (v0 - w0) / dt, (v1 - w1) / dt, (v2 - w2) / dt + self.model.g
        if Jinv is None:
            Jinv = np.linalg.inv(jacobian(self.model, np.asarray(X, dtype=float))).tolist()
        (j00, j01, j02), (j10, j11, j12), (j20, j21, j22) = Jinv
        c = 1.0 - a
        s0, s1, s2 = state.psi
        s0 = a * s0 + c * -(j00 * f0 + j10 * f1 + j20 * f2)
        s1 = a * s1 + c * -(j01 * f0 + j11 * f1 + j21 * f2)
        s2 = a * s2 + c * -(j02 * f0 + j12 * f1 + j22 * f2)
        r0, r1, r2 = _floats3(r)
        state.psi = (s0, s1, s2)
        state.S = lam * state.S + (s0 * s0 + s1 * s1 + s2 * s2)
        state.B = lam * state.B + (s0 * r0 + s1 * r1 + s2 * r2)
        state.A = lam * state.A + (r0 * r0 + r1 * r1 + r2 * r2)
        state.n = lam * state.n + 1.0
        state.Xd = Xd

    def estimate(self, state: PayloadState, dt: float) -> PayloadEstimate:
        """The payload (kg) and its standard deviation from ``state`` (``dt``: the sample
        interval, s, for the correlation factor); NaN before any informative sample."""
        return _estimate(state.S, state.B, state.A, state.n, math.exp(-self.gain * dt), self.offset)

    def estimate_record(self, X, Xd, r, dt: float) -> PayloadEstimate:
        """The batch form over a record (platform X, X_dot and residual r, (N, 3), every ``dt``
        s, the observer started at sample 0), without forgetting: the least-squares payload of
        the whole record (e.g. one pick cycle)."""
        from scipy.signal import lfilter   # optional heavy import: only the batch form needs it
        X, Xd, r = (np.asarray(v, dtype=float) for v in (X, Xd, r))
        if X.ndim != 2 or len(X) < 2 or X.shape != Xd.shape or X.shape != r.shape or X.shape[1] != 3:
            raise ValueError("payload estimator: X, X_dot and r must all have the same shape (N >= 2, 3)")
        a = math.exp(-self.gain * dt)
        psi = lfilter([1.0 - a], [1.0, -a], self.regressor(X[1:], Xd[1:], Xd[:-1], dt), axis=0)
        r = r[1:]
        return _estimate(float(np.sum(psi * psi)), float(np.sum(psi * r)), float(np.sum(r * r)), float(len(r)),
                         a, self.offset)

    def tare(self, estimate: PayloadEstimate) -> "PayloadEstimator":
        """This estimator with ``offset`` such that ``estimate`` (of the empty robot) reads 0 kg."""
        return PayloadEstimator(self.model, self.gain, self.memory, self.offset + estimate.mass)


def _floats3(v) -> tuple:
    """Three floats from a 3-tuple of floats (as is) or anything numpy reads as shape (3,)."""
    if type(v) is tuple and len(v) == 3:
        return v
    return tuple(np.asarray(v, dtype=float).reshape(3).tolist())


def _estimate(S, B, A, n, a, offset) -> PayloadEstimate:
    if not S > 0:
        return PayloadEstimate(float("nan"), float("nan"), n)
    m = B / S
    dof = 3.0 * n - 1.0
    s2 = max(A - B * B / S, 0.0) / dof if dof > 0 else float("nan")
    std = math.sqrt(s2 / S * (1.0 + a) / (1.0 - a))
    return PayloadEstimate(m - offset, std, n)


def payload_event(before: PayloadEstimate, after: PayloadEstimate, threshold: float = EVENT_THRESHOLD,
                  sigmas: float = EVENT_SIGMAS) -> str | None:
    """``"picked"`` when the payload grew between two estimates (the two ends of a pick cycle)
    by more than ``threshold`` kg and ``sigmas`` standard deviations of the difference,
    ``"lost"`` when it shrank so, else None (also when either estimate is not a number)."""
    d = after.mass - before.mass
    sd = math.hypot(before.std, after.std)
    if not (math.isfinite(d) and math.isfinite(sd)):
        return None
    if abs(d) > threshold and abs(d) > sigmas * sd:
        return "picked" if d > 0 else "lost"
    return None
