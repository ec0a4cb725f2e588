"""The identification pipeline (preprocessing, regressor, base parameters, estimators) run on a
linear Delta through its parameter set: synthetic carriage data of a robot that differs from
its robot file give back the true lumped parameters."""
import numpy as np
import pytest

from delta_dynamics.data_files.joint_data import JointData
from delta_dynamics.identification.preprocess import Preprocessing, preprocess
from delta_dynamics.identification.pipeline import build_problem, identify
from delta_dynamics.linear.dynamics import inverse_dynamics_joint
from delta_dynamics.linear.identification import parameter_set
from delta_dynamics.linear.kinematics import inverse_kinematics, workspace_centre
from delta_dynamics.linear.model import PARAMETER_NAMES, LinearModel, LinearParameters


def true_robot(m, seed=3, stribeck=False):
    rng = np.random.default_rng(seed)
    f = lambda: 1.0 + 0.2 * rng.uniform(-1, 1)
    p = m.params
    coulomb = (20.0, 26.0, 23.0)
    return m.with_parameters(LinearParameters(
        m_x=p.m_x * f(), m_r=p.m_r * f(),
        carriage_inertia=tuple(v * f() for v in p.carriage_inertia),
        carriage_mass=tuple(v * f() for v in p.carriage_mass),
        viscous=(25.0, 35.0, 30.0), coulomb=coulomb,
        static=(30.0, 33.0, 31.0) if stribeck else coulomb,
        stribeck_velocity=p.stribeck_velocity, smoothing_velocity=p.smoothing_velocity))


def carriage_motion(m, seconds=30.0, dt=1e-3, seed=0):
    """Multi-sine carriage motion (0.2-2 Hz) around the home pose, reachable throughout."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, seconds, dt)
    q0 = inverse_kinematics(m, workspace_centre(m))
    amp = rng.uniform(0.02, 0.05, size=(3, 4))
    w = 2 * np.pi * rng.uniform(0.2, 2.0, size=(3, 4))
    ph = rng.uniform(0, 2 * np.pi, size=(3, 4))
    arg = w[None] * t[:, None, None] + ph[None]
    q = q0 + (amp * np.sin(arg)).sum(-1)
    qd = (amp * w * np.cos(arg)).sum(-1)
    qdd = -(amp * w * w * np.sin(arg)).sum(-1)
    return t, q, qd, qdd


@pytest.mark.parametrize("stribeck", [False, True])
def test_least_squares_recovers_the_lumped_parameters(stribeck):
    nominal = LinearModel.from_robot("linear_delta_xl")
    truth = true_robot(nominal, stribeck=stribeck)
    t, q, qd, qdd = carriage_motion(nominal)
    F = inverse_dynamics_joint(truth, q, qd, qdd)
    F = F + np.random.default_rng(1).normal(size=F.shape) * 0.002 * np.sqrt(np.mean(F * F, axis=0))
    data = JointData(t=t, q=q, tau=F, qd=qd, qdd=qdd, source="synthetic linear Delta")
    prepared = preprocess(data, Preprocessing(derivative="central", parallel_filter=False))
    pset = parameter_set(stribeck=stribeck)
    problem = build_problem(nominal, prepared, pset)
    assert problem.Y.shape[1:] == (3, len(pset))
    for method in ("ols", "bounded"):
        res = identify(problem, method)
        assert res.base.full_rank and not res.held
        want = truth.params.as_vector()
        if stribeck:
            want = np.concatenate((want, truth.params.static))
        np.testing.assert_allclose(res.values, want, rtol=0.03, atol=2e-3)
        assert (res.fit["rms_error"] < 0.01 * res.fit["rms_torque"]).all()
        identified = nominal.with_parameters(res.lumped(nominal))
        np.testing.assert_allclose(identified.params.as_vector(), res.values[:14])
    assert pset.names[:14] == PARAMETER_NAMES
    assert "m_r" in pset.names and not pset.nonnegative[pset.names.index("m_r")]


def test_the_default_preprocessing_works_from_positions_and_forces_only():
    """Positions and forces only (as a drive logs them): the pipeline differentiates and
    filters, and the estimate still lands within a few percent."""
    nominal = LinearModel.from_robot("linear_delta_xl")
    truth = true_robot(nominal, seed=5)
    t, q, qd, qdd = carriage_motion(nominal, seed=2)
    F = inverse_dynamics_joint(truth, q, qd, qdd)
    prepared = preprocess(JointData(t=t, q=q, tau=F, source="positions only"))
    res = identify(build_problem(nominal, prepared, parameter_set()), "ols")
    np.testing.assert_allclose(res.values, truth.params.as_vector(), rtol=0.05, atol=5e-3)
