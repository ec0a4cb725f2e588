"""Speed of the MuJoCo model of the closed chain (delta_dynamics.reference.mujoco_model), beside the
explicit model:

* plants at 1 kHz through the Plant interface the simulated drives use (``step(tau, 1 ms)``
  with the robot driven open loop by the inverse-dynamics torques of two pick-and-place
  cycles, restarted at the pick point every 2.6 s): simulated seconds per wall second of the
  explicit plant and of the MuJoCo plant (default 0.5 ms MuJoCo steps, and 1 ms), with the
  largest gap of the loop-closing constraints seen;
* MuJoCo alone on the same model: ``mj_step`` with the chain closed, no friction, no Python
  around it (``nstep`` steps per call), as simulated seconds per wall second at 1 kHz;
* inverse dynamics per sample: the closed chain's actuator torques from MuJoCo
  (:mod:`delta_dynamics.reference.mujoco_model.inverse`: kinematics, mj_fwdPosition, mj_fwdVelocity,
  mj_jacDot, mj_rne and the projection, one Python call per sample) and, for scale, one bare
  ``mj_inverse`` call on the same model (the generalized forces of every joint, constraint
  forces from MuJoCo's soft model: not the actuator torques).

Each figure is the median of several rounds, by the wall clock and by this process's CPU time
(the same on a quiet machine; on a shared one the CPU figure is the better estimate of what
the code costs). Run it when the machine is quiet.
Prints a Markdown table. ``python bench/bench_mujoco.py [--robot NAME]``. Exits 0 with a
note when mujoco is not installed.
"""
from __future__ import annotations

from _machine import describe, print_table  # bench/_machine.py
import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_dynamics.rotary.dynamics import inverse_dynamics  # noqa: E402
from delta_dynamics.rotary.kinematics import inverse_kinematics, sample_workspace  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.plant import ExplicitPlant  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402

DT = 1e-3


def _clocks():
    return time.perf_counter(), time.process_time()


def _rates(work, t0):
    """(work per wall second, work per CPU second of this process) since ``t0`` = _clocks()."""
    w, c = _clocks()
    return work / (w - t0[0]), work / max(c - t0[1], 1e-9)


def _median2(pairs):
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def bench_plant(make, tau, start_q, seconds=2.0, rounds=5):
    """Simulated seconds per wall (and per CPU) second of ``make()`` stepped at 1 kHz under ``tau``."""
    speeds, plant = [], None
    steps = int(round(seconds / DT))
    n = len(tau)
    for _ in range(rounds):
        plant = make()
        t0 = _clocks()
        for k in range(steps):
            j = k % n
            if j == 0:
                plant.place(start_q)
            plant.step(tau[j], DT)
        speeds.append(_rates(steps * DT, t0))
    return _median2(speeds), plant


def bench_mj_step(mujoco, plant, hold, seconds=2.0, rounds=5):
    """mj_step alone on the plant's model at 1 kHz (no friction, the arms held by the static
    torques ``hold`` of the start pose)."""
    m, d = plant.model, plant.data
    m.opt.timestep = DT
    steps = int(round(seconds / DT))
    speeds = []
    for _ in range(rounds):
        plant.place_platform([0.0, 0.0, -0.75])
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[plant.chain.arm_v] = hold
        t0 = _clocks()
        for _ in range(steps // 100):
            mujoco.mj_step(m, d, 100)
        speeds.append(_rates(steps * DT, t0))
    return _median2(speeds)


def bench_inverse(mujoco, inv, X, V, A, rounds=5):
    """((wall, CPU) us per sample of the closed-chain torques, (wall, CPU) us per bare
    mj_inverse call)."""
    per = []
    for _ in range(rounds):
        t0 = _clocks()
        inv.torques(X, V, A)
        per.append(tuple(1e6 / r for r in _rates(len(X), t0)))
    m, d = inv.model, inv.data
    calls = 20_000
    raw = []
    for _ in range(rounds):
        t0 = _clocks()
        for _ in range(calls):
            mujoco.mj_inverse(m, d)
        raw.append(tuple(1e6 / r for r in _rates(calls, t0)))
    return _median2(per), _median2(raw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="nt_robot", help="robot preset or file (default: nt_robot)")
    args = ap.parse_args(argv)
    try:
        import mujoco
        from delta_dynamics.reference.mujoco_model.inverse import MujocoInverseDynamics
        from delta_dynamics.reference.mujoco_model.mjcf import SolverSettings
        from delta_dynamics.reference.mujoco_model.plant import MujocoPlant
    except ImportError as e:
        print(f"bench_mujoco: skipped: {e}")
        return 0
    model = RotaryModel.from_robot(args.robot)
    print(f"# MuJoCo model benchmark ({args.robot}), {datetime.date.today().isoformat()}")
    print(f"machine: {describe()}; numpy {np.__version__}, mujoco {mujoco.__version__}\n", flush=True)

    traj = pick_place(cycles=2, dt=DT)
    tau = inverse_dynamics(model, traj.X, traj.Xd, traj.Xdd).tolist()
    q0 = inverse_kinematics(model, traj.X[0])
    rows = []
    (ex, ex_cpu), _ = bench_plant(lambda: ExplicitPlant(model), tau, q0)
    rows.append(("explicit plant (semi-implicit Euler), 1 kHz", f"{ex:.0f}× real time", f"{ex_cpu:.0f}×", ""))
    for ts in (5e-4, 1e-3):
        s = SolverSettings(timestep=ts)
        (sp, sp_cpu), plant = bench_plant(lambda: MujocoPlant(args.robot, s), tau, q0)
        rows.append((f"MuJoCo plant, {ts * 1e3:g} ms MuJoCo steps{' (default)' if ts == 5e-4 else ''}, 1 kHz",
                     f"{sp:.0f}× real time", f"{sp_cpu:.0f}×", f"largest gap {plant.max_closure_error * 1e6:.1f} µm"))
    hold = inverse_dynamics(model, [0.0, 0.0, -0.75], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], friction=False)
    raw, raw_cpu = bench_mj_step(mujoco, MujocoPlant(args.robot), hold, seconds=4.0)
    rows.append(("mj_step alone (closed chain, 1 ms, no friction)", f"{raw:.0f}× real time", f"{raw_cpu:.0f}×",
                 "no Python per step"))

    rng = np.random.default_rng(0)
    n = 2000
    X = sample_workspace(model, n, seed=0, min_measure=0.1)
    V, A = rng.normal(0.0, 0.5, (n, 3)), rng.normal(0.0, 5.0, (n, 3))
    inv = MujocoInverseDynamics(args.robot)
    (per, per_cpu), (bare, bare_cpu) = bench_inverse(mujoco, inv, X, V, A)
    t0 = _clocks()
    inverse_dynamics(model, X, V, A)
    ex_per, ex_per_cpu = (1e6 / r for r in _rates(n, t0))
    rows.append(("inverse dynamics, MuJoCo closed chain (actuator torques)", f"{per:.1f} µs/sample",
                 f"{per_cpu:.1f} µs", f"{1e3 / per_cpu:.0f} k samples per CPU s"))
    rows.append(("bare mj_inverse call (all joints, soft constraints)", f"{bare:.1f} µs/call", f"{bare_cpu:.1f} µs",
                 f"{1 / bare_cpu:.2f} M calls per CPU s"))
    rows.append(("inverse dynamics, explicit model, batch of 2000", f"{ex_per:.2f} µs/sample", f"{ex_per_cpu:.2f} µs",
                 "for scale"))

    head = ("what", "measured (wall clock)", "per CPU second / CPU time", "")
    print_table(head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
