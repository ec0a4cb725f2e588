"""Compare inverse-dynamics models of one robot along one trajectory.

A small registry maps a model name to a function ``f(robot, trajectory) -> tau`` that returns
the rigid-body actuator torques (N, 3) in N m, **without joint friction** (friction is the
same term in every model and would only hide their differences), for a
:class:`~delta_core.robot_file.RobotParameters` and a
:class:`~delta_dynamics.motion.trajectories.Trajectory`. Built in:

* ``explicit``: Asadi & Heydari's explicit model (the rotary kind's, through
  :mod:`delta_dynamics.algorithms`), the lumped forearm of the robot file;
* ``staicu``: Staicu & Carp-Ciocardia's recursive virtual-power model
  (:mod:`delta_dynamics.reference.staicu`), every body with its full tensor;
* ``multibody``: Elshami et al.'s multibody model (``delta_dynamics.reference.multibody``), and
  ``mujoco``: MuJoCo's inverse dynamics of the closed chain (``delta_dynamics.reference.mujoco_model``,
  needs the ``mujoco`` package), each available where its package is.

Each is one line of :data:`MODELS` naming the reference model's ``trajectory_torques``; other
models register themselves (:func:`register_model`, or the entry-point group
``delta_robot.model``). The target is imported on first use, so a model whose package is
missing (MuJoCo, say) is reported as unavailable, with the reason, instead of breaking the
others. A name nobody registered is reported with the list of known ones.

:func:`compare` evaluates the models and measures each difference from the reference (the
first model) in % of the reference's peak torque, max |tau_ref| over the joints and samples::

    RMS % = 100 sqrt(mean_(samples, joints) (tau - tau_ref)^2) / peak,
    max % = 100 max |tau - tau_ref| / peak,

and the runtime per sample of each model's call on the whole trajectory (after a warm-up call
on its first samples; it includes building the model from the robot file).

>>> from delta_dynamics.motion.trajectories import circle
>>> res = compare("nt_robot", circle(radius=0.2, depth=-0.85, period=1.5, dt=0.01), ["explicit", "staicu"])
>>> sorted(res.torques), res.reference
(['explicit', 'staicu'], 'explicit')
>>> bool(res.rms_percent["staicu"] < 0.01)      # nt_robot's bodies are slender: < 0.01 %
True
"""
from __future__ import annotations

import importlib
import io
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from delta_core.atomic_file import atomic_write_bytes
from delta_core.plugins import PluginError, Registry
from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import inverse_dynamics
from delta_dynamics.common.trajectory import Trajectory
from delta_dynamics.kinds import model_for


class ModelUnavailable(ValueError):
    """A requested model is not registered or cannot be loaded here."""


