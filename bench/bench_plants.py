"""Speed of the plants (the simulated robot behind the simulated drives) and of the models.

* each plant at 1 kHz through the :class:`delta_dynamics.plant.Plant` interface as the drives
  use it (``step`` then ``joint_state`` every millisecond), tracking two pick-and-place cycles
  with a joint PD and the explicit model's feedforward: simulated seconds per wall second
  and per CPU second of this process (the machine is shared: the CPU figure is the steadier
  one). Target for the multibody plant: >= 1x real time with margin (>= 3x);
* runtime per sample of each model, one call per sample and in a batch: the explicit model's
  inverse dynamics (Asadi & Heydari) and the multibody model's inverse dynamics (torques and
  joint reactions) and forward accelerations (eq. 6).

Plants: ``explicit`` (:class:`~delta_dynamics.plant.ExplicitPlant`), ``multibody``
(:class:`~delta_dynamics.reference.multibody.plant.MultibodyPlant`), ``mujoco`` when its plant module
is importable (:data:`MUJOCO_PLANTS` lists where it is looked for). Prints a Markdown table.
``python bench/bench_plants.py [--robot NAME] [--seconds S]``.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _machine import describe, print_table  # noqa: E402  (bench/_machine.py)

import numpy as np  # noqa: E402

from delta_dynamics.rotary.dynamics import inverse_dynamics, joint_state  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.plant import ExplicitPlant  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402

DT = 1e-3
TARGET_MULTIBODY = 3.0
KP, KD = 2500.0, 60.0
#: (module, class) candidates of the MuJoCo plant (written by the MuJoCo work), tried in order.
MUJOCO_PLANTS = (("delta_dynamics.reference.mujoco_model.plant", "MujocoPlant"), ("delta_dynamics.mujoco.plant", "MujocoPlant"),
                 ("delta_hardware.mujoco.plant", "MujocoPlant"))


def mujoco_factory():
    """A callable robot -> MuJoCo plant, or None when no MuJoCo plant is importable."""
    for mod, cls in MUJOCO_PLANTS:
        try:
            return getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError):
            continue
    return None


def bench_plant(make, m, seconds, rounds=3):
    """(wall, cpu) simulated seconds per second of a plant tracking pick and place at 1 kHz."""
    traj = pick_place(start=(-0.1525, 0.0, -0.8), cycles=2, dt=DT)
    q_ref, qd_ref, _ = joint_state(m, traj.X, traj.Xd, traj.Xdd)
    ff = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd)
    lim = np.asarray(m.robot.limits.torque)
    taus = None
    walls, cpus = [], []
    steps = int(round(seconds / DT))
    for _ in range(rounds):
        plant = make()
        plant.place(q_ref[0])
        n = len(traj)
        if taus is None:                                   # the torques of one closed-loop run
            taus = np.empty((n, 3))
            for k in range(n):
                q, qd = plant.joint_state()
                taus[k] = np.clip(KP * (q_ref[k] - q) + KD * (qd_ref[k] - qd) + ff[k], -lim, lim)
                plant.step(taus[k].tolist(), DT)
            plant.place(q_ref[0])
        rows = taus.tolist()
        w0, c0 = time.perf_counter(), time.process_time()
        for k in range(steps):
            j = k % n
            if j == 0:
                plant.place(q_ref[0])
            plant.step(rows[j], DT)
            plant.joint_state()
        walls.append(steps * DT / (time.perf_counter() - w0))
        cpus.append(steps * DT / (time.process_time() - c0))
    return statistics.median(walls), statistics.median(cpus)


def per_sample(fn, n, rounds=3):
    """Median CPU seconds per sample of fn() over n samples."""
    ts = []
    for _ in range(rounds):
        c0 = time.process_time()
        fn()
        ts.append((time.process_time() - c0) / n)
    return statistics.median(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="nt_robot", help="robot preset or file (default: nt_robot)")
    ap.add_argument("--seconds", type=float, default=3.0, help="simulated seconds per plant and round")
    args = ap.parse_args(argv)
    from delta_dynamics.reference.multibody.dynamics import Evaluation, Friction, accelerations, place_platform
    from delta_dynamics.reference.multibody.plant import MultibodyPlant
    from delta_dynamics.reference.multibody.reactions import inverse_dynamics as mb_inverse
    from delta_dynamics.reference.multibody.system import MultibodySystem

    m = RotaryModel.from_robot(args.robot)
    s = MultibodySystem(m.robot)
    print(f"# plant and model benchmark ({args.robot}), {datetime.date.today().isoformat()}")
    print(f"machine: {describe()}, numpy {np.__version__}\n", flush=True)

    rows = []
    plants = [("explicit", lambda: ExplicitPlant(m), None),
              ("multibody", lambda: MultibodyPlant(m.robot), TARGET_MULTIBODY)]
    mj = mujoco_factory()
    for name, make, target in plants + ([("mujoco", lambda: mj(m.robot), None)] if mj else []):
        wall, cpu = bench_plant(make, m, args.seconds)
        ok = "" if target is None else ("✓" if cpu >= target else "✗")
        rows.append((f"plant `{name}` at 1 kHz (step + joint_state)", f"{wall:.1f}× / {cpu:.1f}×",
                     f"≥ {target:g}× (CPU)" if target else "", ok))
    if mj is None:
        rows.append(("plant `mujoco` at 1 kHz", "not installed", "", ""))

    traj = pick_place(start=(-0.1525, 0.0, -0.8), cycles=1, dt=DT)
    X, Xd, Xdd = traj.X, traj.Xd, traj.Xdd
    n1 = len(X)
    single = [(X[k].copy(), Xd[k].copy(), Xdd[k].copy()) for k in range(n1)]
    t = per_sample(lambda: [inverse_dynamics(m, *r) for r in single], n1)
    rows.append(("explicit inverse dynamics, one call per sample", f"{t * 1e6:.1f} µs", "", ""))
    t = per_sample(lambda: inverse_dynamics(m, X, Xd, Xdd), len(X), rounds=5)
    rows.append((f"explicit inverse dynamics, batch of {len(X)}", f"{t * 1e6:.2f} µs/sample", "", ""))
    n2 = 200
    t = per_sample(lambda: [mb_inverse(s, X[k:k + 1], Xd[k:k + 1], Xdd[k:k + 1]) for k in range(n2)], n2)
    rows.append(("multibody inverse dynamics + reactions, one call per sample", f"{t * 1e6:.0f} µs", "", ""))
    t = per_sample(lambda: mb_inverse(s, X, Xd, Xdd), len(X), rounds=1)
    rows.append((f"multibody inverse dynamics + reactions, batch of {len(X)}", f"{t * 1e6:.0f} µs/sample", "", ""))
    ev, fr = Evaluation(s), Friction(s.robot)
    states = [place_platform(s, X[k], Xd[k]) for k in range(0, len(X), 10)]
    t = per_sample(lambda: [accelerations(s, ev, st, [0.0, 0.0, 0.0], fr) for st in states], len(states))
    rows.append(("multibody forward accelerations (eq. 6), one call", f"{t * 1e6:.0f} µs", "", ""))

    head = ("what", "measured (wall / CPU for plants)", "target", "")
    print_table(head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
