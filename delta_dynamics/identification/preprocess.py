"""Preprocessing of measured joint data: checks, resampling, segmentation, differentiation.

The data come from :mod:`delta_dynamics.data_files` (CSV files and rosbag2 bags, read into
:class:`~delta_dynamics.data_files.joint_data.JointData` by
:func:`~delta_dynamics.data_files.joint_files.read_joint_data`).

Preprocessing (:func:`preprocess`, options :class:`Preprocessing`)
------------------------------------------------------------------
1. Samples whose time is not later than every earlier sample (duplicates, time going
   backwards) are dropped and reported (or rejected with ``strict_time``).
2. A step longer than ``gap_factor`` times the median step splits the data into segments;
   each segment is treated on its own.
3. A segment whose steps jitter by more than ``jitter_tol`` (relative) is resampled onto a
   uniform grid (positions: cubic spline; torques, velocities: linear).
4. Derivatives: ``central`` differences (Kim et al.'s way): q_d(k) = (q(k+1) - q(k-1)) / 2h,
   q_dd(k) = (q(k+1) - 2 q(k) + q(k-1)) / h^2; or ``filter``: the positions are first
   low-passed with a zero-phase Butterworth filter (``scipy.signal.sosfiltfilt``, order
   ``order``, ``cutoff`` Hz), then differentiated as above.
5. Parallel filtering (Gautier 1997; with ``filter`` and ``parallel_filter``): when the
   regressor is built (:func:`.pipeline.build_problem`) its columns *and* the torques pass
   through the same zero-phase filter, so filter(tau) = filter(Y) pi holds exactly for
   constant pi. Filtering only the torques would smear the Coulomb steps that the regressor
   keeps sharp and bias the friction estimates.
6. ``trim`` samples are dropped at both ends of each segment after that (edge effects of the
   filters and of the differences; default 2 fs / cutoff, or 1 for plain central
   differences), then every ``decimate``-th sample is kept. Segments shorter than
   ``min_segment`` samples are dropped.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from delta_dynamics.data_files.joint_data import JointData
from delta_dynamics.kinds import joint_units
from delta_dynamics.limits import MAX_SAMPLES

from . import IdentificationError

#: Joint positions may exceed the robot file's limits by this much (rad) before
#: :func:`check_joint_limits` refuses them (a position controller's overshoot at a limit).
LIMIT_TOLERANCE = 0.01


@dataclass
class Prepared:
    """Differentiated samples on uniform grids, segments concatenated, *not yet trimmed*.

    ``segments`` are (start, stop) index ranges; :meth:`keep` gives the indices that
    survive trimming and decimation. ``sos`` is the parallel filter (None: none).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    segments: list
    dt: float
    source: str = ""
    notes: list = field(default_factory=list)
    sos: np.ndarray | None = None
    trim: int = 1
    decimate: int = 1

    def __len__(self) -> int:
        return len(self.t)

    def keep(self) -> np.ndarray:
        """Indices of the samples used after trimming each segment and decimating."""
        return np.concatenate([np.arange(a + self.trim, b - self.trim, self.decimate)
                               for a, b in self.segments])

    def filtered(self, arr) -> np.ndarray:
        """``arr`` (first axis: samples) through the parallel filter, segment by segment."""
        if self.sos is None:
            return arr
        # scipy is heavy (seconds on a loaded machine): loaded by this path only
        from scipy.signal import sosfiltfilt
        out = np.empty_like(arr)
        for a, b in self.segments:
            out[a:b] = sosfiltfilt(self.sos, arr[a:b], axis=0, padlen=min(b - a - 1, 3 * (2 * len(self.sos) + 1)))
        return out


