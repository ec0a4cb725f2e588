"""The cyclic exchange (delta_hardware.canopen.cyclic) against the simulated drives: the
order SYNC -> TPDOs -> RPDOs of CiA 301 synchronous PDOs and its one period of latency, lost
TPDOs tolerated for ``tolerance`` cycles and then a SYNC that waits for a drive behind, the
stop command on the RPDO; and the backend's cycle order on the bus (RPDOs in write, SYNC in
cycle, TPDOs of this SYNC read)."""
import contextlib
import time

import numpy as np
import pytest

from canopen_helpers import Frames, bare_axes, drives_on, sim_on, unique_channel, wait_until
from delta_core.robot_file import load_robot
from delta_hardware import cia402
from delta_hardware.canopen import startup
from delta_hardware.cia402 import State
from delta_hardware.canopen.cyclic import CyclicExchange, hold_targets

# drives emulated in this process on the steady clock: run alone (make test runs these after the parallel part)
pytestmark = pytest.mark.serial

ROBOT = load_robot("nt_robot")
DT = 0.002


@contextlib.contextmanager
def _exchange(mode="torque"):
    """Drives started by the start-up service, a CyclicExchange, every drive enabled."""
    channel = unique_channel()
    sim = sim_on(channel)
    net, axes, cfg = bare_axes(channel, overrides={"mode": mode})
    try:
        for ax in axes:
            ax.node.nmt.add_heartbeat_callback(lambda s, ax=ax: setattr(ax, "hb_state", s))
        startup.probe(axes, cfg, channel)
        startup.parallel(lambda ax: startup.configure(ax, cfg, ROBOT, DT, DT, net), axes)
        for ax in axes:
            ax.node.nmt.state = "OPERATIONAL"
        ex = CyclicExchange(net, axes, axes[0].lock, tpdo_timeout=0.5, tolerance=3)
        for ax in axes:
            ex.attach(ax)
        for ax in axes:
            cia402.drive_to(ax, State.OPERATION_ENABLED, 1.0)
        yield sim, ex, axes
    finally:
        net.disconnect()
        sim.close()


def _cycle(ex, wait=True):
    now = time.monotonic()
    missing = ex.begin_cycle(now)
    for ax in ex.axes:                                   # what the monitor counts (monitor.count_silence)
        ax.silent_cycles = ax.silent_cycles + 1 if ax.index in missing else 0
    sent = ex.sync(now, wait_for_answers=wait)
    return sent, ex.wait()


def test_a_target_acts_one_period_after_the_sync_that_latches_it():
    """CST: the torque written after the TPDOs of SYNC k is latched at SYNC k+1, applied for
    the period after it, and the TPDO of SYNC k+2 reports it as the torque actual value."""
    with _exchange("torque") as (sim, ex, axes):
        hold = [hold_targets() for _ in axes]
        ex.transmit(hold)
        assert _cycle(ex) == (True, True)                               # SYNC k, answered
        assert [ax.values["torque_actual"] for ax in axes] == [0, 0, 0]
        ex.transmit([dict(h, target_torque=t) for h, t in zip(hold, (150, -80, 40))])
        assert _cycle(ex) == (True, True)                               # SYNC k+1: latched, not yet applied
        assert [ax.values["torque_actual"] for ax in axes] == [0, 0, 0]
        assert _cycle(ex) == (True, True)                               # SYNC k+2: applied since k+1
        assert [ax.values["torque_actual"] for ax in axes] == [150, -80, 40]
        assert sim.sync_count == ex.stats["syncs"] and sim.time == pytest.approx(ex.stats["syncs"] * DT)


def test_a_sync_waits_for_a_drive_behind_after_the_tolerated_misses():
    """TPDOs missing for up to ``tolerance`` cycles in a row are lost frames: SYNC goes on.
    A drive behind for longer gets no more SYNC to pile up: each SYNC stands for one period
    the drives run on their last targets, so at most tolerance + 1 reach a drive that is busy."""
    with _exchange("position") as (sim, ex, axes):
        ex.transmit([hold_targets(ax.values["position_actual"]) for ax in axes])
        assert _cycle(ex) == (True, True)
        n = sim.sync_count
        with sim.lock:                                   # the drives are busy: no answer for a while
            sent = [_cycle(ex)[0]]
            ex.tpdo_timeout = 0.002
            for _ in range(20):
                sent.append(_cycle(ex)[0])
            assert sent == [True] * 4 + [False] * 17
            assert ex.stats["withheld"] == 17 and ex.stats["late"] == 21
            assert [ax.tpdo_missed for ax in axes] == [4 * 2] * 3       # 4 SYNCs unanswered, 2 TPDOs each, counted once
        ex.tpdo_timeout = 0.5
        assert wait_until(lambda: sim.sync_count == n + 4)             # the drives catch up: 4 SYNCs, no more
        assert wait_until(lambda: not ex.missing())
        assert _cycle(ex) == (True, True)
        # while the drives are not running on targets, SYNC goes out regardless
        with sim.lock:
            ex.tpdo_timeout = 0.002
            assert [_cycle(ex, wait=False)[0] for _ in range(3)] == [True] * 3
        ex.tpdo_timeout = 0.5
        assert wait_until(lambda: sim.sync_count == n + 5)


