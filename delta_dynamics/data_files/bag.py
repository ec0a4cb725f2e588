"""rosbag2 JointState data in blocks: a fast CDR decoder for ``sensor_msgs/msg/JointState``.

``rosbags`` decodes a message in pure Python (100-300 us for a JointState); an hour at 1 kHz
would take 6-18 minutes for that alone. Recorded JointState messages almost always have one
*layout*: the same frame id, joint names and array lengths, hence the same byte offsets. So
:func:`open_joint_states` parses the first message of each layout with a small CDR reader
(XCDR1 little endian, alignment counted from the end of the 4-byte encapsulation header),
then takes every message of that layout by its offsets, a block at a time with numpy
(~1 us per message). Big-endian messages go through ``rosbags``' own decoder.

JointState's CDR body: ``header.stamp`` (int32 sec, uint32 nanosec), ``header.frame_id``
(uint32 length incl. NUL, bytes), ``name`` (uint32 count; each a string), then ``position``,
``velocity``, ``effort`` (uint32 count, 8-aligned float64s).

A bag is a directory (``metadata.yaml``) or a single ``.db3`` / ``.mcap`` file (:func:`is_bag`),
read with ``rosbags`` (no ROS install needed): :func:`read_bag` reads one topic's messages into
:class:`~.joint_data.JointData` (joints matched by the robot file's ``joint_names``, order free,
extra joints ignored; time from the header stamp or the bag's receive time; effort the arm
torque or carriage force, or the motor current times ``torque_factor``). :func:`write_bag`
writes one (tests, synthetic data sets). Every problem raises :class:`BagError`.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from delta_core.paths import PathError, check_bag_files, why_missing

from delta_dynamics.limits import MAX_SAMPLES

from .csv_io import DataFileError
from .joint_data import JointData

JOINT_STATE = "sensor_msgs/msg/JointState"
BLOCK = 65536
BAG_SUFFIXES = (".db3", ".mcap")


class BagError(DataFileError):
    """A bag that cannot be used (missing, unreadable, no such topic, bad messages); the
    message names the bag, the topic and the message."""


def typestore():
    """The rosbags type store of ROS 2 Jazzy (the messages' definitions and hashes)."""
    # rosbags: loaded for bags only
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_JAZZY)


