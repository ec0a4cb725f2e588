"""The demo/evaluation trajectories: analytic velocity and acceleration against finite
differences, constant speed on the Lissajous path, the pick-and-place geometry and its
bounded, continuous jerk, and the argument checks."""
import functools
import math

import numpy as np
import pytest

from scipy.integrate import cumulative_simpson

from delta_dynamics.motion.trajectories import circle, lissajous, pick_place, smoothstep7


@functools.lru_cache(maxsize=None)
def liss(**kw):
    """lissajous(**kw), built once per test session (it integrates u(t) in Python)."""
    return lissajous(**kw)


def d4(a, dt):
    """Fourth-order central difference of uniformly sampled a (N, 3) at samples 2..N-3."""
    return (-a[4:] + 8 * a[3:-1] - 8 * a[1:-3] + a[:-4]) / (12 * dt)


def check_derivatives(tr, skip_last=0, rel=1e-4, pos_tol=1e-8):
    """Xd ~ dX/dt and Xdd ~ dXd/dt (relative to their peak), and X ~ X0 + integral of Xd."""
    n = len(tr) - skip_last
    t, X, Xd, Xdd = tr.t[:n], tr.X[:n], tr.Xd[:n], tr.Xdd[:n]
    dt = float(np.median(np.diff(t)))
    assert np.ptp(np.diff(t)) < 1e-9 * dt                      # uniform samples
    err_v = np.abs(d4(X, dt) - Xd[2:-2]).max() / max(np.abs(Xd).max(), 1e-12)
    err_a = np.abs(d4(Xd, dt) - Xdd[2:-2]).max() / max(np.abs(Xdd).max(), 1e-12)
    assert err_v < rel and err_a < rel, (err_v, err_a)
    if pos_tol is not None:
        Xi = X[0] + cumulative_simpson(Xd, x=t, axis=0, initial=0)
        assert np.abs(Xi - X).max() < pos_tol


@pytest.mark.parametrize("kw", [dict(), dict(ramp=1.0), dict(period=1.5, ramp=0.3, radius=0.1,
                                                             center=(0.05, -0.02))])
def test_circle_derivatives_match_finite_differences(kw):
    check_derivatives(circle(dt=1e-3, **kw))


def test_circle_geometry_and_ramp():
    tr = circle(radius=0.25, depth=-0.75, period=2.0, ramp=0.5, center=(0.1, 0.0))
    r = np.hypot(tr.X[:, 0] - 0.1, tr.X[:, 1])
    assert np.allclose(r, 0.25) and np.allclose(tr.X[:, 2], -0.75)
    assert tr.t[-1] == pytest.approx(2.5)                       # period + ramp by default
    assert np.allclose(tr.Xd[0], 0) and np.allclose(tr.Xdd[0], 0)   # starts from rest
    speed = np.linalg.norm(tr.Xd, axis=1)
    assert np.allclose(speed[tr.t >= 0.5], 0.25 * math.pi)      # full speed after the ramp
    assert np.all(np.diff(speed[tr.t <= 0.5]) >= -1e-12)        # the ramp never slows down


@pytest.mark.parametrize("kw", [dict(speed=0.3, ramp=0.0), dict(speed=0.3, x0=0.12, y0=0.08)])
def test_lissajous_derivatives_match_finite_differences(kw):
    # The last sample lands on u = 1 after a shorter step (see test_lissajous_last_interval).
    check_derivatives(liss(**kw), skip_last=1)


def test_lissajous_with_ramp_derivatives_match_finite_differences():
    # during the ramp, too, the positions are the integral of the analytic velocity
    check_derivatives(liss(speed=0.4, ramp=0.5), skip_last=1)


@pytest.mark.parametrize("v, ramp", [(0.3, 0.0), (0.4, 0.5)])
def test_lissajous_speed_is_constant_after_its_ramp(v, ramp):
    tr = liss(speed=v, ramp=ramp)
    speed = np.linalg.norm(tr.Xd, axis=1)
    assert np.abs(speed[tr.t >= ramp] - v).max() < 1e-12
    # the positions themselves move at that speed (u(t) from eq. 19 is consistent)
    t, X = tr.t[:-1], tr.X[:-1]
    mid = 0.5 * (t[1:] + t[:-1])
    fd_speed = np.linalg.norm(np.diff(X, axis=0), axis=1) / np.diff(t)
    assert np.abs(fd_speed[mid >= ramp + 1e-3] - v).max() < 1e-3 * v
    if ramp:
        assert speed[0] == 0 and np.all(speed[tr.t < ramp] <= v + 1e-12)


