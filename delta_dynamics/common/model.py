"""The immutable-model base every robot kind's model stands on, and the lumped parameters'
common shape.

A kind's model (Pinocchio's ``Model``) holds only what does not change from one call to the
next: the loaded robot file, the lumped dynamic parameters and what the algorithms precompute
from them. :class:`KindModel` holds what every kind has (friction, joint limits, gravity),
refuses assignment after construction and builds the same model with other parameters. A
kind's lumped parameters are a frozen dataclass on :class:`LumpedParameters`: two scalars,
then four per-joint triples of which the last two are the viscous and Coulomb friction, then
the static (break-away) efforts and the two friction velocities. ``as_vector`` lays them out
as 14 numbers (friction at entries 8-10 and 11-13 for every kind); an identified robot file
carries that vector in ``metadata.identified.lumped_parameters`` (``{names, values, static}``),
read by :meth:`LumpedParameters.identified`.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from delta_core.robot_file import RobotFileError, RobotParameters, check_bound, load_robot


def read_identified_lumped(robot, names, kinds: dict, bounds: dict, static_unit: str):
    """(values (14,), static (3,)) of ``robot``'s identified lumped parameters, or None if it has
    none. ``names``: the kind's parameter names in order; ``kinds``: parameter name (and
    ``static_1..3``) -> bound kind in ``bounds``; ``static_unit``: "torques" or "forces" (for the
    message). A malformed or implausible entry raises RobotFileError naming it."""
    ident = (robot.metadata or {}).get("identified")
    lp = ident.get("lumped_parameters") if isinstance(ident, dict) else None
    if lp is None:
        return None
    where = f"{robot.source or robot.name}: metadata.identified.lumped_parameters"
    if not isinstance(lp, dict):
        raise RobotFileError(f"{where} must be a mapping with names, values and static")
    got, values = lp.get("names"), lp.get("values")
    if list(got or []) != list(names):
        raise RobotFileError(f"{where}.names must be {list(names)}, got {got!r}")
    try:
        v = np.asarray(values, dtype=float)
        static = np.asarray(lp.get("static", v[11:14]), dtype=float)
    except (TypeError, ValueError, IndexError):
        raise RobotFileError(f"{where}: values and static must be numbers") from None
    if v.shape != (14,) or static.shape != (3,) or not (np.isfinite(v).all() and np.isfinite(static).all()):
        raise RobotFileError(f"{where}: need 14 finite values and 3 finite static {static_unit}")
    for name, x in [*zip(names, v), *((f"static_{j + 1}", x) for j, x in enumerate(static))]:
        why = check_bound(bounds[kinds[name]], x)
        if why:
            raise RobotFileError(f"{where}: {name} {why}")
    return v, static


class LumpedParameters:
    """Base of a kind's lumped parameters (subclassed by a frozen dataclass whose first six
    fields are two scalars and four per-joint triples, the last two viscous and Coulomb, then
    ``static``, ``stribeck_velocity``, ``smoothing_velocity``), declared with its tables:
    ``names`` (the 14 names of :meth:`as_vector`), ``kinds`` (name, and ``static_1..3`` -> kind
    of parameter), ``bounds`` (kind -> plausibility bound), ``efforts`` ("torques" or
    "forces", for messages) and ``velocities`` (the default Stribeck and smoothing velocities
    of :meth:`from_vector`)."""

    NAMES: tuple = ()
    KINDS: dict = {}
    BOUNDS: dict = {}
    EFFORTS = "efforts"
    STRIBECK_VELOCITY, SMOOTHING_VELOCITY = 0.05, 0.002

    def __init_subclass__(cls, names=(), kinds=None, bounds=None, efforts="efforts", velocities=(0.05, 0.002),
                          **options):
        super().__init_subclass__(**options)
        cls.NAMES, cls.KINDS, cls.BOUNDS, cls.EFFORTS = tuple(names), dict(kinds or {}), dict(bounds or {}), efforts
        cls.STRIBECK_VELOCITY, cls.SMOOTHING_VELOCITY = velocities

    def as_vector(self) -> np.ndarray:
        """The 14 linear parameters in ``NAMES`` order."""
        a, b, c, d, e, f = (getattr(self, x.name) for x in dataclasses.fields(self)[:6])
        return np.array([a, b, *c, *d, *e, *f], dtype=float)

    @classmethod
    def from_vector(cls, pi, *, static=None, stribeck_velocity=None, smoothing_velocity=None):
        """Inverse of :meth:`as_vector`; the Stribeck break-away effort defaults to Coulomb, the
        friction velocities to the kind's defaults."""
        pi = [float(v) for v in np.asarray(pi, dtype=float).reshape(-1)]
        if len(pi) != len(cls.NAMES):
            raise ValueError(f"parameter vector must have {len(cls.NAMES)} entries, got {len(pi)}")
        coulomb = tuple(pi[11:14])
        a, b, c, d, e, f = (x.name for x in dataclasses.fields(cls)[:6])
        return cls(**{a: pi[0], b: pi[1], c: tuple(pi[2:5]), d: tuple(pi[5:8]), e: tuple(pi[8:11]),
                      f: coulomb},
                   static=tuple(static) if static is not None else coulomb,
                   stribeck_velocity=cls.STRIBECK_VELOCITY if stribeck_velocity is None else stribeck_velocity,
                   smoothing_velocity=cls.SMOOTHING_VELOCITY if smoothing_velocity is None else smoothing_velocity)

    @classmethod
    def identified(cls, robot: RobotParameters):
        """The parameters ``metadata.identified.lumped_parameters`` of an identified robot file
        holds (with the file's friction velocities), or None; a malformed entry raises
        RobotFileError."""
        found = read_identified_lumped(robot, cls.NAMES, cls.KINDS, cls.BOUNDS, cls.EFFORTS)
        if found is None:
            return None
        v, static = found
        f = robot.friction
        return cls.from_vector(v, static=tuple(static.tolist()), stribeck_velocity=f.stribeck_velocity,
                               smoothing_velocity=f.smoothing_velocity)


