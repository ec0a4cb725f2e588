"""Platform trajectories with analytic velocity and acceleration.

* :func:`circle`: Asadi & Heydari's evaluation path (a horizontal circle, x = r cos wt,
  y = r sin wt at depth z), with an optional smooth speed ramp so it starts from rest;
* :func:`lissajous`: the Lissajous path of Colombo & Lentini (2020) eq. (18),
  p(u) = (x0 sin(w_x u + phi_x), y0 sin(w_y u + phi_y), z0), travelled at constant speed v;
  u(t) is advanced with their second-order Taylor update, eq. (19);
* :func:`pick_place`: the standard pick-and-place cycle (25 mm up, 305 mm across, 25 mm down
  and back) built from rest-to-rest septic profiles, whose jerk is continuous and bounded;
* :func:`ellipse`: the elliptic test path of Staicu & Carp-Ciocardia (2003) eq. (7).

All return a :class:`~delta_dynamics.common.trajectory.Trajectory` sampled at ``dt``;
positions in m, base frame, z up.
"""
from __future__ import annotations

import math

import numpy as np

from delta_dynamics.algorithms import UnreachableError, inverse_kinematics, workspace_centre
from delta_dynamics.common.trajectory import Trajectory


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


#: How :func:`lissajous` advances the path parameter u: Colombo & Lentini's Taylor update
#: (eq. 19) or the exact arc length.
LISSAJOUS_TIMINGS = ("taylor", "arc-length")


