"""``delta-identify`` on bad rosbag2 input: real bags (sqlite3 and mcap) written with
``rosbags``' writer, then truncated, corrupted, given a lying ``metadata.yaml``, or holding
the wrong topic, the wrong message type or malformed JointState messages. Each case is data;
see :mod:`bad_input_harness` for what every case must show (exit 2, one error line, no
traceback, the pre-existing output robot file untouched).

Add a case: a bag maker (a function of the bag's path) and a :class:`Case` row in CASES.
"""
from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.data_files import bag as B
from delta_dynamics.data_files import joint_files as F
from delta_dynamics.identification.cli import main
from delta_dynamics.identification.stream import MAX_STREAM_SAMPLES

from bad_input_harness import Case, check_case

ROBOT = load_robot("nt_robot")
NAMES = list(ROBOT.joint_names)
N = 3000


@lru_cache(maxsize=None)
def motion():
    t = np.arange(N) * 1e-3
    q = 0.4 + 0.2 * np.sin(np.outer(t, [3.0, 4.0, 5.0]))
    tau = 10 * np.cos(np.outer(t, [3.0, 4.0, 5.0]))
    return t, q, tau


def good(storage="mcap", **kw):
    def make(path):
        t, q, tau = motion()
        B.write_bag(path, t, q, tau, NAMES, storage=storage, **kw)
    return make


def _file_of(path: Path) -> Path:
    return next(p for p in path.iterdir() if p.suffix in (".mcap", ".db3"))


def truncated(storage, fraction):
    def make(path):
        good(storage)(path)
        f = _file_of(path)
        with open(f, "r+b") as fh:
            fh.truncate(int(f.stat().st_size * fraction))
    return make


def corrupted(storage):
    def make(path):
        good(storage)(path)
        f = _file_of(path)
        b = bytearray(f.read_bytes())
        for k in np.random.default_rng(0).integers(len(b) // 4, len(b), 200):
            b[k] ^= 0xFF
        f.write_bytes(bytes(b))
    return make


def metadata(storage, old, new):
    def make(path):
        good(storage)(path)
        m = path / "metadata.yaml"
        text = m.read_text()
        assert old in text, old
        m.write_text(text.replace(old, new))
    return make


def raw(messages, topic="/joint_states", msgtype=B.JOINT_STATE, storage="mcap"):
    """A bag of ``messages``: a list of dicts (JointState fields) or, for another type, the
    message objects built by ``messages(store)``."""
    def make(path):
        from rosbags.rosbag2 import StoragePlugin, Writer
        store = B.typestore()
        plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
        with Writer(path, version=9, storage_plugin=plugin) as w:
            conn = w.add_connection(topic, msgtype, typestore=store)
            msgs = messages(store) if callable(messages) else [_joint_state(store, m) for m in messages]
            for k, msg in enumerate(msgs):
                w.write(conn, 1_000_000_000 + k * 1_000_000, store.serialize_cdr(msg, msgtype))
    return make


def _joint_state(store, m):
    T = store.types
    ns = m.get("ns", 1_000_000_000)
    return T[B.JOINT_STATE](
        header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10 ** 9,
                                                                              nanosec=ns % 10 ** 9),
                                        frame_id=""),
        name=m.get("name", NAMES), position=np.asarray(m.get("position", [0.4, 0.4, 0.4]), float),
        velocity=np.zeros(0), effort=np.asarray(m.get("effort", [1.0, 2.0, 3.0]), float))


def strings(store):
    S = store.types["std_msgs/msg/String"]
    return [S(data=f"hello {k}") for k in range(10)]


def states(n, **fields):
    return [{"ns": 1_000_000_000 + k * 1_000_000, **{f: (v(k) if callable(v) else v) for f, v in fields.items()}}
            for k in range(n)]


def motion_states(change=None):
    t, q, tau = motion()
    if change is not None:
        t, q, tau = change(t.copy(), q.copy(), tau.copy())
    return [{"ns": 1_000_000_000 + int(round(t[k] * 1e9)), "position": q[k], "effort": tau[k]} for k in range(len(t))]


def junk(size):
    def make(path):
        path.write_bytes(np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes())
    return make


def empty_file(path):
    path.write_bytes(b"")


def dir_without_metadata(path):
    good("sqlite3")(path)
    (path / "metadata.yaml").unlink()


RUN = ["--robot", "nt_robot", "--data", "{tmp}/bag", "--out", "{out}", "--no-progress", "-q"]
OUT = {"out_name": "out.yaml"}


def bag_case(id_, make, expect, args=(), data="bag", **kw):
    argv = [a if a != "{tmp}/bag" else f"{{tmp}}/{data}" for a in RUN] + list(args)
    return Case(id_, argv, expect, files={data: make}, **OUT, **kw)


