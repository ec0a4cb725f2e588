"""Identification of long recordings in bounded memory: hours at 1 kHz from a bag or a CSV file.

The in-memory path (:func:`.pipeline.build_problem`) holds the whole regressor, about 1.7 kB per
sample. This one holds the *time base* (8 bytes per sample, 16 where samples are dropped for
their time order) and a few fixed-size blocks:

1. **Read** (:func:`read_stream`): the source a block at a time; positions, efforts (and given
   velocities, accelerations, CSV line numbers) go to a temporary file, the times stay in
   memory. The checks of the in-memory path run on the way (finite numbers, joint limits,
   constant efforts) and name the same sample.
2. **Plan** (:func:`.preprocess.plan_time`): the same function as the in-memory path decides, from the
   times alone, the samples kept, the segments, which are resampled, the filter and the trim.
3. **Blocks** (:func:`iter_blocks`): each segment in blocks of ``block`` grid points, each
   computed on a window reaching ``margin`` points beyond it on both sides. The zero-phase
   filter, the splines and the differences are local up to terms that decay like
   r^n (r: the filter's largest pole radius; 0.27 per knot for the spline); the margin makes
   those terms smaller than 1e-18 of the signal, so every sample equals the whole-segment
   computation to rounding, and at a segment's true ends it is the same computation.
4. **Normal equations as a QR update** (:class:`Accumulator`): per joint j the triangular
   factor R_j of [A_j | b_j] (A_j: the regressor rows of joint j), updated block by block,
   R_j <- qr([R_j; A_j,block b_j,block]). R_1..3 stacked and factored again give the factor
   of the whole stacked system [A | b]: A^T A = R_A^T R_A, A^T b = R_A^T z,
   |b|^2 = |z|^2 + rss_0, which is all the least-squares estimators
   (:mod:`.estimators`: OLS, bounded, truncated SVD, damped) and the base-parameter analysis
   (:func:`.regressors.base_parameters`, a function of A^T A) use. WLS weighs the three R_j
   by the per-joint noise levels and stacks them again: the same estimate as the in-memory one.
5. **Second pass** for what needs the estimate on every sample: the torque metrics (fitness,
   RMS and max error), the residuals' autocorrelation for the covariance (lags up to
   :data:`MAX_LAG`), RLS (a per-sample recursion: it runs over the blocks), the PSO's
   objective on all samples. The PSO itself runs on every s-th sample (``pso_samples``, 20 000
   by default), collected in the first pass: the same rows as the in-memory path uses.
   ``--pso-samples 0`` (all samples) needs the in-memory path and is refused above
   :data:`PSO_ALL_LIMIT` samples.

Memory: about 100-200 MB of blocks and libraries plus 8-16 bytes per sample (an hour at
1 kHz: 29-58 MB), up to :data:`MAX_STREAM_SAMPLES`. Time: linear in the samples.
"""
from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from delta_core.paths import why_missing
from delta_core.text_input import TextInputError, iter_line_blocks
from delta_dynamics.algorithms import UnreachableError, parameter_set
from delta_dynamics.data_files.bag import bag_note, bag_times, check_bag_options, is_bag, open_joint_states
from delta_dynamics.data_files.csv_io import CsvError
from delta_dynamics.data_files.joint_data import (ACCELERATION_COLUMNS, EFFORT_COLUMNS, POSITION_COLUMNS,
                                                  VELOCITY_COLUMNS, JointCsvReader, JointData)
from delta_dynamics.kinds import joint_units
from delta_dynamics.limits import MAX_SAMPLES

from . import IdentificationError
from . import estimators as est_mod
from ._linalg import qr_r, single_threaded_blas
from .preprocess import LIMIT_TOLERANCE, Preprocessing, TimePlan, outside_limits, plan_time, segment_samples
from .metrics import relative_std
from .pipeline import MAX_CONDITION, Options, Problem, Result, default_box  # noqa: F401 (MAX_CONDITION: docs)
from .pso import pso as run_pso
from .regressors import base_parameters, stack

#: ``delta-identify --stream auto`` streams data sets of more samples than this (the in-memory
#: fit holds about 1.7 kB per sample: 170 MB here).
STREAM_ABOVE = 100_000
#: Most samples the streamed path reads (20 h at 1 kHz; the time base costs 8-16 bytes each).
MAX_STREAM_SAMPLES = 72_000_000
#: Grid points per block (at least 4 margins).
BLOCK = 32768
#: Largest lag of the residual autocorrelation (the covariance's correlation factor).
MAX_LAG = 16384
#: ``--pso-samples 0`` (the PSO on every sample) holds the rows in memory: at most this many.
PSO_ALL_LIMIT = MAX_SAMPLES
#: Samples kept for the report's plots.
THIN_SAMPLES = 20000


# ----------------------------------------------------------------------------- 1. read

