"""Time-optimal pick cycles (``delta_dynamics.motion``) against today's planner and an
independent bound.

For each robot, the pick-and-place cycle (rotary: 25 mm up, 305 mm across, 25 mm down, 780 mm
below the base, the demo's; the linear colombo2020: 25 mm up, 100 mm across, 25 mm down around
its workspace centre, a stroke its Kossel Mini frame holds), corners blended over 10 mm,
50 ms dwell at each end:

* **time-optimal**: ``plan_legs`` (TOPP-RA on the model's limits, friction in), cycle time;
* **today's planner at the same limits**: the trajectory generator's septic-profile cycle
  (``delta-dynamics trajectory pick-place``, :func:`delta_dynamics.motion.trajectories.pick_place`)
  with its lift time, move time and overlap chosen as short as the same joint velocity,
  acceleration and effort limits allow (friction in; a grid search with bisection on the move
  time, checked on 0.5 ms samples); the demo's own timing (lift 0.12 s, move 0.3 s, overlap
  0.6) is shown for reference with the largest share of a limit it asks for;
* **independent bound**: the time-optimal leg computed here, without toppra: the exact
  constraints (the model's inverse dynamics with its friction law, no linearisation) on a
  uniform grid of :data:`BOUND_GRID` points, the maximum-velocity curve by bisection, then the
  classic numerical integration: backward at the largest deceleration from the end, forward at
  the largest acceleration from the start, each capped by the other (explicit Euler in s);
  the difference to a grid of half the size says its discretisation error;
* **planning time** per cycle (both legs; median wall and CPU time of :data:`ROUNDS` rounds),
  and how it grows with the path length (doors 50 mm to 0.5 m across) and the number of
  points of a ``retime`` path (the same door through 10 to 100 000 points);
* a plot (``docs/images/motion_pick.png``): path speed and each joint's effort against its
  limit over one cycle, per robot.

Prints Markdown tables with the machine and its load. Targets: cycle >= 25 % shorter than
today's planner, within 1 % of the bound, planning <= 50 ms per cycle.
``python bench/bench_motion.py [--quick] [--no-plot]`` (``--quick``: coarser bound, fewer rounds).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _machine import describe  # noqa: E402
from delta_dynamics.algorithms import (UnreachableError, inverse_dynamics, inverse_kinematics,  # noqa: E402
                                       joint_state, joint_units, workspace_centre)
from delta_dynamics.kinds import model_for  # noqa: E402
from delta_dynamics.motion import door_path, plan_legs, retime  # noqa: E402
from delta_dynamics.motion.pick import plan_pick  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402

ROBOTS = ("nt_robot", "d3s800", "colombo2020")
HEIGHT, BLEND, DWELL = 0.025, 0.01, 0.05
BOUND_GRID = 10_000
ROUNDS = 7
TARGET_SHORTER = 0.25
TARGET_BOUND = 0.01
TARGET_PLAN_MS = 50.0
#: The demo's timing of today's planner (delta_bringup.demo).
DEMO_TIMING = dict(lift=0.12, move=0.3, overlap=0.6)


def cycle_points(robot: str):
    """(start, end) of the benchmark cycle (module docstring)."""
    if robot == "colombo2020":
        c = workspace_centre(model_for(robot))
        return c + [-0.05, 0.0, 0.0], c + [0.05, 0.0, 0.0]
    start = np.array([-0.1525, 0.0, -0.78])
    return start, start + [0.305, 0.0, 0.0]


# ----------------------------------------------------------------------------- independent bound

def _u_interval(m, X, X1, X2, x, lim):
    """Admissible s_ddot interval at one point for s_dot^2 = x, from the model directly."""
    sd = math.sqrt(max(x, 0.0))
    Xd = X1 * sd
    A0 = X2 * x
    _, qd, qdd0 = joint_state(m, X, Xd, A0)
    _, _, qdd1 = joint_state(m, X, Xd, A0 + X1)
    t0 = inverse_dynamics(m, X, Xd, A0)
    t1 = inverse_dynamics(m, X, Xd, A0 + X1)
    lo, hi = -math.inf, math.inf
    for j in range(3):
        if abs(qd[j]) > lim[0][j] * (1 + 1e-12):
            return math.inf, -math.inf
        for v0, k, L in ((qdd0[j], qdd1[j] - qdd0[j], lim[1][j]), (t0[j], t1[j] - t0[j], lim[2][j])):
            if k > 0:
                lo, hi = max(lo, (-L - v0) / k), min(hi, (L - v0) / k)
            elif k < 0:
                lo, hi = max(lo, (L - v0) / k), min(hi, (-L - v0) / k)
            elif abs(v0) > L:
                return math.inf, -math.inf
    return lo, hi


def _feasible_many(m, X, X1, X2, x, lim):
    """Vectorised: is the s_ddot interval non-empty (and the speed within the limits) at x?"""
    sd = np.sqrt(x)[:, None]
    Xd, A0 = X1 * sd, X2 * x[:, None]
    _, qd, qdd0 = joint_state(m, X, Xd, A0)
    _, _, qdd1 = joint_state(m, X, Xd, A0 + X1)
    t0 = inverse_dynamics(m, X, Xd, A0)
    t1 = inverse_dynamics(m, X, Xd, A0 + X1)
    lo = np.full(len(x), -np.inf)
    hi = np.full(len(x), np.inf)
    ok = (np.abs(qd) <= np.asarray(lim[0]) * (1 + 1e-12)).all(axis=1)
    for v0, k, L in ((qdd0, qdd1 - qdd0, np.asarray(lim[1])), (t0, t1 - t0, np.asarray(lim[2]))):
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = (-L - v0) / k, (L - v0) / k
        lo = np.maximum(lo, np.where(k > 0, a, np.where(k < 0, b, -np.inf)).max(axis=1))
        hi = np.minimum(hi, np.where(k > 0, b, np.where(k < 0, a, np.inf)).min(axis=1))
        ok &= ~((k == 0) & (np.abs(v0) > L)).any(axis=1)
    return ok & (lo <= hi)


def independent_bound(m, path, n: int = BOUND_GRID) -> float:
    """Time-optimal rest-to-rest duration (s) of ``path`` by numerical integration on ``n``
    intervals (module docstring). ``m``'s friction is in the efforts as the model has it."""
    lim = (np.asarray(m.robot.limits.velocity, float), np.asarray(m.robot.limits.acceleration, float),
           np.asarray(m.robot.limits.effort, float))
    s = np.linspace(0.0, path.length, n + 1)
    ds = s[1] - s[0]
    X, X1, X2 = path.evaluate(s + path.breakpoints[0])
    q1 = joint_state(m, X, X1)[1]
    x_hi = np.min((lim[0] / np.maximum(np.abs(q1), 1e-300)) ** 2, axis=1)
    x_lo = np.zeros(n + 1)
    top = _feasible_many(m, X, X1, X2, x_hi, lim)
    for _ in range(60):                                    # the maximum-velocity curve
        mid = 0.5 * (x_lo + x_hi)
        ok = _feasible_many(m, X, X1, X2, mid, lim)
        x_lo, x_hi = np.where(ok, mid, x_lo), np.where(ok, x_hi, mid)
    mvc = np.where(top, x_hi, x_lo)
    Xl, X1l, X2l = ([tuple(r) for r in a] for a in (X, X1, X2))
    ar = np.asarray
    K = np.empty(n + 1)
    K[n] = 0.0
    for i in range(n - 1, -1, -1):                         # backward: largest deceleration
        lo, hi = _u_interval(m, ar(Xl[i + 1]), ar(X1l[i + 1]), ar(X2l[i + 1]), K[i + 1], lim)
        K[i] = min(mvc[i], K[i + 1] - 2 * ds * lo) if lo <= hi else mvc[i]
    x = np.empty(n + 1)
    x[0] = 0.0
    for i in range(n):                                     # forward: largest acceleration
        lo, hi = _u_interval(m, ar(Xl[i]), ar(X1l[i]), ar(X2l[i]), x[i], lim)
        x[i + 1] = max(min(K[i + 1], x[i] + 2 * ds * hi) if lo <= hi else K[i + 1], 0.0)
    sd = np.sqrt(x)
    return float(np.sum(2 * ds / (sd[:-1] + sd[1:])))


