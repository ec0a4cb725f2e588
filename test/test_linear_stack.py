"""A linear Delta through the whole stack over real DDS: the hardware node moves the
carriages (joint and platform trajectories reached), refuses bad trajectories and commands with
the robot holding still. (The linear demo: test_bringup.py.)"""
import numpy as np
import pytest

from delta_dynamics.algorithms import forward_kinematics, inverse_kinematics, workspace_centre
from delta_dynamics.kinds import model_for
from ros_helpers import SIM_TIME, HardwareProbe, NodeProcess, RosClient

pytestmark = pytest.mark.ros
MODEL = model_for("colombo2020")
CARRIAGES = list(MODEL.joint_names)


@pytest.fixture(scope="module")
def robot():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_lin",
                       "-r", "/joint_states:=/lin/joint_states", "-p", "robot:=colombo2020",
                       "-p", "feedforward:=model", "-p", "max_command_step:=0.02", *SIM_TIME)
    client = RosClient("linear_stack")
    probe = HardwareProbe(client, node="delta_hw_lin", joint_states="/lin/joint_states", hardware_id="colombo2020",
                          joints=CARRIAGES)
    try:
        client.spin_until(lambda: probe.js is not None, 60)
        probe.wait_sim(1.0)            # the carriages settle under the hold (0.16 mm in the first 0.25 s)
        yield probe
    finally:
        client.close()
        assert node.stop() == 0, node.output()[-3000:]
        assert "Traceback" not in node.output()
        node.close()


def _joint_states_of_the_carriages(robot):
    assert robot.c.spin_until(lambda: robot.js is not None and list(robot.js.name) == CARRIAGES, 30)
    assert robot.js.name == CARRIAGES and len(robot.js.effort) == 3       # m and N


def test_carriage_and_platform_trajectories_reach_their_goals(robot):
    _joint_states_of_the_carriages(robot)
    centre = workspace_centre(MODEL)
    goal_X = centre + [0.02, -0.015, 0.01]
    goal_q = inverse_kinematics(MODEL, goal_X)
    n0 = robot.send(CARRIAGES, [(1.0, goal_q.tolist())])
    robot.event_after(n0, "trajectory finished")
    robot.wait_sim(0.3)
    np.testing.assert_allclose(robot.q, goal_q, atol=2e-4)                    # m
    goal_X = centre + [-0.02, 0.01, -0.005]
    n0 = robot.send(["platform_x", "platform_y", "platform_z"], [(1.0, goal_X.tolist())])
    robot.event_after(n0, "trajectory finished")
    robot.wait_sim(0.3)
    np.testing.assert_allclose(forward_kinematics(MODEL, robot.q), goal_X, atol=3e-4)


@pytest.mark.parametrize("points, expect", [
    ([(1.0, [0.5, 0.2, 0.2])], "leaves its limits"),
    ([(0.02, "up")], "too fast"),
    ([(1.0, [float("nan"), 0.2, 0.2])], "positions must be finite"),
])
def test_bad_trajectories_are_refused_and_the_carriages_hold_still(robot, points, expect):
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    points = [(t, (q0 + 0.05).tolist() if p == "up" else p) for t, p in points]
    n0 = robot.send(CARRIAGES, points)
    assert expect in robot.event_after(n0, "rejected")
    robot.wait_sim(0.2)
    assert np.abs(robot.q - q0).max() < 1e-6


def test_a_streamed_command_too_far_is_refused_in_metres(robot):
    from sensor_msgs.msg import JointState
    robot.wait_sim(0.05)
    q0 = robot.q.copy()
    n0 = len(robot.events)
    robot.cmd.publish(JointState(name=CARRIAGES, position=(q0 + 0.05).tolist()))
    event = robot.event_after(n0, "joint command rejected")
    assert "0.050 m from the setpoint (max_command_step 0.02 m)" in event, event
