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
  s kg`` (its standard deviation).

The run-time parameter ``plant_payload_mass`` goes through :mod:`delta_hardware.ros.requests`
to the same loop request (``plant``).
"""
from __future__ import annotations

import math

from geometry_msgs.msg import InertiaStamped, WrenchStamped
from rclpy.qos import QoSProfile

from delta_hardware.drives import DriveError
from delta_hardware.loop_link import FLAG_ACTIVATED, FLAG_SETPOINT
from delta_hardware.ros.messages import to_time

#: Hz of the loop's time at which ~/external_wrench is published (every cycle below it)
WRENCH_RATE = 100.0


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
        self._sent = None                 # loop time of the last wrench published
        self.published = 0

    def on_record(self, rec) -> None:
        """One cycle record (the broadcaster's thread): publish its platform force if due."""
        flags = int(rec["flags"])
        if flags & FLAG_ACTIVATED:
            return
        moving = bool(flags & FLAG_SETPOINT) and bool(abs(rec["setpoint"][1]).max() > 0.0)
        if self._moving and not moving:
            self._publish_payload(rec)
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
            return
        msg = InertiaStamped()
        msg.header.stamp = to_time(float(rec["time"]))
        msg.header.frame_id = self.node.prefix + "platform_link"
        msg.inertia.m = mass
        self.pub_payload.publish(msg)
        self.node.event(f"payload after the motion: {mass:.3f} ± {std:.3f} kg")

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
        self.node.destroy_subscription(self.sub)
