"""The MuJoCo plant of a linear Delta (delta_dynamics.reference.mujoco_model.kinds.linear and the
shared plant) on real MuJoCo: the chain is assembled where the kinematics puts it, its bodies
are the robot file's, the same carriage forces give the same motion as the explicit model
(Colombo & Lentini with rigid rods), it carries the robot file's friction, a platform force and
a payload, and leaves the workspace as a plant must (the drives and the loop on it:
test_mujoco_plant.py)."""
import dataclasses

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MuJoCo plant needs the mujoco package (pip install mujoco)")

from delta_core.robot_file import load_robot  # noqa: E402
from delta_core.robot_file.common import Friction  # noqa: E402
from delta_dynamics.algorithms import (UnreachableError, forward_kinematics, inverse_dynamics,  # noqa: E402
                                       inverse_dynamics_joint, inverse_kinematics, joint_state, model_with_payload,
                                       sample_workspace, simulate_adaptive, simulate_fixed, workspace_centre)
from delta_dynamics.kinds import model_for  # noqa: E402
from delta_dynamics.motion import plan_pick  # noqa: E402
from delta_dynamics.plant import ExplicitPlant, make_plant  # noqa: E402
from delta_dynamics.reference.mujoco_model import mjcf  # noqa: E402
from delta_dynamics.reference.mujoco_model.mjcf import SolverSettings  # noqa: E402
from delta_dynamics.reference.mujoco_model.plant import ClosedChain, MujocoPlant  # noqa: E402

ROBOT = "colombo2020"
DT = 1e-3
#: stated agreement over a 0.63 s pick cycle driven open loop by the same carriage forces (m):
#: the MuJoCo plant against the explicit model integrated accurately (RK4, 0.25 ms), and against
#: the explicit plant as the drives run it (semi-implicit Euler at 1 kHz). Measured on
#: 2026-11-27: 0.13 and 0.49 mm.
TOL_REFERENCE = 4e-4
TOL_EXPLICIT_PLANT = 1e-3
#: the largest gap between a rod pair's end and its platform joint (m)
TOL_CLOSURE = 1e-5


@pytest.fixture(scope="module")
def model():
    return model_for(ROBOT)


def _with_friction(robot):
    return robot.replace(friction=Friction(viscous=(2.0,) * 3, coulomb=(3.0,) * 3, static=(4.0,) * 3,
                                           stribeck_velocity=0.005, smoothing_velocity=0.0005))


def test_the_closed_chain_is_assembled_where_the_kinematics_puts_it(model):
    robot = load_robot(ROBOT)
    chain = ClosedChain(robot)
    m, d = chain.model, mujoco.MjData(chain.model)
    assert (m.nq, m.nv, m.neq) == (12, 12, 3)
    g = robot.geometry
    for X in sample_workspace(model, 20, seed=3):
        q = inverse_kinematics(model, X)
        d.qpos[:] = chain.qpos(q, X)
        mujoco.mj_forward(m, d)
        assert chain.closure_error(d) < 1e-12
        np.testing.assert_allclose(d.qpos[chain.platform], X)
        for i, phi in enumerate(np.radians(g.rail_angles_deg)):
            u = np.array([np.cos(phi), np.sin(phi), 0.0])
            rods = d.xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"rod_{i + 1}_link")]
            np.testing.assert_allclose(rods, g.rail_radius * u + [0.0, 0.0, q[i]], atol=1e-12)   # A_i
            end = d.site_xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"rod_{i + 1}_end")]
            np.testing.assert_allclose(end, X + g.platform_radius * u, atol=1e-12)               # P_i


def test_the_bodies_come_from_the_robot_file():
    robot = load_robot(ROBOT)
    ms = robot.mass
    m = mjcf.build_model(robot)
    joints = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names]
    assert list(m.jnt_type[joints]) == [mujoco.mjtJoint.mjJNT_SLIDE] * 3
    np.testing.assert_allclose(m.dof_armature[[m.jnt_dofadr[j] for j in joints]], ms.motor.reflected_inertia)
    np.testing.assert_allclose(m.body_mass.sum(), 3 * (ms.carriage.mass + 2 * ms.rod.mass) + ms.platform_mass)
    rods = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "rod_1_link")
    np.testing.assert_allclose(m.body_inertia[rods][1:], 2 * ms.rod.inertia)
    np.testing.assert_allclose(m.body_ipos[rods], [robot.geometry.rod_length / 2, 0.0, 0.0])
    massless = robot.replace(mass=dataclasses.replace(ms, rod=dataclasses.replace(ms.rod, mass=0.0)))
    with pytest.raises(ValueError, match=r"colombo2020.*rods with mass \(mass_properties.rod.mass is 0.0\)"):
        mjcf.build_model(massless)


def _pick(model):
    c = workspace_centre(model)
    return plan_pick(model, c - [0.05, 0.0, 0.0], c + [0.05, 0.0, 0.0]).motion


