"""A rotary Delta with per-arm geometry (``geometry.per_arm``): Asadi & Heydari's chain with
arm i's own values (u_i = (cos phi_i, sin phi_i, 0)):

    theta_i = q_i + o_i                       arm angle (q: the joint position, o: joint offset)
    S_i = (R_i - r_i + L_i cos theta_i) u_i - L_i sin theta_i e_z,   rho_i = l_i

(R: base radius, r: platform radius, L: upper-arm length, l: forearm length; only R_i - r_i
enters). Used by the kinematics when the robot file has ``per_arm`` and by calibration.

>>> import numpy as np
>>> from delta_core.robot_file import load_robot
>>> p = CHAINS.parameters(load_robot("nt_robot"))
>>> CHAINS.names[:4]
('joint_offset_1', 'joint_offset_2', 'joint_offset_3', 'chain_angle_1')
>>> S, rho = CHAINS.spheres(p, np.zeros((1, 3)))
>>> rho.tolist()
[0.8, 0.8, 0.8]
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.common.chains import E_Z, ChainModel, unit_vectors


class RotaryChains(ChainModel):
    """Rotary Delta: per arm the joint offset o_i, chain angle phi_i, base radius R_i, upper-arm
    length L_i, forearm length l_i and platform radius r_i."""

    kind = "rotary"
    per_chain = ("joint_offset", "chain_angle", "base_radius", "upper_arm_length", "forearm_length",
                 "platform_radius")
    shared = ()
    units = {"joint_offset": "rad", "chain_angle": "rad", "base_radius": "m", "upper_arm_length": "m",
             "forearm_length": "m", "platform_radius": "m"}
    chain_word = "arm"
    angle_field = "chain_angles_deg"
    shared_fields = {"base_radius": "base_radius", "upper_arm_length": "upper_arm_length",
                     "forearm_length": "forearm_length", "platform_radius": "platform_radius"}

    def _parts(self, p):
        return tuple(self.block(p, n) for n in self.per_chain)

    def spheres(self, p, q):
        """(S, rho): sphere centres S_i = (R_i - r_i + L_i cos theta_i) u_i - L_i sin theta_i e_z (N, 3, 3) and radii
        rho_i = l_i (3,), m, for joint positions q (N, 3), rad."""
        o, phi, R, L, l, r = self._parts(p)
        th = np.asarray(q, dtype=float) + o                        # (N, 3)
        u, _ = unit_vectors(phi)
        rad = R - r + L * np.cos(th)
        S = rad[..., None] * u - (L * np.sin(th))[..., None] * E_Z
        return S, l.copy()

    def elbows(self, p, q):
        """Elbow points C_i = (R_i + L_i cos theta_i) u_i - L_i sin theta_i e_z, (N, 3, 3)."""
        o, phi, R, L, l, r = self._parts(p)
        th = np.asarray(q, dtype=float) + o
        u, _ = unit_vectors(phi)
        return (R + L * np.cos(th))[..., None] * u - (L * np.sin(th))[..., None] * E_Z

    def sphere_derivatives(self, p, q):
        """(dS_dp, drho_dp, dS_dq): (N, 3, 3, P), (3, P) and (N, 3, 3);
        dS_i/dq_i = -L_i sin theta_i u_i - L_i cos theta_i e_z."""
        o, phi, R, L, l, r = self._parts(p)
        th = np.asarray(q, dtype=float) + o
        n = th.shape[0]
        u, v = unit_vectors(phi)
        c, s = np.cos(th), np.sin(th)
        dS_dq = (-L * s)[..., None] * u - (L * c)[..., None] * E_Z               # (N, 3, 3)
        dS = np.zeros((n, 3, 3, len(self.names)))
        drho = np.zeros((3, len(self.names)))
        for i in range(3):
            dS[:, i, :, self.index("joint_offset", i)] = dS_dq[:, i]
            dS[:, i, :, self.index("chain_angle", i)] = (R[i] - r[i] + L[i] * c[:, i])[:, None] * v[i]
            dS[:, i, :, self.index("base_radius", i)] = u[i]
            dS[:, i, :, self.index("platform_radius", i)] = -u[i]
            dS[:, i, :, self.index("upper_arm_length", i)] = c[:, i, None] * u[i] - s[:, i, None] * E_Z
            drho[i, self.index("forearm_length", i)] = 1.0
        return dS, drho, dS_dq

    def inverse(self, p, X):
        """Closed form per arm (Asadi & Heydari eq. 4 with arm i's values): in the arm's plane,
        px cos theta - pz sin theta = k with px = u_i . X - (R_i - r_i), k = (|p|^2 + L_i^2 - l_i^2)
        / (2 L_i), so theta = -atan2(pz, px) - acos(k / sqrt(px^2 + pz^2)) (elbow out), q = theta - o."""
        o, phi, R, L, l, r = self._parts(p)
        X = np.atleast_2d(np.asarray(X, dtype=float))
        c, s = np.cos(phi), np.sin(phi)
        x, y, z = X[:, 0:1], X[:, 1:2], X[:, 2:3]
        px = c * x + s * y - (R - r)
        py = c * y - s * x
        k = (px * px + py * py + z * z + L * L - l * l) / (2.0 * L)
        ratio = k / np.sqrt(px * px + z * z)
        with np.errstate(invalid="ignore"):
            th = -np.arctan2(z, px) - np.arccos(np.where(np.abs(ratio) <= 1.0, ratio, np.nan))
        th = th + 2.0 * math.pi * (th <= -math.pi) - 2.0 * math.pi * (th > math.pi)
        return th - o


#: The rotary kind's per-arm geometry.
CHAINS = RotaryChains()
