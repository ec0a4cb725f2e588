"""Pick-and-place runs and time-optimal retiming for the hardware node, without ROS.

:func:`plan_pick_run` checks a pick request (one-line refusals: :class:`PickRefused`), plans
the door there and back time-optimally (:func:`delta_dynamics.motion.plan_legs`, under
``limit_scale`` of the robot file's velocity, acceleration and effort limits, with the model the
node plans with) and a straight time-optimal move from the robot's position to the start, and
returns the whole run as joint knots (:func:`delta_dynamics.motion.knots.joint_knots`) for
:func:`delta_hardware.knot_plan.knot_plan`. :func:`retime_joint_path` keeps a joint
trajectory's positions (its path) and times it time-optimally the same way (the
FollowJointTrajectory option ``trajectory_timing: time_optimal``).

Both import scipy and toppra (through :mod:`delta_dynamics.motion`) on first use: the node
that never plans does not load them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import UnreachableError, forward_kinematics
from delta_dynamics.motion import Dwell, PathError, RetimeError, plan_legs, retime, retime_path, spline_path
from delta_dynamics.motion.knots import Knots, joint_knots
from delta_dynamics.motion.trajectories import in_workspace

#: m: a start this close to the robot's position needs no move to it
AT_START = 1e-6
#: most cycles one request may ask for (the node's max_trajectory_points bounds them too)
MAX_CYCLES = 100_000


class PickRefused(ValueError):
    """A pick request that is not run; the message says why, in one line."""


@dataclass(frozen=True)
class PickRun:
    """A planned run: ``knots`` (the move to the start and every cycle), ``cycle_time`` (s, one
    cycle: both doors and both dwells), ``approach`` (s, the move to the start, 0 if none),
    ``planning_time`` (s)."""

    knots: Knots
    cycle_time: float
    approach: float
    planning_time: float

    @property
    def duration(self) -> float:
        """The whole run (s)."""
        return self.knots.duration

    @property
    def picks_per_minute(self) -> float:
        """Cycles per minute: 60 / :attr:`cycle_time`."""
        return 60.0 / self.cycle_time


def _point(name, v) -> np.ndarray:
    p = np.asarray(v, dtype=float).reshape(-1)
    if p.shape != (3,) or not np.isfinite(p).all():
        raise PickRefused(f"{name} must be 3 finite numbers (m), got {np.round(p, 6).tolist()}")
    return p


def check_request(model, start, end, height, blend, dwell, cycles):
    """(start, end) as arrays if the request is one the node may plan, else PickRefused naming
    the first value that is not: non-finite numbers, negative height / blend / dwell, cycles
    not in [1, MAX_CYCLES], an end outside the workspace (reachable within the joint limits)."""
    a, b = _point("from_point", start), _point("to_point", end)
    for name, v, unit in (("height", height, "m"), ("blend", blend, "m"), ("dwell", dwell, "s")):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise PickRefused(f"{name} must be a finite number >= 0 {unit}, got {v!r}")
    if not (isinstance(cycles, (int, np.integer)) and 1 <= cycles <= MAX_CYCLES):
        raise PickRefused(f"cycles must be an integer in [1, {MAX_CYCLES}], got {cycles!r}")
    for name, p in (("from_point", a), ("to_point", b)):
        if not in_workspace(model, p):
            raise PickRefused(f"{name} ({', '.join(f'{v:.4g}' for v in p)}) m is outside the workspace "
                              f"(not reachable within the joint limits)")
    return a, b


def plan_pick_run(model, current_q, start, end, height: float = 0.025, blend: float = 0.01, dwell: float = 0.05,
                  cycles: int = 1, limit_scale: float = 1.0, max_points: int | None = None) -> PickRun:
    """Plan ``cycles`` pick-and-place cycles between ``start`` and ``end`` (platform centre, m)
    for ``model`` from the robot at joint position ``current_q`` (module docstring); the door
    as :func:`delta_dynamics.motion.plan_pick` (the same legs and dwells: the same cycle
    time). PickRefused (why) for a bad request, a door or move that cannot be built or timed
    within the limits, or more knots than ``max_points``."""
    a, b = check_request(model, start, end, height, blend, dwell, cycles)
    try:
        there, back = plan_legs(model, a, b, height, blend, limit_scale=limit_scale)
        pieces, approach = [], 0.0
        X0 = forward_kinematics(model, np.asarray(current_q, dtype=float))
        A = there.path.position(there.path.breakpoints[0])
        if float(np.linalg.norm(A - X0)) > AT_START:
            move = retime(model, [X0, A], limit_scale=limit_scale)
            pieces.append(move)
            approach = move.duration
    except (PathError, RetimeError, UnreachableError) as e:
        raise PickRefused(str(e)) from None
    B = there.path.position(there.path.breakpoints[-1])
    points = len(there.t) + len(back.t) + 2
    if max_points is not None and points * cycles > max_points:
        raise PickRefused(f"{cycles} cycles make about {points * cycles} knots, more than max_trajectory_points "
                          f"{max_points}; ask for fewer cycles")
    cycle = [there, Dwell(tuple(B), dwell), back, Dwell(tuple(A), dwell)]
    knots = joint_knots(pieces + cycle * int(cycles), model)
    cycle_time = there.duration + back.duration + 2 * float(dwell)
    return PickRun(knots, cycle_time, approach, there.planning_time + back.planning_time)


def retime_joint_path(model, q_points, limit_scale: float = 1.0) -> Knots:
    """The time-optimal knots of the path through the joint positions ``q_points`` ((N, 3),
    the first the robot's position): their platform positions (forward kinematics) joined by
    scipy's cubic spline over chord length (:func:`delta_dynamics.motion.spline_path`), timed
    from rest to rest under ``limit_scale`` of the limits. Points closer than 1 µm to the one
    before are dropped (a spline needs distinct points). PickRefused (why) if that path
    cannot be built or timed."""
    try:
        X = forward_kinematics(model, np.asarray(q_points, dtype=float))
        keep = np.concatenate(([True], np.linalg.norm(np.diff(X, axis=0), axis=1) > AT_START))
        X = X[keep]
        if len(X) < 2:
            raise PickRefused("the trajectory does not move the platform")
        timing = retime_path(model, spline_path(X), limit_scale=limit_scale)
    except (PathError, RetimeError, UnreachableError) as e:
        raise PickRefused(str(e)) from None
    return joint_knots([timing], model)
