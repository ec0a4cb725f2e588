"""The control loop in its own process, without ROS: it imports no rclpy, follows plans, latches
its stops against requests received before them, never waits for a slow reader on the wall
clock (and loses nothing in simulated time), runs on while its parent holds the GIL, and
disables its drives at every exit (close, the link ending, SIGTERM, the parent killed, the
loop dying)."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from delta_core.robot_file import load_robot, save_robot
from delta_dynamics.kinds import model_for
from delta_hardware.drives import DriveError
from delta_hardware.loop_client import LoopClient
from delta_hardware.loop_config import LoopConfig, LoopSpec
from delta_hardware.loop_link import SharedBlock
from delta_hardware.trajectory_plan import build_plan

ROBOT = load_robot("nt_robot")
MODEL = model_for(ROBOT)


def spec(clock="sim", rtf=0.0, **kw):
    cfg = kw.pop("config", None) or LoopConfig(rate=500.0)
    return LoopSpec(robot=ROBOT, backend="sim", params={"sim_torque_noise": 0.0}, config=cfg, clock=clock,
                    real_time_factor=rtf, **kw)


def until(cond, timeout=60.0, every=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every)
    return cond()


class Reader:
    """What the node's broadcaster does: take every record and event as they come."""

    def __init__(self, c):
        self.c, self.records, self.events, self.lost = c, [], [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.c.wait(0.05)
            recs, lost = self.c.take_records()
            self.records += recs
            self.lost += lost
            self.events += [e[0] for e in self.c.take_events()[0]]

    def stop(self):
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def client():
    failures = []
    c = LoopClient(spec(rtf=1.0), on_failure=failures.append, on_lost=failures.append)
    c.start()
    c.ask("activate", timeout=60)
    c.failures = failures
    c.reader_thread = Reader(c)
    try:
        yield c
    finally:
        c.reader_thread.stop()
        c.close()


def events_of(c):
    return [text for text, _, _ in c.take_events()[0]]


def test_the_loop_process_imports_neither_rclpy_nor_scipy():
    code = "import sys, delta_hardware.loop_process; print(sorted(m for m in ('rclpy', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_plan_is_followed_and_the_node_sees_every_cycle(client):
    q0 = client.current_setpoint().q
    goal = q0 + [0.2, -0.1, 0.05]
    now = client.now()
    plan = build_plan(MODEL, now, client.current_setpoint(), now, [0.5], [goal], limits=client.limits())
    client.submit_plan(plan)
    assert client.is_following(plan)
    assert until(lambda: client.now() > plan.end_time + 0.2)
    np.testing.assert_allclose(client.latest()["position"], goal, atol=2e-3)
    reader = client.reader_thread
    reader.stop()
    cycles = [r for r in reader.records if r["period"] > 0]
    assert reader.lost == 0 and len(cycles) > 300
    np.testing.assert_allclose(np.diff([r["time"] for r in cycles]), 0.002, atol=1e-9)   # simulated time
    assert "trajectory finished" in reader.events


def test_a_stop_holds_against_everything_received_before_it(client):
    before = time.time_ns()                               # a reset and a plan received now ...
    time.sleep(0.01)
    assert client.ask("estop", reason="test stop")["message"] == "stopped"   # ... then the stop
    with pytest.raises(DriveError, match="void: it was requested before the stop"):
        client.ask("reset", rx=before, timeout=30)
    assert client.stopped_reason or until(lambda: client.stopped_reason)
    client.ask("reset", timeout=30)                        # requested after the stop: releases it
    assert until(lambda: not client.stopped_reason)
    now = client.now()
    plan = build_plan(MODEL, now, client.current_setpoint(), now, [0.5], [client.current_setpoint().q + 0.05],
                      limits=client.limits())
    with pytest.raises(DriveError, match="void: it was sent before the latest stop"):
        client.submit_plan(plan, rx=before)
    client.submit_plan(plan)                               # sent again: followed


def test_a_full_ring_never_stalls_the_wall_clock_loop_and_simulated_time_loses_nothing():
    wall = LoopClient(spec(clock="wall", ring=64, realtime=_no_rt()))
    sim = LoopClient(spec(clock="sim", rtf=0.0, ring=64))
    try:
        for c in (wall, sim):
            c.start()
            c.ask("activate", timeout=60)
        time.sleep(1.0)                                    # nobody reads
        # the wall-clock loop went on, lapping the ring; simulated time waits for the reader
        assert int(wall.latest()["tick"]) > 64 * 2
        assert int(sim.latest()["tick"]) <= sim.spec.lead + 1
        records, lost = wall.take_records(limit=10 ** 6)
        assert lost > 0
        stamps = []
        deadline = time.monotonic() + 60
        while len(stamps) < 1000 and time.monotonic() < deadline:
            recs, lost = sim.take_records()
            assert lost == 0
            stamps += [float(r["time"]) for r in recs if r["period"] > 0]
            time.sleep(0.002)
        np.testing.assert_allclose(np.diff(stamps), 0.002, atol=1e-9)
    finally:
        wall.close()
        sim.close()


def _no_rt():
    from delta_hardware.loop_thread import RealtimeSettings
    return RealtimeSettings(thread_priority=0)


def test_the_loop_runs_on_while_its_parent_holds_the_gil():
    """The node's process holds its GIL for seconds (here a C loop that never lets it go; in the
    field rclpy's publish while the middleware sleeps): the loop in its own process does not
    notice. In the node's process it stalled and quick-stopped (max_stall)."""
    from delta_hardware.loop_thread import RealtimeSettings
    c = LoopClient(spec(clock="wall", max_stall=1.0, realtime=RealtimeSettings(thread_priority=50)))   # where allowed
    try:
        c.start()
        c.ask("activate", timeout=60)
        t = time.perf_counter()
        sum(range(10_000_000))
        n = int(10_000_000 * 3.0 / (time.perf_counter() - t))        # about 3 s on this host now
        time.sleep(0.3)
        t0 = int(c.latest()["tick"])
        sum(range(n))                                      # holds this process's GIL throughout
        t1 = int(c.latest()["tick"])
        assert t1 - t0 > 50                                # it went on meanwhile
        assert not c.stopped_reason, c.stopped_reason
        assert not any("stalled" in e for e in events_of(c))
    finally:
        c.close()


def _ended(c, timeout=30.0):
    assert until(lambda: c.proc.poll() is not None, timeout), "the loop process did not end"
    return events_of(c)


def test_the_drives_are_disabled_when_the_node_closes_the_link():
    c = LoopClient(spec(rtf=1.0))
    c.start()
    c.ask("activate", timeout=60)
    c.control.shutdown(2)                                  # the node's end of the link goes (its death)
    c.bulk.shutdown(2)
    events = _ended(c)
    assert any("control loop process ended (the node closed the link): drives disabled" in e for e in events), events
    c.close()


def test_the_drives_are_disabled_on_sigterm_and_on_close():
    for how in ("SIGTERM", "close"):
        c = LoopClient(spec(rtf=1.0))
        c.start()
        c.ask("activate", timeout=60)
        if how == "SIGTERM":
            c.proc.send_signal(signal.SIGTERM)
            events = _ended(c)
            c.close()
        else:
            assert c.close() == 0
            events = events_of(c)
        assert any("ended" in e and e.endswith("drives disabled") for e in events), (how, events)


def test_the_drives_are_disabled_when_the_parent_is_killed(tmp_path):
    """SIGKILL of the node's process: the loop process sees its link end and disables the drives."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_loop_process import spec
        from delta_hardware.loop_client import LoopClient
        c = LoopClient(spec(rtf=1.0))
        c.start()
        c.ask("activate", timeout=60)
        print(c.proc.pid, c.block.fd, flush=True)
        time.sleep(600)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pid, _ = (int(x) for x in parent.stdout.readline().split())
        # the shared block through the loop process's own descriptor (its command line names it)
        args = open(f"/proc/{pid}/cmdline").read().split("\0")
        fd = os.open(f"/proc/{pid}/fd/{args[args.index('--block') + 1]}", os.O_RDWR)
        block = SharedBlock(fd)
        parent.kill()
        parent.wait(10)
        assert until(lambda: not os.path.exists(f"/proc/{pid}") or
                     open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 30)
        head = int(block.header["event_head"])
        texts = [block.events.read_text(k)[0] for k in range(max(0, head - 5), head)]
        assert any("drives disabled" in t for t in texts), texts
        block.close()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(5)


def test_a_loop_that_dies_quick_stops_and_says_why(tmp_path):
    """A feedforward model that cannot reach the setpoint raises inside a cycle: quick stop,
    the reason to the node, and at the end the drives disabled."""
    r = ROBOT
    g, m = r.geometry, r.mass
    fa = m.forearm.__class__(**{**m.forearm.__dict__, "inertia": m.forearm.mass * 0.45 ** 2 / 12})
    short = load_robot(save_robot(r.replace(geometry=g.__class__(**{**g.__dict__, "forearm_length": 0.45}),
                                            mass=m.__class__(**{**m.__dict__, "forearm": fa})), tmp_path / "short.yaml"))
    failures = []
    c = LoopClient(spec(rtf=1.0), on_failure=failures.append)
    c.start()
    c.ask("activate", timeout=60)
    reader = Reader(c)
    c.ask("reconfigure", changes={"model": short})
    assert until(lambda: failures), "no failure reported"
    assert "control loop error" in failures[0]
    assert until(lambda: c.stopped_reason.startswith("control loop error"))
    c.close()
    reader.stop()
    assert any(e.endswith("drives disabled") for e in reader.events + events_of(c))


def test_a_200000_point_trajectory_is_refused_before_it_is_parsed(monkeypatch):
    """The size is read from the serialized message's sequence length: the 7 s of full
    deserialisation of the points never happen."""
    from rclpy.serialization import serialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from delta_hardware.ros import trajectory_intake
    msg = JointTrajectory(joint_names=["arm_1_joint", "arm_2_joint", "arm_3_joint"])
    msg.points = [JointTrajectoryPoint(positions=[0.1, 0.1, 0.1])] * 200_000
    raw = serialize_message(msg)
    parsed, refused = [], []
    monkeypatch.setattr(trajectory_intake, "deserialize", lambda *a: parsed.append(1))
    intake = trajectory_intake.TrajectoryIntake(lambda: MODEL, lambda *a, **k: None,
                                                lambda source, why: refused.append(why), lambda: (100000, 3600.0))
    try:
        intake.put("joint trajectory", raw)
        assert until(lambda: refused, 30)
    finally:
        intake.close()
    assert refused == ["200000 points, more than max_trajectory_points 100000"]
    assert parsed == []
