"""Monitoring inside the control loop, without ROS: the momentum observer and the collision
detection of :mod:`delta_dynamics.monitoring` run once per cycle on the loop's feedforward
model (the identified one when ``feedforward_robot`` is set), ``docs/monitoring.md``.

Each cycle that controls, :meth:`LoopMonitor.update` takes the measured joint state and the
effort the drives applied over the interval just passed (their reported effort: what was held
since the previous cycle) and gives the residual r (N m per arm, N per carriage) and the
platform force F = J^T r (N, ``base_link``). A cycle that does not control (a stop, disabled
drives, an exchange held back) restarts the observer at the next one (its residual from zero):
across a stop the brakes, not the model, moved the joints.

The payload (kg, with its standard deviation: :attr:`LoopMonitor.payload`) is estimated every
cycle from the same residual (:class:`~delta_dynamics.monitoring.payload.PayloadEstimator`);
it is what the model's platform mass lacks, NaN before the first cycle. During a motion (the
setpoint moving) and after it, it is the least-squares fit of that whole motion, without
forgetting and without the rest before it (:data:`MOTION_MIN` s of motion at least: the batch
``estimate_record`` of the motion, sample by sample; at rest a joint's static friction is
anything within its break-away effort, which the model cannot know and which would bias the
fit); before the first such motion, the running estimate of about the last second.

With thresholds set (:attr:`LoopMonitor.thresholds`, all three > 0; all zero: detection off),
:meth:`LoopMonitor.update` also returns a :class:`~delta_dynamics.monitoring.collision.Collision`
when a joint's residual exceeds its threshold plus the stiction band
(:class:`~delta_dynamics.monitoring.collision.CollisionDetector`); :func:`collision_text` says it
in one line (joint, residual and threshold, force, direction, time) for the latched stop.

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.plant import ExplicitPlant
>>> from delta_dynamics.algorithms import inverse_dynamics_joint
>>> m = model_for("nt_robot")
>>> plant, mon = ExplicitPlant(m), LoopMonitor(m, gain=100.0, thresholds=(5.0, 5.0, 5.0))
>>> q, qd = plant.joint_state()
>>> tau = inverse_dynamics_joint(m, q, qd, [0.0, 0.0, 0.0])
>>> plant.set_external_force([0.0, 0.0, -200.0])
>>> hit = None
>>> for k in range(100):
...     plant.step(tau, 0.002)
...     hit = hit or mon.update(*plant.joint_state(), tau, 0.002)
>>> hit.joint, round(hit.force[2])                    # stops before the full 200 N is seen
(1, -65)
>>> collision_text(hit, m.joint_names, {"effort": "N m"}, 1.5).split(":")[0]
'collision on arm_2_joint at t = 1.500 s'
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.monitoring.collision import Collision, CollisionDetector
from delta_dynamics.monitoring.observer import GAIN_DEFAULT, MomentumObserver, check_gain
from delta_dynamics.monitoring.payload import PayloadEstimator

NAN3 = (math.nan,) * 3
#: s of motion before the payload is that motion's fit rather than the running estimate
MOTION_MIN = 0.1
#: the CPU one :meth:`LoopMonitor.update` costs (observer, detection, payload), as
#: ``bench/bench_monitoring.py --speed`` measures it on the shared 2-core host at load 3-9 (LoopMonitor.update
#: row: median 55-100 us per call; in the loop holding still, +60-90 us per cycle against 190-315 us
#: without it, +26-37 %; the one-sample path on floats, 0.4-0.55 ms before): docs/monitoring.md
CPU_PER_CYCLE = "about 0.1 ms"
#: the one-line reason collision detection is refused while monitoring is off
NEEDS_MONITORING = (f"collision detection needs monitoring: true (the momentum observer, {CPU_PER_CYCLE} of CPU "
                    f"per control cycle)")


THRESHOLD_RULE = "must be 3 finite numbers, all > 0 (N m or N, per joint) or all 0 (detection off)"


def thresholds_valid(value) -> bool:
    """Whether ``value`` obeys :data:`THRESHOLD_RULE`: three real numbers (not bool, not text),
    finite, all zero or all positive.

    >>> thresholds_valid([0, 0, 0]), thresholds_valid([2, 2.5, 2]), thresholds_valid([2, 0, 2]), thresholds_valid("222")
    (True, True, False, False)
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
        return False
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return False
    return all(v == 0 for v in value) or all(v > 0 for v in value)


