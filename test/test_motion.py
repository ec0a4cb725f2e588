"""Time-optimal motion (delta_dynamics.motion, ``delta-dynamics retime`` / ``plan pick``), checked
independently:

* paths: the spline is scipy's CubicSpline over the chord length; the door is C2 (its second
  derivative's jump at a junction vanishes with the step of a finite difference, its third's
  does not) and refuses what cannot be blended;
* constraints: q', q'' against finite differences of inverse kinematics along s; the effort
  coefficients a, b, c against the model's inverse dynamics at random (s_dot, s_ddot); the
  friction lines bound the model's friction for every speed up to the velocity limit;
* the written trajectory: velocities and accelerations from finite differences of its
  positions, joints and efforts recomputed from them with the model, every limit held within
  1 % (both kinds, with and without friction, a reduced torque limit); starts and ends at rest;
* a limit is active nearly all of the moving time (the signature of a time-optimal timing);
* refusals: an unreachable point, a singularity, torque limits below gravity, bad paths.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from delta_core.robot_file import load_robot, save_robot
from delta_dynamics.algorithms import (friction_torque, inverse_dynamics, inverse_kinematics, joint_state,
                                       workspace_centre)
from delta_dynamics.cli import main
from delta_dynamics.kinds import model_for
from delta_dynamics.motion import (PathError, RetimeError, door_path, plan_pick, retime, retime_path, sample,
                                   spline_path)
from delta_dynamics.motion.constraints import FrictionLaw, friction_bounds, path_coefficients
from delta_dynamics.data_files.csv_io import read_csv

ROTARY_PICK = ([-0.1525, 0.0, -0.78], [0.1525, 0.0, -0.78])


def linear_pick():
    c = workspace_centre(model_for("colombo2020"))
    return (c + [-0.05, 0, 0]).tolist(), (c + [0.05, 0, 0]).tolist()


# ----------------------------------------------------------------------------- paths

def test_spline_path_is_scipys_cubic_spline_over_the_chord_length():
    P = np.array([[0, 0, -0.8], [0.05, 0.02, -0.79], [0.1, 0.0, -0.8], [0.12, -0.05, -0.82]])
    p = spline_path(P)
    s = np.concatenate(([0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))))
    ref = CubicSpline(s, P)
    u = np.linspace(0, s[-1], 101)
    for k in range(3):
        assert np.allclose(p.evaluate(u)[k], ref(u, k), rtol=0, atol=1e-12)
    assert p.length == pytest.approx(s[-1])


def test_door_path_is_c2_by_finite_differences():
    p = door_path([-0.15, 0.01, -0.8], [0.15, -0.02, -0.76], height=0.025, blend=0.01)
    knots = p.breakpoints[1:-1]
    assert len(knots) == 4                       # rise | blend | across | blend | descent
    X = p.position
    jumps2, jumps3 = [], []
    for h in (2.5e-4, 1.25e-4, 6.25e-5):
        # one-sided second differences just left and right of each junction
        left = (X(knots - h) - 2 * X(knots - 2 * h) + X(knots - 3 * h)) / h ** 2
        right = (X(knots + 3 * h) - 2 * X(knots + 2 * h) + X(knots + h)) / h ** 2
        jumps2.append(np.linalg.norm(left - right, axis=1).max())
        d3l = (X(knots - h) - 3 * X(knots - 2 * h) + 3 * X(knots - 3 * h) - X(knots - 4 * h)) / h ** 3
        d3r = (X(knots + 4 * h) - 3 * X(knots + 3 * h) + 3 * X(knots + 2 * h) - X(knots + h)) / h ** 3
        jumps3.append(np.linalg.norm(d3l - d3r, axis=1).max())
    # X'' continuous: the jump of the difference quotients shrinks with h (like h) ...
    assert jumps2[1] < 0.6 * jumps2[0] and jumps2[2] < 0.6 * jumps2[1]
    assert jumps2[2] < 0.1 * np.linalg.norm(p.evaluate(np.linspace(0, p.length, 999))[2], axis=1).max()
    # ... while the third derivative does jump (so the test can see a jump when there is one)
    assert min(jumps3) > 1e3
    # and exactly, from the polynomial pieces
    for order in (0, 1, 2):
        assert p.junction_jumps(order).max() < 1e-9
    # ends, tangents, height
    assert np.allclose(p.position(0.0), [-0.15, 0.01, -0.8])
    assert np.allclose(p.position(p.length), [0.15, -0.02, -0.76])
    s = np.linspace(0, p.length, 2001)
    assert p.position(s)[:, 2].max() == pytest.approx(-0.76 + 0.025, abs=1e-12)
    assert np.linalg.norm(p.evaluate(s)[1], axis=1).min() > 0.9


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(height=0.025, blend=0.03), "does not fit the 0.025 m rise"),
    (dict(height=0.025, blend=0.0), "--blend must be > 0 m"),
    (dict(height=-0.01, blend=0.01), "height must be a finite number >= 0"),
    (dict(height=float("nan"), blend=0.01), "height must be a finite number"),
])
def test_door_path_refusals(kwargs, fragment):
    with pytest.raises(PathError, match=fragment):
        door_path([-0.15, 0, -0.8], [0.15, 0, -0.8], **kwargs)


def test_door_path_refuses_a_vertical_move_and_wide_blends():
    with pytest.raises(PathError, match="same horizontal position"):
        door_path([0, 0, -0.8], [0, 0, -0.7])
    with pytest.raises(PathError, match="does not fit the 0.04 m move across"):
        door_path([0, 0, -0.8], [0.04, 0, -0.8], blend=0.025)


def test_spline_path_refusals():
    with pytest.raises(PathError, match="need at least 2"):
        spline_path([[0, 0, -0.8]])
    with pytest.raises(PathError, match="point 2 .* repeats point 1"):
        spline_path([[0, 0, -0.8], [0.1, 0, -0.8], [0.1, 0, -0.8]])
    with pytest.raises(PathError, match="point 1: not finite"):
        spline_path([[0, 0, -0.8], [np.nan, 0, -0.8]])


# ----------------------------------------------------------------------------- constraints

@pytest.mark.parametrize("robot", ["nt_robot", "colombo2020"])
def test_path_coefficients_against_finite_differences_and_inverse_dynamics(robot):
    m = model_for(robot)
    start, end = ROTARY_PICK if robot == "nt_robot" else linear_pick()
    p = door_path(start, end, 0.025, 0.01)
    s = np.linspace(0.002, p.length - 0.002, 41)
    coef = path_coefficients(m, p, s)
    # q' and q'' against central differences of inverse kinematics along s
    h = 1e-5
    qp, q0, qm = (inverse_kinematics(m, p.position(s + d)) for d in (h, 0.0, -h))
    assert np.allclose(coef.q1, (qp - qm) / (2 * h), rtol=1e-5, atol=1e-6)
    assert np.allclose(coef.q2, (qp - 2 * q0 + qm) / h ** 2, rtol=1e-3, atol=1e-3)
    # the rigid effort at any (s_dot, s_ddot) is a s_ddot + b s_dot^2 + c
    rng = np.random.default_rng(1)
    sd, sdd = rng.uniform(0.1, 3.0, len(s)), rng.uniform(-40, 40, len(s))
    Xd = coef.X1 * sd[:, None]
    Xdd = coef.X1 * sdd[:, None] + coef.X2 * (sd * sd)[:, None]
    tau = inverse_dynamics(m, coef.X, Xd, Xdd, friction=False)
    lin = coef.a * sdd[:, None] + coef.b * (sd * sd)[:, None] + coef.c
    assert np.allclose(tau, lin, rtol=1e-9, atol=1e-9 * np.abs(tau).max())
    # and the torque along a timed motion against finite differences of the motion itself
    t = np.linspace(0, 0.2, 2001)
    ss = 0.01 + 0.5 * 2.0 * t ** 2                       # s_ddot = 2 m/s^2 from rest
    X = p.position(ss)
    dt = t[1] - t[0]
    Xd_num, Xdd_num = np.gradient(X, dt, axis=0), np.gradient(np.gradient(X, dt, axis=0), dt, axis=0)
    c = path_coefficients(m, p, ss)
    tau_lin = c.a * 2.0 + c.b * (2.0 * t)[:, None] ** 2 + c.c
    tau_num = inverse_dynamics(m, X, Xd_num, Xdd_num, friction=False)
    # away from the ends and the junctions (where the third derivative jumps, smeared by the differences)
    k = np.searchsorted(ss, p.breakpoints)
    near = np.zeros(len(t), dtype=bool)
    near[:5] = near[-5:] = True
    for j in k:
        near[max(j - 4, 0):j + 4] = True
    err = np.abs(tau_lin - tau_num)[~near]
    assert err.max() < 2e-4 * np.abs(tau_lin).max(), err.max()


def test_friction_lines_bound_the_model_friction_up_to_the_velocity_limit():
    m = model_for("nt_robot")
    law = FrictionLaw.of(m)
    rng = np.random.default_rng(2)
    n = 500
    q1 = rng.normal(0, 3, (n, 3))
    x_vel = rng.uniform(0.5, 20, n)
    x0 = x_vel * rng.uniform(0.01, 1.0, n)
    up0, up1, lo0, lo1 = friction_bounds(law, q1, x0, x_vel)
    gaps = []
    for frac in (0.0, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.2, 0.3, 0.7, 0.9, 1.0):
        x = (frac * x_vel)[:, None, None]
        f = np.abs(friction_torque(m, q1 * np.sqrt(x[:, :, 0])))
        upper = np.max(up0 + up1 * x, axis=2)
        lower = np.min(lo0 + lo1 * x, axis=2)
        assert (f <= upper + 1e-12).all()
        assert (f >= lower - 1e-12).all()
        if frac >= 1 / 16:           # above the first node: the help is counted nearly in full
            v = np.sqrt(frac * x_vel)[:, None] * np.abs(q1)
            helping = law.viscous * v + np.minimum(law.coulomb, law.static) * np.tanh(v / law.eps)
            gaps.append(np.max((helping - lower) / np.maximum(helping, 1e-9)))
    assert max(gaps) < 0.07          # the secants of sqrt on [a, 4a] fall 5.6 % short at most
    # exact at the tangent point for the viscous part: the excess there is only the Coulomb and
    # Stribeck terms', taken at their largest (the model's smooth sign below eps, Stribeck's hump)
    v0 = np.abs(q1) * np.sqrt(x0)[:, None]
    f0 = np.abs(friction_torque(m, v0))
    excess = np.max(up0 + up1 * x0[:, None, None], axis=2) - f0
    assert (excess <= law.static - law.coulomb * np.tanh(v0 / law.eps) + 1e-9).all()


# ----------------------------------------------------------------------------- the written trajectory

def check_trajectory(path, robot, friction=True, torque_scale=1.0, tol=0.01):
    """Independent check of a written trajectory: numeric derivatives of its positions, the
    model's joints and efforts recomputed from them, every limit within ``tol``."""
    m = model_for(robot, friction=friction)
    table = read_csv(path, ("t", "x", "y", "z", "xd", "yd", "zd", "xdd", "ydd", "zdd", "q1", "qd1", "qdd1"))
    t = table.columns["t"]
    assert np.allclose(np.diff(t), 1e-3, rtol=0, atol=1e-12)          # 1 ms samples
    X = table.stack(("x", "y", "z"))
    Xd_w = table.stack(("xd", "yd", "zd"))
    Xdd_w = table.stack(("xdd", "ydd", "zdd"))
    assert np.abs(Xd_w[0]).max() == 0 and np.abs(Xd_w[-1]).max() == 0  # from rest to rest
    dt = 1e-3
    Xd = np.gradient(X, dt, axis=0, edge_order=1)
    Xdd = np.gradient(Xd, dt, axis=0, edge_order=1)
    # the written velocities are the positions' derivative (to the 1 ms differences' error)
    vmax = np.abs(Xd_w).max()
    assert np.abs(Xd[1:-1] - Xd_w[1:-1]).max() < 0.02 * vmax
    q, qd, qdd = joint_state(m, X, Xd, Xdd)
    eff = inverse_dynamics(m, X, Xd, Xdd)
    lim = m.robot.limits
    ratios = {"velocity": np.abs(qd) / np.asarray(lim.velocity),
              "acceleration": np.abs(qdd) / np.asarray(lim.acceleration),
              "effort": np.abs(eff) / (torque_scale * np.asarray(lim.effort))}
    for name, r in ratios.items():
        assert r.max() <= 1 + tol, f"{name} reaches {r.max():.4f} of its limit at t = {t[r.max(axis=1).argmax()]:.3f} s"
    # the written joint columns are the model's for the written platform values
    assert np.allclose(table.columns["q1"], q[:, 0], atol=1e-9)
    return t, X, ratios


