"""Kinematic calibration: the per-chain geometry that best explains measured poses.

Model (``docs/calibration.md``): the kind's chain model (``m.chains`` of
:func:`delta_dynamics.kinds.model_for`, parameters p: per chain the joint offset, angle,
radii and lengths; see ``delta_dynamics/<kind>/chains.py``) predicts, for joint positions
q_k, the tool point Q_k(p) = X(q_k; p) - t e_z. The residuals are

* ``positions``: r_k = Q_k(p) - Q_k,measured  (3 per pose, m);
* ``heights``:   r_k = e_z . Q_k(p) - z_k,measured  (1 per pose, m).

Their Jacobian is analytic (implicit differentiation of the sphere constraints,
:func:`delta_dynamics.common.chains.derivatives`). Identifiability: with the columns scaled to
a common size (1 mm, 1 mrad: :data:`SCALE`), the singular values s_j of the scaled Jacobian
A = J D at the nominal geometry; directions with s_j <= ``rtol`` s_1 are unidentifiable
(:func:`identifiability` names them as parameter combinations). The fit moves p only in the
identifiable subspace, p = p0 + D V_k z, by trust-region least squares
(``scipy.optimize.least_squares``, Levenberg-Marquardt, the analytic Jacobian J D V_k); when
a residual of that plain fit exceeds :data:`OUTLIER` robust standard deviations (median
absolute deviation), a second pass with the robust ``soft_l1`` loss, scale 3 robust standard
deviations, follows, so an outlier pose barely moves the fit.
Standard deviations: cov(p) = D V_k (A_k^T W A_k)^-1 V_k^T D s^2 with W the robust weights
and s^2 = sum w r^2 / (M - k) (robust fit: the smaller of that and the squared
median-absolute-deviation estimate of the residuals' standard deviation, times M / (M - k)).

>>> import numpy as np
>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.calibration.data import Measurements
>>> m = model_for("nt_robot")
>>> p0 = m.chains.parameters(m.robot)
>>> true = p0.copy(); true[m.chains.index("joint_offset", 0)] += 0.002
>>> q = np.random.default_rng(0).uniform(-0.2, 0.8, (30, 3))
>>> meas = Measurements("positions", q, predict(m.chains, true, q, "positions")[0], None)
>>> result = calibrate(m.chains, p0, meas)
>>> round(float(result.p[0] - p0[0]), 6), result.rms_after < 1e-9
(0.002, True)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import qr
from scipy.optimize import least_squares

from delta_dynamics.common.chains import derivatives, forward

#: Column scale of each unit for the identifiability analysis: 1 mm and 1 mrad.
SCALE = {"m": 1e-3, "rad": 1e-3}
#: The plain least-squares fit is kept unless a residual exceeds this many robust standard
#: deviations (then the soft-L1 pass runs): no loss of efficiency on clean Gaussian data.
OUTLIER = 5.0
#: A direction is unidentifiable when its singular value is below this fraction of the largest.
RTOL = 1e-6


class CalibrationError(ValueError):
    """Measurements the model cannot use (a pose whose chains cannot meet, too few poses)."""


def predict(chains, p, q, kind: str):
    """``(values, J)``: the predicted tool points (N, 3) or heights (N, 1) for joint positions q
    (N, 3) and their Jacobian with respect to p (N, 3 or 1, P). Raises CalibrationError at the
    first pose where the chains cannot meet."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    X, code = forward(chains, p, q)
    if code.any():
        k = int(np.flatnonzero(code)[0])
        raise CalibrationError(f"pose {k + 1}: joint positions {np.round(q[k], 6).tolist()}: the "
                               f"{chains.chain_word}s cannot meet at one platform position")
    dX, _ = derivatives(chains, p, q, X)
    Q = X.copy()
    Q[:, 2] -= chains.tool_offset(p)
    dX[:, 2, :] -= chains.tool_offset_derivative()
    if kind == "heights":
        return Q[:, 2:3], dX[:, 2:3, :]
    return Q, dX


