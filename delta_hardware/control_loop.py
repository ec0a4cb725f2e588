"""The control loop of the hardware node, without ROS: one call of :meth:`ControlLoop.cycle`
per control period reads the drives, samples the setpoint, applies the control law and the
safety rules, and writes the drives.

Control law (per joint, torque mode)::

    tau = kp (q_d - q) + kd (q_dot_d - q_dot) + tau_ff,   clamped to the effort limits

where tau_ff is the feedforward effort of the explicit dynamic model for the setpoint
(Asadi & Heydari eq. 39; Colombo & Lentini eq. 14 for a linear Delta): computed in-process
(``feedforward='model'``, the default: the nominal robot file or ``feedforward_robot``, e.g. the
identified one), or from an external source on the feedforward topic when a matching answer
is fresh (``'topic'``; the in-process model when it is late), or left out (``'none'``, PD only).

The loop works for either kind of Delta through :mod:`delta_dynamics.algorithms`: joint
values are arm angles (rad) and torques (N m) on a rotary robot, carriage positions (m) and
forces (N) on a linear one (:func:`delta_dynamics.kinds.joint_units`).

Setpoints come from a trajectory plan, from streamed commands (the ros2_control topic
contract, guarded by ``command_timeout``: when commands stop, the loop holds the robot
where it is), or from a hold. Safety: a measured position beyond its limits by more than
``position_margin`` or a speed above ``velocity_margin`` times its limit quick-stops every
axis; so do a drive fault and a loop that stalled longer than ``max_stall``. Every stop
latches: it holds until a reset *requested after it* (requests carry the time they were
received, ``requested_ns``: a reset, plan or command received before the stop is void, even
when it arrives after it). With ``monitoring`` and collision thresholds, a collision is such a stop
(``collision_reaction`` ``stop``), or (``retract``) the stop latched at once while the loop first
moves the robot back along the path it just travelled (:mod:`delta_hardware.retract`), then
quick-stops the drives. Each cycle first lets the drives pass the time since the previous
one with the targets of the previous one (a late cycle leaves the last torque applied for
longer, as on a real robot), then reads fresh feedback and computes.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from delta_dynamics.algorithms import inverse_dynamics_sample, joint_units, model_with_payload
from delta_hardware.drives.interface import DriveError, DriveState, Mode
from delta_hardware.loop_config import LoopConfig, gain_limits  # noqa: F401 - re-exported
from delta_hardware.loop_monitor import LoopMonitor, collision_text
from delta_hardware.retract import SETTLE, PathRing, check_distance, check_reaction, plan_retract
from delta_hardware.stream_follower import StreamFollower
from delta_hardware.joint_plan import JointPlan, Setpoint


@dataclass
class CycleOutput:
    """What one control cycle produced: its time (s), the measured position, velocity and effort, the
    setpoint and the one a period ahead (None when not controlling), the torque written and its
    feedforward part, and the events raised."""
    time: float
    position: tuple
    velocity: tuple
    effort: tuple
    setpoint: Setpoint | None
    preview: Setpoint | None               # the setpoint one period ahead (for the dynamics node)
    torque: tuple
    feedforward: tuple
    events: list = field(default_factory=list)


class LoopStats:
    """Running statistics of the loop period and the safety counters: the last ``size``
    periods (percentiles), and a histogram of every period since the start (``BIN`` s bins
    up to ``HIST_MAX``: the p99.9 and the worst over a whole run)."""

    BIN = 1e-5                          # s
    HIST_MAX = 1.0                      # s; longer periods count in the last bin

    def __init__(self, size: int = 5000):
        self.periods = np.zeros(size)
        self.n = 0
        self.hist = np.zeros(int(self.HIST_MAX / self.BIN) + 1, dtype=np.int64)
        self.worst = 0.0
        self.latencies = np.zeros(size)     # s from publishing a desired state to its feedforward
        self.n_lat = 0
        self.limit_hits = [0, 0, 0]
        self.ff_topic = 0
        self.ff_model = 0
        self.overruns = 0

    def add_period(self, dt: float):
        """Count one loop period ``dt`` (s): in the ring, the histogram and the worst."""
        self.periods[self.n % len(self.periods)] = dt
        self.n += 1
        self.hist[min(max(int(dt / self.BIN), 0), len(self.hist) - 1)] += 1
        if dt > self.worst:
            self.worst = dt

    def add_latency(self, dt: float):
        """Count one feedforward latency ``dt`` (s): from publishing a desired state to its feedforward's arrival."""
        self.latencies[self.n_lat % len(self.latencies)] = dt
        self.n_lat += 1

    def period_quantile(self, q: float) -> float:
        """The ``q`` quantile (0-1) of every period since the start, s (to the bin's upper edge)."""
        total = int(self.hist.sum())
        if not total:
            return float("nan")
        k = int(np.searchsorted(np.cumsum(self.hist), q * total, side="left"))
        return (k + 1) * self.BIN

    def summary(self) -> dict:
        """Cycles, the period in ms (mean, p50, p99, max of the last ``size``; p99.9 and max of the whole run),
        torque limit hits, overruns and feedforward counts and latencies; ``{"cycles": 0}`` before any period."""
        p = self.periods[:min(self.n, len(self.periods))]
        if len(p) == 0:
            return {"cycles": 0}
        lat = self.latencies[:min(self.n_lat, len(self.latencies))]
        extra = {} if len(lat) == 0 else {
            "feedforward_latency_p50_ms": 1e3 * float(np.percentile(lat, 50)),
            "feedforward_latency_p99_ms": 1e3 * float(np.percentile(lat, 99))}
        return {**extra, "cycles": self.n, "period_mean_ms": 1e3 * float(p.mean()),
                "period_p50_ms": 1e3 * float(np.percentile(p, 50)),
                "period_p99_ms": 1e3 * float(np.percentile(p, 99)),
                "period_max_ms": 1e3 * float(p.max()),
                "period_p999_run_ms": 1e3 * self.period_quantile(0.999),
                "period_max_run_ms": 1e3 * self.worst,
                "torque_limit_hits": list(self.limit_hits), "overruns": self.overruns,
                "feedforward_from_topic": self.ff_topic, "feedforward_from_model": self.ff_model,
                "feedforward_answers": self.n_lat}


