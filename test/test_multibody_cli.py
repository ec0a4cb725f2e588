"""``delta-dynamics simulate`` and ``reactions`` (the multibody model) and ``demo --model
multibody``, run for real through ``main([...])``."""
import numpy as np

from delta_dynamics.cli import main
from delta_dynamics.cli.simulate import REACTION_COLUMNS, SIM_COLUMNS
from delta_dynamics.data_files.csv_io import read_csv
from delta_dynamics.data_files.trajectory import read_trajectory
from test_cli import assert_fails, run


def test_simulate_and_reactions_round_trip(tmp_path, capsys):
    """Explicit-model torques (with friction) of a pick and place, simulated on the multibody
    model, follow the trajectory within 0.3 mm (~0.11 mm: the Coulomb friction switches
    faster than the 1 ms torque samples resolve); the constraints stay at round-off; the
    reactions along the trajectory sum to m_p (X_dd - g), and those of the simulation agree
    with them within 2 % of their range."""
    traj, tq, sim, r1, r2 = (tmp_path / n for n in ("traj.csv", "tq.csv", "sim.csv", "r1.csv", "r2.csv"))
    assert run(capsys, "trajectory", "pick-place", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--trajectory", traj, "--out", tq)[0] == 0
    code, out, err = run(capsys, "simulate", "--model", "multibody", "--torques", tq, "--out", sim,
                         "--reactions", r1)
    assert code == 0, err
    assert "multibody, rk4" in out
    s = read_csv(sim, SIM_COLUMNS)
    assert s.header == SIM_COLUMNS
    tr = read_trajectory(traj).trajectory
    assert np.abs(s.stack(("x", "y", "z")) - tr.X).max() < 3e-4
    assert s.columns["violation"].max() < 1e-10
    code, out, err = run(capsys, "reactions", "--trajectory", traj, "--out", r2)
    assert code == 0, err
    a, b = read_csv(r1, REACTION_COLUMNS), read_csv(r2, REACTION_COLUMNS)
    assert a.header == REACTION_COLUMNS == b.header
    f = sum(b.stack((f"f{i}x", f"f{i}y", f"f{i}z")) for i in (1, 2, 3))
    mp = 2.033
    np.testing.assert_allclose(f, mp * (tr.Xdd - [0.0, 0.0, -9.80665]), atol=1e-8)
    span = max(np.ptp(b.columns[c]) for c in REACTION_COLUMNS[1:])
    assert max(np.abs(a.columns[c] - b.columns[c]).max() for c in REACTION_COLUMNS[1:]) < 0.02 * span
    # the explicit model through the same command: same columns, no constraints
    code, out, err = run(capsys, "simulate", "--model", "explicit", "--method", "rk4", "--torques", tq,
                         "--out", tmp_path / "x.csv")
    assert code == 0, err
    x = read_csv(tmp_path / "x.csv", SIM_COLUMNS)
    assert np.all(x.columns["violation"] == 0.0)
    assert np.abs(x.stack(("q1", "q2", "q3")) - s.stack(("q1", "q2", "q3"))).max() < 5e-3


def test_bad_input_is_refused_by_name(tmp_path, capsys):
    traj, tq = tmp_path / "traj.csv", tmp_path / "tq.csv"
    assert run(capsys, "trajectory", "pick-place", "--out", traj)[0] == 0
    assert run(capsys, "inverse", "--trajectory", traj, "--out", tq)[0] == 0
    out = tmp_path / "sim.csv"
    out.write_text("keep\n")
    code, _, err = run(capsys, "simulate", "--model", "explicit", "--torques", tq, "--out", out,
                       "--reactions", tmp_path / "r.csv")
    assert_fails(code, err, "--reactions needs --model multibody")
    assert out.read_text() == "keep\n"
    code, _, err = run(capsys, "simulate", "--torques", tmp_path / "missing.csv", "--out", out)
    assert_fails(code, err, "missing.csv")
    # torques that throw the arms up out of the workspace
    rows = ["t,q1,q2,q3,qd1,qd2,qd3,tau1,tau2,tau3"] + [f"{k * 0.001},0.3,0.3,0.3,0,0,0,-120,-120,-120"
                                                        for k in range(400)]
    (tmp_path / "up.csv").write_text("\n".join(rows) + "\n")
    code, _, err = run(capsys, "simulate", "--torques", tmp_path / "up.csv", "--out", out,
                       "--method", "semi-implicit")
    assert_fails(code, err, "up.csv", "left its workspace near t =")
    assert out.read_text() == "keep\n"
    bad = tmp_path / "far.csv"
    bad.write_text("t,x,y,z\n0,0,0,-0.8\n0.001,0,0,-0.8\n0.002,0,0,-3\n0.003,0,0,-0.8\n")
    code, _, err = run(capsys, "reactions", "--trajectory", bad, "--out", tmp_path / "r.csv", "--smoothing", 0)
    assert_fails(code, err, "far.csv:4", "unreachable")


def test_multibody_demo_writes_its_plots(tmp_path):
    from delta_dynamics.reference.multibody.demo import run as demo
    summary = demo("d3s800", out=str(tmp_path), quick=True)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["multibody_pick_place.png", "multibody_reactions.png", "multibody_violation_position.png"]
    assert summary["line_max_violation"]["projection (RK4)"] < 1e-12
    assert summary["line_max_violation"]["none (semi-implicit)"] > 1e-9
    assert summary["pick_place_max_violation"] < 1e-10
    assert summary["reaction_sum_error_N"] < 1e-8
    assert abs(summary["base_reaction_z_N"] - summary["total_weight_N"]) < 0.05 * summary["total_weight_N"]
