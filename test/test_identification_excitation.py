"""Excitation trajectories: Fourier series, limits, optimisation, CSV."""
import numpy as np
import pytest

from delta_dynamics.rotary.kinematics import forward_kinematics
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.identification import IdentificationError
from delta_dynamics.identification.excitation import (FourierTrajectory, check_trajectory,
                                                       design_excitation, write_trajectory_csv)
from delta_dynamics.identification.metrics import condition_number
from delta_dynamics.rotary.identification import parameter_set

from test_identification import EXCITE, fourier


@pytest.fixture(scope="module")
def model():
    return RotaryModel.from_robot("nt_robot")


def test_fourier_series_starts_at_rest_and_is_periodic():
    rng = np.random.default_rng(0)
    tr = FourierTrajectory.from_vector(3.0, np.concatenate(([0.4] * 3, rng.normal(size=24))), 4)
    q0, qd0, qdd0 = tr.evaluate([0.0])
    q1, qd1, qdd1 = tr.evaluate([3.0])
    assert np.allclose(qd0, 0) and np.allclose(qdd0, 0)
    assert np.allclose(q0, q1) and np.allclose(qd1, 0) and np.allclose(qdd1, 0)
    t = np.linspace(0, 3, 30001)
    q, qd, qdd = tr.evaluate(t)
    assert np.allclose(np.gradient(q, t, axis=0)[1:-1], qd[1:-1], atol=1e-5)
    assert np.allclose(np.gradient(qd, t, axis=0)[1:-1], qdd[1:-1], atol=1e-4)


def test_the_test_excitation_is_inside_the_limits(model):
    assert check_trajectory(model, fourier(EXCITE), scale=0.8) == []


def test_check_flags_limit_violations(model):
    tr = fourier(EXCITE)
    fast = FourierTrajectory(tr.period / 3, tr.q0, tr.a * 3, tr.b * 3)
    v = check_trajectory(model, fast)
    assert any("velocity above its limit" in s for s in v) and any("acceleration" in s for s in v)
    far = FourierTrajectory(tr.period, tr.q0 + 0.9, tr.a, tr.b)
    assert any("position above its upper limit" in s or "workspace" in s for s in check_trajectory(model, far))


def test_design_improves_the_condition_number(model):
    res = design_excitation(model, period=4.0, harmonics=3, seed=3, starts=1, maxiter=15)
    assert res.violations == []
    assert check_trajectory(model, res.trajectory, scale=0.8) == []
    assert res.condition < 0.5 * res.initial_condition      # the optimiser did its job
    t = np.linspace(0, 4, 400)
    q, qd, qdd = res.trajectory.evaluate(t)
    pset = parameter_set()
    cond = condition_number(pset.regressor(model, q, qd, qdd).reshape(-1, 14))
    assert cond == pytest.approx(res.condition, rel=0.2)
    _, qd0, qdd0 = res.trajectory.evaluate([0.0])
    assert np.allclose(qd0, 0) and np.allclose(qdd0, 0)


def test_design_rejects_bad_settings(model):
    with pytest.raises(IdentificationError, match="period"):
        design_excitation(model, period=0)
    with pytest.raises(IdentificationError, match="scale"):
        design_excitation(model, scale=1.5)


def test_trajectory_csv(tmp_path, model):
    tr = fourier(EXCITE)
    p = write_trajectory_csv(tmp_path / "e.csv", model, tr, dt=0.002, cycles=1)
    arr = np.loadtxt(p, delimiter=",", skiprows=1)
    assert p.read_text().splitlines()[0] == "t,x,y,z,xd,yd,zd,xdd,ydd,zdd"
    assert arr.shape == (2501, 10)
    q, _, _ = tr.evaluate(arr[:, 0])
    assert np.allclose(forward_kinematics(model, q), arr[:, 1:4])
    from delta_dynamics.data_files.trajectory import read_trajectory     # what delta-dynamics reads
    back = read_trajectory(p)
    assert not back.derived and np.allclose(back.trajectory.X, arr[:, 1:4])
    assert np.allclose(back.trajectory.Xdd, arr[:, 7:10])


# ----------------------------------------------------------------------------- stored excitations

