"""The canopen backend against CiA 402 drives it did not write: the emulator of
``test/drives_emulator`` (written from CiA 301 / CiA 402 on raw python-can frames; unlike
``delta-drive-sim`` it shares no code and no reading of the standards with the stack: an SDO
write of the controlword does not discard RPDO data received before it, transition 16 exists
with quick stop option code 5-8, a PDO is mapped only by the standard's procedure).

* a stop holds: quick stop, e-stop, the stall stop and the fault reaction, in CSP and CST,
  whatever RPDO was in flight, for 2 s of SYNCs;
* lost TPDO frames are tolerated (one in 100), a drive gone is found; while SYNC is held back
  the position targets do not jump;
* the receive buffer and the dropped-frame count; a foreign datagram and a dead receive
  thread are faults found within one control cycle;
* every exit disables every drive that answers, also one marked lost.

The control cycles are run by the test, on bus time, so the load of the machine changes
nothing; the supervision that runs on the wall clock has generous limits.
"""
import contextlib
import socket
import time

import can
import numpy as np
import pytest

from canopen_helpers import multicast_channel, unique_channel, wait_until
from delta_dynamics.rotary.model import RotaryModel
from delta_hardware.canopen.backend import CanopenDriveSet
from delta_hardware.canopen.bus import DRIVE_RECEIVES, MASTER_RECEIVES, open_bus, receive_stats
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives import DriveError, DriveState
from delta_hardware.trajectory_plan import build_plan
from drives_emulator import EmulatedDrives, send_foreign_datagram
from drives_emulator import cia402 as sm

DT = 0.002
MODEL = RotaryModel.from_robot("nt_robot")
#: SDO answers and TPDOs may take 0.5 s, a heartbeat 1 s, a stall 1 s: a loaded machine
#: does not trip them (the tests that are about them set their own)
LENIENT = {"timing": {"tpdo_timeout": 0.5, "sdo_timeout": 0.5, "max_stall": 1.0}, "heartbeat": {"timeout_ms": 1300}}


def _merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@contextlib.contextmanager
def emulated(mode="position", interface="virtual", channel=None, **overrides):
    """The emulated drives and the backend on a fresh channel (CSP, CSV or CST)."""
    channel = channel or (unique_channel("emu") if interface == "virtual" else multicast_channel(7))
    emu = EmulatedDrives(interface, channel)
    drives = None
    try:
        drives = CanopenDriveSet("nt_robot", interface, channel, "generic_cia402", rate=1 / DT,
                                 config_overrides=_merge(_merge(LENIENT, {"mode": mode}), overrides))
        yield emu, drives
    finally:
        if drives is not None:
            drives.close()
        emu.close()


def _loop(drives):
    return ControlLoop(MODEL, drives, LoopConfig(rate=1 / DT, feedforward="none", max_stall=drives.max_stall))


def _run(loop, drives, n):
    """``n`` control cycles on bus time."""
    return [loop.cycle(drives.bus_time, elapsed=DT) for _ in range(n)]


def _moving(drives, target=(0.5, 0.4, 0.3), seconds=2.0):
    loop = _loop(drives)
    loop.activate()
    _run(loop, drives, 20)
    now = drives.bus_time
    plan = build_plan(MODEL, now, loop.current_setpoint(), now, [seconds], [list(target)])
    loop.submit_plan(plan)
    return loop, plan


# ---------------------------------------------------------------------------- the emulator itself
def test_the_emulator_follows_cia402_where_the_stack_reads_it_otherwise():
    """The point of the emulator: transition 16 with option code 6, and an RPDO latched at
    SYNC after an SDO controlword (what delta-drive-sim drops)."""
    assert sm.next_state(sm.QUICK_STOP_ACTIVE, 0x000F, 0x0002, 6) == (sm.OPERATION_ENABLED, "16")
    assert sm.next_state(sm.QUICK_STOP_ACTIVE, 0x000F, 0x0002, 2) == (sm.QUICK_STOP_ACTIVE, None)
    assert sm.next_state(sm.FAULT, 0x0080, 0x0000, 6) == (sm.SWITCH_ON_DISABLED, "15")
    assert sm.next_state(sm.FAULT, 0x0080, 0x0080, 6) == (sm.FAULT, None)          # no edge
    assert sm.statusword(sm.QUICK_STOP_ACTIVE) & 0x6F == 0x07
    with emulated() as (emu, drives):
        assert [ax.device_name for ax in drives.axes] == ["CiA 402 emulator"] * 3
        assert not drives.simulated                                              # real drives to the stack
        d = emu[0]
        assert d.get(0x6060) == 8 and d.get(0x1017) == 100 and d.get(0x605A) == 6
        assert [d.get(0x1600, s) for s in range(d.get(0x1600, 0) + 1)] == [3, 0x60400010, 0x607A0020, 0x60B20010]


