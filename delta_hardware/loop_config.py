"""The control loop's settings and rules, without ROS: what the loop runs with
(:class:`LoopConfig`), what its process is started with (:class:`LoopSpec`), and the rules
every request must pass before it reaches the loop (:class:`LoopRules`: streamed commands,
gain bounds, run-time changes). The hardware node only converts messages and parameters to
these and reports the reasons they give.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from delta_dynamics.algorithms import joint_space_inertia, joint_units, sample_workspace
from delta_core.rates import check_control_rate
from delta_core.robot_file import RobotFileError
from delta_dynamics.kinds import same_kind_model
from delta_dynamics.monitoring.observer import GAIN_DEFAULT, check_gain
from delta_hardware.loop_monitor import NEEDS_MONITORING, check_thresholds
from delta_hardware.loop_thread import RealtimeSettings
from delta_hardware.retract import DISTANCE_DEFAULT, check_distance, check_reaction
from delta_hardware.joint_plan import TrajectoryRejected

FEEDFORWARD = ("topic", "model", "none")


@dataclass
class LoopConfig:
    """Settings of :class:`~delta_hardware.control_loop.ControlLoop` (SI units of the joints)."""

    rate: float = 500.0                       # Hz
    kp: tuple = (600.0, 600.0, 600.0)         # N m / rad (N / m on a linear robot)
    kd: tuple = (30.0, 30.0, 30.0)            # N m s / rad (N s / m)
    command_timeout: float = 0.5              # s without a streamed command -> hold
    feedforward: str = "model"                # model | topic | none
    feedforward_timeout: float = 0.01         # s: a topic feedforward older than this is not used
    position_margin: float = 0.05             # rad (m) beyond the limits -> quick stop
    velocity_margin: float = 1.25             # x velocity limit -> quick stop
    max_stall: float = 0.25                   # s between cycles -> quick stop
    feedforward_topic: str = "/delta/feedforward"   # its resolved name, for the messages
    monitoring: bool = False                  # run the momentum observer, detection, payload (loop_monitor) each cycle
    observer_gain: float = GAIN_DEFAULT       # 1/s of the momentum observer (loop_monitor)
    collision_threshold: tuple = (0.0, 0.0, 0.0)    # N m (N) per joint; all 0: no collision detection
    collision_reaction: str = "stop"          # stop (latched quick stop) | retract (back along the path, then stop)
    retract_distance: float = DISTANCE_DEFAULT     # m of platform path a retract goes back (delta_hardware.retract)
    payload_feedforward: bool = False         # add the payload of the last motion (monitoring) to the model's feedforward

    def __post_init__(self):
        self.rate = check_control_rate(self.rate)
        self.observer_gain = check_gain(self.observer_gain)
        self.collision_threshold = check_thresholds(self.collision_threshold)
        self.monitoring = check_monitoring(self.monitoring, self.collision_threshold)
        self.collision_reaction = check_reaction(self.collision_reaction)
        self.retract_distance = check_distance(self.retract_distance)
        if not isinstance(self.payload_feedforward, bool):
            raise ValueError(f"payload_feedforward must be true or false, got {self.payload_feedforward!r}")
        for name in ("kp", "kd"):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != 3 or not all(math.isfinite(x) and x >= 0 for x in v):
                raise ValueError(f"{name} must be 3 numbers >= 0, got {list(v)}")
            setattr(self, name, v)
        if self.feedforward not in FEEDFORWARD:
            raise ValueError(f"feedforward must be one of {', '.join(FEEDFORWARD)}, got {self.feedforward!r}")
        for name in ("command_timeout", "feedforward_timeout", "max_stall", "position_margin", "velocity_margin"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")


@dataclass
class LoopSpec:
    """Everything the control-loop process is built from (picklable: loaded robot files,
    not names; :mod:`delta_hardware.loop_process`).

    ``backend`` and ``params``: the drive bus by name and the node's parameter values, from which
    the bus takes its own parameter block (:func:`delta_hardware.drives.make_drives`).
    ``clock``: ``"sim"`` (simulated drives in simulated time: the loop owns the time) or
    ``"wall"`` (the steady clock, stamps in ROS time). ``max_stall`` None: the drives' own
    (``drives.max_stall``, else 0.25 s). ``ring``: state records kept for the node (a reader
    that falls further behind loses the oldest on the wall clock); ``lead``: records simulated
    time may run ahead of the node's publication (it waits then: a busy host slows the
    simulation, as when the loop published itself, instead of delaying what subscribers see).
    """

    robot: object
    backend: str
    params: dict
    config: LoopConfig
    clock: str = "wall"
    max_stall: float | None = None
    feedforward_robot: object = None
    realtime: RealtimeSettings = field(default_factory=RealtimeSettings)
    real_time_factor: float = 1.0
    start_paused: bool = False
    pause_at: float = 0.0
    start_time: float = 0.0
    ring: int = 8192
    events: int = 256
    lead: int = 32

    def __post_init__(self):
        if self.clock not in ("sim", "wall"):
            raise ValueError(f"clock must be 'sim' or 'wall', got {self.clock!r}")
        if not (self.real_time_factor >= 0 and math.isfinite(self.real_time_factor)):
            raise ValueError(f"real_time_factor must be a finite number >= 0, got {self.real_time_factor!r}")


class LoopRules:
    """The rules of requests to a loop on ``model`` at ``rate`` Hz: the stable gain bounds
    (:func:`gain_limits`), streamed commands (``max_command_step`` in the joints' unit) and
    run-time changes. Every refusal is a plain sentence naming the value and the rule."""

    def __init__(self, model, rate: float, max_command_step: float = 0.1):
        self.model = model
        self.rate = float(rate)
        self.units = joint_units(model)
        self.max_step = float(max_command_step)
        self.gains_max = gain_limits(model, self.rate)
        self.effort_max = np.array(model.robot.limits.effort, dtype=float)

    def check_gain(self, name: str, value) -> np.ndarray:
        """``value`` (3 gains) as an array if the ``rate`` Hz loop runs it stably; else ValueError."""
        v = np.array([float(x) for x in value])
        bound = self.gains_max[0 if name == "kp" else 1]
        over = np.nonzero(v > bound)[0]
        if len(over):
            i = int(over[0])
            raise ValueError(f"{name}[{i}] = {v[i]:g} is above {bound[i]:.4g}, the largest gain the "
                             f"{self.rate:g} Hz loop can run stably on this robot (docs/ros_interfaces.md, "
                             f"gain bounds)")
        return v

    def check_command(self, q, tau, setpoint_q, limits) -> tuple:
        """A streamed command (positions ``q`` and/or efforts ``tau``, joint order, None if not
        given) checked against the position limits in force (``limits`` = (lo, hi, _)), the
        step from the setpoint and the effort limits: (q, tau) as arrays, or
        TrajectoryRejected with the reason."""
        u = self.units
        if q is None and tau is None:
            raise TrajectoryRejected("a joint command needs position or effort")
        for what, v in (("position", q), ("effort", tau)):
            if v is not None and not np.isfinite(np.asarray(v, dtype=float)).all():
                raise TrajectoryRejected(f"{what} must be finite numbers, got {list(v)}")
        if q is not None:
            q = np.asarray(q, dtype=float)
            lo, hi = limits[0], limits[1]
            for i, v in enumerate(q):
                if not lo[i] <= v <= hi[i]:
                    raise TrajectoryRejected(f"{self.model.joint_names[i]} position {v:.4f} {u['position']} "
                                             f"is outside its limits [{lo[i]:g}, {hi[i]:g}]")
            step = float(np.abs(q - np.asarray(setpoint_q, dtype=float)).max())
            if step > self.max_step:
                raise TrajectoryRejected(f"too far: the command is {step:.3f} {u['position']} from the "
                                         f"setpoint (max_command_step {self.max_step:g} {u['position']})")
        if tau is not None:
            tau = np.asarray(tau, dtype=float)
            if (np.abs(tau) > self.effort_max).any():
                raise TrajectoryRejected(f"effort {np.round(tau, 4).tolist()} {u['effort']} exceeds the "
                                         f"{u['effort_name']} limits {self.effort_max.tolist()} {u['effort']}")
        return q, tau

    def runtime_change(self, name: str, value, feedforward_robot=None) -> dict:
        """The loop change (``ControlLoop.reconfigure`` keywords; a robot file where the loop
        builds a model) of run-time parameter ``name`` = ``value`` (already checked against
        the parameter table), or ValueError. ``feedforward_robot``: the loaded robot file of
        ``feedforward_robot``; a file of the other kind of Delta is refused."""
        if name in ("kp", "kd"):
            return {name: self.check_gain(name, value)}
        if name == "feedforward":
            if value not in FEEDFORWARD:
                raise ValueError(f"feedforward must be one of {', '.join(FEEDFORWARD)}, got {value!r}")
            return {"feedforward": value}
        if name == "feedforward_robot":
            try:
                same_kind_model(feedforward_robot, self.model, "feedforward_robot")
            except RobotFileError as e:
                raise ValueError(str(e)) from None
            return {"model": feedforward_robot}
        if name == "monitoring":
            if not isinstance(value, bool):
                raise ValueError(f"monitoring must be true or false, got {value!r}")
            return {"monitoring": value}
        if name == "observer_gain":
            return {"observer_gain": check_gain(value)}
        if name == "collision_threshold":
            return {"collision_threshold": check_thresholds(value)}
        if name == "collision_reaction":
            return {"collision_reaction": check_reaction(value)}
        if name == "retract_distance":
            return {"retract_distance": check_distance(value)}
        if name == "payload_feedforward":
            if not isinstance(value, bool):
                raise ValueError(f"payload_feedforward must be true or false, got {value!r}")
            return {"payload_feedforward": value}
        raise ValueError(f"{name} can only change while unconfigured (deactivate, cleanup, set, configure)")


def check_monitoring(monitoring, thresholds) -> bool:
    """``monitoring`` (bool) when the collision ``thresholds`` (checked, N m or N) agree with it:
    thresholds > 0 need the momentum observer, so monitoring on; ValueError with the reason otherwise.

    >>> check_monitoring(False, (0.0, 0.0, 0.0)), check_monitoring(True, (2.0, 2.0, 2.0))
    (False, True)
    >>> check_monitoring(False, (2.0, 2.0, 2.0))
    Traceback (most recent call last):
    ...
    ValueError: collision_threshold [2.0, 2.0, 2.0] is set while monitoring is false: collision detection needs monitoring: true (the momentum observer, about 0.1 ms of CPU per control cycle)
    """
    if not isinstance(monitoring, bool):
        raise ValueError(f"monitoring must be true or false, got {monitoring!r}")
    if any(thresholds) and not monitoring:
        raise ValueError(f"collision_threshold {list(thresholds)} is set while monitoring is false: {NEEDS_MONITORING}")
    return monitoring


def gain_limits(model, rate: float, samples: int = 50):
    """(kp_max, kd_max), per joint, for the PD law at ``rate`` Hz on ``model`` (either kind:
    N m/rad and N m s/rad on a rotary robot, N/m and N s/m on a linear one).

    The discrete PD loop of one joint with inertia I, period T and up to one period of
    delay (a CANopen target applies at the next SYNC) is stable for kd T / I < 1 (pure
    damping: v_(k+1) = v_k - (kd T / I) v_(k-1)) and rings for a natural frequency near the
    sampling rate. With a factor of 2 and 10 of margin:

        kd <= 0.5 I_min / T,   kp <= 0.1 I_min / T^2

    where I_min is the smallest diagonal entry of the joint-space mass matrix
    J^-T M(X) J^-1 over ``samples`` poses of the workspace (the joint's own inertia seen
    through the mechanism; at least the arm's inertia about its axis, or the carriage's mass).

    >>> from delta_dynamics.kinds import model_for
    >>> kp, kd = gain_limits(model_for("nt_robot"), 500.0)
    >>> bool(kd[0] > 30.0 and kp[0] > 600.0 and kd[0] < 5000.0)
    True
    >>> kp, kd = gain_limits(model_for("colombo2020"), 500.0)     # a 0.27 kg carriage: N/m, N s/m
    >>> bool(5000.0 < kp[0] < 20000.0 and 50.0 < kd[0] < 200.0)
    True
    """
    Mq = joint_space_inertia(model, sample_workspace(model, samples, seed=0))
    inertia = np.full(3, np.diagonal(Mq, axis1=1, axis2=2).min())      # the chains are alike
    T = 1.0 / rate
    return 0.1 * inertia / T ** 2, 0.5 * inertia / T
