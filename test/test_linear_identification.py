"""Identification of a linear Delta through the stack: an excitation trajectory for the
carriages, synthetic measurements of a robot that differs from its robot file, and
``delta-identify --robot colombo2020`` from a CSV file (f1..f3 columns) and from a rosbag2 bag
(forces, or motor currents through torque_constant * gear_ratio), writing a linear robot file
whose model has the true lumped parameters."""
import math

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics import algorithms as alg
from delta_dynamics.identification import IdentificationError
from delta_dynamics.data_files import bag as B
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import synthetic
from delta_dynamics.identification.cli import main
from delta_dynamics.identification.excitation import check_trajectory, design_excitation
from delta_dynamics.identification.pipeline import Options, identify_data
from delta_dynamics.identification.robot_update import identified_robot, model_from_robot_file
from delta_dynamics.kinds import model_for
from delta_dynamics.data_files.trajectory import read_trajectory

ROBOT = load_robot("colombo2020")
NOMINAL = model_for(ROBOT)
GEAR = ROBOT.mass.motor.gear_ratio                      # motor rad per metre


@pytest.fixture(scope="module")
def excitation():
    return design_excitation(NOMINAL, period=3.0, harmonics=3, starts=1, maxiter=15, grid=100, seed=0)


@pytest.fixture(scope="module")
def truth():
    """The robot as built: lumped parameters 20 % off the robot file's, and carriage friction."""
    return synthetic.perturbed_model(NOMINAL, spread=0.2, seed=4, viscous=(2.0, 3.0, 2.5),
                                     coulomb=(0.5, 0.7, 0.6))


@pytest.fixture(scope="module")
def files(tmp_path_factory, excitation, truth):
    d = tmp_path_factory.mktemp("linear_ident")
    data, _ = synthetic.open_loop_data(truth, excitation.trajectory, duration=9.0, noise=0.005, seed=3,
                                       gear_ratio=GEAR)
    out = {"data": data}
    out["csv"] = J.write_joint_data(d / "fit.csv", data.t, data.q, data.tau, effort="f")
    out["tau_csv"] = J.write_joint_data(d / "tau.csv", data.t, data.q, data.tau)
    out["bag"] = B.write_bag(d / "bag", data.t, data.q, data.tau, ROBOT.joint_names, storage="mcap",
                             extra_joints=1)
    amps = data.tau / (ROBOT.mass.motor.torque_constant * GEAR)            # the motor currents (A)
    out["amps"] = B.write_bag(d / "amps", data.t, data.q, amps, ROBOT.joint_names, storage="sqlite3")
    return out


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_the_excitation_moves_the_carriages_inside_every_limit(excitation, tmp_path, capsys):
    traj = excitation.trajectory
    assert excitation.violations == [] and check_trajectory(NOMINAL, traj) == []
    assert excitation.condition < 20                                     # all 14 parameters excited
    t, q, qd, qdd = traj.sample(1e-3)
    lo, hi = np.array(NOMINAL.q_lo), np.array(NOMINAL.q_hi)
    assert (q >= lo).all() and (q <= hi).all() and np.ptp(q, axis=0).min() > 0.02     # m
    F = alg.inverse_dynamics_joint(NOMINAL, q, qd, qdd)
    assert np.abs(F).max() <= 0.8 * ROBOT.limits.force[0]
    # the CLI writes it as a platform trajectory
    out = tmp_path / "excite.csv"
    code, text, err = run(capsys, "excite", "--robot", "colombo2020", "--out", out, "--period", 3, "--harmonics", 3,
                          "--starts", 1, "--maxiter", 10, "--cycles", 1, "--margin", 0.01, "--no-progress")
    assert code == 0, err
    assert "peak |v| [m/s]" in text and "peak |f| [N]" in text and "carriage" in text
    tr = read_trajectory(out).trajectory
    alg.inverse_kinematics(NOMINAL, tr.X, check_limits=True)
    assert tr.t[-1] == pytest.approx(3.0)


def _check_identified(path, truth, rtol=0.03):
    robot = load_robot(path)
    assert robot.type == "linear" and robot.metadata["identified"]["tool"] == "delta-identify"
    lp = robot.metadata["identified"]["lumped_parameters"]
    assert lp["names"] == list(alg.parameter_names(NOMINAL))
    model = model_for(robot)
    got, want = model.params.as_vector(), truth.params.as_vector()
    big = np.abs(want) > 0.05                                           # masses (kg), viscous (N s/m)
    np.testing.assert_allclose(got[big], want[big], rtol=rtol)
    np.testing.assert_allclose(got[~big], want[~big], atol=0.01)         # m_r, small Coulomb forces
    return robot