@pytest.mark.parametrize("robot, friction, scale", [("nt_robot", True, 1.0), ("d3s800", True, 0.9),
                                                    ("colombo2020", True, 1.0), ("nt_robot", False, 1.0)])
def test_plan_pick_written_trajectory_holds_every_limit(tmp_path, capsys, robot, friction, scale):
    start, end = ROTARY_PICK if robot != "colombo2020" else linear_pick()
    out = tmp_path / "pick.csv"
    args = ["plan", "pick", "--robot", robot, "--from", *map(str, start), "--to", *map(str, end),
            "--cycles", "2", "--torque-scale", str(scale), "--out", str(out)]
    if not friction:
        args.append("--no-friction")
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "picks per minute" in printed and "active limits" in printed
    header = out.read_text().splitlines()[0].split(",")
    assert header[-1] == ("f3" if robot == "colombo2020" else "tau3") and len(header) == 22
    t, X, ratios = check_trajectory(out, robot, friction, scale)
    assert np.allclose(X[0], start) and np.allclose(X[-1], start)       # two cycles: back at the start
    # a limit is active (within 3 %) nearly all the time the platform moves
    moving = np.linalg.norm(np.gradient(X, 1e-3, axis=0), axis=1) > 1e-6
    top = np.max([r.max(axis=1) for r in ratios.values()], axis=0)
    assert np.mean(top[moving] >= 0.97) > 0.8


