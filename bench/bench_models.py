"""How far apart the dynamic models are, and what each costs.

* Differences: rigid-body torques (no joint friction) of every available model of
  :mod:`delta_dynamics.compare` against the explicit model, on ``nt_robot``, ``d3s800`` and
  ``staicu2003``, along a circle and a pick-and-place cycle sized to each robot (and, for
  ``staicu2003``, the paper's ellipse): RMS and max difference in % of the explicit model's
  peak |tau|, as ``delta-dynamics compare`` prints them.
* Runtime per sample of each model: a batch call on N = 20 000 random workspace states
  (median of rounds, per sample) and single calls with (3,) numpy arrays (median per call).
  Models only known through the registry (multibody, mujoco when present) are timed through
  their registry function on the batch (that includes building the model).

Prints Markdown tables with the machine. ``python bench/bench_models.py [--quick]``.
"""
from __future__ import annotations

from _machine import describe  # bench/_machine.py
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_core.robot_file import load_robot  # noqa: E402
from delta_dynamics import compare as cmp  # noqa: E402
from delta_dynamics.reference import staicu  # noqa: E402
from delta_dynamics.rotary import dynamics  # noqa: E402
from delta_dynamics.rotary.kinematics import inverse_kinematics, sample_workspace  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.motion.trajectories import Trajectory, circle, ellipse, pick_place  # noqa: E402

ROBOTS = ("nt_robot", "d3s800", "staicu2003")


def trajectories(robot: str, dt: float):
    """The circle (from rest, 1 s per turn at full speed) and the pick-and-place cycle sized to
    the robot; staicu2003 also gets the paper's ellipse (eq. 7)."""
    if robot == "staicu2003":
        return {"circle r 50 mm, 1 s": circle(radius=0.05, depth=-0.33, period=1.0, ramp=0.5, dt=dt),
                "pick-place 100 x 20 mm": pick_place(start=(-0.05, 0.0, -0.33), width=0.1, height=0.02, dt=dt),
                "ellipse (eq. 7), 6 s": ellipse(dt=dt)}
    r = 0.2 if robot == "nt_robot" else 0.25
    return {f"circle r {r * 1e3:.0f} mm, 1 s": circle(radius=r, depth=-0.85, period=1.0, ramp=0.5, dt=dt),
            "pick-place 305 x 25 mm": pick_place(start=(-0.1525, 0.0, -0.9), dt=dt)}


def available_models():
    out = []
    for name in cmp.MODELS.names():
        try:
            cmp.model_function(name)
            out.append(name)
        except cmp.ModelUnavailable as e:
            print(f"({name} skipped: {e})", file=sys.stderr)
    return out


def differences(models, dt):
    rows = ["| robot | trajectory | peak torque [N m] | " + " | ".join(f"{m} RMS / max [%]" for m in models[1:]) + " |",
            "|---|---|---|" + "---|" * (len(models) - 1)]
    for robot in ROBOTS:
        m = RotaryModel.from_robot(robot)
        for label, tr in trajectories(robot, dt).items():
            inverse_kinematics(m, tr.X, check_limits=True)
            res = cmp.compare(robot, tr, models)
            cells = [f"{res.rms_percent[n]:.2g} / {res.max_percent[n]:.2g}" for n in models[1:]]
            rows.append(f"| {robot} | {label} | {res.peak:.3g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def native(name, robot):
    """(batch function, single function) on (X, Xd, Xdd) for the models with a model object."""
    if name == "explicit":
        m = RotaryModel.from_robot(robot).without_friction()
        f = lambda X, V, A: dynamics.inverse_dynamics(m, X, V, A)           # noqa: E731
        return f, f
    if name == "staicu":
        sm = staicu.StaicuModel.from_robot(robot)
        f = lambda X, V, A: staicu.inverse_dynamics(sm, X, V, A, friction=False)   # noqa: E731
        return f, f
    fn = cmp.model_function(name)
    r = load_robot(robot)
    return (lambda X, V, A: fn(r, Trajectory(np.arange(len(X)) * 1e-3, X, V, A))), None


def runtime(models, robot, n, single_calls, rounds=3):
    m = RotaryModel.from_robot(robot)
    rng = np.random.default_rng(0)
    X = sample_workspace(m, n, seed=1, min_measure=0.1)
    V, A = rng.normal(0.0, 0.5, (n, 3)), rng.normal(0.0, 5.0, (n, 3))
    rows = ["| model | batch [µs/sample] | single call [µs] |", "|---|---|---|"]
    for name in models:
        batch, single = native(name, robot)
        batch(X[:100], V[:100], A[:100])
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            batch(X, V, A)
            times.append((time.perf_counter() - t0) / n)
        b = statistics.median(times) * 1e6
        s = "–"
        if single is not None:
            k = single_calls if name == "explicit" else max(single_calls // 20, 50)
            dts = np.empty(k)
            for j in range(k):
                x, v, a = X[j].copy(), V[j].copy(), A[j].copy()
                t0 = time.perf_counter_ns()
                single(x, v, a)
                dts[j] = time.perf_counter_ns() - t0
            s = f"{np.median(dts) / 1e3:.3g}"
        rows.append(f"| {name} | {b:.3g} | {s} |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    ap.add_argument("--robot", default="nt_robot", help="robot of the runtime table (default: %(default)s)")
    args = ap.parse_args(argv)
    models = available_models()
    print(f"machine: {describe()}\n")
    print("Differences from the explicit model (rigid-body torques, no friction), in % of its peak |tau|:\n")
    print(differences(models, dt=5e-3 if args.quick else 1e-3))
    print(f"\nRuntime per sample ({args.robot}):\n")
    print(runtime(models, args.robot, n=2000 if args.quick else 20000, single_calls=1000 if args.quick else 10000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
