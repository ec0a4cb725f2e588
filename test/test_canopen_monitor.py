"""Supervision alone (delta_hardware.canopen.monitor) against the simulated drives: heartbeat
consumer, EMCY, NMT state, a fault in the statusword, silent drives; and that the master's
own stalls are not blamed on the drives."""
import contextlib
import time

import pytest

from canopen_helpers import bare_axes, sim_on, unique_channel, wait_until
from delta_hardware import cia402
from delta_hardware.cia402 import State
from delta_hardware.canopen.monitor import Monitor

RATE = 500.0


@contextlib.contextmanager
def _monitored(**timing):
    channel = unique_channel()
    sim = sim_on(channel)
    net, axes, cfg = bare_axes(channel, overrides={"timing": {"max_stall": 0.1, **timing}})
    faults = {}
    mon = Monitor(axes, cfg, axes[0].lock, faults, RATE)
    for ax in axes:
        mon.attach(ax)
    try:
        for ax in axes:
            ax.write("producer_heartbeat_time", cfg.heartbeat_ms)      # 0x1017, as start-up does
            ax.node.nmt.state = "OPERATIONAL"
        assert wait_until(lambda: all(ax.hb_state == 5 for ax in axes), timeout=5.0)
        mon.active = True
        yield sim, mon, axes, faults
    finally:
        net.disconnect()
        sim.close()


def test_the_consumer_time_comes_from_producer_time_and_max_stall():
    with _monitored() as (sim, mon, axes, faults):
        assert mon.consumer_time == pytest.approx(2 * 0.100 + 0.1)           # 2 T_producer + max_stall
        assert mon.silence_limit == 50                                       # 0.1 s at 500 Hz
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:                                  # heartbeats keep coming
            mon.check()
            time.sleep(0.02)
        assert faults == {}


def test_a_lost_heartbeat_is_a_fault_naming_the_consumer_time():
    with _monitored() as (sim, mon, axes, faults):
        sim.stop_heartbeat(1)
        assert wait_until(lambda: mon.check() or 1 in faults, timeout=5.0)
        assert faults[1].startswith("heartbeat lost: none for ") and "(consumer time 300 ms), node 2" in faults[1]
        assert list(faults) == [1]


def test_the_masters_own_stall_is_not_a_lost_heartbeat():
    """Heartbeats that came while the master stalled may not be read yet when it resumes:
    after a control cycle more than max_stall late, they are judged from that cycle on."""
    with _monitored() as (sim, mon, axes, faults):
        sim.stop_heartbeat(0)                                # freeze axis 1's heartbeat time
        time.sleep(0.15)
        t = axes[0].hb_time
        mon.loop_cycle(t)
        mon.loop_cycle(t + 0.05)                             # normal cycles
        mon.check(t + 0.35)
        assert 0 in faults                                   # 350 ms > 300 ms: lost
        faults.clear()
        mon.loop_cycle(t + 0.40)                             # the loop came back after 350 ms
        mon.check(t + 0.45)
        assert 0 not in faults                               # not the drive's fault (yet)
        mon.check(t + 0.40 + 0.31)
        assert "heartbeat lost" in faults[0]                 # a consumer time after the stall: it is


def test_emcy_reboot_and_statusword_fault_are_named():
    with _monitored() as (sim, mon, axes, faults):
        sim.inject_fault(2, 0x2310)
        assert wait_until(lambda: 2 in faults)
        assert faults[2] == "EMCY 0x2310 (continuous over-current), error register 0x03, node 3"
        sim.reboot(0)
        assert wait_until(lambda: mon.check() or 0 in faults, timeout=5.0)
        assert faults[0].startswith("the drive left NMT operational (heartbeat reports ")
        with axes[1].lock:
            axes[1].values.update(statusword=cia402.encode_statusword(State.FAULT), error_code=0x8611)
        mon.check()
        assert faults[1] == "the drive is in fault, error code 0x8611 (following error), node 2"
        assert mon.emcy_log[0][:3] == (2, 0x2310, 0x03)


def test_a_silent_drive_is_lost_after_max_stall_in_cycles():
    with _monitored() as (sim, mon, axes, faults):
        for k in range(mon.silence_limit - 1):
            mon.count_silence({1})
        mon.count_silence(set())                             # it answered: count again from 0
        assert axes[1].silent_cycles == 0 and not faults
        for k in range(mon.silence_limit):
            assert mon.responsive(axes[1]) is (k <= mon.tolerance)      # lost frames tolerated (timing.tpdo_misses)
            mon.count_silence({1})
        assert axes[1].lost and faults[1] == "no TPDO for 50 cycles in a row (0.10 s; max_stall 100 ms), node 2"
        assert not mon.responsive(axes[1])                                  # no SDO wait for it
        mon.clear(axes[1])
        assert not axes[1].lost and 1 not in faults
