"""``delta-identify``: robot file and report out, comparison table, excitation CSV, bad inputs."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.rotary.dynamics import cartesian_state, inverse_dynamics
from delta_dynamics.rotary.kinematics import forward_kinematics, inverse_kinematics
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.data_files import bag as B
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import synthetic
from delta_dynamics.identification.cli import main
from delta_dynamics.identification.robot_update import model_from_robot_file

from test_identification import EXCITE, VALIDATE, fourier

ROBOT = load_robot("nt_robot")
NAMES = ROBOT.joint_names


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ident")
    model = RotaryModel(ROBOT)
    truth = synthetic.perturbed_model(model, seed=1)
    fit, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=10.0, seed=21)
    val, _ = synthetic.open_loop_data(truth, fourier(VALIDATE), duration=4.0, seed=22)
    out = {"truth": truth, "dir": d}
    out["fit"] = J.write_joint_data(d / "fit.csv", fit.t, fit.q, fit.tau)
    out["val"] = J.write_joint_data(d / "val.csv", val.t, val.q, val.tau)
    out["bag"] = B.write_bag(d / "fit_bag", fit.t[:6000], fit.q[:6000], fit.tau[:6000], NAMES,
                             topic="/arm/joint_states", storage="mcap", extra_joints=1)
    out["noeffort"] = B.write_bag(d / "noeffort", fit.t[:500], fit.q[:500], None, NAMES, storage="mcap")
    out["othernames"] = B.write_bag(d / "othernames", fit.t[:500], fit.q[:500], fit.tau[:500],
                                    ["j1", "j2", "arm_3_joint"], storage="mcap")
    text = J.write_joint_data(d / "nan.csv", fit.t, fit.q, fit.tau).read_text().split("\n")
    text[778] = text[778].replace(repr(float(fit.tau[777, 0])), "nan")          # line 779
    out["nan"] = d / "nan.csv"
    out["nan"].write_text("\n".join(text))
    out["few"] = J.write_joint_data(d / "few.csv", fit.t[:60], fit.q[:60], fit.tau[:60])
    # joint 2 never moves: its inertia and friction cannot be identified
    t = np.arange(5001) * 1e-3
    q, qd, qdd = fourier(EXCITE).evaluate(t)
    q[:, 1], qd[:, 1], qdd[:, 1] = 0.45, 0.0, 0.0
    tq = inverse_dynamics(truth, *cartesian_state(truth, q, qd, qdd))
    still = synthetic.measure(t, q, tq, seed=23)
    out["still"] = J.write_joint_data(d / "still.csv", still.t, still.q, still.tau)
    return out


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_csv_to_robot_file_and_report(files, capsys, tmp_path):
    out = tmp_path / "identified.yaml"
    rep = tmp_path / "report"
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["fit"], "--validate", files["val"],
                       "--out", out, "--report", rep)
    assert code == 0, se
    assert "rank 14 of 14" in so and "fitness on the validation data" in so
    robot = load_robot(out)
    md = robot.metadata["identified"]
    assert md["method"] == "bounded" and md["data"] == str(files["fit"]) and md["validation"] == str(files["val"])
    assert min(md["fitness"]["validation"]) >= 0.995
    truth = files["truth"].params.as_vector()
    est = model_from_robot_file(out).params.as_vector()
    assert np.max(np.abs(est - truth) / truth) < 0.02
    for name in ("torque_fit.png", "torque_validation.png", "residuals.png", "parameters.png", "summary.md"):
        assert (rep / name).stat().st_size > 0, name
    summary = (rep / "summary.md").read_text()
    assert "Model fitness for tau_1" in summary and "| m_x | kg |" in summary and "Base parameters" in summary


def test_method_all_prints_the_comparison(files, capsys, tmp_path):
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["fit"], "--validate", files["val"],
                       "--method", "all", "--pso-particles", "60", "--pso-neighbours", "10",
                       "--pso-iterations", "200", "--pso-samples", "2000", "--out", tmp_path / "best.yaml",
                       "--report", tmp_path / "rep")
    assert code == 0, se
    table = so.split("model fitness (Kim et al. eq. 41) on the validation data:")[1]
    for m in ("ols", "wls", "bounded", "tsvd", "dls", "rls", "pso"):
        assert f"\n{m} " in table
    assert "time [s]" in table and "best: " in so
    assert (tmp_path / "rep" / "pso_convergence.png").exists()
    best = so.split("best: ")[1].split()[0]
    assert load_robot(tmp_path / "best.yaml").metadata["identified"]["method"] == best


def test_bag_input_and_kim_parameters(files, capsys, tmp_path):
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["bag"], "--topic", "/arm/joint_states",
                       "--params", "kim", "--method", "ols", "--out", tmp_path / "kim.yaml", "--quiet")
    assert code == 0, se
    md = load_robot(tmp_path / "kim.yaml").metadata["identified"]
    assert md["parameter_set"] == "kim" and md["estimate"]["names"][:2] == ["m_p", "T_g"]
    assert "m_k" in md["assumptions"]


def test_progress_bar_on_stderr(files, capsys):
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["fit"], "--method", "pso",
                       "--pso-particles", "20", "--pso-neighbours", "4", "--pso-iterations", "30",
                       "--pso-samples", "500", "--progress")
    assert code == 0
    assert "30/30" in se and "100%" in se


@pytest.mark.parametrize("key, extra, message", [
    ("missing", [], "missing.csv: data file not found"),
    ("bag", ["--topic", "/nope"], "no topic /nope in the bag"),
    ("noeffort", [], "JointState without effort"),
    ("othernames", [], "no joint 'arm_1_joint', 'arm_2_joint'"),
    ("nan", [], "nan.csv:779: column 'tau1': not a finite number: 'nan'"),
    ("few", [], "too few samples: 60"),
    ("still", [], "not identifiable: arm_inertia_2"),
])
def test_bad_inputs(files, capsys, key, extra, message):
    data = files["dir"] / "missing.csv" if key == "missing" else files[key]
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", data, *extra)
    assert code == 2
    assert se.startswith("delta-identify: error: ") and message in se, se
    assert "Traceback" not in se


def test_rank_deficient_names_all_and_can_hold(files, capsys):
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["still"])
    assert code == 2 and all(n in se for n in ("arm_inertia_2", "viscous_2", "coulomb_2"))
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["still"], "--hold-unidentifiable")
    assert code == 0 and "held at the robot file's values" in so


def test_bad_robot_and_option(files, capsys):
    code, so, se = run(capsys, "--robot", "no_such_robot", "--data", files["fit"])
    assert code == 2 and "no such preset" in se
    code, so, se = run(capsys, "--robot", "nt_robot", "--data", files["fit"], "--cutoff", "900")
    assert code == 2 and "Nyquist" in se
    with pytest.raises(SystemExit) as e:
        main(["--robot", "nt_robot"])           # argparse: --data missing
    assert e.value.code == 2


def test_excite_writes_an_executable_trajectory(capsys, tmp_path):
    out = tmp_path / "excite.csv"
    code, so, se = run(capsys, "excite", "--robot", "nt_robot", "--out", out, "--period", "4",
                       "--harmonics", "3", "--starts", "1", "--maxiter", "8", "--cycles", "2")
    assert code == 0, se
    assert "condition number" in so
    lines = out.read_text().splitlines()
    assert lines[0] == "t,x,y,z,xd,yd,zd,xdd,ydd,zdd" and len(lines) == 1 + 8001
    arr = np.loadtxt(out, delimiter=",", skiprows=1)
    model = RotaryModel(ROBOT)
    q = inverse_kinematics(model, arr[:, 1:4], check_limits=True)
    assert np.allclose(forward_kinematics(model, q), arr[:, 1:4], atol=1e-9)
    assert np.allclose(arr[0, 4:], 0, atol=1e-9) and np.allclose(arr[-1, 4:], 0, atol=1e-9)   # rest at both ends
    v = np.gradient(arr[:, 1:4], arr[:, 0], axis=0)
    assert np.allclose(v[1:-1], arr[1:-1, 4:7], atol=1e-3)


def test_console_script_exit_status(tmp_path):
    """The installed entry point (or python -m): exit 2 and one error line, no traceback."""
    exe = Path(sys.executable).parent / "delta-identify"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "delta_dynamics.identification.cli"]
    r = subprocess.run(cmd + ["--robot", "nt_robot", "--data", str(tmp_path / "x.mcap")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip() == f"delta-identify: error: {tmp_path / 'x.mcap'}: data file not found"


def test_excite_from_a_stored_excitation_writes_the_same_trajectory_and_saves_it(capsys, tmp_path):
    """--from takes the coefficients of an excitation file (no optimiser: the same CSV on every
    machine); --save writes them; a file of the other kind of Delta is one error line."""
    from delta_core.share import share_file
    from delta_dynamics.identification.excitation import load_excitation
    stored = share_file("config", "excitation", "nt_robot.yaml")
    out, saved = tmp_path / "excite.csv", tmp_path / "again.yaml"
    code, so, se = run(capsys, "excite", "--robot", "nt_robot", "--out", out, "--from", stored, "--save", saved,
                       "--scale", "0.6", "--cycles", "1", "--dt", "0.01")
    assert code == 0, se
    assert f"from {stored}" in so and "2 x" not in so and "1 x 8 s, 4 harmonics" in so
    assert len(out.read_text().splitlines()) == 1 + 801
    a, b = load_excitation(stored), load_excitation(saved)
    assert a.a.tobytes() == b.a.tobytes() and a.b.tobytes() == b.b.tobytes() and a.q0.tobytes() == b.q0.tobytes()
    code, so, se = run(capsys, "excite", "--robot", "nt_robot", "--out", out,
                       "--from", share_file("config", "excitation", "colombo2020.yaml"))
    assert code != 0 and "other kind of Delta" in se