def lissajous(speed: float = 0.2, x0: float = 0.1, y0: float = 0.1, depth: float = -0.75,
              wx: float = 6 * math.pi, wy: float = 4 * math.pi, phix: float = math.pi / 2,
              phiy: float = 0.0, dt: float = 1e-3, ramp: float = 0.0,
              timing: str = "taylor") -> Trajectory:
    """The Lissajous path of Colombo & Lentini eq. (18) for 0 <= u <= 1, at constant ``speed``.

    p(u) = (x0 sin(w_x u + phi_x), y0 sin(w_y u + phi_y), depth); the paper's values are the
    defaults w_x = 6 pi, w_y = 4 pi, phi_x = pi/2, phi_y = 0 (its amplitudes are not given).

    ``timing="taylor"``: u advances with eq. (19): u_{k+1} = u_k + T_s v / |p'| - T_s^2 v^2
    (p'.p'') / (2 |p'|^4) (plus T_s^2 v_dot / (2 |p'|) while the speed ramps), evaluated on
    20 sub-steps per sample. ``timing="arc-length"``: u(t) solves s(u) = integral of v dt
    exactly, s(u) = int_0^u |p'| (Gauss-Legendre quadrature and Newton's method, to rounding),
    vectorised (much faster for long paths). Either way the last sample is placed exactly at
    u = 1, a shorter step after the one before. Then X_dot = p' u_dot and
    X_ddot = p'' u_dot^2 + p' u_ddot with u_dot = v / |p'|, u_ddot = -v^2 (p'.p'') / |p'|^4
    (plus the ramp term v_dot / |p'| when ``ramp`` > 0), so |X_dot| = v exactly.

    >>> tr = lissajous(speed=0.05, x0=0.05, y0=0.05, depth=0.05, timing="arc-length")
    >>> round(float(tr.t[-1]), 3), bool(np.allclose(np.linalg.norm(tr.Xd, axis=1), 0.05))
    (15.289, True)
    """
    if not speed > 0:
        raise ValueError(f"Lissajous speed must be > 0 m/s, got {speed}")
    if timing not in LISSAJOUS_TIMINGS:
        raise ValueError(f"Lissajous timing must be one of {', '.join(LISSAJOUS_TIMINGS)}, got {timing!r}")
    for name, v in (("x0", x0), ("y0", y0), ("depth", depth), ("wx", wx), ("wy", wy),
                    ("phix", phix), ("phiy", phiy), ("ramp", ramp)):
        if not math.isfinite(v):
            raise ValueError(f"Lissajous {name} must be finite, got {v}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"time step must be > 0, got {dt}")

    def dp(u):
        return (x0 * wx * np.cos(wx * u + phix), y0 * wy * np.cos(wy * u + phiy))

    def ddp(u):
        return (-x0 * wx * wx * np.sin(wx * u + phix), -y0 * wy * wy * np.sin(wy * u + phiy))

    if timing == "arc-length":
        u, t = _lissajous_arc_length(dp, speed, dt, ramp)
        return _lissajous_samples(u, t, speed, ramp, x0, y0, depth, wx, wy, phix, phiy, dp, ddp)
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
    return _lissajous_samples(np.array(us), np.array(ts), speed, ramp, x0, y0, depth, wx, wy,
                              phix, phiy, dp, ddp)


def _lissajous_samples(u, t, speed, ramp, x0, y0, depth, wx, wy, phix, phiy, dp, ddp):
    """The Trajectory of eq. (18) at path parameters u reached at times t."""
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


def _gauss_legendre(k: int = 8):
    x, w = np.polynomial.legendre.leggauss(k)
    return 0.5 * (x + 1.0), 0.5 * w


def _lissajous_arc_length(dp, speed, dt, ramp, intervals: int = 4096):
    """(u, t) with s(u_k) = speed * int_0^t_k sigma: the exact arc-length timing of :func:`lissajous`."""
    gx, gw = _gauss_legendre()

    def speed_along(u):
        a, b = dp(u)
        return np.sqrt(a * a + b * b)

    def arc(u0, u1):                      # int_u0^u1 |p'| du, each pair of bounds (8-point GL)
        h = (u1 - u0)[..., None]
        return (h * speed_along(u0[..., None] + h * gx) * gw).sum(-1)

    grid = np.linspace(0.0, 1.0, intervals + 1)
    s_grid = np.concatenate(([0.0], np.cumsum(arc(grid[:-1], grid[1:]))))
    length = float(s_grid[-1])
    # times: the path takes S(t) = speed * int_0^t sigma = length at t_end
    if ramp > 0 and speed * 0.5 * ramp >= length:
        # scipy is heavy (seconds on a loaded machine): loaded by this path only
        from scipy.optimize import brentq
        t_end = brentq(lambda tt: speed * _ramp(np.array([tt]), ramp)[1][0] - length, 0.0, ramp)
    else:
        t_end = length / speed + (0.5 * ramp if ramp > 0 else 0.0)
    n = int(math.floor(t_end / dt))
    if n > 10_000_000:
        raise ValueError("Lissajous path too long for this speed and time step")
    t = np.arange(n + 1) * dt
    if t_end - t[-1] <= 1e-12 * max(t_end, 1.0):
        t = t[:-1]
    S = speed * _ramp(t, ramp)[1]
    j = np.clip(np.searchsorted(s_grid, S, side="right") - 1, 0, intervals - 1)
    u = grid[j] + (S - s_grid[j]) / np.maximum(speed_along(grid[j]), 1e-300)
    u = np.clip(u, grid[j], grid[j + 1])
    for _ in range(8):                     # Newton on s(u) = S within interval j
        f = s_grid[j] + arc(grid[j], u) - S
        u = np.clip(u - f / np.maximum(speed_along(u), 1e-300), grid[j], grid[j + 1])
    return np.append(u, 1.0), np.append(t, t_end)


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


#: Staicu & Carp-Ciocardia's eq. (7) in base_link (their z_0 points down, ours up; their y_0
#: becomes -y, see ``config/robots/staicu2003.yaml``): start on the axis at
#: z = -(l_1 + l_3 cos beta) = -(0.1 + 0.35 cos 30 deg), x_0* = 0.03, y_0* = 0.05, z_0* = 0.07 m.
STAICU_ELLIPSE = {"start": (0.0, 0.0, -(0.1 + 0.35 * math.cos(math.pi / 6))),
                  "axis_a": (0.03, 0.0, 0.0), "axis_b": (0.0, -0.05, 0.07), "period": 6.0}


def ellipse(start=STAICU_ELLIPSE["start"], axis_a=STAICU_ELLIPSE["axis_a"],
            axis_b=STAICU_ELLIPSE["axis_b"], period: float = 6.0, duration: float | None = None,
            dt: float = 1e-3, ramp: float = 0.0) -> Trajectory:
    """The elliptic path of Staicu & Carp-Ciocardia eq. (7), with analytic derivatives:

    X(t) = X_0 + a sin(theta) + b (1 - cos(theta)),  theta = w t,  w = 2 pi / ``period``
    X_dot = (a cos(theta) + b sin(theta)) theta_dot
    X_ddot = (a cos(theta) + b sin(theta)) theta_ddot + (b cos(theta) - a sin(theta)) theta_dot^2

    an ellipse with centre X_0 + b and conjugate semi-axes a and b through ``start`` = X_0.
    The defaults are the paper's (w = pi/3 rad/s, :data:`STAICU_ELLIPSE`, for the
    ``staicu2003`` robot). The paper starts at full speed; with ``ramp`` > 0 theta_dot
    rises smoothly from 0 to w over ``ramp`` s (as in :func:`circle`). ``duration``
    defaults to one turn, ``period + ramp``.

    >>> tr = ellipse(dt=0.5)
    >>> tr.X[6].round(4).tolist(), tr.Xd[0].round(4).tolist()     # half a turn, t = 3 s
    ([0.0, -0.1, -0.2631], [0.0314, 0.0, 0.0])
    """
    vecs = []
    for name, v in (("start", start), ("axis a", axis_a), ("axis b", axis_b)):
        arr = np.asarray(v, dtype=float)
        if arr.shape != (3,) or not np.isfinite(arr).all():
            raise ValueError(f"ellipse {name} must be 3 finite numbers (m), got {v!r}")
        vecs.append(arr)
    x0, a, b = vecs
    if not np.linalg.norm(np.cross(a, b)) > 0:
        raise ValueError(f"ellipse axes a = {a.tolist()} and b = {b.tolist()} must be non-zero "
                         "and not parallel")
    if not period > 0 or not math.isfinite(period):
        raise ValueError(f"ellipse period must be > 0 s, got {period}")
    if not (ramp >= 0 and math.isfinite(ramp)):
        raise ValueError(f"ellipse ramp must be >= 0 s, got {ramp}")
    t = _times(duration if duration is not None else period + ramp, dt)
    w = 2 * math.pi / period
    sig, integ, dsig = _ramp(t, ramp)
    th, thd, thdd = w * integ, w * sig, w * dsig
    c, s = np.cos(th)[:, None], np.sin(th)[:, None]
    tangent = a * c + b * s
    X = x0 + a * s + b * (1.0 - c)
    Xd = tangent * thd[:, None]
    Xdd = tangent * thdd[:, None] + (b * c - a * s) * (thd * thd)[:, None]
    return Trajectory(t, X, Xd, Xdd)


# ----------------------------------------------------------------------------- defaults per robot

#: The geometric default options of each generator (``delta-dynamics trajectory KIND``): the
#: paths above, placed for the rotary ``nt_robot`` (the ellipse: Staicu's ``staicu2003``).
DEFAULTS = {
    "circle": {"radius": 0.25, "depth": -0.75, "center": (0.0, 0.0)},
    "lissajous": {"x0": 0.1, "y0": 0.1, "depth": -0.75},
    "pick-place": {"start": (-0.1525, 0.0, -0.8), "height": 0.025, "width": 0.305},
    "ellipse": {"start": STAICU_ELLIPSE["start"], "axis_a": STAICU_ELLIPSE["axis_a"],
                "axis_b": STAICU_ELLIPSE["axis_b"]},
}


def default_path(kind: str, options: dict, dt: float = 0.01) -> Trajectory:
    """The path of generator ``kind`` with geometric ``options`` (the rest at their defaults),
    coarsely sampled: enough to check where it goes."""
    if kind == "circle":
        return circle(dt=dt, **options)
    if kind == "lissajous":
        return lissajous(dt=dt, timing="arc-length", **options)
    if kind == "pick-place":
        return pick_place(dt=dt, **options)
    if kind == "ellipse":
        return ellipse(dt=dt, **options)
    raise ValueError(f"unknown trajectory kind {kind!r}: one of {', '.join(DEFAULTS)}")


def in_workspace(m, X) -> bool:
    """True if every platform position of X (m, (N, 3)) is reachable within the joint limits
    of model ``m`` (either kind)."""
    try:
        inverse_kinematics(m, np.atleast_2d(np.asarray(X, dtype=float)), check_limits=True)
    except (UnreachableError, ValueError, ArithmeticError):
        return False
    return True


def horizontal_reach(m, z: float, directions: int = 72, iterations: int = 30) -> float:
    """The radius (m) of the largest horizontal circle about the z axis at height ``z`` whose
    points (``directions`` of them) are all reachable within the joint limits (bisection); 0
    if the axis point itself is not."""
    th = np.linspace(0.0, 2 * math.pi, directions, endpoint=False)
    if not in_workspace(m, [0.0, 0.0, z]):
        return 0.0
    lo, hi = 0.0, 10.0
    for _ in range(iterations):
        r = 0.5 * (lo + hi)
        ring = np.stack((r * np.cos(th), r * np.sin(th), np.full_like(th, z)), 1)
        lo, hi = (r, hi) if in_workspace(m, ring) else (lo, r)
    return lo


def workspace_defaults(m, kind: str) -> tuple:
    """(options, fitted): the geometric default options of generator ``kind`` for robot
    model ``m``. ``DEFAULTS[kind]`` if its whole path lies in ``m``'s workspace (``fitted``
    False); else options centred on ``algorithms.workspace_centre(m)`` and sized from the
    robot's horizontal reach there (:func:`horizontal_reach`): a circle and a Lissajous
    figure of half the reach, a pick-and-place across 80 % of it, Staicu's ellipse scaled to
    fit, each halved again (up to 6 times) until every sample is reachable (``fitted``
    True). The path's timing options (period, speed, times) keep their defaults.

    >>> from delta_dynamics.kinds import model_for
    >>> workspace_defaults(model_for("nt_robot"), "lissajous")
    ({'x0': 0.1, 'y0': 0.1, 'depth': -0.75}, False)
    >>> options, fitted = workspace_defaults(model_for("colombo2020"), "lissajous")
    >>> fitted, options["depth"], options["x0"]
    (True, 0.108, 0.055)
    """
    base = dict(DEFAULTS[kind])
    if in_workspace(m, default_path(kind, base).X):
        return base, False
    zc = float(workspace_centre(m)[2])
    reach = horizontal_reach(m, zc)
    r3 = lambda v: round(float(v), 3)                     # noqa: E731 - mm, as a user would type it
    for k in range(7):
        s = 0.5 ** k
        if kind == "circle":
            opts = {"radius": r3(max(0.5 * reach * s, 1e-3)), "depth": r3(zc), "center": (0.0, 0.0)}
        elif kind == "lissajous":
            a = r3(max(0.5 * reach * s, 1e-3))
            opts = {"x0": a, "y0": a, "depth": r3(zc)}
        elif kind == "pick-place":
            width = r3(max(min(0.305, 0.8 * reach) * s, 1e-3))
            height = r3(max(min(0.025, 0.2 * width), 1e-3))
            opts = {"start": (r3(-0.5 * width), 0.0, r3(zc - 0.5 * height)), "height": height, "width": width}
        else:                               # ellipse: centre (start + b) at the workspace centre
            a, b = np.asarray(base["axis_a"], float), np.asarray(base["axis_b"], float)
            size = max(np.linalg.norm(a), np.linalg.norm(b))
            f = min(1.0, 0.5 * reach / size) * s
            a, b = a * f, b * f
            opts = {"start": tuple(r3(v) for v in np.array([0.0, 0.0, zc]) - b),
                    "axis_a": tuple(r3(v) for v in a), "axis_b": tuple(r3(v) for v in b)}
        if in_workspace(m, default_path(kind, opts).X):
            return opts, True
    return opts, True                     # the caller's reachability check names the sample
