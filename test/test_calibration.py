"""Kinematic calibration (delta_dynamics.calibration, ``delta-calibrate``): a rotary Delta
measured by a simulated laser tracker, the analytic Jacobian against finite differences, the
robust fit against an outlier, pose design, the command line and its refusals of bad files."""
import os
import re

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics import algorithms as A
from delta_dynamics.calibration import cli
from delta_dynamics.calibration.data import Measurements, read_measurements, write_measurements
from delta_dynamics.calibration.fit import calibrate, held_out_error, predict
from delta_dynamics.calibration.poses import choose_poses
from delta_dynamics.kinds import model_for

NOISE = 5e-5            # 0.05 mm per coordinate


def perturbed(m, seed=1):
    """Every per-arm parameter of ``m`` perturbed: 1 mm, 2 mrad (1 sigma)."""
    ch = m.chains
    rng = np.random.default_rng(seed)
    return ch.parameters(m.robot) + np.array([rng.normal(0, 1e-3 if ch.unit(n) == "m" else 2e-3) for n in ch.names])


def tracker_data(m, true, n, seed, outlier=None):
    rng = np.random.default_rng(seed + 100)
    X = A.sample_workspace(m, n, seed=seed)
    q = A.inverse_kinematics(m, X)
    Q, _ = predict(m.chains, true, q, "positions")
    Q = Q + rng.normal(0, NOISE, Q.shape)
    if outlier is not None:
        Q[outlier] += 0.005
    return Measurements("positions", q, Q, None)


@pytest.fixture(scope="module")
def rotary_case():
    m = model_for("nt_robot")
    true = perturbed(m)
    fit = tracker_data(m, true, 50, seed=2)
    held = tracker_data(m, true, 200, seed=3)
    return m, true, fit, held, calibrate(m.chains, m.chains.parameters(m.robot), fit)


def test_rotary_laser_tracker_calibration(rotary_case):
    m, true, fit, held, result = rotary_case
    ch = m.chains
    noise_per_pose = NOISE * np.sqrt(3)
    before = np.sqrt(np.mean(held_out_error(ch, ch.parameters(m.robot), held) ** 2))
    after = np.sqrt(np.mean(held_out_error(ch, result.p, held) ** 2))
    assert before > 10 * noise_per_pose                       # the perturbation matters (~1 mm)
    assert after <= 1.5 * noise_per_pose
    # base and platform radius enter as their difference: the three sums are named, the rest identifiable
    assert sorted(result.ident.unidentifiable) == [f"base_radius_{i} + platform_radius_{i}" for i in (1, 2, 3)]
    ident = result.ident.identifiable_parameters
    assert len(ident) == 12 and "platform_radius_1" not in ident
    for name in ident:
        j = ch.names.index(name)
        assert abs(result.p[j] - true[j]) <= 3 * result.sigma[j], name
    # the identifiable combination R_i - r_i is recovered too
    for i in range(3):
        d_fit = ch.block(result.p, "base_radius")[i] - ch.block(result.p, "platform_radius")[i]
        d_true = ch.block(true, "base_radius")[i] - ch.block(true, "platform_radius")[i]
        assert abs(d_fit - d_true) < 3 * result.sigma[ch.index("base_radius", i)]


def test_outlier_is_down_weighted():
    m = model_for("nt_robot")
    true = perturbed(m, seed=4)
    fit = tracker_data(m, true, 50, seed=5, outlier=7)
    held = tracker_data(m, true, 100, seed=6)
    robust = calibrate(m.chains, m.chains.parameters(m.robot), fit)
    plain = calibrate(m.chains, m.chains.parameters(m.robot), fit, robust=False)
    assert robust.outliers == (7,)
    e_robust = np.sqrt(np.mean(held_out_error(m.chains, robust.p, held) ** 2))
    e_plain = np.sqrt(np.mean(held_out_error(m.chains, plain.p, held) ** 2))
    assert e_robust <= 1.5 * NOISE * np.sqrt(3) < e_plain


@pytest.mark.parametrize("robot, kind", [("nt_robot", "positions"), ("colombo2020", "positions"),
                                         ("colombo2020", "heights")])
def test_jacobian_matches_finite_differences(robot, kind):
    m = model_for(robot)
    p = perturbed(m, seed=7)
    q = A.inverse_kinematics(m, A.sample_workspace(m, 5, seed=1))
    _, J = predict(m.chains, p, q, kind)
    h = 1e-7
    for j in range(len(p)):
        e = np.zeros(len(p))
        e[j] = h
        fd = (predict(m.chains, p + e, q, kind)[0] - predict(m.chains, p - e, q, kind)[0]) / (2 * h)
        np.testing.assert_allclose(J[..., j], fd, atol=1e-7, err_msg=m.chains.names[j])


