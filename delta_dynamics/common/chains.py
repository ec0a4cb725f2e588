"""Per-chain geometry: a Delta whose three chains each have their own lengths, angles and
joint offset (the robot file's ``geometry.per_arm``), for kinematics and calibration.

Both kinds close each chain the same way (``docs/calibration.md``): the platform centre X is
at distance rho_i (forearm or rod length) from a point S_i, the chain's *sphere centre*,
which depends on the chain's joint position q_i and geometry only. The kind says how
(:class:`ChainModel` subclasses in ``delta_dynamics.<kind>.chains``). Here, for any kind:

Forward kinematics (trilateration of three spheres of different radii). With
a = S_2 - S_1, b = S_3 - S_1, n = a x b and X = S_1 + alpha a + beta b + t n, subtracting
sphere 1's equation from spheres 2 and 3 gives

    alpha a.a + beta a.b = (a.a + rho_1^2 - rho_2^2) / 2
    alpha a.b + beta b.b = (b.b + rho_1^2 - rho_3^2) / 2

and sphere 1 then t^2 |n|^2 = rho_1^2 - |alpha a + beta b|^2; of the two solutions the one
with the lower z is the platform (below the elbows or carriages).

Derivatives, from F_i = |X - S_i|^2 - rho_i^2 = 0 with w_i = X - S_i (W: rows w_i^T):

    dX/dp = W^-1 [w_i . dS_i/dp + rho_i drho_i/dp]_i           (the calibration Jacobian)
    dX/dq = W^-1 diag(w_i . dS_i/dq_i)                          (the inverse of q_dot = J X_dot)

The parameters are a flat vector ``p`` in SI units (m, rad), named by :attr:`ChainModel.names`:
for each per-chain quantity chains 1, 2, 3 (``base_radius_2``: chain 2's base radius), then
the shared ones.
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.common.errors import SingularityError, UnreachableError, format_point

E_Z = np.array([0.0, 0.0, 1.0])


class ChainModel:
    """The per-chain geometry of one kind of Delta as a parameter vector.

    Subclasses set ``kind``, ``per_chain`` (quantities with one value per chain; the first is
    ``joint_offset``, the second the chain's angle about z), ``shared``, ``units`` (``"m"`` or
    ``"rad"`` per quantity), ``chain_word``, ``angle_field`` (the robot file's angle list) and
    ``shared_fields`` (per-chain quantity -> shared ``geometry`` field), and implement
    :meth:`spheres`, :meth:`sphere_derivatives` and :meth:`inverse`."""

    kind = ""
    per_chain: tuple = ()
    shared: tuple = ()
    units: dict = {}
    chain_word = "chain"
    angle_field = ""
    shared_fields: dict = {}

    @property
    def names(self) -> tuple:
        """Every parameter name, in the order of the vector ``p``."""
        return tuple(f"{n}_{i + 1}" for n in self.per_chain for i in range(3)) + self.shared

    def index(self, name: str, chain: int | None = None) -> int:
        """Position of parameter ``name`` (of chain 0-2 for a per-chain quantity) in ``p``."""
        if chain is None:
            return len(self.per_chain) * 3 + self.shared.index(name)
        return self.per_chain.index(name) * 3 + chain

    def block(self, p, name: str) -> np.ndarray:
        """The three values of per-chain quantity ``name`` (shape (3,))."""
        k = self.per_chain.index(name) * 3
        return np.asarray(p, dtype=float)[k:k + 3]

    def unit(self, name: str) -> str:
        """The SI unit of a parameter (``"m"`` or ``"rad"``)."""
        return self.units[name.rsplit("_", 1)[0] if name[-1].isdigit() else name]

    # -- robot file <-> parameter vector ---------------------------------------------------
    def parameters(self, robot) -> np.ndarray:
        """The vector ``p`` of a loaded robot file's geometry (per-arm values where
        ``geometry.per_arm`` gives them, else the shared fields; the angles from the file's
        angle list)."""
        g = robot.geometry
        p = np.zeros(len(self.names))
        for i, a in enumerate(getattr(g, self.angle_field)):
            p[self.index(self.per_chain[1], i)] = math.radians(float(a))
        for i in range(3):
            arm = g.arm(i)
            p[self.index("joint_offset", i)] = arm["joint_offset"]
            for name in self.shared_fields:
                p[self.index(name, i)] = arm[name]
        for name in self.shared:
            p[self.index(name)] = float(getattr(g, name))
        return p

    def geometry_section(self, robot, p) -> dict:
        """``robot``'s ``geometry`` mapping with the geometry of ``p``: the angle list and the
        shared quantities from ``p``, ``per_arm`` (every per-chain quantity but the angle, for
        each chain) unless every chain has the shared value and no joint offset."""
        g = dict(robot.geometry.to_dict())
        g.pop("per_arm", None)
        g[self.angle_field] = [_clean(math.degrees(a)) for a in self.block(p, self.per_chain[1])]
        for name in self.shared:
            g[name] = _clean(float(p[self.index(name)]))
        arms = [{} for _ in range(3)]
        differs = False
        for i in range(3):
            off = _clean(float(self.block(p, "joint_offset")[i]))
            arms[i]["joint_offset"] = off
            differs |= off != 0.0
            for name, field in self.shared_fields.items():
                v = _clean(float(self.block(p, name)[i]))
                arms[i][name] = v
                differs |= v != g[field]
        if differs:
            g["per_arm"] = arms
        return g

    # -- the kind's geometry ----------------------------------------------------------------
    def spheres(self, p, q):
        """(S, rho): sphere centres (N, 3, 3) [sample, chain, xyz] and radii (3,) for joint
        positions q (N, 3)."""
        raise NotImplementedError

    def sphere_derivatives(self, p, q):
        """(dS_dp, drho_dp, dS_dq): (N, 3, 3, P), (3, P) and (N, 3, 3) (dS_i/dq_i)."""
        raise NotImplementedError

    def inverse(self, p, X):
        """Joint positions (N, 3) putting the platform centre at X (N, 3); NaN where a chain
        cannot reach."""
        raise NotImplementedError

    def tool_offset(self, p) -> float:
        """The tool point's distance below the platform centre (m)."""
        return float(np.asarray(p, dtype=float)[self.index("tool_offset")]) if "tool_offset" in self.shared else 0.0

    def tool_offset_derivative(self) -> np.ndarray:
        """d tool_offset / dp (P,)."""
        d = np.zeros(len(self.names))
        if "tool_offset" in self.shared:
            d[self.index("tool_offset")] = 1.0
        return d


