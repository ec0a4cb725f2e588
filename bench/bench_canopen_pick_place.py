"""Bench: the README's CANopen example, run by run, optionally on a saturated machine.

Each run: ``delta-drive-sim`` in its own process on ``udp_multicast`` (this host only, a port
of its own), the master in this process as the hardware node runs it (``CanopenDriveSet`` +
``ControlLoop`` in its ``LoopThread``, ``max_stall`` from the drives config), homing to the
pick position, then a pick-and-place plan (``delta_dynamics.motion.trajectories.pick_place``, the
cycle of ``delta-bringup --demo``) through ``build_plan``. A run passes if the plan finishes
without a fault or quick stop and the drive simulator exits cleanly (status 0, bus closed).

``--busy N`` starts N ``python3 -c 'while True: pass'`` processes for the whole bench (ended
by PID afterwards): with N = number of CPUs the machine is saturated.

Reported per run: faults, loop period (p50 / p99 / max), overruns, SYNCs sent / withheld,
late reads, tracking error (RMS, max), the drives' own SYNC statistics. Results: stdout and
``out/bench_canopen_pick_place.json``. Exit status 1 if a run failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_canopen import SimProcess  # noqa: E402
from delta_dynamics.rotary.dynamics import joint_state  # noqa: E402
from delta_dynamics.rotary.kinematics import inverse_kinematics  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402
from delta_hardware.canopen.backend import CanopenDriveSet  # noqa: E402
from delta_hardware.control_loop import ControlLoop, LoopConfig  # noqa: E402
from delta_hardware.loop_thread import LoopThread, realtime_friendly  # noqa: E402
from delta_hardware.drives import DriveError  # noqa: E402
from delta_hardware.trajectory_plan import build_plan  # noqa: E402

START = (-0.1525, 0.0, -0.78)


def pick_place_plan(model, loop, cycles: int, clock):
    """The demo's pick-and-place cycle as a joint plan (the robot at START), starting 0.5 s
    after now on ``clock`` (time to build it)."""
    tr = pick_place(start=START, lift_time=0.12, move_time=0.3, overlap=0.6, dwell=0.05, cycles=cycles, dt=2e-3)
    q, qd, qdd = joint_state(model, tr.X, tr.Xd, tr.Xdd)
    keep = tr.t > 0
    now = clock()
    return build_plan(model, now, loop.current_setpoint(), now + 0.5, tr.t[keep], q[keep], qd[keep], qdd[keep])


def wait_plan(loop, plan, outs, timeout):
    deadline = time.monotonic() + timeout
    while loop.is_following(plan) and not loop.stopped_reason and time.monotonic() < deadline:
        time.sleep(0.02)
    return not loop.is_following(plan) and not loop.stopped_reason


def one_run(k, args, channel, model):
    sim = SimProcess("udp_multicast", channel, args.drives_config, *(["--realtime"] if args.sim_realtime else []))
    outs = []
    drives = thread = None
    result = {"run": k + 1}
    try:
        drives = CanopenDriveSet(model.robot, "udp_multicast", channel, args.drives_config, rate=args.rate,
                                 config_overrides={"mode": args.mode})
        loop = ControlLoop(model, drives, LoopConfig(rate=args.rate, feedforward="model", max_stall=drives.max_stall))
        clock = (lambda: drives.bus_time) if args.clock == "bus" else time.monotonic
        thread = LoopThread(loop, outs.append, clock=clock)
        loop.activate()
        thread.start()
        now = clock()
        q_start = inverse_kinematics(model, np.array(START))
        home = build_plan(model, now, loop.current_setpoint(), now + 0.1, [1.5], [q_start])
        loop.submit_plan(home)
        ok = wait_plan(loop, home, outs, 30.0)
        n0 = len(outs)
        if ok:
            plan = pick_place_plan(model, loop, args.cycles, clock)
            loop.submit_plan(plan)
            ok = wait_plan(loop, plan, outs, 60.0)
        thread.stop()
        track = [np.abs(o.setpoint.q - np.array(o.position)) for o in outs[n0:] if o.setpoint is not None]
        st = loop.stats.summary()
        result.update({
            "finished": bool(ok), "stopped": loop.stopped_reason,
            "events": [e for o in outs for e in o.events if "finished" not in e][:10],
            "loop_period_ms": [round(st.get(f"period_{p}_ms", float("nan")), 3) for p in ("p50", "p99", "max")],
            "overruns": st.get("overruns"), "cycles": st.get("cycles"),
            "syncs": drives.stats["syncs"], "withheld": drives.stats["withheld"], "late": drives.stats["late"],
            "sync_to_tpdo_ms": {k: round(v, 3) for k, v in drives.stats["latency"].summary().items()},
            "tracking_rms_mrad": 1e3 * float(np.sqrt(np.mean(np.square(track)))) if track else None,
            "tracking_max_mrad": 1e3 * float(np.max(track)) if track else None,
        })
    except DriveError as e:
        result.update({"finished": False, "stopped": f"start-up: {e}"})
    finally:
        if thread is not None:
            thread.stop()
        if drives is not None:
            drives.close()
        last = sim.stop().splitlines()[-1]
        result["drive_sim"] = last
        result["drive_sim_exit"] = sim.proc.returncode
    result["ok"] = bool(result.get("finished")) and result["drive_sim_exit"] == 0 and "bus closed" in last
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=3, help="pick-and-place cycles per run")
    ap.add_argument("--busy", type=int, default=0, help="busy-loop processes to start (saturate the machine)")
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--mode", default="position", choices=("position", "torque"))
    ap.add_argument("--drives-config", default="generic_cia402")
    ap.add_argument("--clock", default="wall", choices=("wall", "bus"),
                    help="the loop's time base: wall (monotonic, as the hardware node) or bus (SYNCs x period)")
    ap.add_argument("--sim-realtime", action="store_true",
                    help="delta-drive-sim --realtime: the drives step by the time between SYNCs")
    ap.add_argument("--channel", default=f"239.74.163.2:{45000 + os.getpid() % 2000}",
                    help="udp_multicast group:port (a port of its own: Linux shares a port's groups)")
    a = ap.parse_args()
    realtime_friendly()
    model = RotaryModel.from_robot("nt_robot")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    results = []
    try:
        time.sleep(0.5 if busy else 0.0)
        load = os.getloadavg()[0]
        for k in range(a.runs):
            r = one_run(k, a, a.channel, model)
            r["load_1min"] = round(os.getloadavg()[0], 2)
            results.append(r)
            print(f"run {k + 1}: {'ok' if r['ok'] else 'FAILED'}  {r.get('stopped') or 'no fault'}; "
                  f"loop period p50/p99/max {r.get('loop_period_ms')} ms, overruns {r.get('overruns')}, "
                  f"SYNC {r.get('syncs')} (withheld {r.get('withheld')}, late reads {r.get('late')}), "
                  f"tracking rms {r.get('tracking_rms_mrad') or float('nan'):.2f} mrad "
                  f"max {r.get('tracking_max_mrad') or float('nan'):.2f} mrad, load {r['load_1min']}\n"
                  f"       {r['drive_sim']}", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    n_ok = sum(r["ok"] for r in results)
    print(f"{n_ok} of {len(results)} runs without a fault ({a.mode}, {a.rate:g} Hz, loop clock {a.clock}"
          f"{', drives stepping in real time' if a.sim_realtime else ''}, {a.busy} busy loops, "
          f"load average at start {load:.2f})")
    out = ROOT / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_canopen_pick_place.json").write_text(json.dumps(
        {"busy": a.busy, "rate": a.rate, "mode": a.mode, "clock": a.clock, "sim_realtime": a.sim_realtime,
         "runs": results}, indent=1))
    return 0 if n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
