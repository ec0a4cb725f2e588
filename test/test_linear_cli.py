"""``delta-dynamics`` with a linear Delta: the paper's Lissajous for the tool point,
inverse dynamics with force columns, the Figs. 4-5 demo, and clear refusals where a
subcommand handles rotary robots only."""
import re

import numpy as np
import pytest

from delta_dynamics.cli import main
from delta_dynamics.linear.dynamics import inverse_dynamics, joint_state
from delta_dynamics.linear.model import LinearModel
from delta_dynamics.motion.trajectories import lissajous
from delta_dynamics.data_files.csv_io import read_csv
from delta_dynamics.data_files.trajectory import read_trajectory

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
    m = LinearModel.from_robot("colombo2020")
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
    traj = tmp_path / "t.csv"
    assert run(capsys, "trajectory", "circle", "--radius", 0.02, "--depth", 0.1, "--period", 1.0,
               "--duration", 0.1, "--out", traj)[0] == 0
    # the multibody model (reactions) is of a rotary Delta
    code, _, err = run(capsys, "reactions", "--robot", "colombo2020", "--trajectory", traj,
                       "--out", tmp_path / "r.csv")
    assert code == 2 and err.startswith(ERROR)
    assert "colombo2020 (colombo2020) is a linear Delta; this command handles rotary robots only" in err
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("robot", ["colombo2020"])
def test_demo_draws_figures_4_and_5(tmp_path, capsys, robot):
    code, out, err = run(capsys, "demo", "--robot", robot, "--out", tmp_path)
    assert code == 0, err
    for f in ("lissajous_forces.png", "lissajous_energy.png", "lissajous_200.csv", "lissajous_200_forces.csv"):
        assert (tmp_path / f).stat().st_size > 1000, f
    assert "10 mm/s" in out and "(weight 13.435 N)" in out
    table = read_csv(tmp_path / "lissajous_200_forces.csv", ("t", "f1", "f2", "f3"))
    assert len(table) > 3000


# ----------------------------------------------------------------------------- kinematics and forward

def test_ik_and_fk_in_metres(capsys):
    code, out, err = run(capsys, "ik", "--robot", "colombo2020", 0.02, -0.01, 0.1)
    assert code == 0, err
    assert out.startswith("q (m): ") and "deg" not in out
    q = [float(v) for v in out.split(":")[1].split()]
    m = LinearModel.from_robot("colombo2020")
    np.testing.assert_allclose(q, joint_state(m, [0.02, -0.01, 0.1], [0, 0, 0])[0], atol=1e-9)   # 9 digits
    code, out, err = run(capsys, "fk", "--robot", "colombo2020", *q)
    assert code == 0, err
    assert out.startswith("X (m): ")
    np.testing.assert_allclose([float(v) for v in out.split(":")[1].split()], [0.02, -0.01, 0.1], atol=1e-8)
    code, _, err = run(capsys, "fk", "--robot", "colombo2020", 0.5, 0.3, 0.3)
    assert code == 2 and err.startswith(ERROR)
    assert "carriage 1 position 0.5 m is outside its limits [0.1, 0.49] m" in err
    code, _, err = run(capsys, "ik", "--robot", "colombo2020", 0.3, 0.0, 0.1)
    assert code == 2 and "rod pair" in err and "cannot reach it" in err


def test_forces_in_forward_simulation_reproduce_the_path(tmp_path, capsys):
    """trajectory -> inverse (f1..f3) -> forward: the simulated platform follows the path."""
    traj, forces, sim = tmp_path / "t.csv", tmp_path / "f.csv", tmp_path / "s.csv"
    assert run(capsys, "trajectory", "circle", "--radius", 0.04, "--depth", 0.12, "--period", 1.0,
               "--ramp", 0.5, "--duration", 1.0, "--robot", "colombo2020", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--robot", "colombo2020", "--trajectory", traj, "--out", forces)[0] == 0
    code, out, err = run(capsys, "forward", "--robot", "colombo2020", "--torques", forces, "--out", sim)
    assert code == 0, err
    want, got = read_trajectory(traj).trajectory, read_trajectory(sim).trajectory
    assert np.abs(got.X - want.X).max() < 1e-5
    # the explicit plant under the same forces (simulate --model explicit) agrees
    out2 = tmp_path / "s2.csv"
    code, out, err = run(capsys, "simulate", "--model", "explicit", "--method", "semi-implicit", "--substeps", 4,
                         "--robot", "colombo2020", "--torques", forces, "--out", out2)
    assert code == 0, err
    X = read_csv(out2, ("x", "y", "z")).stack(("x", "y", "z"))
    assert np.abs(X - want.X).max() < 5e-4


def test_joint_data_of_the_other_kind_is_refused_with_a_hint(tmp_path, capsys):
    traj, tq = tmp_path / "t.csv", tmp_path / "tau.csv"
    assert run(capsys, "trajectory", "pick-place", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--trajectory", traj, "--out", tq)[0] == 0          # nt_robot: tau1..3
    code, _, err = run(capsys, "forward", "--robot", "colombo2020", "--torques", tq, "--out", tmp_path / "o.csv")
    assert code == 2 and err.startswith(ERROR)
    assert "missing column" in err and "'f1'" in err
    assert "the file holds torques tau1..3, a rotary Delta's, but the robot is a linear Delta" in err
    code, _, err = run(capsys, "simulate", "--model", "multibody", "--robot", "colombo2020", "--torques", tq,
                       "--out", tmp_path / "o.csv")
    assert code == 2 and "is a linear Delta; this command handles rotary robots only" in err