class Spill:
    """Rows of float64 columns in an anonymous temporary file (removed when closed or at exit)."""

    def __init__(self, width: int, directory=None):
        self.width = int(width)
        self.file = tempfile.TemporaryFile(dir=directory)
        self.n = 0

    def append(self, arr):
        """Write the rows of ``arr`` ((n, width) floats) after those already spilled."""
        arr = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1, self.width)
        self.file.seek(self.n * self.width * 8)
        self.file.write(arr.tobytes())
        self.n += len(arr)

    def rows(self, a: int, b: int) -> np.ndarray:
        """Rows [a, b) as a fresh (b - a, width) array."""
        out = np.empty((max(b - a, 0), self.width))
        if b > a:
            self.file.seek(a * self.width * 8)
            got = self.file.readinto(memoryview(out).cast("B"))
            if got != out.nbytes:
                raise OSError(f"temporary sample file: read {got} of {out.nbytes} bytes")
        return out

    def close(self):
        """Close the temporary file (which removes it)."""
        self.file.close()


@dataclass
class StreamedData:
    """Samples read by :func:`read_stream`: the times in memory, the rest in a :class:`Spill`."""

    t: np.ndarray
    spill: Spill
    columns: dict                   # name -> slice of the spill's columns
    source: str
    unit: str
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.t)

    def where(self, k: int) -> str:
        """Where sample ``k`` came from, for messages: its CSV line, or its message number."""
        if "line" in self.columns:
            return f"{self.unit} {int(self.spill.rows(int(k), int(k) + 1)[0, self.columns['line']][0])}"
        return f"{self.unit} {int(k)}"

    def close(self):
        """Release the spilled samples."""
        self.spill.close()


class _Checks:
    """The in-memory path's checks on raw samples, a block at a time (same messages)."""

    def __init__(self, robot, source, effort_name):
        self.source, self.effort_name = source, effort_name
        self.lo = self.hi = None
        if robot is not None:
            self.robot = robot
            self.lo = np.array([p[0] for p in robot.limits.position]) - LIMIT_TOLERANCE
            self.hi = np.array([p[1] for p in robot.limits.position]) + LIMIT_TOLERANCE
        self.outside = 0
        self.first_out = None            # (k, j, value)
        self.first_bad = None            # (k, name, row)
        self.emin = np.full(3, np.inf)
        self.emax = np.full(3, -np.inf)
        self.eabs = np.zeros(3)
        self.e0 = None
        self.n = 0

    def block(self, cols: dict):
        """Check one block of raw samples (``cols``: ``t``, ``q``, ``tau``, ...), remembering the
        first problem of each kind for :meth:`finish`."""
        k0 = self.n
        n = len(cols["t"])
        if self.first_bad is None:
            for name in ("t", "q", "tau", "qd", "qdd"):
                a = cols.get(name)
                if a is None:
                    continue
                bad = ~np.isfinite(a)
                if bad.any():
                    i = int(np.argwhere(bad)[0][0])
                    col = "" if a.ndim == 1 else f"{name}{int(np.argwhere(bad)[0][1]) + 1}"
                    self.first_bad = (k0 + i, col or name, a.reshape(n, -1)[i].tolist())
                    break
        if self.lo is not None:
            q = cols["q"]
            out = (q < self.lo) | (q > self.hi)
            if out.any():
                if self.first_out is None:
                    i, j = (int(v) for v in np.argwhere(out)[0])
                    self.first_out = (k0 + i, j, float(q[i, j]))
                self.outside += int(out.any(axis=1).sum())
        e = cols["tau"]
        with np.errstate(invalid="ignore"):
            self.emin = np.minimum(self.emin, e.min(axis=0))
            self.emax = np.maximum(self.emax, e.max(axis=0))
            self.eabs = np.maximum(self.eabs, np.abs(e).max(axis=0))
        if self.e0 is None and n:
            self.e0 = e[0].copy()
        self.n += n

    def finish(self, where, min_samples: int):
        """Raise what the in-memory path would raise first (limits, NaN, too few, constant effort)."""
        if self.first_out is not None:
            k, j, v = self.first_out
            raise outside_limits(self.robot, self.source, where(k), j, v, self.outside, self.n, LIMIT_TOLERANCE)
        if self.first_bad is not None:
            k, name, row = self.first_bad
            raise IdentificationError(f"{self.source}: {where(k)}: {name} is {row} "
                                      "(NaN or infinite samples cannot be used)")
        if self.n < min_samples:
            raise IdentificationError(f"{self.source}: too few samples: {self.n} (need at least {min_samples})")
        for j in range(3):
            if self.emax[j] - self.emin[j] <= 1e-12 * max(1.0, float(self.eabs[j])):
                why = "all zero" if self.eabs[j] == 0 else f"constant at {self.e0[j]:.6g}"
                raise IdentificationError(
                    f"{self.source}: the effort of joint {j + 1} ({self.effort_name}{j + 1}) is {why} over all "
                    f"{self.n} samples ({where(0)} to {where(self.n - 1)}): no torque was recorded. "
                    "Check the effort column or topic, and --effort torque|current")


