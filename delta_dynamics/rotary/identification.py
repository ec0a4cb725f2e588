"""The rotary Delta's identification: its parameter sets for the pipeline
(:mod:`delta_dynamics.identification`) and an identified parameter vector back into its robot
file.

Two parameter sets (:func:`parameter_set`):

``explicit``
    The 14 lumped parameters of the explicit model (:data:`~delta_dynamics.rotary.model.PARAMETER_NAMES`:
    m_x, m_k, arm_inertia_1..3, arm_moment_1..3, viscous_1..3, coulomb_1..3), regressor
    :func:`delta_dynamics.rotary.dynamics.regressor_joint`, plus three Stribeck columns
    (static_1..3) with ``stribeck=True``.
``kim``
    The 11-parameter vector of Kim et al. (2022) eq. (30), M_PAR = (m_p, T_g, I_1..3, c_v1..3,
    c_c1..3), regressor :func:`delta_dynamics.reference.kim.kim_regressor` (eq. 26 with
    eqs. 27-29 is linear in M_PAR).

Writing back (:func:`physical_from_lumped`). The robot file holds physical values; the
explicit model uses the lumped combinations of :class:`~delta_dynamics.rotary.model.RotaryParameters`
(Asadi & Heydari eqs. 22, 30-36):

* m_K = M_K - I_K / (r_K (1 - r_K) l_K^2), m_C = I_K / (r_K l_K^2), m_A = I_K / ((1 - r_K) l_K^2)
* m_x = m_P + m_payload + 3 m_A
* h_i = m_L r_L + m_C l_i,   I_arm,i = I_mo gamma^2 + I_L + m_L r_L^2 + m_C l_i^2 (l_i: arm i's
  own upper-arm length, geometry.per_arm; the shared l without it)

Only the lumped values are identifiable, so writing them back needs assumptions; these
are held fixed: the geometry, the forearm's COM ratio r_K and its shape
kappa = I_K / (M_K r_K (1 - r_K) l_K^2) (so m_K = (1 - kappa) M_K scales the whole forearm),
the payload, the upper arm's COM distance r_L and the motor's rotor inertia. Then

    M_K = m_K / (1 - kappa),  m_P = m_x - m_payload - 3 m_A,  m_L = (h - m_C l) / r_L,
    I_L = I_arm - I_mo gamma^2 - m_L r_L^2 - m_C l^2,

with h and I_arm the mean over the three joints of h_i - m_C (l_i - l) and
I_arm,i - m_C (l_i^2 - l^2) (the schema has one upper arm). Friction is
per joint in the schema and is written as identified. Values a physical field cannot take
(a negative mass, say) are clipped at 0 and listed in ``metadata.identified.notes``; the exact
identified lumped vector (per joint) is kept in ``metadata.identified.lumped_parameters``, from
which the model is built (:meth:`~delta_dynamics.rotary.model.RotaryParameters.from_robot`).

>>> parameter_set("kim").names[:2], parameter_set("explicit", stribeck=True).names[-1]
(('m_p', 'T_g'), 'static_3')
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import Forearm, Friction, RobotParameters, UpperArm
from delta_dynamics.identification import IdentificationError
from delta_dynamics.identification.regressors import STRIBECK_NAMES, ParameterSet
from delta_dynamics.identification.robot_update import clip_negative
from delta_dynamics.reference.kim import KIM_PARAMETER_NAMES, kim_parameters, kim_regressor
from delta_dynamics.rotary.model import PARAMETER_KINDS, PARAMETER_NAMES, UNITS, RotaryParameters

#: The parameter sets of a rotary Delta.
PARAMETER_SETS = ("explicit", "kim")


@dataclass(frozen=True)
class RotaryParameterSet(ParameterSet):
    """The explicit model's 14 lumped parameters (:class:`~delta_dynamics.identification.regressors.ParameterSet`
    with the rotary robot's kinds and units)."""

    KINDS = PARAMETER_KINDS
    UNITS = UNITS
    NONNEGATIVE = ("mass", "inertia", "viscous", "coulomb")


