"""``delta-ctl record``: a rosbag2 recorder for a pip install (no ``ros2 bag``), on rclpy and ``rosbags``.

    delta-ctl record [TOPICS ...] --out DIR [--storage mcap|sqlite3] [--duration S]

Each topic (default: the stack's ``joint_states``, relative to ``--namespace``) is found on
the ROS graph (its type from the publishers), then subscribed *raw*: the CDR bytes DDS
delivers are written as they are, with the receive time (ns, system clock, from the DDS sample info), as ``ros2 bag
record`` does. The bag is rosbag2 version 9 (``metadata.yaml``, one ``.mcap`` or ``.db3``
file) with, per topic, the message definition and its type hash (RIHS01, the hash of the
type description, computed by ``rosbags``; checked against the hash the publishers announce
on the graph) and the serialization format ``cdr``, so ``ros2
bag info``, ``ros2 bag play``, ``rosbags`` and ``delta-identify`` read it (the offered QoS are left empty: a
player uses its defaults).

Stopping: SIGINT (Ctrl-C), SIGTERM or ``--duration`` set a flag; the recorder then stops
taking samples only after it has drained what DDS already holds for it: until, on every
topic, a message published after the stop arrives (its source time stamp, from the DDS
sample info; it is not recorded) or nothing arrived for 3.5 s (longer than the middleware's
heartbeat period, within which a reliable writer resends samples a reader missed; at most 30 s),
writes the bag's index and metadata and exits 0. Messages are taken
with a reliable, volatile subscription of depth 10 000 (10 s of 1 kHz joint states), so a
slow disk or a busy host delays writing without losing messages.

The subscriptions run on rclpy's executor in this process; nothing here is on a control
loop's path.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Subscription queue depth (messages held while the writer is busy).
DEPTH = 10_000
#: A topic must appear on the graph within this many seconds.
DISCOVERY_S = 10.0
#: After a stop, keep taking messages until none arrived for this long (s): longer than Fast DDS's
#: heartbeat period (3 s), after which a reliable writer resends what a reader missed at the end
#: of a burst (a reader learns of a lost *last* sample only from that heartbeat; with 0.2 s an
#: idle run's recorder closed 206 of 3000 messages early).
DRAIN_QUIET_S = 3.5
#: ... or until each topic delivered a message published after the stop, for at most this long (s)
#: (a publisher whose clock is behind ours would never show one).
DRAIN_MAX_S = 30.0


class RecordError(RuntimeError):
    """A topic not found, of an unknown type, or a bag that cannot be written (one line)."""


@dataclass
class TopicRecord:
    """One recorded topic: its name, message type and type hash (and the publishers' announced one), the
    messages written, the bag's connection, notes for the summary, and whether a message published after
    the stop has arrived."""
    topic: str
    msgtype: str
    hash: str
    count: int = 0
    connection: object = None
    publisher_hash: str = ""
    notes: list = field(default_factory=list)
    after_stop: bool = False


def _typestore_for(msgtype: str, store):
    """``store`` holding ``msgtype`` (from the Jazzy store, or the installed .msg definition)."""
    if msgtype in store.types:
        return store
    from rosbags.typesys import get_types_from_msg
    pkg, _, name = msgtype.split("/")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        path = Path(prefix) / "share" / pkg / "msg" / f"{name}.msg"
        if path.is_file():
            store.register(get_types_from_msg(path.read_text(), msgtype))
            return store
    raise RecordError(f"type {msgtype} is neither a standard ROS 2 Jazzy message nor installed "
                      f"(no share/{pkg}/msg/{name}.msg under AMENT_PREFIX_PATH): cannot write its definition")


def _message_class(msgtype: str):
    """The rclpy message class of ``pkg/msg/Name``."""
    import importlib
    pkg, kind, name = msgtype.split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise RecordError(f"type {msgtype}: its Python message package {pkg} is not installed") from None


def _hash_text(h) -> str:
    """The publishers' type hash as RIHS01_<hex> (rclpy gives a TypeHash or its str)."""
    if h is None:
        return ""
    value = getattr(h, "value", None)
    version = getattr(h, "version", 1)
    if value is not None:
        return f"RIHS{int(version):02d}_{bytes(value).hex()}"
    text = str(h)
    return text if text.startswith("RIHS") else ""


class Recorder:
    """Record ``topics`` of the ROS graph into a rosbag2 bag at ``out`` (module docstring)."""

    def __init__(self, node, executor, topics, out, storage: str = "mcap"):
        self.node, self.executor = node, executor
        self.topics = list(topics)
        self.out = Path(out)
        self.storage = storage
        self.records: dict = {}
        self.writer = None
        self.stop = threading.Event()
        self.stopped_ns = None          # system time (ns) of the stop: later messages are not recorded
        self.last_rx = time.monotonic()
        self.subs = []

    def discover(self, timeout: float = DISCOVERY_S) -> dict:
        """{topic: (msgtype, publishers' info)} once every topic has a publisher."""
        deadline = time.monotonic() + timeout
        found = {}
        while True:
            types = dict(self.node.get_topic_names_and_types())
            for t in self.topics:
                if t in types and t not in found:
                    infos = self.node.get_publishers_info_by_topic(t)
                    if infos:
                        found[t] = (types[t], infos)
            if len(found) == len(self.topics) or time.monotonic() > deadline or self.stop.is_set():
                break
            self.executor.spin_once(timeout_sec=0.1)
        missing = [t for t in self.topics if t not in found]
        if missing:
            raise RecordError(f"no publisher of {', '.join(missing)} within {timeout:g} s: is the stack running, "
                              "with the same ROS_DOMAIN_ID (and ROS_AUTOMATIC_DISCOVERY_RANGE) and namespace?")
        for t, (tys, _) in found.items():
            if len(set(tys)) != 1:
                raise RecordError(f"{t} is published with several types ({', '.join(sorted(tys))}): cannot record it")
        return found

    def open(self, found):
        """Open the bag (``out`` must not exist yet) and subscribe raw to every topic of ``found`` (from
        :meth:`discover`); RecordError if the bag cannot be written."""
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from rosbags.rosbag2 import StoragePlugin, Writer

        from delta_dynamics.data_files.bag import typestore    # in-function: rosbags, with the writer
        if self.out.exists():
            raise RecordError(f"{self.out}: exists already (rosbag2 writes a new directory): choose another --out")
        if not self.out.parent.is_dir():
            raise RecordError(f"{self.out.parent}: no such directory")
        store = typestore()
        plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[self.storage]
        try:
            self.writer = Writer(self.out, version=9, storage_plugin=plugin)
            self.writer.open()
        except Exception as e:  # noqa: BLE001 - rosbags raises several types
            raise RecordError(f"{self.out}: cannot write a bag: {' '.join(str(e).split())}") from None
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        for t in self.topics:
            (ros_type,), infos = found[t]
            store = _typestore_for(ros_type, store)
            rec = TopicRecord(t, ros_type, store.hash_rihs01(ros_type))
            rec.publisher_hash = next((h for h in (_hash_text(i.topic_type_hash) for i in infos) if h), "")
            if rec.publisher_hash and rec.publisher_hash != rec.hash:
                rec.notes.append(f"{t}: the publishers announce type hash {rec.publisher_hash}, the definition "
                                 f"written has {rec.hash} (another version of {ros_type}?)")
            rec.connection = self.writer.add_connection(t, ros_type, typestore=store, serialization_format="cdr",
                                                        offered_qos_profiles=[])
            self.records[t] = rec
            self.subs.append(self.node.create_subscription(_message_class(ros_type), t, self._taker(rec), qos,
                                                           raw=True))

    def _taker(self, rec):
        writer = self.writer

        def take(raw: bytes, info):
            sent = info.get("source_timestamp", 0) if isinstance(info, dict) else 0
            if self.stopped_ns is not None and sent > self.stopped_ns:
                rec.after_stop = True          # published after the stop: not recorded, this topic is drained
                return
            received = info.get("received_timestamp", 0) if isinstance(info, dict) else 0
            writer.write(rec.connection, received or time.time_ns(), raw)
            rec.count += 1
            self.last_rx = time.monotonic()
        return take

    def spin(self, duration: float | None = None, progress=None):
        """Take messages until :attr:`stop` (or ``duration`` s), then drain (module docstring)."""
        end = None if duration is None else time.monotonic() + duration
        last_report = 0.0
        while not self.stop.is_set() and (end is None or time.monotonic() < end):
            self.executor.spin_once(timeout_sec=0.05)
            if progress is not None and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                progress(self.count)
        self.stopped_ns = time.time_ns()
        quiet_since = stopped = time.monotonic()
        seen = self.count
        while (time.monotonic() - quiet_since < DRAIN_QUIET_S and time.monotonic() - stopped < DRAIN_MAX_S
               and not all(r.after_stop for r in self.records.values())):
            self.executor.spin_once(timeout_sec=0.02)
            if self.count != seen:
                seen = self.count
                quiet_since = time.monotonic()

    @property
    def count(self) -> int:
        """The messages written so far, over all topics."""
        return sum(r.count for r in self.records.values())

    def close(self):
        """Destroy the subscriptions and close the bag (its index and metadata written)."""
        for s in self.subs:
            self.node.destroy_subscription(s)
        self.subs = []
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def record(stack, topics, out, storage: str = "mcap", duration: float | None = None, say=print) -> int:
    """``delta-ctl record``: record until SIGINT / SIGTERM / ``duration``; 0 when written."""
    rec = Recorder(stack.node, stack.executor, topics, out, storage)
    previous = {}

    def on_signal(signum, frame):
        rec.stop.set()
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[s] = signal.signal(s, on_signal)
        except ValueError:          # not the main thread
            pass
    try:
        found = rec.discover()
        rec.open(found)
        for r in rec.records.values():
            say(f"recording {r.topic} ({r.msgtype}) into {rec.out} ({storage})")
            for n in r.notes:
                say(f"  note: {n}")
        say("  Ctrl-C (or SIGTERM) stops and writes the bag" + (f"; stops by itself after {duration:g} s"
                                                                 if duration else ""))
        rec.spin(duration)
    finally:
        rec.close()
        for s, h in previous.items():
            signal.signal(s, h)
    parts = ", ".join(f"{r.count} on {r.topic}" for r in rec.records.values())
    say(f"wrote {rec.out}: {parts}")
    return 0
