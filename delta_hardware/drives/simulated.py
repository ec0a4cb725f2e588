"""The simulated robot behind the drive interface: the default backend everywhere.

The robot's forward dynamics (:func:`delta_dynamics.simulate.step`, Asadi & Heydari eq. 43,
with friction) is stepped at the drive rate. What the drives report is what real ones would:
encoder-quantised positions, noisy velocities and torques. The simulated robot may differ
from the controller's robot file (``true_robot``, a payload), so identification has
something to find.

Brakes: while the axes are not in operation enabled (disabled, quick stop, fault) the arms
are held still, as a Delta robot's holding brakes do.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from delta_core.robot_file import RobotParameters, load_robot
from delta_dynamics.dynamics import joint_state
from delta_dynamics.kinematics import (UnreachableError, forward_kinematics, inverse_kinematics,
                                       workspace_centre)
from delta_dynamics.model import DeltaModel
from delta_dynamics.simulate import step
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode
from delta_hardware.drives.scaling import AxisScaling


class SimulatedDriveSet(DriveSet):
    """Three simulated servo axes on a simulated Delta robot.

    Parameters: ``robot`` (the controller's robot file, for names and limits),
    ``true_robot`` (the physics; defaults to ``robot``), ``payload`` (kg added to the
    platform), ``drive_rate`` (Hz of the physics step), ``counts_per_rev`` (motor encoder),
    ``torque_noise`` / ``velocity_noise`` (standard deviations, N m and rad/s),
    ``initial_position`` (platform, m; default the workspace centre), ``mode``,
    ``position_gains`` (kp, kd of the drive's own loop in position mode), ``seed``.
    """

    def __init__(self, robot, true_robot=None, payload: float = 0.0, drive_rate: float = 1000.0,
                 counts_per_rev: int = 2 ** 17, torque_noise: float = 0.0, velocity_noise: float = 0.0,
                 initial_position=None, mode: Mode | str = Mode.TORQUE,
                 position_gains=(4000.0, 80.0), seed: int | None = 0):
        self.robot: RobotParameters = load_robot(robot)
        true = load_robot(true_robot) if true_robot not in (None, "") else self.robot
        if payload < 0 or not math.isfinite(payload):
            raise DriveError(f"simulated payload must be a finite mass >= 0 kg, got {payload}")
        if payload:
            m = true.mass
            true = true.replace(mass=m.__class__(**{**m.__dict__, "payload_mass": m.payload_mass + payload}))
        if not drive_rate > 0:
            raise DriveError(f"drive_rate must be > 0 Hz, got {drive_rate}")
        self.true_robot = true
        self.model = DeltaModel(true)
        self.drive_rate = float(drive_rate)
        self.mode = Mode[mode.upper()] if isinstance(mode, str) else mode
        self.kp, self.kd = (float(g) for g in position_gains)
        gear = self.robot.mass.motor.gear_ratio
        self.scaling = [AxisScaling(counts_per_rev=counts_per_rev, gear_ratio=gear) for _ in range(3)]
        self.torque_noise = float(torque_noise)
        self.velocity_noise = float(velocity_noise)
        self.torque_limit = tuple(self.robot.limits.torque)
        self._rng = np.random.default_rng(seed)
        X0 = workspace_centre(self.model) if initial_position is None else np.asarray(initial_position, float)
        inverse_kinematics(self.model, X0)             # raises a clear error if unreachable
        self._X = tuple(float(v) for v in X0)
        self._V = (0.0, 0.0, 0.0)
        self._state = DriveState.DISABLED
        self._faults: dict = {}
        self._cmd_torque = (0.0, 0.0, 0.0)
        self._cmd_position = None
        self._cmd_velocity = (0.0, 0.0, 0.0)
        self._applied = (0.0, 0.0, 0.0)
        self._lock = threading.Lock()
        self.time = 0.0

    # ------------------------------------------------------------------ state machine
    @property
    def state(self) -> DriveState:
        return self._state

    def enable(self) -> None:
        with self._lock:
            if self._state is DriveState.FAULT:
                raise DriveError(f"cannot enable: axis {self._first_fault()} is in fault; reset first")
            if self._state is not DriveState.ENABLED:
                # like CSP on a real drive: the target starts at the actual position
                self._cmd_position = self._joint_positions()
                self._cmd_velocity = (0.0, 0.0, 0.0)
                self._cmd_torque = (0.0, 0.0, 0.0)
                self._state = DriveState.ENABLED

    def disable(self) -> None:
        with self._lock:
            if self._state is not DriveState.FAULT:
                self._state = DriveState.DISABLED
            self._V = (0.0, 0.0, 0.0)

    def quick_stop(self, reason: str = "") -> None:
        with self._lock:
            if self._state is not DriveState.FAULT:
                self._state = DriveState.QUICK_STOP
            self._V = (0.0, 0.0, 0.0)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            if self._state in (DriveState.FAULT, DriveState.QUICK_STOP):
                self._state = DriveState.DISABLED

    def inject_fault(self, axis: int, reason: str) -> None:
        """Put ``axis`` (0-2) into fault (for tests and demos); all axes stop."""
        with self._lock:
            self._faults[axis] = reason
            self._state = DriveState.FAULT
            self._V = (0.0, 0.0, 0.0)

    def _first_fault(self):
        k = min(self._faults) if self._faults else 0
        return f"{k + 1} ({self.robot.joint_names[k]}): {self._faults.get(k, 'fault')}"

    # ------------------------------------------------------------------ cyclic exchange
    def write(self, torque=None, position=None, velocity=None) -> None:
        if self._state is not DriveState.ENABLED:
            raise DriveError(f"drives are {self._state.value}, not operation enabled: command refused")
        with self._lock:
            if torque is not None:
                self._cmd_torque = _finite3(torque, "torque")
            if position is not None:
                self._cmd_position = _finite3(position, "position")
            if velocity is not None:
                self._cmd_velocity = _finite3(velocity, "velocity")

    def cycle(self, dt: float) -> None:
        n = max(1, int(round(dt * self.drive_rate)))
        h = dt / n
        with self._lock:
            for _ in range(n):
                self._physics_step(h)
            self.time += dt

    def _physics_step(self, h: float) -> None:
        if self._state is not DriveState.ENABLED:
            self._applied = (0.0, 0.0, 0.0)
            return                                      # brakes hold the arms
        if self.mode is Mode.POSITION:
            q, qd = self._joint_positions(), self._joint_velocities()
            tau = [self.kp * (self._cmd_position[i] - q[i]) + self.kd * (self._cmd_velocity[i] - qd[i])
                   + self._cmd_torque[i] for i in range(3)]
        else:
            tau = self._cmd_torque
        lim = self.torque_limit
        tau = tuple(min(max(float(t), -lim[i]), lim[i]) for i, t in enumerate(tau))
        self._applied = tau
        try:
            X, V = step(self.model, self._X, self._V, tau, h)
            inverse_kinematics(self.model, X)
        except UnreachableError as e:
            self._faults = {i: f"mechanism left its workspace ({e})" for i in range(3)}
            self._state = DriveState.FAULT
            self._V = (0.0, 0.0, 0.0)
            return
        self._X, self._V = X, V

    # ------------------------------------------------------------------ feedback
    def _joint_positions(self):
        return tuple(inverse_kinematics(self.model, self._X).tolist())

    def _joint_velocities(self):
        return tuple(joint_state(self.model, self._X, self._V)[1].tolist())

    def read(self) -> Feedback:
        with self._lock:
            q, qd, _ = joint_state(self.model, self._X, self._V)
            q = [s.quantize_position(v) for s, v in zip(self.scaling, q.tolist())]
            qd = qd.tolist()
            tau = list(self._applied)
            if self.velocity_noise:
                qd = [v + self.velocity_noise * self._rng.standard_normal() for v in qd]
            if self.torque_noise:
                tau = [t + self.torque_noise * self._rng.standard_normal() for t in tau]
            return Feedback(tuple(q), tuple(qd), tuple(tau), self._state, dict(self._faults))

    # ------------------------------------------------------------------ for tests and tools
    @property
    def platform_position(self) -> np.ndarray:
        """The true platform position (m) of the simulated robot."""
        return np.array(self._X)

    def set_joint_positions(self, q) -> None:
        """Place the simulated robot at joint angles ``q`` at rest (only while not enabled)."""
        if self._state is DriveState.ENABLED:
            raise DriveError("cannot move the simulated robot by hand while enabled")
        with self._lock:
            self._X = tuple(forward_kinematics(self.model, np.asarray(q, float)).tolist())
            self._V = (0.0, 0.0, 0.0)


def _finite3(v, name):
    t = tuple(float(x) for x in v)
    if len(t) != 3 or not all(math.isfinite(x) for x in t):
        raise DriveError(f"{name} command must be 3 finite numbers, got {list(v)!r}")
    return t
