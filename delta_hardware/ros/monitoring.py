"""The hardware node's monitoring topics (wiring only; the maths runs in the control loop,
:mod:`delta_hardware.loop_monitor`):

* ``~/external_wrench`` (``geometry_msgs/WrenchStamped``, ``<prefix>base_link``, force only): the
  platform force the momentum observer estimates, published by the broadcaster's thread from
  the loop's cycle records (shared memory; the loop thread never publishes) at
  :data:`WRENCH_RATE` Hz of the loop's time (every cycle when the loop is slower), while the loop
  controls;
* ``~/plant/external_wrench`` (same type, subscribed): a push on the simulated robot's platform,
  its force part in ``<prefix>base_link``, applied from the loop's next cycle until the next
  message; a zero force removes it. Refused with a one-line reason on ``~/events`` for a
  non-finite force, another frame, or drives that are not the in-process simulation.

* ``~/payload`` (``geometry_msgs/InertiaStamped``, ``<prefix>platform_link``): after each motion (the
  setpoint comes to rest), the payload the loop estimates from the residual (kg, centre of mass at
  the platform centre, no inertia: a point mass), with an event ``payload after the motion: m ±
  s kg`` (its standard deviation); when it changed since the previous motion's end by more than
  ``payload_change_threshold`` (kg) and by more than 3 standard deviations of the difference, an
  event ``payload picked: +d kg ...`` (heavier) or ``payload lost: -d kg ...`` (lighter), so an
  application can check a pick without a sensor
  (:func:`~delta_dynamics.monitoring.payload.payload_event`).

* ``~/calibrate_collision`` (``std_srvs/Trigger``): watch the next motion (from the setpoint
  starting to move until its trajectory ends, the rests within it included, or a stop; a
  motion without a plan until it rests; start the motion after the answer) and set
  ``collision_threshold`` to (1 + :data:`~delta_dynamics.monitoring.collision.MARGIN_DEFAULT`)
  times each joint's residual envelope over it above the detector's stiction band and speed
  term (:func:`calibration_thresholds`), at least :data:`CALIBRATION_FLOOR`; an event says the
  thresholds. Calibrate on the motions the robot
  will make, without contact.

All of it needs the parameter ``monitoring`` true (default false: the loop does not run the
observer, the records' residual, force and payload are NaN, so nothing is published on
``~/external_wrench`` or ``~/payload``, and ``~/calibrate_collision`` is refused with the reason).

The run-time parameter ``plant_payload_mass`` goes through :mod:`delta_hardware.ros.requests`
to the same loop request (``plant``).
"""
from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import InertiaStamped, WrenchStamped
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger

from delta_dynamics.monitoring.collision import MARGIN_DEFAULT, CollisionDetector, thresholds_from_envelope
from delta_dynamics.monitoring.payload import PayloadEstimate, payload_event

from delta_hardware.drives import DriveError
from delta_hardware.loop_link import FLAG_ACTIVATED, FLAG_SETPOINT
from delta_hardware.loop_monitor import NEEDS_MONITORING
from delta_hardware.ros.messages import to_time
from delta_hardware.ros.timed_motion import PlanningModel

#: Hz of the loop's time at which ~/external_wrench is published (every cycle below it)
WRENCH_RATE = 100.0
#: the smallest threshold ~/calibrate_collision sets (N m or N): a motion the model explains to
#: the last digit must not make a detector that trips on sensor noise
CALIBRATION_FLOOR = 0.2


def calibration_thresholds(model, gain: float, seen) -> tuple:
    """``collision_threshold`` from a watched motion ``seen`` (a list of (time s, residual (3,),
    joint speeds (3,)) per cycle): (1 + MARGIN_DEFAULT) times each joint's envelope of the
    residual above what the loop's detector adds to a threshold (its stiction band and speed
    term, :meth:`~delta_dynamics.monitoring.collision.CollisionDetector.bands`, for ``model``'s
    friction and observer gain ``gain``; the robot rested before the motion), at least
    :data:`CALIBRATION_FLOOR`."""
    t = np.array([s[0] for s in seen])
    r = np.array([s[1] for s in seen])
    qd = np.array([s[2] for s in seen])
    probe = CollisionDetector.for_model(model, (1.0, 1.0, 1.0), gain)
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    band = probe.bands(qd, dt, start=probe.rested_band(qd[0])) if dt > 0 else None
    return thresholds_from_envelope(r, band, floor=CALIBRATION_FLOOR)


