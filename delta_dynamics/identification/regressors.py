"""Linear-in-parameters forms tau = Y(q, q_dot, q_ddot) pi and their identifiable base parameters.

A :class:`ParameterSet` is one parameterisation of a robot's inverse dynamics: the pipeline
(``build_problem``, ``identify``, the estimators, base parameters) talks only to it. Each robot
kind provides its sets (``parameter_set(key, stribeck)`` of ``delta_dynamics.<kind>.identification``,
reached through :func:`delta_dynamics.algorithms.parameter_set`):

``explicit`` (both kinds)
    The model's own 14 lumped parameters (``m.params.as_vector()``, names
    :func:`delta_dynamics.algorithms.parameter_names`), regressor
    :func:`delta_dynamics.algorithms.regressor_joint`. With ``stribeck=True`` three more columns
    sgn_eps(q_d) e^{-(q_d/v_s)^2} carry the break-away efforts static_1..3 (then the Coulomb
    columns hold sgn_eps(q_d) (1 - e^{-(q_d/v_s)^2}); v_s and eps stay at the robot file's values).
    :class:`ParameterSet` itself implements it for any kind; the kind's subclass gives the kinds
    and units of its parameters.
``kim`` (rotary)
    The 11-parameter vector of Kim et al. (2022) eq. (30), ``delta_dynamics.rotary.identification``.

The stacked system of N samples is A pi = b with A = Y.reshape(3N, p) (row 3k + j is joint j
of sample k) and b = tau.reshape(3N).

Base parameters (:func:`base_parameters`)
------------------------------------------
A column of A that is a linear combination of others cannot be told apart from them: only
the combination is identifiable. With the columns scaled to unit norm, a QR decomposition
with column pivoting A_n P = Q R orders the columns by how much new information each adds;
the numerical rank r counts the diagonal entries |R_kk| > tol |R_00|. Then r *independent*
columns are picked in the parameter set's order (a column is kept if it is not in the span
of those kept before it), the others are *dependent*: A_dep = A_ind beta, beta by least
squares (unscaled). Then A pi = A_ind (pi_ind + beta pi_dep), so the base
parameters are pi_b = pi_ind + beta pi_dep. Holding pi_dep at prior values maps an estimate
of pi_b back to all parameters: pi_ind = pi_b - beta pi_dep,prior.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from delta_dynamics import algorithms

from ._linalg import blas1, qr_r

#: Names of the three break-away (Stribeck) columns of a set with ``stribeck=True``.
STRIBECK_NAMES = ("static_1", "static_2", "static_3")


@dataclass(frozen=True)
class ParameterSet:
    """One linear parameterisation of the inverse dynamics (see the module docstring): ``key``
    (its name), ``names`` (its parameters, in column order), ``stribeck`` (with the break-away
    columns). As it stands it is the ``explicit`` set of any kind: the model's lumped
    parameters. A kind's subclass sets ``KINDS`` (parameter name -> physical kind), ``UNITS``
    (kind -> unit) and ``NONNEGATIVE`` (the kinds that are >= 0 in a physically consistent
    model); another set also overrides :meth:`regressor`, :meth:`nominal` and :meth:`to_lumped`."""

    key: str
    names: tuple
    stribeck: bool = False

    KINDS = {}
    UNITS = {}
    NONNEGATIVE = ()

    @property
    def kinds(self) -> tuple:
        """The physical kind of each parameter (mass, inertia, viscous, ...)."""
        return tuple(self.KINDS[n] for n in self.names)

    @property
    def units(self) -> tuple:
        """The unit of each parameter."""
        return tuple(self.UNITS[k] for k in self.kinds)

    @property
    def nonnegative(self) -> np.ndarray:
        """Boolean mask of the parameters that must be >= 0 (masses, inertias, friction)."""
        return np.array([k in self.NONNEGATIVE for k in self.kinds])

    def __len__(self) -> int:
        return len(self.names)

    def regressor(self, model, q, qd, qdd) -> np.ndarray:
        """Y(q, q_dot, q_ddot), shape (N, 3, p) (or (3, p) for one sample)."""
        return algorithms.regressor_joint(model, q, qd, qdd, stribeck=self.stribeck)

    def nominal(self, model) -> np.ndarray:
        """The parameter values implied by the model's robot file."""
        v = model.params.as_vector()
        if self.stribeck:
            v = np.concatenate((v, model.params.static))
        return v

    def to_lumped(self, model, values):
        """The model's lumped parameters (its kind's class) for an estimate of this set (without
        Stribeck columns the break-away effort equals the Coulomb effort: the model that was
        fitted)."""
        v = np.asarray(values, dtype=float)
        p = model.params
        static = v[14:17] if self.stribeck else v[11:14]
        return model.ops.parameters.from_vector(v[:14], static=tuple(float(s) for s in static),
                                                stribeck_velocity=p.stribeck_velocity,
                                                smoothing_velocity=p.smoothing_velocity)