def test_a_lost_drive_is_not_waited_for():
    with _exchange("position") as (sim, ex, axes):
        assert _cycle(ex) == (True, True)
        sim.unplug(1)
        ex.tpdo_timeout = 0.01
        assert _cycle(ex) == (True, False) and ex.missing() == {1}
        assert [_cycle(ex)[0] for _ in range(4)] == [True, True, True, False]   # 3 misses tolerated, then withheld
        axes[1].lost = True
        assert _cycle(ex) == (True, True)                               # the others answer
        assert ex.missing() == set()


def test_the_quick_stop_rides_on_the_rpdo():
    """Controlword 0x0002 and a zero torque target in the RPDO, latched by the next SYNC."""
    with _exchange("torque") as (sim, ex, axes):
        ex.transmit([dict(hold_targets(), target_torque=120) for _ in axes])
        _cycle(ex)
        _cycle(ex)
        assert sim.drives[0].targets["target_torque"] == 120
        ex.transmit_command(axes[0], cia402.Command.QUICK_STOP, 0)
        time.sleep(0.05)
        assert sim.drive_state(0) is State.OPERATION_ENABLED          # not before the SYNC
        _cycle(ex)
        assert sim.drive_state(0) is State.QUICK_STOP_ACTIVE
        assert sim.drives[0].targets["target_torque"] == 120              # ignored once stopped ...
        _cycle(ex)
        assert axes[0].cia_state is State.QUICK_STOP_ACTIVE               # ... and reported
        assert [sim.drive_state(i) for i in (1, 2)] == [State.OPERATION_ENABLED] * 2


def test_the_backend_sends_rpdos_in_write_and_sync_in_cycle():
    """One control cycle on the bus: cycle() = SYNC only; the TPDOs answering it are what
    read() returns; write() = the RPDOs at once, before the next SYNC."""
    channel = unique_channel()
    sim = sim_on(channel)
    frames = Frames(channel)
    drives = drives_on(channel)
    rpdo = lambda cob: cob & 0x780 in (0x200, 0x300)      # noqa: E731
    tpdo = lambda cob: cob & 0x780 in (0x180, 0x280)      # noqa: E731
    try:
        drives.enable()
        for _ in range(3):
            drives.cycle(DT)
            fb = drives.read()
        n0 = frames.mark_sent()
        read = []
        for k in range(5):
            q = np.array(fb.position) + 1e-3
            drives.write(position=q, velocity=[0.0] * 3, torque=[0.0] * 3)
            drives.cycle(DT)
            fb = drives.read()
            read.append(fb.position)
        tpdos = {0x181, 0x182, 0x183, 0x281, 0x282, 0x283}
        rec = frames.wait_for(n0, 5 * 6, tpdos)          # the listener may lag: the frames, in bus order
        cobs = [cob for _, cob, _ in rec]
        syncs = [i for i, c in enumerate(cobs) if c == 0x80]
        assert len(syncs) == 5
        for k, i in enumerate(syncs):
            before = cobs[syncs[k - 1] + 1:i] if k else cobs[:i]
            after = cobs[i + 1:syncs[k + 1] if k + 1 < len(syncs) else len(cobs)]
            # write(): the six RPDOs, after the previous SYNC's TPDOs, before this SYNC
            assert [c for c in before if rpdo(c)] == [0x201, 0x301, 0x202, 0x302, 0x203, 0x303]
            if k:
                last_tpdo = max(j for j, c in enumerate(before) if tpdo(c))
                assert last_tpdo < min(j for j, c in enumerate(before) if rpdo(c))
            # cycle(): this SYNC alone; its TPDOs follow; read() returned them
            assert sorted(c for c in after if tpdo(c)) == sorted(tpdos)
            for a in range(3):
                data = next(rec[i + 1 + j][2] for j, c in enumerate(after) if c == 0x181 + a)
                counts = int.from_bytes(data[2:6], "little", signed=True)
                assert drives.cfg.axes[a].position_to_counts(read[k][a]) == counts
        assert drives.stats["withheld"] == 0 and drives.stats["late"] == 0
        assert sim.sync_count == drives.stats["syncs"]
    finally:
        drives.close()
        frames.close()
        sim.close()
