"""The linear Delta's parameter set for the identification pipeline
(:mod:`delta_dynamics.identification`).

The pipeline (``build_problem``, ``identify``, the estimators, base parameters) only talks to
a :class:`~delta_dynamics.identification.regressors.ParameterSet`: its ``regressor``,
``nominal``, ``to_lumped``, ``kinds``/``units``/``nonnegative``. :class:`LinearParameterSet`
is that object for :class:`~delta_dynamics.linear.model.LinearModel`: the 14 lumped parameters
of :data:`~delta_dynamics.linear.model.PARAMETER_NAMES` (m_x, m_r, carriage_inertia_1..3,
carriage_mass_1..3, viscous_1..3, coulomb_1..3) with
:func:`~delta_dynamics.linear.dynamics.regressor_joint`, plus three Stribeck columns
(static_1..3) with ``stribeck=True``. The carriage forces are linear in them
(F = Y(q, q_dot, q_ddot) pi); the rows of a rich motion give rank 14.

It also writes an identified parameter vector back into a linear robot file
(:func:`physical_from_lumped`, used by :mod:`delta_dynamics.identification.robot_update`).

>>> pset = parameter_set()
>>> pset.names[:3], pset.units[:2], pset.units[-1]
(('m_x', 'm_r', 'carriage_inertia_1'), ('kg', 'kg'), 'N')
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from delta_core.robot_file import Carriage, Friction, Rod
from delta_dynamics.identification import IdentificationError
from delta_dynamics.identification.regressors import STRIBECK_NAMES, ParameterSet
from delta_dynamics.identification.robot_update import clip_negative
from delta_dynamics.linear.model import PARAMETER_KINDS, PARAMETER_NAMES, UNITS, LinearParameters


@dataclass(frozen=True)
class LinearParameterSet(ParameterSet):
    """The linear Delta's 14 lumped parameters (:class:`~delta_dynamics.identification.regressors.ParameterSet`
    with its kinds and units; m_r, the rods' rotational correction, is negative for real rods)."""

    KINDS = PARAMETER_KINDS
    UNITS = UNITS
    NONNEGATIVE = ("mass", "viscous", "coulomb")


def parameter_set(key: str = "explicit", stribeck: bool = False) -> LinearParameterSet:
    """The parameter set called ``key`` for a linear Delta: ``explicit`` (the model's own 14
    lumped parameters, with Stribeck columns if asked). Kim et al.'s 11-parameter set is a
    rotary robot's (arm angles, arm gravity moment) and is refused by name.

    >>> parameter_set("explicit", stribeck=True).names[-1]
    'static_3'
    """
    if key == "explicit":
        return LinearParameterSet("explicit", PARAMETER_NAMES + (STRIBECK_NAMES if stribeck else ()), stribeck)
    if key == "kim":
        raise IdentificationError("the kim parameter set (Kim et al. 2022, eq. 30) describes a rotary Delta "
                                  "(arm inertias, arm gravity moment); a linear Delta has the explicit set "
                                  "of its own 14 lumped parameters: use --params explicit")
    raise IdentificationError(f"unknown parameter set {key!r}: a linear Delta has 'explicit'")


#: What :func:`physical_from_lumped` holds fixed (for the identified robot file's metadata).
ASSUMPTIONS = ("physical fields from the lumped values with geometry, payload and the rod mass held "
               "fixed (rotor inertia from carriage_inertia - carriage_mass); the model is built from "
               "lumped_parameters")


def physical_from_lumped(robot, p: LinearParameters) -> tuple:
    """(robot file with the physical fields for the lumped ``p``, notes): the inverse of
    :meth:`~delta_dynamics.linear.model.LinearParameters.from_robot` with the geometry, the payload and the rod
    mass m_rod held at the robot file's values (the rod mass cannot be told from the
    carriage's: both ride with the carriage). With gamma = 2 pi / travel_per_revolution:

        I_mo = (carriage_inertia - carriage_mass) / gamma^2,   m_cart = carriage_mass - m_rod,
        m_plat = m_x - payload - 3 m_rod,   I_rod = m_r l^2 / 2 + m_rod l^2 / 4,

    carriage values the mean over the three carriages (the schema has one carriage and one
    motor). Friction is per carriage and written as identified. A value a physical field
    cannot take (a negative mass, a rod inertia above m_rod l^2 / 4) is clipped and listed in
    the notes; the exact per-carriage values stay in ``metadata.identified.lumped_parameters``.

    >>> from delta_dynamics.linear.model import LinearModel
    >>> m = LinearModel.from_robot("linear_delta_xl")
    >>> new, notes = physical_from_lumped(m.robot, m.params)
    >>> round(new.mass.carriage.mass, 9), round(new.mass.motor.rotor_inertia, 9), notes   # the file's values
    (3.0, 0.000174, [])
    """
    notes = []
    g, mp = robot.geometry, robot.mass
    l2 = g.rod_length ** 2
    m_rod = mp.rod.mass
    ci, cm = float(np.mean(p.carriage_inertia)), float(np.mean(p.carriage_mass))
    gamma2 = mp.motor.gear_ratio ** 2

    def clip(name, v, lo=0.0, hi=None, what=""):
        if v < lo:
            notes.append(f"{name} = {v:.6g} < {lo:g}{what}: written as {lo:g}")
            return lo
        if hi is not None and v > hi * (1 + 1e-12):
            notes.append(f"{name} = {v:.6g} > {hi:.6g}{what}: written as {hi:.6g}")
            return hi
        return v

    rotor = clip("rotor inertia (carriage_inertia - carriage_mass) / gear_ratio^2", (ci - cm) / gamma2)
    m_cart = clip("carriage mass carriage_mass - rod mass", cm - m_rod)
    platform = clip("platform mass m_x - payload - 3 rod mass", float(p.m_x) - mp.payload_mass - 3.0 * m_rod)
    i_rod = clip("rod inertia m_r l^2 / 2 + m_rod l^2 / 4", float(p.m_r) * l2 / 2.0 + m_rod * l2 / 4.0,
                 hi=m_rod * l2 / 4.0, what=" (m_rod l^2 / 4: all the mass at the joints)")
    spread = [float(np.ptp(v) / max(abs(np.mean(v)), 1e-12)) for v in (p.carriage_inertia, p.carriage_mass)]
    if max(spread) > 1e-9:
        notes.append(f"carriage inertias and masses differ per carriage (by {100 * spread[0]:.3g} % and "
                     f"{100 * spread[1]:.3g} %): the physical fields hold the mean, the exact per-carriage "
                     "values are in lumped_parameters")

    if mp.motor.rotor_inertia == rotor:
        motor = mp.motor
    else:
        motor = dataclasses.replace(mp.motor, rotor_inertia=float(rotor))
    mass = dataclasses.replace(mp, carriage=Carriage(mass=float(m_cart)), rod=Rod(mass=m_rod, inertia=float(i_rod)),
                               motor=motor, platform_mass=float(platform))
    friction = Friction(viscous=clip_negative("viscous", p.viscous, notes),
                        coulomb=clip_negative("coulomb", p.coulomb, notes),
                        static=clip_negative("static", p.static, notes), stribeck_velocity=p.stribeck_velocity,
                        smoothing_velocity=p.smoothing_velocity)
    return robot.replace(mass=mass, friction=friction), notes