@dataclass
class Preprocessing:
    """Options of :func:`preprocess` (see the module docstring)."""

    derivative: str = "filter"      # 'filter' | 'central'
    cutoff: float = 20.0            # Hz, low-pass cutoff for 'filter'
    order: int = 4                  # Butterworth order (applied forward and backward)
    parallel_filter: bool = True    # filter regressor columns and torques alike (with 'filter')
    resample: str = "auto"          # 'auto' | 'always' | 'never'
    rate: float | None = None       # Hz of the resampling grid (default 1 / median step)
    jitter_tol: float = 0.05        # relative step deviation that makes 'auto' resample
    gap_factor: float = 5.0         # a step > gap_factor * median step splits the data
    trim: int | None = None         # samples cut at each segment end (None: automatic)
    min_segment: int = 50           # shorter segments are dropped
    min_samples: int = 100          # fewer usable samples in all is an error
    min_duration: float = 1.0       # s; less usable time in all is an error
    decimate: int = 1               # keep every n-th sample after filtering
    strict_time: bool = False       # duplicate / backwards timestamps are errors

    def check(self):
        """Refuse options outside their documented ranges (IdentificationError naming one)."""
        def need(ok, text):
            if not ok:
                raise IdentificationError(text)

        need(self.derivative in ("filter", "central"),
             f"derivative must be 'filter' or 'central', got {self.derivative!r}")
        need(self.resample in ("auto", "always", "never"),
             f"resample must be 'auto', 'always' or 'never', got {self.resample!r}")
        need(_finite(self.cutoff) and self.cutoff > 0, f"filter cutoff must be > 0 Hz, got {self.cutoff}")
        need(_int(self.order) and 1 <= self.order <= 10, f"filter order must be 1..10, got {self.order}")
        need(_int(self.decimate) and 1 <= self.decimate <= MAX_DECIMATE,
             f"decimate must be 1..{MAX_DECIMATE}, got {self.decimate}")
        need(_finite(self.gap_factor) and self.gap_factor > 1, f"gap factor must be > 1, got {self.gap_factor}")
        need(self.rate is None or (_finite(self.rate) and 0 < self.rate <= MAX_RESAMPLE_RATE),
             f"resampling rate must be > 0 and <= {MAX_RESAMPLE_RATE:g} Hz, got {self.rate}")
        need(self.trim is None or (_int(self.trim) and 0 <= self.trim <= MAX_SAMPLES),
             f"trim must be 0..{MAX_SAMPLES} samples, got {self.trim}")
        need(_finite(self.jitter_tol) and self.jitter_tol >= 0, f"jitter tolerance must be >= 0, got {self.jitter_tol}")
        need(_int(self.min_segment) and self.min_segment >= 1, f"min_segment must be >= 1, got {self.min_segment}")
        need(_int(self.min_samples) and self.min_samples >= 1, f"min_samples must be >= 1, got {self.min_samples}")
        need(_finite(self.min_duration) and self.min_duration >= 0,
             f"min_duration must be >= 0 s, got {self.min_duration}")


#: Largest --decimate.
MAX_DECIMATE = 1000
#: Highest resampling rate (Hz); the resampled grid is bounded by MAX_SAMPLES as well.
MAX_RESAMPLE_RATE = 1e6


