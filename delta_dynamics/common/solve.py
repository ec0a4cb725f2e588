"""Small numerical pieces both robot kinds' dynamics use: the platform state's inputs, the
external platform force, the closed-form solve of a symmetric 3x3 system, the matrix from its
six entries, and the chunking of long batches.

>>> solve_sym3((2.0, 2.0, 2.0, 0.0, 0.0, 0.0), 1.0, 2.0, 3.0)
(0.5, 1.0, 1.5)
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.common.backend import split3

#: Samples per block of a long batch: blocks that stay in cache run ~2x faster than
#: whole-array passes.
CHUNK = 4096


def split_state(X, Xd, Xdd):
    """``(x, y, z, vx, vy, vz, ax, ay, az, xp, single)`` of a platform state (m, m/s, m/s^2):
    floats for one sample, columns for N; all three single samples or all (N, 3) with the same
    N, else ValueError."""
    x, y, z, xp, single = split3(X, "platform position")
    vx, vy, vz, _, s2 = split3(Xd, "platform velocity")
    ax, ay, az, _, s3 = split3(Xdd, "platform acceleration")
    if not single == s2 == s3 or (not single and not len(x) == len(vx) == len(ax)):
        raise ValueError("position, velocity and acceleration must all be single samples "
                         "or all (N, 3) with the same N")
    return x, y, z, vx, vy, vz, ax, ay, az, xp, single


def components(a, single: bool, name: str, joints: str = "joint positions"):
    """The three components of ``a`` (shape (3,) or (N, 3)), which must have as many samples
    as the ``joints`` it goes with (``single``)."""
    x, y, z, _, s = split3(a, name)
    if s != single:
        raise ValueError(f"{name} must have the same number of samples as the {joints}")
    return x, y, z


def platform_force(fp, n_single):
    """The external platform force ``F_P`` (N, base frame): None, a 3-tuple of floats for one
    force, or three columns for N samples; ValueError for a wrong shape or a non-finite value."""
    if fp is None:
        return None
    f = np.asarray(fp, dtype=float)
    if f.shape != (3,) and (n_single or f.ndim != 2 or f.shape[1] != 3):
        raise ValueError(f"external platform force must have shape (3,) or (N, 3), got {f.shape}")
    if not np.isfinite(f).all():
        raise ValueError("external platform force must be finite")
    if f.shape == (3,):
        return tuple(float(v) for v in f)
    return f[:, 0], f[:, 1], f[:, 2]


def chunked(fn, m, X, Xd, Xdd, F_P, *rest):
    """``fn(m, X, Xd, Xdd, F_P, *rest)`` over blocks of :data:`CHUNK` samples, concatenated."""
    X, Xd, Xdd = (np.asarray(a, dtype=float) for a in (X, Xd, Xdd))
    return np.concatenate([
        fn(m, X[k:k + CHUNK], Xd[k:k + CHUNK], Xdd[k:k + CHUNK],
           F_P if F_P is None or np.ndim(F_P) == 1 else np.asarray(F_P)[k:k + CHUNK], *rest)
        for k in range(0, len(X), CHUNK)])


def solve_sym3(Mx, bx, by, bz):
    """x with M x = b for the symmetric M of entries ``Mx`` = (xx, yy, zz, xy, xz, yz), by
    cofactors (floats or arrays, component-wise)."""
    xx, yy, zz, xy, xz, yz = Mx
    c00 = yy * zz - yz * yz
    c01 = xz * yz - xy * zz
    c02 = xy * yz - xz * yy
    c11 = xx * zz - xz * xz
    c12 = xy * xz - xx * yz
    c22 = xx * yy - xy * xy
    det = xx * c00 + xy * c01 + xz * c02
    return ((c00 * bx + c01 * by + c02 * bz) / det,
            (c01 * bx + c11 * by + c12 * bz) / det,
            (c02 * bx + c12 * by + c22 * bz) / det)


def congruence_sym3(Mx, w):
    """The symmetric matrix W^T M W as three rows of three floats (one sample), M the symmetric
    matrix of entries ``Mx`` = (xx, yy, zz, xy, xz, yz) and W the matrix of columns ``w`` (three
    3-tuples): entry (i, j) is w_i . M w_j. With W = J^-1 this is the joint-space mass matrix
    J^-T M J^-1 of a platform-coordinate mass matrix M.

    >>> congruence_sym3((2.0, 2.0, 2.0, 0.0, 0.0, 0.0), ((1.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, 0.0, 1.0)))
    ((2.0, 0.0, 0.0), (0.0, 8.0, 0.0), (0.0, 0.0, 2.0))
    """
    xx, yy, zz, xy, xz, yz = Mx
    mw = [(xx * a + xy * b + xz * c, xy * a + yy * b + yz * c, xz * a + yz * b + zz * c) for a, b, c in w]
    (a0, b0, c0), (a1, b1, c1), (a2, b2, c2) = w
    (p0, q0, r0), (p1, q1, r1), (p2, q2, r2) = mw
    m01 = a0 * p1 + b0 * q1 + c0 * r1
    m02 = a0 * p2 + b0 * q2 + c0 * r2
    m12 = a1 * p2 + b1 * q2 + c1 * r2
    return ((a0 * p0 + b0 * q0 + c0 * r0, m01, m02),
            (m01, a1 * p1 + b1 * q1 + c1 * r1, m12),
            (m02, m12, a2 * p2 + b2 * q2 + c2 * r2))


def sym3_matrix(Mx):
    """The symmetric matrix of entries ``Mx`` = (xx, yy, zz, xy, xz, yz): shape (3, 3), or
    (N, 3, 3) when the entries are columns."""
    xx, yy, zz, xy, xz, yz = Mx
    return np.stack([np.stack(np.broadcast_arrays(xx, xy, xz), -1),
                     np.stack(np.broadcast_arrays(xy, yy, yz), -1),
                     np.stack(np.broadcast_arrays(xz, yz, zz), -1)], -2)