def test_retime_cli_matches_the_api_and_holds_the_limits(tmp_path, capsys):
    pts = np.array([[-0.12, 0.0, -0.8], [-0.05, 0.06, -0.75], [0.05, 0.06, -0.75], [0.12, 0.0, -0.8]])
    (tmp_path / "path.csv").write_text("x,y,z\n" + "".join(f"{a},{b},{c}\n" for a, b, c in pts))
    out = tmp_path / "traj.csv"
    assert main(["retime", "--robot", "d3s800", "--path", str(tmp_path / "path.csv"), "--out", str(out)]) == 0
    t, X, _ = check_trajectory(out, "d3s800")
    api = sample([retime(model_for("d3s800"), pts)])
    assert len(api) == len(t) and np.allclose(api.X, X, rtol=0, atol=1e-12)
    assert np.allclose(X[0], pts[0]) and np.allclose(X[-1], pts[-1])


def test_report_names_the_active_limits():
    plan = plan_pick(model_for("d3s800"), *ROTARY_PICK)
    rep = plan.motion.report
    assert rep.max_ratio <= 1.01
    labels = {label for _, _, label in rep.segments}
    assert "rest" in labels and any(lb.startswith("torque arm_") for lb in labels)
    assert sum(v for k, v in rep.share.items() if k != "none") > 0.8
    merged = rep.merged(0.002)
    assert merged[0][0] == 0.0 and merged[-1][1] == pytest.approx(plan.motion.t[-1])
    assert plan.cycle_time == pytest.approx(plan.legs[0].duration + plan.legs[1].duration + 0.1)