def test_delta_identify_from_a_csv_with_carriage_forces(files, truth, capsys, tmp_path):
    out, report = tmp_path / "identified.yaml", tmp_path / "report"
    code, text, err = run(capsys, "--robot", "colombo2020", "--data", files["csv"], "--method", "ols",
                          "--out", out, "--report", report, "--no-progress")
    assert code == 0, err
    assert "base parameters: rank 14 of 14" in text and "RMS error [N]:" in text
    assert "carriage_inertia_1" in text and "N s/m" in text
    robot = _check_identified(out, truth)
    # the physical fields follow from the lumped ones: the carriage mass, the rod's inertia, ...
    m_rod = ROBOT.mass.rod.mass
    np.testing.assert_allclose(robot.mass.carriage.mass, np.mean(truth.params.carriage_mass) - m_rod, rtol=0.05)
    np.testing.assert_allclose(robot.friction.viscous, (2.0, 3.0, 2.5), rtol=0.05)
    assert robot.mass.rod.mass == m_rod and robot.geometry == ROBOT.geometry
    summary = (report / "summary.md").read_text()
    assert "| Model fitness for f_1 |" in summary and "[N]" in summary
    assert (report / "torque_fit.png").stat().st_size > 1000


def test_delta_identify_from_a_rosbag2_bag_of_forces_or_motor_currents(files, truth, capsys, tmp_path):
    for name, effort in (("bag", "torque"), ("amps", "current")):
        out = tmp_path / f"{name}.yaml"
        code, text, err = run(capsys, "--robot", "colombo2020", "--data", files[name], "--effort", effort,
                              "--method", "bounded", "--out", out, "--no-progress")
        assert code == 0, err
        assert "read " in text and "JointState messages" in text
        _check_identified(out, truth)


def test_torque_columns_for_a_linear_robot_are_refused_with_the_reason(files, capsys):
    code, _, err = run(capsys, "--robot", "colombo2020", "--data", files["tau_csv"], "--no-progress")
    assert code == 2 and err.startswith("delta-identify: error: ")
    assert "tau.csv:1: missing columns 'f1', 'f2', 'f3'" in err and "the file holds torques tau1..3" in err
    code, _, err = run(capsys, "--robot", "nt_robot", "--data", files["csv"], "--no-progress")
    assert code == 2 and "fit.csv:1: missing columns 'tau1', 'tau2', 'tau3'" in err and "the file holds forces f1..3" in err
    code, _, err = run(capsys, "--robot", "colombo2020", "--data", files["csv"], "--params", "kim", "--no-progress")
    assert code == 2 and "kim parameter set" in err and "use --params explicit" in err


def test_the_pipeline_and_robot_update_in_python(files, truth):
    """identify_data on JointData directly, then the identified robot file of the kind."""
    res = identify_data(NOMINAL, files["data"], "ols", Options(stribeck=False))
    assert res.pset.names == alg.parameter_names(NOMINAL) and res.base.full_rank
    new = identified_robot(ROBOT, res, NOMINAL, "synthetic")
    assert type(new) is type(ROBOT) and new.metadata["identified"]["assumptions"].startswith(
        "physical fields from the lumped values with geometry, payload and the rod mass held fixed")
    model = model_from_robot_file(new)
    np.testing.assert_allclose(model.params.as_vector(), res.lumped(NOMINAL).as_vector())
    # a PSO search box exists for every parameter of the set (m_r may be negative)
    from delta_dynamics.identification.pipeline import default_box
    lo, hi = default_box(res.pset, NOMINAL)
    k = res.pset.names.index("m_r")
    assert lo[k] < 0 < hi[k] and (lo <= res.nominal).all() and (res.nominal <= hi).all()


def test_a_negative_identified_mass_is_clipped_in_the_file_and_kept_exactly_in_the_model():
    p = NOMINAL.params
    v = p.as_vector()
    v[0] = 0.01                                       # m_x below 3 rod masses: platform mass < 0
    bad = alg.parameters_from_vector(NOMINAL, v)
    new, notes = alg.physical_from_lumped(NOMINAL, bad)
    assert new.mass.platform_mass == 0.0
    assert any("platform mass m_x - payload - 3 rod mass = -0.05 < 0: written as 0" in n for n in notes), notes
    with pytest.raises(IdentificationError, match="no such preset"):
        model_from_robot_file("no_such_linear_robot")
    assert math.isfinite(new.mass.rod.inertia)


def test_implausible_identified_values_in_a_linear_robot_file_are_refused_by_name():
    from delta_core.robot_file import RobotFileError
    v = NOMINAL.params.as_vector()
    v[1] = -1e4                                                  # m_r far beyond any rod pair
    md = {"identified": {"lumped_parameters": {"names": list(alg.parameter_names(NOMINAL)),
                                               "values": v.tolist(), "static": [0.0, 0.0, 0.0]}}}
    with pytest.raises(RobotFileError, match=r"lumped_parameters: m_r must be >= -500 kg \(plausibility bound"):
        model_for(ROBOT.replace(metadata=md))
