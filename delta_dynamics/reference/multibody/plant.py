"""The multibody simulator as a plant for the simulated drives (:class:`delta_dynamics.plant.Plant`).

Each :meth:`MultibodyPlant.step` is one step of :func:`.integrate.step_semi_implicit`:
symplectic Euler on the bodies of :class:`.system.MultibodySystem` with the torques held,
joint friction linearly implicit, and projection onto the constraint manifold (one
simplified-Newton iteration with the step's own factorisation: the residual stays below
~1e-9 m). About 0.16 ms of CPU per step on this project's machine: ~6x real time at 1 kHz
(``bench/bench_plants.py``).

It models the robot body by body (full inertia tensors, the forearm's rotation), so run
against the controller's explicit model it is a plant of different structure; with the
body set derived from a robot file's lumped fields both describe the same mechanism up to
the forearm's axial inertia, and agree to ~10 um over a second (``test/test_multibody_plant.py``).

>>> plant = MultibodyPlant("nt_robot")
>>> plant.place([0.3, 0.3, 0.3])
>>> plant.step([0.0, 0.0, 0.0], 0.001)            # unpowered arms start to fall
>>> q, qd = plant.joint_state()
>>> [round(v, 5) for v in q], all(v > 0 for v in qd)
([0.30001, 0.30001, 0.30001], True)
"""
from __future__ import annotations

import math

import numpy as np

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import UnreachableError, forward_kinematics, workspace_centre
from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, check_branch, joint_angles,
                                                         joint_rates, place_platform, platform_position,
                                                         residuals, violation)
from delta_dynamics.reference.multibody.integrate import step_semi_implicit
from delta_dynamics.reference.multibody.system import MultibodySystem
from delta_dynamics.plant import Plant


class MultibodyPlant(Plant):
    """A simulated robot on the multibody model of ``robot`` (a preset name, robot file or
    loaded RobotParameters: the *true* robot, payload included, e.g. via
    :func:`delta_hardware.drives.simulated.with_payload`). ``friction``: the robot file's
    joint friction at the motor joints; ``stabilisation``: ``projection`` (default) or
    ``baumgarte``. Raises UnreachableError from :meth:`step` when an arm passes the edge of
    the workspace (its forearm and upper arm align) or the constraints become singular;
    the state is then left as it was."""

    max_step = 1e-3

    def __init__(self, robot, friction: bool = True, stabilisation: str = "projection",
                 system: MultibodySystem | None = None):
        # the fixed base never moves: the plant leaves it out (the ground holds the shoulders)
        self.system = system if system is not None else MultibodySystem(load_robot(robot), include_base=False)
        self.robot = self.system.robot
        self.friction = Friction(self.robot, enabled=friction)
        if stabilisation not in ("projection", "baumgarte"):
            raise ValueError(f"stabilisation must be 'projection' or 'baumgarte', got {stabilisation!r}")
        self.stabilisation = stabilisation
        self._ev = Evaluation(self.system)
        self._st = place_platform(self.system, workspace_centre(self.system.kinematics))
        self._js = None

    def place(self, q) -> None:
        """Put the robot at rest at joint angles ``q`` (rad)."""
        q = np.asarray(q, dtype=float)
        X = forward_kinematics(self.system.kinematics, q)
        self._st = place_platform(self.system, X, q=q)
        self._js = None

    def place_platform(self, X) -> None:
        """Put the robot at rest with the platform at ``X`` (raises if unreachable)."""
        self._st = place_platform(self.system, np.asarray(X, dtype=float))
        self._js = None

    def step(self, tau, dt: float) -> None:
        """Advance ``dt`` s under the arm torques ``tau`` (N m), in steps of at most ``max_step``."""
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"step must be a finite time > 0 s, got {dt}")
        new = step_semi_implicit(self.system, self._ev, self._st, tau, dt, self.friction, self.stabilisation)
        check_branch(self.system, new, tol=1e-4)
        self._st = new
        self._js = None

    def joint_state(self):
        """(q, q_dot) of the three arms."""
        if self._js is None:
            s = self.system
            self._js = (tuple(joint_angles(s, self._st).tolist()), tuple(joint_rates(s, self._st).tolist()))
        return self._js

    def platform_position(self) -> np.ndarray:
        """The platform centre (m), shape (3,)."""
        return platform_position(self.system, self._st)

    def platform_velocity(self) -> np.ndarray:
        """The platform's velocity (m/s)."""
        return self._st.vel[self.system.platform].copy()

    def brake(self) -> None:
        """Stop every motion at once (the holding brakes of a disabled robot)."""
        self._st.vel[:] = 0.0
        self._st.omega[:] = 0.0
        self._js = None

    def violation(self) -> float:
        """The largest constraint residual of the current state (m)."""
        return violation(self.system, residuals(self.system, self._st))

    @property
    def state(self):
        """The bodies' state (:class:`.dynamics.State`), for tools and tests."""
        return self._st


__all__ = ["MultibodyPlant", "UnreachableError"]