def stack(Y, tau):
    """(A, b) of the stacked system: A = Y.reshape(3N, p), b = tau.reshape(3N)."""
    Y = np.asarray(Y, dtype=float)
    return Y.reshape(-1, Y.shape[-1]), np.asarray(tau, dtype=float).reshape(-1)


# ----------------------------------------------------------------------------- base parameters

@dataclass
class BaseParameters:
    """Result of :func:`base_parameters` for one stacked regressor.

    ``independent`` / ``dependent`` are column indices into ``names`` (in the set's order;
    of a group of dependent columns the earlier ones count as independent); ``beta`` (len(independent), len(dependent)) gives
    A[:, dependent] = A[:, independent] @ beta; ``zero`` lists columns that are all zero
    (a joint that does not move, say). ``singular_values`` are those of the column-normalised
    regressor, largest first.
    """

    names: tuple
    independent: tuple
    dependent: tuple
    beta: np.ndarray
    zero: tuple
    diag: np.ndarray
    singular_values: np.ndarray
    tol: float
    column_norms: np.ndarray = field(repr=False, default=None)
    r_factor: np.ndarray = field(repr=False, default=None)   # p x p R of the column-normalised A

    def weakest(self, columns=None) -> tuple:
        """(condition number, weakest direction) of the column-normalised regressor restricted
        to ``columns`` (default: all): the right singular vector of the smallest singular
        value, as {name: component}, largest components first. The parameters it weighs most
        are the ones the data excite least."""
        cols = list(range(len(self.names))) if columns is None else list(columns)
        R = self.r_factor[:, cols]
        _, sv, vt = np.linalg.svd(R)
        cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")
        v = vt[-1] * (1.0 if vt[-1][np.argmax(np.abs(vt[-1]))] > 0 else -1.0)
        order = np.argsort(-np.abs(v))
        return cond, {self.names[cols[i]]: float(v[i]) for i in order}

    @property
    def rank(self) -> int:
        """The number of identifiable base parameters."""
        return len(self.independent)

    @property
    def full_rank(self) -> bool:
        """Whether every parameter is identifiable on its own."""
        return not self.dependent

    @property
    def condition(self) -> float:
        """Condition number of the column-normalised regressor (inf if rank deficient)."""
        s = self.singular_values
        return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")

    def combination(self, k: int) -> str:
        """The base parameter led by independent column ``independent[k]`` as text."""
        i = self.independent[k]
        terms = [self.names[i]]
        for j, d in enumerate(self.dependent):
            c = self.beta[k, j]
            if abs(c) > 1e-9:
                terms.append(f"{'-' if c < 0 else '+'} {abs(c):.6g} {self.names[d]}")
        return " ".join(terms)

    def combinations(self) -> list:
        """Every base parameter as text, e.g. ``['m_x + 0.25 m_k', 'arm_inertia_1', ...]``
        (in the parameter set's order of their leading parameters)."""
        order = sorted(range(self.rank), key=lambda k: self.independent[k])
        return [self.combination(k) for k in order]

    def explain_dependent(self) -> list:
        """One sentence per non-identifiable parameter saying why."""
        out = []
        for j, d in enumerate(self.dependent):
            name = self.names[d]
            if d in self.zero:
                out.append(f"{name}: its regressor column is zero (the data do not move it at all)")
                continue
            terms = [f"{self.beta[k, j]:+.4g} {self.names[i]}" for k, i in enumerate(self.independent)
                     if abs(self.beta[k, j]) > 1e-9]
            out.append(f"{name}: its column is a combination of others"
                       + (f" ({' '.join(terms)})" if terms else ""))
        return out

    def to_base(self, values) -> np.ndarray:
        """Base-parameter values pi_b = pi_ind + beta pi_dep of a full parameter vector."""
        v = np.asarray(values, dtype=float)
        return v[list(self.independent)] + self.beta @ v[list(self.dependent)]

    def from_base(self, base_values, prior) -> np.ndarray:
        """Full vector from base values, the dependent parameters held at ``prior``."""
        out = np.array(prior, dtype=float, copy=True)
        dep = out[list(self.dependent)]
        out[list(self.independent)] = np.asarray(base_values, dtype=float) - self.beta @ dep
        return out