def read_stream(path, robot, topic: str = "/joint_states", effort: str = "torque", stamp: str = "header",
                opts: Preprocessing | None = None, progress=None,
                max_samples: int | None = None) -> StreamedData:
    """Read a bag or a CSV file for :func:`stream_problem` (step 1 of the module docstring).

    ``progress(done, total)``: after each block (total: the bag's message count, or the CSV
    file's size in bytes with done in bytes too).
    """
    opts = opts or Preprocessing()
    opts.check()
    max_samples = MAX_STREAM_SAMPLES if max_samples is None else int(max_samples)
    limit = ("MAX_STREAM_SAMPLES in delta_dynamics/identification/stream.py" if max_samples == MAX_STREAM_SAMPLES
             else "MAX_SAMPLES in delta_dynamics/limits.py")
    p = Path(path)
    if not p.exists():
        raise IdentificationError(why_missing(p, "a data file"))
    if is_bag(p):
        return _read_bag_stream(p, robot, topic, effort, stamp, opts, progress, max_samples, limit)
    if p.is_dir():
        raise IdentificationError(f"{p}: a directory without metadata.yaml (not a rosbag2 bag)")
    if effort != "torque":
        raise IdentificationError(f"{p}: CSV files hold torques (tau1..3) or forces (f1..3); "
                                  "--effort current applies to bags")
    return _read_csv_stream(p, robot, opts, progress, max_samples, limit)


def _finish(checks, data, opts):
    try:
        checks.finish(data.where, opts.min_samples)
    except BaseException:
        data.close()
        raise
    return data


def _read_bag_stream(path, robot, topic, effort, stamp, opts, progress, max_samples, limit):
    check_bag_options(effort, stamp)
    m = robot.mass.motor
    factor = m.torque_constant * m.gear_ratio
    ename = joint_units(robot)["effort_column"]
    spill = Spill(6)
    times = []
    checks = _Checks(robot, f"{path} {topic}", ename)
    try:
        with open_joint_states(path, topic, robot.joint_names) as bag:
            total = bag.count
            if total > max_samples:
                raise IdentificationError(f"{path}: topic {topic} has {total} messages, more than the "
                                          f"{max_samples} samples one run may use ({limit}): split the recording")
            for hs, rx, q, tau in bag.blocks(max_messages=max_samples,
                                             limit_text=f", the most one run may use ({limit})"):
                if effort == "current":
                    tau = tau * float(factor)
                times.append(bag_times(hs, rx, stamp))
                checks.block({"t": times[-1], "q": q, "tau": tau})
                spill.append(np.hstack((q, tau)))
                if progress is not None:
                    progress(spill.n, max(total, spill.n))
        if spill.n == 0:
            raise IdentificationError(f"{path}: topic {topic} has no messages")
        t_ns = np.concatenate(times)
        times.clear()
        t = (t_ns - t_ns[0]).astype(float) * 1e-9
        del t_ns
    except BaseException:
        spill.close()
        raise
    data = StreamedData(t=t, spill=spill, columns={"q": slice(0, 3), "tau": slice(3, 6)},
                        source=f"{path} {topic}", unit=f"{topic} message",
                        notes=[bag_note(spill.n, path, topic, effort, factor, stamp)])
    return _finish(checks, data, opts)


def _read_csv_stream(path, robot, opts, progress, max_samples, limit):
    col = None
    if robot is not None:
        col = joint_units(robot)["effort_column"]
    reader = JointCsvReader(path, col, max_rows=max_samples, limit_name=limit)
    size = max(path.stat().st_size, 1) if path.is_file() else 0
    spill = None
    times, layout = [], None
    checks = None
    done_bytes = 0
    try:
        try:
            for first, block in iter_line_blocks(path):
                reader.add_block(first, block)
                done_bytes += sum(len(s) + 1 for s in block)
                if not reader.blocks:
                    continue
                if layout is None:
                    c = {h: j for j, h in enumerate(reader.wanted)}
                    names = {"q": POSITION_COLUMNS, "tau": EFFORT_COLUMNS[reader.effort]}
                    if reader.has(VELOCITY_COLUMNS):
                        names["qd"] = VELOCITY_COLUMNS
                        if reader.has(ACCELERATION_COLUMNS):
                            names["qdd"] = ACCELERATION_COLUMNS
                    layout = {k: [c[x] for x in v] for k, v in names.items()}
                    width = 3 * len(layout) + 1
                    spill = Spill(width)
                    checks = _Checks(robot, str(path), reader.effort)
                    it = c["t"]
                for arr, lines in zip(reader.blocks, reader.lines):
                    cols = {k: arr[:, v] for k, v in layout.items()}
                    cols["t"] = arr[:, it]
                    times.append(cols["t"].copy())
                    checks.block(cols)
                    spill.append(np.hstack([cols[k] for k in layout] + [np.asarray(lines, float)[:, None]]))
                reader.blocks.clear()
                reader.lines.clear()
                if progress is not None and size:
                    progress(min(done_bytes, size), size)
        except TextInputError as e:
            raise CsvError(str(e), str(path), e.line) from None
        reader.check_read()
        t = np.concatenate(times)
        times.clear()
    except BaseException:
        if spill is not None:
            spill.close()
        raise
    columns, k = {}, 0
    for name in layout:
        columns[name] = slice(k, k + 3)
        k += 3
    columns["line"] = slice(k, k + 1)
    data = StreamedData(t=t, spill=spill, columns=columns, source=str(path), unit="line")
    return _finish(checks, data, opts)


