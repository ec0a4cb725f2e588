"""A calibrated robot (``geometry.per_arm``) drives the stack below ROS: the explicit plant
simulates its own geometry, the plants built for identical chains refuse it, and the control
loop with the simulated drives of a perturbed "true" robot puts the platform where it is told
only when the controller uses the calibrated file."""
import numpy as np
import pytest

from test_per_arm_dynamics import PERTURBED, PRESETS, with_per_arm

from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for
from delta_dynamics.plant import ExplicitPlant, make_plant
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.trajectory_plan import build_plan

KINDS = ["rotary", "linear"]


@pytest.mark.parametrize("kind", KINDS)
def test_explicit_plant_simulates_the_per_arm_robot(kind):
    """Held by the per-arm model's gravity efforts the plant stays put; the symmetric model's
    efforts let it drift. Its joint state is the per-arm inverse kinematics."""
    robot = with_per_arm(kind, PERTURBED[kind])
    m, m0 = model_for(robot), model_for(PRESETS[kind])
    X0 = A.workspace_centre(m0) + np.array([0.02, -0.01, 0.0])
    drift = {}
    plant = make_plant("explicit", robot)
    plant.place_platform(X0)
    np.testing.assert_allclose(plant.joint_state()[0], A.inverse_kinematics(m, X0), atol=1e-12)
    for name, ctl in (("per_arm", m), ("symmetric", m0)):
        plant = ExplicitPlant(m.without_friction())       # friction would hold a small error still
        plant.place_platform(X0)
        tau = A.inverse_dynamics(ctl, X0, np.zeros(3), np.zeros(3), friction=False)
        for _ in range(200):
            plant.step(tau, 1e-3)
        drift[name] = float(np.linalg.norm(plant.platform_position() - X0))
    assert drift["per_arm"] < 1e-7, drift
    assert drift["symmetric"] > 1e-4, drift


@pytest.mark.parametrize("plant", ["multibody", "mujoco"])
def test_plants_of_identical_chains_refuse_a_per_arm_robot(plant):
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    with pytest.raises(ValueError, match=f"plant {plant} models three identical chains; robot .* has "
                                         f"geometry.per_arm .*: use plant explicit"):
        make_plant(plant, robot)


def _track(kind, ctl_robot, true_robot, waypoints):
    """Platform error (m) of the true robot along a pick-and-place through Cartesian
    ``waypoints`` planned with the controller's model: max over the last 0.2 s at each
    waypoint (at rest), measured with the true robot's platform position."""
    m = model_for(ctl_robot)
    drives = SimulatedDriveSet(ctl_robot, true_robot=true_robot, torque_noise=0.0, seed=1)
    dt = 1e-3
    loop = ControlLoop(m, drives, LoopConfig(rate=1 / dt, feedforward="model"))
    start = waypoints[0]
    drives.set_joint_positions(A.inverse_kinematics(model_for(true_robot), start))
    loop.activate()
    t = 0.0
    for _ in range(50):
        loop.cycle(t)
        t += dt
    errors = []
    for X in waypoints[1:]:
        q = A.inverse_kinematics(m, X)
        loop.submit_plan(build_plan(m, t, loop.current_setpoint(), t, [0.4], [q]))
        for k in range(700):
            loop.cycle(t)
            t += dt
            if k >= 500:
                errors.append(float(np.linalg.norm(drives.platform_position - X)))
    return max(errors)


@pytest.mark.parametrize("kind", KINDS)
def test_the_calibrated_file_removes_the_platform_error(kind):
    """A perturbed true robot: with the nominal file the platform misses the pick and place
    points by millimetres; with the calibrated file (here: the true per-arm geometry) by no more
    than the loop's own residual (friction against the PD gains, encoder steps), measured with a
    symmetric robot driven with its own file."""
    from delta_core.robot_file import load_robot
    true = with_per_arm(kind, PERTURBED[kind])
    nominal = model_for(PRESETS[kind])
    c = A.workspace_centre(nominal)
    s = 0.1 if kind == "rotary" else 0.03
    waypoints = [c, c + [s, 0, -s / 2], c + [-s, s, 0], c + [0, -s, -s / 2]]
    err_nominal = _track(kind, PRESETS[kind], true, waypoints)
    err_calibrated = _track(kind, true, true, waypoints)
    residual = _track(kind, PRESETS[kind], load_robot(PRESETS[kind]), waypoints)
    assert err_nominal > 1e-3 and err_nominal > 20 * residual, (err_nominal, residual)
    assert err_calibrated < 1.5 * residual + 1e-6, (err_calibrated, residual)