# ---------------------------------------------------------------------------- A: a stop holds
def _cw_after(drive, t0):
    return [(cw, src) for t, _, cw, src in drive.cw_log if t >= t0]


def _hold_for_2s(emu, drives, loop, marks, t0):
    """2 s of SYNCs after a stop: every drive stays out of operation enabled at every cycle, no
    transition back into it, every controlword latched from an RPDO is the quick stop (or
    disable voltage), and the motors stand still."""
    for _ in range(int(2.0 / DT)):
        if loop is not None:
            loop.cycle(drives.bus_time, elapsed=DT)
        else:
            drives.cycle(DT)
            drives.read()
        assert sm.OPERATION_ENABLED not in emu.states(), [d.states_since(m) for d, m in zip(emu.drives, marks)]
    for d, m in zip(emu.drives, marks):
        assert all(to != sm.OPERATION_ENABLED for _, to, _, _ in d.states_since(m)), d.states_since(m)
        assert {cw for cw, src in _cw_after(d, t0) if src == "RPDO"} <= {0x0002, 0x0000}
    assert emu.states() == [sm.QUICK_STOP_ACTIVE] * 3 or sm.FAULT in emu.states()
    assert emu.velocities() == [0.0, 0.0, 0.0]
    assert drives.state in (DriveState.QUICK_STOP, DriveState.FAULT)
    assert all(ax.quick_stop == "confirmed" for ax in drives.axes)


@pytest.mark.parametrize("mode", ["position", "torque"])
def test_a_quick_stop_holds_whatever_rpdo_was_in_flight(mode):
    """Issue 18 A, reproduced without ROS: 50 cycles with enable operation on the RPDOs, the
    quick stop between a write() and the next cycle(): the RPDO in flight (0x000F, and in CST a
    torque) must not take the drives back to operation enabled at the next SYNC."""
    with emulated(mode) as (emu, drives):
        drives.enable()
        fb = drives.read()
        for k in range(50):
            drives.cycle(DT)
            fb = drives.read()
            if mode == "torque":
                drives.write(torque=[3.0 * np.sin(0.1 * k), -2.0, 1.5])
            else:
                drives.write(position=np.array(fb.position) + 1e-3, velocity=[0.5] * 3, torque=[0.0] * 3)
        assert max(abs(w) for w in emu.velocities()) > 0.1                       # moving
        marks, t0 = emu.marks(), time.monotonic()
        drives.quick_stop("test")                                                 # an RPDO with 0x000F is in flight
        _hold_for_2s(emu, drives, None, marks, t0)


@pytest.mark.parametrize("mode", ["position", "torque"])
@pytest.mark.parametrize("trigger", ["e-stop", "stall", "fault reaction"])
def test_every_stop_of_the_loop_holds(mode, trigger):
    """The loop's e-stop (between cycles: its targets are in flight), the stall stop and the
    reaction to a drive's fault (EMCY on axis 2: axes 1 and 3 are stopped by the master)."""
    with emulated(mode) as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 150)
        assert max(abs(w) for w in emu.velocities()) > 1.0
        marks, t0 = emu.marks(), time.monotonic()
        if trigger == "e-stop":
            loop.emergency_stop("e-stop by the test")
        elif trigger == "stall":       # its SYNC latches the last targets, then the stall is found
            loop.cycle(drives.bus_time, elapsed=drives.max_stall + 0.05)
            assert "control loop stalled" in loop.stopped_reason
            marks, t0 = emu.marks(), time.monotonic()
        else:
            emu.inject_fault(1, 0x2310)
            assert wait_until(lambda: drives.faults, timeout=5)                   # the EMCY came in
            loop.cycle(drives.bus_time, elapsed=DT)    # its SYNC latches the last targets, then the fault is seen
            assert "0x2310" in loop.stopped_reason
            marks, t0 = emu.marks(), time.monotonic()
        _hold_for_2s(emu, drives, loop, marks, t0)
        if trigger == "fault reaction":
            assert emu.states() == [sm.QUICK_STOP_ACTIVE, sm.FAULT, sm.QUICK_STOP_ACTIVE]
            assert "0x2310" in loop.stopped_reason and "arm_2_joint" in loop.stopped_reason


