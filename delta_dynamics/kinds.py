"""Robot kinds: how a kind of Delta robot (rotary, linear) plugs into the stack.

A *kind* is a package ``delta_dynamics.<kind>`` with the same modules as every other kind:
``model`` (the static model, Pinocchio's ``Model``: immutable geometry and lumped parameters),
``kinematics``, ``dynamics``, ``simulate`` (functions over the model, same names and signatures:
:data:`INTERFACE`), ``identification`` (its parameter sets, ``physical_from_lumped``,
``ASSUMPTIONS``) and ``demo``; its ``__init__`` holds its :class:`Kind` record. The kinds are
plug-ins of :data:`KINDS` (:class:`delta_core.plugins.Registry`), one registration line each.
Everything above the model (control loop, plans, simulator, drives, identification pipeline,
URDF, nodes) calls the free functions of :mod:`delta_dynamics.algorithms`, which look the
kind's implementation up in a table cached on the model class (:class:`KindTable`, built on
first use by the :class:`ops` descriptor): callers never branch on the kind and never import a
kind's module. ``docs/architecture.md`` draws it and gives the recipe for a new kind.

:func:`model_for` is the one builder that reads a robot file's ``type``
(:func:`same_kind_model`: only a file of the kind of the robot driven); :func:`joint_units`
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

from delta_core.plugins import Registry
from delta_core.robot_file import RobotFileError, load_robot

#: The functions every kind implements, by module (``<package>.<module>``). Same names, same
#: signatures, same array conventions (one sample (3,), N samples (N, 3)).
INTERFACE = {
    "kinematics": ("inverse_kinematics", "forward_kinematics", "check_joint_limits", "jacobian",
                   "jacobian_derivative", "passive_angles", "passive_origins", "singularity_measure",
                   "sample_workspace", "workspace_centre"),
    "dynamics": ("inverse_dynamics", "forward_dynamics", "joint_state", "cartesian_state",
                 "inverse_dynamics_joint", "friction_torque", "mass_matrix", "coriolis_matrix",
                 "gravity_vector", "energy", "regressor", "regressor_joint", "joint_space_sample",
                 "inverse_dynamics_sample"),
    "simulate": ("step",),
}


@dataclass(frozen=True)
class Kind:
    """One kind of Delta robot: its name (the robot file's ``type``), its package (holding the
    modules of :data:`INTERFACE`, ``model`` with the classes named here, ``identification``
    and ``demo``) and the units of its joints (:func:`joint_units`)."""

    name: str
    package: str
    model: str                 # class name of the model in <package>.model
    parameters: str            # class name of its lumped parameters (``model.params``) in <package>.model
    units: dict = field(default_factory=dict)


#: The robot kinds, by the robot file's ``type``.
KINDS = Registry("robot kind")
KINDS.register("rotary", "delta_dynamics.rotary:KIND", description="Asadi & Heydari 2020: arms on motor axes")
KINDS.register("linear", "delta_dynamics.linear:KIND", description="Colombo & Lentini 2020: carriages on rails")


class KindTable:
    """The implementation of every :data:`INTERFACE` function for one kind, as attributes
    (``table.inverse_dynamics(m, X, Xd, Xdd)``), plus ``kind`` (:class:`Kind`), ``units``,
    ``parameter_names``, ``model_class``, ``parameters`` (the lumped-parameter class) and,
    resolved on first use (they import the identification pipeline), ``parameter_set``,
    ``physical_from_lumped``, ``update_assumptions`` (what the latter holds fixed),
    ``lumped_bounds`` (plausibility bounds of the lumped parameters by kind of parameter) and
    ``demo`` (``run(robot, out)``). Built once per kind (:func:`table`)."""

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
        model_mod = importlib.import_module(f"{kind.package}.model")
        self.parameter_names = tuple(model_mod.PARAMETER_NAMES)
        self.model_class = getattr(model_mod, kind.model)
        self.parameters = getattr(model_mod, kind.parameters)
        self.lumped_bounds = model_mod.LUMPED_BOUNDS
        self._lazy = {"parameter_set": ("identification", "parameter_set"),
                      "physical_from_lumped": ("identification", "physical_from_lumped"),
                      "update_assumptions": ("identification", "ASSUMPTIONS"),
                      "demo": ("demo", "run")}

    def __getattr__(self, name):
        # identification pieces import the pipeline's modules, the demo matplotlib: on first use only
        where = self.__dict__.get("_lazy", {}).get(name)
        if where is None:
            raise AttributeError(name)
        value = getattr(importlib.import_module(f"{self.kind.package}.{where[0]}"), where[1])
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"<KindTable {self.kind.name}>"


_TABLES: dict = {}


def table(kind: str) -> KindTable:
    """The :class:`KindTable` of ``kind`` (built on the first call, then shared); an unknown
    kind raises :class:`delta_core.plugins.PluginError` naming the known ones."""
    t = _TABLES.get(kind)
    if t is None:
        t = _TABLES[kind] = KindTable(KINDS.get(kind))
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
    """``"rotary"`` or ``"linear"`` for a model or a loaded robot file."""
    kind = getattr(model_or_robot, "kind", None)
    if kind is None:
        robot = getattr(model_or_robot, "robot", model_or_robot)
        kind = getattr(robot, "type", "rotary")
    return kind


def model_for(robot, friction: bool = True):
    """The model of a robot file (preset name, path or loaded robot file), of its kind: the one
    place that reads the robot file's ``type``. A builder: called with a name it reads the
    file (at the edge); everything below passes the loaded robot file."""
    params = load_robot(robot)
    m = table(params.type).model_class(params)
    return m if friction else m.without_friction()


def same_kind_model(robot, like, what: str = "robot", friction: bool = True):
    """The model of ``robot`` (as :func:`model_for`) if it is of the same kind as ``like`` (a
    model or loaded robot parameters: the robot being driven); else :class:`RobotFileError`
    naming ``what`` (the parameter or option), the file and both kinds. A feedforward model
    of a linear Delta on a rotary one computes forces in N for carriages that are not there.

    >>> same_kind_model("d3s800", model_for("nt_robot")).robot.name
    'd3s800'
    >>> try:
    ...     same_kind_model("colombo2020", model_for("nt_robot"), "feedforward_robot")
    ... except RobotFileError as e:
    ...     print(str(e).split(".yaml) ")[1])
    is a linear Delta, but the robot driven (nt_robot) is a rotary one: a robot file of the other kind is refused
    """
    params = load_robot(robot)
    want = kind_of(like)
    if params.type != want:
        ref = getattr(like, "robot", like)
        source = params.source or str(robot)
        raise RobotFileError(
            f"{what}: {params.name} ({source}) is a {params.type} Delta, but the robot driven "
            f"({getattr(ref, 'name', '?')}) is a {want} one: a robot file of the other kind is refused")
    return model_for(params, friction)


def joint_units(model) -> dict:
    """Units of the joints of ``model``'s kind (``position``, ``velocity``, ``acceleration``,
    ``effort``, ``gain_p``, ``gain_d``), the CSV prefix of their efforts (``effort_column``:
    ``tau`` or ``f``), what the effort is called (``torque`` / ``force``) and what a joint is
    called in messages (``joint`` / ``carriage``). Works on a model or a loaded robot file."""
    return dict(KINDS.get(kind_of(model)).units)
