"""From preprocessed samples to an identified parameter vector, with metrics.

:func:`identify` runs one method (``ols``, ``wls``, ``bounded``, ``tsvd``, ``dls``, ``rls``,
``pso``) on a :class:`~.preprocess.Prepared` data set:

1. Y = regressor of the chosen parameter set (:mod:`.regressors`), A pi = b stacked;
2. the base parameters of A (QR with column pivoting). If A is rank deficient the call
   fails naming the parameters that are not identifiable, unless ``hold_unidentifiable``:
   then those are held at the robot file's values and only the rest is estimated;
3. the estimator on the independent columns;
4. fitness (eq. 41), RMS / max error on the fitting data and on validation data.

:func:`build_problem` does step 1 once so several methods can share it (``--method all``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from delta_core.robot_file import check_bound
from delta_dynamics.algorithms import UnreachableError, parameter_names
from delta_dynamics.algorithms import parameter_set as kind_parameter_set

from . import IdentificationError
from . import estimators as est_mod
from ._linalg import blas1
from .preprocess import Prepared, check_joint_limits, preprocess
from .metrics import condition_number, relative_std, torque_metrics
from .pso import pso as run_pso
from .regressors import BaseParameters, ParameterSet, base_parameters, stack


#: Largest condition number of the column-normalised regressor (of the parameters estimated)
#: that :func:`identify` accepts. Good excitation gives 5-100 (``delta-identify excite``: ~8);
#: a plain circle at constant speed ~3000; beyond 1e4 an estimate moves by 10^4 times the
#: relative torque noise along the weakest direction.
MAX_CONDITION = 1e4


@dataclass
class Options:
    """Identification options (defaults: the CLI's)."""

    params: str = "explicit"
    stribeck: bool = False
    rank_tol: float = 1e-6
    max_condition: float = MAX_CONDITION
    hold_unidentifiable: bool = False
    tsvd_tol: float = 1e-3
    tsvd_rank: int | None = None
    dls_damping: float = 1e-3
    dls_prior: str = "nominal"          # 'nominal' | 'zero'
    rls_forgetting: float = 1.0
    pso_particles: int = 300
    pso_neighbours: int = 60
    pso_iterations: int = 1000
    pso_samples: int | None = 20000     # PSO uses at most this many samples (every s-th)
    pso_box: tuple | None = None        # (lower, upper) over the parameter set, or None: default
    seed: int | None = 0


@dataclass
class Problem:
    """The stacked regression problem of one data set (after parallel filtering, trimming)."""

    pset: ParameterSet
    model: object
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray           # the torques the fit uses (filtered like Y)
    Y: np.ndarray
    A: np.ndarray
    b: np.ndarray
    nominal: np.ndarray
    source: str = ""
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    def __len__(self) -> int:
        return len(self.t)

    def predict(self, values) -> np.ndarray:
        """tau = Y pi for a parameter vector, shape (N, 3)."""
        return self.Y @ np.asarray(values, dtype=float)


@dataclass
class Result:
    """One estimator's result: method, parameter set, estimate, base parameters, the parameters
    held, the nominal values and the torque metrics on the fitting (and validation) data."""
    method: str
    pset: ParameterSet
    estimate: est_mod.Estimate          # over the whole parameter set
    base: BaseParameters
    held: tuple                         # names held at the robot file's values
    nominal: np.ndarray
    fit: dict                           # torque metrics on the fitting data
    validation: dict | None
    condition: float
    seconds: float
    info: dict = field(default_factory=dict)

    @property
    def values(self) -> np.ndarray:
        """The estimated values of the whole parameter set."""
        return self.estimate.values

    @property
    def names(self) -> tuple:
        """The parameter set's names."""
        return self.pset.names

    def lumped(self, model):
        """The model's lumped parameters (RotaryParameters, LinearParameters) for this estimate."""
        return self.pset.to_lumped(model, self.values)


def _regressor(model, pset, prepared, what):
    try:
        return pset.regressor(model, prepared.q, prepared.qd, prepared.qdd)
    except UnreachableError as e:
        k = e.index
        where = f" at t = {prepared.t[k]:.6g} s" if k is not None and 0 <= k < len(prepared.t) else ""
        raise IdentificationError(f"{prepared.source}: {what} joint positions{where} are outside the "
                                  f"robot's workspace ({e}); is this the right robot file?") from None


@blas1
def build_problem(model, prepared: Prepared, pset: ParameterSet, what: str = "the") -> Problem:
    """Regressor of every sample, parallel filter on Y and tau, trim and decimate, stack."""
    t0 = time.perf_counter()
    Y = _regressor(model, pset, prepared, what)
    tau = prepared.tau
    if prepared.sos is not None:
        p = Y.shape[-1]
        Y = prepared.filtered(Y.reshape(len(Y), 3 * p)).reshape(len(Y), 3, p)
        tau = prepared.filtered(tau)
    k = prepared.keep()
    Y, tau = np.ascontiguousarray(Y[k]), np.ascontiguousarray(tau[k])
    A, b = stack(Y, tau)
    return Problem(pset, model, prepared.t[k], prepared.q[k], prepared.qd[k], prepared.qdd[k], tau, Y, A, b,
                   pset.nominal(model), prepared.source, list(prepared.notes), time.perf_counter() - t0)


def default_box(pset: ParameterSet, model) -> tuple:
    """The PSO search box around the robot file's values (kinds from :mod:`.regressors`)."""
    nom = pset.nominal(model)
    lim = model.robot.limits
    tmax = float(np.max(lim.effort))
    vmax = float(np.max(lim.velocity))
    lo, hi = [], []
    for v, kind in zip(nom, pset.kinds):
        a = abs(float(v))
        if kind == "mass":
            lo.append(0.0), hi.append(max(3 * a, 5.0))
        elif kind == "inertia":
            lo.append(0.0), hi.append(max(3 * a, 1.0))
        elif kind == "moment":
            r = max(3 * a, 1.0)
            lo.append(-r), hi.append(r)
        elif kind == "gravity_moment":
            r = max(3 * a, 10.0)
            lo.append(-r), hi.append(r)
        elif kind == "rod_rotation":                      # a linear Delta's m_r: either sign
            r = max(3 * a, 1.0)
            lo.append(-r), hi.append(r)
        elif kind == "viscous":
            lo.append(0.0), hi.append(max(3 * a, 0.25 * tmax / vmax))
        else:  # coulomb / static
            lo.append(0.0), hi.append(max(3 * a, 0.1 * tmax))
    return np.array(lo), np.array(hi)


@blas1
def identify(problem: Problem, method: str, options: Options | None = None,
             validation: Problem | None = None, progress=None) -> Result:
    """Estimate the parameters with ``method`` (see the module docstring)."""
    opts = options or Options()
    if method not in est_mod.METHODS:
        raise IdentificationError(f"unknown method {method!r}: use one of {', '.join(est_mod.METHODS)}")
    t0 = time.perf_counter()
    pset, A, b, nom = problem.pset, problem.A, problem.b, problem.nominal
    names = pset.names
    base = base_parameters(A, names, opts.rank_tol)
    held = ()
    ind = list(range(len(names)))
    if not base.full_rank:
        reasons = base.explain_dependent()
        if not opts.hold_unidentifiable:
            raise IdentificationError(
                f"{problem.source}: the data do not excite all parameters (regressor rank "
                f"{base.rank} of {len(names)}); not identifiable: " + "; ".join(reasons)
                + ". Record a richer motion (delta-identify excite) or pass --hold-unidentifiable "
                  "to keep these at the robot file's values")
        held = tuple(names[d] for d in base.dependent)
        ind = sorted(base.independent)
        dep = sorted(base.dependent)
        b = b - A[:, dep] @ nom[dep]
        A = A[:, ind]
    cond, weak = base.weakest(ind)
    if cond > opts.max_condition:
        shown = [f"{v:+.2f} {n}" for n, v in weak.items() if abs(v) >= 0.25][:6]
        raise IdentificationError(
            f"{problem.source}: the data barely excite some parameters: condition number {cond:.4g} of "
            f"the column-normalised regressor (limit {opts.max_condition:g}, --max-condition); least "
            f"excited: {' '.join(shown)}. Record a richer motion (delta-identify excite)")
    sub = tuple(names[i] for i in ind)
    nn = pset.nonnegative[ind]
    if method == "ols":
        e = est_mod.ols(A, b, sub)
    elif method == "wls":
        e = est_mod.wls(A, b, sub)
    elif method == "bounded":
        e = est_mod.bounded(A, b, sub, lb=np.where(nn, 0.0, -np.inf), ub=np.full(len(ind), np.inf))
    elif method == "tsvd":
        e = est_mod.tsvd(A, b, sub, tol=opts.tsvd_tol, rank=opts.tsvd_rank)
    elif method == "dls":
        prior = nom[ind] if opts.dls_prior == "nominal" else None
        e = est_mod.dls(A, b, sub, damping=opts.dls_damping, prior=prior)
        e.info["prior"] = opts.dls_prior
    elif method == "rls":
        e = est_mod.rls(A, b, sub, forgetting=opts.rls_forgetting)
    else:
        lo, hi = opts.pso_box if opts.pso_box is not None else default_box(pset, problem.model)
        lo, hi = np.asarray(lo, float)[ind], np.asarray(hi, float)[ind]
        r = run_pso(A, b, lo, hi, n_particles=opts.pso_particles, n_neighbours=opts.pso_neighbours,
                    iterations=opts.pso_iterations, seed=opts.seed, max_samples=opts.pso_samples,
                    progress=progress)
        e = est_mod.Estimate("pso", sub, r.values, None, r.seconds,
                             info={"objective": r.score, "history": r.history, "rows_used": r.rows_used,
                                   "rows_total": r.rows_total, "box": (lo.tolist(), hi.tolist()),
                                   "particles": opts.pso_particles, "neighbours": opts.pso_neighbours,
                                   "iterations": opts.pso_iterations, "seed": opts.seed})
    values = nom.astype(float).copy()
    values[ind] = e.values
    cov = None
    if e.cov is not None:
        kappa = correlation_factor((b - A @ e.values).reshape(-1, 3))
        e.info["autocorrelation_factor"] = kappa
        cov = np.zeros((len(names), len(names)))
        cov[np.ix_(ind, ind)] = e.cov * kappa
    full = est_mod.Estimate(method, names, values, cov, e.seconds, e.info)
    fit = torque_metrics(problem.predict(values), problem.tau)
    val = None
    if validation is not None:
        val = torque_metrics(validation.predict(values), validation.tau)
    return Result(method=method, pset=pset, estimate=full, base=base, held=held, nominal=nom,
                  fit=fit, validation=val, condition=base.condition, seconds=time.perf_counter() - t0,
                  info={"relative_std": relative_std(values, full.std)})


def result_problems(result: Result, model) -> list:
    """Why an estimate must not become a robot file, as text (empty: fine): a mass, inertia or
    friction parameter < 0 (``bounded`` and ``pso`` keep them >= 0; OLS and the others may
    not), lumped parameters outside their plausibility bounds
    (the ``LUMPED_BOUNDS`` of the model's kind, rotary or linear
    Delta: the kind's ``lumped_bounds``), or a fitness (eq. 41) that is not finite
    or < 0 on the fitting data: the model then explains a joint's torque worse than no model
    (an effort of the wrong sign, unit or joint order, or torques unrelated to the motion)."""
    out = [f"{n} = {v:.4g} {u} < 0" for n, u, v, nn in
           zip(result.names, result.pset.units, result.values, result.pset.nonnegative) if nn and v < 0]
    lumped = result.lumped(model)
    kinds = kind_parameter_set(model, "explicit").kinds[:14]          # of the model's lumped vector
    bounds = model.ops.lumped_bounds
    for n, kind, v in zip(parameter_names(model), kinds, lumped.as_vector()):
        why = check_bound(bounds[kind], v)
        if why and not any(o.startswith(f"{n} =") for o in out):
            out.append(f"lumped {n} {why}")
    fit = result.fit["fitness"]
    bad = [j + 1 for j, f in enumerate(fit) if not np.isfinite(f)]
    if bad:
        out.append(f"the fitness of joint(s) {', '.join(map(str, bad))} is not finite (the model "
                   "predicts a constant torque there)")
    neg = [f"{j + 1} ({f:.3g})" for j, f in enumerate(fit) if np.isfinite(f) and f < 0]
    if neg:
        out.append(f"the fitness of joint(s) {', '.join(neg)} is < 0: the model explains the measured "
                   "torque worse than none (check the effort's sign, unit (--effort) and joint order)")
    return out


def identify_data(model, data, method: str = "bounded", options: Options | None = None,
                  preprocessing=None, validation=None, progress=None) -> Result:
    """One call from raw samples to a result (for scripts and the identification node).

    ``data`` / ``validation``: :class:`~delta_dynamics.data_files.joint_data.JointData` (e.g. ``JointData(t, q, tau)`` from a
    buffer, or :func:`~delta_dynamics.data_files.joint_files.read_joint_data`); ``preprocessing``: :class:`~.preprocess.Preprocessing`.
    """
    opts = options or Options()
    pset = kind_parameter_set(model, opts.params, stribeck=opts.stribeck)
    check_joint_limits(data, model.robot)
    problem = build_problem(model, preprocess(data, preprocessing), pset)
    vproblem = None
    if validation is not None:
        check_joint_limits(validation, model.robot)
        vproblem = build_problem(model, preprocess(validation, preprocessing), pset, what="validation")
    return identify(problem, method, opts, validation=vproblem, progress=progress)


def correlation_factor(residual, threshold: float = 0.05) -> float:
    """Variance inflation 1 + 2 sum_k rho(k) for residuals correlated in time.

    The LS covariance sigma^2 (A^T A)^-1 assumes independent samples; filtered, densely
    sampled data are not. rho is the residuals' autocorrelation (pooled over the joints),
    summed up to the first lag where it drops below ``threshold`` (the integrated
    autocorrelation time of time-series analysis).
    """
    r = np.asarray(residual, dtype=float)
    r = r - r.mean(axis=0)
    n = len(r)
    if n < 4:
        return 1.0
    f = np.fft.rfft(r, 2 * n, axis=0)
    ac = np.fft.irfft(f * np.conj(f), 2 * n, axis=0)[:n].sum(axis=1)
    if ac[0] <= 0:
        return 1.0
    ac = ac / ac[0]
    below = np.flatnonzero(ac < threshold)
    k = int(below[0]) if len(below) else n
    return float(max(1.0, 1.0 + 2.0 * ac[1:k].sum()))


def parameter_error(values, truth) -> np.ndarray:
    """|pi - pi_true| / |pi_true| per parameter."""
    truth = np.asarray(truth, float)
    return np.abs(np.asarray(values, float) - truth) / np.abs(truth)


__all__ = ["Options", "Problem", "Result", "build_problem", "identify", "identify_data", "default_box",
           "result_problems", "MAX_CONDITION", "condition_number", "parameter_error", "correlation_factor"]