def test_pose_design_beats_random_poses():
    m = model_for("nt_robot")
    design = choose_poses(m, 20, seed=0)
    assert design.q.shape == (20, 3)
    for q in design.q:
        A.check_joint_limits(m, q)
    # random poses from the same workspace: a smaller smallest singular value
    from delta_dynamics.calibration.fit import identifiability, scales
    ch = m.chains
    q = A.inverse_kinematics(m, A.sample_workspace(m, 20, seed=9, min_measure=0.05))
    _, J = predict(ch, ch.parameters(m.robot), q, "positions")
    idx = np.arange(len(ch.names))
    rnd = identifiability(J.reshape(-1, J.shape[-1]), idx, ch.names, scales(ch))
    assert design.smallest_singular_value > rnd.singular_values[rnd.rank - 1]


# ----------------------------------------------------------------------------- the command line

def run_cli(*argv):
    return cli.main([str(a) for a in argv])


def test_cli_calibrates_and_writes_a_robot_file(tmp_path, capsys):
    m = model_for("nt_robot")
    true = perturbed(m, seed=11)
    meas = tracker_data(m, true, 50, seed=12)
    write_measurements(tmp_path / "m.csv", meas)
    out = tmp_path / "cal.yaml"
    assert run_cli("--robot", "nt_robot", "--measurements", tmp_path / "m.csv", "--out", out,
                   "--report", tmp_path / "rep") == 0
    text = capsys.readouterr().out
    assert re.search(r"not identifiable from any positions poses \(kept at nominal\): "
                     r"(base_radius_1 \+ platform_radius_1|platform_radius_1 \+ base_radius_1)", text), text
    assert "more combination(s)" not in text                     # 50 poses leave only what no pose can identify
    calibrated = load_robot(str(out))
    assert calibrated.geometry.per_arm is not None
    mc = model_for(calibrated)
    held = tracker_data(m, true, 100, seed=13)
    err = held_out_error(mc.chains, mc.chains.parameters(calibrated), held)
    assert np.sqrt(np.mean(err ** 2)) <= 1.5 * NOISE * np.sqrt(3)
    # the calibrated file's own kinematics agree with the fit (the stack uses these)
    X = A.forward_kinematics(mc, held.q)
    np.testing.assert_allclose(X, predict(mc.chains, mc.arms, held.q, "positions")[0], atol=1e-12)
    assert sorted(os.listdir(tmp_path / "rep")) == ["residuals.csv", "residuals.png", "summary.txt"]
    # only some parameters
    assert run_cli("--robot", "nt_robot", "--measurements", tmp_path / "m.csv", "--out", tmp_path / "o.yaml",
                   "--parameters", "joint_offset_*") == 0
    only = model_for(str(tmp_path / "o.yaml"))
    p0 = m.chains.parameters(m.robot)
    changed = [n for n, a, b in zip(m.chains.names, p0, only.arms) if abs(a - b) > 1e-12]
    assert changed and all(n.startswith("joint_offset_") for n in changed)


def test_report_names_the_poses_that_would_identify_more_and_they_do(tmp_path, capsys):
    """Eight tracker poses on one vertical line identify part of the geometry only: the report names the
    tool points to measure as well; measured there too, everything is identified but the
    combinations the report names as identifiable from no pose (base and platform radius of
    each arm enter as their difference)."""
    m = model_for("nt_robot")
    true = perturbed(m, seed=11)
    X = A.workspace_centre(m) + np.array([[0, 0, z] for z in np.linspace(-0.1, 0.1, 8)])
    q = A.inverse_kinematics(m, X)
    write_measurements(tmp_path / "few.csv", Measurements("positions", q, predict(m.chains, true, q, "positions")[0], None))
    assert run_cli("--robot", "nt_robot", "--measurements", tmp_path / "few.csv", "--out", tmp_path / "o.yaml") == 0
    text = capsys.readouterr().out
    advice = re.findall(r"(\d+) more combination\(s\) not identifiable from these poses \(kept at nominal\); "
                        r"measuring also at these tool points \(m, base_link\) would identify them: (.*)", text)
    assert len(advice) == 1, text
    more, listed = int(advice[0][0]), advice[0][1]
    pts = np.array(re.findall(r"\(([-\d.]+), ([-\d.]+), ([-\d.]+)\)", listed), float)
    structural = re.findall(r"not identifiable from any positions poses \(kept at nominal\): (.*)", text)
    assert 1 <= len(pts) <= 6 and len(structural) == 3 and more == 3, text
    tool = m.chains.tool_offset(m.chains.parameters(m.robot))
    q2 = np.vstack((q, A.inverse_kinematics(m, pts + [0, 0, tool])))
    more = Measurements("positions", q2, predict(m.chains, true, q2, "positions")[0], None)
    result = calibrate(m.chains, m.chains.parameters(m.robot), more)
    names = lambda combos: sorted(tuple(sorted(re.findall(r"[a-z_]+_\d|[a-z_]+", c))) for c in combos)  # noqa: E731
    assert names(result.ident.unidentifiable) == names(structural)


