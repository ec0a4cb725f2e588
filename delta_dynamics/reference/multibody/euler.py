"""Euler parameters (unit quaternions) for the multibody model (Elshami et al. eqs. 1-2, 8;
Shabana, *Computational Dynamics*, ch. 7).

A body's orientation is theta = (e0, e1, e2, e3) with e0^2 + e1^2 + e2^2 + e3^2 = 1; its
rotation matrix (body frame -> world) is

    A = (2 e0^2 - 1) I + 2 (e e^T + e0 e~),      e = (e1, e2, e3)                    (eq. 2)

and its angular velocity is omega = G theta_dot (world frame) = A omega_bar, with
omega_bar = G_bar theta_dot (body frame) and

    G     = 2 [-e,  e~ + e0 I],      G_bar = 2 [-e, -e~ + e0 I]                       (eq. 8)

(e~ is the skew matrix of e: e~ x = e cross x). The printed eq. (8) is G_bar, whose rows are
2 (-e1, e0, e3, -e2), 2 (-e2, -e3, e0, e1), 2 (-e3, e2, -e1, e0). Every function takes one
quaternion (4,) or a stack (..., 4).

>>> import numpy as np
>>> th = from_axis_angle([0.0, 0.0, 1.0], np.pi / 2)
>>> rotation(th).round(12).tolist()
[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
>>> bool(np.allclose(from_rotation(rotation(th)), th))
True
"""
from __future__ import annotations

import numpy as np


def rotation(theta) -> np.ndarray:
    """A(theta) of eq. (2), shape (..., 3, 3); theta need not be exactly normalised (it is
    used as theta / |theta|)."""
    th = np.asarray(theta, dtype=float)
    th = th / np.linalg.norm(th, axis=-1, keepdims=True)
    e0, e1, e2, e3 = np.moveaxis(th, -1, 0)
    A = np.empty(th.shape[:-1] + (3, 3))
    A[..., 0, 0] = 1.0 - 2.0 * (e2 * e2 + e3 * e3)
    A[..., 0, 1] = 2.0 * (e1 * e2 - e0 * e3)
    A[..., 0, 2] = 2.0 * (e1 * e3 + e0 * e2)
    A[..., 1, 0] = 2.0 * (e1 * e2 + e0 * e3)
    A[..., 1, 1] = 1.0 - 2.0 * (e1 * e1 + e3 * e3)
    A[..., 1, 2] = 2.0 * (e2 * e3 - e0 * e1)
    A[..., 2, 0] = 2.0 * (e1 * e3 - e0 * e2)
    A[..., 2, 1] = 2.0 * (e2 * e3 + e0 * e1)
    A[..., 2, 2] = 1.0 - 2.0 * (e1 * e1 + e2 * e2)
    return A


def _quadratic_map() -> np.ndarray:
    """K (16, 9) with A.flat = (theta theta^T).flat @ K for a unit theta (eq. 2 written as a
    homogeneous quadratic form: A_00 = e0^2 + e1^2 - e2^2 - e3^2, A_01 = 2 (e1 e2 - e0 e3), ...)."""
    K = np.zeros((4, 4, 9))
    terms = {0: [(0, 0, 1), (1, 1, 1), (2, 2, -1), (3, 3, -1)],
             1: [(1, 2, 2), (0, 3, -2)], 2: [(1, 3, 2), (0, 2, 2)],
             3: [(1, 2, 2), (0, 3, 2)], 4: [(0, 0, 1), (1, 1, -1), (2, 2, 1), (3, 3, -1)],
             5: [(2, 3, 2), (0, 1, -2)], 6: [(1, 3, 2), (0, 2, -2)], 7: [(2, 3, 2), (0, 1, 2)],
             8: [(0, 0, 1), (1, 1, -1), (2, 2, -1), (3, 3, 1)]}
    for k, lst in terms.items():
        for a, b, c in lst:
            K[a, b, k] += c
    return K.reshape(16, 9)


_K = _quadratic_map()


def rotation_unit(theta) -> np.ndarray:
    """A(theta) for unit Euler parameters (nb, 4) -> (nb, 3, 3), in two numpy calls (the
    fast path of the simulator; :func:`rotation` normalises first)."""
    th = np.asarray(theta)
    return ((th[:, :, None] * th[:, None, :]).reshape(-1, 16) @ _K).reshape(-1, 3, 3)