def scales(chains) -> np.ndarray:
    """The column scale D of each parameter (:data:`SCALE`)."""
    return np.array([SCALE[chains.unit(n)] for n in chains.names])


@dataclass(frozen=True)
class Identifiability:
    """The singular values of the scaled Jacobian (of the free parameters), its rank, the
    identifiable directions ``basis`` (free parameters x rank, in scaled units) and the
    unidentifiable combinations as text (``"base_radius_1 - platform_radius_1"``)."""

    free: tuple
    singular_values: np.ndarray
    rank: int
    basis: np.ndarray
    unidentifiable: tuple

    @property
    def identifiable_parameters(self) -> tuple:
        """The free parameters identifiable on their own (their unit vector lies in the
        identifiable subspace: its part outside is below 1e-6)."""
        out = []
        for j, n in enumerate(self.free):
            inside = self.basis[j] @ self.basis[j] if self.rank else 0.0
            if 1.0 - inside < 1e-6:
                out.append(n)
        return tuple(out)


def _combination(names, v) -> str:
    """A null direction as text: its terms with |coefficient| >= 0.1 of the largest."""
    k = int(np.argmax(np.abs(v)))
    v = v / v[k]
    terms = []
    for j in np.argsort(-np.abs(v)):
        c = v[j]
        if abs(c) < 0.1:
            break
        coef = "" if abs(abs(c) - 1.0) < 1e-3 else f"{abs(c):.3g} "
        terms.append(("- " if c < 0 else "+ ") + coef + names[j])
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else text


def identifiability(J, free_index, names, D, rtol: float = RTOL) -> Identifiability:
    """:class:`Identifiability` of the free parameters from the stacked Jacobian J (M, P)."""
    A = J[:, free_index] * D[free_index]
    _, s, Vt = np.linalg.svd(A, full_matrices=True)
    s_full = np.zeros(len(free_index))
    s_full[:len(s)] = s
    rank = int(np.sum(s_full > rtol * s_full[0])) if s_full[0] > 0 else 0
    free = tuple(names[i] for i in free_index)
    N = Vt[rank:].T                                               # null directions (free, d)
    if N.shape[1]:
        # a sparse basis of the same space: 1 at one pivot parameter each, 0 at the others
        _, _, piv = qr(N.T, pivoting=True)
        N = N @ np.linalg.inv(N[piv[:N.shape[1]]])
        N[np.abs(N) < 1e-9] = 0.0
    null = [_combination(free, N[:, j]) for j in range(N.shape[1])]
    return Identifiability(free, s_full, rank, Vt[:rank].T.copy(), tuple(null))


@dataclass(frozen=True)
class Result:
    """A calibration: the parameters before (``p0``) and after (``p``), their standard
    deviations (``sigma``; 0 for parameters not fitted or in unidentifiable directions only),
    the identifiability, per-pose residual norms before and after (m), their RMS, the poses
    taken as outliers (robust weight below 0.5), the estimated noise (m) and the RMS after
    without the outliers."""

    names: tuple
    p0: np.ndarray
    p: np.ndarray
    sigma: np.ndarray
    ident: Identifiability
    residual_before: np.ndarray
    residual_after: np.ndarray
    rms_before: float
    rms_after: float
    outliers: tuple
    noise: float
    rms_inliers: float
    kind: str
    extra: dict = field(default_factory=dict)

    def changes(self) -> list:
        """Rows (name, nominal, calibrated, change, sigma, unit) of the parameters that moved or
        were fitted."""
        rows = []
        for j, n in enumerate(self.names):
            if n in self.ident.free:
                rows.append((n, float(self.p0[j]), float(self.p[j]), float(self.p[j] - self.p0[j]),
                             float(self.sigma[j])))
        return rows


def _residuals(chains, p, meas):
    pred, J = predict(chains, p, meas.q, meas.kind)
    return (pred - meas.values).ravel(), J.reshape(-1, J.shape[-1])


