"""The errors of every robot kind's kinematics and dynamics, and the joint-limit check both
kinds use.

>>> e = UnreachableError("platform position (0, 0, 1) m is unreachable", index=0, point=(0.0, 0.0, 1.0))
>>> isinstance(e, ValueError), e.point
(True, (0.0, 0.0, 1.0))
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.common.backend import ArrayMath, ScalarMath


class UnreachableError(ValueError):
    """A platform position (or joint vector) the mechanism cannot take.

    ``index`` is the sample's index in the batch (0 for a single sample), ``point`` its value.
    """

    def __init__(self, message: str, index: int = 0, point=None):
        super().__init__(message)
        self.index = index
        self.point = point


class SingularityError(UnreachableError):
    """A configuration where the Jacobian is singular (forward kinematics undefined)."""


def format_point(v) -> str:
    """``(x, y, z)`` with 6 significant digits, for messages.

    >>> format_point([0.1, -0.25, 1e-7])
    '(0.1, -0.25, 1e-07)'
    """
    return "(" + ", ".join(f"{float(c):.6g}" for c in v) + ")"


def sample_at(a, k):
    """Sample ``k`` of ``a``: ``a`` itself for one sample (a scalar), ``a[k]`` for N."""
    return a if np.ndim(a) == 0 else a[k]


def point_at(x, y, z, k) -> tuple:
    """``((x, y, z) of sample k as floats, " (sample k)" or "" for one sample)``, for messages."""
    pt = (float(sample_at(x, k)), float(sample_at(y, k)), float(sample_at(z, k)))
    return pt, ("" if np.ndim(x) == 0 else f" (sample {k})")


def check_limits(m, qs, X, describe):
    """Raise UnreachableError naming the first joint (and sample) outside ``[m.q_lo, m.q_hi]``,
    for either kind of robot: ``describe(i, value)`` words the joint and its limits, the
    platform position ``X`` (if given) and the sample index follow. ``qs``: three components
    (floats or arrays), or an array of shape (3,) or (N, 3)."""
    if isinstance(qs, np.ndarray):
        qs = [qs[..., i] for i in range(3)]
    for i in range(3):
        ok = (qs[i] >= m.q_lo[i]) & (qs[i] <= m.q_hi[i])
        k = (ScalarMath if np.ndim(ok) == 0 else ArrayMath).first_bad(ok)
        if k is not None:
            where = "" if np.ndim(ok) == 0 else f" (sample {k})"
            qv = [float(sample_at(q, k)) for q in qs]
            pt = "" if X is None else f" for platform position {format_point(np.asarray(X, dtype=float).reshape(-1, 3)[k])} m"
            raise UnreachableError(f"{describe(i, qv[i])}{pt}{where}", index=k, point=qv)
