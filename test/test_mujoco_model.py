"""The MuJoCo model of the closed chain (delta_dynamics.reference.mujoco_model.mjcf) and MuJoCo's
inverse dynamics of it (delta_dynamics.reference.mujoco_model.inverse), against the kinematics and the
explicit model, on real MuJoCo."""
import dataclasses

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MuJoCo model needs the mujoco package (pip install mujoco)")

from delta_core.robot_file import load_robot  # noqa: E402
from delta_dynamics.reference.bodies import RigidBody, body_set  # noqa: E402
from delta_dynamics.rotary.dynamics import inverse_dynamics as explicit_inverse_dynamics, joint_state  # noqa: E402
from delta_dynamics.rotary.kinematics import passive_origins, inverse_kinematics, sample_workspace  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.reference.mujoco_model import mjcf  # noqa: E402
from delta_dynamics.reference.mujoco_model.kinds import rotary as rotary_mechanism  # noqa: E402
from delta_dynamics.reference.mujoco_model.inverse import MujocoInverseDynamics, inverse_dynamics  # noqa: E402
from delta_dynamics.reference.mujoco_model.plant import ClosedChain  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return RotaryModel.from_robot("nt_robot")


def test_the_closed_chain_is_assembled_where_the_kinematics_puts_it(model):
    chain = ClosedChain("nt_robot")
    m, d = chain.model, mujoco.MjData(chain.model)
    assert (m.nq, m.nv, m.neq) == (12, 12, 3)
    for X in sample_workspace(model, 20, seed=3):
        q = inverse_kinematics(model, X)
        d.qpos[:] = chain.qpos(q, X)
        mujoco.mj_forward(m, d)
        assert chain.closure_error(d) < 1e-12
        np.testing.assert_allclose(d.qpos[chain.platform], X)
        for i in range(3):
            elbow = d.xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"forearm_{i + 1}_link")]
            np.testing.assert_allclose(elbow, passive_origins(model, q)[i], atol=1e-12)


def test_the_bodies_come_from_the_robot_file():
    robot = load_robot("nt_robot")
    bs = body_set(robot)
    m = mjcf.build_model(robot)
    arms = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names]
    np.testing.assert_allclose(m.dof_armature[[m.jnt_dofadr[j] for j in arms]], bs.rotor_inertia)
    np.testing.assert_allclose(m.body_mass.sum(), 3 * (bs.upper_arm.mass + bs.forearm_mass) + bs.platform.mass)
    assert m.opt.gravity[2] == -robot.gravity
    xml = mjcf.mjcf_xml(robot, joint_friction=True)
    assert f'frictionloss="{robot.friction.coulomb[0]!r}"' in xml


def test_inverse_dynamics_of_a_linear_robot_or_bad_settings_are_refused():
    with pytest.raises(ValueError, match="colombo2020.*MuJoCo's inverse dynamics is for rotary Delta robots"):
        MujocoInverseDynamics("colombo2020")
    with pytest.raises(ValueError, match="timestep"):
        mjcf.SolverSettings(timestep=0.0)
    with pytest.raises(ValueError, match="solref"):
        mjcf.SolverSettings(solref=(1e-3,))


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    return sample_workspace(model, n, seed=seed, min_measure=0.1), rng.normal(0, 0.5, (n, 3)), rng.normal(0, 5, (n, 3))


def test_mujoco_inverse_dynamics_equals_the_explicit_model(model):
    """Two formulations, one robot: the explicit model (three-point-mass forearms) and
    MuJoCo's closed chain (rigid forearms on universal joints, Lagrange multipliers). With the
    bodies derived from the lumped fields they differ only by the bars' own axial inertia
    (1e-3 of the others), measured at 2e-4 N m of 42 N m."""
    X, V, A = _states(model, 60, seed=5)
    tau_mj = MujocoInverseDynamics("nt_robot").torques(X, V, A)
    tau_ex = explicit_inverse_dynamics(model, X, V, A)
    assert np.abs(tau_ex).max() > 20.0
    np.testing.assert_allclose(tau_mj, tau_ex, atol=1e-3)
    traj = pick_place(cycles=1, dt=0.01)
    np.testing.assert_allclose(inverse_dynamics("nt_robot", traj),
                               explicit_inverse_dynamics(model, traj.X, traj.Xd, traj.Xdd), atol=1e-3)


def test_joint_and_platform_inputs_give_the_same_torques(model):
    X, V, A = _states(model, 5, seed=2)
    inv = MujocoInverseDynamics("nt_robot")
    q, qd, qdd = joint_state(model, X, V, A)
    np.testing.assert_allclose(inv.joint_torques(q, qd, qdd), inv.torques(X, V, A), atol=1e-9)
    assert inv.torques(X[0], V[0], A[0]).shape == (3,)


def test_massive_blocks_are_bodies_of_their_own(model, monkeypatch):
    """A mass in the blocks (explicit full-body data) becomes an elbow-block body between the
    two elbow hinges and a platform-block body welded to the platform: their weight and
    inertia reach the arms as a point mass at the elbow and one on the platform would."""
    robot = load_robot("nt_robot")
    base = body_set(robot)
    m_e, m_p = 0.05, 0.03
    blocks = dataclasses.replace(
        base, elbow_block=RigidBody(m_e, (1e-9, 2e-5, 2e-5), 0.04, 0.08),
        platform_block=RigidBody(m_p, (1e-9, 2e-5, 2e-5), 0.04, 0.08))
    monkeypatch.setattr(rotary_mechanism, "body_set", lambda r: blocks)
    inv = MujocoInverseDynamics(robot)
    assert mujoco.mj_name2id(inv.model, mujoco.mjtObj.mjOBJ_BODY, "elbow_block_1_link") >= 0
    l = robot.geometry.upper_arm_length
    p = model.params
    heavier = model.with_parameters(dataclasses.replace(
        p, m_x=p.m_x + 3 * m_p, arm_inertia=tuple(v + m_e * l * l for v in p.arm_inertia),
        arm_moment=tuple(v + m_e * l for v in p.arm_moment)))
    X, V, A = _states(model, 20, seed=8)
    tau_ex = explicit_inverse_dynamics(heavier, X, V, A)
    np.testing.assert_allclose(inv.torques(X, V, A), tau_ex, atol=2e-3)
    assert np.abs(inv.torques(X, V, A) - explicit_inverse_dynamics(model, X, V, A)).max() > 0.05
