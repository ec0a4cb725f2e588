"""Excitation trajectories: finite Fourier series in joint space, optimised for the regressor.

Joint i follows (Swevers et al. 1997)

    q_i(t)   = q0_i + sum_{k=1}^{H} [ a_ik / (w k) sin(w k t) - b_ik / (w k) cos(w k t) ]
    q_d_i(t) = sum_k [ a_ik cos(w k t) + b_ik sin(w k t) ]
    q_dd_i(t) = sum_k w k [ -a_ik sin(w k t) + b_ik cos(w k t) ]

with w = 2 pi / period. The motion is periodic, and the constraints sum_k a_ik = 0 and
sum_k k b_ik = 0 (imposed by projecting the coefficients) make it start and end every period
at rest (q_d = q_dd = 0), so a robot can run it from a standstill.

:func:`design_excitation` chooses q0, a, b to minimise the condition number of the
column-normalised regressor (:mod:`.regressors`) sampled over one period, subject to the
joint position limits (with a margin), velocity, acceleration and torque limits (times
``scale``; torques by the nominal model, friction included) and to staying in the
workspace: forward kinematics exists, inverse kinematics (elbow-out, within limits) gives
the joints back, and the singularity measure stays above ``min_measure``. It runs SLSQP
from ``starts`` seeded random feasible starts and checks the winner at 1 kHz
(:func:`check_trajectory`). :func:`write_trajectory_csv` writes the Cartesian platform
trajectory in the format of ``delta-dynamics trajectory``
(``t,x,y,z,xd,yd,zd,xdd,ydd,zdd``, SI).

Excitation files
----------------
SLSQP's end point depends on the last bit of every floating-point operation on its way (the
BLAS kernel numpy uses, its thread count, the CPU's vector unit): the same seed gives another
trajectory on another machine (condition number 71.5, 49.7, 25.2 or 52.4 for the demo's
settings with ``OPENBLAS_NUM_THREADS`` or ``OPENBLAS_CORETYPE`` changed). A trajectory that
others must reproduce is therefore designed once and stored: :func:`save_excitation` writes
its coefficients (exact: every float as its shortest round-trip decimal) with the design
settings to a YAML file; :func:`load_excitation` reads one back and checks it against the
robot (:func:`check_excitation`). The presets' files are ``config/excitation/<robot>.yaml``
(:func:`preset_excitation`), written by ``tools/design_excitations.py``; the demo of
``delta-bringup --demo`` and ``delta-identify excite --from`` use them.

Either kind of Delta (:mod:`delta_dynamics.algorithms`): the series moves the arm angles of a
rotary robot (rad) or the carriages of a linear one (m; ``margin`` is then in m and the
effort limits are forces).
"""
from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field

import numpy as np
import yaml

from delta_core import safe_yaml
from delta_core.atomic_file import atomic_write_text
from delta_core.share import share_file
from delta_core.text_input import TextInputError, read_text
from delta_dynamics.algorithms import (UnreachableError, cartesian_state, inverse_dynamics,
                                       inverse_kinematics, joint_units, parameter_set,
                                       singularity_measure)

from delta_dynamics.common.trajectory import Trajectory
from delta_dynamics.data_files.trajectory import write_trajectory

from . import IdentificationError

TRAJECTORY_COLUMNS = ("t", "x", "y", "z", "xd", "yd", "zd", "xdd", "ydd", "zdd")