def _pose_norms(r, width):
    return np.linalg.norm(r.reshape(-1, width), axis=1)


def calibrate(chains, p0, meas, free=None, rtol: float = RTOL, robust: bool = True) -> Result:
    """Fit the parameters named in ``free`` (default: all of ``chains.names``) to the
    measurements ``meas`` (:class:`~delta_dynamics.calibration.data.Measurements`), starting
    from ``p0`` (module docstring)."""
    names = chains.names
    p0 = np.asarray(p0, dtype=float).copy()
    free = names if free is None else tuple(free)
    unknown = [n for n in free if n not in names]
    if unknown:
        raise CalibrationError(f"unknown parameter(s) {', '.join(unknown)}; this kind has {', '.join(names)}")
    idx = np.array([names.index(n) for n in free], int)
    D = scales(chains)
    r0, J0 = _residuals(chains, p0, meas)
    ident = identifiability(J0, idx, names, D, rtol)
    k = ident.rank
    if len(r0) <= k:
        raise CalibrationError(f"{len(meas)} poses give {len(r0)} residuals for {k} identifiable parameter "
                               f"combinations: measure more poses")
    B = D[idx][:, None] * ident.basis                             # dp_free / dz

    def params(z):
        p = p0.copy()
        p[idx] += B @ z
        return p

    def fun(z):
        return _residuals(chains, params(z), meas)[0]

    def jac(z):
        return _residuals(chains, params(z), meas)[1][:, idx] @ B

    z = np.zeros(k)
    sol = least_squares(fun, z, jac=jac, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200)
    z = sol.x
    w = np.ones(len(r0))
    r1 = fun(z)
    sig = 1.4826 * float(np.median(np.abs(r1 - np.median(r1))))
    robust = robust and bool(np.max(np.abs(r1)) > OUTLIER * sig)
    if robust:       # a residual beyond OUTLIER robust standard deviations: down-weight it
        f_scale = 3.0 * max(sig, 1e-12)
        sol = least_squares(fun, z, jac=jac, method="trf", loss="soft_l1", f_scale=f_scale,
                            xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200, x_scale="jac")
        z = sol.x
        u = (fun(z) / f_scale) ** 2
        w = 1.0 / np.sqrt(1.0 + u)                                # soft_l1: rho'(u)
    p = params(z)
    r, J = _residuals(chains, p, meas)
    A = J[:, idx] @ B
    Aw = A * np.sqrt(w)[:, None]
    dof = max(len(r) - k, 1)
    s2 = float(np.sum(w * r * r)) / dof
    if robust:   # an outlier's weighted square still dominates that sum: the residuals' MAD instead
        s2 = min(s2, (1.4826 * float(np.median(np.abs(r - np.median(r))))) ** 2 * len(r) / dof)
    cov_z = np.linalg.pinv(Aw.T @ Aw) * s2
    cov = B @ cov_z @ B.T
    sigma = np.zeros(len(names))
    sigma[idx] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    width = meas.width
    pose_w = w.reshape(-1, width).min(axis=1)
    outliers = tuple(int(i) for i in np.flatnonzero(pose_w < 0.5))
    return Result(names=names, p0=p0, p=p, sigma=sigma, ident=ident,
                  residual_before=_pose_norms(r0, width), residual_after=_pose_norms(r, width),
                  rms_before=float(np.sqrt(np.mean(r0 ** 2))), rms_after=float(np.sqrt(np.mean(r ** 2))),
                  outliers=outliers, noise=float(np.sqrt(s2)), kind=meas.kind,
                  rms_inliers=float(np.sqrt(np.mean(np.delete(r.reshape(-1, width), outliers, axis=0) ** 2))),
                  extra={"covariance": cov, "free_index": idx})


def held_out_error(chains, p, meas) -> np.ndarray:
    """Per-pose residual norms (m) of measurements ``meas`` predicted with parameters ``p``."""
    r, _ = _residuals(chains, p, meas)
    return _pose_norms(r, meas.width)
