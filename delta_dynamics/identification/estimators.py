"""Least-squares estimators for the stacked system A pi = b (see :mod:`.regressors`).

All batch estimators work on the column-normalised regressor A_n = A D^-1
(D = diag of the column norms, pi_n = D pi), which makes the problem independent of the
parameters' units, and reduce the m x p problem once to its p x p triangular factor:
QR of [A_n | b] gives R, z = Q^T b and the part of b no parameter explains,
rss_0 = |b|^2 - |z|^2. Then, with sigma^2 = rss / (m - p):

(``rows``: A and b may be a triangular factor of a larger system, e.g. the QR update of a
long recording in :mod:`.stream`; ``rows`` is then that system's number of equations m.)

* :func:`ols`   ordinary LS, R pi_n = z; Cov(pi) = sigma^2 (A^T A)^-1.
* :func:`wls`   weighted LS (Gautier's per-joint weighting): the rows of joint j are divided
  by sigma_j, the RMS of joint j's OLS residual (or given noise levels), then OLS.
* :func:`bounded` bounded (physically consistent) LS: min |A pi - b| subject to
  lb <= pi <= ub (masses, inertias and friction >= 0 by default), solved with
  ``scipy.optimize.lsq_linear`` (BVLS) on the reduced problem.
* :func:`tsvd`  truncated SVD: pi_n = sum_{s_k > tol s_1} v_k (u_k^T z) / s_k
  (Kim et al.'s "SVD-based method", ref. [19]).
* :func:`dls`   damped LS (Kim et al. ref. [18]): min |A pi - b|^2 + lambda^2 |pi_n - pi_n,0|^2
  with lambda = damping * s_1, damped towards a prior pi_0 (zero by default).
* :class:`RecursiveLeastSquares` per-sample RLS with forgetting factor lambda_f (for the online
  node): K = P Y^T (lambda_f I + Y P Y^T)^-1, pi += K (tau - Y pi), P = (P - K Y P) / lambda_f.
  :func:`rls` runs it over a batch.

The covariance formulas assume white residuals with one variance per system (per joint for
WLS); filtered and differentiated data are correlated in time, so the standard deviations
are optimistic (read them as relative quality indicators).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import IdentificationError
from ._linalg import qr_r, single_threaded_blas

METHODS = ("ols", "wls", "bounded", "tsvd", "dls", "rls", "pso")
LS_METHODS = ("ols", "wls", "bounded", "tsvd", "dls")


@dataclass
class Estimate:
    """One parameter estimate: values, covariance (or None) and what the method reports."""

    method: str
    names: tuple
    values: np.ndarray
    cov: np.ndarray | None = None
    seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def std(self) -> np.ndarray:
        """Standard deviations sqrt(diag(Cov)) (NaN without a covariance)."""
        if self.cov is None:
            return np.full(len(self.values), np.nan)
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def as_dict(self) -> dict:
        """{parameter name: value}."""
        return {n: float(v) for n, v in zip(self.names, self.values)}


# ----------------------------------------------------------------------------- helpers

class _Reduced:
    """The column-normalised system reduced to its triangular factor (see module docstring)."""

    def __init__(self, A, b, rows: int | None = None):
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float).reshape(-1)
        m, p = A.shape
        if len(b) != m:
            raise ValueError(f"regressor has {m} rows but the torque vector {len(b)}")
        if rows is not None:        # A, b: a triangular factor of a system of ``rows`` equations
            m = int(rows)
        if m <= p:
            raise IdentificationError(f"too few equations: {m} torque values for {p} parameters "
                                      "(need many more samples than parameters)")
        norms = np.sqrt(np.einsum("ij,ij->j", A, A))
        self.scale = np.where(norms > 0, norms, 1.0)
        Rb = qr_r(np.column_stack((A / self.scale, b)))
        self.R = Rb[:p, :p]
        self.z = Rb[:p, p]
        self.rss0 = float(Rb[p, p] ** 2) if len(Rb) > p else 0.0
        self.m, self.p = m, p
        if len(Rb) <= p:            # a factor with as many rows as columns explains b entirely
            self.rss0 = 0.0
        d = np.abs(np.diag(self.R))
        if d.min() <= 1e-12 * d.max():
            raise IdentificationError("the regressor is rank deficient: some parameters are not "
                                      "identifiable from these data (see base_parameters)")

    def rss(self, xn) -> float:
        """Residual sum of squares at the normalised parameters ``xn``."""
        r = self.R @ xn - self.z
        return float(r @ r) + self.rss0

    def sigma2(self, xn) -> float:
        """The residual variance at ``xn`` (rss over the degrees of freedom)."""
        return self.rss(xn) / max(self.m - self.p, 1)

    def cov(self, sigma2, inner=None) -> np.ndarray:
        """sigma^2 (A^T A)^-1 in original units (``inner``: a normalised covariance to use)."""
        if inner is None:
            Ri = np.linalg.inv(self.R)
            inner = Ri @ Ri.T
        return sigma2 * inner / np.outer(self.scale, self.scale)


def _timed(fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        with single_threaded_blas():
            est = fn(*args, **kwargs)
        est.seconds = time.perf_counter() - t0
        return est
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _names(names, p):
    return tuple(names) if names is not None else tuple(f"p{i}" for i in range(p))


# ----------------------------------------------------------------------------- batch estimators

@_timed
def ols(A, b, names=None, rows: int | None = None) -> Estimate:
    """Ordinary least squares: pi = argmin |A pi - b|^2, Cov = sigma^2 (A^T A)^-1."""
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    import scipy.linalg
    red = _Reduced(A, b, rows)
    xn = scipy.linalg.solve_triangular(red.R, red.z)
    s2 = red.sigma2(xn)
    return Estimate("ols", _names(names, red.p), xn / red.scale, red.cov(s2),
                    info={"sigma": float(np.sqrt(s2)), "rss": red.rss(xn)})


def _joint_rms(A, b, x, n_joints):
    r = (b - A @ x).reshape(-1, n_joints)
    return np.sqrt(np.mean(r * r, axis=0))


@_timed
def wls(A, b, names=None, sigma=None, n_joints: int = 3) -> Estimate:
    """Weighted least squares with one noise level per joint (Gautier 1991).

    Rows of joint j (row index mod ``n_joints``) are divided by sigma_j, given or estimated
    as the RMS of joint j's OLS residual, and the weighted system is solved by OLS; the
    covariance is sigma_w^2 (A^T W A)^-1 with sigma_w^2 the weighted residual variance (~1).
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float).reshape(-1)
    if sigma is None:
        sigma = _joint_rms(A, b, ols(A, b).values, n_joints)
    sigma = np.asarray(sigma, dtype=float).reshape(-1)
    if len(sigma) != n_joints or not np.all(sigma > 0):
        raise IdentificationError(f"per-joint noise levels must be {n_joints} positive numbers, got {sigma.tolist()}")
    w = np.tile(1.0 / sigma, len(b) // n_joints)
    est = ols(A * w[:, None], b * w, names)
    est.method = "wls"
    est.info["joint_sigma"] = [float(s) for s in sigma]
    return est


def default_bounds(pset, model=None):
    """(lb, ub) for :func:`bounded`: masses, inertias and friction >= 0, the rest free."""
    nn = pset.nonnegative
    return np.where(nn, 0.0, -np.inf), np.full(len(nn), np.inf)


@_timed
def bounded(A, b, names=None, lb=None, ub=None, rows: int | None = None) -> Estimate:
    """Bounded LS: argmin |A pi - b|^2 subject to lb <= pi <= ub (BVLS on the reduced system).

    With the default bounds from :func:`default_bounds` no mass, inertia or friction
    coefficient comes out negative. ``info['active']`` names the parameters on a bound.
    The covariance is the OLS formula at the bounded solution (exact when no bound is active).
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.optimize import lsq_linear
    red = _Reduced(A, b, rows)
    p = red.p
    lb = np.full(p, -np.inf) if lb is None else np.asarray(lb, dtype=float)
    ub = np.full(p, np.inf) if ub is None else np.asarray(ub, dtype=float)
    if np.any(lb > ub):
        raise IdentificationError("a lower bound is above its upper bound")
    res = lsq_linear(red.R, red.z, bounds=(lb * red.scale, ub * red.scale), method="bvls",
                     tol=1e-12, lsmr_tol=None, max_iter=None)
    xn = res.x
    x = xn / red.scale
    x = np.clip(x, lb, ub)                    # exact bounds despite rounding in the rescale
    nm = _names(names, p)
    active = [nm[i] for i in range(p) if (np.isfinite(lb[i]) and x[i] <= lb[i])
              or (np.isfinite(ub[i]) and x[i] >= ub[i])]
    s2 = red.sigma2(xn)
    return Estimate("bounded", nm, x, red.cov(s2),
                    info={"sigma": float(np.sqrt(s2)), "active": active, "status": int(res.status)})


@_timed
def tsvd(A, b, names=None, tol: float = 1e-3, rank: int | None = None, rows: int | None = None) -> Estimate:
    """Truncated-SVD LS: keep the singular values s_k > ``tol`` s_1 (or the ``rank`` largest)
    of the column-normalised regressor; pi_n = V_r S_r^-1 U_r^T z, Cov_n = sigma^2 V_r S_r^-2 V_r^T."""
    red = _Reduced(A, b, rows)
    U, s, Vt = np.linalg.svd(red.R)
    r = int(np.sum(s > tol * s[0])) if rank is None else int(rank)
    if not 1 <= r <= red.p:
        raise IdentificationError(f"TSVD rank must be between 1 and {red.p}, got {r}")
    Vr = Vt[:r].T
    xn = Vr @ ((U[:, :r].T @ red.z) / s[:r])
    s2 = red.sigma2(xn)
    inner = (Vr / s[:r] ** 2) @ Vr.T
    return Estimate("tsvd", _names(names, red.p), xn / red.scale, red.cov(s2, inner),
                    info={"rank": r, "dropped": red.p - r, "singular_values": s.tolist(),
                          "sigma": float(np.sqrt(s2))})


@_timed
def dls(A, b, names=None, damping: float = 1e-3, prior=None, rows: int | None = None) -> Estimate:
    """Damped LS: argmin |A pi - b|^2 + lambda^2 |D (pi - pi_0)|^2, lambda = damping * s_1
    (s_1: the largest singular value of the normalised regressor; D: column norms)."""
    red = _Reduced(A, b, rows)
    p = red.p
    s1 = np.linalg.norm(red.R, 2)
    lam = float(damping) * s1
    x0n = np.zeros(p) if prior is None else np.asarray(prior, dtype=float) * red.scale
    H = red.R.T @ red.R + lam * lam * np.eye(p)
    xn = np.linalg.solve(H, red.R.T @ red.z + lam * lam * x0n)
    s2 = red.sigma2(xn)
    Hi = np.linalg.inv(H)
    inner = Hi @ (red.R.T @ red.R) @ Hi
    return Estimate("dls", _names(names, p), xn / red.scale, red.cov(s2, inner),
                    info={"lambda": lam, "damping": float(damping), "sigma": float(np.sqrt(s2))})


# ----------------------------------------------------------------------------- recursive LS

class RecursiveLeastSquares:
    """Recursive least squares with exponential forgetting, one sample (3 equations) per update.

    ``forgetting`` lambda_f in (0, 1]: data k samples old weigh lambda_f^k (1: no forgetting,
    the estimate converges to the batch LS answer). ``P0``: the initial covariance, a scalar
    (times the identity), a vector (diagonal) or a matrix; large means a weak prior
    ``theta0``. ``max_trace`` bounds trace(P) against covariance wind-up when the data stop
    exciting the parameters under forgetting.

    >>> rls = RecursiveLeastSquares(2, P0=1e6)
    >>> for x in (0.0, 1.0, 2.0, 3.0):
    ...     _ = rls.update([[1.0, x]], [2.0 + 0.5 * x])
    >>> rls.theta.round(4).tolist()        # the weak prior (P0 = 1e6) pulls by ~1e-6
    [2.0, 0.5]
    """

    def __init__(self, n_params: int, forgetting: float = 1.0, P0=1e6, theta0=None,
                 max_trace: float | None = None):
        if not 0.0 < forgetting <= 1.0:
            raise IdentificationError(f"forgetting factor must be in (0, 1], got {forgetting}")
        self.n = int(n_params)
        self.forgetting = float(forgetting)
        P0 = np.asarray(P0, dtype=float)
        if P0.ndim == 0:
            P0 = float(P0) * np.eye(self.n)
        elif P0.ndim == 1:
            P0 = np.diag(P0)
        self.P = np.array(P0, dtype=float)
        self.theta = np.zeros(self.n) if theta0 is None else np.array(theta0, dtype=float)
        self.max_trace = max_trace
        self.count = 0
        self._inv_lam = 1.0 / self.forgetting

    def update(self, Y, tau) -> np.ndarray:
        """One sample: Y (k, p) regressor rows (k = 3 joints) and tau (k,); returns theta."""
        Y = np.asarray(Y, dtype=float)
        if Y.ndim == 1:
            Y = Y[None, :]
        P = self.P
        PYt = P @ Y.T
        S = Y @ PYt
        Si = _inverse_spd(S, self.forgetting)             # (lambda_f I + Y P Y^T)^-1
        K = PYt @ Si
        self.theta += K @ (np.asarray(tau, dtype=float) - Y @ self.theta)
        P -= K @ PYt.T
        if self.forgetting != 1.0:
            P *= self._inv_lam
        self.count += 1
        if self.count % 64 == 0:
            P += P.T
            P *= 0.5
            if self.max_trace is not None:
                tr = np.trace(P)
                if tr > self.max_trace:
                    P *= self.max_trace / tr
        return self.theta


def _inverse_spd(S, lam):
    """(S + lam I)^-1 for a small symmetric S; 1x1 and 3x3 in closed form (numpy's
    general solver costs ~10 us of call overhead, a third of an RLS update)."""
    k = S.shape[0]
    if k == 1:
        return np.array([[1.0 / (S[0, 0] + lam)]])
    if k == 3:
        (a, b, c), (_, d, e), (_, _, f) = S.tolist()
        a += lam
        d += lam
        f += lam
        A, B, C = d * f - e * e, c * e - b * f, b * e - c * d
        det = a * A + b * B + c * C
        D, E, F = a * f - c * c, b * c - a * e, a * d - b * b
        return np.array(((A, B, C), (B, D, E), (C, E, F))) / det
    return np.linalg.inv(S + lam * np.eye(k))


def rls(A, b, names=None, forgetting: float = 1.0, p0: float = 1e4, theta0=None,
        n_joints: int = 3, history: bool = False) -> Estimate:
    """Run :class:`RecursiveLeastSquares` over the stacked system, ``n_joints`` rows at a time.

    P0 = p0 diag(m / |a_j|^2): a prior worth 1/p0 of one average row, so with
    ``forgetting`` = 1 the result approaches the batch OLS answer. ``history`` keeps the
    estimate after every sample in ``info['history']`` (shape (N, p)).
    """
    t0 = time.perf_counter()
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float).reshape(-1)
    m, p = A.shape
    norms2 = np.einsum("ij,ij->j", A, A)
    if np.any(norms2 <= 0):
        raise IdentificationError("the regressor has a zero column: a parameter is not excited")
    est = RecursiveLeastSquares(p, forgetting=forgetting, P0=p0 * m / norms2, theta0=theta0)
    Ys = A.reshape(-1, n_joints, p)
    ts = b.reshape(-1, n_joints)
    hist = np.empty((len(Ys), p)) if history else None
    for k in range(len(Ys)):
        est.update(Ys[k], ts[k])
        if history:
            hist[k] = est.theta
    x = est.theta.copy()
    r = A @ x - b
    s2 = float(r @ r) / max(m - p, 1)
    cov = s2 * est.P if forgetting == 1.0 else None
    info = {"forgetting": forgetting, "sigma": float(np.sqrt(s2)), "samples": len(Ys)}
    if history:
        info["history"] = hist
    return Estimate("rls", _names(names, p), x, cov, time.perf_counter() - t0, info)
