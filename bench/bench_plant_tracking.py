"""The identification demo's session without ROS, on each simulated plant: what PD only, the
nominal feedforward and the identified feedforward achieve when the simulated robot is the
controller's own explicit model (with other numbers) and when it is MuJoCo's closed chain.

The session of ``delta-bringup --demo`` (``delta_bringup/demo.py``) replayed in simulated
time on the same pieces the hardware node runs (``ControlLoop`` at 500 Hz, gains 600 / 30,
``SimulatedDriveSet`` with 0.02 N m torque noise; the true robot of the demo: 1.5 kg payload,
more friction, heavier arms): home; two pick-and-place cycles with PD only; the same with
the nominal feedforward; the demo's excitation trajectory (``config/excitation/nt_robot.yaml``, two 8 s periods); a
``bounded`` fit (Stribeck break-away efforts included) of its last 20 s (last quarter for validation, as the identification node does); the
cycles with the identified feedforward. Prints the RMS tracking error of each phase per
plant. ``python bench/bench_plant_tracking.py [--plants explicit,mujoco]``.
"""
from __future__ import annotations

from _machine import describe  # bench/_machine.py
import _session as session_base  # bench/_session.py: the session and the identification it runs
import argparse
import datetime
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_core.robot_file import load_robot  # noqa: E402
from delta_dynamics.rotary.dynamics import joint_state  # noqa: E402
from delta_dynamics.rotary.kinematics import forward_kinematics, inverse_kinematics  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.plant import ExplicitPlant  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402

DT = session_base.DT


def true_robot(nominal):
    """The demo's simulated robot (``delta_bringup.demo.true_robot``, imported lazily: it
    pulls in the ROS message packages)."""
    from delta_bringup.demo import true_robot as demo_true_robot
    return demo_true_robot(nominal)


def make_plant(name, robot):
    if name == "explicit":
        return ExplicitPlant(RotaryModel(robot))
    if name == "mujoco":
        from delta_dynamics.reference.mujoco_model.plant import MujocoPlant
        return MujocoPlant(robot)
    raise SystemExit(f"bench_plant_tracking: error: unknown plant {name!r} (explicit, mujoco)")


class Session(session_base.Session):
    """The shared session (``bench/_session.py``) with the pick-and-place cycles measured."""

    def cycles(self, traj):
        q, qd, qdd = joint_state(self.model, traj.X, traj.Xd, traj.Xdd)
        idx = np.append(np.arange(0, len(traj.t), 10)[:-1], len(traj.t) - 1)      # 100 Hz knots
        outs = self.follow(traj.t[idx] + 0.01, q[idx], qd[idx], qdd[idx], settle=0.0)
        err = np.array([np.array(o.position) - o.setpoint.q for o in outs])
        Xa = forward_kinematics(self.model, np.array([o.position for o in outs]))
        Xr = forward_kinematics(self.model, np.array([o.setpoint.q for o in outs]))
        return (float(np.sqrt(np.mean(np.sum(err ** 2, axis=1)))),
                float(np.sqrt(np.mean(np.sum((Xa - Xr) ** 2, axis=1)))))


def session(nominal, plant_name, excitation, traj):
    true = true_robot(nominal)
    s = Session(nominal, make_plant(plant_name, true))
    s.run(0.1)
    q_start = inverse_kinematics(s.model, traj.X[0])
    s.follow([2.0], [q_start])
    res = {"PD only": s.cycles(traj)}
    s.loop.reconfigure(feedforward="model")
    res["nominal feedforward"] = s.cycles(traj)
    fit = session_base.identify(s, excitation)
    s.loop.reconfigure(model=s.model.with_parameters(fit.lumped(s.model)))
    s.follow([2.0], [q_start])
    res["identified feedforward"] = s.cycles(traj)
    res["fitness"] = [float(v) for v in fit.validation["fitness"]]
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="nt_robot", help="robot preset or file (default: nt_robot)")
    ap.add_argument("--plants", default="explicit,mujoco", help="comma-separated plants (explicit, mujoco)")
    args = ap.parse_args(argv)
    nominal = load_robot(args.robot)
    plants = [p.strip() for p in args.plants.split(",") if p.strip()]
    if "mujoco" in plants:
        try:
            import mujoco  # noqa: F401
        except ImportError:
            print("bench_plant_tracking: mujoco is not installed (pip install mujoco): its plant is left out")
            plants.remove("mujoco")
    print(f"# tracking on each plant ({args.robot}), {datetime.date.today().isoformat()}")
    print(f"machine: {describe()}\n", flush=True)
    model = RotaryModel(nominal)
    excitation = session_base.demo_excitation(model)
    traj = pick_place(start=(-0.1525, 0.0, -0.78), lift_time=0.12, move_time=0.3, overlap=0.6,
                      dwell=0.05, cycles=2, dt=1e-3)
    print("| plant | PD only | nominal feedforward | identified feedforward | identified vs PD | "
          "validation fitness | wall time |")
    print("|---|---|---|---|---|---|---|")
    for name in plants:
        t0 = time.perf_counter()
        r = session(nominal, name, excitation, traj)
        cells = [f"{r[k][0] * 1e3:.2f} mrad ({r[k][1] * 1e3:.2f} mm)"
                 for k in ("PD only", "nominal feedforward", "identified feedforward")]
        ratio = r["PD only"][0] / r["identified feedforward"][0]
        fit = " / ".join(f"{v:.4f}" for v in r["fitness"])
        print(f"| {name} | {' | '.join(cells)} | {ratio:.1f}× | {fit} | {time.perf_counter() - t0:.1f} s |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
