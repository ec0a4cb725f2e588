"""Speed of the dynamic model, against the targets of the foundation issue.

* single-sample inverse dynamics, as the control loop calls it every cycle (numpy (3,) arrays
  in): median and p99 per call over >= 20 000 calls, target <= 20 us;
* batch inverse dynamics, N = 100 000 samples in one call: samples per second,
  target >= 2 000 000 /s (for scale: MuJoCo's own inverse-dynamics call on an equivalent
  closed-chain model of this robot takes about 2.4 us, i.e. 0.4 M samples/s, on this machine);
* forward simulation with the fixed-step integrator at dt = 1 ms: simulated seconds per wall
  second, target >= 50x real time for ``semi-implicit`` (``rk4`` shown for reference);
* the control loop's one-sample feedforward (``cartesian_state`` + ``inverse_dynamics`` from
  the joint setpoint) called through the kind-free interface :mod:`delta_dynamics.algorithms`
  and directly on the kind's module, interleaved round by round so that a shared machine's
  load hits both alike: the cost of the dispatch, target <= 1 us.

Works for either kind of robot (``--robot colombo2020``: a linear Delta).

Each figure is the median of several rounds (the machine may be shared; run it when quiet).
Prints a Markdown table with the machine. ``python bench/bench_dynamics.py [--robot NAME]``.
"""
from __future__ import annotations

from _machine import mark, print_header, print_table  # bench/_machine.py
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import importlib  # noqa: E402

from delta_dynamics import algorithms  # noqa: E402
from delta_dynamics.algorithms import inverse_dynamics, sample_workspace, step  # noqa: E402
from delta_dynamics.kinds import model_for  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402

TARGET_SINGLE_US = 20.0
TARGET_BATCH = 2_000_000
TARGET_REALTIME = 50.0
TARGET_DISPATCH_US = 1.0


def states(m, n, seed=0, speed=0.5, accel=5.0):
    """n reachable platform states (X, X_dot, X_ddot) with moderate speeds and accelerations
    (normal, standard deviations ``speed`` m/s and ``accel`` m/s^2)."""
    rng = np.random.default_rng(seed)
    X = sample_workspace(m, min(n, 5000), seed=seed, min_measure=0.1)
    X = X[rng.integers(0, len(X), n)]
    return X, rng.normal(0.0, speed, (n, 3)), rng.normal(0.0, accel, (n, 3))


