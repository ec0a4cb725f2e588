"""Staicu's elliptic path (trajectories.ellipse, eq. 7) and the command line of the Staicu
model: ``trajectory ellipse``, ``inverse --model staicu --powers``, their errors."""
import math

import numpy as np
import pytest

from delta_dynamics.rotary.dynamics import friction_torque
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.reference.staicu import StaicuModel, inverse_dynamics
from delta_dynamics.motion.trajectories import STAICU_ELLIPSE, ellipse
from delta_dynamics.data_files.csv_io import read_csv
from delta_dynamics.data_files.joint_data import read_joint_csv
from delta_dynamics.data_files.trajectory import read_trajectory

from test_cli import assert_fails, cli, run
from test_trajectories import check_derivatives


@pytest.mark.parametrize("kw", [dict(), dict(ramp=1.5), dict(period=1.2, ramp=0.4, axis_a=(0.02, 0.01, 0.0),
                                                             axis_b=(0.0, 0.03, -0.01))])
def test_ellipse_derivatives_match_finite_differences(kw):
    check_derivatives(ellipse(dt=1e-3, **kw))


def test_ellipse_is_the_papers_eq_7_in_our_frame():
    """x = x* sin(pi t / 3), y_0 = y* (1 - cos), z_0 = l_1 + l_3 cos(beta) - z* (1 - cos) with
    their z_0 down and y_0 = -y: one turn in 6 s, back at the start."""
    tr = ellipse(dt=0.01)
    w = math.pi / 3
    c, s = np.cos(w * tr.t), np.sin(w * tr.t)
    np.testing.assert_allclose(tr.X[:, 0], 0.03 * s, atol=1e-15)
    np.testing.assert_allclose(-tr.X[:, 1], 0.05 * (1 - c), atol=1e-15)
    np.testing.assert_allclose(-tr.X[:, 2], 0.1 + 0.35 * math.cos(math.pi / 6) - 0.07 * (1 - c), atol=1e-15)
    assert tr.t[-1] == pytest.approx(6.0) and np.allclose(tr.X[-1], tr.X[0])
    # an ellipse: centre start + b, conjugate semi-axes a and b, in the plane they span
    a, b = np.array(STAICU_ELLIPSE["axis_a"]), np.array(STAICU_ELLIPSE["axis_b"])
    n = np.cross(a, b)
    assert np.abs((tr.X - tr.X[0]) @ n).max() < 1e-15
    # from rest with a ramp
    tr = ellipse(ramp=1.0, dt=1e-3)
    assert np.allclose(tr.Xd[0], 0) and np.allclose(tr.Xdd[0], 0) and tr.t[-1] == pytest.approx(7.0)


@pytest.mark.parametrize("kw, message", [
    (dict(axis_a=(0.0, 0.0, 0.0)), "must be non-zero and not parallel"),
    (dict(axis_a=(0.0, 0.1, 0.0), axis_b=(0.0, 0.2, 0.0)), "must be non-zero and not parallel"),
    (dict(start=(0.0, float("nan"), 0.0)), "ellipse start must be 3 finite numbers"),
    (dict(axis_b=(1.0, 2.0)), "ellipse axis b must be 3 finite numbers"),
    (dict(period=0.0), "ellipse period must be > 0 s, got 0.0"),
    (dict(ramp=-1.0), "ellipse ramp must be >= 0 s"),
])
def test_ellipse_arguments_are_checked(kw, message):
    with pytest.raises(ValueError, match=message):
        ellipse(**kw)


