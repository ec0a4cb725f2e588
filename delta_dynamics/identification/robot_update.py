"""An identified parameter vector back into a robot file, and a model from such a file.

The robot file holds physical values; a model uses lumped combinations of them, of which only
the lumped values are identifiable. Writing them back therefore needs assumptions, which are
the robot kind's: its ``physical_from_lumped`` and ``ASSUMPTIONS``
(:mod:`delta_dynamics.rotary.identification`, :mod:`delta_dynamics.linear.identification`),
reached through :func:`delta_dynamics.algorithms.physical_from_lumped`. What is shared:
:func:`identified_robot` (the physical fields and the ``metadata.identified`` record: method,
fit, base parameters, the exact identified lumped vector in ``lumped_parameters``, from which
the model is built so nothing is lost to averaging or clipping), :func:`write_robot_file`,
:func:`model_from_robot_file` and :func:`clip_negative`.
"""
from __future__ import annotations

import datetime as _dt
import math

import numpy as np

from delta_core.robot_file import RobotFileError, RobotParameters, load_robot, save_robot
from delta_dynamics import algorithms
from delta_dynamics.kinds import model_for

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


def _floats(v):
    return [float(x) for x in np.asarray(v, dtype=float).ravel()]


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

    The model layer itself uses ``metadata.identified.lumped_parameters`` when present (the
    kind's lumped parameters' ``from_robot``); this wrapper reports a malformed entry as an
    :class:`IdentificationError`.
    """
    try:
        return model_for(load_robot(robot))
    except RobotFileError as e:
        raise IdentificationError(str(e)) from None
