"""The threads that run :meth:`delta_hardware.control_loop.ControlLoop.cycle` once per period.

Two clocks, one rule (``docs/conventions.md``, Time):

* :class:`LoopThread` paces **real drives** on the steady clock: it sleeps to each absolute
  deadline of ``time.monotonic`` (the period does not drift, a step of the wall clock cannot
  freeze it), measures the time between cycles on it (the stall guard), and stamps each
  cycle with ROS time. It can run at real-time priority (:class:`RealtimeSettings`,
  the ``thread_priority`` / ``cpu_affinity`` / ``lock_memory`` parameters of ros2_control).
* :class:`SimTimeLoopThread` runs the **simulated robot in simulated time**: each cycle
  advances the time by exactly one period, so a slow or paused host slows the simulation
  and changes no result; ``real_time_factor`` paces it to the wall clock (1.0) or lets it run
  as fast as it can (0). After the host fell behind (a pause) it does not catch up: the
  simulation resumes where it stopped. It can be paused and resumed, and told to pause at a
  given simulated time.

Neither spin-waits: a spinning Python thread keeps the GIL, and the other threads (ROS
callbacks) would get it back only every ``sys.getswitchinterval()``. Processes that run a
loop lower that interval to 0.5 ms (:func:`realtime_friendly`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time
from dataclasses import dataclass


def realtime_friendly(switch_interval: float = 5e-4) -> None:
    """Make GIL hand-overs between the loop thread and the ROS threads quick (default 5 ms)."""
    if sys.getswitchinterval() > switch_interval:
        sys.setswitchinterval(switch_interval)


@dataclass(frozen=True)
class RealtimeSettings:
    """Real-time settings of the loop thread, as ros2_control's controller manager has them.

    ``thread_priority``: SCHED_FIFO priority 1-99 of the loop thread (0: normal scheduling).
    ``cpu_affinity``: the CPU the loop thread is pinned to (-1: any).
    ``lock_memory``: ``mlockall(MCL_CURRENT | MCL_FUTURE)``: no page of the process is swapped
    out or faulted in lazily while the loop runs.
    """

    thread_priority: int = 0
    cpu_affinity: int = -1
    lock_memory: bool = False

    def __post_init__(self):
        if not (isinstance(self.thread_priority, int) and 0 <= self.thread_priority <= 99):
            raise ValueError(f"thread_priority must be an integer 0-99 (0: normal scheduling), "
                             f"got {self.thread_priority!r}")
        ncpu = os.cpu_count() or 1
        if not (isinstance(self.cpu_affinity, int) and -1 <= self.cpu_affinity < ncpu):
            raise ValueError(f"cpu_affinity must be -1 (any) or a CPU index 0-{ncpu - 1}, got {self.cpu_affinity!r}")

    def apply(self) -> list[str]:
        """Apply to the calling thread (and the process, for ``lock_memory``); the warnings
        for what the process may not do (never raises)."""
        warnings = []
        if self.thread_priority:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.thread_priority))
            except PermissionError:
                warnings.append(f"thread_priority {self.thread_priority}: not permitted (SCHED_FIFO needs "
                                f"CAP_SYS_NICE or an rtprio limit in /etc/security/limits.conf); the loop runs "
                                f"at normal priority")
            except OSError as e:
                warnings.append(f"thread_priority {self.thread_priority}: {e.strerror or e}; normal priority")
        if self.cpu_affinity >= 0:
            try:
                os.sched_setaffinity(0, {self.cpu_affinity})
            except OSError as e:
                warnings.append(f"cpu_affinity {self.cpu_affinity}: {e.strerror or e}; not pinned")
        if self.lock_memory:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            if libc.mlockall(3) != 0:                       # MCL_CURRENT | MCL_FUTURE
                err = ctypes.get_errno()
                warnings.append(f"lock_memory: mlockall failed ({os.strerror(err)}; raise the memlock "
                                f"limit, ulimit -l, or grant CAP_IPC_LOCK); memory not locked")
        return warnings


class _Runner:
    """Start/stop and the error of a loop thread."""

    name = "delta_control_loop"

    def __init__(self, loop, on_cycle):
        self.loop = loop
        self.on_cycle = on_cycle
        self._stop = threading.Event()
        self._thread = None
        self.error: BaseException | None = None
        self.on_error = None             # called with the exception from the loop thread

    def start(self):
        realtime_friendly()
        self._stop.clear()
        self._thread = threading.Thread(target=self._guarded, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0):
        self._stop.set()
        if self._thread is not None:
            if self._thread is not threading.current_thread():
                self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _guarded(self):
        try:
            self._run()
        except BaseException as e:          # surfaced by the node: quick stop, error state
            self.error = e
            if self.on_error is not None:
                self.on_error(e)

    def _run(self):
        raise NotImplementedError


class LoopThread(_Runner):
    """Runs ``loop.cycle`` at the loop's rate in its own thread on the steady clock and hands
    each output to ``on_cycle``. ``clock`` stamps each cycle (the node passes ROS time);
    ``steady`` schedules the cycles and measures the time between them. A cycle more than a
    period late is counted as an overrun and the schedule re-anchored (no burst of cycles)."""

    def __init__(self, loop, on_cycle, clock=time.monotonic, steady=time.monotonic,
                 realtime: RealtimeSettings | None = None):
        super().__init__(loop, on_cycle)
        self.clock = clock
        self.steady = steady
        self.realtime = realtime or RealtimeSettings()
        self.warnings: list[str] = []

    def _run(self):
        self.warnings = self.realtime.apply()
        period = self.loop.period
        next_t = last = self.steady()
        while not self._stop.is_set():
            t = self.steady()
            out = self.loop.cycle(self.clock(), elapsed=t - last)
            last = t
            self.on_cycle(out)
            next_t += period
            now = self.steady()
            if now > next_t + period:
                self.loop.stats.overruns += 1
                next_t = now
                continue
            slack = next_t - now
            if slack > 0:
                self._stop.wait(slack)


class SimTimeLoopThread(_Runner):
    """Runs ``loop.cycle`` in simulated time: cycle k is stamped ``start + k * period`` and
    the drives advance by exactly one period, whatever the host does.

    ``real_time_factor`` > 0 paces the simulation to that many simulated seconds per wall
    second (on the steady clock) as long as the host keeps up; when it falls more than
    ``max_lag`` wall seconds behind (a paused or saturated process), the pacing restarts from
    where the simulation is, so it never runs a burst to catch up. 0 runs as fast as it can
    (yielding the GIL after every cycle). :attr:`time` is the current simulated time,
    :meth:`achieved_factor` the measured factor since the last call.

    :meth:`pause` / :meth:`resume` stop and restart simulated time (no cycle runs while
    paused: the robot is frozen, as in a paused simulator); ``pause_at`` (simulated s, None:
    never) pauses it right after the cycle at that time, and ``on_pause(t)`` is called then.
    ``paused`` starts it paused.
    """

    name = "delta_sim_loop"

    def __init__(self, loop, on_cycle, start: float = 0.0, real_time_factor: float = 1.0,
                 steady=time.monotonic, max_lag: float = 0.1, paused: bool = False):
        super().__init__(loop, on_cycle)
        if not (real_time_factor >= 0 and real_time_factor < float("inf")):
            raise ValueError(f"real_time_factor must be a finite number >= 0 (0: as fast as possible), "
                             f"got {real_time_factor!r}")
        self.real_time_factor = float(real_time_factor)
        self.steady = steady
        self.max_lag = max_lag
        self.time = float(start)
        self.restarts = 0                 # times the pacing restarted after the host fell behind
        self._marks = (steady(), self.time)
        self._running = threading.Event()
        if not paused:
            self._running.set()
        self.parked = threading.Event()  # set while paused with no cycle running
        self.pause_at: float | None = None
        self.on_pause = None

    @property
    def paused(self) -> bool:
        """Whether simulated time is paused."""
        return not self._running.is_set()

    def pause(self, wait: float = 0.0) -> None:
        """Pause after the cycle running now; with ``wait`` > 0 wait up to that many seconds
        for it to end (:attr:`time` is then where the simulation stands)."""
        self._running.clear()
        if wait > 0 and self.running:
            self.parked.wait(wait)

    def resume(self) -> None:
        """Restart simulated time after :meth:`pause`."""
        self._running.set()

    def stop(self, timeout: float = 2.0):
        """Stop the thread, paused or not, and wait up to ``timeout`` s for it."""
        self._stop.set()
        self._running.set()                              # a paused loop must see the stop
        super().stop(timeout)

    def achieved_factor(self) -> float:
        """Simulated seconds per wall second since the last call (nan before the first cycle)."""
        wall, sim = self.steady(), self.time
        w0, s0 = self._marks
        self._marks = (wall, sim)
        return (sim - s0) / (wall - w0) if wall > w0 else float("nan")

    def _run(self):
        period = self.loop.period
        rtf = self.real_time_factor
        start, k = self.time, 0
        anchor_wall, anchor_sim = self.steady(), self.time
        while not self._stop.is_set():
            at = self.pause_at
            if at is not None and self.time >= at - 1e-9:
                self.pause_at = None
                self._running.clear()
                if self.on_pause is not None:
                    self.on_pause(self.time)
            if not self._running.is_set():
                self.parked.set()
                self._running.wait()
                self.parked.clear()
                anchor_wall, anchor_sim = self.steady(), self.time    # pace from the resume on
                continue
            k += 1
            t = start + k * period                             # no drift from summing periods
            out = self.loop.cycle(t, elapsed=period)
            self.time = t
            self.on_cycle(out)
            if rtf == 0:
                time.sleep(0)                                  # let the ROS threads have the GIL
                continue
            target = anchor_wall + (t - anchor_sim) / rtf
            now = self.steady()
            if now > target + self.max_lag:                    # fell behind: resume from here
                anchor_wall, anchor_sim = now, t
                self.restarts += 1
            elif target > now:
                self._stop.wait(target - now)
