"""Collision detection on the momentum observer's residual (:mod:`delta_dynamics.monitoring.observer`).

A joint i is in collision when |r_i| exceeds its threshold

    h_i,k = threshold_i + b_i,k + beta_i |q_dot_i,k|,    b_i,k = a b_i,k-1 + (1 - a) s_i [|q_dot_i,k| < v_rest]

``threshold_i`` (N m or N, per joint) covers the model error seen in free motion; b_i is the
stiction band: while a joint is at rest or slow (|q_dot| below v_rest) its friction is
anything within +-s_i (the static friction effort, c_s), which the model's f(q_dot) cannot
know, and that uncertainty reaches r through the observer's own first-order filter (a =
exp(-K dt), the same as the observer's), so b_i bounds what stiction can put into r_i at every
sample (a time-variant threshold, Haddadin, De Luca & Albu-Schaeffer 2017, Sec. on
thresholding). v_rest is :data:`FRICTION_SPEED_FACTOR` times the model's Stribeck velocity
(:meth:`CollisionDetector.for_model`): a real joint's friction takes over a range of speeds
(pre-sliding, the Stribeck curve) that a model's sharp sign function does not show; on the
MuJoCo plant (whose dry friction is a regularised constraint) the residual of free fast
motion peaks where a joint slows through 0.1-0.25 rad/s. beta_i |q_dot_i| is the viscous
friction's uncertainty (beta_i = :data:`VISCOUS_SHARE` of the model's c_v): a model that is
right at the calibrating motions' speeds is not quite at faster ones. :func:`thresholds_from_envelope` sets the thresholds from the residual of a
motion without contact: each joint's envelope max_k (|r_i,k| - b_i,k) times (1 +
:data:`MARGIN_DEFAULT`).

:class:`CollisionDetector` is immutable (thresholds, band parameters); its per-run state is a
small array (:meth:`CollisionDetector.start`); :meth:`CollisionDetector.check` is the loop's
one-sample path, :meth:`CollisionDetector.first_collision` the batch form.

>>> det = CollisionDetector([1.0, 1.0, 1.0])
>>> band = det.start()
>>> det.check(band, [0.2, -1.5, 0.1], [0.5, 0.5, 0.5], 0.002)     # joint 2 (index 1) over 1 N m
1
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.monitoring.observer import GAIN_DEFAULT, check_gain, platform_force

#: Thresholds are the largest residual seen in a motion without contact plus 50 % (model error
#: at other speeds and loads than those of the calibrating motion).
MARGIN_DEFAULT = 0.5
#: The stiction band covers joint speeds below this many times the model's Stribeck velocity
#: (nt_robot: 0.6 rad/s of its 8 rad/s). Measured on the MuJoCo plant of nt_robot, 605 random
#: fast pick motions (10 min) and 36 pushes of 30 N during a fast cycle, thresholds recalibrated
#: for each factor (docs/monitoring.md): factor 1, 7 motions with a false collision and the
#: slowest push seen after 11.9 ms; 8, 2 and 9.9 ms; 10 to 20, none and 9.9 ms. 12 is the middle
#: of that range.
FRICTION_SPEED_FACTOR = 12.0
#: The share of the model's viscous friction coefficient c_v added to the threshold per unit of
#: joint speed (beta_i = 0.01 c_v: nt_robot 0.015 N m per rad/s). With the identified model on
#: the MuJoCo plant and the band above, 3 of those 605 motions tripped at 7-8 rad/s (model error
#: beyond the calibrating motions' speeds) without it and none with 0.0067-0.013 c_v, the
#: slowest push still seen within 9.9 ms; 0.027 c_v let one through again.
VISCOUS_SHARE = 0.01


def _three(v, what: str) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"collision detection: {what} must be 3 finite numbers, got {v!r}")
    return a


@dataclass(frozen=True)
class Collision:
    """A detected collision: ``sample`` (index in the record, or the count of samples seen),
    ``joint`` (0-based index of the first joint over its threshold, the largest excess),
    ``residual`` (3,) and ``threshold`` (3,) at that sample (N m or N), ``force`` (N,
    ``base_link``) at the platform that explains the residual, its ``magnitude`` (N) and unit
    ``direction``."""

    sample: int
    joint: int
    residual: tuple
    threshold: tuple
    force: tuple

    @property
    def magnitude(self) -> float:
        """|F| (N)."""
        return float(math.sqrt(sum(f * f for f in self.force)))

    @property
    def direction(self) -> tuple:
        """F / |F| (unit vector in ``base_link``; zeros when F is zero)."""
        n = self.magnitude
        return tuple(f / n for f in self.force) if n > 0 else (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class CollisionDetector:
    """Per-joint thresholds ``thresholds`` (3 efforts > 0, N m or N) on the residual of an
    observer of gain ``gain`` (1/s), plus the stiction band of static friction ``static`` (3
    efforts >= 0; zero: no band) below the joint speed ``rest_speed`` (rad/s or m/s), and
    ``speed_slope`` (3 efforts per unit of joint speed >= 0) times each joint's speed. Use
    :meth:`for_model` to take both from a model's friction."""

    thresholds: tuple
    gain: float = GAIN_DEFAULT
    static: tuple = (0.0, 0.0, 0.0)
    rest_speed: float = 0.0
    speed_slope: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        t = _three(self.thresholds, "thresholds")
        if np.any(t <= 0):
            raise ValueError(f"collision detection: thresholds must be > 0, got {t.tolist()}")
        s = _three(self.static, "static friction")
        if np.any(s < 0):
            raise ValueError(f"collision detection: static friction must be >= 0, got {s.tolist()}")
        if not (math.isfinite(self.rest_speed) and self.rest_speed >= 0):
            raise ValueError(f"collision detection: rest_speed must be a finite number >= 0, got {self.rest_speed!r}")
        k = _three(self.speed_slope, "speed_slope")
        if np.any(k < 0):
            raise ValueError(f"collision detection: speed_slope must be >= 0, got {k.tolist()}")
        object.__setattr__(self, "speed_slope", tuple(k.tolist()))
        object.__setattr__(self, "thresholds", tuple(t.tolist()))
        object.__setattr__(self, "static", tuple(s.tolist()))
        object.__setattr__(self, "gain", check_gain(self.gain))

    @classmethod
    def for_model(cls, model, thresholds, gain: float = GAIN_DEFAULT,
                  speed_factor: float = FRICTION_SPEED_FACTOR,
                  viscous_share: float = VISCOUS_SHARE) -> "CollisionDetector":
        """The detector with the stiction band of ``model``'s friction: static efforts c_s (the
        larger of static and Coulomb) below ``speed_factor`` times its Stribeck velocity; and
        ``viscous_share`` of its viscous coefficients c_v per unit of joint speed."""
        p = model.params
        s = np.maximum(np.asarray(p.static, float), np.asarray(p.coulomb, float))
        slope = float(viscous_share) * np.abs(np.asarray(p.viscous, float))
        return cls(thresholds, gain, tuple(s.tolist()), float(speed_factor) * float(p.stribeck_velocity),
                   tuple(slope.tolist()))

    def start(self) -> np.ndarray:
        """The per-run state: the stiction band b (3,), zero."""
        return np.zeros(3)

    def band_step(self, band: np.ndarray, qd, dt: float) -> np.ndarray:
        """Advance the stiction band ``band`` (in place) by one sample of joint speeds ``qd``."""
        a = math.exp(-self.gain * dt)
        at_rest = np.abs(np.asarray(qd, dtype=float)) < self.rest_speed
        band *= a
        band += (1.0 - a) * np.where(at_rest, self.static, 0.0)
        return band

    def check(self, band: np.ndarray, r, qd, dt: float) -> int | None:
        """One sample: advance the band with ``qd`` over ``dt`` s, then the index of the joint
        whose residual ``r`` exceeds its threshold the most (relative to it), None if none. On
        Python floats (the loop's path): b_i = a b_i + (1 - a) s_i [|q_dot_i| < v_rest] as
        :meth:`band_step`, excess_i = |r_i| - (threshold_i + b_i + beta_i |q_dot_i|), the first
        largest excess_i / threshold_i."""
        a = math.exp(-self.gain * dt)
        c = 1.0 - a
        v = self.rest_speed
        b = band.tolist()
        r = r.tolist() if type(r) is np.ndarray else [float(x) for x in r]
        qd = qd.tolist() if type(qd) is np.ndarray else [float(x) for x in qd]
        best, worst, over = 0, -math.inf, 0.0
        k = self.speed_slope
        for i in range(3):
            b[i] = b[i] * a + c * (self.static[i] if abs(qd[i]) < v else 0.0)
            t = self.thresholds[i]
            x = abs(r[i]) - (t + b[i] + k[i] * abs(qd[i]))
            if x / t > worst:
                best, worst, over = i, x / t, x
        band[0], band[1], band[2] = b
        return best if over > 0.0 else None

    def limits(self, band: np.ndarray, qd) -> np.ndarray:
        """The residual each joint may reach at one sample, h = threshold + b + beta |q_dot|, for
        the stiction band state ``band`` (:meth:`start`, :meth:`check`) and joint speeds ``qd``."""
        return (np.asarray(self.thresholds) + band
                + np.asarray(self.speed_slope) * np.abs(np.asarray(qd, dtype=float)))

    def bands(self, qd, dt: float, start=None) -> np.ndarray:
        """What the detector adds to the thresholds over a record of joint speeds (N, 3),
        vectorised: the stiction band (a linear filter) plus beta |q_dot|. ``start``: the band
        before the first sample (3,) (default zero, as :meth:`start`; a robot that rested
        before the record has its joints' full static friction there)."""
        from scipy.signal import lfilter   # optional heavy import: only the batch form needs it
        qd = np.asarray(qd, dtype=float)
        a = math.exp(-self.gain * dt)
        b0 = np.zeros(3) if start is None else np.asarray(start, dtype=float)
        band, _ = lfilter([1.0 - a], [1.0, -a], self.rested_band(qd), axis=0, zi=(a * b0).reshape(1, 3))
        return band + np.asarray(self.speed_slope) * np.abs(qd)

    def rested_band(self, qd) -> np.ndarray:
        """The band of a robot that has rested long enough at joint speeds ``qd`` ((3,) or
        (N, 3)): each joint slower than the rest speed holds its full static friction, the
        others none (the band's input at every sample)."""
        return np.where(np.abs(np.asarray(qd, dtype=float)) < self.rest_speed, np.asarray(self.static), 0.0)

    def first_collision(self, model, X, r, qd, dt: float) -> Collision | None:
        """The batch form: the first sample of a record (platform positions ``X``, residuals
        ``r``, joint speeds ``qd``, all (N, 3), every ``dt`` s) where a joint is over its
        threshold, as a :class:`Collision`, or None."""
        r = np.asarray(r, dtype=float)
        h = np.asarray(self.thresholds) + self.bands(qd, dt)
        over = np.abs(r) > h
        hit = np.flatnonzero(over.any(axis=1))
        if hit.size == 0:
            return None
        k = int(hit[0])
        i = int(np.argmax((np.abs(r[k]) - h[k]) / np.asarray(self.thresholds)))
        F = platform_force(model, np.asarray(X, dtype=float)[k], r[k])
        return Collision(k, i, tuple(r[k].tolist()), tuple(h[k].tolist()), tuple(F.tolist()))