def one_line(e: Exception, limit: int = 300) -> str:
    """The message of ``e`` on one line, cut to ``limit`` characters (for error messages)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[:limit] + "..."


def short(value, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters, saying how long it was (for error messages)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class _Layout:
    """Byte offsets of one JointState layout (see the module docstring)."""

    __slots__ = ("names", "pos", "vel", "eff", "npos", "nvel", "neff", "key_end", "vel_count", "eff_count", "idx")

    def __init__(self, raw: bytes):
        if len(raw) < 16 or raw[1] != 1:
            raise ValueError("not little-endian CDR")
        u32 = struct.Struct("<I").unpack_from

        def align(o, a):
            return o + (-(o - 4)) % a

        o = 12
        (n,) = u32(raw, o)
        o += 4 + n
        o = align(o, 4)
        (count,) = u32(raw, o)
        o += 4
        if count > len(raw):
            raise ValueError(f"{count} names in a {len(raw)}-byte message")
        names = []
        for _ in range(count):
            o = align(o, 4)
            (n,) = u32(raw, o)
            o += 4
            if n < 1 or o + n > len(raw):
                raise ValueError("a name runs past the end of the message")
            names.append(raw[o:o + n - 1].decode("utf-8"))
            o += n
        arrays = []
        for _ in range(3):
            o = align(o, 4)
            count_at = o
            (n,) = u32(raw, o)
            o += 4
            if n:
                o = align(o, 8)
            arrays.append((count_at, o, n))
            o += 8 * n
            if o > len(raw):
                raise ValueError("an array runs past the end of the message")
        self.names = tuple(names)
        (self.key_end, self.pos, self.npos), (self.vel_count, self.vel, self.nvel), \
            (self.eff_count, self.eff, self.neff) = arrays
        self.idx = None

    def key(self, raw: bytes):
        """What two messages of the same layout share: the length, the frame id, the joint names
        and the array counts."""
        return _key(raw, self.key_end, self.vel_count, self.eff_count)


def _key(raw, key_end, vel_count, eff_count):
    return (len(raw), raw[12:key_end + 4], raw[vel_count:vel_count + 4], raw[eff_count:eff_count + 4])


class JointStateDecoder:
    """Decode JointState messages into (stamp ns, positions, efforts) of the robot's joints.

    ``joint_names``: matched by name in each message (order free, extra joints ignored).
    Errors name the bag, the topic and the message number.
    """

    def __init__(self, path, topic, joint_names):
        self.path, self.topic, self.joint_names = path, topic, list(joint_names)
        self.layouts: dict = {}          # key -> _Layout
        self.by_end: list = []           # (key_end, vel_count, eff_count) of the layouts seen
        self.store = None

    def _fail(self, k, text):
        raise BagError(f"{self.path}: {self.topic} message {k}: {text}")

    def _check(self, layout, k):
        names = layout.names
        pos = {nm: i for i, nm in enumerate(names)}
        absent = [j for j in self.joint_names if j not in pos]
        if absent:
            self._fail(k, f"no joint {', '.join(repr(a) for a in absent)} (the message names "
                          f"{short(list(names))}; the robot file's joint_names are {self.joint_names})")
        if layout.neff == 0:
            self._fail(k, "JointState without effort (the effort array is empty; identification needs "
                          "joint torques or currents)")
        if layout.npos != len(names) or layout.neff != len(names):
            self._fail(k, f"{len(names)} names but {layout.npos} positions and {layout.neff} efforts")
        layout.idx = np.array([pos[j] for j in self.joint_names])

    def _layout_of(self, raw, k):
        for key_end, vc, ec in self.by_end:
            lay = self.layouts.get(_key(raw, key_end, vc, ec))
            if lay is not None:
                return lay
        try:
            lay = _Layout(raw)
        except (ValueError, struct.error, UnicodeDecodeError, IndexError):
            return None
        self._check(lay, k)
        if len(self.layouts) > 64:            # names that change with every message: do not hoard
            self.layouts.clear()
            self.by_end.clear()
        self.layouts[lay.key(raw)] = lay
        if (lay.key_end, lay.vel_count, lay.eff_count) not in self.by_end:
            self.by_end.append((lay.key_end, lay.vel_count, lay.eff_count))
        return lay

    def decode(self, raws, first: int):
        """(stamp ns (n,), positions (n, 3), efforts (n, 3)) of the messages ``raws``
        (``first``: the number of the first one, for messages)."""
        n = len(raws)
        stamp = np.empty(n, np.int64)
        q = np.empty((n, 3))
        e = np.empty((n, 3))
        groups: dict = {}
        for i, raw in enumerate(raws):
            lay = self._layout_of(raw, first + i)
            if lay is None:
                stamp[i], q[i], e[i] = self._slow(raw, first + i)
            else:
                groups.setdefault(id(lay), (lay, [], []))
                g = groups[id(lay)]
                g[1].append(i)
                g[2].append(raw)
        for lay, rows, blobs in groups.values():
            rows = np.asarray(rows)
            buf = np.frombuffer(b"".join(blobs), np.uint8).reshape(len(blobs), -1)
            sec = buf[:, 4:8].copy().view("<i4")[:, 0].astype(np.int64)
            nsec = buf[:, 8:12].copy().view("<u4")[:, 0].astype(np.int64)
            stamp[rows] = sec * 1_000_000_000 + nsec
            pos = buf[:, lay.pos:lay.pos + 8 * lay.npos].copy().view("<f8")
            eff = buf[:, lay.eff:lay.eff + 8 * lay.neff].copy().view("<f8")
            q[rows] = pos[:, lay.idx]
            e[rows] = eff[:, lay.idx]
        return stamp, q, e

    def _slow(self, raw, k):
        """One message through rosbags' decoder (big-endian or malformed CDR)."""
        if self.store is None:
            self.store = typestore()
        try:
            msg = self.store.deserialize_cdr(raw, JOINT_STATE)
        except Exception as ex:  # noqa: BLE001 - rosbags raises several types
            self._fail(k, f"cannot decode: {one_line(ex)}")
        names = tuple(msg.name)
        pos = {nm: i for i, nm in enumerate(names)}
        absent = [j for j in self.joint_names if j not in pos]
        if absent:
            self._fail(k, f"no joint {', '.join(repr(a) for a in absent)} (the message names "
                          f"{short(list(names))}; the robot file's joint_names are {self.joint_names})")
        p, ef = msg.position, msg.effort
        if len(ef) == 0:
            self._fail(k, "JointState without effort (the effort array is empty; identification needs "
                          "joint torques or currents)")
        if len(p) != len(names) or len(ef) != len(names):
            self._fail(k, f"{len(names)} names but {len(p)} positions and {len(ef)} efforts")
        idx = [pos[j] for j in self.joint_names]
        hs = msg.header.stamp
        return int(hs.sec) * 1_000_000_000 + int(hs.nanosec), np.asarray(p)[idx], np.asarray(ef)[idx]


