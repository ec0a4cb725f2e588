"""What the benches that identify a model on a simulated plant share: a session of the
hardware node's pieces in simulated time (``ControlLoop`` at 500 Hz on ``SimulatedDriveSet``
with 0.02 N m torque noise, PD only until told otherwise) and the identification the demo runs
on it (its excitation trajectory, a ``bounded`` fit with the Stribeck break-away efforts of the
last 20 s, the last quarter kept for validation, as the identification node does).
Used by ``bench_plant_tracking.py`` and ``bench_monitoring.py``."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from delta_dynamics.data_files.joint_data import JointData  # noqa: E402
from delta_dynamics.identification.excitation import load_excitation, preset_excitation  # noqa: E402
from delta_dynamics.identification.pipeline import Options, identify_data  # noqa: E402
from delta_dynamics.identification.preprocess import Preprocessing  # noqa: E402
from delta_dynamics.kinds import model_for  # noqa: E402
from delta_hardware.control_loop import ControlLoop, LoopConfig  # noqa: E402
from delta_hardware.drives.simulated import SimulatedDriveSet  # noqa: E402
from delta_hardware.trajectory_plan import build_plan  # noqa: E402

DT = 0.002                     # the hardware node's 500 Hz


class Session:
    """The control loop of ``nominal`` (loaded robot parameters: the controller's model) on
    ``plant`` (the simulated robot) through the simulated drives, PD only, clock from 0."""

    def __init__(self, nominal, plant):
        self.model = model_for(nominal)
        self.drives = SimulatedDriveSet(nominal, plant=plant, torque_noise=0.02, seed=1)
        self.loop = ControlLoop(self.model, self.drives, LoopConfig(rate=1 / DT, feedforward="none"))
        self.loop.activate()
        self.t = 0.0

    def run(self, seconds):
        """``seconds`` of control cycles; their outputs."""
        outs = []
        for _ in range(int(round(seconds / DT))):
            outs.append(self.loop.cycle(self.t, DT))
            self.t += DT
        return outs

    def follow(self, times, q, qd=None, qdd=None, settle=0.3):
        """Follow joint knots (times from now) then ``settle`` s more; the cycles' outputs."""
        self.loop.submit_plan(build_plan(self.model, self.t, self.loop.current_setpoint(), self.t,
                                         times, q, qd, qdd))
        return self.run(float(times[-1]) + settle)


def demo_excitation(model):
    """The demo's stored excitation trajectory of the model's robot
    (``config/excitation/<robot>.yaml``) at 0.6."""
    path = preset_excitation(model.robot.name)
    if path is None:
        raise ValueError(f"robot {model.robot.name!r} has no stored excitation (config/excitation/)")
    return load_excitation(path, model, scale=0.6)


def identify(s, excitation):
    """Run ``excitation`` (two periods) on session ``s`` and fit its last 20 s (``bounded``,
    Stribeck, 20 Hz cut-off; the last quarter for validation): the fit
    (``delta_dynamics.identification.pipeline`` result: ``fit.lumped(model)``,
    ``fit.validation["fitness"]``)."""
    t, q, qd, qdd = excitation.trajectory.sample(dt=0.01, cycles=2)
    s.follow([2.0], [q[0]])
    t0 = s.t
    outs = s.follow(t[1:], q[1:], qd[1:], qdd[1:], settle=0.5)
    ts = np.array([o.time for o in outs]) - t0
    keep = ts >= ts[-1] - 20.0                                          # the node's 20 s window
    qa = np.array([o.position for o in outs])[keep]
    tau = np.array([o.effort for o in outs])[keep]
    ts = ts[keep]
    k = int(round(len(ts) * 0.75))
    return identify_data(s.model, JointData(ts[:k], qa[:k], tau[:k]), "bounded", Options(stribeck=True),
                         Preprocessing(cutoff=20.0), validation=JointData(ts[k:], qa[k:], tau[k:], first=k))


def identified_model(nominal, plant):
    """The model identified on ``plant`` from ``nominal`` (loaded robot parameters) with the
    demo's excitation (a fresh :class:`Session`: settle, then :func:`identify`): the model
    with the identified lumped parameters, and the fit."""
    s = Session(nominal, plant)
    s.run(0.1)
    fit = identify(s, demo_excitation(s.model))
    return s.model.with_parameters(fit.lumped(s.model)), fit