def test_report_on_probe_heights_says_positions_would_identify_more(tmp_path, capsys):
    """A printer's probe heights cannot see every tower's radius and angle: the report names
    those combinations and says measured positions would identify them."""
    m = model_for("colombo2020")
    d = choose_poses(m, 12, "heights", 0.0, seed=0)
    write_measurements(tmp_path / "h.csv", Measurements("heights", d.q, np.zeros((len(d.q), 1)), None))
    assert run_cli("--robot", "colombo2020", "--measurements", tmp_path / "h.csv", "--out", tmp_path / "o.yaml") == 0
    text = capsys.readouterr().out
    n = re.findall(r"measured positions \(x, y, z\) instead of heights would identify (\d+) of those", text)
    assert n and int(n[0]) > 0, text
    assert "not identifiable from any heights poses (kept at nominal): " in text


def test_heights_of_a_surface_out_of_reach_get_a_fit_without_pose_advice(tmp_path, capsys):
    """Heights whose surface no pose within the limits reaches (here 5 m up): the fit is written,
    the report gives no tool points (there are none to give) and nothing fails."""
    m = model_for("colombo2020")
    d = choose_poses(m, 12, "heights", 0.0, seed=0)
    write_measurements(tmp_path / "h.csv", Measurements("heights", d.q, np.full((len(d.q), 1), 5.0), None))
    assert run_cli("--robot", "colombo2020", "--measurements", tmp_path / "h.csv", "--out", tmp_path / "o.yaml") == 0
    text = capsys.readouterr().out
    assert "not identifiable from these data" in text and "measuring also at" not in text
    assert (tmp_path / "o.yaml").exists()


def test_cli_poses(tmp_path):
    out = tmp_path / "poses.csv"
    assert run_cli("poses", "--robot", "colombo2020", "--count", 12, "--heights", "--out", out) == 0
    meas = read_measurements(out, "positions")
    assert len(meas) == 12 and np.allclose(meas.values[:, 2], 0.0)


def one_line_error(capsys, code=2):
    err = capsys.readouterr().err.strip()
    assert err.startswith("delta-calibrate: error: ") and "\n" not in err, err
    return err


@pytest.mark.parametrize("case", ["fifo", "directory", "loop", "missing", "bad row", "unknown parameter",
                                  "out is a directory", "report is a file"])
def test_cli_refuses_bad_input(tmp_path, capsys, case):
    m = model_for("nt_robot")
    good = tmp_path / "m.csv"
    write_measurements(good, tracker_data(m, perturbed(m), 30, seed=1))
    meas, out, extra = good, tmp_path / "cal.yaml", []
    if case == "fifo":
        meas = tmp_path / "fifo.csv"
        os.mkfifo(meas)
    elif case == "directory":
        meas = tmp_path
    elif case == "loop":
        meas = tmp_path / "loop.csv"
        os.symlink(tmp_path / "loop2.csv", meas)
        os.symlink(meas, tmp_path / "loop2.csv")
    elif case == "missing":
        meas = tmp_path / "nope.csv"
    elif case == "bad row":
        meas = tmp_path / "bad.csv"
        meas.write_text("q1,q2,q3,x,y,z\n0.1,0.2,0.3,0,0,abc\n")
    elif case == "unknown parameter":
        extra = ["--parameters", "elbow_length_*"]
    elif case == "out is a directory":
        out = tmp_path / "d"
        out.mkdir()
    elif case == "report is a file":
        extra = ["--report", str(good)]
    before = sorted(os.listdir(tmp_path))
    assert run_cli("--robot", "nt_robot", "--measurements", meas, "--out", out, *extra) == 2
    err = one_line_error(capsys)
    assert {"fifo": "FIFO", "directory": "a directory", "loop": "symlink loop", "missing": "measurement file not found",
            "bad row": "abc", "unknown parameter": "elbow_length_*", "out is a directory": "a directory",
            "report is a file": "not a folder for the report"}[case] in err
    assert sorted(os.listdir(tmp_path)) == before            # nothing written


def test_cli_refuses_a_fifo_robot_file(tmp_path, capsys):
    fifo = tmp_path / "robot.yaml"
    os.mkfifo(fifo)
    assert run_cli("to-klipper", fifo) == 2
    assert "FIFO" in one_line_error(capsys)