# ----------------------------------------------------------------------------- 3. blocks

def margin(plan: TimePlan) -> int:
    """Grid points a block's window reaches beyond it (module docstring, step 3)."""
    m = 64                                                  # splines (0.27^40 ~ 1e-23) and differences
    if plan.sos is not None:
        # scipy is heavy (seconds on a loaded machine): loaded by this path only
        from scipy.signal import sos2zpk
        r = float(np.max(np.abs(sos2zpk(plan.sos)[1])))
        per_pass = int(math.ceil(math.log(1e-18) / math.log(r))) if 0 < r < 1 else 64
        m += per_pass * (2 if plan.parallel else 1)
    return m


@dataclass
class Block:
    """The used samples of one block: times, joint state, regressor Y (n, 3, p), efforts (n, 3)
    (after the parallel filter), and the index of its first sample among all used samples."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    Y: np.ndarray
    tau: np.ndarray
    first: int


def iter_blocks(model, pset, data: StreamedData, plan: TimePlan, block: int = BLOCK, what: str = "the"):
    """Yield the :class:`Block` s of the used samples in order (step 3 of the module docstring)."""
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.signal import sosfiltfilt
    M = margin(plan)
    B = max(int(block), 4 * M)
    cols = data.columns
    sos = plan.sos if plan.parallel else None
    k_used = 0
    for seg in plan.segments:
        G, n_seg = seg.grid, seg.b - seg.a
        ts_seg = plan.t[seg.a:seg.b]
        for g0 in range(0, G, B):
            g1 = min(G, g0 + B)
            lo_k, hi_k = max(g0, plan.trim), min(g1, G - plan.trim)
            if hi_k <= lo_k:
                continue
            i0 = -(-(lo_k - plan.trim) // plan.decimate)
            i1 = -(-(hi_k - plan.trim) // plan.decimate)
            ks = plan.trim + plan.decimate * np.arange(i0, i1)
            if not len(ks):
                continue
            w0, w1 = max(0, g0 - M), min(G, g1 + M)
            if seg.resample:
                t0 = plan.t[seg.a]
                s0 = max(0, int(np.searchsorted(ts_seg, t0 + plan.h * w0, "right")) - 1 - 64)
                s1 = min(n_seg, int(np.searchsorted(ts_seg, t0 + plan.h * (w1 - 1), "left")) + 1 + 64)
            else:
                s0, s1 = w0, w1
            raw = _raw_rows(data, plan, seg.a + s0, seg.a + s1)
            pick = lambda name: raw[:, cols[name]] if name in cols else None  # noqa: E731
            ts, q, qd, qdd, tau = segment_samples(plan, seg, ts_seg[s0:s1], pick("q"), pick("tau"),
                                                  pick("qd"), pick("qdd"), lo=w0, hi=w1)
            try:
                Y = pset.regressor(model, q, qd, qdd)
            except UnreachableError as e:
                k = e.index
                where = f" at t = {ts[k]:.6g} s" if k is not None and 0 <= k < len(ts) else ""
                raise IdentificationError(f"{data.source}: {what} joint positions{where} are outside the "
                                          f"robot's workspace ({e}); is this the right robot file?") from None
            if sos is not None:
                padlen = min(G - 1, 3 * (2 * len(sos) + 1))
                p = Y.shape[-1]
                Y = sosfiltfilt(sos, Y.reshape(len(Y), 3 * p), axis=0, padlen=padlen).reshape(len(Y), 3, p)
                tau = sosfiltfilt(sos, tau, axis=0, padlen=padlen)
            sel = ks - w0
            yield Block(ts[sel], q[sel], qd[sel], qdd[sel], np.ascontiguousarray(Y[sel]),
                        np.ascontiguousarray(tau[sel]), k_used)
            k_used += len(sel)


def _raw_rows(data: StreamedData, plan: TimePlan, a: int, b: int) -> np.ndarray:
    """Raw spill rows of the kept samples [a, b) (kept: in time order, :attr:`TimePlan.idx`)."""
    if plan.idx is None:
        return data.spill.rows(a, b)
    idx = plan.idx[a:b]
    return data.spill.rows(int(idx[0]), int(idx[-1]) + 1)[idx - idx[0]]


# ----------------------------------------------------------------------------- 4. accumulate

class Accumulator:
    """Per joint, the triangular factor of [A_j | b_j], updated a block at a time (step 4)."""

    def __init__(self, p: int):
        self.p = p
        self.R = [np.zeros((0, p + 1)) for _ in range(3)]
        self.n = 0

    def add(self, Y, tau):
        """Fold a block of regressor rows ``Y`` (n, 3, p) and efforts ``tau`` (n, 3) into the
        per-joint triangular factors (a QR update)."""
        for j in range(3):
            self.R[j] = qr_r(np.vstack((self.R[j], np.column_stack((Y[:, j, :], tau[:, j])))))
        self.n += len(tau)

    def factor(self, weights=None) -> np.ndarray:
        """The (p+1, p+1) factor of the stacked system (rows of joint j times ``weights[j]``)."""
        w = np.ones(3) if weights is None else np.asarray(weights, float)
        return qr_r(np.vstack([self.R[j] * w[j] for j in range(3)]))


@dataclass
class StreamProblem:
    """The streamed counterpart of :class:`.pipeline.Problem` (see the module docstring)."""

    pset: object
    model: object
    data: StreamedData
    plan: TimePlan
    nominal: np.ndarray
    acc: Accumulator | None
    pso_rows: tuple | None             # (A, b) of every pso_stride-th sample
    pso_stride: int
    thin: Problem | None               # every few samples, for plots
    source: str = ""
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    what: str = "the"
    block: int = BLOCK

    def __len__(self) -> int:
        return self.plan.usable

    def blocks(self):
        """The regressor blocks of the data (:func:`iter_blocks`), read again from the spill."""
        return iter_blocks(self.model, self.pset, self.data, self.plan, self.block, self.what)

    def close(self):
        """Release the streamed samples."""
        self.data.close()


class ThinProblem(Problem):
    """Every few samples of a streamed problem as a :class:`.pipeline.Problem` (plots);
    ``len()`` is the number of samples it stands for."""

    total: int = 0

    def __len__(self) -> int:
        return self.total


def _thin_problem(pset, model, parts, nominal, source, notes, total) -> Problem:
    t, q, qd, qdd, Y, tau = (np.concatenate([p[i] for p in parts]) for i in range(6))
    A, b = stack(Y, tau)
    thin = ThinProblem(pset, model, t, q, qd, qdd, tau, Y, A, b, nominal, source, list(notes))
    thin.total = int(total)
    return thin


def in_memory(data: StreamedData):
    """The samples of ``data`` as a :class:`~delta_dynamics.data_files.joint_data.JointData` (for the in-memory path)."""
    raw = data.spill.rows(0, data.spill.n)
    c = data.columns
    get = lambda k: np.ascontiguousarray(raw[:, c[k]]) if k in c else None  # noqa: E731
    lines = raw[:, c["line"]][:, 0].astype(np.int64) if "line" in c else None
    return JointData(t=data.t, q=get("q"), tau=get("tau"), qd=get("qd"), qdd=get("qdd"), source=data.source,
                     unit=data.unit, first=0, notes=list(data.notes), lines=lines)


def stream_problem(model, data: StreamedData, pset, opts: Preprocessing | None = None,
                   options: Options | None = None, what: str = "the", accumulate: bool = True,
                   progress=None, block: int = BLOCK) -> StreamProblem:
    """Plan the samples of ``data`` and (``accumulate``) run the first pass: the QR update, the
    PSO's rows, the thinned samples for plots. ``progress(done, total)`` in samples."""
    t0 = time.perf_counter()
    opts = opts or Preprocessing()
    options = options or Options()
    notes = list(data.notes)
    plan = plan_time(data.t, opts, data.where, data.source, notes, max_samples=MAX_STREAM_SAMPLES)
    nominal = pset.nominal(model)
    n = plan.usable
    s_pso = 1
    if options.pso_samples is not None and n > options.pso_samples:
        s_pso = int(math.ceil(n / options.pso_samples))
    sp = StreamProblem(pset, model, data, plan, nominal, None, None, s_pso, None, data.source, notes,
                       what=what, block=block)
    if not accumulate:
        return sp
    with single_threaded_blas():
        acc = Accumulator(len(pset))
        s_thin = max(1, int(math.ceil(n / THIN_SAMPLES)))
        pso_parts, thin_parts = [], []
        pso_ok = options.pso_samples is not None or n <= PSO_ALL_LIMIT
        for blk in sp.blocks():
            acc.add(blk.Y, blk.tau)
            k = blk.first + np.arange(len(blk.t))
            if pso_ok:
                m = k % s_pso == 0
                pso_parts.append((blk.Y[m].copy(), blk.tau[m].copy()))
            m = k % s_thin == 0
            thin_parts.append(tuple(a[m].copy() for a in (blk.t, blk.q, blk.qd, blk.qdd, blk.Y, blk.tau)))
            if progress is not None:
                progress(acc.n, n)
    sp.acc = acc
    if pso_ok:
        sp.pso_rows = stack(np.concatenate([p[0] for p in pso_parts]), np.concatenate([p[1] for p in pso_parts]))
    sp.thin = _thin_problem(pset, model, thin_parts, nominal, data.source, notes, n)
    sp.seconds = time.perf_counter() - t0
    return sp


