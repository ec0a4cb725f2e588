"""Bench: CPU time per SYNC of the simulated CiA 402 drives (``delta-drive-sim``), 3 drives at
1 kHz, in cyclic synchronous position (CSP) and torque (CST) mode.

The simulated drives and the backend (the master) share one process on python-can's
``virtual`` interface; the master runs in lockstep (SYNC, wait for the TPDOs, RPDOs with new
targets) as fast as the drives answer. What is measured is the CPU time of the drives' bus
thread (every SYNC, RPDO and TPDO of the drives is handled there: physics, PDOs, python-can,
canopen), from the kernel's per-thread schedstat, divided by the SYNCs; and the CPU time of
the master's thread likewise. A digest of the feedback the master read shows that the
simulated results did not change.

With ``--udp`` the drives run as ``delta-drive-sim`` in a process of their own on
``udp_multicast`` (as in the CANopen example), and the CPU time of that whole process (every
thread: python-can's receiver, heartbeats, the watchdog) is what is measured.

    python bench/bench_drive_sim.py [--syncs 2000] [--udp] [--profile csp|cst]

One line for both modes; ``--profile`` prints a cProfile of the drives' SYNC handler instead.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from delta_hardware.canopen.backend import CanopenDriveSet  # noqa: E402
from delta_hardware.canopen.drive_sim import SimulatedCia402Drives  # noqa: E402

RATE = 1000.0
MODES = {"csp": "position", "cst": "torque"}


def thread_cpu_ns(tid: int, pid="self") -> int:
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


def process_cpu_ns(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += thread_cpu_ns(int(tid), pid)
        except OSError:
            pass
    return total


class SimProcess:
    """``delta-drive-sim`` in a process of its own."""

    def __init__(self, channel):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "delta_hardware.canopen.sim_cli", "--interface",
                                      "udp_multicast", "--channel", channel], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        if "Ctrl-C to stop" not in line:
            self.stop()
            raise RuntimeError(f"delta-drive-sim did not start: {line}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def run(mode: str, syncs: int, profile: bool = False, udp: bool = False):
    over = {"mode": MODES[mode], "timing": {"tpdo_timeout": 0.5, "sdo_timeout": 0.5},
            "heartbeat": {"timeout_ms": 2000}}
    if udp:
        channel = f"239.74.163.2:{46000 + os.getpid() % 1000}"
        proc, sim = SimProcess(channel), None
        drives = CanopenDriveSet("nt_robot", "udp_multicast", channel, "generic_cia402", rate=RATE,
                                 config_overrides=over)
        drives.lockstep()
        sim_cpu = lambda: process_cpu_ns(proc.proc.pid)      # noqa: E731
    else:
        channel = f"bench_drive_sim_{os.getpid()}_{mode}"
        proc, sim = None, SimulatedCia402Drives("nt_robot", "virtual", channel, "generic_cia402")
        drives = CanopenDriveSet("nt_robot", "virtual", channel, "generic_cia402", rate=RATE, config_overrides=over)
        sim_cpu = lambda: thread_cpu_ns(sim.network.notifier._readers[0].native_id)     # noqa: E731
    digest = hashlib.sha256()
    try:
        drives.enable()
        fb = drives.read()
        q0 = fb.position
        me = threading.get_native_id()
        prof = None
        handler = [0.0]
        if sim is not None and not profile:         # the SYNC handler alone: physics, TPDOs, latch
            on_sync = sim._on_sync

            def timed(*a):
                t = time.thread_time()
                on_sync(*a)
                handler[0] += time.thread_time() - t
            sim.network.unsubscribe(0x80, on_sync)
            sim.network.subscribe(0x80, timed)
        if profile:
            import cProfile
            prof = cProfile.Profile(time.thread_time)
            on_sync = sim._on_sync

            def profiled(*a):
                prof.runcall(on_sync, *a)
            sim._on_sync = profiled
            sim.network.unsubscribe(0x80, on_sync)
            sim.network.subscribe(0x80, profiled)
        warm = 200
        for k in range(warm + syncs):
            if k == warm:
                c_sim, c_me, t0, n0 = sim_cpu(), thread_cpu_ns(me), time.perf_counter(), drives.stats["syncs"]
                handler[0] = 0.0
            s = k * 1e-3
            if mode == "csp":
                q = [q0[i] + 0.05 * math.sin(2 * math.pi * (0.5 + 0.2 * i) * s) for i in range(3)]
                qd = [0.05 * 2 * math.pi * (0.5 + 0.2 * i) * math.cos(2 * math.pi * (0.5 + 0.2 * i) * s)
                      for i in range(3)]
                drives.write(position=q, velocity=qd, torque=[0.5, -0.3, 0.2])
            else:
                # a PD loop in the master around a slow sine (the feedback is deterministic too)
                ref = [q0[i] + 0.05 * math.sin(2 * math.pi * (0.5 + 0.2 * i) * s) for i in range(3)]
                drives.write(torque=[300.0 * (ref[i] - fb.position[i]) - 10.0 * fb.velocity[i] for i in range(3)])
            drives.cycle(1e-3)
            fb = drives.read()
            digest.update(repr((fb.position, fb.velocity, fb.torque, fb.state.value)).encode())
        c_sim, c_me = sim_cpu() - c_sim, thread_cpu_ns(me) - c_me
        wall, n = time.perf_counter() - t0, drives.stats["syncs"] - n0
        assert drives.stats["late"] == 0 and drives.stats["withheld"] == 0, drives.stats
        if prof is not None:
            import pstats
            pstats.Stats(prof).sort_stats(os.environ.get("SORT", "tottime")).print_stats(int(os.environ.get("TOP", "30")))
        return {"mode": mode, "syncs": n, "sim_us": c_sim / 1e3 / n, "master_us": c_me / 1e3 / n,
                "wall_us": wall * 1e6 / n, "handler_us": handler[0] * 1e6 / n, "digest": digest.hexdigest()[:12], "state": fb.state.value}
    finally:
        drives.close()
        if sim is not None:
            sim.close()
        if proc is not None:
            proc.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--syncs", type=int, default=2000)
    ap.add_argument("--profile", choices=sorted(MODES), default=None)
    ap.add_argument("--udp", action="store_true", help="delta-drive-sim in its own process on udp_multicast")
    a = ap.parse_args(argv)
    if a.profile:
        run(a.profile, a.syncs, profile=True)
        return
    load = open("/proc/loadavg").read().split()[0]
    parts = []
    for mode in MODES:
        r = run(mode, a.syncs, udp=a.udp)
        h = "" if a.udp else f" (SYNC handler {r['handler_us']:.0f})"
        parts.append(f"{mode}: drive-sim {r['sim_us']:.0f} us/SYNC{h}, master {r['master_us']:.0f} us/SYNC "
                     f"(wall {r['wall_us']:.0f} us, {r['state']}, digest {r['digest']})")
    where = "delta-drive-sim process, udp_multicast" if a.udp else "in-process, virtual"
    print(f"bench_drive_sim ({a.syncs} SYNC @ 1 kHz, 3 drives, {where}, load {load}): " + "; ".join(parts))


if __name__ == "__main__":
    main()
