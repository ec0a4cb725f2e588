"""Trajectory messages in, validated plans out, on a worker thread of their own.

The trajectory topics are subscribed *raw* (the serialized CDR bytes): taking a message is a
copy, and nothing is deserialized on the node's executor. A bounded queue hands the bytes to
a worker thread that checks the size, deserializes with ``rosbags`` (pure Python: the GIL goes
back to the control loop and the executor every few hundred microseconds, where rclpy's C
conversion of a 100 000-point trajectory holds it for ~0.8 s), converts the points to
arrays, builds and validates the plan (time linear in the points) and submits it. The
emergency stop, the reset and the watchdog therefore stay served while a large trajectory
is checked.
"""
from __future__ import annotations

import math
import queue
import struct
import threading

import numpy as np
from rosbags.typesys import Stores, get_typestore

from delta_hardware.trajectory_plan import TrajectoryRejected, cartesian_to_joint, match_joint_names

_TYPES = get_typestore(Stores.ROS2_JAZZY)
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
MULTI_DOF_TRAJECTORY = "trajectory_msgs/msg/MultiDOFJointTrajectory"
#: bytes per point a serialized JointTrajectory point may take (3 joints, positions,
#: velocities, accelerations, effort, time) with room to spare: the size check before parsing
BYTES_PER_POINT = 400
#: The one multi-DOF joint of a Delta robot (its platform; translation only), as named in
#: MultiDOFJointTrajectory.joint_names (with the robot's prefix).
MULTI_DOF_JOINT = "platform"
#: rad: the largest rotation a transform may give the platform (which keeps its orientation)
ROTATION_TOLERANCE = 1e-6


def deserialize(raw: bytes, typename: str):
    """A rosbags message object from the serialized CDR bytes of a subscription.

    The buffers rclpy hands over may carry trailing padding, which rosbags' own size check
    refuses: the message's deserializer is called directly and the rest ignored."""
    raw = bytes(raw)
    if len(raw) < 4 or raw[:2] not in (b"\x00\x00", b"\x00\x01"):
        raise TrajectoryRejected("not a CDR-encoded message")
    msgdef = _TYPES.get_msgdef(typename)
    func = msgdef.deserialize_cdr_le if raw[1] else msgdef.deserialize_cdr_be
    try:
        msg, pos = func(raw[4:], 0, msgdef.cls, _TYPES)
    except Exception as e:                       # struct.error, UnicodeDecodeError, IndexError, ...
        raise TrajectoryRejected(f"malformed {typename.split('/')[-1]} message: {e}") from None
    if pos + 4 > len(raw):
        raise TrajectoryRejected(f"truncated {typename.split('/')[-1]} message")
    return msg


def point_count(raw: bytes) -> int | None:
    """The length of the ``points`` sequence of a serialized JointTrajectory or
    MultiDOFJointTrajectory (both start with a Header and ``string[] joint_names``), read
    from the CDR bytes without deserialising the points; None if the bytes do not parse.

    >>> from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    >>> from rclpy.serialization import serialize_message
    >>> m = JointTrajectory(joint_names=["a", "bc"], points=[JointTrajectoryPoint()] * 7)
    >>> m.header.frame_id = "base"
    >>> point_count(serialize_message(m))
    7
    """
    raw = memoryview(bytes(raw[:65536]) if len(raw) > 65536 else bytes(raw))
    if len(raw) < 4 or bytes(raw[:2]) not in (b"\x00\x00", b"\x00\x01"):
        return None
    order = "<" if raw[1] else ">"
    body = raw[4:]
    pos = 8                                          # stamp: sec, nanosec

    def u32(at):
        at = (at + 3) & ~3                           # CDR aligns 4-byte values to 4
        if at + 4 > len(body):
            raise IndexError
        return struct.unpack_from(order + "I", body, at)[0], at + 4

    try:
        n, pos = u32(pos)                            # header.frame_id
        pos += n
        count, pos = u32(pos)                        # joint_names
        for _ in range(count):
            n, pos = u32(pos)
            pos += n
        points, _ = u32(pos)
    except (IndexError, struct.error):
        return None
    return int(points)


def _seconds(d) -> float:
    return d.sec + d.nanosec * 1e-9


def _column(values, order, what, names):
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return None
    if v.shape != (len(names),):
        raise TrajectoryRejected(f"{what} has {v.size} values for {len(names)} joint names")
    return v[order]


def _unprefixed(prefix, names):
    if not prefix:
        return list(names)
    bad = [n for n in names if not n.startswith(prefix)]
    if bad:
        raise TrajectoryRejected(f"joint names {bad} lack this robot's prefix {prefix!r}")
    return [n[len(prefix):] for n in names]


