"""Geometric paths of the platform centre: X(s) in ``base_link`` (m) over a path parameter s (m).

A :class:`Path` wraps a scipy piecewise polynomial (``PPoly``) of the three coordinates, so
X(s), X'(s) = dX/ds and X''(s) = d^2X/ds^2 are evaluated for any number of s at once, exactly
(no finite differences). Two builders:

* :func:`spline_path`: scipy's ``CubicSpline`` through points over their cumulative chord
  length (s_0 = 0, s_k = s_{k-1} + |P_k - P_{k-1}|), default end conditions ("not-a-knot";
  two points give the straight line), so any two tools given the same points mean the same
  path. It is C2 in s by construction.
* :func:`door_path`: the pick-and-place "door" (up, across, down): straight segments
  parametrised by arc length, each corner replaced by a quintic Hermite blend that starts
  ``blend`` before the corner and ends ``blend`` after it, with the unit tangent of the
  segment it leaves and the one it joins and zero second derivative at both ends. X, X'
  and X'' are therefore continuous at every junction (the path is C2 in s) and the
  curvature is zero where a blend meets a straight line. The blend's parameter length is
  the one that maximises its smallest radius of curvature (for a right angle 1.52 blend;
  smallest radius 0.85 blend).

>>> p = door_path([-0.15, 0, -0.8], [0.15, 0, -0.8], height=0.025, blend=0.01)
>>> round(p.length, 4), p.position(0.0).tolist(), p.position(p.length).round(12).tolist()
(0.3403, [-0.15, 0.0, -0.8], [0.15, 0.0, -0.8])
>>> jumps = p.junction_jumps()          # |X''(s+) - X''(s-)| at every breakpoint, 1/m
>>> bool(jumps.max() < 1e-9)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.interpolate import CubicSpline, PPoly

from delta_dynamics.common.polynomials import hermite5

#: Most points a path may be built from (a path CSV's rows).
MAX_POINTS = 100_000
#: Two consecutive points closer than this (m) are one point: refused (a zero chord).
MIN_CHORD = 1e-9


class PathError(ValueError):
    """A path that cannot be built; the message names the point and why.

    ``index`` is the offending point's index in the input (or None)."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class Path:
    """X(s) of the platform centre (m) for s in [0, ``length``] (m).

    ``poly`` is a ``PPoly`` of shape (3,) per s; ``points`` are the points it was built
    from (for messages), ``where`` says for each breakpoint what it is (for messages)."""

    poly: PPoly
    points: np.ndarray
    kind: str = "spline"
    corners: tuple = field(default=())

    @property
    def length(self) -> float:
        """Parameter length (m): the cumulative chord length for a spline path, the
        straight lengths plus the blends' parameter lengths for a door path."""
        return float(self.poly.x[-1] - self.poly.x[0])

    @property
    def breakpoints(self) -> np.ndarray:
        """The path parameters s (m) where the pieces of the polynomial meet."""
        return self.poly.x

    def position(self, s) -> np.ndarray:
        """X(s) (m), shape (3,) or (N, 3)."""
        return self.poly(s)

    def evaluate(self, s):
        """(X, X', X'') at the path parameters ``s`` (m; (N,) array): m, 1, 1/m."""
        s = np.asarray(s, dtype=float)
        return self.poly(s), self.poly(s, 1), self.poly(s, 2)

    def junction_jumps(self, order: int = 2) -> np.ndarray:
        """|d^k X/ds^k (s+) - d^k X/ds^k (s-)| at every interior breakpoint (k = ``order``):
        the left and right polynomial pieces evaluated at their common end. All zero (to
        rounding) for k <= 2 on a C2 path."""
        x, c = self.poly.x, self.poly.c                     # c: (degree + 1, pieces, 3)
        k = c.shape[0] - 1
        h = np.diff(x)[:-1]                                  # length of each left piece
        left = np.zeros((len(h), 3))
        for p in range(k + 1 - order):                       # d^order of the left piece at its end
            power = k - p
            coef = math.perm(power, order)
            left += coef * c[p, :-1] * (h ** (power - order))[:, None]
        right = math.factorial(order) * c[k - order, 1:]     # d^order of the right piece at 0
        return np.linalg.norm(left - right, axis=1)