class Monitoring:
    """The monitoring topics of ``node`` (a :class:`~delta_hardware.ros.hardware_node.HardwareNode`, configured)."""

    def __init__(self, node):
        self.node = node
        self.frame = node.prefix + "base_link"
        self.pub = node.create_publisher(WrenchStamped, "~/external_wrench", QoSProfile(depth=10))
        self.sub = node.create_subscription(WrenchStamped, "~/plant/external_wrench", self.on_plant_wrench,
                                            QoSProfile(depth=10))
        self.pub_payload = node.create_publisher(InertiaStamped, "~/payload", QoSProfile(depth=10))
        self.period = 1.0 / WRENCH_RATE
        self._moving = False              # the setpoint of the last record moved
        self._calibration = None          # (time, residual, velocity) of the motion being watched, or None
        self._watched = None              # the plan id of the motion being watched (None: not started)
        self._model = PlanningModel(node)  # the loop's model: its friction sets the detector's band
        self.srv = node.create_service(Trigger, "~/calibrate_collision", self.on_calibrate)
        self._sent = None                 # loop time of the last wrench published
        self.published = 0
        self._payload = None              # the PayloadEstimate at the last motion's end, None when not observing

    def on_record(self, rec) -> None:
        """One cycle record (the broadcaster's thread): publish its platform force if due."""
        flags = int(rec["flags"])
        if flags & FLAG_ACTIVATED:
            return
        moving = bool(flags & FLAG_SETPOINT) and bool(abs(rec["setpoint"][1]).max() > 0.0)
        plan = int(rec["plan"])
        if self._moving and not moving:
            self._publish_payload(rec)
        if self._calibration is not None:
            if moving and self._watched is None:
                self._watched = plan                  # the watched motion: this plan (0: until it rests)
            watching = self._watched is not None and (moving or (plan == self._watched and plan != 0))
            if watching and np.isfinite(rec["residual"]).all():
                self._calibration.append((float(rec["time"]), rec["residual"].copy(), rec["velocity"].copy()))
            elif self._watched is not None and not watching:
                self._calibrated()
        self._moving = moving
        F = rec["external_force"]
        t = float(rec["time"])
        if not all(math.isfinite(v) for v in F):
            self._sent = None             # not observing (stopped): the next observed cycle is sent at once
            return
        if self._sent is not None and self._sent - 1e-9 < t < self._sent + self.period - 1e-9:
            return
        msg = WrenchStamped()
        msg.header.stamp = to_time(t)
        msg.header.frame_id = self.frame
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in F)
        self.pub.publish(msg)
        self._sent = t
        self.published += 1

    def _publish_payload(self, rec) -> None:
        """~/payload and its event at the end of a motion (record ``rec``), if there is an estimate."""
        mass, std = (float(v) for v in rec["payload"])
        if not math.isfinite(mass):
            self._payload = None          # not observing: the next estimate starts a new comparison
            return
        msg = InertiaStamped()
        msg.header.stamp = to_time(float(rec["time"]))
        msg.header.frame_id = self.node.prefix + "platform_link"
        msg.inertia.m = mass
        self.pub_payload.publish(msg)
        self.node.event(f"payload after the motion: {mass:.3f} ± {std:.3f} kg")
        now = PayloadEstimate(mass, std)
        if self._payload is not None:
            change = payload_event(self._payload, now, float(self.node.get_parameter("payload_change_threshold").value))
            if change is not None:
                self.node.event(f"payload {change}: {mass - self._payload.mass:+.3f} kg since the last motion "
                                f"(now {mass:.3f} ± {std:.3f} kg)")
        self._payload = now

    def on_calibrate(self, request, response):
        """``~/calibrate_collision``: watch the next motion (module docstring)."""
        if not self.node.active():
            response.success, response.message = False, "the hardware node is not active"
            return response
        if not self.node.get_parameter("monitoring").value:
            response.success, response.message = False, NEEDS_MONITORING
            return response
        self._calibration, self._watched = [], None
        response.success = True
        response.message = ("watching the next motion: collision_threshold is set from its residual envelope "
                            f"(x {1 + MARGIN_DEFAULT:g}) when it ends")
        return response

    def _calibrated(self) -> None:
        """At the end of a watched motion: set ``collision_threshold`` from its residuals, and say so."""
        seen, self._calibration, self._watched = self._calibration, None, None
        if not seen:
            if seen is not None:
                self._calibration = []            # nothing observed yet (a stop): keep watching
            return
        t = calibration_thresholds(self._model(), float(self.node.get_parameter("observer_gain").value), seen)
        result = self.node.set_parameters([Parameter("collision_threshold", value=[float(v) for v in t])])[0]
        u = self.node.units.get("effort", "")
        if result.successful:
            self.node.event(f"collision thresholds calibrated on the last motion ({len(seen)} cycles): "
                            f"[{', '.join(f'{v:.3f}' for v in t)}] {u}")
        else:
            self.node.event(f"collision calibration not applied: {result.reason}", warn=True)

    def on_plant_wrench(self, msg: WrenchStamped) -> None:
        """``~/plant/external_wrench``: push the simulated platform (module docstring)."""
        node = self.node
        f = msg.wrench.force
        F = (float(f.x), float(f.y), float(f.z))
        try:
            if msg.header.frame_id != self.frame:
                raise ValueError(f"its frame is {msg.header.frame_id!r}, not {self.frame!r}")
            if not all(math.isfinite(v) for v in F):
                raise ValueError(f"its force must be 3 finite numbers (N), got {list(F)}")
            if node.loop is None:
                raise ValueError("the hardware node is not configured")
            now = node.loop.ask("plant", force=F)["now"]
        except (ValueError, DriveError) as e:
            node.event(f"plant external wrench refused: {e}", warn=True)
            return
        if any(F):
            node.event(f"plant external wrench: the simulated platform is pushed with ({F[0]:g}, {F[1]:g}, "
                       f"{F[2]:g}) N in {self.frame} from t = {now:.3f} s")
        else:
            node.event(f"plant external wrench: removed at t = {now:.3f} s")

    def destroy(self) -> None:
        """Destroy the publisher and the subscription."""
        self.node.destroy_publisher(self.pub)
        self.node.destroy_publisher(self.pub_payload)
        self.node.destroy_service(self.srv)
        self.node.destroy_subscription(self.sub)