@dataclass(frozen=True)
class KimParameterSet(RotaryParameterSet):
    """Kim et al.'s 11 parameters (eq. 30): the forearm of each chain lumped at its two ends."""

    KINDS = {"m_p": "mass", "T_g": "gravity_moment", **{f"I_{i}": "inertia" for i in (1, 2, 3)},
             **{f"c_v{i}": "viscous" for i in (1, 2, 3)}, **{f"c_c{i}": "coulomb" for i in (1, 2, 3)}}
    UNITS = {**UNITS, "gravity_moment": "N m"}

    def regressor(self, model, q, qd, qdd) -> np.ndarray:
        """Y_kim(q, q_dot, q_ddot) of eq. (26), shape (N, 3, 11) (or (3, 11)); refused for a
        robot with per-arm geometry (:func:`require_symmetric`)."""
        require_symmetric(model)
        return kim_regressor(model, q, qd, qdd)

    def nominal(self, model) -> np.ndarray:
        """M_PAR implied by the model's robot file (eq. 30); refused for a robot with per-arm
        geometry (:func:`require_symmetric`)."""
        require_symmetric(model)
        return kim_parameters(model)

    def to_lumped(self, model, values) -> RotaryParameters:
        """The explicit model's :class:`~delta_dynamics.rotary.model.RotaryParameters` for an
        estimate of M_PAR. The forearm COM mass m_K cannot be separated (Kim et al. lump each
        forearm into its two end points) and is held at the model's value: m_x = m_p - 3 r_K m_K,
        I_arm,i = I_i - (1 - r_K) m_K l^2, h_i = T_g / g - (1 - r_K) m_K l (the inverse of
        :func:`delta_dynamics.reference.kim.kim_parameters`); the break-away torque equals the
        Coulomb torque (the model that was fitted)."""
        v = np.asarray(values, dtype=float)
        p = model.params
        rk, l, mk = model.r_k, model.l, model.m_k
        lumped = np.concatenate((
            [v[0] - 3.0 * rk * mk, mk],
            v[2:5] - (1.0 - rk) * mk * l * l,
            np.full(3, v[1] / model.g - (1.0 - rk) * mk * l),
            v[5:8], v[8:11]))
        return RotaryParameters.from_vector(lumped, static=tuple(float(s) for s in v[8:11]),
                                            stribeck_velocity=p.stribeck_velocity,
                                            smoothing_velocity=p.smoothing_velocity)


def require_symmetric(model) -> None:
    """Raise :class:`IdentificationError` if ``model`` has per-arm geometry: Kim et al.'s
    eq. (30) has one gravity moment T_g and one upper-arm length for the three arms, so it
    cannot describe arms of different lengths or joint offsets. The explicit set can (its
    regressor is the per-arm model's, with an inertia I_i and a gravity moment h_i per arm);
    a per-arm Kim set would be that set less m_K, not Kim et al.'s (docs/calibration.md)."""
    if model.arms is not None:
        raise IdentificationError(
            f"{model.robot.source or model.robot.name}: the kim parameter set assumes three identical arms "
            f"(one gravity moment T_g, Kim et al. eq. 30) but this robot has geometry.per_arm (arms of their "
            f"own lengths and joint offsets): use the explicit parameter set (--params explicit), whose "
            f"regressor is the per-arm model's with an inertia and a gravity moment per arm")


def parameter_set(key: str = "explicit", stribeck: bool = False) -> ParameterSet:
    """The rotary Delta's parameter set called ``key`` ("explicit" or "kim")."""
    if key == "explicit":
        return RotaryParameterSet("explicit", PARAMETER_NAMES + (STRIBECK_NAMES if stribeck else ()), stribeck)
    if key == "kim":
        if stribeck:
            raise IdentificationError("the Stribeck columns exist for the explicit parameter set only "
                                      "(Kim et al.'s eq. 30 has viscous and Coulomb friction)")
        return KimParameterSet("kim", KIM_PARAMETER_NAMES)
    raise IdentificationError(f"unknown parameter set {key!r}: use one of {', '.join(PARAMETER_SETS)}")


#: What :func:`physical_from_lumped` holds fixed (for the identified robot file's metadata).
ASSUMPTIONS = ("physical fields from the lumped values with geometry, forearm COM ratio and shape, "
               "payload, upper-arm COM distance and rotor inertia held fixed; the model is built "
               "from lumped_parameters")