# ----------------------------------------------------------------------------- spline through points

def _checked_points(points, what: str = "path") -> np.ndarray:
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 3:
        raise PathError(f"{what} points must have shape (N, 3) (x, y, z in m), got {P.shape}")
    if len(P) < 2:
        raise PathError(f"{what}: {len(P)} point{'s' if len(P) != 1 else ''}, need at least 2")
    if len(P) > MAX_POINTS:
        raise PathError(f"{what}: {len(P)} points, more than the {MAX_POINTS} a path may have")
    finite = np.isfinite(P).all(axis=1)
    if not finite.all():
        k = int(np.argmin(finite))
        raise PathError(f"{what} point {k}: not finite: {P[k].tolist()}", k)
    return P


def spline_path(points) -> Path:
    """The path through ``points`` ((N, 3), m, N >= 2): scipy's ``CubicSpline`` over the
    cumulative chord length, default end conditions. Two consecutive points closer than
    :data:`MIN_CHORD` are refused (the chord length would not increase).

    >>> p = spline_path([[0, 0, -0.8], [0.1, 0, -0.8]])
    >>> p.length, p.evaluate([0.05])[1].round(12).tolist()
    (0.1, [[1.0, 0.0, 0.0]])
    """
    P = _checked_points(points)
    chord = np.linalg.norm(np.diff(P, axis=0), axis=1)
    short = np.flatnonzero(~(chord >= MIN_CHORD))
    if len(short):
        k = int(short[0]) + 1
        raise PathError(f"path point {k} {_fmt(P[k])} repeats point {k - 1} (a chord of "
                        f"{chord[k - 1]:.3g} m): the path parameter (cumulative chord length) must "
                        f"increase; remove the repeated point", k)
    s = np.concatenate(([0.0], np.cumsum(chord)))
    cs = CubicSpline(s, P, axis=0)
    return Path(PPoly(cs.c, cs.x, extrapolate=False), P, "spline")


# ----------------------------------------------------------------------------- the door path

def _blend_coefficients(T, r, d1, d2):
    z = np.zeros(3)
    return hermite5(T, -r * d1, d1, z, r * d2, d2, z)


@lru_cache(maxsize=64)
def blend_ratio(angle: float) -> float:
    """Parameter length / blend distance of the quintic corner blend for a turn of ``angle``
    rad (0 < angle < pi) that maximises the blend's smallest radius of curvature (found
    once per angle, on a grid of 161 ratios refined by golden section)."""
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.optimize import minimize_scalar
    d1 = np.array([1.0, 0.0, 0.0])
    d2 = np.array([math.cos(angle), math.sin(angle), 0.0])
    u = np.linspace(0.0, 1.0, 201)

    def neg_min_radius(k):
        c = _blend_coefficients(k, 1.0, d1, d2)
        t = u[:, None] * k
        v = sum(p * c[p] * t ** (p - 1) for p in range(1, 6))
        a = sum(p * (p - 1) * c[p] * t ** (p - 2) for p in range(2, 6))
        sp = np.linalg.norm(v, axis=1)
        curv = np.linalg.norm(np.cross(v, a), axis=1) / sp ** 3
        return -1.0 / curv.max()

    grid = np.linspace(0.4, 2.4, 161)
    k0 = grid[int(np.argmin([neg_min_radius(k) for k in grid]))]
    res = minimize_scalar(neg_min_radius, bounds=(max(k0 - 0.0125, 0.4), k0 + 0.0125), method="bounded",
                          options={"xatol": 1e-6})
    return float(res.x)