# ----------------------------------------------------------------------------- estimators

def _reduce(R, p, ind, dep, nominal):
    """[R_ind | R_b - R_dep pi_dep] of a factor of [A | b]: the held parameters' share moved to b."""
    if not dep:
        return R[:, :p], R[:, p]
    return R[:, ind], R[:, p] - R[:, dep] @ nominal[dep]


def identify_stream(problem: StreamProblem, method: str, opts: Options | None = None, progress=None) -> Result:
    """:func:`.pipeline.identify` on a streamed problem, without the metrics (see
    :func:`finish`, which fills them in with one more pass over the data for every result)."""
    opts = opts or Options()
    if method not in est_mod.METHODS:
        raise IdentificationError(f"unknown method {method!r}: use one of {', '.join(est_mod.METHODS)}")
    t0 = time.perf_counter()
    pset, nom, acc = problem.pset, problem.nominal, problem.acc
    names = pset.names
    p = len(names)
    rows = 3 * acc.n
    with single_threaded_blas():
        R = acc.factor()
        base = base_parameters(R[:, :p], names, opts.rank_tol)
        held, ind, dep = (), list(range(p)), []
        if not base.full_rank:
            reasons = base.explain_dependent()
            if not opts.hold_unidentifiable:
                raise IdentificationError(
                    f"{problem.source}: the data do not excite all parameters (regressor rank "
                    f"{base.rank} of {p}); not identifiable: " + "; ".join(reasons)
                    + ". Record a richer motion (delta-identify excite) or pass --hold-unidentifiable "
                      "to keep these at the robot file's values")
            held = tuple(names[d] for d in base.dependent)
            ind, dep = sorted(base.independent), sorted(base.dependent)
        cond, weak = base.weakest(ind)
        if cond > opts.max_condition:
            shown = [f"{v:+.2f} {n}" for n, v in weak.items() if abs(v) >= 0.25][:6]
            raise IdentificationError(
                f"{problem.source}: the data barely excite some parameters: condition number {cond:.4g} of "
                f"the column-normalised regressor (limit {opts.max_condition:g}, --max-condition); least "
                f"excited: {' '.join(shown)}. Record a richer motion (delta-identify excite)")
        A, b = _reduce(R, p, ind, dep, nom)
        sub = tuple(names[i] for i in ind)
        nn = pset.nonnegative[ind]
        info = {}
        if method == "ols":
            e = est_mod.ols(A, b, sub, rows=rows)
        elif method == "wls":
            e0 = est_mod.ols(A, b, rows=rows)
            sig = []
            for j in range(3):
                Aj, bj = _reduce(acc.R[j], p, ind, dep, nom)
                r = Aj @ e0.values - bj
                sig.append(math.sqrt(float(r @ r) / acc.n))
            sigma = np.asarray(sig)
            if not np.all(sigma > 0):
                raise IdentificationError(f"per-joint noise levels must be 3 positive numbers, got {sigma.tolist()}")
            Aw, bw = _weighted_reduced(acc, p, ind, dep, nom, sigma)
            e = est_mod.ols(Aw, bw, sub, rows=rows)
            e.method = "wls"
            e.info["joint_sigma"] = [float(s) for s in sigma]
        elif method == "bounded":
            e = est_mod.bounded(A, b, sub, lb=np.where(nn, 0.0, -np.inf), ub=np.full(len(ind), np.inf), rows=rows)
        elif method == "tsvd":
            e = est_mod.tsvd(A, b, sub, tol=opts.tsvd_tol, rank=opts.tsvd_rank, rows=rows)
        elif method == "dls":
            prior = nom[ind] if opts.dls_prior == "nominal" else None
            e = est_mod.dls(A, b, sub, damping=opts.dls_damping, prior=prior, rows=rows)
            e.info["prior"] = opts.dls_prior
        elif method == "rls":
            # a recursion over the samples in order: runs in finish()'s pass; norms from the factor
            norms2 = np.einsum("ij,ij->j", A, A)
            if np.any(norms2 <= 0):
                raise IdentificationError("the regressor has a zero column: a parameter is not excited")
            e = est_mod.Estimate("rls", sub, np.zeros(len(ind)), None, 0.0,
                                 info={"forgetting": opts.rls_forgetting, "samples": acc.n})
            info["rls"] = est_mod.RecursiveLeastSquares(len(ind), forgetting=opts.rls_forgetting,
                                                        P0=1e4 * rows / norms2)
        else:
            if problem.pso_rows is None:
                raise IdentificationError(
                    f"{problem.source}: --pso-samples 0 (the PSO on every sample) holds all {len(problem)} samples' "
                    f"regressor in memory: at most {PSO_ALL_LIMIT} samples; give --pso-samples N (default 20000)")
            Ap, bp = problem.pso_rows
            if dep:
                bp = bp - Ap[:, dep] @ nom[dep]
                Ap = Ap[:, ind]
            lo, hi = opts.pso_box if opts.pso_box is not None else default_box(pset, problem.model)
            lo, hi = np.asarray(lo, float)[ind], np.asarray(hi, float)[ind]
            r = run_pso(Ap, bp, lo, hi, n_particles=opts.pso_particles, n_neighbours=opts.pso_neighbours,
                        iterations=opts.pso_iterations, seed=opts.seed, max_samples=None, progress=progress)
            e = est_mod.Estimate("pso", sub, r.values, None, r.seconds,
                                 info={"objective": r.score, "history": r.history, "rows_used": r.rows_used,
                                       "rows_total": rows, "box": (lo.tolist(), hi.tolist()),
                                       "particles": opts.pso_particles, "neighbours": opts.pso_neighbours,
                                       "iterations": opts.pso_iterations, "seed": opts.seed})
    values = nom.astype(float).copy()
    values[ind] = e.values
    full = est_mod.Estimate(method, names, values, None, e.seconds, e.info)
    res = Result(method=method, pset=pset, estimate=full, base=base, held=held, nominal=nom,
                 fit={}, validation=None, condition=base.condition, seconds=time.perf_counter() - t0,
                 info={"_ind": ind, "_cov": e.cov, **info})
    return res