def bench_single(m, calls=20_000, rounds=3):
    """Per-call times (us) of inverse_dynamics on one sample with (3,) numpy arrays."""
    X, V, A = states(m, calls)
    rows = [(X[k].copy(), V[k].copy(), A[k].copy()) for k in range(calls)]
    clock = time.perf_counter_ns
    for x, v, a in rows[:2000]:                                   # warm up
        inverse_dynamics(m, x, v, a)
    results = []
    for _ in range(rounds):
        dts = np.empty(calls)
        for k, (x, v, a) in enumerate(rows):
            t0 = clock()
            inverse_dynamics(m, x, v, a)
            dts[k] = clock() - t0
        results.append((float(np.median(dts)) / 1e3, float(np.percentile(dts, 99)) / 1e3))
    results.sort()
    return results[len(results) // 2]                             # the round with the median median


def bench_batch(m, n=100_000, rounds=5, states=states):
    """Samples per second of inverse dynamics on ``n`` samples of ``states(m, n, seed)`` in one
    call (the median of ``rounds``)."""
    X, V, A = states(m, n, seed=1)
    inverse_dynamics(m, X[:10_000], V[:10_000], A[:10_000])       # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        inverse_dynamics(m, X, V, A)
        times.append(time.perf_counter() - t0)
    return n / statistics.median(times)


def bench_dispatch(m, calls=2000, rounds=15):
    """Median us per call of the control loop's feedforward path, (X, X_dot, X_ddot) =
    cartesian_state(q, q_dot, q_ddot) then inverse_dynamics, through
    :mod:`delta_dynamics.algorithms` and directly on the kind's dynamics module (the cost
    before the robot interface), interleaved per round. Returns (direct, algorithms)."""
    dyn = importlib.import_module(m.ops.kind.package + ".dynamics")
    X = algorithms.workspace_centre(m)
    q, qd, qdd = algorithms.joint_state(m, X + np.array([0.01, 0.0, 0.0]), np.array([0.1, 0.05, -0.1]),
                                        np.array([1.0, -0.5, 0.3]))

    def direct():
        Xa, Xd, Xdd = dyn.cartesian_state(m, q, qd, qdd)
        return dyn.inverse_dynamics(m, Xa, Xd, Xdd)

    def interface():
        Xa, Xd, Xdd = algorithms.cartesian_state(m, q, qd, qdd)
        return algorithms.inverse_dynamics(m, Xa, Xd, Xdd)

    assert np.array_equal(direct(), interface())
    clock = time.perf_counter_ns
    times = {direct: [], interface: []}
    for _ in range(rounds):
        for f in (direct, interface):
            t0 = clock()
            for _ in range(calls):
                f()
            times[f].append((clock() - t0) / calls / 1e3)
    return statistics.median(times[direct]), statistics.median(times[interface])


def _path(m, dt):
    """Two pick-and-place cycles in ``m``'s workspace: the standard cycle (25 mm up, 305 mm
    across) for a rotary robot; for a linear one scaled to its reach, at its home height."""
    if m.kind == "rotary":
        return pick_place(cycles=2, dt=dt)
    X0 = algorithms.workspace_centre(m)
    w = 0.5 * (m.R - m.r)
    return pick_place(start=(X0[0] - 0.5 * w, X0[1], X0[2]), height=0.1 * w, width=w, cycles=2, dt=dt)


def bench_simulation(m, method, seconds=2.0, rounds=5, dt=1e-3):
    """Simulated seconds per wall second at 1 kHz: the robot driven open loop by the
    inverse-dynamics torques of two pick-and-place cycles (restarted at the pick point every
    2.6 s, so it stays on the path however long it runs). ``step`` takes sequences of floats."""
    return simulation_speed(m, _path(m, dt), method, seconds, rounds, dt)


def simulation_speed(m, traj, method, seconds, rounds, dt):
    """Simulated seconds per wall second of the fixed ``step`` at ``dt``, the robot driven open
    loop by the inverse-dynamics efforts of ``traj`` (restarted at its first sample whenever
    it ends), the median of ``rounds`` runs of ``seconds``."""
    tau_ff = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd).tolist()
    start, v0 = tuple(traj.X[0].tolist()), tuple(traj.Xd[0].tolist())    # Python floats, not numpy scalars
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
            X, V = step(m, X, V, tau_ff[j], dt, method)
        speeds.append(steps * dt / (time.perf_counter() - t0))
    return statistics.median(speeds)


def model_rows(med, p99, batch, semi, rk4, kinematics=()) -> list:
    """The table rows every model benchmark has: single-sample inverse dynamics (median, p99,
    us), batch rate (samples/s), ``kinematics`` rows, then the simulation speeds (x real time)."""
    return [
        ("inverse dynamics, 1 sample (median)", f"{med:.1f} µs", f"≤ {TARGET_SINGLE_US:g} µs",
         mark(med <= TARGET_SINGLE_US)),
        ("inverse dynamics, 1 sample (p99)", f"{p99:.1f} µs", "", ""),
        ("inverse dynamics, batch N = 100 000", f"{batch / 1e6:.2f} M samples/s",
         f"≥ {TARGET_BATCH / 1e6:g} M/s", mark(batch >= TARGET_BATCH)),
        *kinematics,
        ("forward simulation, semi-implicit, 1 kHz", f"{semi:.0f}× real time",
         f"≥ {TARGET_REALTIME:g}×", mark(semi >= TARGET_REALTIME)),
        ("forward simulation, rk4, 1 kHz (reference)", f"{rk4:.0f}× real time", "", ""),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="nt_robot", help="robot preset or file (default: nt_robot)")
    ap.add_argument("--calls", type=int, default=20_000, help="single-sample calls per round")
    args = ap.parse_args(argv)
    m = model_for(args.robot)

    print_header(f"delta_dynamics benchmark ({args.robot})")

    med, p99 = bench_single(m, args.calls)
    batch = bench_batch(m)
    semi = bench_simulation(m, "semi-implicit")
    rk4 = bench_simulation(m, "rk4", seconds=1.0)
    direct, interface = bench_dispatch(m)
    cost = interface - direct

    rows = model_rows(med, p99, batch, semi, rk4) + [
        ("loop feedforward, 1 sample, kind's module (direct)", f"{direct:.2f} µs", "", ""),
        ("loop feedforward, 1 sample, delta_dynamics.algorithms", f"{interface:.2f} µs", "", ""),
        ("  cost of the robot interface (difference)", f"{cost:+.2f} µs",
         f"≤ {TARGET_DISPATCH_US:g} µs", mark(cost <= TARGET_DISPATCH_US)),
    ]
    print_table(("what", "measured", "target", ""), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
