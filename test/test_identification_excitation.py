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
    from delta_dynamics.trajectory_io import read_trajectory     # what delta-dynamics reads
    back = read_trajectory(p)
    assert not back.derived and np.allclose(back.trajectory.X, arr[:, 1:4])
    assert np.allclose(back.trajectory.Xdd, arr[:, 7:10])