def joint_points(model, msg, prefix: str = ""):
    """(q, qd, qdd, times, start) in joint space from a JointTrajectory (arm or platform
    joints, each name with the robot's joint name ``prefix``; any object with the message's
    fields: rclpy's or rosbags')."""
    kind, order = match_joint_names(model, _unprefixed(prefix, msg.joint_names))
    if not len(msg.points):
        raise TrajectoryRejected("trajectory has no points")
    names = list(msg.joint_names)
    rows = {"positions": [], "velocities": [], "accelerations": []}
    times = np.empty(len(msg.points))
    for k, p in enumerate(msg.points):
        for field, out in rows.items():
            out.append(_column(getattr(p, field), order, f"point {k}: {field}", names))
        effort = _column(p.effort, order, f"point {k}: effort", names)      # checked, not used:
        if effort is not None and not np.isfinite(effort).all():          # the model gives the efforts
            raise TrajectoryRejected(f"point {k}: effort must be finite numbers, got {list(p.effort)}")
        times[k] = _seconds(p.time_from_start)
    if any(r is None for r in rows["positions"]):
        k = next(k for k, r in enumerate(rows["positions"]) if r is None)
        raise TrajectoryRejected(f"point {k}: every point needs positions")
    arrays = []
    for field in ("velocities", "accelerations"):
        present = [r is not None for r in rows[field]]
        if any(present) and not all(present):
            raise TrajectoryRejected(f"{field} must be given for every point or for none")
        arrays.append(np.array(rows[field]) if all(present) else None)
    qd, qdd = arrays
    if qd is None and qdd is not None:
        raise TrajectoryRejected("accelerations need velocities")
    q = np.array(rows["positions"])
    if kind == "platform":
        q, qd, qdd = cartesian_to_joint(model, q, qd, qdd)
    return q, qd, qdd, times, _seconds(msg.header.stamp)


def _check_rotation(k: int, r) -> None:
    """A transform's rotation must be the identity: a Delta robot's platform keeps its
    orientation (a rotation that is not finite, not a unit quaternion or turns it: refused)."""
    quat = (r.x, r.y, r.z, r.w)
    if not all(math.isfinite(c) for c in quat):
        raise TrajectoryRejected(f"point {k}: transforms[0].rotation must be finite, got "
                                 f"[x, y, z, w] = {list(quat)}")
    norm = math.sqrt(sum(c * c for c in quat))
    if abs(norm - 1.0) > 1e-6:
        raise TrajectoryRejected(f"point {k}: transforms[0].rotation must be a unit quaternion, got "
                                 f"[x, y, z, w] = {list(quat)} (norm {norm:.6g}; the identity is w = 1)")
    angle = 2.0 * math.atan2(math.sqrt(r.x * r.x + r.y * r.y + r.z * r.z), abs(r.w))
    if angle > ROTATION_TOLERANCE:
        raise TrajectoryRejected(f"point {k}: transforms[0].rotation turns the platform by "
                                 f"{math.degrees(angle):.4g} deg: the platform of a Delta robot keeps its "
                                 f"orientation (give the identity rotation, w = 1)")


def _linear(k: int, what: str, twist) -> tuple:
    """The linear part of a twist (velocity or acceleration); its angular part must be zero."""
    w = (twist.angular.x, twist.angular.y, twist.angular.z)
    if not all(math.isfinite(c) for c in w):
        raise TrajectoryRejected(f"point {k}: {what}[0].angular must be finite, got {list(w)}")
    if any(w):
        raise TrajectoryRejected(f"point {k}: {what}[0].angular must be zero (the platform keeps its "
                                 f"orientation), got {list(w)}")
    v = twist.linear
    return v.x, v.y, v.z


def cartesian_points(model, msg, prefix: str = ""):
    """(q, qd, qdd, times, start) from a MultiDOFJointTrajectory of platform positions.

    ``joint_names`` must be ``[prefix + "platform"]`` (the one multi-DOF joint), each point
    one transform (the platform position; its rotation the identity) and at most one
    velocity and one acceleration (angular parts zero)."""
    names = list(msg.joint_names)
    want = prefix + MULTI_DOF_JOINT
    if names != [want]:
        raise TrajectoryRejected(f"joint_names must be [{want!r}] (the platform: the one multi-DOF joint of "
                                 f"a Delta robot{', with this robot prefix' if prefix else ''}), got {names}")
    if not len(msg.points):
        raise TrajectoryRejected("trajectory has no points")
    X, V, A = [], [], []
    times = np.empty(len(msg.points))
    for k, p in enumerate(msg.points):
        if not len(p.transforms):
            raise TrajectoryRejected(f"point {k}: no transform (platform position)")
        for what, items in (("transforms", p.transforms), ("velocities", p.velocities),
                            ("accelerations", p.accelerations)):
            if len(items) > 1:
                raise TrajectoryRejected(f"point {k}: {len(items)} {what} for 1 joint name ({want})")
        _check_rotation(k, p.transforms[0].rotation)
        t = p.transforms[0].translation
        X.append((t.x, t.y, t.z))
        if len(p.velocities):
            V.append(_linear(k, "velocities", p.velocities[0]))
        if len(p.accelerations):
            A.append(_linear(k, "accelerations", p.accelerations[0]))
        times[k] = _seconds(p.time_from_start)
    for what, rows in (("velocities", V), ("accelerations", A)):
        if rows and len(rows) != len(X):
            raise TrajectoryRejected(f"{what} must be given for every point or for none")
    q, qd, qdd = cartesian_to_joint(model, X, V or None, A or None)
    return q, qd, qdd, times, _seconds(msg.header.stamp)


