"""The hardware node's broadcaster: what the control-loop process produced, published on ROS.

A thread of the node (never of the loop: the loop runs in its own process,
:mod:`delta_hardware.loop_process`) sleeps on the loop's doorbell, takes the new cycle records
and events from shared memory in order and publishes them at its own pace, as ros2_control's
joint_state_broadcaster publishes from the non-real-time side: ``/joint_states`` (every cycle,
reliable, a deep history so that a busy subscriber catches up: identification windows and
bags lose nothing), ``/delta/desired_state`` (``publish_desired_state``: the setpoint one period
ahead, for a feedforward source: with ``feedforward: topic``), ``/clock`` when the
loop owns simulated time (at ``clock_rate`` Hz of simulated time, as Gazebo's ``publish_rate``:
every message costs each sim-time node a callback, about 0.8 ms of rclpy's CPU; this node's
own time, and its action companion's, is set where the message is published, not received back; the time a
pause or stop holds is always sent, exactly; repeated every :data:`CLOCK_HOLD_PERIOD` s of the steady clock
while simulated time stands still, as Gazebo's paused clock does: a node that joined late or
lost a message, rclpy subscribes ``/clock`` best effort, still reads the time), the events
(logged and on ``~/events``) and the FollowJointTrajectory path check (every cycle).

Whatever stalls this thread (rclpy's ``publish`` holding the GIL while the middleware sleeps)
delays publication only; in simulated time the loop waits for it once it is a whole ring
(:attr:`LoopSpec.ring` cycles) behind, on the wall clock the oldest records are lost and counted.
"""
from __future__ import annotations

import threading
import time

from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from delta_core.ros.rclpy_adapter import feed_own_time
from delta_hardware.loop_link import FLAG_ACTIVATED, FLAG_PREVIEW
from delta_hardware.ros.messages import to_time

#: /joint_states history kept for reliable subscribers that fall behind (10 s at 500 Hz)
JOINT_STATES_DEPTH = 5000
#: s (steady clock) between repeats of /clock while simulated time stands still
CLOCK_HOLD_PERIOD = 0.1
#: s between two reports of records lost because this thread fell a ring behind
LOST_REPORT_PERIOD = 5.0