def test_an_excitation_file_gives_back_the_same_coefficients_to_the_bit(tmp_path, model):
    from delta_dynamics.identification.excitation import check_excitation, load_excitation, save_excitation
    rng = np.random.default_rng(1)
    tr = FourierTrajectory.from_vector(4.0, np.concatenate(([0.4] * 3, 0.05 * rng.normal(size=18))), 3)
    res = check_excitation(model, tr)
    path = save_excitation(tmp_path / "e.yaml", model, res, {"seed": 1}, header="a test")
    back = load_excitation(path)
    for name in ("q0", "a", "b"):
        assert getattr(back, name).tobytes() == getattr(tr, name).tobytes()
    assert back.period == tr.period
    checked = load_excitation(path, model)
    assert checked.trajectory.a.tobytes() == tr.a.tobytes() and checked.condition == pytest.approx(res.condition)
    assert path.read_text().startswith("# a test\nformat: delta_robot excitation 1\n")


def test_the_shipped_excitations_are_the_demos_and_inside_the_limits():
    """config/excitation/<robot>.yaml for both demo robots: loaded as stored (the condition
    number the file states), inside every limit at the demo's 60 % scale."""
    import yaml
    from delta_dynamics.identification.excitation import load_excitation, preset_excitation
    from delta_dynamics.kinds import model_for
    for robot in ("nt_robot", "colombo2020"):
        path = preset_excitation(robot)
        assert path is not None and path.name == f"{robot}.yaml"
        m = model_for(robot)
        res = load_excitation(path, m, scale=0.6, min_measure=0.05)
        assert res.violations == [], (robot, res.violations)
        doc = yaml.safe_load(path.read_text())
        assert res.condition == pytest.approx(doc["condition"], rel=1e-6)
        assert (res.trajectory.period, res.trajectory.harmonics) == (8.0, 4)
    assert preset_excitation("no_such_robot") is None


@pytest.mark.parametrize("change, message", [
    ({"period": -1}, "period must be a finite number > 0 s"),
    ({"q0": [0.1, 0.2]}, "q0 must hold 3 numbers"),
    ({"a": [[0.1, -0.1]] * 2}, "a and b must both be 3 rows"),
    ({"b": [[0.1, float("nan")]] * 3}, "b holds a value that is not finite"),
    ({"a": [[0.1, 0.1]] * 3}, "do not start at rest"),
    ({"a": "x"}, "must be numbers"),
])
def test_a_bad_excitation_file_is_refused_by_name(tmp_path, change, message):
    import yaml
    from delta_dynamics.identification.excitation import load_excitation
    doc = {"format": "delta_robot excitation 1", "robot": "nt_robot", "unit": "rad", "period": 4.0,
           "q0": [0.1, 0.2, 0.3], "a": [[0.1, -0.1]] * 3, "b": [[0.2, -0.1]] * 3, **change}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(IdentificationError, match=message) as e:
        load_excitation(path)
    assert str(path) in str(e.value)


def test_an_excitation_file_of_another_robot_or_kind_or_no_file_is_refused(tmp_path, model):
    import os
    from delta_dynamics.identification.excitation import load_excitation, preset_excitation
    from delta_dynamics.kinds import model_for
    with pytest.raises(IdentificationError, match="other kind of Delta"):
        load_excitation(preset_excitation("colombo2020"), model)
    other = tmp_path / "other.yaml"
    other.write_text(preset_excitation("nt_robot").read_text().replace("robot: nt_robot", "robot: d3s800"))
    with pytest.raises(IdentificationError, match="designed for robot 'd3s800', not 'nt_robot'"):
        load_excitation(other, model)
    (tmp_path / "robot.yaml").write_text("format: x\n")
    with pytest.raises(IdentificationError, match="not an excitation file"):
        load_excitation(tmp_path / "robot.yaml")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(IdentificationError, match="not a regular file"):
        load_excitation(tmp_path / "fifo")                  # refused without opening it
    with pytest.raises(IdentificationError, match="a directory"):
        load_excitation(tmp_path)
    with pytest.raises(IdentificationError, match="cannot read"):
        load_excitation(tmp_path / "missing.yaml")
    assert model_for("nt_robot").robot.name == "nt_robot"
