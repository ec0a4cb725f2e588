"""The multibody model of a rotary Delta robot (Elshami et al., Sec. 3, Table 1): its bodies,
joints and constraint equations, built from :func:`delta_dynamics.reference.bodies.body_set`.

Bodies (each with generalised coordinates q^i = [R^i, theta^i], the position of its centre
of mass and its Euler parameters, eqs. 1-2): optionally the fixed base (welded to the ground
by a rigid joint, eq. 3), then per chain i the upper arm and one forearm body, and the
platform. Joints (Table 1, eqs. 3-5), per chain i:

* shoulder: revolute, arm i - base (or ground), axis e_i (the motor axis, +y' of the chain);
* elbow: universal, arm i - forearm i, axes e_i (on the arm) and n_i (on the forearm,
  perpendicular to the forearm and to e_i);
* platform joint: universal, forearm i - platform, axes n_i (forearm) and e_i (platform).

A revolute joint is a spherical joint (3 equations: the two bodies' copies of the joint
point coincide, eq. 5) plus two perpendicularity equations (A^i a^i) . (A^j b^j) = 0 that
keep the axes parallel (eq. 4, whose printed orientation rows are garbled: these are
Shabana's); a universal joint is a spherical joint plus one perpendicularity equation (the
cross of the U-joint: axis a on one body stays perpendicular to axis b on the other); the
rigid joint (eq. 3) a spherical joint plus three. With the Euler-parameter normalisation
theta^T theta = 1 of every body (the C6 row of eqs. 3-4) the constraints are independent
and leave exactly the three degrees of freedom of the robot.

Why one forearm body with two universal joints (R-U-U) rather than two bars with ball
joints: the two bars of a parallelogram stay parallel and are offset by a constant vector
(s e_i), so together they move like one body of twice a bar's mass and inertia (no
spacing term; the blocks at both ends turn about e_i with it); Staicu's R-R-Pa-R leg
(block hinged on the arm about e_i, bars hinged on the block about n_i) is exactly this
universal joint. With a translating platform the bodies' motion is that of the real
parallelogram, without its redundant loop constraints (a 4R parallelogram is
overconstrained in space, so its bar forces are statically indeterminate) nor the bars' free
spins of a ball-joint model. Consequence for the reactions: the force at the platform joint
is the resultant of both bars' forces, and each universal joint carries a moment about
e_i x n_i that stands for the couple of the two bars' forces.

Masses (:func:`bodies.body_set`): the rotor's reflected inertia is added to the arm about the
motor axis; the elbow and platform blocks are lumped as point masses at the elbow (on the
arm) and at the platform joints (on the platform); their inertia about their own axis
(they turn about e_i with the forearm) is left out (Elshami's rods: 1.5e-5 kg m^2).

>>> s = MultibodySystem.from_robot("nt_robot")
>>> s.body_names
('arm_1', 'arm_2', 'arm_3', 'forearm_1', 'forearm_2', 'forearm_3', 'platform')
>>> s.n_constraints, 6 * s.n_bodies - s.n_constraints
(39, 3)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import RobotParameters, load_robot
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.bodies import BodySet, RigidBody, body_set, require_rotary

EZ = np.array([0.0, 0.0, 1.0])
GROUND = -1


@dataclass(frozen=True)
class Joint:
    """A joint for the reaction forces: ``kind`` (revolute, universal, rigid), bodies
    ``i``, ``j`` (-1 = ground), the index of its spherical part among the spheres and the
    indices of its perpendicularity equations among the dots."""

    name: str
    kind: str
    i: int
    j: int
    sphere: int
    dots: tuple


class MultibodySystem:
    """The static multibody model (like Pinocchio's ``Model``): bodies, joints, constants.

    The fixed base is a body (welded to the ground, eq. 3) when ``base`` or the body set
    has one and ``include_base``; its only use is the ground's reaction on it.
    Arrays over bodies: ``mass`` (nb,), ``inertia`` (nb, 3, 3) about the COM in the body
    frame. Spheres (nS): body ``s_i``, ``s_j`` (the ground is index ``nb`` in the state
    arrays), points ``s_ui``, ``s_uj`` in the bodies' frames (relative to their COM).
    Dots (nD): vectors ``d_ai`` on body ``d_i`` and ``d_aj`` on body ``d_j``.
    Constraint rows: 3 per sphere, then one per dot; columns: (v, omega) per body.
    """

    def __init__(self, robot: RobotParameters, bodies: BodySet | None = None, base: RigidBody | None = None,
                 include_base: bool = True):
        require_rotary(robot, "the multibody model")
        self.robot = robot
        self.kinematics = model_for(robot)        # its closed-form kinematics place the bodies
        self.bodies = bodies if bodies is not None else body_set(robot)
        bs = self.bodies
        g = robot.geometry
        self.gravity = np.array([0.0, 0.0, -robot.gravity])
        self.R, self.r = g.base_radius, g.platform_radius
        self.l, self.lk = g.upper_arm_length, g.forearm_length
        # each arm's own geometry (geometry.per_arm; else the shared values): R_i, r_i, L_i, l_i, o_i
        arms = [g.arm(i) for i in range(3)]
        self.arm_R = np.array([a["base_radius"] for a in arms])
        self.arm_r = np.array([a["platform_radius"] for a in arms])
        self.arm_l = np.array([a["upper_arm_length"] for a in arms])
        self.arm_lk = np.array([a["forearm_length"] for a in arms])
        self.arm_offset = np.array([a["joint_offset"] for a in arms])
        phi = np.radians(np.asarray(g.chain_angles_deg, dtype=float))
        self.u = np.stack([np.cos(phi), np.sin(phi), np.zeros(3)], 1)        # outward
        self.e = np.stack([-np.sin(phi), np.cos(phi), np.zeros(3)], 1)       # motor axes (+y')
        names, mass, inertia = [], [], []
        base = base if base is not None else getattr(bs, "base", None)
        self.has_base = include_base and base is not None and base.mass > 0
        off = 1 if self.has_base else 0
        if self.has_base:
            names.append("base")
            mass.append(base.mass)
            inertia.append(np.diag(base.inertia))
        self.arm = tuple(off + i for i in range(3))
        self.arm_slice = slice(off, off + 3)
        self.forearm = tuple(off + 3 + i for i in range(3))
        self.platform = off + 6
        # upper arm + rotor (about the motor axis y) + elbow block (point mass at the elbow)
        a, eb = bs.upper_arm, bs.elbow_block
        ma = a.mass + eb.mass
        if not ma > 0:
            raise ValueError("the multibody model needs an upper arm with a mass > 0")
        self.arm_com = (a.mass * a.com + eb.mass * self.l) / ma
        self.arm_coms = (a.mass * a.com + eb.mass * self.arm_l) / ma         # per arm (its own L_i)
        Ias = []
        for i in range(3):
            Ia = np.diag(a.inertia).astype(float)
            for m_, x_ in ((a.mass, a.com), (eb.mass, self.arm_l[i])):
                Ia += m_ * (x_ - self.arm_coms[i]) ** 2 * np.diag([0.0, 1.0, 1.0])
            Ia[1, 1] += bs.rotor_inertia
            Ias.append(Ia)
        # forearm: two bars, same orientation, offset along e: mass 2 m, inertia 2 I
        b = bs.bar
        mf = 2.0 * b.mass
        if not mf > 0:
            raise ValueError("the multibody model needs forearm bars with a mass > 0")
        self.forearm_com = b.com
        # a forearm of its own length l_i carries the explicit model's point masses (eq. 22 with
        # the shared length): COM and inertia scaled by l_i / l_K and (l_i / l_K)^2
        stretch = self.arm_lk / self.lk
        self.forearm_coms = b.com * stretch
        Ifs = [2.0 * np.diag(b.inertia) * (k * k) for k in stretch]
        # platform + three platform blocks at the platform joints
        p, pb = bs.platform, bs.platform_block
        mp = p.mass + 3.0 * pb.mass
        pts = self.arm_r[:, None] * self.u
        self.platform_com = pb.mass * pts.sum(0) / mp                     # from the centre
        Ip = np.diag(p.inertia).astype(float) + p.mass * _parallel(-self.platform_com)
        for k in range(3):
            Ip += pb.mass * _parallel(pts[k] - self.platform_com)
        for i in range(3):
            names.append(f"arm_{i + 1}")
            mass.append(ma)
            inertia.append(Ias[i])
        for i in range(3):
            names.append(f"forearm_{i + 1}")
            mass.append(mf)
            inertia.append(Ifs[i])
        names.append("platform")
        mass.append(mp)
        inertia.append(Ip)
        self.body_names = tuple(names)
        self.n_bodies = nb = len(names)
        self.mass = np.asarray(mass, dtype=float)
        self.inertia = np.asarray(inertia, dtype=float)
        w = np.linalg.eigvalsh(self.inertia)
        if not (w > 0).all():
            k = int(np.argmin(w.min(1)))
            raise ValueError(f"the multibody model needs positive inertias: body {names[k]} has "
                             f"principal inertias {w[k].tolist()}")
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.platform_mass = mp
        self._build_joints(nb)

    @classmethod
    def from_robot(cls, robot, base: RigidBody | None = None) -> "MultibodySystem":
        """The model of a robot preset name, robot file path or loaded RobotParameters."""
        return cls(load_robot(robot), base=base)

    # ------------------------------------------------------------------ joints
    def _build_joints(self, nb):
        S_i, S_j, S_ui, S_uj = [], [], [], []
        D_i, D_j, D_ai, D_aj = [], [], [], []
        joints = []
        gnd = nb                                        # ground's index in the state arrays
        X, Y, Z = np.eye(3)

        def sphere(i, j, ui, uj):
            S_i.append(i)
            S_j.append(j)
            S_ui.append(np.asarray(ui, float))
            S_uj.append(np.asarray(uj, float))
            return len(S_i) - 1

        def dot(i, j, ai, aj):
            D_i.append(i)
            D_j.append(j)
            D_ai.append(np.asarray(ai, float))
            D_aj.append(np.asarray(aj, float))
            return len(D_i) - 1

        base = 0 if self.has_base else gnd
        if self.has_base:
            s = sphere(0, gnd, np.zeros(3), np.zeros(3))
            d = (dot(0, gnd, X, Y), dot(0, gnd, X, Z), dot(0, gnd, Y, Z))
            joints.append(Joint("base_rigid", "rigid", 0, GROUND, s, d))
        for i in range(3):
            ac, fc, l, lk = self.arm_coms[i], self.forearm_coms[i], self.arm_l[i], self.arm_lk[i]
            a, f, p = self.arm[i], self.forearm[i], self.platform
            B = self.arm_R[i] * self.u[i]
            # shoulder revolute: arm y (motor axis) stays perpendicular to u_i and e_z
            s = sphere(a, base, (-ac, 0.0, 0.0), B)
            d = (dot(a, base, Y, self.u[i]), dot(a, base, Y, EZ))
            joints.append(Joint(f"shoulder_{i + 1}", "revolute", a, base if self.has_base else GROUND, s, d))
            # elbow universal: arm y (= e_i) perpendicular to the forearm's z (= n_i)
            s = sphere(a, f, (l - ac, 0.0, 0.0), (-fc, 0.0, 0.0))
            d = (dot(a, f, Y, Z),)
            joints.append(Joint(f"elbow_{i + 1}", "universal", a, f, s, d))
            # platform universal: forearm z (n_i) perpendicular to the platform's e_i
            s = sphere(f, p, (lk - fc, 0.0, 0.0), self.arm_r[i] * self.u[i] - self.platform_com)
            d = (dot(f, p, Z, self.e[i]),)
            joints.append(Joint(f"platform_{i + 1}", "universal", f, p, s, d))
        self.joints = tuple(joints)
        self.s_i, self.s_j = np.asarray(S_i), np.asarray(S_j)
        self.s_ui, self.s_uj = np.asarray(S_ui), np.asarray(S_uj)
        self.d_i, self.d_j = np.asarray(D_i), np.asarray(D_j)
        self.d_ai, self.d_aj = np.asarray(D_ai), np.asarray(D_aj)
        self.n_spheres, self.n_dots = len(S_i), len(D_i)
        self.n_constraints = 3 * len(S_i) + len(D_i)
        # constant part of the Jacobian and scatter indices of its varying part
        nc, nz = self.n_constraints, 6 * nb
        J0 = np.zeros((nc, nz))
        rows = 3 * np.arange(self.n_spheres)
        r3 = rows[:, None] + np.arange(3)
        c3 = np.arange(3)
        self._s_mask_j = self.s_j < nb
        for k in range(self.n_spheres):
            J0[r3[k], 6 * self.s_i[k] + c3] = 1.0
            if self._s_mask_j[k]:
                J0[r3[k], 6 * self.s_j[k] + c3] = -1.0
        self.J0 = J0
        # flat indices of the 3x3 omega blocks of the spheres, and of the dots' omega rows
        self._idx_si = (r3[:, :, None] * nz + (6 * self.s_i + 3)[:, None, None] + c3[None, None, :])
        jj = self.s_j[self._s_mask_j]
        self._idx_sj = (r3[self._s_mask_j][:, :, None] * nz + (6 * jj + 3)[:, None, None] + c3[None, None, :])
        drow = 3 * self.n_spheres + np.arange(self.n_dots)
        self._idx_di = drow[:, None] * nz + (6 * self.d_i + 3)[:, None] + c3[None, :]
        self._d_mask_j = self.d_j < nb
        self._idx_dj = (drow[self._d_mask_j][:, None] * nz + (6 * self.d_j[self._d_mask_j] + 3)[:, None]
                        + c3[None, :])
        # every joint vector in one batch: sphere points on i, on j, dot vectors on i, on j
        self.vec_body = np.concatenate([self.s_i, self.s_j, self.d_i, self.d_j])
        self.vec_local = np.concatenate([self.s_ui.reshape(-1, 3), self.s_uj.reshape(-1, 3),
                                         self.d_ai.reshape(-1, 3), self.d_aj.reshape(-1, 3)])[:, :, None]
        # -skew(r) as 9 entries picked from r with signs (row-major 3x3)
        self._skew_pick = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0])
        self._skew_sign = np.array([0.0, 1.0, -1.0, -1.0, 0.0, 1.0, 1.0, -1.0, 0.0])
        self._idx_si = self._idx_si.reshape(len(self.s_i), 9)
        self._idx_sj = self._idx_sj.reshape(-1, 9)
        # flat indices of the 3x3 inverse-inertia blocks in the dense M^-1
        rb = 6 * np.arange(nb) + 3
        self._idx_minv = ((rb[:, None, None] + c3[None, :, None]) * nz + rb[:, None, None] + c3[None, None, :])
        Minv0 = np.zeros((nz, nz))
        for b in range(nb):
            Minv0[6 * b + c3, 6 * b + c3] = 1.0 / self.mass[b]
        self.Minv0 = Minv0
        self.weight = (self.mass[:, None] * self.gravity).copy()
        # the platform's velocity rows (for prescribing its motion)
        P = np.zeros((3, nz))
        P[:, 6 * self.platform + c3] = np.eye(3)
        self.P = P
        # scale of the perpendicularity residuals in metres (a misalignment angle times it)
        self.dot_length = self.lk

    def __repr__(self) -> str:
        return (f"MultibodySystem({self.robot.name!r}, {self.n_bodies} bodies, "
                f"{self.n_constraints} constraints)")


def _parallel(d) -> np.ndarray:
    """Inertia of a unit point mass at d about the origin: |d|^2 I - d d^T."""
    d = np.asarray(d, dtype=float)
    return float(d @ d) * np.eye(3) - np.outer(d, d)


def arm_frame(u, e, q) -> np.ndarray:
    """Rotation of upper arm at angle q: columns x (motor axis -> elbow), y = e, z = x cross y."""
    x = math.cos(q) * u - math.sin(q) * EZ
    return np.stack([x, e, np.cross(x, e)], 1)


def forearm_frame(d, e) -> np.ndarray:
    """Rotation of a forearm along unit d: columns x = d, y = the part of e normal to d
    (normalised), z = x cross y (the universal joints' cross axis n)."""
    y = e - (e @ d) * d
    y = y / np.linalg.norm(y)
    return np.stack([d, y, np.cross(d, y)], 1)