def test_lissajous_traces_eq_18_once():
    x0, y0, depth = 0.12, 0.08, -0.7
    tr = lissajous(speed=0.5, x0=x0, y0=y0, depth=depth)
    # p(0) = (x0 sin(pi/2), y0 sin 0) and the default frequencies close the curve at u = 1
    assert np.allclose(tr.X[0], (x0, 0.0, depth))
    assert np.allclose(tr.X[-1], tr.X[0], atol=1e-9)
    assert np.abs(tr.X[:, 0]).max() <= x0 + 1e-12 and np.abs(tr.X[:, 1]).max() <= y0 + 1e-12
    assert np.allclose(tr.X[:, 2], depth)


def test_lissajous_last_interval():
    v = 0.3
    tr = liss(speed=v, ramp=0.0)
    last = np.linalg.norm(tr.X[-1] - tr.X[-2]) / (tr.t[-1] - tr.t[-2])
    assert last == pytest.approx(v, rel=1e-3)


def test_pick_place_derivatives_match_finite_differences():
    check_derivatives(pick_place(cycles=2, dt=5e-4))


def test_pick_place_geometry_is_25_305_25_mm():
    start = np.array([-0.1525, 0.0, -0.8])
    tr = pick_place(start=start, cycles=1)
    X = tr.X
    assert np.ptp(X[:, 0]) == pytest.approx(0.305, abs=1e-12)
    assert X[:, 2].max() - start[2] == pytest.approx(0.025, abs=1e-12)
    assert np.allclose(X[:, 1], 0.0)
    assert X[:, 2].min() >= start[2] - 1e-12                   # never dips below the pick height
    # rest at the place point halfway, back at the pick point at the end
    half = len(tr) // 2
    place = start + (0.305, 0, 0)
    at_place = np.all(np.abs(X - place) < 1e-12, axis=1)
    assert at_place[:half].any() and np.allclose(tr.Xd[at_place], 0)
    assert np.allclose(X[-1], start) and np.allclose(tr.Xd[-1], 0) and np.allclose(tr.Xdd[-1], 0)
    # it leaves and arrives vertically: the first millimetres are straight up / down
    lift = X[:, 2] - start[2]
    low = lift < 0.005
    moving_x = np.abs(X[:, 0] - start[0]) > 1e-9
    far_x = np.abs(X[:, 0] - place[0]) > 1e-9
    assert not np.any(low[:half] & moving_x[:half] & far_x[:half])


def test_pick_place_cycles_and_direction():
    tr = pick_place(start=(0.0, 0.0, -0.8), width=0.2, direction=(0.0, 2.0), cycles=3)
    one = pick_place(start=(0.0, 0.0, -0.8), width=0.2, direction=(0.0, 2.0), cycles=1)
    assert tr.t[-1] == pytest.approx(3 * one.t[-1])
    assert np.allclose(tr.X[:, 0], 0.0) and np.ptp(tr.X[:, 1]) == pytest.approx(0.2)
    n = len(one)
    assert np.allclose(tr.X[n - 1:2 * n - 1], one.X, atol=1e-12)   # each cycle repeats the first


def test_pick_place_jerk_is_bounded_and_continuous():
    u = np.linspace(0, 1, 200001)
    s2 = smoothstep7(u)[2]
    s3_max = np.abs(np.gradient(s2, u)).max()                    # max |s'''| of the profile
    h, w, tl, tm = 0.025, 0.305, 0.15, 0.4
    # at most the lift (or the descent) overlaps the move
    bound = s3_max * (h / tl ** 3 + w / tm ** 3)
    jumps = []
    for dt in (1e-3, 5e-4):
        tr = pick_place(height=h, width=w, lift_time=tl, move_time=tm, cycles=1, dt=dt)
        jerk = np.diff(tr.Xdd, axis=0) / dt
        assert np.abs(jerk).max() <= bound * (1 + 1e-3)
        assert np.abs(jerk[0]).max() < 0.05 * bound              # starts from zero jerk
        jumps.append(np.abs(np.diff(jerk, axis=0)).max())
    # continuous jerk: its largest step between samples halves with the sample time
    assert jumps[1] < 0.6 * jumps[0]


