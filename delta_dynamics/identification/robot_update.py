"""An identified parameter vector back into a robot file, and a model from such a file.

The robot file holds physical values; the explicit model uses the lumped combinations of
:class:`delta_dynamics.model.DynamicParameters` (Asadi & Heydari eqs. 22, 30-36):

* m_K = M_K - I_K / (r_K (1 - r_K) l_K^2), m_C = I_K / (r_K l_K^2), m_A = I_K / ((1 - r_K) l_K^2)
* m_x = m_P + m_payload + 3 m_A
* h = m_L r_L + m_C l,   I_arm = I_mo gamma^2 + I_L + m_L r_L^2 + m_C l^2

Only the lumped values are identifiable, so writing them back needs assumptions; these
are held fixed: the geometry, the forearm's COM ratio r_K and its shape
kappa = I_K / (M_K r_K (1 - r_K) l_K^2) (so m_K = (1 - kappa) M_K scales the whole forearm),
the payload, the upper arm's COM distance r_L and the motor's rotor inertia. Then

    M_K = m_K / (1 - kappa),  m_P = m_x - m_payload - 3 m_A,  m_L = (h - m_C l) / r_L,
    I_L = I_arm - I_mo gamma^2 - m_L r_L^2 - m_C l^2,

with h and I_arm the mean over the three joints (the schema has one upper arm). Friction is
per joint in the schema and is written as identified. Values a physical field cannot take
(a negative mass, say) are clipped at 0 and listed in ``metadata.identified.notes``.

The exact identified lumped vector (per joint) is kept in
``metadata.identified.lumped_parameters`` ({names, values, static}); :func:`model_from_robot_file`
builds the :class:`~delta_dynamics.model.DeltaModel` from it when present, so nothing is lost
to the averaging or the clipping.

A linear Delta's robot file is written the same way by its kind's
:func:`delta_dynamics.prismatic.identification.physical_from_lumped` (geometry, payload and
rod mass held fixed); :func:`identified_robot` picks the kind's through
:func:`delta_dynamics.algorithms.physical_from_lumped`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math

import numpy as np

from delta_core.robot_file import (Forearm, Friction, RobotFileError, RobotParameters, UpperArm,
                                          load_robot, save_robot)
from delta_dynamics import algorithms
from delta_dynamics.model import DynamicParameters

from . import IdentificationError



def clip_negative(name: str, vals, notes: list) -> tuple:
    """``vals`` as floats with each negative one written as 0, noted in ``notes``
    ("identified <name>_<j> = v < 0: written as 0"): identified friction coefficients of a robot
    file must not be negative."""
    out = []
    for j, v in enumerate(vals):
        if v < 0:
            notes.append(f"identified {name}_{j + 1} = {v:.6g} < 0: written as 0")
            v = 0.0
        out.append(float(v))
    return tuple(out)

def _forearm_shape(fa: Forearm, rk: float, lk: float) -> float:
    full = fa.mass * rk * (1.0 - rk) * lk * lk
    return fa.inertia / full if full > 0 else 1.0 / 3.0    # a slender rod: 1/12 over 1/4


def physical_from_lumped(robot: RobotParameters, p: DynamicParameters) -> tuple:
    """(RobotParameters with the physical fields for ``p``, notes) under the assumptions above."""
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
    h = float(np.mean(p.arm_moment))
    I_arm = float(np.mean(p.arm_inertia))
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
    spread = [float(np.ptp(v) / max(abs(np.mean(v)), 1e-12)) for v in (p.arm_moment, p.arm_inertia)]
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


def _floats(v):
    return [float(x) for x in np.asarray(v, dtype=float).ravel()]


#: What :func:`physical_from_lumped` holds fixed (for the identified robot file's metadata).
ASSUMPTIONS = ("physical fields from the lumped values with geometry, forearm COM ratio and shape, "
               "payload, upper-arm COM distance and rotor inertia held fixed; the model is built "
               "from lumped_parameters")


def identified_metadata(result, model, data_source: str, validation_source: str | None = None,
                        notes=(), extra: dict | None = None) -> dict:
    """The ``metadata.identified`` mapping for a :class:`~.pipeline.Result` (plain YAML types)."""
    lumped = result.lumped(model)
    est = result.estimate
    md = {
        "method": result.method,
        "parameter_set": result.pset.key + (" + stribeck" if result.pset.stribeck else ""),
        "data": str(data_source),
        "validation": str(validation_source) if validation_source else None,
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool": "delta-identify",
        "fitness": {"fit": _floats(result.fit["fitness"]),
                    "validation": _floats(result.validation["fitness"]) if result.validation else None},
        "rms_error": {"fit": _floats(result.fit["rms_error"]),
                      "validation": _floats(result.validation["rms_error"]) if result.validation else None},
        "condition_number": float(result.condition),
        "base_parameters": result.base.combinations(),
        "held_fixed": list(result.held),
        "estimate": {"names": list(est.names), "values": _floats(est.values),
                     "std": [None if not math.isfinite(s) else float(s) for s in est.std]},
        "lumped_parameters": {"names": list(algorithms.parameter_names(model)),
                              "values": _floats(lumped.as_vector()), "static": _floats(lumped.static)},
        "assumptions": model.ops.update_assumptions,
        "notes": list(notes),
    }
    if result.pset.key == "kim":
        md["assumptions"] += ("; Kim et al.'s 11 parameters do not separate the forearm COM mass m_k, "
                              "held at the robot file's value")
    if extra:
        md.update(extra)
    return md


def identified_robot(robot: RobotParameters, result, model, data_source: str,
                     validation_source: str | None = None, extra: dict | None = None) -> RobotParameters:
    """The robot file content for an identification result: physical fields (by the model's
    kind) and metadata."""
    lumped = result.lumped(model)
    new, notes = model.ops.physical_from_lumped(robot, lumped)
    metadata = dict(robot.metadata or {})
    metadata["identified"] = identified_metadata(result, model, data_source, validation_source,
                                                 notes=notes, extra=extra)
    return new.replace(metadata=metadata, source="")


def write_robot_file(path, robot: RobotParameters, header: str = ""):
    """Write (atomically, validated) with :func:`delta_core.robot_file.save_robot`."""
    return save_robot(robot, path, header=header)


def model_from_robot_file(robot):
    """The model of a robot file (preset name, path or RobotParameters), of its kind
    (:func:`delta_dynamics.kinds.model_for`).

    The model layer itself uses ``metadata.identified.lumped_parameters`` when present (see
    :meth:`DynamicParameters.from_robot`); this wrapper reports a malformed entry as an
    :class:`IdentificationError`.
    """
    from delta_dynamics.kinds import model_for
    try:
        return model_for(load_robot(robot))
    except RobotFileError as e:
        raise IdentificationError(str(e)) from None