class Broadcaster:
    """Publishes the records and events of ``client`` (a :class:`~delta_hardware.loop_client.LoopClient`)
    for ``node`` (its ``event(text, warn)`` and ``action_server``) with the arm ``joint_names``."""

    def __init__(self, node, client, joint_names, owns_time: bool, publish_desired: bool, clock_rate: float = 0.0):
        self.node, self.client, self.names = node, client, list(joint_names)
        self.owns_time = owns_time
        self.desired = bool(publish_desired)         # publish the desired state now (changes at run time)
        self.pub_js = node.create_publisher(JointState, "joint_states", QoSProfile(depth=JOINT_STATES_DEPTH))
        self.pub_desired = node.create_publisher(JointTrajectory, "delta/desired_state", QoSProfile(depth=10))
        # absolute; a namespaced stack remaps it to <ns>/clock for all its nodes (clock_remap)
        self.pub_clock = node.create_publisher(ClockMsg, "/clock", QoSProfile(depth=1)) if owns_time else None
        # the node's own time is set where /clock is published, not received back over DDS
        self._feed_time = feed_own_time(node) if owns_time else None
        self.published = 0
        self.lost = 0
        self._lost_reported = 0
        self._lost_at = 0.0
        self._clock_sent = None
        self._last_t = None                          # simulated time of the newest record published
        self.clock_period = 1.0 / clock_rate if clock_rate > 0 else 0.0
        self._clock_at = time.monotonic()
        self._events = []                            # (text, level, tick) waiting for their cycle's record
        self._published_tick = 0                     # state records taken so far
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delta_broadcaster", daemon=True)

    def start(self) -> None:
        """Start the publishing thread (a simulation that owns the time first sends its ``/clock``)."""
        if self.owns_time:                       # a simulation that starts paused has a time too
            self._send_clock(self.client.now())
        self._thread.start()

    def stop(self) -> None:
        """Stop the publishing thread (waiting up to 5 s for it)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def destroy(self) -> None:
        """:meth:`stop`, then destroy the publishers."""
        self.stop()
        for pub in (self.pub_js, self.pub_desired, self.pub_clock):
            if pub is not None:
                self.node.destroy_publisher(pub)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.client.wait(CLOCK_HOLD_PERIOD)
            if self._stop.is_set():
                break
            try:
                self.flush()
            except Exception as e:  # noqa: BLE001 - the context went down under us (shutdown)
                if self.node.context.ok() and not self._stop.is_set():
                    self.node.get_logger().error(f"broadcaster: {type(e).__name__}: {e}")
                return

    def flush(self) -> None:
        """Publish everything the loop produced since the last call."""
        events, lost_events = self.client.take_events()
        self._events += events
        if lost_events:
            self.node.event(f"{lost_events} events of the control loop were lost (this node fell behind)", warn=True)
        self._send_events()
        while True:
            records, lost = self.client.take_records()
            self.lost += lost
            for rec in records:
                self._publish(rec)
                self._published_tick = int(rec["tick"]) + 1
                self._send_events()
            self._published_tick = max(self._published_tick, self.client.reader)
            if len(records) < 1000:
                break
        self._send_events()
        if self.lost > self._lost_reported and time.monotonic() - self._lost_at > LOST_REPORT_PERIOD:
            self.node.event(f"{self.lost - self._lost_reported} joint states were not published (this node fell "
                            f"more than a ring of {self.client.block.states.n} cycles behind the loop)", warn=True)
            self._lost_reported, self._lost_at = self.lost, time.monotonic()
        if self.owns_time and (self.client.paused or not self.node.active()):          # time stands still
            if self._last_t is not None and (self._clock_sent is None or self._last_t > self._clock_sent):
                self._send_clock(self._last_t)              # the time it stands at, between two clock_rate ticks
            elif time.monotonic() - self._clock_at >= CLOCK_HOLD_PERIOD:
                self._send_clock(self._clock_sent if self._clock_sent is not None else self.client.now(), again=True)

    def catch_up(self, timeout: float = 5.0) -> bool:
        """Wait until every record the loop has written is published (e.g. when simulated time
        was paused: a subscriber then sees the state the simulation stands in)."""
        deadline = time.monotonic() + timeout
        while not self._caught_up() and time.monotonic() < deadline:
            if not self._thread.is_alive():
                return False
            time.sleep(0.005)
        return self._caught_up()

    def _caught_up(self) -> bool:
        """Every record published, and (in simulated time) /clock at the newest record's time."""
        return (self._published_tick >= int(self.client.block.header["head"])
                and (not self.owns_time or self._last_t is None or self._clock_sent == self._last_t))

    def _send_events(self) -> None:
        """The events raised up to the last published record (in order with the records: an
        event says what a subscriber of /joint_states has seen happen)."""
        while self._events and self._events[0][2] <= self._published_tick:
            text, level, _ = self._events.pop(0)
            self.node.event(text, warn=level > 0, error=level > 1)

    def _send_clock(self, t: float, again: bool = False) -> None:
        if self._clock_sent is not None and (t < self._clock_sent or (t == self._clock_sent and not again)):
            return                                   # never backwards, repeated only while time stands still
        msg = ClockMsg(clock=to_time(t))
        self._feed_time(msg)
        self.pub_clock.publish(msg)
        self._clock_sent, self._clock_at = t, time.monotonic()

    def _publish(self, rec) -> None:
        if int(rec["flags"]) & FLAG_ACTIVATED:
            return                                   # not a cycle
        t = float(rec["time"])
        if self.owns_time:
            self._last_t = t
            if self._clock_sent is None or t >= self._clock_sent + self.clock_period - 1e-9:
                self._send_clock(t)
        if self.desired and int(rec["flags"]) & FLAG_PREVIEW:
            d = JointTrajectory(joint_names=self.names)
            d.header.stamp = to_time(float(rec["preview_time"]))
            pv = rec["preview"]
            d.points = [JointTrajectoryPoint(positions=pv[0].tolist(), velocities=pv[1].tolist(),
                                             accelerations=pv[2].tolist())]
            self.pub_desired.publish(d)
        js = JointState(name=self.names, position=rec["position"].tolist(), velocity=rec["velocity"].tolist(),
                        effort=rec["effort"].tolist())
        js.header.stamp = to_time(t)
        self.pub_js.publish(js)
        self.published += 1
        server = self.node.action_server
        if server is not None:
            server.on_cycle(t, rec["position"], rec["velocity"])
        monitoring = self.node.monitoring                 # ~/external_wrench (delta_hardware.ros.monitoring)
        if monitoring is not None:
            monitoring.on_record(rec)