def explicit_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques of the explicit model (no friction) along ``trajectory``."""
    return inverse_dynamics(model_for(robot), trajectory.X, trajectory.Xd, trajectory.Xdd, friction=False)


#: The comparison models, one registration line each (:class:`delta_core.plugins.Registry`): a
#: function ``f(robot, trajectory) -> (N, 3)`` (a ``"module:function"`` path, imported on first
#: use), its ``description`` and the modules it ``requires`` (imported when the model is asked
#: for, to tell early whether it is available). ``compare --models`` and ``inverse --model``
#: offer every name here; other packages add theirs with :func:`register_model` or the
#: entry-point group ``delta_robot.model``.
MODELS = Registry("model")
MODELS.register("explicit", "delta_dynamics.compare:explicit_torques",
                description="Asadi & Heydari's explicit model (lumped forearm)")
MODELS.register("staicu", "delta_dynamics.reference.staicu:trajectory_torques",
                description="Staicu & Carp-Ciocardia's recursive virtual-power model (every body)")
MODELS.register("multibody", "delta_dynamics.reference.multibody.reactions:trajectory_torques",
                description="Elshami et al.'s multibody model")
MODELS.register("mujoco", "delta_dynamics.reference.mujoco_model.inverse:trajectory_torques",
                description="MuJoCo's inverse dynamics of the closed chain",
                requires=("delta_dynamics.reference.mujoco_model.inverse",))


def register_model(name: str, target, description: str = "", requires=()) -> None:
    """Add (or replace) model ``name``; ``target`` is ``f(robot, trajectory) -> (N, 3)`` or a
    ``"module:function"`` string imported when the model is first used; ``requires``: modules
    it needs (imported when the model is asked for, to tell early whether it is available)."""
    if not isinstance(name, str) or not name or "," in name:
        raise ValueError(f"model name must be a non-empty string without commas, got {name!r}")
    if not (callable(target) or (isinstance(target, str) and ":" in target)):
        raise ValueError(f"model {name!r}: target must be a function or 'module:function', got {target!r}")
    MODELS.register(name, target, replace=True, description=description, requires=tuple(requires))


def model_function(name: str) -> Callable:
    """The torque function of model ``name``; :class:`ModelUnavailable` names what is missing."""
    if name not in MODELS:
        raise ModelUnavailable(f"unknown model '{name}' (known: {', '.join(MODELS.names())})")
    info = MODELS.info(name)
    for module in info.get("requires", ()):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ModelUnavailable(f"model '{name}' ({info.get('description', '')}) is not available: {e}") from None
    try:
        return MODELS.get(name)
    except PluginError as e:
        raise ModelUnavailable(str(e)) from None


def parse_model_list(text: str) -> list:
    """``"explicit,staicu"`` -> ``["explicit", "staicu"]`` (blanks ignored; at least two,
    no repeats; availability is checked when the models run)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) < 2:
        raise ValueError(f"give at least two models to compare, comma-separated, got {text!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"model listed twice: {', '.join(dup)}")
    return names


@dataclass
class Comparison:
    """What :func:`compare` found; torques and differences keyed by model name."""

    reference: str
    t: np.ndarray
    torques: dict
    runtime_per_sample: dict                          # s
    peak: float                                       # N m, max |tau_reference|
    rms_percent: dict = field(default_factory=dict)
    max_percent: dict = field(default_factory=dict)

    def table(self) -> str:
        """A Markdown table: model, RMS and max difference from the reference, runtime."""
        rows = ["| model | RMS diff [% of peak] | max diff [% of peak] | runtime [µs/sample] |",
                "|---|---|---|---|"]
        for name in self.torques:
            if name == self.reference:
                diff = ("reference", "reference")
            else:
                diff = (f"{self.rms_percent[name]:.3g}", f"{self.max_percent[name]:.3g}")
            rows.append(f"| {name} | {diff[0]} | {diff[1]} | {1e6 * self.runtime_per_sample[name]:.3g} |")
        return "\n".join(rows)


def compare(robot, trajectory, names, reference: str | None = None) -> Comparison:
    """Evaluate the models ``names`` on ``trajectory`` and their differences from
    ``reference`` (default: the first name). ``robot``: a preset name, a file or
    RobotParameters. Raises :class:`ModelUnavailable` before running anything if a model is
    missing."""
    robot = load_robot(robot)
    names = list(names)
    reference = reference or names[0]
    if reference not in names:
        raise ValueError(f"reference model '{reference}' is not among the compared models {names}")
    funcs = {n: model_function(n) for n in names}
    torques, runtime = {}, {}
    n = len(trajectory.t)
    for name, f in funcs.items():
        f(robot, _head(trajectory, 8))                  # warm up: imports, caches
        t0 = time.perf_counter()
        tau = np.asarray(f(robot, trajectory), dtype=float)
        runtime[name] = (time.perf_counter() - t0) / n
        if tau.shape != (n, 3) or not np.isfinite(tau).all():
            raise ValueError(f"model '{name}' returned torques of shape {tau.shape} "
                             f"{'with non-finite values ' if tau.shape == (n, 3) else ''}for {n} samples")
        torques[name] = tau
    ref = torques[reference]
    peak = float(np.abs(ref).max())
    scale = 100.0 / peak if peak > 0 else float("nan")
    res = Comparison(reference, np.asarray(trajectory.t), torques, runtime, peak)
    for name, tau in torques.items():
        d = tau - ref
        res.rms_percent[name] = float(np.sqrt(np.mean(d * d)) * scale)
        res.max_percent[name] = float(np.abs(d).max() * scale)
    return res


def _head(trajectory, k):
    """The first ``k`` samples of ``trajectory``."""
    return Trajectory(trajectory.t[:k], trajectory.X[:k], trajectory.Xd[:k], trajectory.Xdd[:k])


def plot(result: Comparison, path, title: str = "") -> Path:
    """Torques of every model (left) and their differences from the reference (right), one
    row per joint, written atomically as PNG."""
    # optional and heavy: only plotting needs matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots(3, 2, sharex=True, squeeze=False)
    t = result.t
    ref = result.torques[result.reference]
    for j in range(3):
        for k, (name, tau) in enumerate(result.torques.items()):
            ls = "-" if k == 0 else "--"
            ax[j, 0].plot(t, tau[:, j], ls=ls, lw=1.0, color=f"C{k}", label=name)
            if name != result.reference:
                ax[j, 1].plot(t, tau[:, j] - ref[:, j], lw=0.9, color=f"C{k}",
                              label=f"{name} − {result.reference}")
        ax[j, 0].set_ylabel(f"tau_{j + 1} [N m]")
        ax[j, 1].set_ylabel(f"difference {j + 1} [N m]")
        for a in ax[j]:
            a.grid(alpha=0.3)
    ax[0, 0].legend(fontsize=8)
    ax[0, 1].legend(fontsize=8)
    ax[0, 0].set_title(title or "rigid-body torques (no friction)")
    ax[0, 1].set_title(f"differences (peak |tau| of {result.reference}: {result.peak:.4g} N m)")
    ax[2, 0].set_xlabel("t [s]")
    ax[2, 1].set_xlabel("t [s]")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return atomic_write_bytes(path, buf.getvalue())