class LateCycles:
    """Late control cycles, summarised: at most one event per ``interval`` seconds of the
    loop's time, with how many cycles came more than ``factor`` periods late and the worst
    gap (a busy host would otherwise bury the other events under one per cycle)."""

    def __init__(self, period: float, factor: float = 10.0, interval: float = 1.0):
        self.period, self.factor, self.interval = period, factor, interval
        self.count = 0
        self.worst = 0.0
        self.total = 0
        self._since = None

    def add(self, now: float, gap: float) -> None:
        """Count a cycle that came ``gap`` s after the previous one (loop time ``now``); the first is
        reported at once."""
        self.count += 1
        self.total += 1
        self.worst = max(self.worst, gap)
        if self._since is None:
            self._since = now - self.interval          # the first one is reported at once

    def report(self, now: float) -> str:
        """The summary event if one is due (and reset the counts), else ''."""
        if not self.count or now - self._since < self.interval:
            return ""
        text = (f"control cycle late: {self.count} cycle{'s' * (self.count > 1)} more than "
                f"{self.factor:g} periods late in the last {min(now - self._since, 99):.1f} s, worst "
                f"{self.worst * 1e3:.1f} ms (period {self.period * 1e3:g} ms); the drives held their "
                f"torque meanwhile")
        self.count, self.worst, self._since = 0, 0.0, now
        return text