def check_thresholds(value) -> tuple:
    """``value`` (3 per-joint thresholds, N m or N) as a tuple of floats when
    :func:`thresholds_valid`; ValueError naming the rule otherwise.

    >>> check_thresholds([0, 0, 0]), check_thresholds([2, 2.5, 2])
    ((0.0, 0.0, 0.0), (2.0, 2.5, 2.0))
    """
    if not thresholds_valid(value):
        raise ValueError(f"collision_threshold {THRESHOLD_RULE}, got {value!r}")
    return tuple(float(v) for v in value)


class LoopMonitor:
    """The loop's observer and collision detector on ``model`` with ``gain`` (1/s) and
    ``thresholds`` (3 efforts; all zero: no detection). The loop thread calls :meth:`update`;
    :meth:`configure` (any thread) checks the change and hands it over: the loop thread takes it
    at its next :meth:`update`."""

    def __init__(self, model, gain: float = GAIN_DEFAULT, thresholds=(0.0, 0.0, 0.0)):
        self.model = model
        self.observer = MomentumObserver(model, check_gain(gain))
        self.thresholds = check_thresholds(thresholds)
        self.detector = self._detector()
        self.state = None                  # ObserverState while observing
        self.band = None
        self.residual = NAN3               # of the last cycle (NaN: not observing)
        self.force = NAN3
        self.payload = (math.nan, math.nan)    # estimated payload and its standard deviation (kg)
        self._estimator = PayloadEstimator(model, self.observer.gain)
        self._pstate = None
        self._motion_estimator = PayloadEstimator(model, self.observer.gain, memory=math.inf)
        self._mstate = None                # the sums of the motion under way or last made (no forgetting)
        self._mtime = 0.0                  # s of that motion observed
        self._moving = False
        self.motion_payload = (math.nan, math.nan)    # the fit of the last motion that ended (kg, kg)
        self._pending = None               # (model, observer, thresholds, detector) from configure

    def _detector(self):
        if not any(self.thresholds):
            return None
        return CollisionDetector.for_model(self.model, self.thresholds, self.observer.gain)

    def _take_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self.model, self.observer, self.thresholds, self.detector = pending
            self._estimator = PayloadEstimator(self.model, self.observer.gain)
            self._motion_estimator = PayloadEstimator(self.model, self.observer.gain, memory=math.inf)
            self.state = self._pstate = self._mstate = None
            self._moving = False
            self.motion_payload = (math.nan, math.nan)

    def configure(self, model=None, gain=None, thresholds=None) -> None:
        """Change the model, the gain (1/s) or the thresholds (ValueError for a bad one, nothing
        changed); the loop thread takes the change at its next :meth:`update` and restarts the
        observer there."""
        base = self._pending or (self.model, self.observer, self.thresholds, self.detector)
        model = model if model is not None else base[0]
        observer = MomentumObserver(model, check_gain(gain) if gain is not None else base[1].gain)
        thresholds = check_thresholds(thresholds) if thresholds is not None else base[2]
        detector = (CollisionDetector.for_model(model, thresholds, observer.gain) if any(thresholds) else None)
        self._pending = (model, observer, thresholds, detector)       # one assignment: atomic

    def restart(self) -> None:
        """Forget the run: the next :meth:`update` starts the observer afresh (the payload estimate's sums,
        with their forgetting, are kept)."""
        self.state = None
        self.residual = self.force = NAN3
        self._moving = False               # a motion cut by the restart is not fitted on

    def off(self) -> None:
        """Monitoring turned off (the loop thread): forget the run and the payload estimate; every
        output NaN until the next :meth:`update` starts afresh from the state then."""
        self.restart()
        self._pstate = self._mstate = None
        self.payload = self.motion_payload = (math.nan, math.nan)

    def update(self, q, qd, tau, dt: float, moving: bool = False) -> Collision | None:
        """One cycle: the measured joint state (q, q_dot), the effort ``tau`` applied over the
        ``dt`` s since the previous cycle, whether the setpoint moved over it (``moving``: a
        motion's samples are fitted on their own). Sets :attr:`residual`, :attr:`force` and
        :attr:`payload`; the collision if a joint is over its threshold, else None."""
        if self._pending is not None:
            self._take_pending()
        st = self.state
        if st is None:
            st = self.state = self.observer.start(q, qd)
            self.band = None if self.detector is None else self.detector.start()
            r = st.r
            if self._pstate is None:                  # the payload estimate's sums survive a stop
                self._pstate = self._estimator.start(st.Xd)
            else:
                self._pstate.psi = (0.0, 0.0, 0.0)    # filtered as the residual, which restarts at 0
                self._pstate.Xd = st.Xd
        else:
            ps = self._pstate
            if moving and not self._moving:           # a motion starts: its own sums, the filter running on
                self._mstate = self._motion_estimator.start(ps.Xd)
                self._mstate.psi = ps.psi
                self._mtime = 0.0
            r = self.observer.update(st, q, qd, tau, dt)
            if moving:
                self._motion_estimator.update(self._mstate, st.X, st.Xd, r, dt, st.Jinv)
                self._mtime += dt
            self._estimator.update(ps, st.X, st.Xd, r, dt, st.Jinv)
            if self._mstate is not None and self._mtime >= MOTION_MIN:
                est = self._motion_estimator.estimate(self._mstate, dt)
                if self._moving and not moving:       # a motion ended: its payload, for the feedforward
                    self.motion_payload = (est.mass, est.std)
            else:
                est = self._estimator.estimate(ps, dt)
            self._moving = moving
            self.payload = (est.mass, est.std)
        r0, r1, r2 = self.residual = tuple(r.tolist())
        (j00, j01, j02), (j10, j11, j12), (j20, j21, j22) = st.J      # F = J^T r
        self.force = (j00 * r0 + j10 * r1 + j20 * r2, j01 * r0 + j11 * r1 + j21 * r2,
                      j02 * r0 + j12 * r1 + j22 * r2)
        if self.detector is None or st.samples == 0:
            return None
        i = self.detector.check(self.band, r, st.qd, dt)
        if i is None:
            return None
        h = self.detector.limits(self.band, st.qd)
        return Collision(st.samples, i, self.residual, tuple(h.tolist()), self.force)


def collision_text(c: Collision, joint_names, units: dict, t: float) -> str:
    """One line for the collision ``c`` at time ``t`` (s): the joint, its residual and
    threshold, the estimated platform force (N) and its direction (``base_link``).

    >>> c = Collision(3, 1, (0.1, -3.0, 0.2), (2.0, 2.0, 2.0), (0.0, 0.0, -31.0))
    >>> print(collision_text(c, ["a1", "a2", "a3"], {"effort": "N m"}, 4.25))
    collision on a2 at t = 4.250 s: residual -3.00 N m over its threshold 2.00 N m; estimated force 31.0 N at the platform, direction (0.00, 0.00, -1.00) in base_link
    """
    i, u = c.joint, units.get("effort", "")
    d = c.direction
    return (f"collision on {joint_names[i]} at t = {t:.3f} s: residual {c.residual[i]:.2f} {u} over its threshold "
            f"{c.threshold[i]:.2f} {u}; estimated force {c.magnitude:.1f} N at the platform, direction "
            f"({d[0]:.2f}, {d[1]:.2f}, {d[2]:.2f}) in base_link")