# ----------------------------------------------------------------------------- today's planner

def septic_ratio(m, start, width, height, lift, move, overlap, dt=5e-4) -> float:
    """Largest share of a joint limit (velocity, acceleration, effort) the septic-profile cycle
    asks for (inf where it leaves the workspace or the joint position limits)."""
    tr = pick_place(start=tuple(start), height=height, width=width, lift_time=lift, move_time=move,
                    overlap=overlap, dwell=0.0, cycles=1, dt=dt)
    try:
        inverse_kinematics(m, tr.X, check_limits=True)
        _, qd, qdd = joint_state(m, tr.X, tr.Xd, tr.Xdd)
        tau = inverse_dynamics(m, tr.X, tr.Xd, tr.Xdd)
    except UnreachableError:
        return math.inf
    lim = m.robot.limits
    return float(max((np.abs(qd) / np.asarray(lim.velocity)).max(), (np.abs(qdd) / np.asarray(lim.acceleration)).max(),
                     (np.abs(tau) / np.asarray(lim.effort)).max()))


def todays_fastest(m, start, end, height=HEIGHT, quick=False):
    """The shortest septic-profile leg (lift + move, s) within the limits: (leg, lift, move,
    overlap). For each overlap of a grid: the shortest move time for a lift time by bisection,
    lift times on a geometric grid, then a bounded golden-section search around the best of
    them."""
    from scipy.optimize import minimize_scalar
    width = float(np.linalg.norm(np.asarray(end) - start))

    def min_move(lift, overlap):
        lo, hi = 0.01, 2.0
        if septic_ratio(m, start, width, height, lift, hi, overlap) > 1:
            return math.inf
        for _ in range(14 if quick else 18):
            mid = 0.5 * (lo + hi)
            if septic_ratio(m, start, width, height, lift, mid, overlap) <= 1:
                hi = mid
            else:
                lo = mid
        return hi

    best = (math.inf, None, None, None)
    overlaps = (0.3, 0.5, 0.7) if quick else (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    lifts = np.geomspace(0.03, 0.3, 8 if quick else 12)
    for overlap in overlaps:
        legs = [lift + min_move(lift, overlap) for lift in lifts]
        k = int(np.argmin(legs))
        lo, hi = lifts[max(k - 1, 0)], lifts[min(k + 1, len(lifts) - 1)]
        res = minimize_scalar(lambda lift: min(lift + min_move(lift, overlap), 10.0), bounds=(lo, hi),
                              method="bounded",
                              options={"xatol": 5e-4 if quick else 1e-4, "maxiter": 12 if quick else 20})
        for leg, lift in ((legs[k], lifts[k]), (float(res.fun), float(res.x))):
            if leg < best[0]:
                best = (leg, lift, leg - lift, overlap)
    return best


# ----------------------------------------------------------------------------- timing

def planning_times(m, start, end, rounds=ROUNDS):
    """(median wall ms, median CPU ms) of planning both legs of one cycle."""
    plan_legs(m, start, end, HEIGHT, BLEND)                 # imports, caches
    wall, cpu = [], []
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        plan_legs(m, start, end, HEIGHT, BLEND)
        wall.append(1e3 * (time.perf_counter() - w0))
        cpu.append(1e3 * (time.process_time() - c0))
    return statistics.median(wall), statistics.median(cpu)


def growth_rows(robot="d3s800", rounds=3):
    """Planning time and duration against the path length and the number of points."""
    m = model_for(robot)
    start, _ = cycle_points(robot)
    rows = []
    for width in (0.05, 0.1, 0.2, 0.305, 0.5):
        end = start + [width, 0.0, 0.0]
        p = door_path(start, end, HEIGHT, BLEND)
        times = []
        for _ in range(rounds):
            c0 = time.process_time()
            from delta_dynamics.motion import retime_path
            tm = retime_path(m, p)
            times.append(1e3 * (time.process_time() - c0))
        rows.append(("length", f"{p.length:.3f} m", len(tm.s) - 1, tm.duration, statistics.median(times)))
    door = door_path(start, start + [0.305, 0.0, 0.0], HEIGHT, BLEND)
    for n in (10, 100, 1000, 10_000, 100_000):
        pts = door.position(np.linspace(0.0, door.length, n))
        times = []
        for _ in range(rounds):
            c0 = time.process_time()
            tm = retime(m, pts)
            times.append(1e3 * (time.process_time() - c0))
        rows.append(("points", f"{n}", len(tm.s) - 1, tm.duration, statistics.median(times)))
    return rows


# ----------------------------------------------------------------------------- plot

def fmt_num(v) -> str:
    return f"{v:g}"


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(results), figsize=(5.2 * len(results) + 2.2, 6.4), sharex="col",
                             squeeze=False)
    colours = ("tab:blue", "tab:orange", "tab:green")
    for c, (robot, r) in enumerate(results.items()):
        plan = r["plan"]
        mo = plan.motion
        units = joint_units(plan.legs[0].model)
        lim = mo.report.limits
        ax = axes[0, c]
        ax.plot(mo.t, np.linalg.norm(mo.Xd, axis=1), color="k", lw=1.2, label="platform speed")
        start, end = cycle_points(robot)
        width = np.linalg.norm(np.asarray(end) - start)
        ax.set_title(f"{robot}: {HEIGHT * 1e3:.0f}/{width * 1e3:.0f}/{HEIGHT * 1e3:.0f} mm, "
                     f"{plan.cycle_time * 1e3:.0f} ms per cycle", fontsize=10)
        ax.set_ylabel("path speed [m/s]")
        ax.grid(alpha=0.3)
        ax = axes[1, c]
        names = plan.legs[0].model.joint_names
        styles = (dict(lw=2.6, alpha=0.55), dict(lw=1.0), dict(lw=1.0, ls=(0, (4, 1.5))))
        for j in range(3):
            ax.plot(mo.t, mo.effort[:, j], color=colours[j], label=f"{names[j]} {units['effort_name']}",
                    **styles[j])
        for j in range(3):
            for sign in (1, -1):
                ax.axhline(sign * lim.effort[j], color="k", ls="--", lw=0.8)
        ax.plot([], [], color="k", ls="--", lw=0.8,
                label=f"{units['effort_name']} limit ±{fmt_num(lim.effort.max())} {units['effort']}")
        ax.set_ylabel(f"{units['effort_name']} [{units['effort']}]")
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8, frameon=False)
        for t0, t1, label in mo.report.merged(0.002):
            if label == "rest":
                for a in axes[:, c]:
                    a.axvspan(t0, t1, color="0.92", lw=0)
    axes[0, -1].plot([], [], color="0.85", lw=6, label="dwell (gripper)")
    axes[0, -1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.suptitle("Time-optimal pick-and-place cycles (TOPP-RA on the explicit model, friction in): path "
                 "speed and each joint's effort against its limit (two joints placed symmetrically about "
                 "the path coincide)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- main

def run(quick=False, robots=ROBOTS, bound_grid=None):
    """The figures of every robot: a dict robot -> results (times in s, planning in ms)."""
    grid = bound_grid or (2_000 if quick else BOUND_GRID)
    results = {}
    for robot in robots:
        m = model_for(robot)
        start, end = cycle_points(robot)
        plan = plan_pick(m, start, end, HEIGHT, BLEND, DWELL)
        there, back = plan.legs
        bounds = [independent_bound(m, leg.path, grid) for leg in plan.legs]
        coarse = [independent_bound(m, leg.path, grid // 2) for leg in plan.legs]
        leg_today, lift, move, overlap = todays_fastest(m, start, end, quick=quick)
        width = float(np.linalg.norm(end - start))
        demo_ratio = septic_ratio(m, start, width, HEIGHT, **DEMO_TIMING)
        wall, cpu = planning_times(m, start, end, rounds=3 if quick else ROUNDS)
        results[robot] = {
            "plan": plan,
            "legs": (there.duration, back.duration),
            "cycle": plan.cycle_time,
            "bound_legs": tuple(bounds),
            "bound_cycle": sum(bounds) + 2 * DWELL,
            "bound_error": max(abs(a - b) for a, b in zip(bounds, coarse)),
            "today_leg": leg_today, "today_lift": lift, "today_move": move, "today_overlap": overlap,
            "today_cycle": 2 * leg_today + 2 * DWELL,
            "demo_cycle": 2 * (DEMO_TIMING["lift"] + DEMO_TIMING["move"]) + 2 * DWELL,
            "demo_ratio": demo_ratio,
            "plan_wall_ms": wall, "plan_cpu_ms": cpu,
            "max_ratio": plan.motion.report.max_ratio,
            "passes": (there.passes, back.passes), "grid": (len(there.s) - 1, len(back.s) - 1),
        }
    return results


def table(results) -> str:
    head = ("| robot | time-optimal cycle | today's planner, same limits | shorter by | independent bound | "
            "above the bound | planning per cycle (wall / CPU) | largest share of a limit |\n"
            "|---|---|---|---|---|---|---|---|\n")
    rows = []
    for robot, r in results.items():
        rows.append(
            f"| {robot} | {r['cycle'] * 1e3:.1f} ms ({r['legs'][0] * 1e3:.1f} + {r['legs'][1] * 1e3:.1f} ms moving) "
            f"| {r['today_cycle'] * 1e3:.1f} ms (lift {r['today_lift'] * 1e3:.0f} ms, move {r['today_move'] * 1e3:.0f} ms, "
            f"overlap {r['today_overlap']:g}) | {100 * (1 - r['cycle'] / r['today_cycle']):.1f} % "
            f"| {r['bound_cycle'] * 1e3:.1f} ms | {100 * (r['cycle'] / r['bound_cycle'] - 1):.2f} % "
            f"| {r['plan_wall_ms']:.0f} / {r['plan_cpu_ms']:.0f} ms | {r['max_ratio']:.4f} |")
    return head + "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="coarser bound and search, fewer rounds")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--plot", default="docs/images/motion_pick.png")
    ap.add_argument("--json", default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    print(f"machine: {describe()}", flush=True)
    results = run(args.quick)
    print(f"\nPick-and-place cycle (dwell {DWELL * 1e3:.0f} ms at each end; rotary 25/305/25 mm, colombo2020 "
          f"25/100/25 mm, blend {BLEND * 1e3:.0f} mm; bound on {2_000 if args.quick else BOUND_GRID} intervals):\n")
    print(table(results))
    for robot, r in results.items():
        print(f"\n{robot}: passes {r['passes']}, grid {r['grid']}, bound discretisation error "
              f"{r['bound_error'] * 1e6:.0f} us per leg; demo timing (lift 0.12 s, move 0.3 s, overlap 0.6): cycle "
              f"{r['demo_cycle'] * 1e3:.0f} ms, asks for {r['demo_ratio']:.2f} of a limit")
    print("\nGrowth (d3s800, CPU time of one retime):\n\n| by | value | grid intervals | duration | planning CPU |\n"
          "|---|---|---|---|---|")
    for by, value, grid, dur, ms in growth_rows():
        print(f"| {by} | {value} | {grid} | {dur * 1e3:.1f} ms | {ms:.0f} ms |")
    print(f"\nmachine after: {describe()}")
    ok = True
    for robot, r in results.items():
        shorter = 1 - r["cycle"] / r["today_cycle"]
        above = r["cycle"] / r["bound_cycle"] - 1
        for what, good in ((f"{robot}: {100 * shorter:.1f} % shorter than today's (target >= 25 %)", shorter >= TARGET_SHORTER),
                           (f"{robot}: {100 * above:.2f} % above the bound (target <= 1 %)", above <= TARGET_BOUND),
                           (f"{robot}: planning {r['plan_wall_ms']:.0f} ms wall per cycle (target <= 50 ms)",
                            r["plan_wall_ms"] <= TARGET_PLAN_MS)):
            print(("ok    " if good else "MISS  ") + what)
            ok &= good
    if args.json:
        Path(args.json).write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "plan"}
                                               for k, v in results.items()}, indent=1, default=float))
    if not args.no_plot:
        plot(results, Path(args.plot))
        print(f"wrote {args.plot}")
    print("all targets met" if ok else "some targets missed (see MISS above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