def test_friction_changes_the_timing_and_the_way_back():
    m = model_for("d3s800")
    with_f = plan_pick(m, *ROTARY_PICK)
    without = plan_pick(m, *ROTARY_PICK, friction=False)
    assert with_f.legs[0].friction and not without.legs[0].friction
    # without friction the way back is the way there run backwards (same duration)
    assert without.legs[0].duration == pytest.approx(without.legs[1].duration, rel=2e-3)
    # the efforts written include friction (or not)
    assert not np.allclose(with_f.motion.effort[:500], without.motion.effort[:500], atol=0.5)


# ----------------------------------------------------------------------------- refusals

def run_cli(args, capsys):
    try:
        code = main(args)
    except SystemExit as e:                       # argparse's refusals
        code = e.code
    return code, capsys.readouterr().err.strip().splitlines()[-1]


def test_refuses_a_path_through_an_unreachable_point(tmp_path, capsys):
    (tmp_path / "p.csv").write_text("x,y,z\n-0.1,0,-0.8\n# a comment\n0,0,-0.2\n0.1,0,-0.8\n")
    out = tmp_path / "o.csv"
    out.write_text("keep")
    code, err = run_cli(["retime", "--path", str(tmp_path / "p.csv"), "--out", str(out)], capsys)
    assert code == 2 and err.startswith("delta-dynamics: error: ")
    assert "is unreachable" in err and "p.csv:2 and line 4" in err
    assert out.read_text() == "keep"