def _forearm_shape(fa: Forearm, rk: float, lk: float) -> float:
    """kappa = I_K / (M_K r_K (1 - r_K) l_K^2): the forearm's shape (1/3 for a slender rod)."""
    full = fa.mass * rk * (1.0 - rk) * lk * lk
    return fa.inertia / full if full > 0 else 1.0 / 3.0    # a slender rod: 1/12 over 1/4


def physical_from_lumped(robot: RobotParameters, p: RotaryParameters) -> tuple:
    """(RobotParameters with the physical fields for ``p``, notes) under the assumptions of the
    module docstring.

    >>> from delta_dynamics.rotary.model import RotaryModel
    >>> m = RotaryModel.from_robot("nt_robot")
    >>> new, notes = physical_from_lumped(m.robot, m.params)
    >>> round(new.mass.forearm.mass, 9) == round(m.robot.mass.forearm.mass, 9), notes
    (True, [])
    """
    notes = []
    g, mp = robot.geometry, robot.mass
    rk, lk, l = mp.forearm.com_ratio, g.forearm_length, g.upper_arm_length
    kappa = min(max(_forearm_shape(mp.forearm, rk, lk), 0.0), 0.999)
    m_k = float(p.m_k)
    if m_k < 0:
        notes.append(f"identified m_k = {m_k:.6g} kg < 0: forearm mass written as 0")
        m_k = 0.0
    M_K = m_k / (1.0 - kappa)
    I_K = kappa * M_K * rk * (1.0 - rk) * lk * lk
    m_c = I_K / (rk * lk * lk)
    m_a = I_K / ((1.0 - rk) * lk * lk)
    platform = float(p.m_x) - mp.payload_mass - 3.0 * m_a
    if platform < 0:
        notes.append(f"m_x - payload - 3 m_A = {platform:.6g} kg < 0: platform mass written as 0")
        platform = 0.0
    # each arm's values brought to the shared length l (per-arm lengths l_i: geometry.per_arm)
    arm_l = [g.arm(i)["upper_arm_length"] for i in range(3)]
    moments = [h_i - m_c * (l_i - l) for h_i, l_i in zip(p.arm_moment, arm_l)]
    inertias = [I_i - m_c * (l_i * l_i - l * l) for I_i, l_i in zip(p.arm_inertia, arm_l)]
    h = float(np.mean(moments))
    I_arm = float(np.mean(inertias))
    r_L = mp.upper_arm.com_distance
    if r_L > 0:
        m_L = (h - m_c * l) / r_L
    else:
        m_L = mp.upper_arm.mass
        notes.append("upper_arm.com_distance is 0: the arm's first moment cannot be written; arm mass kept")
    if m_L < 0:
        notes.append(f"upper-arm mass (h - m_C l) / r_L = {m_L:.6g} kg < 0: written as 0")
        m_L = 0.0
    I_L = I_arm - mp.motor.reflected_inertia - m_L * r_L * r_L - m_c * l * l
    if I_L < 0:
        notes.append(f"upper-arm inertia about its COM = {I_L:.6g} kg m^2 < 0: written as 0")
        I_L = 0.0
    spread = [float(np.ptp(v) / max(abs(np.mean(v)), 1e-12)) for v in (moments, inertias)]
    if max(spread) > 1e-9:
        notes.append(f"arm moments and inertias differ per joint (by {100 * spread[0]:.3g} % and "
                     f"{100 * spread[1]:.3g} %): the physical fields hold the mean, the exact "
                     "per-joint values are in lumped_parameters")

    viscous = clip_negative("viscous", p.viscous, notes)
    coulomb = clip_negative("coulomb", p.coulomb, notes)
    static = clip_negative("static", p.static, notes)
    if mp.full_body is not None:
        notes.append("mass_properties.full_body dropped: its bodies no longer match the identified "
                     "lumped parameters")
    mass = dataclasses.replace(
        mp, upper_arm=UpperArm(mass=m_L, com_distance=r_L, inertia=I_L),
        forearm=Forearm(mass=M_K, com_ratio=rk, inertia=min(I_K, M_K * rk * (1 - rk) * lk * lk)),
        platform_mass=platform, full_body=None)
    friction = Friction(viscous=viscous, coulomb=coulomb, static=static,
                        stribeck_velocity=p.stribeck_velocity, smoothing_velocity=p.smoothing_velocity)
    return robot.replace(mass=mass, friction=friction), notes