def check_duration(times, start: float, now: float, max_duration: float) -> None:
    """Refuse a trajectory that ends more than ``max_duration`` s from ``now``: its last
    ``time_from_start`` plus, for a ``header.stamp`` (``start``) in the future, the wait until
    it starts (a stamp a day ahead is a day-long trajectory, whatever its points say)."""
    times = np.asarray(times, dtype=float)
    if not len(times) or not np.isfinite(times).all():
        return                                            # build_plan says why
    wait = start - now if start and start > now else 0.0
    end = wait + float(times.max())
    if end > max_duration:
        lasts = f"lasts {times.max():.6g} s" if not wait else (
            f"starts {wait:.6g} s from now (header.stamp) and lasts {times.max():.6g} s: ends {end:.6g} s from now")
        raise TrajectoryRejected(f"{lasts}, longer than max_trajectory_duration {max_duration:g} s")


class TrajectoryIntake:
    """A worker thread that turns raw trajectory messages into submitted plans.

    ``submit(source, q, qd, qdd, times, start)`` (the node's) builds, validates and submits a
    plan; ``reject(source, reason)`` reports a refusal. ``limits()`` gives the current
    (max_points, max_duration); ``prefix`` is the robot's joint name prefix; ``now()`` the
    node's time (a future ``header.stamp`` counts toward max_duration); ``void(rx)`` why a message
received at ``rx`` is void ('' if not: e.g. received before a stop). Messages wait in a
    queue of ``depth``; when it is full the oldest waiting one is dropped and reported (the
    newest command wins, as on the topic).
    """

    KINDS = {"joint trajectory": (JOINT_TRAJECTORY, joint_points),
             "cartesian trajectory": (MULTI_DOF_TRAJECTORY, cartesian_points)}

    def __init__(self, model_of, submit, reject, limits, depth: int = 4, prefix: str = "", void=None, now=None):
        self.model_of = model_of
        self.void = void                 # void(rx) -> why a message received at rx is void ('' if not)
        self.now = now                   # the node's time (s), for a header.stamp in the future
        self.prefix = prefix
        self.submit = submit
        self.reject = reject
        self.limits = limits
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="delta_trajectory_intake", daemon=True)
        self._thread.start()

    def put(self, source: str, raw: bytes, rx: int | None = None) -> None:
        """Queue a raw message (called on the executor: a copy and a queue put, nothing more);
        ``rx``: when it was received (``time.time_ns()``), handed to ``submit``."""
        while True:
            try:
                self._queue.put_nowait((source, raw, rx))
                return
            except queue.Full:
                try:
                    old, _, _ = self._queue.get_nowait()
                    self.reject(old, "dropped: newer trajectories arrived while it waited to be checked")
                except queue.Empty:
                    pass

    def close(self, timeout: float = 2.0) -> None:
        """End the intake thread after the messages queued before, waiting up to ``timeout`` s."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            source, raw, rx = item
            try:
                why = self.void(rx) if self.void is not None and rx is not None else ""
                if why:                  # e.g. received before a stop: not even parsed
                    raise TrajectoryRejected(why)
                self._handle(source, raw, rx)
            except TrajectoryRejected as e:
                self.reject(source, str(e))
            except Exception as e:  # noqa: BLE001 - a bad message never kills the intake
                self.reject(source, f"{type(e).__name__}: {e}")

    def _handle(self, source, raw, rx=None):
        typename, convert = self.KINDS[source]
        max_points, max_duration = self.limits()
        if len(raw) > BYTES_PER_POINT * max_points + 65536:
            raise TrajectoryRejected(f"message of {len(raw) / 1e6:.1f} MB is larger than "
                                     f"max_trajectory_points {max_points} points can take")
        n = point_count(raw)
        if n is not None and n > max_points:           # before the (slow) full deserialisation
            raise TrajectoryRejected(f"{n} points, more than max_trajectory_points {max_points}")
        msg = deserialize(raw, typename)
        if len(msg.points) > max_points:
            raise TrajectoryRejected(f"{len(msg.points)} points, more than max_trajectory_points {max_points}")
        model = self.model_of()
        q, qd, qdd, times, start = convert(model, msg, self.prefix)
        check_duration(times, start, self.now() if self.now is not None else start, max_duration)
        self.submit(source, start, times, q, qd, qdd, rx=rx)
