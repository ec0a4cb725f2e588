"""Sampling the workspace of either robot kind: joint vectors drawn uniformly inside the
position limits, mapped to the platform by the kind's forward kinematics, kept where that
works (and, if asked, where the Jacobian is well conditioned); and the conditioning measure.
"""
from __future__ import annotations

import numpy as np


def inverse_condition(J):
    """Inverse condition number of J (shape (3, 3) or (N, 3, 3)) in [0, 1]: 0 at a singularity,
    1 for an isotropic Jacobian.

    >>> float(inverse_condition(np.diag([1.0, 2.0, 4.0])))
    0.25
    """
    s = np.linalg.svd(J, compute_uv=False)
    return s[..., -1] / s[..., 0]


def sample_workspace(m, n: int, seed, min_measure: float, reachable, tries: int, batch: tuple):
    """``n`` random reachable platform positions (N, 3) with joints inside their limits.

    Per round, ``max(batch[0] * still_needed, batch[1])`` joint vectors are drawn uniformly
    inside ``[m.q_lo, m.q_hi]``; ``reachable(m, qs)`` gives the platform positions of those the
    kind keeps (forward kinematics works, the branch is the kind's), those whose singularity
    measure is below ``min_measure`` are dropped; at most ``tries`` rounds, else RuntimeError.
    ``seed`` seeds numpy's default generator (None: fresh entropy)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(m.q_lo), np.asarray(m.q_hi)
    factor, least = batch
    out, need = [], n
    for _ in range(tries):
        qs = rng.uniform(lo, hi, size=(max(factor * need, least), 3))
        Xs = reachable(m, qs)
        if min_measure > 0 and len(Xs):
            Xs = Xs[m.ops.singularity_measure(m, Xs) >= min_measure]
        out.append(Xs)
        need -= len(Xs)
        if need <= 0:
            break
    pts = np.concatenate(out)[:n]
    if len(pts) < n:
        raise RuntimeError(f"could only sample {len(pts)} of {n} workspace points")
    return pts