@blas1
def base_parameters(A, names, tol: float = 1e-6) -> BaseParameters:
    """The identifiable base parameters of the stacked regressor ``A`` (m x p), numerically.

    QR with column pivoting of the column-normalised regressor (see the module docstring);
    the rank counts |R_kk| > ``tol`` |R_00|. Computed on the p x p triangular factor of a
    plain QR of A (it has the same column geometry), so it costs one pass over A.
    """
    A = np.asarray(A, dtype=float)
    p = A.shape[1]
    if len(names) != p:
        raise ValueError(f"{len(names)} names for {p} regressor columns")
    norms = np.sqrt(np.einsum("ij,ij->j", A, A))
    big = norms.max() if p else 0.0
    # columns this small are rounding noise (e.g. differences of a constant position)
    zero = tuple(int(j) for j in np.flatnonzero(norms <= 1e-8 * max(big, 1e-300)))
    scale = np.where(norms > 0, norms, 1.0)
    An = A / scale
    if zero:
        An[:, list(zero)] = 0.0
    R0 = qr_r(An)
    sv = np.linalg.svd(R0, compute_uv=False)
    R, piv = scipy.linalg.qr(R0, mode="r", pivoting=True)
    d = np.abs(np.diag(R))
    ref = d[0] if len(d) and d[0] > 0 else 1.0
    rank = int(np.sum(d > tol * ref))
    # Which columns of a dependent group to call "independent" is a choice: prefer the
    # parameter set's order (so e.g. the friction of a joint that does not move is reported,
    # not the arm inertia it happens to correlate with). Greedy Gram-Schmidt in that order on
    # the p x p factor, accepted if it finds the rank of the pivoted QR.
    ind, basis = [], []
    for j in range(p):
        v = R0[:, j].copy()
        for _ in range(2):
            for u in basis:
                v -= (u @ v) * u
        nv = np.linalg.norm(v)
        if nv > tol * ref and j not in zero:
            ind.append(j)
            basis.append(v / nv)
    if len(ind) != rank:
        ind = sorted(int(c) for c in piv[:rank])
    dep = [j for j in range(p) if j not in ind]
    if dep and ind:
        bn = np.linalg.lstsq(R0[:, ind], R0[:, dep], rcond=None)[0]
        bn[np.abs(bn) < 1e-10] = 0.0
        beta = bn / scale[ind][:, None] * scale[dep][None, :]
    else:
        beta = np.zeros((len(ind), len(dep)))
    d = np.abs(np.diag(R))
    return BaseParameters(names=tuple(names), independent=tuple(ind), dependent=tuple(dep),
                          beta=beta, zero=zero, diag=d / ref, singular_values=sv, tol=tol,
                          column_norms=norms, r_factor=R0)
