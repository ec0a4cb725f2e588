"""``delta-dynamics`` with a linear (prismatic) Delta: the paper's Lissajous for the tool point,
inverse dynamics with force columns, the Figs. 4-5 demo, and clear refusals where a
subcommand handles rotary robots only."""
import re

import numpy as np
import pytest

from delta_dynamics.cli import main
from delta_dynamics.prismatic.dynamics import inverse_dynamics, joint_state
from delta_dynamics.prismatic.model import PrismaticDeltaModel
from delta_dynamics.trajectories import lissajous
from delta_dynamics.trajectory_io import read_csv, read_trajectory

ERROR = "delta-dynamics: error: "


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_lissajous_for_the_nozzle_then_carriage_forces(tmp_path, capsys):
    traj, forces = tmp_path / "liss.csv", tmp_path / "f.csv"
    code, out, err = run(capsys, "trajectory", "lissajous", "--speed", 0.2, "--x0", 0.05, "--y0", 0.05,
                         "--depth", 0.0, "--tool", "--robot", "colombo2020", "--timing", "arc-length",
                         "--out", traj)
    assert code == 0, err
    tr = read_trajectory(traj).trajectory
    np.testing.assert_allclose(tr.X[:, 2], 0.05)                 # the platform PQ above the bed
    expected = lissajous(speed=0.2, x0=0.05, y0=0.05, depth=0.0, timing="arc-length")
    np.testing.assert_allclose(tr.X[:, :2], expected.X[:, :2])
    code, out, err = run(capsys, "inverse", "--robot", "colombo2020", "--trajectory", traj, "--out", forces)
    assert code == 0, err
    assert "peak |f| =" in out and out.rstrip().endswith(" N")
    cols = ("t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "qdd1", "qdd2", "qdd3", "f1", "f2", "f3")
    table = read_csv(forces, cols)
    assert table.header == ("t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "qdd1", "qdd2", "qdd3", "f1", "f2", "f3")
    m = PrismaticDeltaModel.from_robot("colombo2020")
    np.testing.assert_allclose(table.stack(("f1", "f2", "f3")), inverse_dynamics(m, tr.X, tr.Xd, tr.Xdd),
                               rtol=1e-12, atol=1e-12)
    q, _, _ = joint_state(m, tr.X, tr.Xd)
    np.testing.assert_allclose(table.stack(("q1", "q2", "q3")), q, rtol=1e-14)


def test_the_papers_lissajous_parameters_are_options(tmp_path, capsys):
    out = tmp_path / "l.csv"
    code, _, err = run(capsys, "trajectory", "lissajous", "--speed", 0.5, "--x0", 0.04, "--y0", 0.03,
                       "--depth", 0.1, "--wx", 2 * np.pi, "--wy", 2 * np.pi, "--phix", 0.0, "--phiy", np.pi / 2,
                       "--out", out)
    assert code == 0, err
    X = read_trajectory(out).trajectory.X
    # wx = wy = 2 pi, phases 0 and pi/2: an ellipse starting at (0, y0)
    np.testing.assert_allclose(X[0], [0.0, 0.03, 0.1], atol=1e-12)
    np.testing.assert_allclose((X[:, 0] / 0.04) ** 2 + (X[:, 1] / 0.03) ** 2, 1.0, atol=1e-9)


def test_a_limit_beyond_the_carriage_range_is_refused_with_its_time(tmp_path, capsys):
    out = tmp_path / "l.csv"
    code, _, err = run(capsys, "trajectory", "lissajous", "--x0", 0.05, "--y0", 0.05, "--depth", 0.3,
                       "--robot", "colombo2020", "--out", out)
    assert code == 2 and err.startswith(ERROR)
    assert re.search(r"lissajous on colombo2020: sample \d+ \(t = [0-9.]+ s\): carriage [123] position "
                     r"0\.49[0-9]* m is outside its limits \[0\.1, 0\.49\] m", err), err
    assert not out.exists()


def test_the_force_limit_warning_names_the_carriage(tmp_path, capsys):
    traj, forces = tmp_path / "t.csv", tmp_path / "f.csv"
    code, _, err = run(capsys, "trajectory", "circle", "--radius", 0.03, "--depth", 0.1, "--period", 0.05,
                       "--duration", 0.05, "--out", traj)
    assert code == 0, err
    code, _, err = run(capsys, "inverse", "--robot", "colombo2020", "--trajectory", traj, "--out", forces)
    assert code == 0
    assert "carriage 1 force" in err and "N exceeds the limit 60" in err


def test_tool_needs_a_robot_and_rotary_only_commands_say_so(tmp_path, capsys):
    code, _, err = run(capsys, "trajectory", "lissajous", "--tool", "--out", tmp_path / "x.csv")
    assert code == 2 and "--tool needs --robot" in err
    code, _, err = run(capsys, "ik", "--robot", "colombo2020", "0", "0", "0.1")
    assert code == 2 and err.startswith(ERROR)
    assert "colombo2020 (colombo2020) is a prismatic Delta; this command handles rotary robots only" in err


@pytest.mark.parametrize("robot", ["colombo2020"])
def test_demo_draws_figures_4_and_5(tmp_path, capsys, robot):
    code, out, err = run(capsys, "demo", "--robot", robot, "--out", tmp_path)
    assert code == 0, err
    for f in ("lissajous_forces.png", "lissajous_energy.png", "lissajous_200.csv", "lissajous_200_forces.csv"):
        assert (tmp_path / f).stat().st_size > 1000, f
    assert "10 mm/s" in out and "(weight 13.435 N)" in out
    table = read_csv(tmp_path / "lissajous_200_forces.csv", ("t", "f1", "f2", "f3"))
    assert len(table) > 3000
