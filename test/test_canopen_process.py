"""``delta-drive-sim`` in a process of its own on ``udp_multicast`` (this host only, a port of
this test's own), the backend and the control loop in the test process:

* the README's example: homing and a pick-and-place cycle, without a fault;
* a drive set that freezes (SIGSTOP) during motion in cyclic synchronous torque mode and
  resumes (SIGCONT): the robot is quick-stopped and stays stopped, having run at most one
  period on its last torque, and recovers through reset.

The loop runs on bus time (``drives.bus_time``: one period per SYNC, the drives' simulated
time) and is cycled by the test, so nothing here depends on how fast this machine is; the
wall-clock supervision (heartbeat consumer time, SYNC watchdog) has generous limits.
"""
import os
import re
import signal
import time

import numpy as np
import pytest

from canopen_helpers import SimProcess, multicast_channel, wait_until
from delta_dynamics.rotary.dynamics import joint_state
from delta_dynamics.rotary.kinematics import inverse_kinematics
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.motion.trajectories import pick_place
from delta_hardware.canopen.backend import CanopenDriveSet
from delta_hardware.cia402 import State
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives import DriveState
from delta_hardware.trajectory_plan import build_plan

# wall-clock runs of drives in other processes: run alone (make test runs these after the parallel part)
pytestmark = pytest.mark.serial

pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (python-can[multicast])")

DT = 0.002
MODEL = RotaryModel.from_robot("nt_robot")
START = (-0.1525, 0.0, -0.78)


def _config(tmp_path, **sections):
    text = "base: generic_cia402\n" + "".join(f"{k}: {v}\n" for k, v in sections.items())
    p = tmp_path / "drives.yaml"
    p.write_text(text)
    return str(p)


class _Rig:
    def __init__(self, tmp_path, offset, **sections):
        self.channel = multicast_channel(offset)
        self.config = _config(tmp_path, **sections)
        self.sim = SimProcess("--interface", "udp_multicast", "--channel", self.channel,
                              "--drives-config", self.config)
        self.drives = None
        try:
            self.drives = CanopenDriveSet("nt_robot", "udp_multicast", self.channel, self.config, rate=1 / DT)
        except BaseException:
            self.sim.stop()
            raise
        self.loop = ControlLoop(MODEL, self.drives, LoopConfig(rate=1 / DT, feedforward="model",
                                                               max_stall=self.drives.max_stall))
        self.outs = []

    def cycle(self, n=1, sleep=0.0):
        for _ in range(n):
            self.outs.append(self.loop.cycle(self.drives.bus_time, elapsed=DT))
            if sleep:
                time.sleep(sleep)
        return self.outs[-1]

    def follow(self, plan, limit=20000):
        self.loop.submit_plan(plan)
        n0 = len(self.outs)
        for _ in range(limit):
            self.cycle()
            if not self.loop.is_following(plan) or self.loop.stopped_reason:
                break
        return self.outs[n0:]

    def close(self):
        if self.drives is not None:
            self.drives.close()
        out, err = self.sim.stop(signal.SIGINT)
        return self.sim.proc.returncode, out, err


def _enabled_time(out):
    return float(re.search(r"simulated, ([0-9.]+) s enabled\)", out).group(1))


def test_the_readme_example_runs_a_pick_and_place_cycle(tmp_path):
    rig = _Rig(tmp_path, 0, timing="{max_stall: 1.0, tpdo_timeout: 0.5, sdo_timeout: 1.0, startup_timeout: 5.0}",
               simulation="{sync_timeout: 10}")
    try:
        rig.loop.activate()
        now = rig.drives.bus_time
        q_start = inverse_kinematics(MODEL, np.array(START))
        rig.follow(build_plan(MODEL, now, rig.loop.current_setpoint(), now, [1.0], [q_start]))
        tr = pick_place(start=START, lift_time=0.12, move_time=0.3, overlap=0.6, dwell=0.05, cycles=1, dt=DT)
        q, qd, qdd = joint_state(MODEL, tr.X, tr.Xd, tr.Xdd)
        now, k = rig.drives.bus_time, tr.t > 0
        outs = rig.follow(build_plan(MODEL, now, rig.loop.current_setpoint(), now, tr.t[k], q[k], qd[k], qdd[k]))
        rig.cycle(100)
        events = [e for o in rig.outs for e in o.events]
        assert any("trajectory finished" in e for e in events) and not rig.loop.stopped_reason, events
        # CSP: the drives latch the targets one SYNC after they are written
        err = np.array([a.setpoint.q - np.array(b.position) for a, b in zip(outs, outs[1:])])
        assert np.sqrt(np.mean(err ** 2)) < 2e-3 and np.abs(err).max() < 1e-2
        np.testing.assert_allclose(rig.outs[-1].position, q[-1], atol=1e-3)
        assert rig.drives.stats["syncs"] == pytest.approx(rig.drives.bus_time / DT)
    finally:
        code, out, err = rig.close()
    assert code == 0 and out.endswith("bus closed") and "Traceback" not in err
    assert _enabled_time(out) == pytest.approx(rig.drives.stats["syncs"] * DT, abs=3 * DT)