def door_path(start, end, height: float = 0.025, blend: float = 0.01) -> Path:
    """The pick-and-place door from ``start`` to ``end`` (m): straight up to ``height``
    above the higher of the two, straight across, straight down, each corner blended
    (module docstring). ``height`` 0 with both ends at the same height is the straight line.

    Refused (:class:`PathError`, with the reason): non-finite input, ``start`` = ``end``,
    ``height`` or ``blend`` negative, a blend longer than a segment can hold (a vertical
    segment holds one blend, the horizontal one two), ``blend`` 0 where there is a corner
    (the path would not be C2), a vertical move (across 0: the path would turn back on
    itself).
    """
    A = _checked_points([start, end], "door")[0]
    B = np.asarray(end, dtype=float)
    for name, v in (("height", height), ("blend", blend)):
        if not (math.isfinite(v) and v >= 0):
            raise PathError(f"door path: {name} must be a finite number >= 0 m, got {v}")
    top = max(A[2], B[2]) + height
    across = float(np.hypot(*(B - A)[:2]))
    if across < MIN_CHORD:
        raise PathError(f"door path: start {_fmt(A)} and end {_fmt(B)} have the same horizontal "
                        f"position: the door goes up, across and down; move straight instead")
    waypoints = [A, np.array([A[0], A[1], top]), np.array([B[0], B[1], top]), B]
    names = ["start", "top above start", "top above end", "end"]
    keep = [0] + [k for k in range(1, 4) if np.linalg.norm(waypoints[k] - waypoints[k - 1]) >= MIN_CHORD]
    W = np.array([waypoints[k] for k in keep])
    names = [names[k] for k in keep]
    seg = np.diff(W, axis=0)
    lengths = np.linalg.norm(seg, axis=1)
    dirs = seg / lengths[:, None]
    # corners: interior waypoints where the direction turns
    turn = [float(np.arccos(np.clip(dirs[k] @ dirs[k + 1], -1.0, 1.0))) for k in range(len(dirs) - 1)]
    r = [blend if a > 1e-9 else 0.0 for a in turn]
    if any(a > 1e-9 for a in turn) and not blend > 0:
        raise PathError("door path: --blend must be > 0 m: a sharp corner is not C2 (the platform "
                        "would have to stop there)")
    for k, L in enumerate(lengths):
        need = (r[k - 1] if k > 0 else 0.0) + (r[k] if k < len(r) else 0.0)
        if need > L * (1 + 1e-12):
            what = "rise" if dirs[k][2] > 0.5 else "descent" if dirs[k][2] < -0.5 else "move across"
            raise PathError(f"door path: blend {blend:g} m does not fit the {L:g} m {what} from "
                            f"{names[k]} to {names[k + 1]} (it holds {'one blend' if need == blend else 'two blends'}"
                            f"); give a blend of at most {blend * L / need:.4g} m or a larger height")
    pieces, coeffs = [], []
    for k in range(len(dirs)):
        a = W[k] + dirs[k] * (r[k - 1] if k > 0 else 0.0)
        b = W[k + 1] - dirs[k] * (r[k] if k < len(r) else 0.0)
        L = float(np.linalg.norm(b - a))
        if L > MIN_CHORD:
            c = np.zeros((6, 3))
            c[0], c[1] = a, dirs[k]
            pieces.append(L)
            coeffs.append(c)
        if k < len(r) and r[k] > 0:
            T = blend_ratio(round(turn[k], 9)) * r[k]
            c = _blend_coefficients(T, r[k], dirs[k], dirs[k + 1])
            c[0] += W[k + 1]
            pieces.append(T)
            coeffs.append(c)
    x = np.concatenate(([0.0], np.cumsum(pieces)))
    c = np.stack(coeffs, axis=1)[::-1]                        # PPoly: highest power first
    corners = tuple(W[1:-1][np.array(r) > 0].tolist()) if len(r) else ()
    return Path(PPoly(c, x, extrapolate=False), W, "door", corners)


def _fmt(v) -> str:
    return "(" + ", ".join(f"{float(c):.6g}" for c in v) + ")"