def test_same_forces_same_motion_as_the_explicit_model(model):
    mo = _pick(model)
    tau = inverse_dynamics(model, mo.X, mo.Xd, mo.Xdd)
    Xr, Vr = simulate_fixed(model, mo.X[0], mo.Xd[0], mo.t, tau, method="rk4", substeps=4)
    q_ref = joint_state(model, Xr, Vr)[0]
    mj, ex = MujocoPlant(ROBOT), ExplicitPlant(model)
    runs = []
    for p in (mj, ex):
        p.place(q_ref[0])
        out = [p.joint_state()[0]]
        for k in range(len(mo.t) - 1):
            p.step(tau[k], DT)
            out.append(p.joint_state()[0])
        runs.append(np.array(out))
    q_mj, q_ex = runs
    assert np.abs(q_ref - q_ref[0]).max() > 0.05                 # it did move (m)
    assert np.abs(q_mj - q_ref).max() < TOL_REFERENCE
    assert np.abs(q_mj - q_ex).max() < TOL_EXPLICIT_PLANT
    assert mj.max_closure_error < TOL_CLOSURE
    np.testing.assert_allclose(mj.platform_position(), forward_kinematics(model, q_mj[-1]), atol=2 * TOL_CLOSURE)


def test_half_the_holding_force_matches_the_explicit_model(model):
    """Carriages held by half the force that holds them still: everything sinks; the accurate
    explicit solution (LSODA) and the MuJoCo plant agree within 20 um after 0.2 s (of a ~0.1 m
    fall) with MuJoCo's step at 25 us (12 um; at its default 0.5 ms the Euler step's own error is
    0.25 mm here, as the explicit plant's)."""
    q0 = np.array([0.30, 0.32, 0.28])
    X0 = forward_kinematics(model, q0)
    hold = 0.5 * inverse_dynamics(model, X0, [0, 0, 0], [0, 0, 0])
    t = np.linspace(0.0, 0.2, 201)
    X, V = simulate_adaptive(model, X0, [0, 0, 0], t, lambda s: hold)
    plant = MujocoPlant(ROBOT, SolverSettings(timestep=2.5e-5))
    plant.place(q0)
    for _ in range(200):
        plant.step(hold, DT)
    q_ref = joint_state(model, X[-1], V[-1])[0]
    assert np.abs(q_ref - q0).min() > 0.05
    np.testing.assert_allclose(plant.joint_state()[0], q_ref, atol=2e-5)


@pytest.mark.parametrize("offset", [2.0, -2.5])
def test_friction_is_the_robot_files_law(offset):
    """Holding force plus an offset below the static friction (4 N): the carriages creep at the
    speed where the smooth Coulomb/Stribeck law balances it, the same in both plants (~80 um in
    0.3 s); without friction the same offset moves them ~0.2 m."""
    robot = _with_friction(load_robot(ROBOT))
    m = model_for(robot)
    q0 = np.array([0.30, 0.32, 0.28])
    tau = inverse_dynamics_joint(m, q0, [0, 0, 0], [0, 0, 0], friction=False) + offset
    moved = []
    for p in (MujocoPlant(robot), ExplicitPlant(m), MujocoPlant(robot, friction=False)):
        p.place(q0)
        for _ in range(300):
            p.step(tau, DT)
        moved.append(np.array(p.joint_state()[0]) - q0)
    assert 1e-5 < np.abs(moved[0]).min() and np.abs(moved[0]).max() < 1e-3
    np.testing.assert_allclose(moved[0], moved[1], atol=1e-6)
    assert np.abs(moved[2]).min() > 0.05


def test_a_platform_force_and_a_payload_are_carried(model):
    """The forces that hold the robot still with a force at the platform, or with a payload the
    robot file does not have, hold the MuJoCo plant still (within 5 um in 0.1 s); without them
    it moves (by ~25 mm)."""
    X0 = workspace_centre(model)
    F = np.array([4.0, -3.0, 6.0])
    cases = [("force", lambda p: p.set_external_force(F), inverse_dynamics(model, X0, [0, 0, 0], [0, 0, 0], F_P=F)),
             ("payload", lambda p: p.set_payload(0.4),
              inverse_dynamics(model_with_payload(model, 0.4), X0, [0, 0, 0], [0, 0, 0]))]
    bare = inverse_dynamics(model, X0, [0, 0, 0], [0, 0, 0])
    for what, apply, hold in cases:
        for tau, still in ((hold, True), (bare, False)):
            p = MujocoPlant(ROBOT)
            apply(p)
            p.place_platform(X0)
            for _ in range(100):
                p.step(tau, DT)
            moved = np.abs(p.platform_position() - X0).max()
            assert (moved < 5e-6) if still else (moved > 1e-3), (what, still, moved)


def test_leaving_the_workspace_raises_and_keeps_the_last_state():
    plant = MujocoPlant(ROBOT)
    plant.place([0.3, 0.3, 0.3])
    with pytest.raises(UnreachableError, match=r"left its workspace: a carriage passed .* m needs"):
        for _ in range(1000):
            before = plant.joint_state(), plant.platform_position()
            plant.step([60.0, -60.0, 0.0], DT)                      # one up, one down: a rod pair turns over
    assert plant.joint_state() == before[0]
    np.testing.assert_array_equal(plant.platform_position(), before[1])


def test_it_is_the_plant_mujoco_of_a_linear_robot():
    """``make_plant("mujoco", ...)`` builds it (the simulated drives by name, their fault when it
    leaves the workspace, and the control loop on it: test_mujoco_plant.py, for both kinds)."""
    assert isinstance(make_plant("mujoco", load_robot(ROBOT)), MujocoPlant)
