"""Bench: the SYNC-driven CAN cycle at 500 Hz and 1 kHz, the simulated CiA 402 drives
(``delta-drive-sim``) in another process on python-can's ``udp_multicast`` interface
(TTL 0: this host only), the control loop thread of the hardware node as master.

For each rate and mode (CST: torque, CSP: position) the robot follows a joint trajectory for
``--seconds``; reported:

* SYNC period as sent by the master and as received by the drives (p50 / p99 / max, std);
* SYNC -> all TPDOs latency (the bus round trip the next read() depends on), late reads
  (TPDOs not all in when read() gave up waiting) and withheld cycles (no SYNC: the drives
  still owed the previous one's TPDOs);
* command-to-actual latency (CST): from the SYNC that latches a new target torque to the TPDO
  whose torque actual value shows it (the drives apply it for the period after that SYNC and
  report it with the next one: one period plus the bus round trip);
* tracking error of the trajectory.

``--in-process`` runs the simulated drives in this process on the ``virtual`` interface
instead (the fallback where multicast does not work). Results: stdout and
``out/bench_canopen.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_hardware.canopen.backend import CanopenDriveSet  # noqa: E402
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.loop_thread import LoopThread  # noqa: E402
from delta_hardware.trajectory_plan import build_plan  # noqa: E402


def stats_ms(x):
    x = np.asarray(x, float)
    if not len(x):
        return {}
    return {"p50": 1e3 * float(np.percentile(x, 50)), "p99": 1e3 * float(np.percentile(x, 99)),
            "max": 1e3 * float(x.max()), "std": 1e3 * float(x.std()), "n": int(len(x))}


class SimProcess:
    def __init__(self, interface, channel, config, *extra):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "delta_hardware.canopen.sim_cli", "--interface", interface,
             "--channel", channel, "--drives-config", config, *extra], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    break
                self.lines.append(line.rstrip())
                if "Ctrl-C to stop" in line:
                    return
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("delta-drive-sim did not start:\n" + "\n".join(self.lines))

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                out, _ = self.proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            self.lines += out.splitlines()
        return "\n".join(self.lines)


def plan_points(q0, seconds):
    """Back-and-forth joint moves around q0 for ``seconds``."""
    times, pts, t, k = [], [], 0.0, 0
    while t < seconds - 0.6:
        t += 0.6
        s = 0.25 if k % 2 == 0 else -0.05
        pts.append([q0[0] + s, q0[1] + 0.5 * s, q0[2] - 0.5 * s])
        times.append(t)
        k += 1
    return times, pts


def run(rate, mode, seconds, interface, channel, sim_in_process):
    model = RotaryModel.from_robot("nt_robot")
    drives = CanopenDriveSet("nt_robot", interface, channel, "generic_cia402", rate=rate,
                             simulate=sim_in_process, config_overrides={"mode": mode})
    events = []
    drives.recorder = lambda kind, t, data: events.append((kind, t, data))
    loop = ControlLoop(model, drives, LoopConfig(rate=rate, feedforward="model", max_stall=drives.max_stall))
    outs = []
    thread = LoopThread(loop, outs.append, clock=time.monotonic)
    try:
        loop.activate()
        thread.start()
        time.sleep(0.2)
        now = time.monotonic()
        times, pts = plan_points(loop.current_setpoint().q, seconds)
        loop.submit_plan(build_plan(model, now, loop.current_setpoint(), now, times, pts))
        time.sleep(seconds + 0.2)
        thread.stop()
        err = [np.abs(o.setpoint.q - np.array(o.position)).max() for o in outs if o.setpoint is not None]
        faults = [e for o in outs for e in o.events if "fault" in e or "quick stop" in e]
        sync_t = np.array([t for k, t, _ in events if k == "sync"])
        result = {
            "rate_hz": rate, "mode": mode, "seconds": seconds, "cycles": len(outs),
            "sync_period_master_ms": stats_ms(np.diff(sync_t[sync_t > sync_t[0] + 0.3])),
            "sync_to_tpdo_ms": drives.stats["latency"].summary(),
            "late_cycles": drives.stats["late"], "syncs": drives.stats["syncs"],
            "withheld_cycles": drives.stats["withheld"],
            "loop": loop.stats.summary(),
            "tracking_error_max_rad": float(max(err)) if err else None,
            "tracking_error_rms_rad": float(np.sqrt(np.mean(np.square(err)))) if err else None,
            "faults": faults, "bus_load_1mbit": drives.bus_load(1_000_000),
        }
        if mode == "torque":
            result["command_to_actual_ms"] = command_to_actual(events)
    finally:
        thread.stop()
        drives.close()
    return result


def command_to_actual(events):
    """For each SYNC that latched new target torques: the time until the TPDO whose torque
    actual value equals the target, looked for up to the SYNC after next (later or never:
    counted as unmatched, e.g. a target beyond the drive's max torque or a lost frame)."""
    lat, missed, prev = [], 0, None
    syncs = [(t, c) for k, t, c in events if k == "sync"]
    tpdos = [(t, d) for k, t, d in events if k == "tpdo" and "torque_actual" in d[1]]
    j = 0
    for n, (t, cmds) in enumerate(syncs):
        if cmds is None:
            prev = None
            continue
        end = syncs[n + 2][0] if n + 2 < len(syncs) else float("inf")
        while j < len(tpdos) and tpdos[j][0] < t:
            j += 1
        for axis in range(3):
            target = cmds[axis]["target_torque"]
            if prev is not None and prev[axis]["target_torque"] == target:
                continue                                  # unchanged: the match would be ambiguous
            hit = None
            for tt, (a, v) in tpdos[j:]:
                if tt >= end:
                    break
                if a == axis and v["torque_actual"] == target:
                    hit = tt
                    break
            if hit is None:
                missed += 1
            else:
                lat.append(hit - t)
        prev = cmds
    out = stats_ms(lat)
    out["unmatched"] = missed
    return out


def fmt(s):
    return f"{s.get('p50', float('nan')):.3f} / {s.get('p99', float('nan')):.3f} / {s.get('max', float('nan')):.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rates", type=float, nargs="*", default=[500.0, 1000.0])
    ap.add_argument("--modes", nargs="*", default=["torque", "position"])
    ap.add_argument("--in-process", action="store_true", help="simulated drives in this process (virtual bus)")
    ap.add_argument("--channel", default=f"239.74.163.2:{43200 + os.getpid() % 2000}",
                    help="udp_multicast group:port (a port of its own: Linux shares a port's groups)")
    a = ap.parse_args()
    from delta_hardware.loop_thread import realtime_friendly
    realtime_friendly()
    results = []
    transport = "virtual, drives in-process" if a.in_process else f"udp_multicast {a.channel}, drives in another process"
    for rate in a.rates:
        for mode in a.modes:
            sim = None
            if not a.in_process:
                try:
                    sim = SimProcess("udp_multicast", a.channel, "generic_cia402")
                except RuntimeError as e:
                    print(f"udp_multicast does not work here, falling back to the drives in this process "
                          f"on the virtual bus:\n{e}", flush=True)
                    a.in_process = True
                    transport = "virtual, drives in-process (fallback)"
            if a.in_process:
                interface, channel = "virtual", f"bench_{rate:g}_{mode}"
            else:
                interface, channel = "udp_multicast", a.channel
            try:
                r = run(rate, mode, a.seconds, interface, channel, a.in_process)
            finally:
                if sim is not None:
                    r_sim = sim.stop().splitlines()[-1]
            r["transport"] = transport
            if sim is not None:
                r["drive_sim"] = r_sim
            results.append(r)
            print(f"== {rate:g} Hz {mode}: {transport}")
            print(f"   SYNC period sent (ms p50/p99/max): {fmt(r['sync_period_master_ms'])}, "
                  f"std {r['sync_period_master_ms'].get('std', float('nan')):.3f}")
            if sim is not None:
                print(f"   drives: {r_sim}")
            print(f"   SYNC -> all TPDOs (ms p50/p99/max): {fmt(r['sync_to_tpdo_ms'])}; "
                  f"late reads {r['late_cycles']}, withheld cycles {r['withheld_cycles']}, SYNCs {r['syncs']}; "
                  f"loop overruns {r['loop'].get('overruns')}")
            if "command_to_actual_ms" in r:
                c = r["command_to_actual_ms"]
                print(f"   command -> actual (ms p50/p99/max): {fmt(c)} (n {c.get('n', 0)}, unmatched {c['unmatched']})")
            print(f"   tracking error max {r['tracking_error_max_rad']:.2e} rad, rms {r['tracking_error_rms_rad']:.2e} rad; "
                  f"bus load at 1 Mbit/s would be {100 * r['bus_load_1mbit']:.0f} %; faults: {r['faults'] or 'none'}",
                  flush=True)
    out = ROOT / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_canopen.json").write_text(json.dumps(results, indent=1))
    bad = [r for r in results if r["faults"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
