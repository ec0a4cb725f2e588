"""Compare inverse-dynamics models of one robot along one trajectory.

A small registry maps a model name to a function ``f(robot, trajectory) -> tau`` that returns
the rigid-body actuator torques (N, 3) in N m, **without joint friction** (friction is the
same term in every model and would only hide their differences), for a
:class:`~delta_core.robot_file.RobotParameters` and a
:class:`~delta_dynamics.trajectories.Trajectory`. Built in:

* ``explicit``: Asadi & Heydari's explicit model (:mod:`delta_dynamics.dynamics`), the lumped
  forearm of the robot file;
* ``staicu``: Staicu & Carp-Ciocardia's recursive virtual-power model
  (:mod:`delta_dynamics.staicu`), every body with its full tensor;
* ``multibody``: Elshami et al.'s multibody model (``delta_dynamics.multibody``), and
  ``mujoco``: MuJoCo's inverse dynamics of the closed chain (``delta_dynamics.mujoco_model``,
  needs the ``mujoco`` package), each available where its package is.

Other models register themselves (``register_model("multibody", "pkg.module:function",
"...")``) or are added to :data:`MODELS`; the target is imported on first use, so a model
whose package is missing (MuJoCo, say) is reported as unavailable, with the reason, instead of
breaking the others. A name nobody registered is reported with the list of known ones.

:func:`compare` evaluates the models and measures each difference from the reference (the
first model) in % of the reference's peak torque, max |tau_ref| over the joints and samples::

    RMS % = 100 sqrt(mean_(samples, joints) (tau - tau_ref)^2) / peak,
    max % = 100 max |tau - tau_ref| / peak,

and the runtime per sample of each model's call on the whole trajectory (after a warm-up call
on its first samples; it includes building the model from the robot file).

>>> from delta_dynamics.trajectories import circle
>>> res = compare("nt_robot", circle(radius=0.2, depth=-0.85, period=1.5, dt=0.01), ["explicit", "staicu"])
>>> sorted(res.torques), res.reference
(['explicit', 'staicu'], 'explicit')
>>> bool(res.rms_percent["staicu"] < 0.01)      # nt_robot's bodies are slender: < 0.01 %
True
"""
from __future__ import annotations

import importlib
import io
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np


class ModelUnavailable(ValueError):
    """A requested model is not registered or cannot be loaded here."""


@dataclass(frozen=True)
class ModelEntry:
    """A model of the registry: ``target`` is a function or a ``"module:function"`` string;
    ``requires``: modules that must import for the model to be available."""

    name: str
    target: object
    description: str
    requires: tuple = ()


def explicit_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques of the explicit model (no friction) along ``trajectory``."""
    from delta_dynamics.dynamics import inverse_dynamics
    from delta_dynamics.model import DeltaModel
    m = DeltaModel.from_robot(robot)
    return inverse_dynamics(m, trajectory.X, trajectory.Xd, trajectory.Xdd, friction=False)


def multibody_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques of Elshami et al.'s multibody model (no friction)."""
    from delta_dynamics.multibody.reactions import inverse_dynamics
    from delta_dynamics.multibody.system import MultibodySystem
    s = MultibodySystem.from_robot(robot)
    return inverse_dynamics(s, trajectory.X, trajectory.Xd, trajectory.Xdd, friction=False).tau


def mujoco_torques(robot, trajectory) -> np.ndarray:
    """Rigid-body torques of MuJoCo's closed-chain inverse dynamics (no friction)."""
    from delta_dynamics.mujoco_model.inverse import inverse_dynamics
    return inverse_dynamics(robot, trajectory, friction=False)


#: The registry: name -> ModelEntry. Add an entry (or call :func:`register_model`) to plug in
#: a model; ``compare --models`` and ``inverse --model`` offer every name here.
MODELS: dict = {
    "explicit": ModelEntry("explicit", "delta_dynamics.compare:explicit_torques",
                           "Asadi & Heydari's explicit model (lumped forearm)"),
    "staicu": ModelEntry("staicu", "delta_dynamics.staicu:trajectory_torques",
                         "Staicu & Carp-Ciocardia's recursive virtual-power model (every body)"),
    "multibody": ModelEntry("multibody", "delta_dynamics.compare:multibody_torques",
                            "Elshami et al.'s multibody model",
                            requires=("delta_dynamics.multibody.reactions", "delta_dynamics.multibody.system")),
    "mujoco": ModelEntry("mujoco", "delta_dynamics.compare:mujoco_torques",
                         "MuJoCo's inverse dynamics of the closed chain",
                         requires=("delta_dynamics.mujoco_model.inverse",)),
}


def register_model(name: str, target, description: str = "", requires=()) -> None:
    """Add (or replace) model ``name``; ``target`` is ``f(robot, trajectory) -> (N, 3)`` or a
    ``"module:function"`` string imported when the model is first used; ``requires``: modules
    it needs (imported when the model is asked for, to tell early whether it is available)."""
    if not isinstance(name, str) or not name or "," in name:
        raise ValueError(f"model name must be a non-empty string without commas, got {name!r}")
    if not (callable(target) or (isinstance(target, str) and ":" in target)):
        raise ValueError(f"model {name!r}: target must be a function or 'module:function', got {target!r}")
    MODELS[name] = ModelEntry(name, target, description, tuple(requires))


def model_function(name: str) -> Callable:
    """The torque function of model ``name``; :class:`ModelUnavailable` names what is missing."""
    entry = MODELS.get(name)
    if entry is None:
        raise ModelUnavailable(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    for module in entry.requires:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ModelUnavailable(f"model '{name}' ({entry.description}) is not available: {e}") from None
    if callable(entry.target):
        return entry.target
    module, _, func = entry.target.partition(":")
    try:
        return getattr(importlib.import_module(module), func)
    except ImportError as e:
        raise ModelUnavailable(f"model '{name}' is not available: {e}") from None
    except AttributeError:
        raise ModelUnavailable(f"model '{name}' is not available: {module} has no {func}") from None


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
    from delta_core.robot_file import load_robot
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
    from delta_dynamics.trajectories import Trajectory
    return Trajectory(trajectory.t[:k], trajectory.X[:k], trajectory.Xd[:k], trajectory.Xdd[:k])


def plot(result: Comparison, path, title: str = "") -> Path:
    """Torques of every model (left) and their differences from the reference (right), one
    row per joint, written atomically as PNG."""
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
    return _atomic_write_bytes(path, buf.getvalue())


def _atomic_write_bytes(path, data: bytes) -> Path:
    """``data`` to ``path`` through a temporary file and a rename (as ``atomic_write_text``)."""
    from delta_core.atomic_file import _umask
    from delta_core.paths import check_output_file
    path = check_output_file(path, "the plot")       # a directory, FIFO, device, read-only file: refused
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path