def thresholds_from_envelope(r, band=None, margin: float = MARGIN_DEFAULT, floor: float = 0.0) -> tuple:
    """Per-joint thresholds (N m or N) from the residual ``r`` (N, 3) of a motion without
    contact: (1 + ``margin``) times each joint's envelope max_k (|r_k| - band_k) (``band``: the
    detector's stiction band over the same record, :meth:`CollisionDetector.bands`; none: zero),
    at least ``floor``. ValueError when a threshold would be zero.

    >>> thresholds_from_envelope([[0.1, -0.2, 0.3], [-0.4, 0.1, 0.0]])
    (0.6000000000000001, 0.30000000000000004, 0.44999999999999996)
    """
    r = np.asarray(r, dtype=float)
    if r.ndim != 2 or r.shape[1] != 3 or len(r) == 0 or not np.all(np.isfinite(r)):
        raise ValueError(f"collision thresholds: the residual must be finite, shape (N, 3), got shape {r.shape}")
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"collision thresholds: margin must be a finite number >= 0, got {margin!r}")
    b = np.zeros_like(r) if band is None else np.asarray(band, dtype=float)
    env = np.maximum(np.abs(r) - b, 0.0).max(axis=0)
    t = np.maximum((1.0 + margin) * env, floor)
    if np.any(t <= 0):
        raise ValueError("collision thresholds: a joint's envelope is zero; give a floor > 0")
    return tuple(t.tolist())