def _clean(v: float) -> float:
    """A float without representation noise beyond 12 significant digits (readable files)."""
    return float(f"{v:.12g}")


def unit_vectors(phi):
    """u_i = (cos phi_i, sin phi_i, 0) and v_i = du_i/dphi_i, each (3, 3) [chain, xyz]."""
    c, s = np.cos(phi), np.sin(phi)
    return np.stack((c, s, np.zeros(3)), axis=-1), np.stack((-s, c, np.zeros(3)), axis=-1)


def trilaterate(S, rho):
    """The lower intersection of three spheres: centres S (N, 3, 3), radii rho (3,).

    Returns ``(X, code)``: X (N, 3) (NaN where code != 0), code 0 (found), 1 (centres
    collinear: singular) or 2 (the spheres do not meet).
    """
    S = np.asarray(S, dtype=float)
    rho = np.asarray(rho, dtype=float)
    s1 = S[:, 0]
    a = S[:, 1] - s1
    b = S[:, 2] - s1
    n = np.cross(a, b)
    aa = np.einsum("ij,ij->i", a, a)
    bb = np.einsum("ij,ij->i", b, b)
    ab = np.einsum("ij,ij->i", a, b)
    dd = np.einsum("ij,ij->i", n, n)
    r2 = rho * rho
    code = np.zeros(len(S), int)
    code[(dd <= 1e-12 * aa * bb) | (dd <= (1e-12 * r2.max()) ** 2)] = 1
    ka = 0.5 * (aa + r2[0] - r2[1])
    kb = 0.5 * (bb + r2[0] - r2[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = (ka * bb - kb * ab) / dd
        beta = (kb * aa - ka * ab) / dd
        e = alpha[:, None] * a + beta[:, None] * b
        h = (r2[0] - np.einsum("ij,ij->i", e, e)) / dd
        code[(code == 0) & ~(h >= 0.0)] = 2
        t = -np.sqrt(np.where(code == 0, h, np.nan)) * np.where(n[:, 2] >= 0.0, 1.0, -1.0)
        X = s1 + e + t[:, None] * n
    X[code != 0] = np.nan
    return X, code


def forward(model: ChainModel, p, q):
    """``(X, code)``: platform centres (N, 3) for joint positions q (N, 3) of the robot with
    parameters ``p`` (:func:`trilaterate`'s codes)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    S, rho = model.spheres(p, q)
    return trilaterate(S, rho)


def derivatives(model: ChainModel, p, q, X):
    """``(dX_dp, dX_dq)``: the calibration Jacobian of the platform centre (N, 3, P) and
    dX/dq (N, 3, 3) at joint positions q (N, 3) and platform centres X (N, 3)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    S, rho = model.spheres(p, q)
    dS, drho, dS_dq = model.sphere_derivatives(p, q)
    W = X[:, None, :] - S                                           # (N, 3, 3)
    rhs = np.einsum("nij,nijp->nip", W, dS) + (rho[:, None] * drho)[None]
    dX_dp = np.linalg.solve(W, rhs)
    diag = np.einsum("nij,nij->ni", W, dS_dq)
    dX_dq = np.linalg.solve(W, diag[:, :, None] * np.eye(3))
    return dX_dp, dX_dq


# -- the kinematics of a model with per-arm geometry (m.chains, m.arms) ---------------------
def _shape(v, what):
    arr = np.asarray(v, dtype=float)
    single = arr.shape == (3,)
    if not single and (arr.ndim != 2 or arr.shape[1] != 3):
        raise ValueError(f"{what} must have shape (3,) or (N, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} must be finite, got {arr.tolist() if single else 'NaN/inf'}")
    return np.atleast_2d(arr), single


def inverse_kinematics(m, X):
    """Joint positions (3,) or (N, 3) for platform centres X of model ``m`` with per-arm
    geometry (``m.chains``, ``m.arms``); :class:`UnreachableError` names the first sample a
    chain cannot reach."""
    X2, single = _shape(X, "platform position")
    q = m.chains.inverse(m.arms, X2)
    bad = ~np.isfinite(q)
    if bad.any():
        k, i = (int(v) for v in np.argwhere(bad)[0])
        raise UnreachableError(
            f"platform position {format_point(X2[k])} m is unreachable" + ("" if single else f" (sample {k})")
            + f": {m.chains.chain_word} {i + 1} cannot connect to the platform", index=k, point=X2[k].tolist())
    return q[0] if single else q


def forward_kinematics(m, q):
    """Platform centre (3,) or (N, 3) for joint positions q of model ``m`` with per-arm
    geometry; :class:`SingularityError` / :class:`UnreachableError` name the first bad sample."""
    q2, single = _shape(q, "joint positions")
    X, code = forward(m.chains, m.arms, q2)
    if code.any():
        k = int(np.flatnonzero(code)[0])
        where = "" if single else f" (sample {k})"
        if code[k] == 1:
            raise SingularityError(f"joint positions {format_point(q2[k])} are singular: the three sphere "
                                   f"centres are collinear{where}", index=k, point=q2[k].tolist())
        raise UnreachableError(f"joint positions {format_point(q2[k])} are unreachable: the "
                               f"{m.chains.chain_word}s cannot meet at one platform position{where}",
                               index=k, point=q2[k].tolist())
    return X[0] if single else X


def jacobian(m, X):
    """J(X) with q_dot = J X_dot, (3, 3) or (N, 3, 3), for a model with per-arm geometry:
    the inverse of dX/dq (module docstring)."""
    X2, single = _shape(X, "platform position")
    q = inverse_kinematics(m, X2)
    _, dX_dq = derivatives(m.chains, m.arms, q, X2)
    J = np.linalg.inv(dX_dq)
    return J[0] if single else J