CASES = [
    bag_case("no-joint-states", raw(strings, topic="/chatter", msgtype="std_msgs/msg/String"),
             "no topic /joint_states in the bag (topics: /chatter (std_msgs/msg/String)); choose one with --topic",
             subprocess=True),
    bag_case("wrong-topic-option", good(), "no topic /arm/joint_states in the bag", args=["--topic", "/arm/joint_states"]),
    bag_case("wrong-type", raw(strings, msgtype="std_msgs/msg/String"),
             "topic /joint_states carries std_msgs/msg/String, not sensor_msgs/msg/JointState"),
    bag_case("no-effort", raw(states(10, effort=[])), "JointState without effort"),
    bag_case("other-joint-names", raw(states(10, name=["j1", "j2", "j3"])), "no joint 'arm_1_joint', 'arm_2_joint'"),
    bag_case("many-joint-names", raw(states(3, name=[f"j{i}" for i in range(5000)], position=np.zeros(5000),
                                            effort=np.zeros(5000))), "characters)"),
    bag_case("fewer-positions", raw(states(10, position=[0.4, 0.4])), "3 names but 2 positions and 3 efforts"),
    bag_case("nan-position", raw(states(200, position=lambda k: [0.4, np.nan if k == 150 else 0.4, 0.4],
                                        effort=lambda k: [1.0 + k, 2.0, 3.0])),
             "/joint_states message 150: q2 is [0.4, nan, 0.4]"),
    bag_case("all-zero-effort", raw(motion_states(lambda t, q, tau: (t, q, 0 * tau))),
             "the effort of joint 1 (tau1) is all zero over all 3000 samples"),
    bag_case("outside-limits", raw(motion_states(lambda t, q, tau: (t, q + [0, 2.0, 0], tau))),
             "/joint_states message 0: q2 = 2.4 rad is outside joint 2's limits"),
    bag_case("one-message", raw(states(1)), "too few samples: 1"),
    bag_case("no-messages", raw([]), "topic /joint_states has no messages"),
    bag_case("same-stamps", raw(states(500, ns=5, effort=lambda k: [k, k + 1.0, k + 2.0])),
             "too few samples in time order: 1"),
    bag_case("current-unknown-effort", good(), "argument --effort: invalid choice", args=["--effort", "amps"]),
    *[bag_case(f"truncated-{int(100 * f)}-{st}", truncated(st, f), "not a readable rosbag2 bag",
               subprocess=(f == 0.5 and st == "mcap"))
      for st in ("mcap", "sqlite3") for f in (0.1, 0.5, 0.9)],
    bag_case("corrupt-mcap", corrupted("mcap"), "not a readable rosbag2 bag"),
    bag_case("corrupt-sqlite3", corrupted("sqlite3"), "not a readable rosbag2 bag"),
    bag_case("metadata-count-1e12", metadata("sqlite3", f"message_count: {N}", "message_count: 1000000000000"),
             f"topic /joint_states has 1000000000000 messages, more than the {MAX_STREAM_SAMPLES}"),
    bag_case("metadata-count-1e12-mcap", metadata("mcap", f"message_count: {N}", "message_count: 1000000000000"),
             f"more than the {MAX_STREAM_SAMPLES}"),
    bag_case("metadata-broken", metadata("mcap", "rosbag2_bagfile_information:", "rosbag2_bagfile_information: ["),
             "not a readable rosbag2 bag: Could not load YAML"),
    bag_case("metadata-version", metadata("mcap", "version: 9", "version: 99"), "not a readable rosbag2 bag"),
    bag_case("junk-mcap", junk(5000), "junk.mcap: not a readable rosbag2 bag", data="junk.mcap"),
    bag_case("junk-db3", junk(5000), "junk.db3: not a readable rosbag2 bag", data="junk.db3"),
    bag_case("empty-mcap", empty_file, "empty.mcap: not a readable rosbag2 bag", data="empty.mcap"),
    bag_case("dir-without-metadata", dir_without_metadata, "a directory without metadata.yaml"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_bag(tmp_path, case):
    check_case(case, tmp_path, "delta-identify", main, "delta_dynamics.identification.cli")


def test_a_bag_that_grows_past_its_metadata_count_stops_at_the_limit(tmp_path, monkeypatch):
    """metadata.yaml says 10 messages, the bag has 3000: the reader grows its arrays and
    stops at MAX_SAMPLES (here lowered to 1000) with an error, not a MemoryError."""
    metadata("mcap", f"message_count: {N}", "message_count: 10")(tmp_path / "bag")
    monkeypatch.setattr(B, "MAX_SAMPLES", 1000)
    with pytest.raises(B.BagError, match="has more than 1000 messages"):
        F.read_joint_data(tmp_path / "bag", ROBOT)


def test_good_bags_still_read(tmp_path):
    for st in ("mcap", "sqlite3"):
        good(st)(tmp_path / st)
        assert len(F.read_joint_data(tmp_path / st, ROBOT)) == N
    metadata("sqlite3", f"message_count: {N}", "message_count: 10")(tmp_path / "lying")
    assert len(F.read_joint_data(tmp_path / "lying", ROBOT)) == N