def g_matrix(theta, body: bool = False) -> np.ndarray:
    """G (world, omega = G theta_dot) or, with ``body``, G_bar of eq. (8); shape (..., 3, 4)."""
    e0, e1, e2, e3 = np.moveaxis(np.asarray(theta, dtype=float), -1, 0)
    s = -1.0 if body else 1.0
    G = np.stack([np.stack([-e1, e0, -s * e3, s * e2], -1),
                  np.stack([-e2, s * e3, e0, -s * e1], -1),
                  np.stack([-e3, -s * e2, s * e1, e0], -1)], -2)
    return 2.0 * G


def multiply(p, q) -> np.ndarray:
    """Quaternion product p * q (A(p q) = A(p) A(q)), shape (..., 4)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p0, p1, p2, p3 = np.moveaxis(p, -1, 0)
    q0, q1, q2, q3 = np.moveaxis(q, -1, 0)
    return np.stack([p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
                     p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
                     p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
                     p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0], -1)


def from_axis_angle(axis, angle) -> np.ndarray:
    """The Euler parameters of a rotation by ``angle`` (rad) about the unit vector ``axis``."""
    axis = np.asarray(axis, dtype=float)
    half = 0.5 * np.asarray(angle, dtype=float)
    return np.concatenate([np.cos(half)[..., None], np.sin(half)[..., None] * axis], -1)


def rotate_by(theta, phi) -> np.ndarray:
    """theta (n, 4) turned by the world rotation vectors phi (n, 3) (rad; axis phi/|phi|,
    angle |phi|): exp(phi) * theta, normalised."""
    phi = np.asarray(phi, dtype=float)
    ang = np.sqrt((phi * phi).sum(1))
    half = 0.5 * ang
    dq = np.empty((len(phi), 4))
    dq[:, 0] = np.cos(half)
    # sin(|phi|/2) / |phi|, its series below 1e-4 rad (error < 1e-18)
    k = np.where(ang > 1e-4, np.sin(half) / np.maximum(ang, 1e-4), 0.5 - ang * ang / 48.0)
    dq[:, 1:] = k[:, None] * phi
    out = (dq[:, :, None] * np.asarray(theta)[:, None, :]).reshape(-1, 16) @ _KQ
    return out / np.sqrt((out * out).sum(1))[:, None]


def _product_map() -> np.ndarray:
    """KQ (16, 4) with (p q).flat-product: (p q^T).flat @ KQ = p * q."""
    K = np.zeros((4, 4, 4))
    sign = {(0, 0): (0, 1), (1, 1): (0, -1), (2, 2): (0, -1), (3, 3): (0, -1),
            (0, 1): (1, 1), (1, 0): (1, 1), (2, 3): (1, 1), (3, 2): (1, -1),
            (0, 2): (2, 1), (1, 3): (2, -1), (2, 0): (2, 1), (3, 1): (2, 1),
            (0, 3): (3, 1), (1, 2): (3, 1), (2, 1): (3, -1), (3, 0): (3, 1)}
    for (a, b), (k, c) in sign.items():
        K[a, b, k] = c
    return K.reshape(16, 4)


_KQ = _product_map()


def from_rotation(A) -> np.ndarray:
    """Euler parameters (e0 >= 0) of rotation matrices A (..., 3, 3) (Shepperd's method)."""
    A = np.asarray(A, dtype=float)
    flat = A.reshape(-1, 3, 3)
    out = np.empty((len(flat), 4))
    for k, R in enumerate(flat):
        tr = R[0, 0] + R[1, 1] + R[2, 2]
        cand = (tr, R[0, 0], R[1, 1], R[2, 2])
        i = int(np.argmax(cand))
        if i == 0:
            s = 2.0 * np.sqrt(1.0 + tr)
            q = (0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s)
        elif i == 1:
            s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
            q = ((R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s)
        elif i == 2:
            s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
            q = ((R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s)
        else:
            s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
            q = ((R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s)
        q = np.asarray(q)
        out[k] = q if q[0] >= 0 else -q
    out /= np.linalg.norm(out, axis=-1, keepdims=True)
    return out.reshape(A.shape[:-2] + (4,))


def skew(v) -> np.ndarray:
    """v~ with v~ x = v cross x, shape (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    x, y, z = np.moveaxis(v, -1, 0)
    o = np.zeros_like(x)
    return np.stack([np.stack([o, -z, y], -1), np.stack([z, o, -x], -1), np.stack([-y, x, o], -1)], -2)
