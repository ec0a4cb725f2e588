"""``delta-bringup`` with a calibrated robot file (``geometry.per_arm``): the whole simulated
stack in its own process, driven over DDS; the sim bus simulates a perturbed "true" robot
(``true_robot``) whose geometry the calibrated file holds. A Cartesian goal ends with the
joints at the calibrated file's inverse kinematics of the goal, and the full joint state
(the URDF's passive joints) closes every chain of the calibrated file's URDF there."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Transform, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

from ros_helpers import TOLERATE_PAUSES, NodeProcess, RosClient
from test_per_arm_dynamics import PERTURBED, with_per_arm

from delta_core.robot_file import save_robot
from delta_description.urdf_model import KinematicTree
from delta_description.xacro_urdf import robot_description
from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for

pytestmark = pytest.mark.ros
ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def test_bringup_runs_a_calibrated_robot(tmp_path):
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    path = tmp_path / "calibrated.yaml"
    save_robot(robot, path)
    m, m0 = model_for(robot), model_for("nt_robot")
    stack = NodeProcess("delta_bringup.main", "-p", f"robot:={path}", "-p", f"true_robot:={path}",
                        *TOLERATE_PAUSES)
    client = RosClient("per_arm_bringup_test")
    n = client.node
    got = {"js": None, "full": None, "events": []}
    n.create_subscription(JointState, "/joint_states",
                          lambda msg: got.__setitem__("js", msg) if list(msg.name) == ARMS else None, 20)
    n.create_subscription(JointState, "/delta/robot_joint_states", lambda msg: got.__setitem__("full", msg), 10)
    n.create_subscription(String, "/delta_hardware/events", lambda msg: got["events"].append(msg.data), 50)
    cart = n.create_publisher(MultiDOFJointTrajectory, "/delta_hardware/cartesian_trajectory", 10)
    try:
        assert client.spin_until(lambda: got["js"] is not None and got["full"] is not None
                                 and cart.get_subscription_count() > 0, 30), stack.output()[-3000:]
        goal = [0.04, 0.05, -0.72]
        msg = MultiDOFJointTrajectory(joint_names=["platform"])
        msg.points = [MultiDOFJointTrajectoryPoint(
            transforms=[Transform(translation=Vector3(x=goal[0], y=goal[1], z=goal[2]))],
            time_from_start=Duration(sec=1))]
        cart.publish(msg)
        assert client.spin_until(lambda: any("finished" in e for e in got["events"]), 60), got["events"]
        client.spin_for(0.3)
        q = np.asarray(got["js"].position)
        # the joints stand at the calibrated file's inverse kinematics, not the nominal one's
        np.testing.assert_allclose(q, A.inverse_kinematics(m, goal), atol=1e-3)
        assert np.abs(A.inverse_kinematics(m0, goal) - A.inverse_kinematics(m, goal)).max() > 5e-3
        np.testing.assert_allclose(A.forward_kinematics(m, q), goal, atol=2e-3)
        full = dict(zip(got["full"].name, got["full"].position))
        X = A.forward_kinematics(m, q)
        np.testing.assert_allclose([full["platform_x"], full["platform_y"], full["platform_z"]], X, atol=1e-6)
        # with the calibrated file's URDF, the published passive joints close every chain: each
        # bar's far end on its platform ball joint (what robot_state_publisher draws)
        # (one message's own platform position: /joint_states and this topic's last messages may
        # be a cycle apart while the robot settles by micrometres)
        P = KinematicTree(robot_description(str(path))).link_poses(full)
        X = np.array([full["platform_x"], full["platform_y"], full["platform_z"]])
        g = robot.geometry
        for k, arm in enumerate(g.per_arm):
            phi = np.radians(g.chain_angles_deg[k])
            u, t = np.array([np.cos(phi), np.sin(phi), 0.0]), np.array([-np.sin(phi), np.cos(phi), 0.0])
            for side, sign in (("a", 1), ("b", -1)):
                end = P[f"forearm_{k + 1}{side}_link"] @ [arm["forearm_length"], 0, 0, 1]
                np.testing.assert_allclose(end[:3], X + arm["platform_radius"] * u + sign * 0.5 * g.forearm_spacing * t,
                                           atol=1e-9)
    finally:
        client.close()
        code = stack.stop(timeout=15)
        log = stack.output()
        stack.close()
    assert code == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