class KindModel:
    """The immutable-model base: ``robot`` (the loaded robot file), ``params`` (the kind's
    :class:`LumpedParameters`), gravity ``g`` (m/s^2), the friction of each joint (``viscous``,
    ``coulomb``, ``static``, ``v_stribeck``, ``v_smooth``, ``stribeck``: any static effort
    differs from its Coulomb one) and the position limits ``q_lo``, ``q_hi``. A kind's model
    adds its geometry and mass parameters (its own ``__slots__``) and sets ``kind`` and ``ops``
    (:mod:`delta_dynamics.kinds`)."""

    kind: str = ""
    __slots__ = ("robot", "params", "g", "viscous", "coulomb", "static", "v_stribeck", "v_smooth",
                 "stribeck", "q_lo", "q_hi")

    @classmethod
    def require_kind(cls, robot) -> None:
        """Refuse (ValueError, by name) a robot file of another kind than this model's."""
        if getattr(robot, "type", None) != cls.kind:
            raise ValueError(f"robot {getattr(robot, 'name', robot)!r} is of type {getattr(robot, 'type', None)!r}; "
                             f"{cls.__name__} needs a {cls.kind!r} robot file (build the model of "
                             "either kind with delta_dynamics.kinds.model_for)")

    def __init__(self, robot: RobotParameters, params):
        s = object.__setattr__
        s(self, "robot", robot)
        s(self, "params", params)
        s(self, "g", robot.gravity)
        s(self, "viscous", tuple(float(v) for v in params.viscous))
        s(self, "coulomb", tuple(float(v) for v in params.coulomb))
        s(self, "static", tuple(float(v) for v in params.static))
        s(self, "v_stribeck", float(params.stribeck_velocity))
        s(self, "v_smooth", float(params.smoothing_velocity))
        s(self, "stribeck", any(a != b for a, b in zip(params.static, params.coulomb)))
        s(self, "q_lo", tuple(lo for lo, _ in robot.limits.position))
        s(self, "q_hi", tuple(hi for _, hi in robot.limits.position))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one (with_parameters)")

    @classmethod
    def from_robot(cls, robot: str | os.PathLike | RobotParameters, **options):
        """A model from a robot preset name, a robot file path or a loaded robot file (a builder:
        it reads the file; ``options`` go to the constructor)."""
        return cls(load_robot(robot), **options)

    def with_parameters(self, params):
        """The same geometry with other dynamic parameters (e.g. identified ones)."""
        return type(self)(self.robot, params)

    def without_friction(self):
        """The same model with every friction effort zero."""
        zero = (0.0, 0.0, 0.0)
        return self.with_parameters(dataclasses.replace(self.params, viscous=zero, coulomb=zero, static=zero))

    @property
    def joint_names(self) -> tuple:
        """The actuated joints' names (robot file order)."""
        return self.robot.joint_names