class JointStateBag:
    """An open bag's JointState topic, read a block at a time (see :func:`open_joint_states`).

    ``count``: the messages the bag's index announces (0 if it does not know).
    """

    def __init__(self, path, topic, joint_names):
        # rosbags: loaded for bags only
        from rosbags.rosbag2 import Reader
        self.path, self.topic = Path(path), topic
        try:
            check_bag_files(self.path)     # a FIFO or a device among its files: refused, no open blocks
            self.reader = Reader(self.path)
            self.reader.open()
        except PathError as e:
            raise BagError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - rosbags raises several types for unreadable bags
            raise BagError(f"{self.path}: not a readable rosbag2 bag: {one_line(e)}") from None
        try:
            conns = [c for c in self.reader.connections if c.topic == topic]
            if not conns:
                have = sorted({f"{c.topic} ({c.msgtype})" for c in self.reader.connections})
                raise BagError(f"{self.path}: no topic {topic} in the bag (topics: "
                                          f"{', '.join(have) if have else 'none'}); choose one with --topic")
            wrong = sorted({c.msgtype for c in conns if c.msgtype != JOINT_STATE})
            if wrong:
                raise BagError(f"{self.path}: topic {topic} carries {', '.join(wrong)}, not {JOINT_STATE}")
        except BaseException:
            self.reader.close()
            raise
        self.conns = conns
        self.count = max(sum(c.msgcount for c in conns), 0)
        self.decoder = JointStateDecoder(self.path, topic, joint_names)

    def blocks(self, block: int = BLOCK, max_messages: int | None = None, limit_text: str = ""):
        """Yield (stamp ns, receive ns, positions, efforts) of up to ``block`` messages at a time.
        More than ``max_messages`` messages is an BagError ending in ``limit_text``."""
        raws, rxs, k = [], [], 0
        try:
            for _conn, rx, raw in self.reader.messages(connections=self.conns):
                if max_messages is not None and k + len(raws) >= max_messages:
                    raise BagError(f"{self.path}: topic {self.topic} has more than {max_messages} "
                                              f"messages{limit_text}")
                raws.append(raw)
                rxs.append(rx)
                if len(raws) == block:
                    yield (*self._decode(raws, rxs, k),)
                    k += len(raws)
                    raws, rxs = [], []
            if raws:
                yield (*self._decode(raws, rxs, k),)
        except BagError:
            raise
        except Exception as e:  # noqa: BLE001 - a corrupt or truncated bag fails while it is read
            raise BagError(f"{self.path}: not a readable rosbag2 bag: reading topic {self.topic} "
                                      f"failed: {one_line(e)}") from None

    def _decode(self, raws, rxs, k):
        stamp, q, e = self.decoder.decode(raws, k)
        return stamp, np.asarray(rxs, np.int64), q, e

    def close(self):
        """Close the bag."""
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_joint_states(path, topic, joint_names) -> JointStateBag:
    """The JointState messages of ``topic`` in the bag at ``path`` (a directory, .db3 or .mcap)."""
    path = Path(path)
    if not path.exists():
        raise BagError(why_missing(path, "a bag"))
    return JointStateBag(path, topic, joint_names)


