"""Robot kinds: how a kind of Delta robot (rotary, prismatic) plugs into the stack.

A *kind* is a model class (the static model, Pinocchio's ``Model``: immutable geometry and
lumped parameters) plus modules of functions over it that all have the same names and
signatures: ``kinematics``, ``dynamics``, ``simulate`` and an identification parameter set.
:data:`INTERFACE` lists them. Everything above the model (control loop, plans, simulator,
drives, identification pipeline, URDF, nodes) calls the free functions of
:mod:`delta_dynamics.algorithms`, which look the kind's implementation up in a table cached
on the model class (:class:`KindTable`, built on first use by the :class:`ops` descriptor):
callers never branch on the kind. ``docs/architecture.md`` draws it.

To add a kind: a model class with ``kind = "<name>"`` and ``ops = ops("<name>")``, modules
implementing every name of :data:`INTERFACE`, and one :class:`Kind` entry in :data:`KINDS`
(the robot file loader in :mod:`delta_core.robot_file` parses its ``type``).

:func:`model_for` is the one builder that reads a robot file's ``type``; :func:`joint_units`
gives the units and CSV column names of a model's joints.

>>> m = model_for("colombo2020")
>>> m.ops.kind.name, m.ops.inverse_kinematics(m, [0.0, 0.0, 0.05]).round(4).tolist()
('linear', [0.2372, 0.2372, 0.2372])
>>> joint_units(m)["effort"], joint_units(model_for("nt_robot"))["effort"]
('N', 'N m')
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import SimpleNamespace

from delta_core.robot_file import load_robot

#: The functions every kind implements, by module (``<package>.<module>``). Same names, same
#: signatures, same array conventions (one sample (3,), N samples (N, 3)).
INTERFACE = {
    "kinematics": ("inverse_kinematics", "forward_kinematics", "check_joint_limits", "jacobian",
                   "jacobian_derivative", "passive_angles", "singularity_measure", "sample_workspace",
                   "workspace_centre"),
    "dynamics": ("inverse_dynamics", "forward_dynamics", "joint_state", "cartesian_state",
                 "inverse_dynamics_joint", "friction_torque", "mass_matrix", "coriolis_matrix",
                 "gravity_vector", "energy", "regressor", "regressor_joint"),
    "simulate": ("step", "simulate_fixed", "simulate_adaptive"),
}


@dataclass(frozen=True)
class Kind:
    """One kind of Delta robot: where its implementation lives and what its joints are."""

    name: str                  # the robot file's ``type``
    model: str                 # "module:Class" of the model
    parameters: str            # "module:Class" of its lumped parameters (``model.params``)
    package: str               # package holding kinematics, dynamics, simulate
    identification: str        # "module:function" (key, stribeck) -> ParameterSet
    robot_update: str          # "module:function" (robot, params) -> (robot, notes)
    lumped_bounds: str         # "module:NAME" of the plausibility bounds of its lumped parameters, by kind
    units: dict = field(default_factory=dict)


_ROTARY_UNITS = {
    "position": "rad", "velocity": "rad/s", "acceleration": "rad/s^2", "effort": "N m",
    "effort_column": "tau", "effort_name": "torque", "joint": "joint", "gain_p": "N m/rad",
    "gain_d": "N m s/rad",
}
_PRISMATIC_UNITS = {
    "position": "m", "velocity": "m/s", "acceleration": "m/s^2", "effort": "N",
    "effort_column": "f", "effort_name": "force", "joint": "carriage", "gain_p": "N/m",
    "gain_d": "N s/m",
}

#: The kinds the robot file's ``type`` may name.
KINDS = {
    "rotary": Kind("rotary", "delta_dynamics.model:DeltaModel", "delta_dynamics.model:DynamicParameters",
                   "delta_dynamics",
                   "delta_dynamics.identification.regressors:parameter_set",
                   "delta_dynamics.identification.robot_update:physical_from_lumped",
                   "delta_dynamics.model:LUMPED_BOUNDS", _ROTARY_UNITS),
    "linear": Kind("linear", "delta_dynamics.prismatic.model:PrismaticDeltaModel",
                      "delta_dynamics.prismatic.model:PrismaticParameters",
                      "delta_dynamics.prismatic",
                      "delta_dynamics.prismatic.identification:parameter_set_for",
                      "delta_dynamics.prismatic.identification:physical_from_lumped",
                      "delta_dynamics.prismatic.model:LUMPED_BOUNDS", _PRISMATIC_UNITS),
}


def _resolve(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class KindTable:
    """The implementation of every :data:`INTERFACE` function for one kind, as attributes
    (``table.inverse_dynamics(m, X, Xd, Xdd)``), plus ``kind`` (:class:`Kind`), ``units``,
    ``parameter_names``, ``parameters`` (the lumped-parameter class), ``parameter_set``,
    ``physical_from_lumped``, ``update_assumptions`` (what the latter holds fixed) and
    ``lumped_bounds`` (plausibility bounds of the lumped parameters by kind of parameter).
    Built once per kind (:func:`table`)."""

    def __init__(self, kind: Kind):
        self.kind = kind
        self.units = dict(kind.units)
        missing = []
        for module, names in INTERFACE.items():
            mod = importlib.import_module(f"{kind.package}.{module}")
            for name in names:
                fn = getattr(mod, name, None)
                if fn is None:
                    missing.append(f"{kind.package}.{module}.{name}")
                setattr(self, name, fn)
        if missing:
            raise TypeError(f"robot kind {kind.name!r} does not implement {', '.join(missing)}")
        model_mod = importlib.import_module(kind.model.partition(":")[0])
        self.parameter_names = tuple(model_mod.PARAMETER_NAMES)
        self.model_class = _resolve(kind.model)
        self.parameters = _resolve(kind.parameters)
        self._lazy = {"parameter_set": kind.identification, "physical_from_lumped": kind.robot_update,
                      "update_assumptions": kind.robot_update.partition(":")[0] + ":ASSUMPTIONS",
                      "lumped_bounds": kind.lumped_bounds}

    def __getattr__(self, name):
        # identification pieces import the pipeline's modules: resolved on first use only
        path = self.__dict__.get("_lazy", {}).get(name)
        if path is None:
            raise AttributeError(name)
        fn = _resolve(path)
        setattr(self, name, fn)
        return fn

    def __repr__(self) -> str:
        return f"<KindTable {self.kind.name}>"


_TABLES: dict = {}


def table(kind: str) -> KindTable:
    """The :class:`KindTable` of ``kind`` (built on the first call, then shared)."""
    t = _TABLES.get(kind)
    if t is None:
        if kind not in KINDS:
            raise ValueError(f"unknown robot kind {kind!r}: one of {', '.join(KINDS)}")
        t = _TABLES[kind] = KindTable(KINDS[kind])
    return t


class ops:
    """Descriptor of a model class's ``ops`` attribute: on first access it builds the kind's
    :class:`KindTable` and puts it on the class in its place, so every later ``m.ops`` is a
    plain class-attribute lookup (no dictionary of strings, no import on the hot path)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        t = table(self.kind)
        setattr(owner, self.name, t)
        return t