def test_a_frozen_drive_set_is_quick_stopped_when_it_resumes(tmp_path):
    """CST, moving; the drives' process is stopped (SIGSTOP) until the backend has found them
    lost and stopped the robot, then continued (SIGCONT). The drives must not run on their
    last torque: at most ``timing.tpdo_misses`` SYNCs (lost frames tolerated) piled up for
    them while they were silent, and the quick stop rides on their RPDO before every SYNC
    until their statusword shows it. Counted in SYNCs, so a busy host changes nothing."""
    rig = _Rig(tmp_path, 1, mode="torque", timing="{max_stall: 0.5, tpdo_timeout: 0.05, sdo_timeout: 1.0, "
                                               "startup_timeout: 5.0}",
               simulation="{sync_timeout: 10}")
    sim, drives, loop = rig.sim, rig.drives, rig.loop
    stopped = False
    try:
        loop.activate()
        now = drives.bus_time
        plan = build_plan(MODEL, now, loop.current_setpoint(), now, [1.0], [[0.5, 0.4, 0.3]])
        loop.submit_plan(plan)
        rig.cycle(250)                                                  # half way: moving
        assert wait_until(lambda: not drives.cyclic.missing(), timeout=10)  # the answers to the last SYNC
        fb = drives.read()
        q0, qd0 = np.array(fb.position), np.array(fb.velocity)
        syncs_q0 = drives.stats["syncs"]                                # q0 is the state at this SYNC
        assert np.abs(qd0).max() > 0.2 and fb.state is DriveState.ENABLED

        os.kill(sim.pid, signal.SIGSTOP)
        stopped = True
        deadline = time.monotonic() + 20
        while not loop.stopped_reason and time.monotonic() < deadline:
            rig.cycle(sleep=DT)
        assert "drive fault" in loop.stopped_reason, loop.stopped_reason
        assert "heartbeat lost" in loop.stopped_reason or "no TPDO" in loop.stopped_reason
        syncs_running = drives.stats["syncs"]                           # every SYNC sent while running
        # SYNC went on through the lost frames tolerated, then waited for the silent drives
        assert syncs_running - syncs_q0 <= drives.cfg.tpdo_misses + 1
        assert [ax.quick_stop for ax in drives.axes] == ["sent"] * 3     # on the RPDO: not seen to hold
        rig.cycle(100, sleep=DT)                                        # the robot stays stopped meanwhile

        os.kill(sim.pid, signal.SIGCONT)
        stopped = False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(ax.quick_stop == "confirmed" for ax in drives.axes):
            rig.cycle(sleep=DT)
        assert [ax.quick_stop for ax in drives.axes] == ["confirmed"] * 3
        assert all("quick stop confirmed" in drives.diagnostics()[f"axis{i}"] for i in (1, 2, 3))
        assert wait_until(lambda: rig.cycle() and all(ax.cia_state is State.QUICK_STOP_ACTIVE
                                                      for ax in drives.axes), timeout=10)
        fb = drives.read()
        # moved for the SYNCs sent after q0 while running, and the one that latched the stop
        # (delta-drive-sim steps under the targets of the SYNC before): not for the time it was
        # frozen, nor the time it took to notice
        periods = syncs_running - syncs_q0 + 1
        assert np.abs(np.array(fb.position) - q0).max() <= periods * DT * np.abs(qd0).max() * 1.2 + 2e-4
        rig.cycle(100, sleep=DT)
        np.testing.assert_allclose(drives.read().position, fb.position, atol=1e-9)    # held

        loop.reset()                                                    # the cause is gone: recovers
        assert drives.state is DriveState.ENABLED
        syncs_at_enable = drives.stats["syncs"]
        now = drives.bus_time
        rig.follow(build_plan(MODEL, now, loop.current_setpoint(), now, [0.8], [[0.2, 0.2, 0.2]]))
        rig.cycle(100)
        np.testing.assert_allclose(rig.outs[-1].position, [0.2, 0.2, 0.2], atol=2e-3)
    finally:
        if stopped:
            os.kill(sim.pid, signal.SIGCONT)
        code, out, err = rig.close()
    assert code == 0 and out.endswith("bus closed"), f"{out}\n{err}"
    # the drives ran enabled through the SYNCs sent while running (before the freeze, and
    # after the reset), and one period more each time: never through the stopped ones
    running = syncs_running + drives.stats["syncs"] - syncs_at_enable
    assert (running - 4) * DT <= _enabled_time(out) <= (running + 2) * DT + 1e-6
