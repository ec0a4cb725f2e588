"""Speed of the linear Delta model, against the same targets as the rotary model:

* single-sample inverse dynamics as the control loop calls it every cycle (numpy (3,) arrays
  in): median and p99 per call over >= 20 000 calls, target <= 20 us;
* batch inverse dynamics, N = 100 000 samples in one call: samples per second,
  target >= 2 000 000 /s;
* single-sample forward kinematics (the loop's measured-state path), for reference;
* forward simulation with the fixed-step integrator at dt = 1 ms: simulated seconds per wall
  second, target >= 50x real time for ``semi-implicit`` (``rk4`` shown for reference).

Each figure is the median of several rounds (the machine may be shared; run it when quiet).
Prints a Markdown table with the machine. ``python bench/bench_linear.py [--robot NAME]``.
"""
from __future__ import annotations

from _machine import cpu_model  # bench/_machine.py
import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_dynamics.linear.dynamics import inverse_dynamics  # noqa: E402
from delta_dynamics.linear.kinematics import (forward_kinematics, inverse_kinematics,  # noqa: E402
                                                 sample_workspace, workspace_centre)
from delta_dynamics.linear.model import LinearModel  # noqa: E402
from delta_dynamics.linear.simulate import step  # noqa: E402
from delta_dynamics.motion.trajectories import lissajous  # noqa: E402

TARGET_SINGLE_US = 20.0
TARGET_BATCH = 2_000_000
TARGET_REALTIME = 50.0


def states(m, n, seed=0):
    """n reachable platform states (X, X_dot, X_ddot) with moderate speeds and accelerations."""
    rng = np.random.default_rng(seed)
    X = sample_workspace(m, min(n, 5000), seed=seed, min_measure=0.1)
    X = X[rng.integers(0, len(X), n)]
    scale = m.l
    return X, rng.normal(0.0, 1.0 * scale, (n, 3)), rng.normal(0.0, 10.0 * scale, (n, 3))


def per_call_us(fn, args, rounds=3):
    """(median, p99) per call in us, of the round with the median median."""
    clock = time.perf_counter_ns
    for a in args[:2000]:                                          # warm up
        fn(*a)
    results = []
    for _ in range(rounds):
        dts = np.empty(len(args))
        for k, a in enumerate(args):
            t0 = clock()
            fn(*a)
            dts[k] = clock() - t0
        results.append((float(np.median(dts)) / 1e3, float(np.percentile(dts, 99)) / 1e3))
    results.sort()
    return results[len(results) // 2]


def bench_batch(m, n=100_000, rounds=5):
    X, V, A = states(m, n, seed=1)
    inverse_dynamics(m, X[:10_000], V[:10_000], A[:10_000])       # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        inverse_dynamics(m, X, V, A)
        times.append(time.perf_counter() - t0)
    return n / statistics.median(times)


def bench_simulation(m, method, seconds=2.0, rounds=5, dt=1e-3):
    """Simulated seconds per wall second at 1 kHz: the robot driven open loop by the
    inverse-dynamics forces of the paper's Lissajous at 200 mm/s (restarted at its first point
    when it ends). ``step`` takes sequences of floats."""
    amp = 0.3 * (m.R - m.r)
    z = float(workspace_centre(m)[2])
    traj = lissajous(speed=0.2, x0=amp, y0=amp, depth=z, dt=dt, timing="arc-length")
    f_ff = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd).tolist()
    start, v0 = tuple(traj.X[0].tolist()), tuple(traj.Xd[0].tolist())
    n = len(traj)
    steps = int(round(seconds / dt))
    speeds = []
    for _ in range(rounds):
        X, V = start, v0
        t0 = time.perf_counter()
        for k in range(steps):
            j = k % n
            if j == 0:
                X, V = start, v0
            X, V = step(m, X, V, f_ff[j], dt, method)
        speeds.append(steps * dt / (time.perf_counter() - t0))
    return statistics.median(speeds)


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="colombo2020", help="linear Delta preset or file (default: colombo2020)")
    ap.add_argument("--calls", type=int, default=20_000, help="single-sample calls per round")
    args = ap.parse_args(argv)
    m = LinearModel.from_robot(args.robot)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"# delta_dynamics.linear benchmark ({args.robot}), {datetime.date.today().isoformat()}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, load average {load[0]:.2f} at start")
    print(f"python {platform.python_version()}, numpy {np.__version__}\n", flush=True)

    X, V, A = states(m, args.calls)
    rows_id = [(m, X[k].copy(), V[k].copy(), A[k].copy()) for k in range(args.calls)]
    med, p99 = per_call_us(inverse_dynamics, rows_id)
    q = inverse_kinematics(m, X)
    fk_med, _ = per_call_us(forward_kinematics, [(m, q[k].copy()) for k in range(args.calls)])
    batch = bench_batch(m)
    semi = bench_simulation(m, "semi-implicit")
    rk4 = bench_simulation(m, "rk4", seconds=1.0)

    rows = [
        ("inverse dynamics, 1 sample (median)", f"{med:.1f} µs", f"≤ {TARGET_SINGLE_US:g} µs",
         mark(med <= TARGET_SINGLE_US)),
        ("inverse dynamics, 1 sample (p99)", f"{p99:.1f} µs", "", ""),
        ("inverse dynamics, batch N = 100 000", f"{batch / 1e6:.2f} M samples/s",
         f"≥ {TARGET_BATCH / 1e6:g} M/s", mark(batch >= TARGET_BATCH)),
        ("forward kinematics, 1 sample (median)", f"{fk_med:.1f} µs", "", ""),
        ("forward simulation, semi-implicit, 1 kHz", f"{semi:.0f}× real time",
         f"≥ {TARGET_REALTIME:g}×", mark(semi >= TARGET_REALTIME)),
        ("forward simulation, rk4, 1 kHz (reference)", f"{rk4:.0f}× real time", "", ""),
    ]
    w = [max(len(r[i]) for r in rows + [("what", "measured", "target", "")]) for i in range(4)]
    head = ("what", "measured", "target", "")
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
