"""The hardware node's parameters: defaults, meanings and the rules each value must obey.

One table (:data:`PARAMETERS`) feeds the node's declarations, ``docs/ros_interfaces.md`` and
``config/delta.yaml``; :func:`check_parameters` refuses a bad value by name, with the rule,
before anything is built from it (the node then stays unconfigured); :func:`loop_spec` builds
the control loop's :class:`~delta_hardware.loop_config.LoopSpec` from checked values, reading
the robot files through a bounded loader (:func:`load_bounded`: a file that does not answer, a
FIFO or a hung file system, is refused after :data:`LOAD_TIMEOUT` s instead of blocking).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from delta_core.rates import CONTROL_RATE_MAX, CONTROL_RATE_MIN
from delta_core.robot_file import RobotFileError, load_robot, resolve_robot_path
from delta_core.ros.names import PREFIX_RULE
from delta_dynamics.kinds import same_kind_model
from delta_dynamics.monitoring.observer import GAIN_DEFAULT, GAIN_MAX, GAIN_MIN
from delta_dynamics.monitoring.payload import EVENT_THRESHOLD
from delta_dynamics.plant import PAYLOAD_MAX
from delta_hardware.drives import BUSES, bus_parameters
from delta_hardware.loop_config import LoopConfig, LoopSpec
from delta_hardware.loop_monitor import CPU_PER_CYCLE, NEEDS_MONITORING, THRESHOLD_RULE, thresholds_valid
from delta_hardware.loop_thread import RealtimeSettings
from delta_hardware.retract import DISTANCE_DEFAULT, DISTANCE_MAX, DISTANCE_MIN, REACTIONS


@dataclass(frozen=True)
class Param:
    """One parameter of the hardware node: its default, its meaning (the declaration's description) and
    whether it may change while active."""
    default: object
    meaning: str
    runtime: bool = False        # may change while active


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


PARAMETERS = {
    "robot": Param("nt_robot", "the controller's robot file (preset name or path)"),
    "hardware": Param("sim", "drive bus: " + " | ".join(f"{n} ({BUSES.info(n)['description']})"
                                                         for n in BUSES.names())),
    "real_time_factor": Param(1.0, "sim in simulated time (use_sim_time): simulated seconds per wall "
                                   "second (0: as fast as the host can)"),
    "start_paused": Param(False, "sim in simulated time: start paused at t = 0 (resume with ~/pause false)"),
    "pause_at": Param(0.0, "sim in simulated time: pause when the simulated time reaches this (s; 0: never)",
                      runtime=True),
    "control_rate": Param(500.0, "Hz of the control loop"),
    "kp": Param([600.0, 600.0, 600.0], "N m / rad (N / m on a linear robot), per joint", runtime=True),
    "kd": Param([30.0, 30.0, 30.0], "N m s / rad (N s / m), per joint", runtime=True),
    "feedforward": Param("model", "model (in-process, always on time) | topic (an external source on "
                                  "delta/feedforward, the model when late) | none", runtime=True),
    "feedforward_robot": Param("", "robot file of the in-process feedforward model (default: robot)", runtime=True),
    "feedforward_timeout": Param(0.01, "s: a topic feedforward older than this is replaced by the model's"),
    "command_timeout": Param(0.5, "s without a streamed command before the robot holds"),
    "max_command_step": Param(0.1, "rad: a streamed position further than this from the setpoint is refused"),
    "max_stall": Param(0.0, "s between control cycles (steady clock) that quick-stops the drives "
                            "(0: the drives' own: the drive config's timing.max_stall, 0.25 s simulated)"),
    "max_trajectory_points": Param(100000, "points a trajectory may have"),
    "max_trajectory_duration": Param(3600.0, "s a trajectory may last"),
    "publish_desired_state": Param(False, "publish delta/desired_state (the setpoint one period ahead) every cycle, "
                                          "for a feedforward source or a monitor; always with feedforward topic"),
    "clock_rate": Param(100.0, "Hz of simulated time at which /clock is published while the simulation runs "
                               "(0: every control cycle); the time a pause or stop holds is always sent"),
    "thread_priority": Param(50, "SCHED_FIFO priority of the loop thread on the steady clock (0: normal)"),
    "cpu_affinity": Param(-1, "CPU the control loop process is pinned to: its loop thread, drive bus receiver and helper threads (-1: any)"),
    "lock_memory": Param(False, "mlockall the process (recommended for real drives)"),
    "autostart": Param(True, "walk the lifecycle to active at start-up"),
    "prefix": Param("", "joint and frame name prefix (e.g. r1_): on every joint name published and received"),
    "action_monitor_rate": Param(20.0, "Hz of the FollowJointTrajectory feedback (joint_trajectory_controller's "
                                       "action_monitor_rate)"),
    "action_path_tolerance": Param(0.0, "rad (m): default path tolerance of FollowJointTrajectory goals, per "
                                        "joint (0: none; a goal's own tolerances win)"),
    "action_goal_tolerance": Param(0.0, "rad (m): default goal tolerance of FollowJointTrajectory goals, per "
                                        "joint (0: none; a goal's own tolerances win)"),
    "action_goal_time": Param(0.0, "s after the end a FollowJointTrajectory goal may take to reach its goal "
                                   "tolerance (0: no limit, as joint_trajectory_controller's constraints.goal_time)"),
    "action_start_tolerance": Param(0.01, "rad: a FollowJointTrajectory point at time 0 may be this far from the "
                                          "setpoint and is then dropped (MoveIt's allowed_start_tolerance)"),
    "motion_limit_scale": Param(0.99, "share of the robot file's velocity, acceleration and torque (force) limits "
                                      "~/pick and time_optimal timing plan to (in (0, 1]; the rest is the margin of "
                                      "the plans' checks)", runtime=True),
    "trajectory_timing": Param("follow", "FollowJointTrajectory goals: follow (their own times) | time_optimal (their "
                                         "path retimed under the model's limits)", runtime=True),
    "monitoring": Param(False, "run the momentum observer, collision detection and payload estimate in the "
                               f"control loop ({CPU_PER_CYCLE} of CPU per cycle; off: ~/external_wrench and ~/payload "
                               "silent, no collision detection; docs/monitoring.md)", runtime=True),
    "observer_gain": Param(GAIN_DEFAULT, f"1/s: gain K of the momentum observer (residual time constant 1/K; "
                                         f"{GAIN_MIN:g}-{GAIN_MAX:g}; docs/monitoring.md)", runtime=True),
    "collision_threshold": Param([0.0, 0.0, 0.0], "N m (N on a linear robot) per joint: a residual above it is a "
                                                  "collision (latched stop); all 0: detection off", runtime=True),
    "collision_reaction": Param("stop", "what a collision does: stop (the latched quick stop) | retract (back along "
                                        "the path just travelled by retract_distance, slowly, then the same latched "
                                        "stop; docs/monitoring.md)", runtime=True),
    "retract_distance": Param(DISTANCE_DEFAULT, f"m of platform path the retract reaction goes back "
                                                f"({DISTANCE_MIN:g}-{DISTANCE_MAX:g})", runtime=True),
    "payload_feedforward": Param(False, "add the payload estimated over the last motion to the in-process model's "
                                        "feedforward (needs monitoring; docs/monitoring.md)", runtime=True),
    "payload_change_threshold": Param(EVENT_THRESHOLD, "kg: a payload estimate that changed by more than this (and by more "
                                             "than 3 standard deviations) since the last motion's end raises the "
                                             "event payload picked (up) or payload lost (down)", runtime=True),
    "plant_payload_mass": Param(0.0, "kg: the simulated robot's payload (hardware sim only; the controller's model "
                                     "stays); 0 at start: the robot file's and sim_payload", runtime=True),
}
#: each drive bus's own parameters (the bus declares them: delta_hardware.drives.bus)
BUS_PARAMETERS = bus_parameters()
PARAMETERS.update({name: Param(b.default, b.description) for name, b in BUS_PARAMETERS.items()})

HARDWARE = BUSES.names()
PREFIX = PREFIX_RULE
FEEDFORWARD = ("topic", "model", "none")
TIMINGS = ("follow", "time_optimal")
#: run-time parameters the node itself reads (no loop change)
NODE_SIDE = ("motion_limit_scale", "trajectory_timing", "payload_change_threshold")
COLLISION_REACTIONS = REACTIONS
#: s a robot file may take to be read before it is refused (a FIFO, a hung network file system)
LOAD_TIMEOUT = 5.0


def _rules(p: dict):
    """(name, ok, rule) for every parameter of ``p`` (a dict of values)."""
    def number(name, lo=None, hi=None, lo_open=False):
        v = p[name]
        if not _finite(v):
            return name, False, "must be a finite number"
        if lo is not None and (v <= lo if lo_open else v < lo):
            return name, False, f"must be {'>' if lo_open else '>='} {lo:g}"
        if hi is not None and v > hi:
            return name, False, f"must be <= {hi:g}"
        return name, True, ""

    def triple(name):
        v = p[name]
        v = list(v) if hasattr(v, "__len__") and not isinstance(v, (str, bytes)) else v     # array.array too
        ok = isinstance(v, list) and len(v) == 3 and all(_finite(x) and x >= 0 for x in v)
        return name, ok, "must be 3 finite numbers >= 0 (one per joint)"

    yield "robot", isinstance(p["robot"], str) and bool(p["robot"].strip()), "must be a preset name or a robot file path"
    yield "hardware", p["hardware"] in HARDWARE, f"must be one of {', '.join(HARDWARE)}"
    yield number("real_time_factor", 0.0, 1000.0)
    yield number("pause_at", 0.0)
    yield number("control_rate", CONTROL_RATE_MIN, CONTROL_RATE_MAX)
    yield number("clock_rate", 0.0, 10_000.0)
    yield triple("kp")
    yield triple("kd")
    yield "feedforward", p["feedforward"] in FEEDFORWARD, f"must be one of {', '.join(FEEDFORWARD)}"
    yield number("feedforward_timeout", 0.0, 10.0, lo_open=True)
    yield number("command_timeout", 0.0, 3600.0, lo_open=True)
    yield number("max_command_step", 0.0, 10.0, lo_open=True)
    yield number("max_stall", 0.0, 60.0)
    yield "max_trajectory_points", isinstance(p["max_trajectory_points"], int) and \
        2 <= p["max_trajectory_points"] <= 10_000_000, "must be an integer 2 - 10000000"
    yield number("max_trajectory_duration", 0.0, 7 * 86400.0, lo_open=True)
    yield "thread_priority", isinstance(p["thread_priority"], int) and 0 <= p["thread_priority"] <= 99, \
        "must be an integer 0-99 (0: normal scheduling)"
    yield "prefix", isinstance(p["prefix"], str) and bool(PREFIX.match(p["prefix"])), \
        "must be empty or a letter followed by letters, digits or '_' (e.g. r1_)"
    yield number("action_monitor_rate", 0.0, 1000.0, lo_open=True)
    yield number("action_path_tolerance", 0.0)
    yield number("action_goal_tolerance", 0.0)
    yield number("action_goal_time", 0.0)
    yield number("action_start_tolerance", 0.0, 1.0)
    yield "cpu_affinity", isinstance(p["cpu_affinity"], int) and p["cpu_affinity"] >= -1, \
        "must be -1 (any CPU) or a CPU index"
    yield number("motion_limit_scale", 0.0, 1.0, lo_open=True)
    yield "trajectory_timing", p["trajectory_timing"] in TIMINGS, f"must be one of {', '.join(TIMINGS)}"
    yield number("observer_gain", GAIN_MIN, GAIN_MAX)
    t = p["collision_threshold"]
    yield "collision_threshold", thresholds_valid(t), THRESHOLD_RULE
    yield "monitoring", isinstance(p["monitoring"], bool), "must be true or false"
    yield "collision_threshold", p["monitoring"] is True or not any(t), f"is > 0 while monitoring is false: {NEEDS_MONITORING}"
    yield "collision_reaction", p["collision_reaction"] in COLLISION_REACTIONS, \
        f"must be one of {', '.join(COLLISION_REACTIONS)}"
    yield number("retract_distance", DISTANCE_MIN, DISTANCE_MAX)
    yield "payload_feedforward", isinstance(p["payload_feedforward"], bool), "must be true or false"
    yield number("payload_change_threshold", 0.0, PAYLOAD_MAX, lo_open=True)
    yield number("plant_payload_mass", 0.0, PAYLOAD_MAX)
    for name, b in BUS_PARAMETERS.items():
        yield name, b.check(p[name]), b.rule


def check_parameters(p: dict, node: str = "delta_hardware") -> None:
    """Raise ValueError naming the first parameter of ``p`` whose value breaks its rule."""
    for name, ok, rule in _rules(p):
        if not ok:
            raise ValueError(f"{node} parameter {name} {rule}, got {p[name]!r}")


def load_bounded(robot, timeout: float = LOAD_TIMEOUT):
    """``load_robot(robot)`` on a thread of its own: RobotFileError if it names a FIFO, a device,
    a socket or a directory (:func:`~delta_core.robot_file.resolve_robot_path`, nothing opened),
    or does not finish within ``timeout`` s (a hung file system: the thread is left to its fate;
    the caller, e.g. the node's executor, goes on)."""
    if not isinstance(robot, str):
        return load_robot(robot)
    path = resolve_robot_path(robot)
    result = []
    worker = threading.Thread(target=lambda: result.append(_attempt(load_robot, path)), daemon=True,
                              name="delta_robot_file")
    worker.start()
    worker.join(timeout)
    if not result:
        raise RobotFileError(f"{path}: not read within {timeout:g} s (a hung file system?)")
    value, error = result[0]
    if error is not None:
        raise error
    return value


def _attempt(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - handed to the caller's thread
        return None, e


def same_kind(params, driven, what: str = "feedforward_robot"):
    """``params`` (a loaded robot file) if it is of the kind of ``driven`` (the robot driven);
    else RobotFileError naming ``what``, the file and both kinds (as
    :func:`delta_dynamics.kinds.same_kind_model`, which it calls: a model of a linear Delta on a
    rotary one computes forces for carriages that are not there)."""
    same_kind_model(params, driven, what)
    return params


def loop_spec(p: dict, use_sim_time: bool, feedforward_topic: str = "/delta/feedforward",
              load=load_bounded) -> LoopSpec:
    """The control loop's spec from the checked parameter values ``p`` (robot files read with
    ``load``); ValueError / RobotFileError naming what is wrong."""
    robot = load(p["robot"])
    if p.get("true_robot"):     # the sim bus's plant, checked here so the refusal names it
        same_kind(load(p["true_robot"]), robot, "true_robot")
    cfg = LoopConfig(rate=float(p["control_rate"]), kp=tuple(p["kp"]), kd=tuple(p["kd"]),
                     command_timeout=float(p["command_timeout"]), feedforward=p["feedforward"],
                     feedforward_timeout=float(p["feedforward_timeout"]), feedforward_topic=feedforward_topic,
                     monitoring=p["monitoring"], observer_gain=float(p["observer_gain"]),
                     collision_threshold=tuple(p["collision_threshold"]), collision_reaction=p["collision_reaction"],
                     retract_distance=float(p["retract_distance"]), payload_feedforward=p["payload_feedforward"])
    rt = RealtimeSettings(thread_priority=int(p["thread_priority"]), cpu_affinity=int(p["cpu_affinity"]),
                          lock_memory=bool(p["lock_memory"]))
    return LoopSpec(robot=robot, backend=p["hardware"], params=dict(p), config=cfg,
                    clock="sim" if use_sim_time else "wall", max_stall=float(p["max_stall"]) or None,
                    feedforward_robot=same_kind(load(p["feedforward_robot"]), robot, "feedforward_robot")
                    if p["feedforward_robot"] else None,
                    realtime=rt, real_time_factor=float(p["real_time_factor"]),
                    start_paused=bool(p["start_paused"]), pause_at=float(p["pause_at"]))