def _weighted_reduced(acc, p, ind, dep, nom, sigma):
    Rs = []
    for j in range(3):
        Aj, bj = _reduce(acc.R[j], p, ind, dep, nom)
        Rs.append(np.column_stack((Aj, bj)) / sigma[j])
    R = qr_r(np.vstack(Rs))
    return R[:, :-1], R[:, -1]


# ----------------------------------------------------------------------------- 5. second pass

class _Metrics:
    """Torque metrics of one parameter vector over blocks (as :func:`.metrics.torque_metrics`)."""

    def __init__(self, values, lags: int | None):
        self.x = np.asarray(values, float)
        self.n = 0
        self.se = np.zeros(3)
        self.me = np.zeros(3)
        self.pmin = np.full(3, np.inf)
        self.pmax = np.full(3, -np.inf)
        self.st = np.zeros(3)
        self.l1 = 0.0
        self.ac = _AutoCorrelation(lags) if lags else None

    def add(self, Y, tau):
        """Accumulate the errors of one block: regressor rows ``Y`` (n, 3, p), efforts ``tau``."""
        pred = Y @ self.x
        r = pred - tau
        self.n += len(r)
        self.se += np.einsum("ij,ij->j", r, r)
        self.me = np.maximum(self.me, np.abs(r).max(axis=0))
        self.pmin = np.minimum(self.pmin, pred.min(axis=0))
        self.pmax = np.maximum(self.pmax, pred.max(axis=0))
        self.st += np.einsum("ij,ij->j", tau, tau)
        self.l1 += float(np.abs(r).sum())
        if self.ac is not None:
            self.ac.add(-r)

    def result(self) -> dict:
        """The metrics of the in-memory path (Kim et al. eq. 41 fitness, RMS and largest error,
        RMS effort, sample count) from the accumulated sums."""
        rms = np.sqrt(self.se / self.n)
        rng = self.pmax - self.pmin
        with np.errstate(divide="ignore", invalid="ignore"):
            fit = np.where(rng > 0, 1.0 - rms / rng, np.nan)
        return {"fitness": fit, "rms_error": rms, "max_error": self.me, "rms_torque": np.sqrt(self.st / self.n),
                "samples": int(self.n)}


