"""Measurement poses that make the geometry identifiable.

Candidates: platform positions drawn inside the workspace with every joint inside its limits
(:func:`delta_dynamics.algorithms.sample_workspace`, away from singularities), or, for
``heights``, points of the surface z = ``height`` (a printer's bed) reachable within the
limits. From them a greedy design picks ``count`` poses: each step adds the candidate that
most increases the smallest singular value of the scaled calibration Jacobian restricted to
the identifiable directions (:func:`delta_dynamics.calibration.fit.identifiability` over all
candidates), with a small ridge so that the first poses, before the Jacobian has full rank,
are chosen by the product of the singular values instead.

>>> from delta_dynamics.kinds import model_for
>>> design = choose_poses(model_for("nt_robot"), 20, seed=0)
>>> design.q.shape, design.smallest_singular_value > 0
((20, 3), True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import UnreachableError, inverse_kinematics, sample_workspace
from delta_dynamics.calibration.fit import identifiability, predict, scales


@dataclass(frozen=True)
class PoseDesign:
    """Chosen poses: joint positions ``q`` (N, 3), nominal tool points ``X`` (N, 3), the
    smallest singular value of the scaled Jacobian over the identifiable directions
    (m per mm or mrad) and the unidentifiable combinations that remain."""

    q: np.ndarray
    X: np.ndarray
    smallest_singular_value: float
    unidentifiable: tuple


def candidates(m, n: int, kind: str = "positions", height: float = 0.0, seed: int = 0) -> tuple:
    """``(q, X)``: ``n`` candidate poses inside the workspace and the joint limits."""
    rng = np.random.default_rng(seed)
    if kind == "positions":
        X = sample_workspace(m, n, seed=seed, min_measure=0.05)
        return inverse_kinematics(m, X), X
    # heights: points of the plane z = height (tool point) reachable within the limits
    W = sample_workspace(m, 4 * n, seed=seed, min_measure=0.05)
    radius = float(np.max(np.hypot(W[:, 0], W[:, 1])))
    tool = m.chains.tool_offset(m.chains.parameters(m.robot))
    qs, Xs = [], []
    for _ in range(50):
        rr = radius * np.sqrt(rng.uniform(0, 1, 4 * n))
        a = rng.uniform(0, 2 * np.pi, 4 * n)
        X = np.column_stack((rr * np.cos(a), rr * np.sin(a), np.full(4 * n, height + tool)))
        for x in X:
            try:
                qs.append(inverse_kinematics(m, x, check_limits=True))
                Xs.append(x)
            except UnreachableError:
                continue
        if len(qs) >= n:
            break
    if len(qs) < 3:
        raise UnreachableError(f"no reachable point of the surface z = {height:g} m within the joint limits")
    X = np.array(Xs[:n])
    X[:, 2] -= tool
    return np.array(qs[:n]), X


def choose_poses(m, count: int, kind: str = "positions", height: float = 0.0, seed: int = 0,
                 pool: int | None = None, free=None) -> PoseDesign:
    """Pick ``count`` poses of model ``m`` (module docstring). ``free``: the parameters to make
    identifiable (default: all)."""
    chains = m.chains
    p0 = chains.parameters(m.robot)
    q, X = candidates(m, pool or max(10 * count, 200), kind, height, seed)
    _, J = predict(chains, p0, q, kind)                               # (N, w, P)
    names = chains.names
    free = names if free is None else tuple(free)
    idx = np.array([names.index(n) for n in free], int)
    D = scales(chains)
    ident = identifiability(J.reshape(-1, J.shape[-1]), idx, names, D)
    A = np.einsum("nwp,pk->nwk", J[:, :, idx] * D[idx], ident.basis)  # (N, w, k)
    k = ident.rank
    ridge = 1e-6 * float(np.sum(A * A)) / len(A)
    chosen: list = []
    M = ridge * np.eye(k)
    for _ in range(min(count, len(q))):
        best, best_v = -1, -np.inf
        for c in range(len(q)):
            if c in chosen:
                continue
            ev = np.linalg.eigvalsh(M + A[c].T @ A[c])
            v = ev[0] if len(chosen) * A.shape[1] >= k else float(np.sum(np.log(ev)))
            if v > best_v:
                best, best_v = c, v
        chosen.append(best)
        M = M + A[best].T @ A[best]
    sel = np.array(chosen)
    s = np.linalg.svd(A[sel].reshape(-1, k), compute_uv=False)
    return PoseDesign(q=q[sel], X=X[sel], smallest_singular_value=float(s[-1]) if len(s) == k else 0.0,
                      unidentifiable=ident.unidentifiable)


@dataclass(frozen=True)
class IdentifiabilityAdvice:
    """What more measurements would identify: ``poses`` (K, 3) tool points (m, ``base_link``)
    whose measurement, added to the data, makes ``gained`` more combinations identifiable;
    ``structural``: the combinations no pose of this data kind identifies; ``by_positions``:
    how many of those measured positions (x, y, z) would identify (for ``heights`` data)."""

    poses: np.ndarray
    gained: int
    structural: tuple
    by_positions: int


def _rank(J, idx, names, D) -> int:
    return identifiability(J.reshape(-1, J.shape[-1]), idx, names, D).rank


def advise(m, q, kind: str = "positions", height: float = 0.0, free=None, most: int = 6, pool: int = 200,
           seed: int = 0) -> IdentifiabilityAdvice:
    """For measurements at joint positions ``q`` (N, 3) of data ``kind``: the few poses (at most
    ``most``, greedily, each raising the rank the most) that would make every combination
    identifiable that any of ``pool`` candidate poses of this kind can (:func:`candidates`), and
    the combinations no such pose identifies (for ``heights``: how many measured positions
    would). Ranks as :func:`~delta_dynamics.calibration.fit.identifiability`, at the nominal
    geometry.

    >>> import numpy as np
    >>> from delta_dynamics.kinds import model_for
    >>> from delta_dynamics.algorithms import inverse_kinematics
    >>> m = model_for("nt_robot")
    >>> X = np.array([[0.0, 0.0, -0.8], [0.1, 0.0, -0.8], [0.0, 0.1, -0.8]])   # three poses only
    >>> a = advise(m, inverse_kinematics(m, X))
    >>> a.gained, len(a.poses), a.structural[0]          # base and platform radius enter as their difference
    (6, 2, 'platform_radius_2 + base_radius_2')
    """
    chains = m.chains
    p0 = chains.parameters(m.robot)
    names = chains.names
    free = names if free is None else tuple(free)
    idx = np.array([names.index(n) for n in free], int)
    D = scales(chains)
    _, Jd = predict(chains, p0, np.asarray(q, dtype=float).reshape(-1, 3), kind)
    qc, Xc = candidates(m, pool, kind, height, seed)
    _, Jc = predict(chains, p0, qc, kind)
    best_all = identifiability(np.concatenate((Jd, Jc)).reshape(-1, Jd.shape[-1]), idx, names, D)
    rank0 = rank = _rank(Jd, idx, names, D)
    chosen: list = []
    J = Jd
    while rank < best_all.rank and len(chosen) < most:
        r, c = rank, None
        for k in range(len(qc)):                      # the first candidate that raises the rank the most
            if k not in chosen:
                rk = _rank(np.concatenate((J, Jc[k:k + 1])), idx, names, D)
                if rk > r:
                    r, c = rk, k
        if c is None:
            break
        chosen.append(c)
        J = np.concatenate((J, Jc[c:c + 1]))
        rank = r
    by_positions = 0
    if kind == "heights" and best_all.unidentifiable:
        qp, _ = candidates(m, pool, "positions", seed=seed)
        _, Jp = predict(chains, p0, qp, "positions")
        by_positions = _rank(Jp, idx, names, D) - best_all.rank
    poses = Xc[np.array(chosen, int)] if chosen else np.zeros((0, 3))
    if kind == "positions":                           # candidates() gives platform positions here: tool points
        poses = poses - [0.0, 0.0, chains.tool_offset(p0)]
    return IdentifiabilityAdvice(poses=poses, gained=rank - rank0,
                                 structural=best_all.unidentifiable, by_positions=max(by_positions, 0))
