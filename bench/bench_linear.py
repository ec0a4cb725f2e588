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

from _machine import print_header, print_table  # bench/_machine.py
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_dynamics.linear.dynamics import inverse_dynamics  # noqa: E402
from delta_dynamics.linear.kinematics import forward_kinematics, inverse_kinematics, workspace_centre  # noqa: E402
from delta_dynamics.linear.model import LinearModel  # noqa: E402
from delta_dynamics.motion.trajectories import lissajous  # noqa: E402
from bench_dynamics import bench_batch, model_rows, simulation_speed  # noqa: E402
from bench_dynamics import states as platform_states  # noqa: E402  (bench/bench_dynamics.py)


def states(m, n, seed=0):
    """n reachable platform states (X, X_dot, X_ddot), speeds and accelerations scaled to the
    rods (standard deviations l m/s and 10 l m/s^2)."""
    return platform_states(m, n, seed, speed=m.l, accel=10.0 * m.l)


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


def bench_simulation(m, method, seconds=2.0, rounds=5, dt=1e-3):
    """Simulated seconds per wall second at 1 kHz: the robot driven open loop by the
    inverse-dynamics forces of the paper's Lissajous at 200 mm/s (restarted at its first point
    when it ends). ``step`` takes sequences of floats."""
    amp = 0.3 * (m.R - m.r)
    z = float(workspace_centre(m)[2])
    traj = lissajous(speed=0.2, x0=amp, y0=amp, depth=z, dt=dt, timing="arc-length")
    return simulation_speed(m, traj, method, seconds, rounds, dt)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="colombo2020", help="linear Delta preset or file (default: colombo2020)")
    ap.add_argument("--calls", type=int, default=20_000, help="single-sample calls per round")
    args = ap.parse_args(argv)
    m = LinearModel.from_robot(args.robot)

    print_header(f"delta_dynamics.linear benchmark ({args.robot})")

    X, V, A = states(m, args.calls)
    rows_id = [(m, X[k].copy(), V[k].copy(), A[k].copy()) for k in range(args.calls)]
    med, p99 = per_call_us(inverse_dynamics, rows_id)
    q = inverse_kinematics(m, X)
    fk_med, _ = per_call_us(forward_kinematics, [(m, q[k].copy()) for k in range(args.calls)])
    batch = bench_batch(m, states=states)
    semi = bench_simulation(m, "semi-implicit")
    rk4 = bench_simulation(m, "rk4", seconds=1.0)

    rows = model_rows(med, p99, batch, semi, rk4,
                      kinematics=[("forward kinematics, 1 sample (median)", f"{fk_med:.1f} µs", "", "")])
    print_table(("what", "measured", "target", ""), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
