"""The simulated robot behind the drive interface: the default backend everywhere.

A plant (:mod:`delta_dynamics.plant`; by default the explicit model's forward dynamics,
Asadi & Heydari eq. 43, with friction) is stepped at the drive rate. What the drives report is what real ones would:
encoder-quantised positions, noisy velocities and torques. The simulated robot may differ
from the controller's robot file (``true_robot``, a payload), so identification has
something to find.

Brakes: while the axes are not in operation enabled (disabled, quick stop, fault) the arms
are held still, as a Delta robot's holding brakes do.

Either kind of Delta: the axes of a rotary robot turn its arms (rad, N m); those of a linear
one move its carriages along the rails (m, N; the encoder counts motor turns through
``gear_ratio`` = 2 pi / travel_per_revolution motor rad per metre).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from delta_core.robot_file import RobotFileError, RobotParameters, load_robot
from delta_dynamics.algorithms import UnreachableError, inverse_kinematics
from delta_dynamics.kinds import model_for, same_kind_model
from delta_dynamics.plant import PLANTS, Plant, make_plant
from delta_hardware.drives.bus import BusParameter, DriveBus
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode
from delta_hardware.drives.scaling import AxisScaling


class SimulatedDriveSet(DriveSet):
    """Three simulated servo axes on a simulated Delta robot.

    Parameters: ``robot`` (the controller's robot file, loaded or a name: joint names,
    limits, gear), ``plant`` (the physics, a :class:`delta_dynamics.plant.Plant`; default the
    explicit model of ``true_robot``), ``true_robot`` (robot file of the default plant;
    defaults to ``robot``), ``payload`` (kg added to the default plant's platform),
    ``drive_rate`` (Hz of the physics step), ``counts_per_rev`` (motor encoder),
    ``torque_noise`` / ``velocity_noise`` (standard deviations, N m and rad/s; N and m/s on
    a linear robot),
    ``initial_position`` (platform, m; default the workspace centre), ``mode``,
    ``position_gains`` (kp, kd of the drive's own loop in position mode), ``seed``.

    :meth:`cycle` advances the plant by ``dt`` under the targets of the last :meth:`write`,
    held over the whole interval as a real drive holds its last target; the control loop
    calls it first in each cycle (the time since the previous one passes), then reads the
    feedback and writes the new targets. The measurement noise is drawn per physics step, so
    a run in simulated time gives the same numbers however often the feedback is read.
    """

    def __init__(self, robot, plant: Plant | None = None, true_robot=None, payload: float = 0.0,
                 drive_rate: float = 1000.0, counts_per_rev: int = 2 ** 17, torque_noise: float = 0.0,
                 velocity_noise: float = 0.0, initial_position=None, mode: Mode | str = Mode.TORQUE,
                 position_gains=(4000.0, 80.0), seed: int | None = 0):
        self.robot: RobotParameters = load_robot(robot)
        if not (drive_rate > 0 and math.isfinite(drive_rate)):
            raise DriveError(f"drive_rate must be a finite number > 0 Hz, got {drive_rate}")
        for name, v in (("torque_noise", torque_noise), ("velocity_noise", velocity_noise)):
            if not (math.isfinite(v) and v >= 0):
                raise DriveError(f"simulated {name} must be a finite number >= 0, got {v}")
        self.plant_name = plant if isinstance(plant, str) else type(plant).__name__ if plant else "explicit"
        if plant is None or isinstance(plant, str):
            true = with_payload(load_robot(true_robot) if true_robot not in (None, "") else self.robot, payload)
            try:
                plant = make_plant(plant or "explicit", true)
            except ValueError as e:
                raise DriveError(str(e)) from None
        elif payload:
            raise DriveError("give the payload to the plant's robot file, not beside a plant")
        self.plant = plant
        self.drive_rate = float(drive_rate)
        self.mode = Mode[mode.upper()] if isinstance(mode, str) else mode
        self.kp, self.kd = (float(g) for g in position_gains)
        gear = self.robot.mass.motor.gear_ratio
        self.scaling = [AxisScaling(counts_per_rev=counts_per_rev, gear_ratio=gear) for _ in range(3)]
        self.torque_noise = float(torque_noise)
        self.velocity_noise = float(velocity_noise)
        self.torque_limit = tuple(self.robot.limits.effort)
        self._rng = np.random.default_rng(seed)
        self._noise = (0.0,) * 6
        if initial_position is not None:
            q0 = inverse_kinematics(model_for(self.robot), np.asarray(initial_position, float))
            self.plant.place(q0)
        self._state = DriveState.DISABLED
        self._faults: dict = {}
        self._cmd_torque = (0.0, 0.0, 0.0)
        self._cmd_position = None
        self._cmd_velocity = (0.0, 0.0, 0.0)
        self._applied = (0.0, 0.0, 0.0)
        self._lock = threading.Lock()
        self.time = 0.0

    #: the drives are the simulation: the loop may run them in simulated time
    simulated = True

    @classmethod
    def from_parameters(cls, robot, values: dict, rate: float) -> "SimulatedDriveSet":
        """The ``sim`` bus: the simulated drives from its parameter block (:data:`BUS`); a
        ``true_robot`` file is loaded here, at the edge."""
        try:
            true = same_kind_model(values["true_robot"], robot, "true_robot").robot if values["true_robot"] else robot
        except RobotFileError as e:
            msg = str(e)
            raise DriveError(msg if msg.startswith("true_robot") else f"true_robot: {msg}") from None
        except (OSError, ValueError) as e:
            raise DriveError(f"true_robot: {e}") from None
        return cls(robot, true_robot=true, plant=values["plant"], payload=float(values["sim_payload"]),
                   torque_noise=float(values["sim_torque_noise"]), velocity_noise=float(values["sim_velocity_noise"]),
                   counts_per_rev=int(values["sim_counts_per_rev"]))

    @property
    def summary(self) -> str:
        """``plant <name>``: the simulated plant (for the node's start-up line)."""
        return f"plant {self.plant_name}"

    # ------------------------------------------------------------------ state machine
    @property
    def state(self) -> DriveState:
        """The combined state of the simulated axes."""
        return self._state

    def enable(self) -> None:
        """Every axis to operation enabled, the position target at the actual position and the other targets
        0 (as CSP on a real drive); DriveError while an axis is in fault."""
        with self._lock:
            if self._state is DriveState.FAULT:
                raise DriveError(f"cannot enable: axis {self._first_fault()} is in fault; reset first")
            if self._state is not DriveState.ENABLED:
                # like CSP on a real drive: the target starts at the actual position
                self._cmd_position = self.plant.joint_state()[0]
                self._cmd_velocity = (0.0, 0.0, 0.0)
                self._cmd_torque = (0.0, 0.0, 0.0)
                self._state = DriveState.ENABLED

    def disable(self) -> None:
        """Disable every axis (a fault stays a fault); the brakes hold the arms."""
        with self._lock:
            if self._state is not DriveState.FAULT:
                self._state = DriveState.DISABLED
            self.plant.brake()

    def quick_stop(self, reason: str = "") -> None:
        """Quick stop every axis (a fault stays a fault); the brakes hold the arms."""
        with self._lock:
            if self._state is not DriveState.FAULT:
                self._state = DriveState.QUICK_STOP
            self.plant.brake()

    def reset(self) -> None:
        """Clear the faults; from fault or quick stop to disabled."""
        with self._lock:
            self._faults.clear()
            if self._state in (DriveState.FAULT, DriveState.QUICK_STOP):
                self._state = DriveState.DISABLED

    def inject_fault(self, axis: int, reason: str) -> None:
        """Put ``axis`` (0-2) into fault (for tests and demos); all axes stop."""
        with self._lock:
            self._faults[axis] = reason
            self._state = DriveState.FAULT
            self.plant.brake()

    def _first_fault(self):
        k = min(self._faults) if self._faults else 0
        return f"{k + 1} ({self.robot.joint_names[k]}): {self._faults.get(k, 'fault')}"

    # ------------------------------------------------------------------ cyclic exchange
    def write(self, torque=None, position=None, velocity=None) -> None:
        """Set the next cycle's targets (torque: N m; position: rad; velocity: rad/s; 3 finite numbers
        each); DriveError unless operation enabled."""
        if self._state is not DriveState.ENABLED:
            raise DriveError(f"drives are {self._state.value}, not operation enabled: command refused")
        with self._lock:
            if torque is not None:
                self._cmd_torque = _finite3(torque, "torque")
            if position is not None:
                self._cmd_position = _finite3(position, "position")
            if velocity is not None:
                self._cmd_velocity = _finite3(velocity, "velocity")

    def cycle(self, dt: float) -> float:
        """Advance the plant by ``dt`` s under the last targets (steps of at most 1/drive_rate);
        returns ``dt`` (the simulation never holds an exchange back)."""
        n = max(1, int(math.ceil(dt * self.drive_rate - 1e-9)))
        h = dt / n
        with self._lock:
            for _ in range(n):
                self._physics_step(h)
            self.time += dt
            self._draw_noise()
        return dt

    def _physics_step(self, h: float) -> None:
        if self._state is not DriveState.ENABLED:
            self._applied = (0.0, 0.0, 0.0)
            return                                      # brakes hold the arms
        if self.mode is Mode.POSITION:
            q, qd = self.plant.joint_state()
            tau = [self.kp * (self._cmd_position[i] - q[i]) + self.kd * (self._cmd_velocity[i] - qd[i])
                   + self._cmd_torque[i] for i in range(3)]
        else:
            tau = self._cmd_torque
        lim = self.torque_limit
        tau = tuple(min(max(float(t), -lim[i]), lim[i]) for i, t in enumerate(tau))
        self._applied = tau
        try:
            self.plant.step(tau, h)
        except UnreachableError as e:
            self._faults = {i: f"mechanism left its workspace ({e})" for i in range(3)}
            self._state = DriveState.FAULT
            self.plant.brake()

    def _draw_noise(self) -> None:
        tn, vn = self.torque_noise, self.velocity_noise
        if tn or vn:
            z = self._rng.standard_normal(6)
            self._noise = tuple((z[:3] * vn).tolist() + (z[3:] * tn).tolist())

    # ------------------------------------------------------------------ feedback
    def read(self) -> Feedback:
        """The feedback: positions quantised to encoder increments, velocities and applied torques with the
        cycle's noise, the state and a copy of the faults."""
        with self._lock:
            q, qd = self.plant.joint_state()
            q = tuple(s.quantize_position(v) for s, v in zip(self.scaling, q))
            nz = self._noise
            qd = tuple(v + nz[i] for i, v in enumerate(qd)) if self.velocity_noise else tuple(qd)
            tau = tuple(t + nz[3 + i] for i, t in enumerate(self._applied)) if self.torque_noise else self._applied
            return Feedback(q, qd, tau, self._state, dict(self._faults))

    # ------------------------------------------------------------------ for tests and tools
    @property
    def platform_position(self) -> np.ndarray:
        """The true platform position (m) of the simulated robot."""
        return self.plant.platform_position()

    def set_external_force(self, F) -> None:
        """Push the simulated platform with ``F`` (3 finite floats, N, ``base_link``) from the next
        physics step on, until the next call; zero removes it. DriveError if the plant cannot."""
        with self._lock:
            try:
                self.plant.set_external_force(F)
            except (ValueError, NotImplementedError) as e:
                raise DriveError(str(e)) from None

    def set_payload(self, mass: float) -> None:
        """Make the simulated robot's payload ``mass`` kg (the controller's model is not changed) from
        the next physics step on; DriveError for a mass out of [0, 1000] kg or a plant that cannot."""
        with self._lock:
            try:
                self.plant.set_payload(mass)
            except (ValueError, NotImplementedError) as e:
                raise DriveError(str(e)) from None

    def set_joint_positions(self, q) -> None:
        """Place the simulated robot at joint positions ``q`` at rest (only while not enabled)."""
        if self._state is DriveState.ENABLED:
            raise DriveError("cannot move the simulated robot by hand while enabled")
        with self._lock:
            self.plant.place(q)


def _plant_names() -> tuple:
    return tuple(PLANTS.names() if hasattr(PLANTS, "names") else PLANTS)


#: The ``sim`` drive bus: its parameter block and its drive set (registered in :mod:`delta_hardware.drives`)
BUS = DriveBus(
    description="the simulated robot: a plant stepped at the drive rate behind three simulated servo axes",
    parameters=(
        BusParameter("true_robot", "", "sim: physics robot file if it differs from `robot`"),
        BusParameter("plant", "explicit", "sim: the physics: explicit (the controller's model, fastest) | "
                                          "multibody | mujoco", choices=_plant_names),
        BusParameter("sim_payload", 0.0, "sim: kg on the platform that the controller does not know", lo=0.0, hi=1000.0),
        BusParameter("sim_torque_noise", 0.02, "sim: N m standard deviation of the measured effort", lo=0.0, hi=100.0),
        BusParameter("sim_velocity_noise", 0.0, "sim: rad/s standard deviation of the measured velocity",
                     lo=0.0, hi=100.0),
        BusParameter("sim_counts_per_rev", 131072, "sim: motor encoder increments per revolution",
                     lo=1, hi=2 ** 40, integer=True),
    ),
    drive_set="delta_hardware.drives.simulated:SimulatedDriveSet")


def with_payload(robot: RobotParameters, payload: float) -> RobotParameters:
    """``robot`` with ``payload`` kg more on its platform."""
    if not (math.isfinite(payload) and payload >= 0):
        raise DriveError(f"simulated payload must be a finite mass >= 0 kg, got {payload}")
    if not payload:
        return robot
    m = robot.mass
    return robot.replace(mass=m.__class__(**{**m.__dict__, "payload_mass": m.payload_mass + payload}))


def _finite3(v, name):
    t = tuple(float(x) for x in v)
    if len(t) != 3 or not all(math.isfinite(x) for x in t):
        raise DriveError(f"{name} command must be 3 finite numbers, got {list(v)!r}")
    return t
