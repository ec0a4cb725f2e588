"""The payload estimate in the feedforward (``payload_feedforward``), with and without (not a test;
docs/monitoring.md, issue 21).

The control loop (:class:`delta_hardware.control_loop.ControlLoop`, 500 Hz, the robot file's model,
monitoring on) drives the simulated nt_robot, whose platform carries ``kg`` more than the model
knows, through three joint moves of 0.4 s each (there, back, there again; 0.2 s of rest
between). The first move is the same either way (no estimate yet); from its end the loop with
``payload_feedforward`` adds the payload the monitor read over it to the feedforward. Printed
per plant and payload: the RMS joint tracking error of the third move without and with, and
the payload the feedforward carried. (The third, not the second: at rest the joints' static
friction holds the error a move ended with, 1.3 mrad after the first move with 0.5 kg, and
the next move starts from it.) Simulated time: the figures do not depend on the load.

Usage: python bench/bench_payload_feedforward.py [--plants explicit mujoco] [--kg 0 0.5 1 2] (0: the reference)
"""
from __future__ import annotations

import argparse

import numpy as np

from delta_dynamics.kinds import model_for
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.trajectory_plan import build_plan

DT = 0.002
MOVE = 0.4                                  # s per move
TARGET = [0.35, 0.15, -0.1]                 # rad: the first move's end


def third_move(plant: str, kg: float, payload_feedforward: bool) -> tuple:
    """(RMS joint error of the third move in mrad, kg the feedforward carried during it)."""
    model = model_for("nt_robot")
    drives = SimulatedDriveSet("nt_robot", plant=plant, payload=kg, seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model", monitoring=True,
                                                 payload_feedforward=payload_feedforward))
    loop.activate()
    t = 0.0
    for _ in range(int(round(0.2 / DT))):
        loop.cycle(t)
        t += DT
    q0 = loop.current_setpoint().q.copy()
    for target in (TARGET, q0.tolist(), TARGET):
        loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [MOVE], [target]))
        err = []
        for k in range(int(round((MOVE + 0.2) / DT))):
            out = loop.cycle(t)
            t += DT
            if k < int(round(MOVE / DT)):
                err.append(out.setpoint.q - out.position)
    e = np.asarray(err)
    return 1e3 * float(np.sqrt((e ** 2).mean())), loop.payload_in_feedforward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plants", nargs="+", default=["explicit", "mujoco"])
    ap.add_argument("--kg", type=float, nargs="+", default=[0.0, 0.5, 1.0, 2.0])
    args = ap.parse_args()
    print("| plant | payload the model lacks | RMS error of the third move, without | with payload_feedforward "
          "| payload in the feedforward |\n|---|---|---|---|---|")
    for plant in args.plants:
        for kg in args.kg:
            without, _ = third_move(plant, kg, False)
            with_, carried = third_move(plant, kg, True)
            print(f"| {plant} | {kg:g} kg | {without:.3f} mrad | {with_:.3f} mrad ({without / with_:.1f}x less) "
                  f"| {carried:.3f} kg |", flush=True)


if __name__ == "__main__":
    main()