@dataclass(frozen=True)
class FourierTrajectory:
    """A joint-space finite Fourier series (see the module docstring); a, b: (3, H)."""

    period: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @property
    def harmonics(self) -> int:
        """The number of harmonics H."""
        return self.a.shape[1]

    @classmethod
    def from_vector(cls, period: float, z, harmonics: int) -> "FourierTrajectory":
        """From z = (q0 (3), a (3H), b (3H)); a, b are projected so the motion starts at rest."""
        z = np.asarray(z, dtype=float)
        H = int(harmonics)
        a = z[3:3 + 3 * H].reshape(3, H)
        b = z[3 + 3 * H:3 + 6 * H].reshape(3, H)
        k = np.arange(1, H + 1, dtype=float)
        a = a - a.mean(axis=1, keepdims=True)                      # sum_k a_ik = 0
        b = b - np.outer(b @ k, k) / (k @ k)                       # sum_k k b_ik = 0
        return cls(float(period), z[:3].copy(), a, b)

    def to_vector(self) -> np.ndarray:
        """z = (q0 (3), a (3H), b (3H)), the inverse of :meth:`from_vector`."""
        return np.concatenate((self.q0, self.a.ravel(), self.b.ravel()))

    def evaluate(self, t):
        """(q, q_dot, q_ddot), each (N, 3), at the times ``t`` (s)."""
        t = np.asarray(t, dtype=float).reshape(-1)
        w = 2.0 * math.pi / self.period
        k = np.arange(1, self.harmonics + 1, dtype=float)
        wk = w * k
        s, c = np.sin(np.outer(t, wk)), np.cos(np.outer(t, wk))     # (N, H)
        q = self.q0 + s @ (self.a / wk).T - c @ (self.b / wk).T
        qd = c @ self.a.T + s @ self.b.T
        qdd = -s @ (self.a * wk).T + c @ (self.b * wk).T
        return q, qd, qdd

    def sample(self, dt: float = 1e-3, cycles: int = 1):
        """(t, q, q_dot, q_ddot) over ``cycles`` periods (both ends included)."""
        n = int(round(cycles * self.period / dt))
        t = np.arange(n + 1) * dt
        return (t, *self.evaluate(t))

    def to_dict(self) -> dict:
        """{period, q0, a, b} as plain lists (for YAML and printing)."""
        return {"period": self.period, "q0": self.q0.tolist(), "a": self.a.tolist(), "b": self.b.tolist()}

    @classmethod
    def from_dict(cls, d: dict, where: str = "excitation") -> "FourierTrajectory":
        """The inverse of :meth:`to_dict` (coefficients taken as they are, not projected),
        checked: a positive period, 3 finite positions, a and b finite 3 x H (1 <= H <= 50),
        and the start at rest (sum_k a_ik = 0, sum_k k b_ik = 0 to 1e-9 of the largest
        coefficient). IdentificationError naming the field otherwise.

        >>> tr = FourierTrajectory.from_dict({"period": 4.0, "q0": [0.1, 0.2, 0.3],
        ...     "a": [[0.1, -0.1]] * 3, "b": [[0.2, -0.1]] * 3})
        >>> tr.harmonics, tr.evaluate([0.0])[1].tolist()
        (2, [[0.0, 0.0, 0.0]])
        """
        if not isinstance(d, dict):
            raise IdentificationError(f"{where}: expected a mapping with period, q0, a, b")
        for key in ("period", "q0", "a", "b"):
            if key not in d:
                raise IdentificationError(f"{where}: missing field '{key}'")
        try:
            period = float(d["period"])
            q0 = np.array(d["q0"], dtype=float)
            a = np.array(d["a"], dtype=float)
            b = np.array(d["b"], dtype=float)
        except (TypeError, ValueError) as e:
            raise IdentificationError(f"{where}: period, q0, a and b must be numbers ({e})") from None
        if not (math.isfinite(period) and period > 0):
            raise IdentificationError(f"{where}: period must be a finite number > 0 s, got {d['period']!r}")
        if q0.shape != (3,):
            raise IdentificationError(f"{where}: q0 must hold 3 numbers, got shape {q0.shape}")
        if a.ndim != 2 or a.shape[0] != 3 or not 1 <= a.shape[1] <= 50 or b.shape != a.shape:
            raise IdentificationError(f"{where}: a and b must both be 3 rows of 1 to 50 harmonics, got shapes "
                                      f"{a.shape} and {b.shape}")
        for name, v in (("q0", q0), ("a", a), ("b", b)):
            if not np.all(np.isfinite(v)):
                raise IdentificationError(f"{where}: {name} holds a value that is not finite")
        k = np.arange(1, a.shape[1] + 1, dtype=float)
        tol = 1e-9 * max(1.0, float(np.abs(a).max()), float(np.abs(b).max()))
        if np.abs(a.sum(axis=1)).max() > tol or np.abs(b @ k).max() > tol:
            raise IdentificationError(f"{where}: the coefficients do not start at rest (sum_k a_ik and "
                                      f"sum_k k b_ik must be 0)")
        return cls(period, q0, a, b)


@dataclass
class ExcitationResult:
    """What :func:`design_excitation` found: the trajectory, its condition number, the limits it
    breaks (none when it is usable), its margins, the optimiser's iterations."""
    trajectory: FourierTrajectory
    condition: float                 # of the column-normalised regressor over one period
    violations: list                 # empty when every limit holds at 1 kHz
    margins: dict = field(default_factory=dict)
    iterations: int = 0
    initial_condition: float = math.inf     # of the random start the result came from
    source: str = ""                 # where it came from (a file, or "designed")