def test_a_drive_found_back_in_operation_enabled_is_stopped_again():
    """If a drive leaves quick stop active anyway (here: enable operation sent to it by another
    master's SDO), its next statusword shows it: the stop goes out again and holds."""
    with emulated("torque") as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 50)
        loop.emergency_stop("test")
        _run(loop, drives, 5)
        assert [ax.quick_stop for ax in drives.axes] == ["confirmed"] * 3
        with emu.lock:
            emu[2].on_controlword(0x000F, "another master")
        assert emu.states()[2] == sm.OPERATION_ENABLED
        _run(loop, drives, 5)
        assert emu.states() == [sm.QUICK_STOP_ACTIVE] * 3
        assert drives.axes[2].stop_resent == 1 and drives.axes[2].quick_stop == "confirmed"
        assert "stopped again 1 times" in drives.diagnostics()["axis3"]


# ---------------------------------------------------------------------------- B: lost frames
def test_one_lost_tpdo_in_100_does_not_stop_the_robot():
    """Axis 2 loses every 100th TPDO1: the last values are held, the frames counted and named;
    the trajectory finishes, no fault."""
    with emulated("position", timing={"tpdo_timeout": 0.1}) as (emu, drives):
        emu.drop_every(1, 100)
        loop, plan = _moving(drives, seconds=1.5)
        outs = _run(loop, drives, int(1.7 / DT))
        events = [e for o in outs for e in o.events]
        assert not loop.stopped_reason and any("trajectory finished" in e for e in events), events
        np.testing.assert_allclose(outs[-1].position, [0.5, 0.4, 0.3], atol=2e-3)
        assert emu[1].tpdos_dropped >= 8
        # each lost one counted (a TPDO that came later than read() waited counts too: a busy host)
        missed = drives.axes[1].tpdo_missed
        assert missed >= emu[1].tpdos_dropped
        assert f"{missed} TPDOs missed (last values held" in drives.diagnostics()["axis2"]


def test_a_drive_gone_for_the_consumer_time_stops_the_robot():
    """Axis 3 answers nothing any more (no TPDO, no heartbeat, no SDO): a fault naming it, the
    other two quick-stopped and holding."""
    with emulated("position", timing={"max_stall": 0.25, "tpdo_timeout": 0.05},
                  heartbeat={"timeout_ms": 450}) as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 100)
        emu.mute(2)
        deadline = time.monotonic() + 10
        while not loop.stopped_reason and time.monotonic() < deadline:
            loop.cycle(drives.bus_time, elapsed=DT)
            time.sleep(DT)
        assert "arm_3_joint" in loop.stopped_reason
        assert "no TPDO" in loop.stopped_reason or "heartbeat lost" in loop.stopped_reason
        _run(loop, drives, 20)
        assert emu.states()[:2] == [sm.QUICK_STOP_ACTIVE] * 2
        assert emu.velocities()[:2] == [0.0, 0.0]