def _finite(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


# ----------------------------------------------------------------------------- preprocessing

def _check_finite(data: JointData):
    for name, arr in (("t", data.t), ("q", data.q), ("tau", data.tau), ("qd", data.qd), ("qdd", data.qdd)):
        if arr is None:
            continue
        a = np.asarray(arr, dtype=float)
        bad = ~np.isfinite(a)
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            col = "" if a.ndim == 1 else f"{name}{int(np.argwhere(bad)[0][1]) + 1}"
            raise IdentificationError(f"{data.source}: {data.where(k)}: {col or name} is "
                                      f"{a.reshape(len(a), -1)[k].tolist()} (NaN or infinite samples cannot be used)")


def _check_efforts(data: JointData):
    """Refuse a joint whose effort never changes: no torque signal was recorded (all zero, a
    disconnected channel, a wrong column), and a fit would make that joint's parameters
    whatever explains a constant."""
    tau = np.asarray(data.tau, dtype=float)
    for j in range(3):
        col = tau[:, j]
        if np.ptp(col) <= 1e-12 * max(1.0, float(np.abs(col).max())):
            why = "all zero" if not col.any() else f"constant at {col[0]:.6g}"
            raise IdentificationError(
                f"{data.source}: the effort of joint {j + 1} (tau{j + 1}) is {why} over all {len(col)} "
                f"samples ({data.where(0)} to {data.where(len(col) - 1)}): no torque was recorded. "
                "Check the effort column or topic, and --effort torque|current")


def check_joint_limits(data: JointData, robot, tolerance: float = LIMIT_TOLERANCE) -> None:
    """Refuse samples outside the robot file's joint position limits (beyond ``tolerance`` rad,
    or m on a linear Delta):
    the data belong to another robot, or are in degrees, or the limits are wrong. Names the
    first such sample and counts them."""
    q = np.asarray(data.q, dtype=float)
    lo = np.array([p[0] for p in robot.limits.position]) - tolerance
    hi = np.array([p[1] for p in robot.limits.position]) + tolerance
    out = (q < lo) | (q > hi)
    if out.any():
        k, j = (int(v) for v in np.argwhere(out)[0])
        raise outside_limits(robot, data.source, data.where(k), j, q[k, j], int(out.any(axis=1).sum()), len(q),
                             tolerance)


def outside_limits(robot, source: str, where: str, j: int, value: float, outside: int, n: int,
                   tolerance: float = LIMIT_TOLERANCE) -> IdentificationError:
    """The error of :func:`check_joint_limits` (and of the streamed path's check): the first sample
    outside the limits is at ``where`` with q_(j+1) = ``value``; ``outside`` of ``n`` samples are."""
    lim = robot.limits.position[j]
    u = joint_units(robot)
    unit, what = u["position"], ("radians" if u["position"] == "rad" else "metres")
    return IdentificationError(
        f"{source}: {where}: q{j + 1} = {value:.6g} {unit} is outside {u['joint']} {j + 1}'s "
        f"limits [{lim[0]:g}, {lim[1]:g}] {unit} of robot {robot.name} ({outside} of "
        f"{n} samples outside, tolerance {tolerance:g} {unit}): is this the right robot file, "
        f"and are the positions in {what}?")


def _second_difference(x, h):
    """(q_d, q_dd) by central differences on a uniform grid; the two end samples are copies."""
    qd = np.empty_like(x)
    qdd = np.empty_like(x)
    qd[1:-1] = (x[2:] - x[:-2]) / (2.0 * h)
    qdd[1:-1] = (x[2:] - 2.0 * x[1:-1] + x[:-2]) / (h * h)
    qd[0], qd[-1] = qd[1], qd[-2]
    qdd[0], qdd[-1] = qdd[1], qdd[-2]
    return qd, qdd


def _central(x, h):
    d = np.empty_like(x)
    d[1:-1] = (x[2:] - x[:-2]) / (2.0 * h)
    d[0], d[-1] = d[1], d[-2]
    return d


@dataclass
class SegmentPlan:
    """One segment of :class:`TimePlan`: kept samples [a, b), resampled onto ``grid`` points or not."""

    a: int
    b: int
    resample: bool
    grid: int            # samples of the segment after resampling (b - a if not resampled)


@dataclass
class TimePlan:
    """What :func:`preprocess` does to a time base, decided from the times alone (steps 1-3 and
    the filter of the module docstring), so that the in-memory and the streamed paths
    (:mod:`.stream`) preprocess the same samples the same way."""

    idx: np.ndarray | None        # raw indices of the samples in time order (None: all)
    t: np.ndarray                 # their times
    h: float                      # s, step of the (resampling) grid
    segments: list                # SegmentPlan of every segment kept
    sos: np.ndarray | None        # the low-pass ('filter') or None ('central')
    trim: int
    decimate: int
    parallel: bool                # regressor and torques through ``sos`` too
    notes: list
    usable: int                   # samples left after trimming and decimation

    def kept(self, seg: SegmentPlan) -> range:
        """Indices (within the segment's grid) of the samples used after trim and decimation."""
        return range(self.trim, seg.grid - self.trim, self.decimate)


def plan_time(t, opts: Preprocessing, where, src: str, notes: list, max_samples: int = MAX_SAMPLES) -> TimePlan:
    """Steps 1-3 of the module docstring and the filter design, on the times ``t`` (s) alone.

    ``where(k)`` names raw sample k in messages; ``max_samples`` bounds a resampled grid.
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.signal import butter

    t = np.asarray(t, dtype=float)
    n = len(t)
    # 1. time base: keep a sample only if it is later than every earlier one
    keep = np.ones(n, bool)
    keep[1:] = t[1:] > np.maximum.accumulate(t)[:-1]
    idx = None
    if not keep.all():
        dt = np.diff(t)
        dup = np.flatnonzero(dt == 0) + 1
        back = np.flatnonzero(dt < 0) + 1
        parts = []
        if len(dup):
            parts.append(f"{len(dup)} duplicate timestamp(s) (first at {where(dup[0])}, t = {t[dup[0]]:.9g} s)")
        if len(back):
            parts.append(f"{len(back)} timestamp(s) going backwards (first at {where(back[0])}, "
                         f"t = {t[back[0]]:.9g} s after {t[back[0] - 1]:.9g} s)")
        msg = f"{src}: " + " and ".join(parts)
        if opts.strict_time:
            raise IdentificationError(msg)
        notes.append(f"{msg}: {int((~keep).sum())} sample(s) not in time order dropped")
        idx = np.flatnonzero(keep)
        t = t[idx]
    del keep
    if len(t) < opts.min_samples:
        raise IdentificationError(f"{src}: too few samples in time order: {len(t)} (need at least {opts.min_samples})")
    steps = np.diff(t)
    med = float(np.median(steps))
    h = 1.0 / opts.rate if opts.rate else med
    # 2. gaps
    cuts = np.flatnonzero(steps > opts.gap_factor * med) + 1
    bounds = [0, *cuts.tolist(), len(t)]
    if len(cuts):
        g = cuts[0]
        notes.append(f"{len(cuts)} gap(s) in the time stamps (first {steps[g - 1]:.4g} s at "
                     f"{where(idx[g] if idx is not None else g)}, median step {med:.4g} s): data split into "
                     f"{len(cuts) + 1} segments")
    if opts.derivative == "filter":
        fs = 1.0 / h
        if opts.cutoff >= 0.5 * fs:
            raise IdentificationError(f"{src}: filter cutoff {opts.cutoff:g} Hz is not below the Nyquist "
                                      f"frequency {0.5 * fs:g} Hz of the {fs:g} Hz data")
        sos = butter(opts.order, opts.cutoff, fs=fs, output="sos")
        trim = opts.trim if opts.trim is not None else max(2, int(math.ceil(2.0 * fs / opts.cutoff)))
    else:
        sos = None
        trim = opts.trim if opts.trim is not None else 1
    need = max(opts.min_segment, 2 * trim + 3)
    segments, dropped, resampled, start, covered = [], 0, 0, 0, 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b - a < need:
            dropped += 1
            continue
        ts = t[a:b]
        jitter = float(np.max(np.abs(steps[a:b - 1] - h)) / h)
        if opts.resample == "always" or (opts.resample == "auto" and jitter > opts.jitter_tol):
            grid = math.floor((ts[-1] - ts[0]) / h + 1e-9) + 1
            if grid + start > max_samples:
                raise IdentificationError(
                    f"{src}: resampling {ts[-1] - ts[0]:.6g} s at {1.0 / h:.6g} Hz gives more than "
                    f"{max_samples} samples (MAX_SAMPLES in delta_dynamics/limits.py): "
                    "lower --rate or --resample never")
            segments.append(SegmentPlan(a, b, True, grid))
            covered += float((ts[0] + h * (grid - 1)) - ts[0])
            resampled += 1
        else:
            segments.append(SegmentPlan(a, b, False, b - a))
            covered += float(ts[-1] - ts[0])
        start += segments[-1].grid
    if resampled:
        notes.append(f"{resampled} segment(s) resampled to a uniform {1.0 / h:.6g} Hz grid "
                     f"(time steps jittered by more than {100 * opts.jitter_tol:g} %)")
    if dropped:
        notes.append(f"{dropped} segment(s) shorter than {need} samples dropped")
    usable = sum(len(range(trim, s.grid - trim, opts.decimate)) for s in segments)
    if usable < opts.min_samples:
        raise IdentificationError(f"{src}: too few usable samples after preprocessing: {usable} "
                                  f"(need at least {opts.min_samples}; {len(t)} samples in "
                                  f"{len(bounds) - 1} segment(s), {trim} trimmed at each segment end)")
    if covered < opts.min_duration:
        raise IdentificationError(f"{src}: too short: the usable data cover {covered:.4g} s (need at least "
                                  f"{opts.min_duration:g} s of motion: record a longer run, e.g. a few "
                                  "periods of 'delta-identify excite')")
    parallel = sos is not None and opts.parallel_filter
    if opts.derivative == "filter":
        notes.append(f"velocities and accelerations: zero-phase Butterworth low-pass (order {opts.order}, "
                     f"{opts.cutoff:g} Hz) and central differences"
                     + ("; regressor and torques through the same filter (parallel filtering)" if parallel else ""))
    else:
        notes.append("velocities and accelerations: central differences (no filtering)")
    return TimePlan(idx=idx, t=t, h=h, segments=segments, sos=sos, trim=trim, decimate=opts.decimate,
                    parallel=parallel, notes=notes, usable=usable)


def segment_samples(plan: TimePlan, seg: SegmentPlan, ts, qs, taus, qds=None, qdds=None, lo: int = 0,
                    hi: int | None = None):
    """Steps 3-4 of the module docstring on (part of) one segment: (t, q, qd, qdd, tau) on the
    segment's grid points [lo, hi) (default: all).

    ``ts, qs, taus, qds, qdds``: the segment's kept samples (all, or a window of them around
    the grid points asked for). The in-memory path passes whole segments; the streamed one windows that reach
    far enough beyond [lo, hi) for the filter's and the spline's end effects to die out.
    At a window edge that is not a segment end the results are those of the whole segment
    to rounding; at a segment end they are the same computation.
    """
    # scipy is heavy (seconds on a loaded machine): loaded by this path only
    from scipy.interpolate import CubicSpline
    from scipy.signal import sosfiltfilt

    n_seg = seg.b - seg.a
    hi = seg.grid if hi is None else hi
    h = plan.h
    if seg.resample:
        t0 = plan.t[seg.a]
        tn = t0 + h * np.arange(lo, hi)
        qs = CubicSpline(ts, qs, axis=0)(tn)
        taus = np.column_stack([np.interp(tn, ts, taus[:, j]) for j in range(3)])
        if qds is not None:
            qds = np.column_stack([np.interp(tn, ts, qds[:, j]) for j in range(3)])
        if qdds is not None:
            qdds = np.column_stack([np.interp(tn, ts, qdds[:, j]) for j in range(3)])
        ts = tn
        hs = ((t0 + h * (seg.grid - 1)) - t0) / (seg.grid - 1)        # as the grid's ends give it
    else:
        hs = (plan.t[seg.b - 1] - plan.t[seg.a]) / (n_seg - 1)
    if plan.sos is not None:
        padlen = min(seg.grid - 1, 3 * (2 * len(plan.sos) + 1))
        qs_f = sosfiltfilt(plan.sos, qs, axis=0, padlen=padlen)
        if qds is not None:
            qds = sosfiltfilt(plan.sos, qds, axis=0, padlen=padlen)
        if qdds is not None:
            qdds = sosfiltfilt(plan.sos, qdds, axis=0, padlen=padlen)
    else:
        qs_f = qs
    if qds is None:
        qds, qdds = _second_difference(qs_f, hs)
    elif qdds is None:
        qdds = _central(qds, hs)
    return ts, qs_f, qds, qdds, taus


def preprocess(data: JointData, opts: Preprocessing | None = None) -> Prepared:
    """Checked, segmented, resampled, differentiated (and filtered) samples; see the module docstring."""
    opts = opts or Preprocessing()
    opts.check()
    src = data.source
    notes = list(data.notes)
    n = len(data.t)
    if data.q.shape != (n, 3) or data.tau.shape != (n, 3):
        raise IdentificationError(f"{src}: positions and torques must be (N, 3) like the time (N = {n})")
    _check_finite(data)
    if n < opts.min_samples:
        raise IdentificationError(f"{src}: too few samples: {n} (need at least {opts.min_samples})")
    _check_efforts(data)
    plan = plan_time(data.t, opts, data.where, src, notes)
    idx = plan.idx
    pick = (lambda a: a) if idx is None else (lambda a: a[idx])
    q, tau = pick(data.q), pick(data.tau)
    qd_in = pick(data.qd) if data.qd is not None else None
    qdd_in = pick(data.qdd) if data.qdd is not None else None
    out = {k: [] for k in ("t", "q", "qd", "qdd", "tau")}
    segments, start = [], 0
    for seg in plan.segments:
        a, b = seg.a, seg.b
        arrs = segment_samples(plan, seg, plan.t[a:b], q[a:b], tau[a:b],
                               qd_in[a:b] if qd_in is not None else None,
                               qdd_in[a:b] if qdd_in is not None else None)
        for key, arr in zip(("t", "q", "qd", "qdd", "tau"), arrs):
            out[key].append(arr)
        segments.append((start, start + seg.grid))
        start += seg.grid
    cat = {k: np.concatenate(v) for k, v in out.items()}
    return Prepared(t=cat["t"], q=cat["q"], qd=cat["qd"], qdd=cat["qdd"], tau=cat["tau"],
                    segments=segments, dt=plan.h, source=src, notes=notes,
                    sos=plan.sos if plan.parallel else None, trim=plan.trim, decimate=opts.decimate)
