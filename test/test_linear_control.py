"""A linear Delta through the control stack without ROS: the control loop tracking
carriage trajectories on the simulated drives with model feedforward, plans validated against
the carriage limits (m, m/s, m/s^2, N), the safety rules in carriage units, the plants."""
import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import forward_kinematics, inverse_dynamics, inverse_kinematics, workspace_centre
from delta_dynamics.kinds import model_for
from delta_dynamics.plant import ExplicitPlant, make_plant
from delta_hardware.control_loop import ControlLoop, LoopConfig, gain_limits
from delta_hardware.drives import DriveState
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.trajectory_plan import (Setpoint, TrajectoryRejected, build_plan, cartesian_to_joint,
                                            match_joint_names)
from test_control_loop import DT, run

ROBOT = "colombo2020"


@pytest.fixture
def rig():
    model = model_for(ROBOT)
    drives = SimulatedDriveSet(model.robot, torque_noise=0.02, velocity_noise=1e-4, seed=1)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    return model, drives, loop


def test_the_drives_start_at_the_home_pose_and_hold_the_carriages_with_brakes():
    model = model_for(ROBOT)
    drives = SimulatedDriveSet(model.robot)
    q0 = inverse_kinematics(model, workspace_centre(model))
    np.testing.assert_allclose(drives.read().position, q0, atol=1e-6)           # m
    drives.cycle(0.5)                                                            # disabled: braked
    np.testing.assert_allclose(drives.read().position, q0, atol=1e-6)
    drives.enable()
    drives.write(torque=[0.0, 0.0, 0.0])
    drives.cycle(0.05)                                                           # unpowered: it falls
    q = np.array(drives.read().position)
    assert (q < q0 - 1e-3).all() and (np.array(drives.read().velocity) < 0).all()
    # the force that holds it is the model's (eq. 16: 4.478 N per carriage at the centre)
    drives2 = SimulatedDriveSet(model.robot)
    hold = inverse_dynamics(model, workspace_centre(model), [0, 0, 0], [0, 0, 0])
    np.testing.assert_allclose(hold, 4.4784, atol=1e-4)
    drives2.enable()
    drives2.write(torque=hold)
    drives2.cycle(0.5)
    np.testing.assert_allclose(drives2.read().position, q0, atol=2e-6)


def test_follows_a_carriage_trajectory_with_model_feedforward(rig):
    model, drives, loop = rig
    t, _ = run(loop, 0.0, 0.1)
    goal = [[0.32, 0.27, 0.30], [0.26, 0.33, 0.28]]
    plan = build_plan(model, t, loop.current_setpoint(), t, [0.4, 0.8], goal)
    loop.submit_plan(plan)
    t, outs = run(loop, t, 1.1)
    err = max(np.abs(o.setpoint.q - np.array(o.position)).max() for o in outs)
    assert err < 3e-4                                                            # m
    np.testing.assert_allclose(outs[-1].position, goal[-1], atol=5e-5)
    assert any("trajectory finished" in e for o in outs for e in o.events)
    assert not any("quick stop" in e for o in outs for e in o.events)
    # the efforts are forces of the model's size: about the weight share of each carriage
    f = np.array([o.torque for o in outs])
    assert 2.0 < np.median(f) < 8.0 and np.abs(f).max() < model.robot.limits.force[0]


def test_pd_only_tracks_worse_than_with_feedforward():
    model = model_for(ROBOT)
    errs = {}
    for ff in ("none", "model"):
        drives = SimulatedDriveSet(model.robot, seed=1)
        loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward=ff))
        loop.activate()
        t, _ = run(loop, 0.0, 0.2)
        loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.5], [[0.34, 0.26, 0.30]]))
        t, outs = run(loop, t, 0.6)
        errs[ff] = np.sqrt(np.mean([np.sum((o.setpoint.q - np.array(o.position)) ** 2) for o in outs]))
    assert errs["model"] < errs["none"] / 10


def test_platform_points_in_metres_go_through_the_linear_inverse_kinematics(rig):
    model, drives, loop = rig
    X_goal = np.array([0.03, -0.02, 0.12])
    kind, order = match_joint_names(model, ["platform_y", "platform_z", "platform_x"])
    assert kind == "platform" and order == [2, 0, 1]
    kind, _ = match_joint_names(model, ["carriage_3_joint", "carriage_1_joint", "carriage_2_joint"])
    assert kind == "joint"
    q, qd, qdd = cartesian_to_joint(model, [X_goal], [[0, 0, 0]], [[0, 0, 0]])
    np.testing.assert_allclose(q[0], inverse_kinematics(model, X_goal))
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.8], q, qd, qdd))
    t, _ = run(loop, t, 1.1)
    np.testing.assert_allclose(forward_kinematics(model, drives.read().position), X_goal, atol=5e-5)
    np.testing.assert_allclose(drives.platform_position, X_goal, atol=5e-5)