# ----------------------------------------------------------------------------- evaluation

def _evaluate(model, traj, t, pset, scale, margin, min_measure):
    """Condition number and the constraint margins (>= 0 when satisfied), per kind and joint."""
    q, qd, qdd = traj.evaluate(t)
    lim = model.robot.limits
    lo = np.array([p[0] for p in lim.position]) + margin
    hi = np.array([p[1] for p in lim.position]) - margin
    g = {"position_low": q.min(0) - lo, "position_high": hi - q.max(0),
         "velocity": scale * np.array(lim.velocity) - np.abs(qd).max(0),
         "acceleration": scale * np.array(lim.acceleration) - np.abs(qdd).max(0)}
    try:
        X, Xd, Xdd = cartesian_state(model, q, qd, qdd)
        tau = inverse_dynamics(model, X, Xd, Xdd)
        sm = singularity_measure(model, X)
        q_back = inverse_kinematics(model, X)
    except (UnreachableError, ValueError, np.linalg.LinAlgError):
        g["workspace"] = np.array([-1.0])
        return math.inf, g
    g["torque"] = scale * np.array(lim.effort) - np.abs(tau).max(0)
    g["workspace"] = np.array([sm.min() - min_measure, 1e-3 - np.abs(q_back - q).max()])
    Y = pset.regressor(model, q, qd, qdd).reshape(-1, len(pset))
    nrm = np.linalg.norm(Y, axis=0)
    if np.any(nrm <= 0):
        return math.inf, g
    s = np.linalg.svd(Y / nrm, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else math.inf, g


def check_trajectory(model, traj, dt: float = 1e-3, scale: float = 1.0, margin: float = 0.0,
                     min_measure: float = 0.0) -> list:
    """Every limit the trajectory breaks, sampled at ``dt`` over one period (empty list: OK)."""
    t = np.arange(int(round(traj.period / dt)) + 1) * dt
    cond, g = _evaluate(model, traj, t, parameter_set(model, "explicit"), scale, margin, min_measure)
    out = []
    u = joint_units(model)
    names = {"position_low": "position below its lower limit", "position_high": "position above its upper limit",
             "velocity": "velocity above its limit", "acceleration": "acceleration above its limit",
             "torque": f"{u['effort_name']} above its limit"}
    for key, text in names.items():
        if key in g:
            for j, v in enumerate(g[key]):
                if v < 0:
                    out.append(f"{u['joint']} {j + 1}: {text} by {-v:.4g}")
    ws = g.get("workspace")
    if ws is not None:
        if len(ws) == 1:
            out.append("leaves the workspace (forward kinematics fails or singular)")
        else:
            if ws[0] < 0:
                out.append(f"comes within {-ws[0]:.3g} of the singularity-measure bound {min_measure:g}")
            if ws[1] < 0:
                out.append("inverse kinematics does not give the joints back (other branch)")
    return out


# ----------------------------------------------------------------------------- design

def design_excitation(model, period: float = 5.0, harmonics: int = 5, *, seed: int | None = 0,
                      scale: float = 0.8, margin: float = 0.05, min_measure: float = 0.05,
                      grid: int = 200, starts: int = 3, maxiter: int = 60, params: str = "explicit",
                      progress=None) -> ExcitationResult:
    """An excitation trajectory with a small regressor condition number (module docstring).

    ``scale``: fraction of the velocity, acceleration and effort limits to use; ``margin``
    (rad, or m for a linear robot): distance kept from the position limits; ``grid``: samples per period for the
    optimisation; ``starts``: random starts (seeded); ``maxiter``: SLSQP iterations each.
    ``progress(start, starts, best_condition)`` is called after each start.
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.optimize import minimize

    if not period > 0:
        raise IdentificationError(f"excitation period must be > 0 s, got {period}")
    if not 1 <= harmonics <= 50:
        raise IdentificationError(f"harmonics must be 1..50, got {harmonics}")
    if not 0 < scale <= 1:
        raise IdentificationError(f"limit scale must be in (0, 1], got {scale}")
    pset = parameter_set(model, params)
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, period, grid, endpoint=False)
    lim = model.robot.limits
    lo = np.array([p[0] for p in lim.position])
    hi = np.array([p[1] for p in lim.position])
    mid = 0.5 * (lo + hi)
    H = harmonics
    w = 2 * math.pi / period
    k = np.arange(1, H + 1)
    cache = {}

    def ev(z):
        key = z.tobytes()
        if key not in cache:
            if len(cache) > 256:
                cache.clear()
            cache[key] = _evaluate(model, FourierTrajectory.from_vector(period, z, H), t, pset,
                                   scale, margin, min_measure)
        return cache[key]

    def objective(z):
        c, _ = ev(z)
        return math.log10(c) if math.isfinite(c) else 20.0

    def constraints(z):
        _, g = ev(z)
        v = np.concatenate([np.ravel(g[key]) for key in ("position_low", "position_high", "velocity",
                                                          "acceleration", "torque", "workspace") if key in g])
        # keep a fixed length for SLSQP even when the workspace test fails early
        return v if "torque" in g else np.concatenate((v, -np.ones(3)))

    def normalise(v):
        # scale random coefficients so each joint uses ~40 % of its range, velocity, acceleration
        amp = 0.4 * np.minimum(hi - mid - margin, mid - lo - margin)
        tr = FourierTrajectory.from_vector(period, np.concatenate((mid, v)), H)
        q, qd, qdd = tr.evaluate(t)
        f = np.min(np.stack([amp / np.maximum(np.abs(q - mid).max(0), 1e-9),
                             0.4 * scale * np.array(lim.velocity) / np.maximum(np.abs(qd).max(0), 1e-9),
                             0.4 * scale * np.array(lim.acceleration) / np.maximum(np.abs(qdd).max(0), 1e-9)]), axis=0)
        ab = v.reshape(2, 3, H) * f[None, :, None]
        return np.concatenate((mid, ab.ravel()))

    def feasible(z):
        return bool(np.all(constraints(z) >= 0))

    def repair(z, z0):
        """SLSQP may stop (iteration limit) a little outside the limits: shrink the motion
        about its mean position, or else step back towards the feasible start."""
        if feasible(z):
            return z
        for f in (0.98, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5):
            zs = np.concatenate((z[:3], f * z[3:]))
            if feasible(zs):
                return zs
        for a in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1):
            zs = z0 + a * (z - z0)
            if feasible(zs):
                return zs
        return z0

    best, best_c, iters, init_c = None, math.inf, 0, math.inf
    for s in range(starts):
        z0 = None
        for _ in range(50):
            cand = normalise(rng.normal(size=6 * H) / np.tile(np.sqrt(k), 6) * w)
            if feasible(cand):
                z0 = cand
                break
        if z0 is None:
            continue
        res = minimize(objective, z0, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": constraints}],
                       options={"maxiter": maxiter, "ftol": 1e-6})
        iters += int(res.nit)
        z = repair(res.x, z0)
        c, _ = ev(z)
        if c < best_c:
            best, best_c, init_c = z.copy(), c, ev(z0)[0]
        if progress is not None:
            progress(s + 1, starts, best_c)
    if best is None:
        raise IdentificationError(
            "could not find an excitation trajectory inside the limits: no random start was feasible "
            "(try a longer --period, fewer --harmonics or a larger --scale)")
    traj = FourierTrajectory.from_vector(period, best, H)
    # final check at 1 kHz; shrink the motion about q0 slightly if grid sampling missed a peak
    viol = check_trajectory(model, traj, scale=scale, margin=0.0, min_measure=min_measure)
    for _ in range(10):
        if not viol:
            break
        traj = FourierTrajectory(traj.period, traj.q0, 0.97 * traj.a, 0.97 * traj.b)
        viol = check_trajectory(model, traj, scale=scale, margin=0.0, min_measure=min_measure)
    cond, g = _evaluate(model, traj, t, pset, scale, margin, min_measure)
    return ExcitationResult(traj, cond, viol, {k: np.ravel(v).tolist() for k, v in g.items()}, iters, init_c)


# ----------------------------------------------------------------------------- files

#: largest excitation file read (a few kB in practice)
MAX_EXCITATION_BYTES = 1 << 20


def check_excitation(model, traj: FourierTrajectory, scale: float = 1.0, min_measure: float = 0.0,
                     params: str = "explicit", grid: int = 200) -> ExcitationResult:
    """A given trajectory as an :class:`ExcitationResult`: its condition number (column-normalised
    regressor of ``params`` at ``grid`` samples over one period, as :func:`design_excitation`
    reports it) and the limits it breaks at 1 kHz (``scale`` of the velocity, acceleration and
    effort limits, as :func:`check_trajectory`)."""
    t = np.linspace(0.0, traj.period, grid, endpoint=False)
    cond, g = _evaluate(model, traj, t, parameter_set(model, params), scale, 0.0, min_measure)
    viol = check_trajectory(model, traj, scale=scale, min_measure=min_measure)
    return ExcitationResult(traj, cond, viol, {k: np.ravel(v).tolist() for k, v in g.items()})


def save_excitation(path, model, result: ExcitationResult, design: dict | None = None, header: str = ""):
    """Write ``result``'s trajectory as an excitation file, atomically: the robot's name, the
    joint unit, the condition number, the design settings (``design``: how to make it again)
    and the coefficients q0 (3), a, b (3 x H, rad/s or m/s), every float exact (YAML writes the
    shortest decimal that reads back to the same double). The path."""
    doc = {"format": "delta_robot excitation 1", "robot": model.robot.name,
           "unit": joint_units(model)["position"], "condition": float(result.condition),
           "design": dict(design or {}), **result.trajectory.to_dict()}
    text = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    text += yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    if load_excitation_text(text, str(path)).to_dict() != result.trajectory.to_dict():
        raise IdentificationError(f"{path}: the coefficients do not read back exactly")   # never written
    return atomic_write_text(path, text)


def _excitation_doc(text: str, where: str) -> dict:
    """The mapping of an excitation file's ``text`` (IdentificationError naming ``where``)."""
    try:
        doc = safe_yaml.load(text)
    except (yaml.YAMLError, ValueError) as e:
        raise IdentificationError(f"{where}: not valid YAML: {safe_yaml.one_line(e, text)}") from None
    if not isinstance(doc, dict) or doc.get("format") != "delta_robot excitation 1":
        raise IdentificationError(f"{where}: not an excitation file (no 'format: delta_robot excitation 1')")
    return doc


def load_excitation_text(text: str, where: str = "excitation") -> FourierTrajectory:
    """The trajectory of an excitation file's text (see :func:`save_excitation`)."""
    return FourierTrajectory.from_dict(_excitation_doc(text, where), where)


def load_excitation(path, model=None, scale: float = 1.0, min_measure: float = 0.0):
    """An excitation file's trajectory; with ``model``, checked against it
    (:func:`check_excitation`, whose result is returned): the file's robot name and joint
    unit must match the model's, and the limits the trajectory breaks are in ``violations``.
    IdentificationError naming the file for anything else."""
    where = os.fspath(path)
    try:
        mode = os.stat(path).st_mode               # never open a FIFO or a device (it may block)
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
            raise IdentificationError(f"{where}: {kind}, not an excitation file")
        text = read_text(path, MAX_EXCITATION_BYTES, "an excitation file")
    except TextInputError as e:
        raise IdentificationError(str(e)) from None
    except OSError as e:
        raise IdentificationError(f"{where}: cannot read: {e.strerror or e}") from None
    doc = _excitation_doc(text, where)
    traj = FourierTrajectory.from_dict(doc, where)
    if model is None:
        return traj
    unit = joint_units(model)["position"]
    if doc.get("unit") != unit:
        raise IdentificationError(f"{where}: joint unit {doc.get('unit')!r}, the robot's is {unit!r} "
                                  f"(an excitation of the other kind of Delta)")
    if doc.get("robot") not in (None, model.robot.name):
        raise IdentificationError(f"{where}: designed for robot {doc.get('robot')!r}, not {model.robot.name!r}")
    return check_excitation(model, traj, scale=scale, min_measure=min_measure)


def preset_excitation(robot_name: str):
    """Path of the shipped excitation file of a robot preset
    (``config/excitation/<name>.yaml``), or None when there is none."""
    try:
        return share_file("config", "excitation", f"{robot_name}.yaml")
    except FileNotFoundError:
        return None


def write_trajectory_csv(path, model, traj: FourierTrajectory, dt: float = 1e-3, cycles: int = 1):
    """The platform trajectory of ``cycles`` periods as ``t,x,y,z,xd,yd,zd,xdd,ydd,zdd`` (SI),
    written atomically by :func:`delta_dynamics.data_files.trajectory.write_trajectory` (the format of
    ``delta-dynamics trajectory``)."""
    if cycles < 1:
        raise IdentificationError(f"cycles must be >= 1, got {cycles}")
    t, q, qd, qdd = traj.sample(dt, cycles)
    X, Xd, Xdd = cartesian_state(model, q, qd, qdd)
    return write_trajectory(path, Trajectory(t, X, Xd, Xdd))
