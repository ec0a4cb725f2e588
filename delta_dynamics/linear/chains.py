"""A linear Delta with per-rail geometry (``geometry.per_arm``): Colombo & Lentini's chain with
rail i's own values (u_i = (cos phi_i, sin phi_i, 0)):

    h_i = q_i + o_i                           carriage joint height (o: carriage zero offset)
    S_i = (R_i - r) u_i + h_i e_z,            rho_i = l_i
    tool point Q = X - t e_z                  (t: tool_offset)

(R_i: rail radius, r: platform radius, shared: only R_i - r enters; l_i: rod length). Used by
the kinematics when the robot file has ``per_arm`` and by calibration.

>>> from delta_core.robot_file import load_robot
>>> p = CHAINS.parameters(load_robot("colombo2020"))
>>> float(p[CHAINS.index("rod_length", 1)])
0.215
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.common.chains import E_Z, ChainModel, unit_vectors


class LinearChains(ChainModel):
    """Linear Delta: per rail the joint (carriage zero) offset o_i, rail angle phi_i, rail radius
    R_i and rod length l_i; shared the platform radius r and the tool offset t."""

    kind = "linear"
    per_chain = ("joint_offset", "rail_angle", "rail_radius", "rod_length")
    shared = ("platform_radius", "tool_offset")
    units = {"joint_offset": "m", "rail_angle": "rad", "rail_radius": "m", "rod_length": "m",
             "platform_radius": "m", "tool_offset": "m"}
    chain_word = "rod pair"
    angle_field = "rail_angles_deg"
    shared_fields = {"rail_radius": "rail_radius", "rod_length": "rod_length"}

    def _parts(self, p):
        r = float(np.asarray(p, dtype=float)[self.index("platform_radius")])
        return self.block(p, "joint_offset"), self.block(p, "rail_angle"), self.block(p, "rail_radius"), \
            self.block(p, "rod_length"), r

    def spheres(self, p, q):
        """(S, rho): sphere centres S_i = (R_i - r) u_i + h_i e_z (N, 3, 3) and radii rho_i = l_i (3,), m, for
        carriage positions q (N, 3), m."""
        o, phi, R, l, r = self._parts(p)
        h = np.asarray(q, dtype=float) + o
        u, _ = unit_vectors(phi)
        S = ((R - r)[:, None] * u)[None] + h[..., None] * E_Z
        return S, l.copy()

    def carriages(self, p, q):
        """Carriage joints A_i = R_i u_i + h_i e_z, (N, 3, 3)."""
        o, phi, R, l, r = self._parts(p)
        u, _ = unit_vectors(phi)
        return (R[:, None] * u)[None] + (np.asarray(q, dtype=float) + o)[..., None] * E_Z

    def sphere_derivatives(self, p, q):
        """(dS_dp, drho_dp, dS_dq): (N, 3, 3, P), (3, P) and (N, 3, 3); dS_i/dq_i = e_z."""
        o, phi, R, l, r = self._parts(p)
        n = np.atleast_2d(q).shape[0]
        u, v = unit_vectors(phi)
        dS = np.zeros((n, 3, 3, len(self.names)))
        drho = np.zeros((3, len(self.names)))
        for i in range(3):
            dS[:, i, :, self.index("joint_offset", i)] = E_Z
            dS[:, i, :, self.index("rail_angle", i)] = (R[i] - r) * v[i]
            dS[:, i, :, self.index("rail_radius", i)] = u[i]
            dS[:, i, :, self.index("platform_radius")] = -u[i]
            drho[i, self.index("rod_length", i)] = 1.0
        dS_dq = np.broadcast_to(E_Z, (n, 3, 3)).copy()
        return dS, drho, dS_dq

    def inverse(self, p, X):
        """Closed form per rail (Colombo & Lentini eq. 6 with rail i's values):
        h_i = z + sqrt(l_i^2 - |(x, y) - (R_i - r) u_i|^2) (the carriage above the platform),
        q_i = h_i - o_i."""
        o, phi, R, l, r = self._parts(p)
        X = np.atleast_2d(np.asarray(X, dtype=float))
        cx, cy = (R - r) * np.cos(phi), (R - r) * np.sin(phi)
        d2 = l * l - (X[:, 0:1] - cx) ** 2 - (X[:, 1:2] - cy) ** 2
        with np.errstate(invalid="ignore"):
            h = X[:, 2:3] + np.sqrt(np.where(d2 > 0.0, d2, np.nan))
        return h - o


#: The linear kind's per-rail geometry.
CHAINS = LinearChains()
