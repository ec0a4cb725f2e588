"""delta-bringup: the whole simulated stack in its own process, driven over DDS from the
test process; bad arguments. The scripted demo: test_readme_figures.py."""
import json
import subprocess
import sys

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Transform, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,
                                 MultiDOFJointTrajectoryPoint)

from delta_dynamics.rotary.kinematics import forward_kinematics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import TOLERATE_PAUSES, NodeProcess, RosClient

pytestmark = pytest.mark.ros
ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]
MODEL = RotaryModel.from_robot("nt_robot")


def test_the_composed_stack_moves_the_robot_and_shuts_down_cleanly(tmp_path):
    out = tmp_path / "identified.yaml"
    stack = NodeProcess("delta_bringup.main", "-p", "publish_desired_state:=true",
                        "-p", f"output:={out}", "-p", "min_samples:=100000", *TOLERATE_PAUSES)
    client = RosClient("bringup_test")
    n = client.node
    got = {"js": None, "ff": [], "full": None, "estimate": [], "events": []}
    n.create_subscription(JointState, "/joint_states",
                          lambda m: got.__setitem__("js", m) if list(m.name) == ARMS else None, 20)
    n.create_subscription(JointState, "/delta/feedforward", lambda m: got["ff"].append(m), 1000)
    n.create_subscription(JointState, "/delta/robot_joint_states", lambda m: got.__setitem__("full", m), 10)
    n.create_subscription(String, "/delta_identification/estimate", lambda m: got["estimate"].append(m.data), 10)
    n.create_subscription(String, "/delta_hardware/events", lambda m: got["events"].append(m.data), 50)
    traj = n.create_publisher(JointTrajectory, "/delta_hardware/joint_trajectory", 10)
    cart = n.create_publisher(MultiDOFJointTrajectory, "/delta_hardware/cartesian_trajectory", 10)
    refit = n.create_client(Trigger, "/delta_identification/refit")
    try:
        assert client.spin_until(lambda: got["js"] is not None and got["full"] is not None
                                 and traj.get_subscription_count() > 0, 30), stack.output()[-3000:]
        # every movable URDF joint is drawn: 3 arms, 12 elbow joints, platform_x/y/z
        assert len(got["full"].name) == 18 and "platform_z" in got["full"].name
        # a joint trajectory
        msg = JointTrajectory(joint_names=["arm_3_joint", "arm_1_joint", "arm_2_joint"])
        msg.points = [JointTrajectoryPoint(positions=[0.1, 0.3, 0.2], time_from_start=Duration(sec=1))]
        traj.publish(msg)
        assert client.spin_until(lambda: any("finished" in e for e in got["events"]), 60), got["events"]
        client.spin_for(0.3)
        np.testing.assert_allclose(got["js"].position, [0.3, 0.2, 0.1], atol=3e-3)
        # feedforward messages answer the desired states, stamped like them (500 in this second;
        # a busy host's nodes drop some: each message costs an rclpy callback)
        assert len(got["ff"]) > 20
        assert list(got["ff"][-1].name) == ARMS and np.isfinite(got["ff"][-1].effort).all()
        # a Cartesian trajectory
        goal = [0.04, 0.05, -0.72]
        m = MultiDOFJointTrajectory(joint_names=["platform"])
        m.points = [MultiDOFJointTrajectoryPoint(transforms=[Transform(translation=Vector3(x=goal[0], y=goal[1], z=goal[2]))],
                                                 time_from_start=Duration(sec=1))]
        n_events = len(got["events"])
        cart.publish(m)
        assert client.spin_until(lambda: any("finished" in e for e in got["events"][n_events:]), 60)
        client.spin_for(0.3)
        np.testing.assert_allclose(forward_kinematics(MODEL, got["js"].position), goal, atol=2e-3)
        # the identification node collects the window and runs RLS online
        # (estimates come periodically: wait for one after 500 samples, which a busy host delays;
        # an idle fresh run read 359 from the first)
        rls = lambda: [json.loads(e) for e in got["estimate"] if '"rls"' in e]  # noqa: E731
        assert client.spin_until(lambda: any(e["samples"] > 500 for e in rls()), 30), rls()[-1:]
        est = [e for e in rls() if e["samples"] > 500][-1]
        assert est["updates"] > 10
        # a refit on too little data is refused and writes nothing
        res = client.call(refit, Trigger.Request())
        assert not res.success and "samples in the window, need 100000" in res.message
        assert not out.exists()
    finally:
        client.close()
        code = stack.stop(timeout=15)
        log = stack.output()
        stack.close()
    assert code == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("args, message", [
    (["--params-file", "/no/such.yaml"], "--params-file /no/such.yaml: ROS 2 parameter file not found"),
    (["--cycles", "0"], "--cycles must be from 1 to 100"),
    (["--robot", "no_such_robot"], "no such preset"),
])
def test_bad_arguments_exit_with_a_clear_error(args, message):
    proc = subprocess.run([sys.executable, "-m", "delta_bringup.main", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