def kind_of(model_or_robot) -> str:
    """``"rotary"`` or ``"linear"`` for a model or loaded robot parameters."""
    kind = getattr(model_or_robot, "kind", None)
    if kind is None:
        robot = getattr(model_or_robot, "robot", model_or_robot)
        kind = getattr(robot, "type", "rotary")
    return kind


def model_for(robot, friction: bool = True):
    """The model of a robot file (preset name, path or loaded parameters), of its kind: the one
    place that reads the robot file's ``type``."""
    params = load_robot(robot)
    cls = table(params.type).model_class
    m = cls(params)
    return m if friction else m.without_friction()


def modules(model) -> SimpleNamespace:
    """``kinematics``, ``dynamics``, ``simulate`` and ``model`` modules for ``model``'s kind
    (prefer :mod:`delta_dynamics.algorithms`)."""
    pkg = KINDS[kind_of(model)].package
    return SimpleNamespace(**{name: importlib.import_module(f"{pkg}.{name}")
                              for name in ("model", "kinematics", "dynamics", "simulate")})


def joint_units(model) -> dict:
    """Units of the joints of ``model``'s kind (``position``, ``velocity``, ``acceleration``,
    ``effort``, ``gain_p``, ``gain_d``), the CSV prefix of their efforts (``effort_column``:
    ``tau`` or ``f``), what the effort is called (``torque`` / ``force``) and what a joint is
    called in messages (``joint`` / ``carriage``). Works on a model or a loaded robot file."""
    return dict(KINDS[kind_of(model)].units)