def joint_state_cdr(stamps_ns, names, position, effort, velocity=None) -> list:
    """CDR (little endian) of JointState messages with fixed ``names`` (the inverse of
    :class:`JointStateDecoder`'s fast path), built with numpy: (n,) stamps in ns, (n, J) arrays.

    >>> raw = joint_state_cdr([1_500_000_000], ["a", "b", "c"], [[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]])
    >>> t, q, e = JointStateDecoder("x", "/js", ["c", "a", "b"]).decode(raw, 0)
    >>> int(t[0]), q.tolist(), e.tolist()
    (1500000000, [[3.0, 1.0, 2.0]], [[6.0, 4.0, 5.0]])
    """
    stamps_ns = np.asarray(stamps_ns, np.int64)
    n, J = len(stamps_ns), len(names)
    position = np.asarray(position, float).reshape(n, J)
    effort = np.asarray(effort, float).reshape(n, J)
    velocity = np.zeros((n, 0)) if velocity is None else np.asarray(velocity, float).reshape(n, J)

    def align(b, a):
        return b + b"\0" * ((-(len(b) - 4)) % a)

    head = bytearray(b"\x00\x01\x00\x00" + b"\0" * 8)       # encapsulation, stamp (filled below)
    head += struct.pack("<I", 1) + b"\0"                      # frame_id ""
    head = align(bytes(head), 4) + struct.pack("<I", J)
    for nm in names:
        s = nm.encode() + b"\0"
        head = align(head, 4) + struct.pack("<I", len(s)) + s
    offsets = []
    body = head
    for arr in (position, velocity, effort):
        body = align(body, 4) + struct.pack("<I", arr.shape[1])
        if arr.shape[1]:
            body = align(body, 8)
        offsets.append(len(body))
        body += b"\0" * (8 * arr.shape[1])
    L = len(body)
    buf = np.tile(np.frombuffer(body, np.uint8), (n, 1))
    buf[:, 4:8] = (stamps_ns // 1_000_000_000).astype("<i4").view(np.uint8).reshape(n, 4)
    buf[:, 8:12] = (stamps_ns % 1_000_000_000).astype("<u4").view(np.uint8).reshape(n, 4)
    for off, arr in zip(offsets, (position, velocity, effort)):
        if arr.shape[1]:
            buf[:, off:off + 8 * arr.shape[1]] = np.ascontiguousarray(arr, "<f8").view(np.uint8).reshape(n, -1)
    return [bytes(row) for row in buf.reshape(n, L)]


# ----------------------------------------------------------------------------- whole bags

def is_bag(path) -> bool:
    """True for a rosbag2 directory or a .db3 / .mcap file."""
    p = Path(path)
    return p.suffix in BAG_SUFFIXES or (p.is_dir() and os.path.lexists(p / "metadata.yaml"))


def read_bag(path, joint_names, topic: str = "/joint_states", effort: str = "torque",
             torque_factor: float = 1.0, stamp: str = "header", progress=None) -> JointData:
    """Read ``sensor_msgs/msg/JointState`` messages on ``topic`` from a rosbag2 bag.

    ``joint_names``: the robot file's three names (matched by name in each message).
    ``effort``: ``"torque"`` (N m at the arm) or ``"current"`` (A; multiplied by
    ``torque_factor`` = torque_constant * gear_ratio). ``stamp``: ``"header"`` (the message's
    header stamp; the bag's receive time where the stamp is zero) or ``"receive"``.
    Messages are decoded a block at a time (:func:`open_joint_states`); ``progress(done, total)`` is called
    after each block.
    """

    path = Path(path)
    check_bag_options(effort, stamp)
    with open_joint_states(path, topic, joint_names) as bag:
        n = bag.count
        if n > MAX_SAMPLES:
            raise BagError(f"{path}: topic {topic} has {n} messages, more than the {MAX_SAMPLES} "
                                      "samples one run may use (MAX_SAMPLES in delta_dynamics/limits.py): "
                                      "split the recording (ros2 bag convert) or record shorter runs")
        parts = []
        k = 0
        for block in bag.blocks(max_messages=MAX_SAMPLES,
                                limit_text=", the most one run may use (MAX_SAMPLES in "
                                           "delta_dynamics/limits.py): split the recording"):
            parts.append(block)
            k += len(block[0])
            if progress is not None:
                progress(k, max(n, k))
    if k == 0:
        raise BagError(f"{path}: topic {topic} has no messages")
    t_ns = bag_times(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), stamp)
    q = np.concatenate([p[2] for p in parts])
    tau = np.concatenate([p[3] for p in parts])
    parts.clear()
    t = (t_ns - t_ns[0]).astype(float) * 1e-9
    if effort == "current":
        tau = tau * float(torque_factor)
    data = JointData(t=t, q=q, tau=tau, source=f"{path} {topic}", unit=f"{topic} message", first=0)
    data.notes.append(bag_note(k, path, topic, effort, torque_factor, stamp))
    return data