class _AutoCorrelation:
    """Autocorrelation of a residual series (n, 3) fed in blocks, pooled over the joints, up to
    ``lags``; :meth:`factor` is :func:`.pipeline.correlation_factor` of the whole series while
    the autocorrelation falls below the threshold within ``lags``."""

    def __init__(self, lags: int):
        self.K = int(lags)
        self.S = np.zeros((self.K, 3))
        self.total = np.zeros(3)
        self.head = np.zeros((0, 3))
        self.carry = np.zeros((0, 3))
        self.n = 0

    def add(self, r):
        """Accumulate the autocorrelation of one block of residuals ``r`` (n, 3)."""
        # scipy is heavy (seconds on a loaded machine): loaded by this path only
        from scipy.fft import irfft, next_fast_len, rfft
        r = np.asarray(r, float)
        nb, nc = len(r), len(self.carry)
        x = np.vstack((self.carry, r))
        y = x.copy()
        y[:nc] = 0.0
        L = next_fast_len(len(x) + self.K, real=True)
        c = irfft(np.conj(rfft(x, L, axis=0)) * rfft(y, L, axis=0), L, axis=0)
        k = min(self.K, len(x))
        self.S[:k] += c[:k]
        self.total += r.sum(axis=0)
        if len(self.head) < self.K:
            self.head = np.vstack((self.head, r[:self.K - len(self.head)]))
        self.carry = x[-(self.K - 1):] if self.K > 1 else x[:0]
        self.n += nb

    def factor(self, threshold: float = 0.05) -> tuple:
        """(factor, lags summed, whether the threshold was reached within the lags)."""
        n = self.n
        if n < 4:
            return 1.0, 0, True
        K = min(self.K, n)
        mu = self.total / n
        first = np.vstack((np.zeros((1, 3)), np.cumsum(self.head[:K], axis=0)))[:K]      # sum of the first k
        tail = self.carry[::-1] if len(self.carry) else np.zeros((0, 3))
        last = np.vstack((np.zeros((1, 3)), np.cumsum(tail, axis=0)))[:K]              # sum of the last k
        if len(last) < K:
            last = np.vstack((last, np.repeat(last[-1:], K - len(last), axis=0)))
        ks = np.arange(K)[:, None]
        ac = (self.S[:K] - mu * ((self.total - last) + (self.total - first)) + (n - ks) * mu * mu).sum(axis=1)
        if ac[0] <= 0:
            return 1.0, 0, True
        ac = ac / ac[0]
        below = np.flatnonzero(ac < threshold)
        k = int(below[0]) if len(below) else K
        return float(max(1.0, 1.0 + 2.0 * ac[1:k].sum())), k, bool(len(below))


