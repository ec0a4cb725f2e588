"""Interpolating polynomials shared by path builders and trajectory plans."""
from __future__ import annotations

import numpy as np


def hermite5(T, p0, v0, a0, p1, v1, a1):
    """Coefficients (c0..c5, lowest power first, stacked on the first axis) of the quintic on
    [0, T] with position, velocity and acceleration p0, v0, a0 at 0 and p1, v1, a1 at T.

    >>> c = hermite5(2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    >>> float(sum(c[k] * 2.0 ** k for k in range(6)))
    1.0
    """
    d = p1 - p0
    return np.stack((p0, v0, 0.5 * a0,
                     (20 * d - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T * T) / (2 * T ** 3),
                     (-30 * d + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T * T) / (2 * T ** 4),
                     (12 * d - 6 * (v1 + v0) * T - (a0 - a1) * T * T) / (2 * T ** 5)))