def test_smoothstep7_is_rest_to_rest():
    s, s1, s2 = smoothstep7(np.array([0.0, 0.5, 1.0]))
    assert s.tolist() == [0.0, 0.5, 1.0]
    assert s1[0] == s1[2] == 0 and s2[0] == s2[2] == 0
    assert s1[1] == pytest.approx(140 / 64)


@pytest.mark.parametrize("make, match", [
    (lambda: circle(radius=0), "radius"),
    (lambda: circle(radius=-0.1), "radius"),
    (lambda: circle(radius=float("nan")), "radius"),
    (lambda: circle(period=0), "period"),
    (lambda: circle(duration=-1), "duration"),
    (lambda: circle(dt=0), "time step"),
    (lambda: circle(dt=10.0, duration=1.0), "time step"),
    (lambda: lissajous(speed=0), "speed"),
    (lambda: lissajous(speed=-1), "speed"),
    (lambda: pick_place(cycles=0), "cycles"),
    (lambda: pick_place(height=0), "height"),
    (lambda: pick_place(width=-0.3), "width"),
    (lambda: pick_place(lift_time=0), "lift_time"),
    (lambda: pick_place(move_time=0), "move_time"),
    (lambda: pick_place(overlap=1.0), "overlap"),
    (lambda: pick_place(direction=(0.0, 0.0)), "direction"),
    (lambda: pick_place(dt=-1e-3), "time step"),
])
def test_bad_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ----------------------------------------------------------------------------- defaults per robot

from delta_core.robot_file import list_presets  # noqa: E402
from delta_dynamics.motion.trajectories import DEFAULTS, default_path, in_workspace, workspace_defaults  # noqa: E402


@pytest.mark.parametrize("kind", list(DEFAULTS))
@pytest.mark.parametrize("robot", list_presets())
def test_every_generator_default_lies_in_the_robots_workspace(tmp_path, capsys, robot, kind):
    """``delta-dynamics trajectory KIND --robot R`` with no geometric option: a path every
    sample of which R reaches within its joint limits (lissajous --robot colombo2020 failed:
    the rotary default z = -0.75 m)."""
    from delta_dynamics.cli import main
    from delta_dynamics.kinds import model_for
    from delta_dynamics.data_files.trajectory import read_trajectory
    out = tmp_path / "t.csv"
    extra = ["--speed", "0.5"] if kind == "lissajous" else []
    code = main(["trajectory", kind, "--robot", robot, "--out", str(out), "--dt", "0.01", *extra])
    err = capsys.readouterr().err
    assert code == 0, err
    assert in_workspace(model_for(robot), read_trajectory(out).trajectory.X)
    options, fitted = workspace_defaults(model_for(robot), kind)
    assert ("defaults in it" in err) == fitted, err


def test_defaults_that_fit_stay_and_given_options_win(tmp_path, capsys):
    from delta_dynamics.cli import main
    from delta_dynamics.kinds import model_for
    from delta_dynamics.data_files.trajectory import read_trajectory
    # nt_robot: the documented defaults (Asadi & Heydari's circle at -0.75 m), as before
    assert workspace_defaults(model_for("nt_robot"), "circle") == (DEFAULTS["circle"], False)
    out = tmp_path / "c.csv"
    assert main(["trajectory", "circle", "--robot", "nt_robot", "--dt", "0.01", "--out", str(out)]) == 0
    X = read_trajectory(out).trajectory.X
    np.testing.assert_allclose(X[:, 2], -0.75)
    np.testing.assert_allclose(np.hypot(X[:, 0], X[:, 1]), 0.25, atol=1e-9)
    # colombo2020: fitted, and an option given on the command line is kept
    capsys.readouterr()
    assert main(["trajectory", "circle", "--robot", "colombo2020", "--radius", "0.03", "--dt", "0.01",
                 "--out", str(out)]) == 0
    X = read_trajectory(out).trajectory.X
    np.testing.assert_allclose(np.hypot(X[:, 0], X[:, 1]), 0.03, atol=1e-9)
    zc = workspace_defaults(model_for("colombo2020"), "circle")[0]["depth"]
    np.testing.assert_allclose(X[:, 2], zc)
    assert "--depth 0.108" in capsys.readouterr().err
    # without --robot: the defaults as documented
    assert in_workspace(model_for("nt_robot"), default_path("lissajous", DEFAULTS["lissajous"]).X)
