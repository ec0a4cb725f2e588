"""Platform trajectories with analytic velocity and acceleration.

* :func:`circle`: Asadi & Heydari's evaluation path (a horizontal circle, x = r cos wt,
  y = r sin wt at depth z), with an optional smooth speed ramp so it starts from rest;
* :func:`lissajous`: the Lissajous path of Colombo & Lentini (2020) eq. (18),
  p(u) = (x0 sin(w_x u + phi_x), y0 sin(w_y u + phi_y), z0), travelled at constant speed v;
  u(t) is advanced with their second-order Taylor update, eq. (19);
* :func:`pick_place`: the standard pick-and-place cycle (25 mm up, 305 mm across, 25 mm down
  and back) built from rest-to-rest septic profiles, whose jerk is continuous and bounded.

All return a :class:`Trajectory` sampled at ``dt``; positions in m, base frame, z up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Trajectory:
    t: np.ndarray       # (N,) s
    X: np.ndarray       # (N, 3) m
    Xd: np.ndarray      # (N, 3) m/s
    Xdd: np.ndarray     # (N, 3) m/s^2

    def __len__(self) -> int:
        return len(self.t)

    def shifted(self, offset) -> "Trajectory":
        """The same motion translated by ``offset`` (m)."""
        return Trajectory(self.t, self.X + np.asarray(offset, dtype=float), self.Xd, self.Xdd)

    def then(self, other: "Trajectory") -> "Trajectory":
        """This trajectory followed by ``other`` (its clock continues after this one's end)."""
        dt = other.t[1] - other.t[0] if len(other) > 1 else 0.0
        t2 = other.t - other.t[0] + self.t[-1] + dt
        return Trajectory(np.concatenate((self.t, t2)), np.concatenate((self.X, other.X)),
                          np.concatenate((self.Xd, other.Xd)), np.concatenate((self.Xdd, other.Xdd)))


def _times(duration: float, dt: float) -> np.ndarray:
    if not (duration > 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be > 0 s, got {duration}")
    if not (dt > 0 and dt <= duration):
        raise ValueError(f"time step must be in (0, duration], got {dt}")
    n = int(round(duration / dt))
    return np.arange(n + 1) * dt


def smoothstep7(u):
    """Rest-to-rest septic profile s(u) = 35u^4 - 84u^5 + 70u^6 - 20u^7 on [0, 1]; returns
    (s, ds/du, d2s/du2). The first three derivatives vanish at both ends: continuous,
    bounded jerk."""
    u = np.clip(u, 0.0, 1.0)
    s = u ** 4 * (35 - 84 * u + 70 * u ** 2 - 20 * u ** 3)
    s1 = 140 * u ** 3 * (1 - u) ** 3
    s2 = 420 * u ** 2 * (1 - u) ** 2 * (1 - 2 * u)
    return s, s1, s2


def _ramp_scalar(t: float, ramp: float):
    """:func:`_ramp` for one time on floats: (sigma, d sigma / dt)."""
    if ramp <= 0 or t >= ramp:
        return 1.0, 0.0
    u = max(t / ramp, 0.0)
    return u ** 3 * (10 - 15 * u + 6 * u * u), 30 * u * u * (1 - u) ** 2 / ramp


def _ramp(t, ramp):
    """Speed scale sigma(t) in [0, 1] (quintic smoothstep over ``ramp`` s), its integral and
    derivative, for a path parameter that starts from rest."""
    if ramp <= 0:
        one = np.ones_like(t)
        return one, t.copy(), np.zeros_like(t)
    u = np.clip(t / ramp, 0.0, 1.0)
    sig = u ** 3 * (10 - 15 * u + 6 * u * u)
    integ = np.where(t < ramp, ramp * u ** 4 * (2.5 - 3 * u + u * u), ramp * 0.5 + (t - ramp))
    dsig = np.where(t < ramp, 30 * u * u * (1 - u) ** 2 / ramp, 0.0)
    return sig, integ, dsig


def circle(radius: float = 0.25, depth: float = -0.75, period: float = 2 * math.pi,
           duration: float | None = None, center=(0.0, 0.0), dt: float = 1e-3,
           ramp: float = 0.0) -> Trajectory:
    """Horizontal circle x = cx + r cos(theta), y = cy + r sin(theta), z = depth.

    theta = w t with w = 2 pi / period (Asadi & Heydari's validation circle: r = 250 mm,
    period 2 pi s; their z = 450 mm is measured downward from their base). With ``ramp`` > 0
    the angular speed rises smoothly from 0 to w over ``ramp`` seconds.
    """
    if not radius > 0:
        raise ValueError(f"circle radius must be > 0 m, got {radius}")
    for name, v in (("depth", depth), ("center x", center[0]), ("center y", center[1]), ("ramp", ramp)):
        if not math.isfinite(v):
            raise ValueError(f"circle {name} must be finite, got {v}")
    if not period > 0:
        raise ValueError(f"circle period must be > 0 s, got {period}")
    t = _times(duration if duration is not None else period + ramp, dt)
    w = 2 * math.pi / period
    sig, integ, dsig = _ramp(t, ramp)
    th, thd, thdd = w * integ, w * sig, w * dsig
    c, s = np.cos(th), np.sin(th)
    X = np.stack((center[0] + radius * c, center[1] + radius * s, np.full_like(t, depth)), 1)
    Xd = np.stack((-radius * s * thd, radius * c * thd, np.zeros_like(t)), 1)
    Xdd = np.stack((-radius * (c * thd ** 2 + s * thdd), radius * (-s * thd ** 2 + c * thdd),
                    np.zeros_like(t)), 1)
    return Trajectory(t, X, Xd, Xdd)


def lissajous(speed: float = 0.2, x0: float = 0.1, y0: float = 0.1, depth: float = -0.75,
              wx: float = 6 * math.pi, wy: float = 4 * math.pi, phix: float = math.pi / 2,
              phiy: float = 0.0, dt: float = 1e-3, ramp: float = 0.0) -> Trajectory:
    """The Lissajous path of Colombo & Lentini eq. (18) for 0 <= u <= 1, at constant ``speed``.

    u advances with eq. (19): u_{k+1} = u_k + T_s v / |p'| - T_s^2 v^2 (p'.p'') / (2 |p'|^4)
    (plus T_s^2 v_dot / (2 |p'|) while the speed ramps), evaluated on 20 sub-steps per sample;
    the last sample is placed exactly at u = 1, a shorter step after the one before. Then
    X_dot = p' u_dot and
    X_ddot = p'' u_dot^2 + p' u_ddot with u_dot = v / |p'|, u_ddot = -v^2 (p'.p'') / |p'|^4
    (plus the ramp term v_dot / |p'| when ``ramp`` > 0), so |X_dot| = v exactly.
    """
    if not speed > 0:
        raise ValueError(f"Lissajous speed must be > 0 m/s, got {speed}")

    def dp(u):
        return (x0 * wx * np.cos(wx * u + phix), y0 * wy * np.cos(wy * u + phiy))

    def ddp(u):
        return (-x0 * wx * wx * np.sin(wx * u + phix), -y0 * wy * wy * np.sin(wy * u + phiy))

    us, ts = [0.0], [0.0]
    sub = 20
    h = dt / sub
    u, tt = 0.0, 0.0
    while True:
        for _ in range(sub):
            sig, dsig = _ramp_scalar(tt, ramp)
            v, vd = speed * sig, speed * dsig
            a, b = dp(u)
            c, d = ddp(u)
            n2 = a * a + b * b
            n = math.sqrt(n2)
            # eq. (19), plus the term of the speed's own change during a ramp:
            # u'' = v_dot / |p'| - v^2 (p'.p'') / |p'|^4
            u += h * v / n + 0.5 * h * h * (vd / n - v * v * (a * c + b * d) / (n2 * n2))
            tt += h
        if u >= 1.0:
            break
        us.append(u)
        ts.append(tt)
        if len(us) > 10_000_000:
            raise ValueError("Lissajous path too long for this speed and time step")
    # the last sample lands exactly on u = 1, after a correspondingly shorter step
    a, b = dp(us[-1])
    v_end = speed * _ramp_scalar(ts[-1], ramp)[0]
    us.append(1.0)
    ts.append(ts[-1] + (1.0 - us[-2]) * math.sqrt(a * a + b * b) / v_end)
    u = np.array(us)
    t = np.array(ts)
    sig, _, dsig = _ramp(t, ramp)
    v, vd = speed * sig, speed * dsig
    a, b = dp(u)
    c, d = ddp(u)
    n = np.sqrt(a * a + b * b)
    ud = v / n
    udd = vd / n - v * v * (a * c + b * d) / n ** 4
    X = np.stack((x0 * np.sin(wx * u + phix), y0 * np.sin(wy * u + phiy), np.full_like(u, depth)), 1)
    Xd = np.stack((a * ud, b * ud, np.zeros_like(u)), 1)
    Xdd = np.stack((c * ud * ud + a * udd, d * ud * ud + b * udd, np.zeros_like(u)), 1)
    return Trajectory(t, X, Xd, Xdd)


def pick_place(start=(-0.1525, 0.0, -0.8), height: float = 0.025, width: float = 0.305,
               direction=(1.0, 0.0), lift_time: float = 0.15, move_time: float = 0.4,
               overlap: float = 0.5, dwell: float = 0.1, cycles: int = 1,
               dt: float = 1e-3) -> Trajectory:
    """The standard pick-and-place cycle: up ``height``, across ``width``, down, and back.

    Each leg (A -> B, then B -> A) is the sum of three rest-to-rest septic profiles
    (:func:`smoothstep7`): up over ``lift_time``, across over ``move_time`` starting when the
    lift is ``overlap`` done, down over ``lift_time`` ending ``overlap`` of a lift after the
    move ends; then a ``dwell``. Velocity, acceleration and jerk are continuous; the path
    never dips below the pick/place height.
    """
    if cycles < 1:
        raise ValueError(f"cycles must be >= 1, got {cycles}")
    for name, v in (("height", height), ("width", width), ("lift_time", lift_time),
                    ("move_time", move_time)):
        if not v > 0:
            raise ValueError(f"pick-and-place {name} must be > 0, got {v}")
    if not 0 <= overlap < 1:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    dvec = np.array([direction[0], direction[1], 0.0], dtype=float)
    if not np.linalg.norm(dvec) > 0:
        raise ValueError("direction must be a non-zero horizontal vector")
    dvec /= np.linalg.norm(dvec)
    t_move0 = overlap * lift_time
    t_down0 = t_move0 + move_time - overlap * lift_time
    leg = max(t_down0 + lift_time, lift_time) + dwell
    total = 2 * leg * cycles
    t = _times(total, dt)
    X = np.tile(np.asarray(start, dtype=float), (len(t), 1))
    Xd = np.zeros_like(X)
    Xdd = np.zeros_like(X)
    ez = np.array([0.0, 0.0, 1.0])

    after = np.zeros((len(t) + 1, 3))        # offsets of the finished profiles, as steps

    def add(t0, T, vec):
        # s = 0 before t0 and s = 1 (s' = s'' = 0) after t0 + T: only the window is computed,
        # the finished profile's offset is a step (summed once at the end), so the cost
        # grows with the number of samples, not with samples times cycles
        i0 = int(np.searchsorted(t, t0, side="left"))
        i1 = int(np.searchsorted(t, t0 + T, side="right"))
        s, s1, s2 = smoothstep7((t[i0:i1] - t0) / T)
        X[i0:i1] += s[:, None] * vec
        Xd[i0:i1] += (s1 / T)[:, None] * vec
        Xdd[i0:i1] += (s2 / T ** 2)[:, None] * vec
        after[i1] += vec

    for k in range(2 * cycles):
        t0 = k * leg
        sgn = 1.0 if k % 2 == 0 else -1.0
        add(t0, lift_time, height * ez)
        add(t0 + t_move0, move_time, sgn * width * dvec)
        add(t0 + t_down0, lift_time, -height * ez)
    X += np.cumsum(after[:-1], axis=0)
    return Trajectory(t, X, Xd, Xdd)