@pytest.mark.parametrize("clock", ["bus", "steady"])
def test_the_targets_do_not_jump_while_sync_is_held_back(clock):
    """Axis 1 silent for 20 cycles (more than timing.tpdo_misses, less than max_stall) during
    CSP motion: SYNC waits for it, the trajectory waits with it, and the position target
    latched at each SYNC moves on by one period's step, never by the time it waited. Back, it
    has missed the SYNC it owes an answer to: its heartbeat tells it is alive, it gets another.
    The loop's clock is bus time (stands still with the drives) or a steady clock (goes on: the
    plan is delayed by the cycles held back)."""
    with emulated("position", timing={"tpdo_timeout": 0.02}) as (emu, drives):
        latched = []
        drives.recorder = lambda kind, t, data: latched.append(data) if kind == "sync" and data else None
        loop, plan = _moving(drives, seconds=1.5)
        t = drives.bus_time

        def run(n):
            nonlocal t
            outs = []
            for _ in range(n):
                t = drives.bus_time if clock == "bus" else t + DT
                outs.append(loop.cycle(t, elapsed=DT))
            return outs
        run(300)
        end_before = plan.end_time
        emu.mute(0)
        run(20)
        emu.mute(0, False)
        outs = run(int(1.5 / DT))
        withheld = drives.stats["withheld"]
        assert withheld >= 20 - drives.cfg.tpdo_misses - 1 and drives.stats["resynced"] >= 1
        assert plan.end_time - end_before == pytest.approx(0.0 if clock == "bus" else withheld * DT, abs=1e-9)
        assert not loop.stopped_reason and any("trajectory finished" in e for o in outs for e in o.events)
        steps = np.array([[abs(b[i]["target_position"] - a[i]["target_position"]) for i in range(3)]
                          for a, b in zip(latched, latched[1:])])
        v_max = np.abs(plan.sample_many(np.linspace(plan.start_time, plan.end_time, 2000))[1]).max(axis=0)
        counts_per_rad = np.array([1 / drives.cfg.axes[i].scaling.rad_per_count for i in range(3)])
        bad = np.nonzero((steps > 1.2 * v_max * DT * counts_per_rad + 50).any(axis=1))[0]
        assert not len(bad), (bad, steps[bad])


# ---------------------------------------------------------------------------- C: receive buffer
def test_the_receive_buffer_is_sized_and_its_drops_are_counted():
    pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (python-can[multicast])")
    channel = multicast_channel(11)
    listener = open_bus("udp_multicast", channel, receive_buffer=4096)        # tiny: will overflow
    sender = open_bus("udp_multicast", channel)
    try:
        assert receive_stats(listener, "udp_multicast", channel)["dropped"] == 0
        for k in range(3000):                                                    # nobody reads meanwhile
            sender.send(can.Message(arbitration_id=0x181, data=k.to_bytes(4, "little"), is_extended_id=False))
        stats = receive_stats(listener, "udp_multicast", channel)
        assert stats["receive_buffer"] < 64 << 10 and stats["dropped"] > 0
    finally:
        listener.shutdown()
        sender.shutdown()
    with emulated("position", interface="udp_multicast", channel=multicast_channel(12)) as (emu, drives):
        r = drives.receive_stats()
        # 8 MiB asked; without CAP_NET_ADMIN Linux grants at most net.core.rmem_max
        rmem_max = int(open("/proc/sys/net/core/rmem_max").read())
        assert r["receive_buffer"] >= min(8 << 20, rmem_max) and r["dropped"] == 0
        d = drives.diagnostics()
        assert d["bus_frames_dropped"] == "0" and int(d["bus_receive_buffer_bytes"]) == r["receive_buffer"]


def test_master_and_drives_each_read_only_the_frames_meant_for_them():
    """On udp_multicast every member hears every datagram, its own included: the master's bus
    reads the drives' frames (EMCY, TPDOs, SDO answers, heartbeats; SYNC passes), not its own
    RPDOs, SDO requests or NMT; the drives' bus the reverse. Each frame sent by a third bus."""
    pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (python-can[multicast])")
    channel = multicast_channel(13)
    master = open_bus("udp_multicast", channel, receives=MASTER_RECEIVES)
    drive = open_bus("udp_multicast", channel, receives=DRIVE_RECEIVES)
    sender = open_bus("udp_multicast", channel)
    from_drives = [0x081, 0x181, 0x281, 0x381, 0x481, 0x581, 0x701, 0x7E4]
    from_master = [0x000, 0x201, 0x301, 0x401, 0x501, 0x601]
    try:
        for cob in [*from_drives, 0x080, *from_master]:
            sender.send(can.Message(arbitration_id=cob, data=b"\x01", is_extended_id=False))

        def heard(bus):
            got = []
            while (m := bus.recv(0.5)) is not None:
                got.append(m.arbitration_id)
            return got
        assert heard(master) == [*from_drives, 0x080]
        assert heard(drive) == [0x701, 0x080, *from_master]       # heartbeats are even codes: they pass too
    finally:
        for b in (master, drive, sender):
            b.shutdown()


