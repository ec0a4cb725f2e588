"""The MuJoCo plant (delta_dynamics.reference.mujoco_model.plant) on real MuJoCo: it agrees with the
explicit model for the same torques, keeps the chain closed, carries the robot file's
friction, leaves the workspace as the explicit plant does, and runs the simulated drives
and the control loop (the last two for both kinds; the linear plant's own checks:
test_mujoco_linear.py)."""
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MuJoCo plant needs the mujoco package (pip install mujoco)")

from delta_dynamics.rotary.dynamics import inverse_dynamics, inverse_dynamics_joint, joint_state  # noqa: E402
from delta_dynamics.rotary.kinematics import UnreachableError, forward_kinematics  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402
from delta_dynamics.reference.mujoco_model.mjcf import SolverSettings  # noqa: E402
from delta_dynamics.reference.mujoco_model.plant import MujocoPlant  # noqa: E402
from delta_dynamics.kinds import model_for  # noqa: E402
from delta_dynamics.plant import ExplicitPlant  # noqa: E402
from delta_dynamics.algorithms import simulate_adaptive, simulate_fixed  # noqa: E402
from delta_dynamics.motion.trajectories import pick_place  # noqa: E402
from delta_hardware.control_loop import ControlLoop, LoopConfig  # noqa: E402
from delta_hardware.drives import DriveState  # noqa: E402
from delta_hardware.drives.simulated import SimulatedDriveSet  # noqa: E402
from delta_hardware.trajectory_plan import build_plan  # noqa: E402

DT = 1e-3
#: stated agreement over a 1.3 s pick-and-place driven open loop by the same torques (rad):
#: the MuJoCo plant against the explicit model integrated accurately (RK4, 0.25 ms), and
#: against the explicit plant as the drives run it (semi-implicit Euler at 1 kHz, whose own
#: step error is ~2 mrad here). Measured: 0.78 and 1.7 mrad.
TOL_REFERENCE = 1.5e-3
TOL_EXPLICIT_PLANT = 3e-3
#: the largest gap between a forearm's end and its platform joint (m); measured ~2 um
TOL_CLOSURE = 1e-5


@pytest.fixture(scope="module")
def model():
    return RotaryModel.from_robot("nt_robot")


def _gap(plant):
    mujoco.mj_forward(plant.model, plant.data)
    return plant.closure_error()


def test_same_torques_same_motion_as_the_explicit_model(model):
    traj = pick_place(cycles=1, dt=DT)
    tau = inverse_dynamics(model, traj.X, traj.Xd, traj.Xdd)
    Xr, Vr = simulate_fixed(model, traj.X[0], traj.Xd[0], traj.t, tau, method="rk4", substeps=4)
    q_ref = joint_state(model, Xr, Vr)[0]
    mj, ex = MujocoPlant("nt_robot"), ExplicitPlant(model)
    q_mj, q_ex, gaps = [], [], []
    for p, out in ((mj, q_mj), (ex, q_ex)):
        p.place(q_ref[0])
        out.append(p.joint_state()[0])
        for k in range(len(traj) - 1):
            p.step(tau[k], DT)
            out.append(p.joint_state()[0])
            if p is mj and k % 100 == 0:
                gaps.append(_gap(mj))
    q_mj, q_ex = np.array(q_mj), np.array(q_ex)
    assert np.abs(q_ref - q_ref[0]).max() > 0.3                  # it did move
    assert np.abs(q_mj - q_ref).max() < TOL_REFERENCE
    assert np.abs(q_mj - q_ex).max() < TOL_EXPLICIT_PLANT
    assert max(gaps) < TOL_CLOSURE and mj.max_closure_error < TOL_CLOSURE
    np.testing.assert_allclose(mj.platform_position(), forward_kinematics(model, q_mj[-1]), atol=2 * TOL_CLOSURE)


def test_a_fall_under_gravity_matches_the_explicit_model(model):
    """Unpowered arms falling from rest, friction included: the accurate explicit solution
    (LSODA) and the MuJoCo plant at the drive rate agree within 0.5 mrad after 0.3 s."""
    q0 = np.array([0.3, 0.25, 0.35])
    t = np.linspace(0.0, 0.3, 301)
    X, V = simulate_adaptive(model, forward_kinematics(model, q0), [0, 0, 0], t, lambda s: np.zeros(3))
    plant = MujocoPlant("nt_robot")
    plant.place(q0)
    for _ in range(300):
        plant.step([0.0, 0.0, 0.0], DT)
    q_ref = joint_state(model, X[-1], V[-1])[0]
    assert np.abs(q_ref - q0).min() > 0.3
    np.testing.assert_allclose(plant.joint_state()[0], q_ref, atol=5e-4)