def test_refuses_a_path_through_a_singularity():
    m = model_for("colombo2020")
    c = workspace_centre(m)
    lo, hi = 0.0, 0.5                    # out along x to the edge of the workspace, where J is singular
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        try:
            inverse_kinematics(m, c + [mid, 0, 0])
            lo = mid
        except ValueError:
            hi = mid
    with pytest.raises(RetimeError, match="at a singularity"):
        retime(m, [c, c + [lo, 0, 0]])


def test_refuses_torque_limits_below_gravity(tmp_path, capsys):
    robot = load_robot("nt_robot")
    weak = robot.replace(limits=robot.limits.__class__(**{**robot.limits.__dict__, "torque": (5.0, 5.0, 5.0)}))
    path = save_robot(weak, tmp_path / "weak.yaml")
    out = tmp_path / "o.csv"
    code, err = run_cli(["plan", "pick", "--robot", str(path), "--from", "-0.1525", "0", "-0.78", "--to",
                         "0.1525", "0", "-0.78", "--out", str(out)], capsys)
    assert code == 2 and "to hold the platform against gravity" in err and "torque limit 5 N m" in err
    assert not out.exists()
    # the same through --torque-scale
    with pytest.raises(RetimeError, match=r"torque limit 6 N m \(0.05 x 120\)"):
        plan_pick(model_for("nt_robot"), *ROTARY_PICK, torque_scale=0.05)


@pytest.mark.parametrize("args, fragment", [
    (["--torque-scale", "0"], "argument --torque-scale: must be > 0"),
    (["--torque-scale", "1.5"], "argument --torque-scale: must be <= 1"),
    (["--blend", "0.03"], "blend 0.03 m does not fit the 0.025 m rise"),
    (["--cycles", "0"], "argument --cycles: must be >= 1"),
    (["--cycles", "100000"], "more than the 1000000 a command may make"),
    (["--dwell", "-1"], "argument --dwell: must be >= 0 s"),
])
def test_plan_pick_option_refusals(tmp_path, capsys, args, fragment):
    code, err = run_cli(["plan", "pick", "--from", "-0.1525", "0", "-0.78", "--to", "0.1525", "0", "-0.78",
                         "--out", str(tmp_path / "o.csv"), *args], capsys)
    assert code == 2 and fragment in err, err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("body, fragment", [
    ("x,y,z\n0,0,-0.8\n", "1 data row, need at least 2"),
    ("x,y\n0,0\n1,1\n", "missing column 'z'"),
    ("x,y,z\n0,0,-0.8\n0.1,0,-0.8\n0.1,0,-0.8\n", "p.csv:4: path point 2 (0.1, 0, -0.8) repeats point 1"),
    ("x,y,z\n0,0,-0.8\n0.1,nan,-0.8\n", "p.csv:3: column 'y': not a finite number"),
])
def test_retime_path_file_refusals(tmp_path, capsys, body, fragment):
    (tmp_path / "p.csv").write_text(body)
    code, err = run_cli(["retime", "--path", str(tmp_path / "p.csv"), "--out", str(tmp_path / "o.csv")], capsys)
    assert code == 2 and fragment in err, err


def test_api_refuses_bad_options():
    m = model_for("nt_robot")
    p = door_path(*ROTARY_PICK)
    with pytest.raises(ValueError, match="torque_scale must be in"):
        retime_path(m, p, torque_scale=0.0)
    with pytest.raises(ValueError, match="cycles must be"):
        plan_pick(m, *ROTARY_PICK, cycles=0)