def check_bag_options(effort, stamp):
    """Raise :class:`BagError` unless ``effort`` is ``"torque"`` or ``"current"`` and
    ``stamp`` is ``"header"`` or ``"receive"`` (the bag readers' options)."""
    if effort not in ("torque", "current"):
        raise BagError(f"effort must be 'torque' or 'current', got {effort!r}")
    if stamp not in ("header", "receive"):
        raise BagError(f"stamp must be 'header' or 'receive', got {stamp!r}")


def bag_times(header_ns, receive_ns, stamp: str) -> np.ndarray:
    """The time base of bag messages (ns): the header stamps, the receive time where a stamp
    is zero (``stamp="header"``), or the receive times (``"receive"``)."""
    if stamp == "receive":
        return receive_ns
    return np.where(header_ns != 0, header_ns, receive_ns)


def bag_note(k, path, topic, effort, torque_factor, stamp) -> str:
    """The note saying what was read from a bag: ``k`` messages of ``topic``, the effort's
    meaning (``torque_factor`` N m/A for currents) and the time base."""
    return (f"read {k} JointState messages from {path} topic {topic} "
            f"(effort as {effort}{'' if effort == 'torque' else f' x {torque_factor:g} N m/A'}, "
            f"time from the {'header stamp' if stamp == 'header' else 'bag receive time'})")


def write_bag(path, t, q, effort, joint_names, topic: str = "/joint_states",
              storage: str = "sqlite3", velocity=None, extra_joints: int = 0, t0_ns: int = 1_700_000_000_000_000_000):
    """Write a rosbag2 bag of JointState messages (for tests and synthetic data sets).

    ``storage``: ``"sqlite3"`` or ``"mcap"``. ``extra_joints`` adds that many unrelated joints
    in front of the robot's (to check matching by name). Stamps: ``t0_ns`` + t.
    """
    # rosbags: loaded for bags only
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    JointState = store.types[JOINT_STATE]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    names = [f"extra_joint_{i}" for i in range(extra_joints)] + list(joint_names)
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conn = w.add_connection(topic, JOINT_STATE, typestore=store)
        for k in range(len(t)):
            ns = int(t0_ns + round(float(t[k]) * 1e9))
            pad = np.zeros(extra_joints)
            pos = np.concatenate((pad, q[k]))
            eff = np.concatenate((pad, effort[k])) if effort is not None else np.zeros(0)
            vel = np.concatenate((pad, velocity[k])) if velocity is not None else np.zeros(0)
            msg = JointState(header=Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000),
                                           frame_id=""),
                             name=names, position=pos, velocity=vel, effort=eff)
            w.write(conn, ns, store.serialize_cdr(msg, JOINT_STATE))
    return Path(path)