def test_plans_are_validated_against_the_carriage_limits(rig):
    model, _, loop = rig
    cur = Setpoint.hold([0.3, 0.3, 0.3])
    cases = [
        (([1.0], [[0.5, 0.5, 0.5]]), r"carriage_1_joint position 0\.49\d* m leaves its limits \[0\.1, 0\.49\]"),
        (([0.05], [[0.33, 0.3, 0.3]]), "too fast: carriage_1_joint velocity"),
        (([0.0], [[0.31, 0.3, 0.3]]), r"point 0 at time 0 is at \[0\.31, 0\.3, 0\.3\] m but the robot's setpoint "
                                      r"is \[0\.3, 0\.3, 0\.3\] m"),
        (([2.0], [[0.45, 0.3, 0.12]]), r"unreachable at t = .* m are unreachable: .*a rod would point up"),
    ]
    for (times, q), reason in cases:
        with pytest.raises(TrajectoryRejected, match=reason):
            build_plan(model, 1.0, cur, 1.0, times, q)
    with pytest.raises(TrajectoryRejected, match=r"point 0: carriage 1 position 0\.787\d* m is outside its "
                                                 r"limits \[0\.1, 0\.49\] m for platform position \(0, 0, 0\.6\) m"):
        cartesian_to_joint(model, [[0.0, 0.0, 0.6]])          # carriages above their limits
    with pytest.raises(TrajectoryRejected, match=r"point 1: .* unreachable.*rod pair 1 .*cannot reach it"):
        cartesian_to_joint(model, [[0.0, 0.0, 0.1], [-0.4, -0.2, 0.1]])
    # a carriage force beyond the (weakened) force limit: named in N
    r = model.robot
    weak = model_for(r.replace(limits=r.limits.__class__(**{**r.limits.__dict__, "force": (4.0, 4.0, 4.0)})))
    with pytest.raises(TrajectoryRejected, match=r"needs \d\.\d+ N, more than its force limit 4 N"):
        build_plan(weak, 0.0, cur, 0.0, [1.0], [[0.31, 0.31, 0.31]])


def test_limits_trip_a_quick_stop_named_in_metres():
    """A carriage driven past its limits by a streamed force quick-stops the robot."""
    model = model_for(ROBOT)
    drives = SimulatedDriveSet(model.robot)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, command_timeout=5.0, kp=(0, 0, 0), kd=(0, 0, 0),
                                                 feedforward="none", position_margin=0.005))
    loop.activate()
    t, events = 0.0, []
    for _ in range(500):
        if not loop.stopped_reason:
            loop.submit_command(t, tau=[30.0, 4.5, 4.5])
        events += loop.cycle(t).events
        t += DT
    stop = [e for e in events if e.startswith("quick stop")]
    assert stop and "carriage_1_joint" in stop[0], events
    assert (" m is outside its limits" in stop[0]) or (" m/s, above" in stop[0])
    assert drives.state is DriveState.QUICK_STOP


def test_outside_the_carriage_limits_only_a_slow_way_back_is_accepted():
    model = model_for(ROBOT)
    drives = SimulatedDriveSet(model.robot)
    q0 = np.array([0.09, 0.12, 0.12])                 # carriage 1 10 mm below its lower limit
    drives.set_joint_positions(q0)
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    assert any("carriage_1_joint at 0.0900 m is 0.0100 m outside its limits [0.1, 0.49]" in n
               for n in loop.notices), loop.notices
    t, _ = run(loop, 0.0, 0.1)
    sp = loop.current_setpoint()
    with pytest.raises(TrajectoryRejected, match="too fast"):
        build_plan(model, t, sp, t, [0.1], [[0.13, 0.12, 0.12]], limits=loop.limits())
    loop.submit_plan(build_plan(model, t, sp, t, [1.0], [[0.11, 0.12, 0.12]], limits=loop.limits()))
    t, outs = run(loop, t, 1.2)
    assert not loop.stopped_reason
    assert any("back within the joint limits" in e for o in outs for e in o.events)


def test_position_mode_drives_follow_too():
    model = model_for(ROBOT)
    drives = SimulatedDriveSet(model.robot, mode="position", position_gains=(10000.0, 100.0))
    loop = ControlLoop(model, drives, LoopConfig(rate=1 / DT, feedforward="model"))
    loop.activate()
    t, _ = run(loop, 0.0, 0.05)
    loop.submit_plan(build_plan(model, t, loop.current_setpoint(), t, [0.6], [[0.28, 0.31, 0.30]]))
    t, _ = run(loop, t, 0.9)
    np.testing.assert_allclose(drives.read().position, [0.28, 0.31, 0.30], atol=1e-4)


def test_gain_limits_of_a_carriage():
    """kd <= 0.5 m_min / T, kp <= 0.1 m_min / T^2 with m_min the smallest carriage-space mass:
    at least the carriage with its rod pair (m_cart + m_rod + m_r = 0.263 kg for colombo2020)."""
    model = model_for(ROBOT)
    kp, kd = gain_limits(model, 500.0)
    m_min = kd[0] / (0.5 * 500.0)
    assert 0.26 < m_min < 0.6
    assert kp[0] == pytest.approx(0.1 * m_min * 500.0 ** 2)
    assert (np.array(LoopConfig().kp) < kp).all() and (np.array(LoopConfig().kd) < kd).all()


def test_the_explicit_plant_serves_a_linear_robot_and_the_multibody_plant_refuses_it():
    robot = load_robot(ROBOT)
    plant = make_plant("explicit", robot)
    assert isinstance(plant, ExplicitPlant) and plant.model.kind == "linear"
    with pytest.raises(ValueError, match="plant multibody models rotary Delta robots only; robot colombo2020 "
                                         "is a linear Delta: use plant explicit or mujoco"):
        make_plant("multibody", robot)
    with pytest.raises(Exception, match="plant multibody models rotary"):
        SimulatedDriveSet(robot, plant="multibody")
