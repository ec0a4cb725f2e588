"""The ``delta-dynamics`` command line, run for real: as a subprocess
(``python -m delta_dynamics.cli``) where exit codes and stderr matter, and in-process through
``main([...])`` elsewhere. Checks exit codes, messages (never a traceback), output files, and
that a failed run leaves an existing output file untouched."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from delta_dynamics.cli import main
from delta_dynamics.data_files.joint_data import read_joint_csv
from delta_dynamics.data_files.trajectory import read_trajectory

ERROR = "delta-dynamics: error: "


def cli(*args, cwd=None):
    """Run the real command line in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "delta_dynamics.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def run(capsys, *args):
    """main([...]) in-process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_fails(code, err, *fragments):
    """Exit status 2 and one error line (last on stderr, after any notes) holding fragments."""
    assert code == 2, err
    assert "Traceback" not in err
    last = err.rstrip("\n").splitlines()[-1]
    assert last.startswith(ERROR), err
    for f in fragments:
        assert f in last, (f, err)


def only_files(d):
    return sorted(p for p in os.listdir(d))


# ----------------------------------------------------------------------------- round trips

def test_trajectory_inverse_forward_round_trip(tmp_path, capsys):
    """A circle from rest (with friction): the simulated positions under the computed torques
    reproduce the trajectory within 0.1 mm over 2 s (~16 um in practice; what remains comes
    from the Coulomb friction switching faster than the 1 ms torque samples)."""
    traj, tq, sim = tmp_path / "traj.csv", tmp_path / "tq.csv", tmp_path / "sim.csv"
    code, out, err = run(capsys, "trajectory", "circle", "--radius", 0.25, "--depth", -0.75,
                         "--period", 2.0, "--ramp", 1.0, "--duration", 2.0, "--robot", "nt_robot",
                         "--out", traj)
    assert code == 0, err
    assert "2001 rows" in out
    code, out, err = run(capsys, "inverse", "--robot", "nt_robot", "--trajectory", traj, "--out", tq)
    assert code == 0, err
    code, out, err = run(capsys, "forward", "--robot", "nt_robot", "--torques", tq, "--out", sim)
    assert code == 0, err
    want = read_trajectory(traj).trajectory
    got = read_trajectory(sim).trajectory
    assert np.array_equal(got.t, want.t)
    assert np.abs(got.X - want.X).max() < 1e-4
    assert np.abs(got.Xd - want.Xd).max() < 1e-3
    # the written accelerations are the forward dynamics under the written torques; where a
    # joint velocity crosses zero the Coulomb term switches within microradians per second,
    # so a few rows differ more
    err_a = np.abs(got.Xdd - want.Xdd).max(axis=1)
    assert np.percentile(err_a, 99) < 1e-3 * np.abs(want.Xdd).max()


def test_pick_place_round_trip_without_friction(tmp_path, capsys):
    """Without friction the torques are smooth and the round trip is near exact."""
    traj, tq, sim = tmp_path / "traj.csv", tmp_path / "tq.csv", tmp_path / "sim.csv"
    assert run(capsys, "trajectory", "pick-place", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--no-friction", "--trajectory", traj, "--out", tq)[0] == 0
    assert run(capsys, "forward", "--no-friction", "--torques", tq, "--out", sim)[0] == 0
    want = read_trajectory(traj).trajectory
    got = read_trajectory(sim).trajectory
    assert np.abs(got.X - want.X).max() < 1e-6


@pytest.mark.parametrize("method", ["semi-implicit", "rk4"])
def test_forward_fixed_step_methods(tmp_path, capsys, method):
    traj, tq, sim = tmp_path / "traj.csv", tmp_path / "tq.csv", tmp_path / "sim.csv"
    assert run(capsys, "trajectory", "pick-place", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--trajectory", traj, "--out", tq)[0] == 0
    code, out, err = run(capsys, "forward", "--method", method, "--substeps", 2, "--torques", tq,
                         "--out", sim)
    assert code == 0, err
    assert method in out
    # torques held over each 1 ms row: first-order error, still within a few mm
    err_x = np.abs(read_trajectory(sim).trajectory.X - read_trajectory(traj).trajectory.X).max()
    assert err_x < 3e-3


def test_inverse_output_columns_and_values(tmp_path, capsys):
    from delta_dynamics.rotary.dynamics import inverse_dynamics, joint_state
    from delta_dynamics.rotary.model import RotaryModel
    traj, tq = tmp_path / "traj.csv", tmp_path / "tq.csv"
    assert run(capsys, "trajectory", "lissajous", "--out", traj, "--depth", -0.8)[0] == 0
    code, out, err = run(capsys, "inverse", "--robot", "d3s800", "--trajectory", traj, "--out", tq)
    assert code == 0, err
    assert tq.read_text().splitlines()[0] == "t,q1,q2,q3,qd1,qd2,qd3,qdd1,qdd2,qdd3,tau1,tau2,tau3"
    m = RotaryModel.from_robot("d3s800")
    tr = read_trajectory(traj).trajectory
    jd = read_joint_csv(tq)
    q, qd, qdd = joint_state(m, tr.X, tr.Xd, tr.Xdd)
    assert np.array_equal(jd.q, q) and np.array_equal(jd.qd, qd) and np.array_equal(jd.qdd, qdd)
    assert np.array_equal(jd.tau, inverse_dynamics(m, tr.X, tr.Xd, tr.Xdd))


def test_inverse_from_positions_only(tmp_path, capsys):
    full, xyz = tmp_path / "full.csv", tmp_path / "xyz.csv"
    assert run(capsys, "trajectory", "circle", "--ramp", 1.0, "--duration", 3.0, "--out", full)[0] == 0
    lines = full.read_text().splitlines()
    xyz.write_text("\n".join(",".join(r.split(",")[:4]) for r in lines) + "\n")
    code, out, err = run(capsys, "inverse", "--trajectory", xyz, "--out", tmp_path / "a.csv")
    assert code == 0, err
    assert "smoothing spline" in err
    assert run(capsys, "inverse", "--trajectory", full, "--out", tmp_path / "b.csv")[0] == 0
    a, b = read_joint_csv(tmp_path / "a.csv"), read_joint_csv(tmp_path / "b.csv")
    assert np.array_equal(a.q, b.q)
    assert np.abs(a.qd - b.qd).max() < 1e-6
    assert np.abs(a.tau - b.tau).max() < 1e-3                  # N m, of ~15 N m


def test_ik_fk_round_trip():
    r = cli("ik", 0.05, -0.02, -0.75)
    assert r.returncode == 0, r.stderr
    rad = re.search(r"q \(rad\): (\S+) (\S+) (\S+)", r.stdout).groups()
    deg = re.search(r"q \(deg\): (\S+) (\S+) (\S+)", r.stdout).groups()
    assert np.allclose(np.degrees([float(v) for v in rad]), [float(v) for v in deg], atol=1e-3)
    r = cli("fk", *rad)
    assert r.returncode == 0, r.stderr
    X = [float(v) for v in re.search(r"X \(m\): (\S+) (\S+) (\S+)", r.stdout).groups()]
    assert np.allclose(X, [0.05, -0.02, -0.75], atol=1e-8)


def test_ik_with_another_robot_file(tmp_path, capsys):
    from delta_core.robot_file import load_robot, save_robot
    path = save_robot(load_robot("nt_robot").replace(name="copy"), tmp_path / "copy.yaml")
    a = run(capsys, "ik", 0, 0, -0.8, "--robot", path)
    b = run(capsys, "ik", 0, 0, -0.8)
    assert a[0] == b[0] == 0 and a[1] == b[1]


# ----------------------------------------------------------------------------- errors

def test_unreachable_row_is_named_with_its_time(tmp_path):
    traj, out = tmp_path / "traj.csv", tmp_path / "tq.csv"
    rows = [f"{k * 0.01!r},0,0,-0.8" for k in range(8)]
    rows[5] = "0.05,0,0,-2.0"                                   # line 7 of the file
    traj.write_text("t,x,y,z\n" + "\n".join(rows) + "\n")
    r = cli("inverse", "--trajectory", traj, "--out", out)
    assert_fails(r.returncode, r.stderr, f"{traj}:7 (t = 0.05 s): ", "unreachable")
    assert "(sample" not in r.stderr
    assert not out.exists() and only_files(tmp_path) == ["traj.csv"]


def test_joint_limit_row_is_named_with_its_time(tmp_path, capsys):
    # reachable, but joint 1 would go past its -0.7 rad limit (circle at z = -0.5)
    traj, out = tmp_path / "traj.csv", tmp_path / "tq.csv"
    assert run(capsys, "trajectory", "circle", "--depth", -0.5, "--duration", 0.2, "--out", traj)[0] == 0
    code, _, err = run(capsys, "inverse", "--trajectory", traj, "--out", out)
    assert_fails(code, err, f"{traj}:66 (t = 0.064 s): ", "joint 1 angle", "outside its limits")
    assert not out.exists()


def test_malformed_csv_names_line_and_column(tmp_path):
    traj, out = tmp_path / "traj.csv", tmp_path / "tq.csv"
    traj.write_text("t,x,y,z\n0,0,0,-0.8\n0.01,0,0,-0.8\n0.02,abc,0,-0.8\n0.03,0,0,-0.8\n")
    r = cli("inverse", "--trajectory", traj, "--out", out)
    assert_fails(r.returncode, r.stderr, f"{traj}:4: column 'x': not a number: 'abc'")
    assert not out.exists()


@pytest.mark.parametrize("body, fragment", [
    ("t,x,y,z\n0,0,0,-0.8\n0.01,0,0\n0.02,0,0,-0.8\n0.03,0,0,-0.8\n", ":3: column 'z' is missing"),
    ("t,x,y,z\n0,0,0,-0.8\n0.01,0,NaN,-0.8\n0.02,0,0,-0.8\n0.03,0,0,-0.8\n", ":3: column 'y': not a finite number"),
    ("t,x,y\n0,0,0\n", ":1: missing column 'z'"),
    ("t,x,y,z\n0,0,0,-0.8\n0,0,0,-0.8\n0.02,0,0,-0.8\n0.03,0,0,-0.8\n", ":3: column 't'"),
])
def test_bad_input_never_overwrites_the_output(tmp_path, capsys, body, fragment):
    traj, out = tmp_path / "traj.csv", tmp_path / "tq.csv"
    traj.write_text(body)
    out.write_text("previous result\n")
    code, _, err = run(capsys, "inverse", "--trajectory", traj, "--out", out)
    assert_fails(code, err, str(traj) + fragment)
    assert out.read_text() == "previous result\n"
    assert only_files(tmp_path) == ["tq.csv", "traj.csv"]     # no temporary file left behind


def test_forward_that_leaves_the_workspace_fails_cleanly(tmp_path, capsys):
    tq, out = tmp_path / "tq.csv", tmp_path / "sim.csv"
    q0 = 0.45                                                   # arms at the home pose
    rows = [f"{k * 0.01!r},{q0},{q0},{q0},0,0,0,100,100,100" for k in range(201)]
    tq.write_text("t,q1,q2,q3,qd1,qd2,qd3,tau1,tau2,tau3\n" + "\n".join(rows) + "\n")
    out.write_text("keep me\n")
    code, _, err = run(capsys, "forward", "--torques", tq, "--out", out)
    assert_fails(code, err, str(tq), "left its workspace near t = ")
    assert out.read_text() == "keep me\n"


def test_forward_bad_initial_state_names_the_row(tmp_path, capsys):
    tq = tmp_path / "tq.csv"
    tq.write_text("t,q1,q2,q3,qd1,qd2,qd3,tau1,tau2,tau3\n0,3,3,3,0,0,0,0,0,0\n1,3,3,3,0,0,0,0,0,0\n")
    code, _, err = run(capsys, "forward", "--torques", tq, "--out", tmp_path / "o.csv")
    assert_fails(code, err, f"{tq}:2 (t = 0 s): initial state: joint 1 angle 3.0000 rad is outside")


def test_trajectory_check_against_a_robot(tmp_path):
    out = tmp_path / "c.csv"
    out.write_text("old\n")
    r = cli("trajectory", "circle", "--depth", -0.5, "--robot", "nt_robot", "--out", out)
    assert_fails(r.returncode, r.stderr, "circle on nt_robot: sample 64 (t = 0.064 s)",
                 "outside its limits")
    assert out.read_text() == "old\n"


@pytest.mark.parametrize("args, fragments", [
    (["ik", 0, 0, -2.0], ["(0, 0, -2) m is unreachable"]),
    (["ik", 0.3, 0, -0.45], ["joint 1 angle -0.9513 rad is outside its limits"]),
    (["fk", 2.0, 0, 0], ["joint 1 angle 2.0000 rad is outside its limits"]),
    (["fk", -0.6, -0.6, -0.6, "--no-limits"], []),              # allowed without the check
    (["ik", 0, 0, -0.8, "--robot", "no_such_robot"], ["no such preset"]),
    (["inverse", "--trajectory", "missing.csv", "--out", "x.csv"], ["missing.csv: CSV file not found"]),
    (["trajectory", "circle", "--out", "c.csv", "--radius", 0], []),   # argparse: exit 2
    (["trajectory", "pick-place", "--out", "p.csv", "--start", 0, 0], []),
    (["forward", "--torques", "t.csv", "--out", "o.csv", "--method", "euler"], []),
])
def test_errors_exit_2_without_traceback(tmp_path, args, fragments):
    r = cli(*args, cwd=tmp_path)
    if fragments == [] and args[-1] == "--no-limits":
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    if fragments:
        assert_fails(r.returncode, r.stderr, *fragments)
    assert only_files(tmp_path) == []


def test_help_lists_the_commands():
    r = cli("--help")
    assert r.returncode == 0
    for c in ("trajectory", "inverse", "forward", "ik", "fk", "demo"):
        assert c in r.stdout


# ----------------------------------------------------------------------------- demo

def test_demo_writes_plots_and_a_summary(tmp_path, capsys):
    code, out, err = run(capsys, "demo", "--out", tmp_path / "out")
    assert code == 0, err
    names = only_files(tmp_path / "out")
    for png in ("circle_torques.png", "pick_place_tracking.png", "workspace_3d.png"):
        assert png in names
        assert (tmp_path / "out" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    m = re.search(r"RMS / max = ([\d.]+) / ([\d.]+) mm \(PD\), ([\d.]+) / ([\d.]+) mm", out)
    pd_rms, _, ff_rms, _ = (float(v) for v in m.groups())
    assert ff_rms < 0.2 * pd_rms                               # feedforward pays off
    assert read_joint_csv(tmp_path / "out" / "circle_torques.csv").t[-1] == pytest.approx(2 * np.pi + 1, abs=1e-3)