class ControlLoop:
    """PD + feedforward joint control of the three axes with limits, watchdog and e-stop."""

    def __init__(self, model, drives, config: LoopConfig | None = None):
        self.model = model
        self.ff_model = model                 # the model of the in-process feedforward
        self.ff_function = None               # or a function of the setpoint that replaces it
        self._ff_last = (None, None, None)    # (model, setpoint floats, effort): a held setpoint's repeat
        self._ff_payload = (None, 0.0, None)  # (ff_model, kg, the model carrying kg): payload_feedforward
        self.drives = drives
        self.cfg = config or LoopConfig()
        self.period = 1.0 / self.cfg.rate
        lim = model.robot.limits
        self.units = joint_units(model)
        self.q_lo = np.array([p[0] for p in lim.position])
        self.q_hi = np.array([p[1] for p in lim.position])
        self.v_max = np.array(lim.velocity)
        self.tau_max = np.array(lim.effort)
        self.kp = np.array(self.cfg.kp)
        self.kd = np.array(self.cfg.kd)
        self.stats = LoopStats()
        self._lock = threading.Lock()
        self._plan: JointPlan | None = None
        self._stream = None                   # (time, Setpoint, tau_extra)
        self._hold: Setpoint | None = None
        self._last_sp: Setpoint | None = None
        self._ff = None                       # (stamp, tau)
        self._estop = ""                      # reason while stopped
        self._stop_ns = 0                     # time.time_ns() of the latest stop (its request's reception)
        self._stops = 0                       # stops so far (a reset checks none came meanwhile)
        self._last_time = None
        self._was_controlling = False
        self._watchdog_fired = False
        self.late = LateCycles(self.period)
        self.follower = StreamFollower(self.period, self.v_max, lim.acceleration)
        self._recovery = None                 # (lo, hi) while a joint is outside its limits
        self.ff_silent = False                # the topic feedforward stopped coming
        self._ff_fresh_at = None
        self._preview_time = None             # the time of the setpoint previewed last cycle
        self.last_period = self.period        # s between the last two cycles
        self._held = False                    # the last cycle's exchange was held back (drives.cycle)
        self.notices: list[str] = []          # events raised outside a cycle (activate, reset)
        # the momentum observer and collision detection on the feedforward model (loop_monitor)
        # only with cfg.monitoring: about 0.1 ms of CPU per cycle, a third of a simulated cycle (docs/monitoring.md)
        self.monitor = LoopMonitor(self.ff_model, self.cfg.observer_gain, self.cfg.collision_threshold)
        self.monitoring = self.cfg.monitoring     # read by the loop thread each cycle; set by reconfigure
        self._monitored = False                   # the loop thread's view: the monitor holds a run
        # the collision reaction retract (delta_hardware.retract): the recent commanded path, and the
        # motion back along it while it runs (the stop is latched meanwhile; the drives stay enabled)
        self.path = PathRing()
        self._retract = None                      # (Retract, the collision's sentence) while retracting

    # ------------------------------------------------------------------ commands (any thread)
    def activate(self, _stops: int | None = None) -> None:
        """Enable the drives and hold where the robot is."""
        self.drives.enable()
        fb = self.drives.read()
        with self._lock:
            if _stops is not None and self._stops != _stops:       # a stop came during the reset
                reason = self._estop
                undone = True
            else:
                undone = False
        if undone:
            self.drives.quick_stop(reason)
            raise DriveError(f"reset undone: a stop came while it ran ({reason}); the robot is still stopped")
        with self._lock:
            self._plan, self._stream = None, None
            self._hold = Setpoint.hold(fb.position)
            self._last_sp = self._hold
            self._estop = ""
            self._retract = None
            self.path.clear()
            self._last_time = None
            self._was_controlling = False
            self._held = False
            self._start_recovery(np.array(fb.position))

    # ------------------------------------------------------------------ outside the limits
    #: speed of the way back into the joint limits, as a fraction of the velocity limits
    RECOVERY_SPEED = 0.1

    def _start_recovery(self, q) -> None:
        """A joint outside its position limits (after a fault, or started there) may only move
        slowly back toward them: the effective limits widen to where it is and shrink as it
        comes back; the velocity limit is RECOVERY_SPEED of the robot file's."""
        out = (q < self.q_lo) | (q > self.q_hi)
        if not out.any():
            self._recovery = None
            self.follower.set_velocity_limit(self.v_max)
            return
        self._recovery = (np.minimum(self.q_lo, q), np.maximum(self.q_hi, q))
        self.follower.set_velocity_limit(self.RECOVERY_SPEED * self.v_max)
        names, u = self.model.joint_names, self.units["position"]
        where = "; ".join(f"{names[i]} at {q[i]:.4f} {u} is {max(self.q_lo[i] - q[i], q[i] - self.q_hi[i]):.4f} {u} "
                          f"outside its limits [{self.q_lo[i]:g}, {self.q_hi[i]:g}]" for i in np.nonzero(out)[0])
        self.notices.append(f"outside the joint limits: {where}; only slow motion (at most "
                            f"{self.RECOVERY_SPEED:g} x the velocity limits) back toward the limits is "
                            f"accepted until every joint is inside")

    def _update_recovery(self, q, q_set) -> str:
        """Shrink the widened limits to the joints' positions (measured and set: the hold
        setpoint of a sagging joint must stay inside)."""
        lo, hi = self._recovery
        lo = np.maximum(lo, np.minimum(self.q_lo, np.minimum(q, q_set)))
        hi = np.minimum(hi, np.maximum(self.q_hi, np.maximum(q, q_set)))
        if (lo >= self.q_lo).all() and (hi <= self.q_hi).all():
            self._recovery = None
            self.follower.set_velocity_limit(self.v_max)
            return "back within the joint limits: full speed allowed again"
        self._recovery = (lo, hi)
        return ""

    @property
    def recovering(self) -> bool:
        """Whether a joint is outside its limits and only slow motion back is accepted."""
        return self._recovery is not None

    def limits(self):
        """(lo, hi, velocity) the plans must keep now: the robot file's, or during the way back
        into the limits the widened position limits and the reduced speed."""
        rec = self._recovery
        if rec is None:
            return self.q_lo, self.q_hi, self.v_max
        return rec[0], rec[1], self.RECOVERY_SPEED * self.v_max

    def deactivate(self) -> None:
        """Drop the plan and the stream and disable the drives."""
        with self._lock:
            self._plan, self._stream, self._retract = None, None, None
        self.drives.disable()

    def current_setpoint(self) -> Setpoint:
        """The setpoint being followed (a new plan starts from it)."""
        with self._lock:
            if self._last_sp is not None:
                return self._last_sp
        return Setpoint.hold(self.drives.read().position)

    def submit_plan(self, plan: JointPlan, requested_ns: int | None = None) -> None:
        """Follow ``plan`` from now on; DriveError if the robot is stopped or the plan was
        received (``requested_ns``, ``time.time_ns()``) before the latest stop. A plan that
        starts on receipt (``plan.on_receipt``) and comes after its start time (its sender was
        slow; the loop's time went on) is shifted to start at the loop's last cycle: the
        setpoint does not jump ahead along it."""
        with self._lock:
            self._require_running(requested_ns)
            if plan.on_receipt and self._last_time is not None and self._last_time > plan.start_time:
                plan.delay(self._last_time - plan.start_time)
            self._plan, self._stream, self._hold = plan, None, None

    def submit_command(self, now: float, q=None, tau=None, requested_ns: int | None = None) -> None:
        """A streamed command (position and/or effort at the arm) valid for ``command_timeout``.
        The setpoint moves toward the commanded position within the velocity and acceleration
        limits (:class:`~delta_hardware.stream_follower.StreamFollower`), never jumps to it."""
        with self._lock:
            self._require_running(requested_ns)
            base = self._last_sp or Setpoint.hold(self.drives.read().position)
            if self._stream is None:
                self.follower.reset(base.q, base.qd, base.qdd)
            target = np.asarray(q, dtype=float) if q is not None else (
                self._stream[1] if self._stream is not None else base.q.copy())
            if self._recovery is not None:
                target = np.clip(target, self._recovery[0], self._recovery[1])
            extra = np.zeros(3) if tau is None else np.asarray(tau, dtype=float)
            self._stream = (now, target, extra)
            self._plan, self._hold = None, None
            self._watchdog_fired = False

    def reconfigure(self, feedforward=None, model=None, kp=None, kd=None, function=None,
                    observer_gain=None, collision_threshold=None, monitoring=None, collision_reaction=None,
                    retract_distance=None, payload_feedforward=None) -> None:
        """Change the control law while running: feedforward source, the model used for the
        in-process feedforward (e.g. identified parameters; the observer's too), the gains, or a function
        ``f(setpoint) -> tau`` that replaces the in-process model (e.g. the dynamics node's
        own model when the nodes are composed in one process); the observer gain (1/s) and the
        collision thresholds (:class:`~delta_hardware.loop_monitor.LoopMonitor`); ``monitoring``
        (bool) runs the monitor each cycle or not at all (turned on, the observer starts from the
        state at the next controlling cycle; off, its outputs are NaN); the collision reaction
        (``stop`` or ``retract``) and the retract's distance (m), for the next collision;
        ``payload_feedforward`` (bool): the in-process model's feedforward carries the payload the
        monitor read over the last motion (:func:`~delta_dynamics.algorithms.model_with_payload`)."""
        with self._lock:
            if payload_feedforward is not None:
                if not isinstance(payload_feedforward, bool):
                    raise ValueError(f"payload_feedforward must be true or false, got {payload_feedforward!r}")
                self.cfg.payload_feedforward = payload_feedforward
            if collision_reaction is not None:
                self.cfg.collision_reaction = check_reaction(collision_reaction)
            if retract_distance is not None:
                self.cfg.retract_distance = check_distance(retract_distance)
            if monitoring is not None:
                self.monitoring = bool(monitoring)
            if model is not None or observer_gain is not None or collision_threshold is not None:
                self.monitor.configure(model=model, gain=observer_gain, thresholds=collision_threshold)
            if function is not None:
                self.ff_function = function
            if feedforward is not None:
                self.cfg.feedforward = feedforward
            if model is not None:
                self.ff_model = model
            if kp is not None:
                self.kp = np.asarray(kp, dtype=float)
            if kd is not None:
                self.kd = np.asarray(kd, dtype=float)

    def hold(self) -> None:
        """Stop following the plan or stream and hold the current setpoint's position."""
        with self._lock:
            base = self._last_sp or Setpoint.hold(self.drives.read().position)
            self._plan, self._stream = None, None
            self._hold = Setpoint.hold(base.q)

    def is_following(self, plan) -> bool:
        """Whether ``plan`` is still the plan being executed (not finished nor replaced)."""
        with self._lock:
            return self._plan is plan

    @property
    def plan_id(self) -> int:
        """The ``id`` of the plan being executed (0: none, or a plan without one)."""
        plan = self._plan
        return int(getattr(plan, "id", 0) or 0) if plan is not None else 0

    def set_feedforward(self, stamp: float, tau, received: float | None = None) -> None:
        """A feedforward torque for the setpoint at time ``stamp``. With ``received`` (the
        clock at arrival), its latency from the desired state's publication (``stamp`` - one
        period, see the hardware node) goes into the statistics."""
        self._ff = (stamp, np.asarray(tau, dtype=float))
        if received is not None:
            self.stats.add_latency(received - (stamp - self.period))

    def emergency_stop(self, reason: str, at_ns: int | None = None) -> None:
        """Quick-stop every axis and latch: plans and commands are refused until a reset
        requested after ``at_ns`` (``time.time_ns()`` when the stop was requested; default now)."""
        self._latch(reason or "emergency stop", at_ns)
        self.drives.quick_stop(reason)

    def _latch(self, reason: str, at_ns: int | None = None) -> None:
        with self._lock:
            self._estop = reason
            self._stop_ns = max(self._stop_ns, time.time_ns() if at_ns is None else int(at_ns))
            self._stops += 1
            self._plan, self._stream, self._retract = None, None, None     # a stop ends a retract at once

    def reset(self, requested_ns: int | None = None) -> None:
        """Clear a stop or fault; the robot then holds where it is (a joint outside its limits
        may then only move slowly back toward them). A reset received (``requested_ns``)
        before the latest stop is void, and a stop that comes while it runs wins: DriveError."""
        with self._lock:
            if requested_ns is not None and requested_ns < self._stop_ns:
                raise DriveError(f"void: it was requested before the stop ({self._estop or 'since cleared'}); "
                                 f"request a reset again")
            if self._retract is not None:
                raise DriveError("the robot is retracting after a collision: reset when it has stopped "
                                 "(an emergency stop ends the retract at once)")
            stops = self._stops
        self.drives.reset()
        self.activate(_stops=stops)

    @property
    def stopped_reason(self) -> str:
        """Why the robot is stopped (the latched stop's reason; '' while it is not)."""
        return self._estop

    def _require_running(self, requested_ns: int | None = None):
        if self._estop:
            raise DriveError(f"the robot is stopped ({self._estop}): call reset first")
        if requested_ns is not None and requested_ns < self._stop_ns:
            raise DriveError("void: it was sent before the latest stop; send it again")
        if self.drives.state is not DriveState.ENABLED:
            raise DriveError(f"the drives are {self.drives.state.value.replace('_', ' ')}: the node must be active")

    # ------------------------------------------------------------------ the cycle (loop thread)
    def cycle(self, now: float, elapsed: float | None = None) -> CycleOutput:
        """One control period at time ``now`` (the time base of the plans and stamps: ROS
        time in the node). ``elapsed`` is the time since the previous cycle measured on a
        steady clock (the simulated period in simulated time); it drives the stall check and
        the drives' time step, so that a step of the wall clock (NTP, a manual change)
        neither quick-stops the robot nor jolts the simulation. Without it the difference of
        ``now`` is used.

        Order: the drives first pass the time since the previous cycle with what was
        commanded then (a real drive holds its last target through a late cycle; the
        simulated plant integrates it; a CANopen master sends SYNC), then the loop reads the
        fresh feedback, computes and writes the targets for the next interval."""
        events = []
        if self._last_time is None:
            dt, moved = self.period, 0.0
        else:
            dt = now - self._last_time if elapsed is None else elapsed
            moved = now - self._last_time                  # how far the plans' time base went on
            self.stats.add_period(dt)
        self._last_time = now
        self.last_period = dt
        step = min(max(dt, 0.0), self.cfg.max_stall)
        advanced = self.drives.cycle(step)
        # the drives did not advance (a CANopen SYNC held back): neither does the trajectory
        held = advanced is not None and advanced <= 0.0 < step and self._was_controlling
        fb = self.drives.read()
        q, qd = np.array(fb.position), np.array(fb.velocity)
        if fb.state is DriveState.FAULT and not self._estop:
            reason = "; ".join(f"{self.model.joint_names[k]}: {r}" for k, r in sorted(fb.faults.items())) or "drive fault"
            self._latch(f"drive fault: {reason}")
            events.append(f"fault: {reason}")
            self.drives.quick_stop(reason)
        if self._monitored and not self.monitoring:           # turned off: NaN from this cycle on
            self.monitor.off()
            self._monitored = False
        retract = self._retract                                # (Retract, sentence) while retracting
        if (not self._estop or retract is not None) and fb.state is DriveState.ENABLED:
            if self._recovery is not None:
                back = self._update_recovery(q, self._last_sp.q if self._last_sp is not None else q)
                if back:
                    events.append(back)
            bad = self._check_limits(q, qd)
            # a gap only counts when the previous cycle was controlling (not across a stop,
            # a reset or an activation, which may block on the drives for a while)
            if not bad and self._was_controlling and dt > self.cfg.max_stall:
                bad = (f"control loop stalled for {dt * 1e3:.0f} ms "
                       f"(max_stall {self.cfg.max_stall * 1e3:.0f} ms)")
            if bad:
                events.append(f"quick stop: {bad}")
                self.emergency_stop(bad)
            elif self.monitoring:
                hit = self._observe(now, q, qd, fb.torque, step if advanced is None else advanced)
                if hit and retract is None:               # during a retract the contact that tripped it still pushes
                    self._react(hit, now, q, events)      # "collision on ...": an error event
            if retract is not None and retract[0].done(now):
                self._finish_retract(retract, events)
        retract = self._retract
        if (self._estop and retract is None) or fb.state is not DriveState.ENABLED:
            self._was_controlling = False
            if self._monitored:
                self.monitor.restart()
            return CycleOutput(now, fb.position, fb.velocity, fb.torque, None, None, (0.0,) * 3, (0.0,) * 3, events)

        if self._was_controlling and dt > 10 * self.period:
            self.late.add(now, dt)
        with self._lock:
            retract = self._retract
            motion = retract[0] if retract is not None else None
            if (held or self._held) and self._plan is not None:
                self._plan.delay(moved - (advanced or 0.0))     # the plan's time runs with the drives'
            if (held or self._held) and motion is not None:
                motion.delay(moved - (advanced or 0.0))
            self._held = held
            if held and self._last_sp is not None:
                sp, extra = self._last_sp, (self._stream[2] if self._stream is not None else np.zeros(3))
            elif motion is not None:
                sp, extra = motion.sample(now), np.zeros(3)
            else:
                sp, extra = self._setpoint(now, q, events)
            preview = (self._plan.sample(now + self.period) if self._plan is not None else
                       motion.sample(now + self.period) if motion is not None else sp)
            self._last_sp = sp
            if self.cfg.collision_reaction == "retract" and motion is None:    # the path a retract goes back along
                if self._plan is not None or self._stream is not None:
                    self.path.add(sp.q)
                else:
                    self.path.clear()                     # holding: a collision now has no path to retract along
        ff = self._feedforward(now, sp, events) + extra
        self._preview_time = now + self.period
        tau = self.kp * (sp.q - q) + self.kd * (sp.qd - qd) + ff
        if not np.isfinite(tau).all():           # a broken model or robot file: never written
            bad = (f"non-finite torque {np.round(tau, 4).tolist()} (feedforward "
                   f"{np.round(ff, 4).tolist()}) from the {self.cfg.feedforward} feedforward; check the robot file")
            events.append(f"quick stop: {bad}")
            self.emergency_stop(bad)
            self._was_controlling = False
            return CycleOutput(now, fb.position, fb.velocity, fb.torque, None, None, (0.0,) * 3, (0.0,) * 3, events)
        clipped = np.clip(tau, -self.tau_max, self.tau_max)
        for i in np.nonzero(clipped != tau)[0]:
            self.stats.limit_hits[i] += 1
        try:
            if self.drives.mode is Mode.POSITION:
                self.drives.write(position=sp.q, velocity=sp.qd, torque=ff)
            elif self.drives.mode is Mode.VELOCITY:
                # the drive closes the velocity loop; the position error becomes a velocity term
                self.drives.write(velocity=sp.qd + self.kp / np.maximum(self.kd, 1e-9) * (sp.q - q), torque=ff)
            else:
                self.drives.write(torque=clipped)
        except DriveError as e:
            if not self._estop:                  # not a stop that came from another thread meanwhile
                events.append(f"drive refused command: {e}")
        self._was_controlling = True
        late = self.late.report(now)
        if late:
            events.append(late)
        return CycleOutput(now, fb.position, fb.velocity, fb.torque, sp, preview,
                           tuple(clipped.tolist()), tuple(ff.tolist()), events)

    def _react(self, hit: str, now: float, q, events) -> None:
        """The collision reaction to ``hit`` (the collision's sentence) at ``now`` with the robot measured at
        ``q``: ``stop``, the latched quick stop; ``retract``, the stop latched at once (requests sent
        before it are void, plans and commands refused) while the drives stay enabled to follow the
        motion back along the recorded path (:mod:`delta_hardware.retract`), then the quick stop
        (:meth:`_finish_retract`). No path (the robot was holding) or a retract that cannot be planned:
        the quick stop at once, the reason saying so."""
        if self.cfg.collision_reaction != "retract":
            events.append(hit)
            self.emergency_stop(hit)
            return
        lo, hi, _ = self.limits()
        try:
            motion = plan_retract(self.model, self.path, q, now, self.cfg.retract_distance, lo, hi, self.v_max,
                                  self.model.robot.limits.acceleration)
            why = "" if motion is not None else "no path to retract along (the robot was at rest)"
        except Exception as e:  # noqa: BLE001 - whatever the planning does, a collision stops the robot
            motion, why = None, f"the retract could not be planned ({type(e).__name__}: {e})"
        if motion is None:
            reason = f"{hit}; {why}: stopped"
            events.append(reason)
            self.emergency_stop(reason)
            return
        reason = (f"{hit}; retracting {motion.along * 1e3:.1f} mm back along the path "
                  f"({motion.duration + SETTLE:.2f} s), then stopping")
        with self._lock:
            if self._estop:                          # a stop came meanwhile: it wins
                return
            self._estop = reason
            self._stop_ns = max(self._stop_ns, time.time_ns())
            self._stops += 1
            self._plan, self._stream = None, None
            self._retract = (motion, hit)
        events.append(reason)

    def _finish_retract(self, retract, events) -> None:
        """The retract ``retract`` (Retract, the collision's sentence) has ended: the latched quick
        stop, the reason naming the collision and the distance gone back (unless a stop ended it first)."""
        motion, hit = retract
        reason = f"{hit}; retracted {motion.along * 1e3:.1f} mm back along the path, then stopped"
        with self._lock:
            if self._retract is not retract:         # an emergency stop ended it first
                return
            self._retract = None
            self._estop = reason
        events.append(reason)
        self.drives.quick_stop(reason)

    @property
    def retracting(self) -> bool:
        """Whether the loop is moving the robot back after a collision (the stop is latched meanwhile)."""
        return self._retract is not None

    def _observe(self, now, q, qd, tau, interval) -> str:
        """The monitor's cycle (:class:`~delta_hardware.loop_monitor.LoopMonitor`): the residual and platform
        force from the effort ``tau`` the drives applied over the ``interval`` s just passed; the
        collision's sentence, or ''. The observer restarts after a cycle that did not control."""
        mon = self.monitor
        if not self._was_controlling or interval <= 0.0 or not self._monitored:
            mon.restart()
        self._monitored = True
        last = self._last_sp                       # the setpoint the effort ``tau`` followed
        moving = last is not None and bool(np.any(np.asarray(last.qd) != 0.0))
        hit = mon.update(q, qd, tau, interval if interval > 0.0 else self.period, moving)
        return collision_text(hit, self.model.joint_names, self.units, now) if hit is not None else ""

    def _setpoint(self, now, q, events):
        extra = np.zeros(3)
        if self._stream is not None:
            t_cmd, target, extra = self._stream
            if now - t_cmd > self.cfg.command_timeout:
                if not self._watchdog_fired:
                    events.append(f"watchdog: no command for {now - t_cmd:.3f} s "
                                  f"(command_timeout {self.cfg.command_timeout:g} s): holding position")
                    self._watchdog_fired = True
                self._stream = None
                self._hold = Setpoint.hold(q)
                return self._hold, np.zeros(3)
            return Setpoint(*self.follower.step(target)), extra
        if self._plan is not None:
            sp = self._plan.sample(now)
            if self._plan.done(now):
                events.append("trajectory finished")
                self._hold = Setpoint.hold(sp.q)
                self._plan = None
            return sp, extra
        if self._hold is None:
            self._hold = Setpoint.hold(q)
        return self._hold, extra

    #: s of loop time without a fresh topic feedforward before it counts as silent (an event)
    FEEDFORWARD_SILENT_AFTER = 1.0

    def _feedforward(self, now, sp, events) -> np.ndarray:
        mode = self.cfg.feedforward
        if mode == "none":
            return np.zeros(3)
        if mode == "topic":
            # only the answer to the setpoint previewed for this cycle (an older answer is
            # for another setpoint), and only if this cycle is not late
            ff = self._ff
            if (ff is not None and self._preview_time is not None and abs(ff[0] - self._preview_time) < 1e-6
                    and abs(ff[0] - now) <= self.cfg.feedforward_timeout):
                self.stats.ff_topic += 1
                self._ff_fresh_at = now
                if self.ff_silent:
                    self.ff_silent = False
                    events.append(f"feedforward topic back: using {self.cfg.feedforward_topic} again")
                return self._ff[1]
            if self._ff_fresh_at is None:
                self._ff_fresh_at = now
            if not self.ff_silent and now - self._ff_fresh_at > self.FEEDFORWARD_SILENT_AFTER:
                self.ff_silent = True
                events.append(f"feedforward topic {self.cfg.feedforward_topic} silent for "
                              f"{now - self._ff_fresh_at:.1f} s (feedforward_timeout "
                              f"{self.cfg.feedforward_timeout:g} s): using the in-process model instead")
        self.stats.ff_model += 1
        return self.model_feedforward(sp)

    def model_feedforward(self, sp: Setpoint) -> np.ndarray:
        """The feedforward effort (N m; N on a linear robot) of the setpoint ``sp`` from the in-process model:
        inverse dynamics at its Cartesian state (Asadi & Heydari eq. 39; Colombo & Lentini eq. 14), or
        ``ff_function`` where one is set."""
        if self.ff_function is not None:
            return self.ff_function(sp)
        m, key = self._payload_model(), (*sp.q.tolist(), *sp.qd.tolist(), *sp.qdd.tolist())
        last_m, last_key, effort = self._ff_last
        if m is not last_m or key != last_key:         # holding still repeats the last setpoint
            effort = np.array(inverse_dynamics_sample(m, key[:3], key[3:6], key[6:]))
            self._ff_last = (m, key, effort)
        return effort.copy()

    def _payload_model(self):
        """The in-process feedforward's model: ``ff_model``, carrying the payload the monitor read
        over the last motion when ``payload_feedforward`` is on (and monitoring; the observer keeps
        ``ff_model``, so what it reads stays the whole payload the model lacks). Rebuilt only when
        that estimate changes (once per motion)."""
        kg = self.monitor.motion_payload[0] if (self.cfg.payload_feedforward and self.monitoring) else 0.0
        if not math.isfinite(kg):
            kg = 0.0
        base, last_kg, model = self._ff_payload
        if base is not self.ff_model or kg != last_kg:
            try:
                model = model_with_payload(self.ff_model, kg)
            except ValueError:                       # an estimate that would leave no platform mass: not used
                model, kg = self.ff_model, 0.0
            self._ff_payload = (self.ff_model, kg, model)
        return model

    @property
    def payload_in_feedforward(self) -> float:
        """kg the in-process feedforward carries beyond ``ff_model`` (``payload_feedforward``)."""
        return self._ff_payload[1]

    def _check_limits(self, q, qd) -> str:
        m = self.cfg.position_margin
        lo, hi, v_max = self.limits()
        for i in range(3):
            name = self.model.joint_names[i]
            if q[i] < lo[i] - m or q[i] > hi[i] + m:
                return f"{name} at {q[i]:.4f} {self.units['position']} is outside its limits [{lo[i]:g}, {hi[i]:g}]"
            if abs(qd[i]) > self.cfg.velocity_margin * v_max[i]:
                return (f"{name} moves at {qd[i]:.3f} {self.units['velocity']}, above "
                        f"{self.cfg.velocity_margin:g} x its limit {v_max[i]:g}")
        return ""