@pytest.mark.parametrize("offset", [1.0, -1.5])
def test_friction_is_the_robot_files_law(model, offset):
    """Holding torque plus an offset below the static friction: the arms creep at the speed
    where the smooth Coulomb/Stribeck law balances the offset, the same in both plants
    (0.25 mrad in 0.3 s for 1 N m); without friction the same offset moves them ~0.1 rad."""
    q0 = np.array([0.35, 0.25, 0.3])
    tau = inverse_dynamics_joint(model, q0, [0, 0, 0], [0, 0, 0], friction=False) + offset
    moved = []
    for p in (MujocoPlant("nt_robot"), ExplicitPlant(model), MujocoPlant("nt_robot", friction=False)):
        p.place(q0)
        for _ in range(300):
            p.step(tau, DT)
        moved.append(np.array(p.joint_state()[0]) - q0)
    assert 1e-5 < np.abs(moved[0]).min() and np.abs(moved[0]).max() < 1e-3
    np.testing.assert_allclose(moved[0], moved[1], atol=1e-6)
    assert np.abs(moved[2]).min() > 0.05


def test_place_brake_and_the_state():
    plant = MujocoPlant("nt_robot", SolverSettings(timestep=2.5e-4))
    plant.place([0.2, 0.4, 0.3])
    q, qd = plant.joint_state()
    np.testing.assert_allclose(q, [0.2, 0.4, 0.3])
    assert qd == (0.0, 0.0, 0.0) and _gap(plant) < 1e-12
    for _ in range(50):
        plant.step([0.0, 0.0, 0.0], 0.002)                     # 8 MuJoCo steps each
    assert min(plant.joint_state()[1]) > 0.1
    plant.brake()
    assert plant.joint_state()[1] == (0.0, 0.0, 0.0)
    assert plant.data.time == pytest.approx(0.1)
    braked = plant.joint_state()
    with pytest.raises(UnreachableError, match="inward"):
        plant.place([-1.5, -1.5, -1.5])                          # elbows folded in
    assert plant.joint_state() == braked
    with pytest.raises(ValueError, match="finite"):
        plant.step([0.0, float("nan"), 0.0], DT)


def test_leaving_the_workspace_raises_and_keeps_the_last_state():
    plant = MujocoPlant("nt_robot")
    plant.place([0.2, 0.2, 0.2])
    with pytest.raises(UnreachableError, match="left its workspace"):
        for _ in range(1000):
            before = plant.joint_state(), plant.platform_position()
            plant.step([-120.0, -120.0, -120.0], DT)             # arms up, through the elbow's edge
    assert plant.joint_state() == before[0]
    np.testing.assert_array_equal(plant.platform_position(), before[1])


#: per robot kind: efforts that take the plant out of its workspace (arms up through the elbow's
#: edge; one carriage up, one down: a rod pair turns over), and a two-point motion for the loop
#: with the stated tracking error (max |q - q_ref|, rad or m) of the model feedforward
LEAVE = {"nt_robot": [-120.0, -120.0, -120.0], "colombo2020": [60.0, -60.0, 0.0]}
MOTION = {"nt_robot": ([0.5, 1.0], [[0.4, 0.2, 0.1], [0.1, 0.3, 0.2]], 1.3, 2e-3, 2e-4),
          "colombo2020": ([0.4, 0.8], [[0.33, 0.27, 0.30], [0.27, 0.31, 0.33]], 1.2, 5e-4, 1e-4)}


@pytest.mark.parametrize("robot", ["nt_robot", "colombo2020"])
def test_simulated_drives_fault_when_the_mujoco_plant_leaves_the_workspace(robot):
    drives = SimulatedDriveSet(robot, plant="mujoco")             # the plant by name
    assert isinstance(drives.plant, MujocoPlant)
    drives.enable()
    drives.write(torque=LEAVE[robot])
    for _ in range(400):
        drives.cycle(DT)
        if drives.state is DriveState.FAULT:
            break
    fb = drives.read()
    assert fb.state is DriveState.FAULT and "left its workspace" in fb.faults[0]


def _run(loop, t0, seconds, dt):
    t, outs = t0, []
    for _ in range(int(round(seconds / dt))):
        outs.append(loop.cycle(t))
        t += dt
    return t, outs


@pytest.mark.parametrize("robot", ["nt_robot", "colombo2020"])
def test_the_control_loop_tracks_a_trajectory_on_the_mujoco_plant(robot):
    dt = 0.002
    model = model_for(robot)
    times, goals, seconds, tol, end_tol = MOTION[robot]
    errs = {}
    for ff in ("none", "model"):
        drives = SimulatedDriveSet(robot, plant=MujocoPlant(robot), torque_noise=0.02, seed=1)
        loop = ControlLoop(model, drives, LoopConfig(rate=1 / dt, feedforward=ff))
        loop.activate()
        t, _ = _run(loop, 0.0, 0.1, dt)
        loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, times, goals))
        t, outs = _run(loop, t, seconds, dt)
        errs[ff] = max(np.abs(o.setpoint.q - np.array(o.position)).max() for o in outs)
        if ff == "model":
            np.testing.assert_allclose(outs[-1].position, goals[-1], atol=end_tol)
            assert any("trajectory finished" in e for o in outs for e in o.events)
            assert drives.plant.max_closure_error < TOL_CLOSURE
    assert errs["model"] < tol
    assert errs["model"] < errs["none"] / 5
