"""Pick-and-place cycles: the door path there and back, each leg timed time-optimally.

A cycle is: the door (:func:`~delta_dynamics.motion.path.door_path`: up ``height``, across,
down, corners blended with ``blend``) from ``start`` to ``end`` timed by
:func:`~delta_dynamics.motion.timing.retime_path`, a ``dwell`` at ``end`` (the gripper
places), the door back from ``end`` to ``start`` (timed on its own: friction makes the way
back differ from the way there run backwards), a ``dwell`` at ``start`` (the gripper picks).
:func:`plan_pick` plans one cycle and samples ``cycles`` of them every ``dt``; the classic
benchmark is 25 mm up, 305 mm across, 25 mm down.

This is the one call a node needs: ``plan_pick(model, start, end, height, blend, dwell)``
returns the sampled trajectory (platform and joints, 1 ms) and its report.

>>> from delta_dynamics.kinds import model_for
>>> plan = plan_pick(model_for("nt_robot"), [-0.1525, 0, -0.78], [0.1525, 0, -0.78])
>>> 0.3 < plan.cycle_time < 0.6, len(plan.motion) == int(round(plan.motion.t[-1] / 1e-3)) + 1
(True, True)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from delta_dynamics.motion.path import door_path
from delta_dynamics.motion.timing import retime_path
from delta_dynamics.motion.sampled import Dwell, Motion, sample, sample_count
from delta_dynamics.limits import MAX_SAMPLES

#: Most cycles a plan may hold (the samples are bounded by MAX_SAMPLES too).
MAX_CYCLES = 100_000


@dataclass(frozen=True)
class PickPlan:
    """A planned pick-and-place run: ``motion`` (all cycles, sampled), ``legs`` (the timings
    there and back), ``dwell`` (s), ``cycles``, ``planning_time`` (s, both legs)."""

    motion: Motion
    legs: tuple
    dwell: float
    cycles: int
    planning_time: float

    @property
    def cycle_time(self) -> float:
        """One cycle (s): both legs and both dwells."""
        return self.legs[0].duration + self.legs[1].duration + 2 * self.dwell

    @property
    def picks_per_minute(self) -> float:
        """Cycles per minute (one pick and one place per cycle)."""
        return 60.0 / self.cycle_time


def plan_legs(model, start, end, height: float = 0.025, blend: float = 0.01, **options):
    """(there, back): the time-optimal :class:`~delta_dynamics.motion.timing.Timing` of the
    door from ``start`` to ``end`` and back (``options`` as for
    :func:`~delta_dynamics.motion.timing.retime_path`)."""
    there = retime_path(model, door_path(start, end, height, blend), **options)
    back = retime_path(model, door_path(end, start, height, blend), **options)
    return there, back


def plan_pick(model, start, end, height: float = 0.025, blend: float = 0.01, dwell: float = 0.05,
              cycles: int = 1, *, dt: float = 1e-3, **options) -> PickPlan:
    """Plan ``cycles`` pick-and-place cycles between ``start`` and ``end`` (platform centre,
    m, ``base_link``) for ``model`` (module docstring), sampled every ``dt`` s. ``options``
    (``friction``, ``torque_scale``, ...) as for :func:`~delta_dynamics.motion.timing.retime_path`.
    Raises :class:`~delta_dynamics.motion.path.PathError` for a door that cannot be built,
    :class:`~delta_dynamics.motion.timing.RetimeError` for one that cannot be timed, ValueError
    for more samples than :data:`~delta_dynamics.limits.MAX_SAMPLES`."""
    if not (isinstance(cycles, (int, np.integer)) and 1 <= cycles <= MAX_CYCLES):
        raise ValueError(f"cycles must be an integer in [1, {MAX_CYCLES}], got {cycles!r}")
    if not (math.isfinite(dwell) and dwell >= 0):
        raise ValueError(f"dwell must be a finite number >= 0 s, got {dwell!r}")
    t0 = time.perf_counter()
    there, back = plan_legs(model, start, end, height, blend, **options)
    planning = time.perf_counter() - t0
    start_pt = there.path.position(there.path.breakpoints[0])
    end_pt = there.path.position(there.path.breakpoints[-1])
    cycle = [there, Dwell(tuple(end_pt), dwell), back, Dwell(tuple(start_pt), dwell)]
    n = sample_count(cycle, dt) * cycles
    if n > MAX_SAMPLES:
        ct = there.duration + back.duration + 2 * dwell
        raise ValueError(f"{cycles} cycles of {ct:.4g} s at {dt:g} s give about {n:.3g} samples, more than "
                         f"the {MAX_SAMPLES} a command may make (MAX_SAMPLES); plan fewer cycles")
    motion = sample(cycle * cycles, dt)
    return PickPlan(motion, (there, back), float(dwell), int(cycles), planning)