def finish(results, problem: StreamProblem, validation: StreamProblem | None = None, progress=None,
           vprogress=None) -> list:
    """Fill in what needs every sample (step 5): RLS, the fit metrics, the PSO's objective on
    all samples, the covariances' correlation factor; then the validation metrics and a thinned
    validation problem for plots (``validation.thin``). Returns ``results``."""
    n = len(problem)
    with single_threaded_blas():
        rls = [r for r in results if "rls" in r.info]
        t_rls = time.perf_counter()
        for blk in problem.blocks() if rls else ():
            for r in rls:
                est = r.info["rls"]
                ind = r.info["_ind"]
                Yb, tb = blk.Y, blk.tau
                if len(ind) != Yb.shape[-1]:
                    dep = [i for i in range(Yb.shape[-1]) if i not in ind]
                    tb = tb - Yb[:, :, dep] @ r.nominal[dep]
                    Yb = Yb[:, :, ind]
                for k in range(len(tb)):
                    est.update(Yb[k], tb[k])
            if progress is not None:
                progress(blk.first + len(blk.t), 2 * n if rls else n)
        for r in rls:
            r.seconds += time.perf_counter() - t_rls
            r.estimate.seconds = r.seconds
            est = r.info.pop("rls")
            ind = r.info["_ind"]
            r.estimate.values[ind] = est.theta
            r.info["_cov"] = est.P.copy() if r.estimate.info["forgetting"] == 1.0 else None
        mets = [_Metrics(r.values, MAX_LAG if r.info["_cov"] is not None else None) for r in results]
        done = n if rls else 0
        for blk in problem.blocks():
            for m in mets:
                m.add(blk.Y, blk.tau)
            if progress is not None:
                progress(done + blk.first + len(blk.t), n + done)
        for r, m in zip(results, mets):
            r.fit = m.result()
            ind = r.info.pop("_ind")
            cov_ind = r.info.pop("_cov")
            e = r.estimate
            p = len(e.values)
            if r.method == "rls":
                rss = float(m.se.sum())
                s2 = rss / max(3 * n - len(ind), 1)
                e.info["sigma"] = float(np.sqrt(s2))
                cov_ind = s2 * cov_ind if cov_ind is not None else None
            if r.method == "pso":
                e.info["objective"] = m.l1
            if cov_ind is not None:
                kappa, lags, reached = m.ac.factor()
                e.info["autocorrelation_factor"] = kappa
                if not reached:
                    e.info["autocorrelation_lags"] = f"cut at {lags} lags (MAX_LAG)"
                cov = np.zeros((p, p))
                cov[np.ix_(ind, ind)] = cov_ind * kappa
                e.cov = cov
            r.info["relative_std"] = relative_std(e.values, e.std)
        if validation is not None:
            vm = [_Metrics(r.values, None) for r in results]
            nv = len(validation)
            s_thin = max(1, int(math.ceil(nv / THIN_SAMPLES)))
            parts = []
            for blk in validation.blocks():
                for m in vm:
                    m.add(blk.Y, blk.tau)
                k = blk.first + np.arange(len(blk.t))
                sel = k % s_thin == 0
                parts.append(tuple(a[sel].copy() for a in (blk.t, blk.q, blk.qd, blk.qdd, blk.Y, blk.tau)))
                if vprogress is not None:
                    vprogress(blk.first + len(blk.t), nv)
            for r, m in zip(results, vm):
                r.validation = m.result()
            validation.thin = _thin_problem(validation.pset, validation.model, parts, validation.nominal,
                                            validation.source, validation.notes, nv)
    return results


def identify_streamed(model, data: StreamedData, method: str = "bounded", options: Options | None = None,
                      preprocessing: Preprocessing | None = None, validation: StreamedData | None = None,
                      block: int = BLOCK) -> Result:
    """One call from streamed samples to a result (the counterpart of :func:`.pipeline.identify_data`)."""
    opts = options or Options()
    pset = parameter_set(model, opts.params, stribeck=opts.stribeck)
    prob = stream_problem(model, data, pset, preprocessing, opts, block=block)
    vprob = None
    if validation is not None:
        vprob = stream_problem(model, validation, pset, preprocessing, opts, what="validation",
                               accumulate=False, block=block)
    res = identify_stream(prob, method, opts)
    return finish([res], prob, vprob)[0]


def bytes_per_sample(data: StreamedData) -> int:
    """Memory the streamed path holds per sample (the time base)."""
    return int(data.t.itemsize)


__all__ = ["STREAM_ABOVE", "in_memory", "ThinProblem", "MAX_STREAM_SAMPLES", "BLOCK", "MAX_LAG", "PSO_ALL_LIMIT", "Spill", "StreamedData", "read_stream",
           "iter_blocks", "Accumulator", "StreamProblem", "stream_problem", "identify_stream", "finish",
           "identify_streamed", "margin"]
