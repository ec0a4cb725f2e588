"""Math back-ends that let one piece of component-wise code run on a Python float (the
cheap single-sample path of the control loop) or on numpy arrays of N samples.

>>> x, y, z, xp, single = split3([0.1, 0.2, 0.3], "platform position")
>>> xp is ScalarMath, single, join3(x, y, z, single).tolist()
(True, True, [0.1, 0.2, 0.3])
"""
from __future__ import annotations

import math

import numpy as np


class ScalarMath:
    """The functions of :mod:`math` under the names component-wise code uses (one sample)."""

    sqrt, cos, sin, atan2, acos, exp, tanh = map(staticmethod, (math.sqrt, math.cos, math.sin, math.atan2,
                                                                math.acos, math.exp, math.tanh))

    @staticmethod
    def first_bad(ok) -> int | None:
        """Index of the first sample where ``ok`` is false, or None."""
        return None if ok else 0

    @staticmethod
    def sign(v):
        """-1, 0 or 1: the sign of ``v``."""
        return (v > 0) - (v < 0)


class ArrayMath:
    """The same functions on numpy arrays (N samples, one array per component)."""

    sqrt, cos, sin, atan2, acos, exp, tanh, sign = map(staticmethod, (np.sqrt, np.cos, np.sin, np.arctan2,
                                                                      np.arccos, np.exp, np.tanh, np.sign))

    @staticmethod
    def first_bad(ok) -> int | None:
        """Index of the first sample where ``ok`` is false, or None."""
        ok = np.asarray(ok)
        if ok.all():
            return None
        return int(np.argmin(ok))


def split3(a, name: str):
    """``a`` (shape (3,) or (N, 3)) -> (x, y, z, xp, single): floats for one sample, else columns.

    Raises ValueError naming ``name`` for a wrong shape or a non-finite value.
    """
    if isinstance(a, (list, tuple)) and len(a) == 3 and all(type(v) is float for v in a):
        x, y, z = a
        if math.isfinite(x + y + z):
            return x, y, z, ScalarMath, True
    arr = np.asarray(a, dtype=float)
    if arr.shape == (3,):
        x, y, z = arr.tolist()
        if not math.isfinite(x + y + z):
            raise ValueError(f"{name} must be finite, got {arr.tolist()}")
        return x, y, z, ScalarMath, True
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (3,) or (N, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        row = int(np.argmin(np.isfinite(arr).all(axis=1)))
        raise ValueError(f"{name} must be finite, got {arr[row].tolist()} at sample {row}")
    return arr[:, 0], arr[:, 1], arr[:, 2], ArrayMath, False


def join3(a, b, c, single: bool):
    """Inverse of :func:`split3`: three components -> array of shape (3,) or (N, 3)."""
    if single:
        return np.array((a, b, c))
    return np.stack((a, b, c), axis=-1)