# ---------------------------------------------------------------------------- D: the receiver
def test_a_foreign_datagram_is_a_fault_within_one_cycle():
    """A datagram that is not a CAN frame on the bus's UDP port (another program using it)
    stopped python-can's receive thread for good; now it is handled, counted, and the next
    control cycle faults every axis, says so, and the quick stop is confirmed (the receiver
    still runs)."""
    pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (python-can[multicast])")
    channel = multicast_channel(13)
    with emulated("torque", interface="udp_multicast", channel=channel) as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 50)
        send_foreign_datagram(channel)
        assert wait_until(lambda: drives.receiver.errors == 1, timeout=5)        # the receive thread saw it
        out = loop.cycle(drives.bus_time, elapsed=DT)                             # the next cycle: a fault
        assert loop.stopped_reason and any(e.startswith("fault:") for e in out.events)
        assert "CAN receiver" in loop.stopped_reason and "not a CAN frame" in loop.stopped_reason
        assert drives.receiver.alive
        for _ in range(500):                                                      # a few cycles; more if the host is busy
            _run(loop, drives, 1)
            if all(ax.quick_stop == "confirmed" for ax in drives.axes):
                break
        assert emu.states() == [sm.QUICK_STOP_ACTIVE] * 3
        assert [ax.quick_stop for ax in drives.axes] == ["confirmed"] * 3
        assert drives.diagnostics()["bus_receive_errors"] == "1"
        drives.disable()                                                          # SDO answers still come
        assert emu.states() == [sm.SWITCH_ON_DISABLED] * 3


def test_a_dead_receive_thread_is_a_fault_and_is_restarted():
    with emulated("position") as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 50)
        drives.network.notifier.stop(1.0)                                         # the receive thread ends
        assert wait_until(lambda: not drives.receiver.alive, timeout=10)
        loop.cycle(drives.bus_time, elapsed=DT)
        assert "CAN receiver on virtual" in loop.stopped_reason and "stopped" in loop.stopped_reason
        assert "receiver restarted" in loop.stopped_reason and drives.receiver.alive
        _run(loop, drives, 5)
        assert emu.states() == [sm.QUICK_STOP_ACTIVE] * 3


# ---------------------------------------------------------------------------- E: every exit disables
def test_close_disables_every_drive_that_answers_also_one_marked_lost():
    """Axis 2's TPDOs stop (it answers SDO): it is marked lost and the robot quick-stopped;
    close() disables all three, the lost one too, confirmed from the statusword."""
    with emulated("torque", timing={"max_stall": 0.1, "tpdo_timeout": 0.01}) as (emu, drives):
        loop, _ = _moving(drives)
        _run(loop, drives, 50)
        emu.drop_tpdos(1, 10 ** 6)
        while not loop.stopped_reason:
            loop.cycle(drives.bus_time, elapsed=DT)
        assert drives.axes[1].lost and "no TPDO" in loop.stopped_reason
        drives.close()
        assert emu.states() == [sm.SWITCH_ON_DISABLED] * 3 and drives.close_error == ""


def test_a_drive_that_does_not_answer_is_named_at_close():
    with emulated("position", timing={"sdo_timeout": 0.1}) as (emu, drives):
        drives.enable()
        emu.mute(2)
        with pytest.raises(DriveError) as e:
            drives.disable()
        assert "axis 3 (arm_3_joint, node 3)" in str(e.value) and "not confirmed disabled" in str(e.value)
        assert "axis 1" not in str(e.value) and emu.states()[:2] == [sm.SWITCH_ON_DISABLED] * 2
        drives.close()
        assert "axis 3 (arm_3_joint, node 3)" in drives.close_error


def test_close_is_safe_from_another_thread_while_the_loop_runs():
    """close() while the loop thread still cycles (the loop dying, a shutdown race): every
    drive ends disabled, the loop's calls after it do nothing."""
    import threading
    with emulated("torque") as (emu, drives):
        loop, _ = _moving(drives)
        stop = threading.Event()
        errors = []

        def run():
            try:
                while not stop.is_set():
                    loop.cycle(drives.bus_time, elapsed=DT)
            except Exception as e:          # noqa: BLE001 - what the loop thread would die of
                errors.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        time.sleep(0.3)
        drives.close()
        stop.set()
        t.join(5)
        assert emu.states() == [sm.SWITCH_ON_DISABLED] * 3
        assert drives.close_error == "" and drives.cycle(DT) == 0.0
