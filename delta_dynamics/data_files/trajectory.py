"""Trajectory CSV files: the platform's motion as read and written by ``delta-dynamics``.

Columns ``t,x,y,z,xd,yd,zd,xdd,ydd,zdd`` -- time (s), platform position (m), velocity (m/s)
and acceleration (m/s^2) in ``base_link`` (``docs/conventions.md``), read and written by
:mod:`.csv_io` (any column order, extra columns ignored, times increasing strictly). A file
with only ``t,x,y,z`` is accepted too: velocity and acceleration then come from a smoothing
spline (:func:`derivatives_from_positions`).
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from math import comb
from pathlib import Path

import numpy as np

from delta_dynamics.common.trajectory import Trajectory

from .csv_io import CsvError, CsvTable, read_csv, write_csv

TRAJECTORY_COLUMNS = ("t", "x", "y", "z", "xd", "yd", "zd", "xdd", "ydd", "zdd")
POSITION_COLUMNS = ("t", "x", "y", "z")

#: Below this estimated noise (m) the spline interpolates the positions exactly.
NOISE_FLOOR = 1e-10
#: Order of the differences the noise estimate uses.
NOISE_DIFF_ORDER = 6


def estimate_noise(x) -> float:
    """RMS noise (same unit as ``x``) of a finely sampled smooth signal, from its sixth
    differences: for white noise of variance s^2 they have variance C(12, 6) s^2 = 924 s^2,
    while a smooth signal's sixth differences are negligible at fine sampling."""
    x = np.asarray(x, dtype=float)
    n = NOISE_DIFF_ORDER
    if len(x) <= n:
        return 0.0
    d = np.diff(x, n=n)
    return float(np.sqrt(np.mean(d * d) / comb(2 * n, n)))


def derivatives_from_positions(t, X, smoothing="auto"):
    """Velocity and acceleration (N, 3) of sampled positions X (N, 3) at times t, and the
    noise level used per axis.

    Each axis is fitted with a quintic smoothing spline (``scipy.interpolate.UnivariateSpline``,
    k = 5; cubic below 6 samples) whose smoothing factor is s = N sigma^2: the spline passes
    within an RMS distance sigma of the samples, and its first and second derivatives are
    returned. ``smoothing`` is sigma in metres, or ``"auto"``: sigma is estimated per axis by
    :func:`estimate_noise` (the rounding of the numbers in the file counts as noise:
    sigma ~ q / sqrt(12) for values rounded to q). Below 1e-10 m the spline interpolates.
    Sampling of 1-5 ms suits the stack's trajectories; on coarser samples the estimate
    mistakes the motion for noise and smooths too much (then pass ``smoothing=0``).
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.interpolate import UnivariateSpline

    t = np.asarray(t, dtype=float)
    X = np.asarray(X, dtype=float)
    if len(t) < 4:
        raise ValueError(f"need at least 4 samples to fit a spline, got {len(t)}")
    if smoothing != "auto":
        smoothing = float(smoothing)
        if not (smoothing >= 0 and math.isfinite(smoothing)):
            raise ValueError(f"smoothing must be 'auto' or a noise level >= 0 m, got {smoothing}")
    k = 5 if len(t) >= 6 else 3
    Xd = np.empty_like(X)
    Xdd = np.empty_like(X)
    sigmas = []
    for a in range(X.shape[1]):
        sigma = estimate_noise(X[:, a]) if smoothing == "auto" else smoothing
        if sigma < NOISE_FLOOR:
            sigma = 0.0
        with warnings.catch_warnings(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # FITPACK warns when it cannot meet s exactly; the returned spline is still fine.
            # Overflow (time steps of 1e-300 s) gives non-finite values that read_trajectory names
            warnings.simplefilter("ignore", UserWarning)
            spline = UnivariateSpline(t, X[:, a], k=k, s=len(t) * sigma * sigma)
            Xd[:, a] = spline.derivative(1)(t)
            Xdd[:, a] = spline.derivative(2)(t)
        sigmas.append(sigma)
    return Xd, Xdd, tuple(sigmas)


@dataclass(frozen=True)
class TrajectoryFile:
    """A trajectory read from CSV: the samples, where each row came from, and whether the
    velocities and accelerations were derived (then ``smoothing`` holds sigma per axis)."""

    trajectory: Trajectory
    table: CsvTable
    derived: bool
    smoothing: tuple | None = None


def read_trajectory(path: str | os.PathLike, smoothing="auto") -> TrajectoryFile:
    """Read a trajectory CSV: all ten columns, or only ``t,x,y,z`` (derivatives from
    :func:`derivatives_from_positions` with ``smoothing``). At least 4 rows."""
    name = os.fspath(path)
    table = read_csv(path, POSITION_COLUMNS, optional=TRAJECTORY_COLUMNS[4:], min_rows=4)
    have = [c for c in TRAJECTORY_COLUMNS[4:] if c in table.columns]
    X = table.stack(("x", "y", "z"))
    t = table.columns["t"]
    if len(have) == 6:
        traj = Trajectory(t, X, table.stack(("xd", "yd", "zd")), table.stack(("xdd", "ydd", "zdd")))
        return TrajectoryFile(traj, table, derived=False)
    if have:
        missing = [c for c in TRAJECTORY_COLUMNS[4:] if c not in table.columns]
        raise CsvError(f"{name}:{table.header_line}: missing column{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(repr(c) for c in missing)}: give all of "
                       f"{','.join(TRAJECTORY_COLUMNS)} or only t,x,y,z (derivatives are then "
                       f"computed)", name, table.header_line, missing[0])
    Xd, Xdd, sig = derivatives_from_positions(t, X, smoothing)
    bad = ~(np.isfinite(Xd).all(axis=1) & np.isfinite(Xdd).all(axis=1))
    if bad.any():
        k = int(np.argmax(bad))
        raise CsvError(f"{table.where(k)}: the velocity and acceleration derived from the positions are "
                       f"not finite (time steps down to {float(np.diff(t).min()):.3g} s are too short)",
                       name, int(table.lines[k]))
    return TrajectoryFile(Trajectory(t, X, Xd, Xdd), table, derived=True, smoothing=sig)


def write_trajectory(path: str | os.PathLike, traj: Trajectory) -> Path:
    """Write a :class:`~delta_dynamics.motion.trajectories.Trajectory` as ``t,x,y,z,xd,...,zdd``."""
    data = np.column_stack((traj.t, traj.X, traj.Xd, traj.Xdd))
    return write_csv(path, TRAJECTORY_COLUMNS, data)