def test_trajectory_ellipse_inverse_staicu_with_powers(tmp_path, capsys):
    traj, tq, tq_e = tmp_path / "e.csv", tmp_path / "tq.csv", tmp_path / "tq_e.csv"
    code, out, err = run(capsys, "trajectory", "ellipse", "--robot", "staicu2003", "--dt", 0.01, "--out", traj)
    assert code == 0, err
    assert "ellipse, 601 rows, 6 s" in out
    tr = read_trajectory(traj).trajectory
    np.testing.assert_allclose(tr.X, ellipse(dt=0.01).X, atol=1e-15)
    code, out, err = run(capsys, "inverse", "--robot", "staicu2003", "--model", "staicu", "--powers",
                         "--trajectory", traj, "--out", tq)
    assert code == 0, err
    assert "(staicu model)" in out and "peak |p|" in out
    table = read_csv(tq, ["t", "tau1", "tau2", "tau3", "p1", "p2", "p3", "qd1", "qd2", "qd3"])
    tau = table.stack(("tau1", "tau2", "tau3"))
    p = table.stack(("p1", "p2", "p3"))
    qd = table.stack(("qd1", "qd2", "qd3"))
    sm = StaicuModel.from_robot("staicu2003")
    np.testing.assert_allclose(tau, inverse_dynamics(sm, tr.X, tr.Xd, tr.Xdd), rtol=1e-14, atol=1e-12)
    np.testing.assert_allclose(p, tau * qd, rtol=1e-14, atol=1e-12)
    jd = read_joint_csv(tq)                    # still a joint-data file for `forward`
    assert jd.tau.shape == (601, 3)
    # the default stays the explicit model; without --powers no p columns
    code, out, err = run(capsys, "inverse", "--robot", "staicu2003", "--trajectory", traj, "--out", tq_e)
    assert code == 0 and "(explicit model)" in out
    assert tq_e.read_text().splitlines()[0].endswith("tau1,tau2,tau3")


def test_inverse_staicu_adds_the_robot_files_friction(tmp_path, capsys):
    traj, a, b = tmp_path / "c.csv", tmp_path / "a.csv", tmp_path / "b.csv"
    assert run(capsys, "trajectory", "circle", "--radius", 0.2, "--depth", -0.85, "--period", 1.0,
               "--duration", 0.5, "--dt", 0.005, "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--robot", "d3s800", "--model", "staicu", "--trajectory", traj, "--out", a)[0] == 0
    assert run(capsys, "inverse", "--robot", "d3s800", "--model", "staicu", "--no-friction",
               "--trajectory", traj, "--out", b)[0] == 0
    ja, jb = read_joint_csv(a), read_joint_csv(b)
    m = RotaryModel.from_robot("d3s800")
    np.testing.assert_allclose(ja.tau - jb.tau, friction_torque(m, ja.qd), atol=1e-12)
    assert np.abs(ja.tau - jb.tau).max() > 1.0


def test_errors_are_one_line_without_traceback(tmp_path, capsys):
    traj, out = tmp_path / "e.csv", tmp_path / "o.csv"
    out.write_text("old\n")
    assert run(capsys, "trajectory", "ellipse", "--dt", 0.05, "--out", traj)[0] == 0
    code, _, err = run(capsys, "inverse", "--robot", "staicu2003", "--model", "nonsense",
                       "--trajectory", traj, "--out", out)
    assert_fails(code, err, "unknown model 'nonsense' (known: explicit, staicu")
    code, _, err = run(capsys, "inverse", "--robot", "nt_robot", "--model", "staicu",
                       "--trajectory", traj, "--out", out)        # the paper's path is not nt_robot's
    assert_fails(code, err, "e.csv:2 (t = 0 s)", "unreachable")
    assert out.read_text() == "old\n"
    r = cli("trajectory", "ellipse", "--axis-a", 0, 0, 0, "--out", traj)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "error: ellipse axes a = [0.0, 0.0, 0.0]" in r.stderr
    # the paper's start point is not in nt_robot's workspace (without --start the defaults are
    # moved into it: test_trajectories.py)
    r = cli("trajectory", "ellipse", "--robot", "nt_robot", "--start", 0, 0, -0.4031, "--out", tmp_path / "x.csv")
    assert r.returncode == 2 and "ellipse on nt_robot: sample 0 (t = 0 s)" in r.stderr
