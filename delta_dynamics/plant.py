"""Plants: a simulated robot body that the simulated drives step, one interface for every
physics model.

A plant holds the state of one simulated robot and advances it under joint efforts (N m at
the arms of a rotary Delta, N on the carriages of a linear one) held constant over each step,
as a drive holds its last target between two cycles. The simulated drives
(:mod:`delta_hardware.drives.simulated`) only talk to this interface, so the physics behind
them can be the controller's own explicit model (:class:`ExplicitPlant`, the fastest) or a
model of different structure (the multibody simulator, MuJoCo) without the drives, the
control loop or the nodes knowing which.

>>> from delta_core.robot_file import load_robot
>>> plant = ExplicitPlant(model_for("nt_robot"))
>>> plant.place([0.3, 0.3, 0.3])
>>> plant.step([0.0, 0.0, 0.0], 0.001)          # unpowered arms start to fall
>>> q, qd = plant.joint_state()
>>> [round(v, 5) for v in q], all(v > 0 for v in qd)
([0.30001, 0.30001, 0.30001], True)
>>> linear = make_plant("explicit", load_robot("colombo2020"))
>>> linear.step([0.0, 0.0, 0.0], 0.001)         # unpowered carriages slide down
>>> all(v < 0 for v in linear.joint_state()[1])
True

Disturbances for tests and users: :meth:`Plant.set_external_force` pushes the platform (held
until changed, zero removes it), :meth:`Plant.set_payload` changes the simulated payload while
the controller's model stays as it was.

The explicit plant serves either kind of Delta (through :mod:`delta_dynamics.algorithms`);
the multibody and MuJoCo plants model rotary Deltas only and refuse a linear robot file. All three
honour per-arm geometry (``geometry.per_arm``, a calibrated robot); a plant plug-in registered
without ``per_arm`` refuses such a file.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from delta_core.plugins import PluginError, Registry
from delta_dynamics.algorithms import (forward_kinematics, inverse_kinematics, joint_state, model_with_payload, step,
                                      workspace_centre)
from delta_dynamics.kinds import model_for


class Plant(ABC):
    """A simulated robot: its state, and a step under constant joint efforts.

    ``step`` raises :class:`delta_dynamics.algorithms.UnreachableError` when the mechanism
    would leave its workspace (the state then stays where it was).
    """

    #: physics time step the plant wants (s); the drives split longer intervals into steps of at most this
    max_step: float = 1e-3

    @abstractmethod
    def place(self, q) -> None:
        """Put the robot at rest at joint positions ``q``."""

    @abstractmethod
    def step(self, tau, dt: float) -> None:
        """Advance ``dt`` seconds under the joint efforts ``tau`` (3 floats)."""

    @abstractmethod
    def joint_state(self) -> tuple[tuple, tuple]:
        """(q, q_dot) of the three actuated joints, tuples of floats."""

    @abstractmethod
    def platform_position(self) -> np.ndarray:
        """The platform centre in ``base_link`` (m), shape (3,)."""

    def brake(self) -> None:
        """Stop every motion at once (the holding brakes of a disabled robot)."""
        q, _ = self.joint_state()
        self.place(q)

    def set_external_force(self, F) -> None:
        """Apply the force ``F`` (3 floats, N, ``base_link``) at the platform centre from the
        next step on, held until the next call; a zero force removes it. Plants that cannot
        raise NotImplementedError."""
        raise NotImplementedError(f"the {type(self).__name__} takes no external force")

    def set_payload(self, mass: float) -> None:
        """Make the simulated payload ``mass`` kg (a point mass at the platform centre) from
        the next step on, in place of the robot file's; the controller's model is not
        changed. Plants that cannot raise NotImplementedError."""
        raise NotImplementedError(f"the {type(self).__name__} cannot change its payload")


def check_platform_force(F) -> tuple | None:
    """``F`` (N) as a tuple of 3 floats, None when it is zero; ValueError naming it otherwise.

    >>> check_platform_force([0, 0, -30]), check_platform_force([0, 0, 0])
    ((0.0, 0.0, -30.0), None)
    """
    try:
        f = tuple(float(v) for v in F)
    except (TypeError, ValueError):
        f = ()
    if len(f) != 3 or not all(math.isfinite(v) for v in f):
        raise ValueError(f"external platform force must be 3 finite numbers (N, base_link), got {F!r}")
    return None if not any(f) else f


#: The largest payload (kg) a plant takes at run time: the robot file's bound
#: (``mass_properties.payload.mass``).
PAYLOAD_MAX = 1000.0


def check_payload(mass) -> float:
    """``mass`` (kg) as a float in [0, :data:`PAYLOAD_MAX`]; ValueError naming it otherwise."""
    try:
        m = float(mass)
    except (TypeError, ValueError):
        m = float("nan")
    if not (math.isfinite(m) and 0.0 <= m <= PAYLOAD_MAX):
        raise ValueError(f"payload mass must be a finite number in [0, {PAYLOAD_MAX:g}] kg, got {mass!r}")
    return m


class ExplicitPlant(Plant):
    """The explicit model's forward dynamics (Asadi & Heydari eq. 43; for a linear Delta the
    same form of Colombo & Lentini's model) with the fixed-step integrator of
    :func:`delta_dynamics.algorithms.step` (semi-implicit by default). ``model``: a model of
    either kind (:func:`delta_dynamics.kinds.model_for`)."""

    def __init__(self, model, method: str = "semi-implicit"):
        self.model = model
        self.method = method
        self.payload_mass = float(model.robot.mass.payload_mass)     # kg, in the model's m_x
        self._F = None
        self._joint_state = None                   # (X, V, model, (q, q_dot)) of the last state asked
        self.place_platform(workspace_centre(model))

    def set_external_force(self, F) -> None:
        """Apply ``F`` (N, ``base_link``) at the platform from the next step on, held until
        changed (the F_P of eq. 39); zero removes it."""
        self._F = check_platform_force(F)

    def set_payload(self, mass: float) -> None:
        """The simulated payload becomes ``mass`` kg: the plant's model gets m_x + (mass - the
        payload it had); the platform state is kept."""
        mass = check_payload(mass)
        self.model = model_with_payload(self.model, mass - self.payload_mass)
        self.payload_mass = mass

    def place(self, q) -> None:
        """Put the robot at rest at joint positions ``q`` (rad or m)."""
        self._X = tuple(forward_kinematics(self.model, np.asarray(q, dtype=float)).tolist())
        self._V = (0.0, 0.0, 0.0)

    def place_platform(self, X) -> None:
        """Put the robot at rest with the platform at ``X`` (raises if unreachable)."""
        inverse_kinematics(self.model, np.asarray(X, dtype=float))
        self._X = tuple(float(v) for v in X)
        self._V = (0.0, 0.0, 0.0)

    def step(self, tau, dt: float) -> None:
        """Advance ``dt`` s under the efforts ``tau`` with the kind's fixed step; raises
        UnreachableError (the state unchanged) when the platform would leave the workspace."""
        X, V = step(self.model, self._X, self._V, tau, dt, self.method, self._F)
        inverse_kinematics(self.model, X)            # raises UnreachableError outside the workspace
        self._X, self._V = X, V

    def joint_state(self):
        """(q, q_dot) of the actuated joints, from the platform state (computed once per
        state: the drives ask at the start of a step and the feedback at its end)."""
        X, V, model = self._X, self._V, self.model
        last = self._joint_state
        if last is not None and last[0] is X and last[1] is V and last[2] is model:
            return last[3]
        q, qd, _ = joint_state(model, X, V)
        js = (tuple(q.tolist()), tuple(qd.tolist()))
        self._joint_state = (X, V, model, js)
        return js

    def platform_position(self) -> np.ndarray:
        """The platform centre (m), shape (3,)."""
        return np.array(self._X)

    def brake(self) -> None:
        """Stop at once where the platform is (zero velocity)."""
        self._V = (0.0, 0.0, 0.0)


#: The plants by name, one registration line each (:class:`delta_core.plugins.Registry`): the
#: factory ``f(robot) -> Plant`` of a loaded robot file, imported when chosen (MuJoCo is an
#: optional dependency), and the robot kinds (``type``) it models. ``explicit`` is the
#: controller's own model, the fastest; ``multibody`` (Elshami et al.'s multibody model) and
#: ``mujoco`` differ from it in structure (:mod:`delta_dynamics.reference`). ``per_arm``: the plant
#: honours ``geometry.per_arm`` (a calibrated robot); the others refuse such a file.
PLANTS = Registry("plant")
PLANTS.register("explicit", "delta_dynamics.plant:explicit_plant", kinds=("rotary", "linear"), per_arm=True)
PLANTS.register("multibody", "delta_dynamics.reference.multibody.plant:MultibodyPlant", kinds=("rotary",),
                per_arm=True)
PLANTS.register("mujoco", "delta_dynamics.reference.mujoco_model.plant:MujocoPlant", kinds=("rotary", "linear"),
                per_arm=True)


def explicit_plant(robot) -> ExplicitPlant:
    """The :class:`ExplicitPlant` of a loaded robot file (either kind)."""
    return ExplicitPlant(model_for(robot))


def make_plant(kind: str, robot) -> Plant:
    """The plant ``kind`` (a name of :data:`PLANTS`) of the loaded robot file ``robot``;
    ValueError naming the choices, a plant that does not model this kind of robot (or its
    per-arm geometry), or what is missing to build it."""
    if kind not in PLANTS:
        raise ValueError(f"plant must be one of {', '.join(PLANTS.names())}, got {kind!r}")
    rtype = getattr(robot, "type", "rotary")
    if rtype not in PLANTS.info(kind).get("kinds", ()):
        can = [k for k in PLANTS.names() if rtype in PLANTS.info(k).get("kinds", ())]
        raise ValueError(f"plant {kind} models rotary Delta robots only; robot {robot.name} is a {rtype} "
                         f"Delta: use plant {' or '.join(can)}")
    if getattr(robot.geometry, "per_arm", None) is not None and not PLANTS.info(kind).get("per_arm", False):
        can = [k for k in PLANTS.names() if PLANTS.info(k).get("per_arm", False)]
        raise ValueError(f"plant {kind} models three identical chains; robot {robot.name} has geometry.per_arm "
                         f"(a calibrated robot): use plant {' or '.join(can)}")
    try:
        factory = PLANTS.get(kind)
    except PluginError as e:
        raise ValueError(str(e)) from None
    return factory(robot)
