"""The hardware node's requests over real DDS: a stop is never undone by requests queued before
it and every request is answered; the e-stop and the status answer while a parameter change
reads a file that never ends; a second stack in the same domain refuses to start; the status
says where the robot is (``delta-ctl status`` / ``where``); a clean start and stop prints no
warning, error or exception."""
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger

from delta_dynamics.rotary.kinematics import forward_kinematics
from delta_dynamics.rotary.model import RotaryModel
from ros_helpers import ARMS, SIM_TIME, HardwareProbe, NodeProcess, RosClient

pytestmark = pytest.mark.ros
MODEL = RotaryModel.from_robot("nt_robot")
#: what a quiet run never prints
NOISE = re.compile(r"\[WARN\]|\[ERROR\]|\[FATAL\]|Traceback|[Ee]xception|never retrieved|leaked")


@pytest.fixture(scope="module")
def stack():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_req", "-r", "/clock:=/req/clock",
                       "-r", "/joint_states:=/req/joint_states", *SIM_TIME)
    client = RosClient("req_test")
    robot = HardwareProbe(client, node="delta_hw_req", joint_states="/req/joint_states")
    try:
        robot.wait_ready(120)
        yield node, robot
    finally:
        client.close()
        code = node.stop()
        out = node.output()
        node.close()
        assert code == 0, out[-3000:]


def _status(robot):
    return json.loads(robot.c.call(robot.status, Trigger.Request(), resend=True).message)


def test_queued_resets_never_undo_an_emergency_stop_and_each_is_answered(stack):
    """100 resets, then the e-stop 50 ms later: before, the queued resets re-enabled the robot
    after the stop and most got no answer."""
    _, robot = stack
    c = robot.c
    deep = QoSProfile(depth=1000)
    reset = c.node.create_client(Trigger, "/delta_hw_req/reset", qos_profile=deep)
    estop = c.node.create_client(Trigger, "/delta_hw_req/emergency_stop", qos_profile=deep)
    assert reset.wait_for_service(timeout_sec=30) and estop.wait_for_service(timeout_sec=30)
    resets = [reset.call_async(Trigger.Request()) for _ in range(100)]
    c.spin_for(0.05)
    stop = estop.call_async(Trigger.Request())
    assert c.spin_until(lambda: stop.done() and all(f.done() for f in resets), 120), \
        f"{sum(not f.done() for f in resets)} of 100 resets unanswered, e-stop {'answered' if stop.done() else 'not'}"
    assert stop.result().success, stop.result().message
    answers = [f.result() for f in resets]
    # a reset handled after the stop was received before it: void, with the reason
    assert all(a.success or "void: it was requested before the stop" in a.message for a in answers), \
        {a.message for a in answers}
    c.spin_for(0.3)
    st = _status(robot)
    assert st["stopped"], st                                   # still stopped
    n0 = robot.send(ARMS, [(1.0, (robot.q + 0.02).tolist())])
    assert "the robot is stopped" in robot.event_after(n0, "rejected")
    res = c.call(reset, Trigger.Request())                     # requested after the stop
    assert res.success, res.message
    assert c.spin_until(lambda: not _status(robot)["stopped"], 30)


def test_the_emergency_stop_and_the_status_answer_while_a_parameter_names_a_fifo(stack, tmp_path):
    """``feedforward_robot`` set to a named pipe blocked the executor in ``open``: no answer from
    the e-stop nor the status after that. Now the file is refused with the reason, and the
    stop and the status are served meanwhile whatever the parameter callback does."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter
    _, robot = stack
    c = robot.c
    fifo = tmp_path / "robot.yaml"
    os.mkfifo(fifo)
    setp = c.node.create_client(SetParameters, "/delta_hw_req/set_parameters")
    assert setp.wait_for_service(timeout_sec=30)
    param = setp.call_async(SetParameters.Request(parameters=[
        Parameter("feedforward_robot", value=str(fifo)).to_parameter_msg()]))
    stop = robot.estop.call_async(Trigger.Request())
    assert c.spin_until(lambda: stop.done(), 60) and stop.result().success
    status = robot.status.call_async(Trigger.Request())
    assert c.spin_until(lambda: status.done() and param.done(), 60)
    assert json.loads(status.result().message)["stopped"]
    res = param.result().results[0]
    assert not res.successful and "a FIFO" in res.reason, res.reason
    assert c.call(robot.reset, Trigger.Request()).success


def test_the_status_says_where_the_robot_is_rounded(stack):
    _, robot = stack
    goal = [0.2, 0.3, 0.1]
    n0 = robot.send(ARMS, [(0.8, goal)])
    robot.event_after(n0, "trajectory finished")
    robot.wait_sim(0.3)
    st = _status(robot)
    assert st["lifecycle"] == "active" and st["active"] and not st["stopped"]
    np.testing.assert_allclose(st["position"], goal, atol=2e-3)
    np.testing.assert_allclose(st["platform_position"], forward_kinematics(MODEL, np.array(st["position"])), atol=1e-5)
    assert len(st["tracking_error"]) == 3 and max(map(abs, st["tracking_error"])) < 2e-3
    assert st["units"]["position"] == "rad" and isinstance(st["active_limits"], list)
    floats = re.findall(r"-?\d+\.\d+(?:e-?\d+)?", robot.c.call(robot.status, Trigger.Request(), resend=True).message)
    assert all(len(f.split(".")[1].split("e")[0]) <= 6 for f in floats), floats


def test_delta_ctl_where_prints_the_platform_and_the_joints(stack):
    out = subprocess.run([sys.executable, "-m", "delta_bringup.ctl", "--node", "delta_hw_req", "where"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("platform  x ") and lines[0].endswith("m (base_link)")
    assert [ln.split()[0] for ln in lines[1:4]] == ARMS and "rad" in lines[1]
    assert lines[4].startswith("state     active")


def test_a_second_stack_in_the_same_domain_refuses_to_start(stack):
    """Same node name (its status service is served): refused, exit 1, the reason in one line.
    Another name that would publish the same simulated /clock: refused too."""
    for args, why in ((("-r", "__node:=delta_hw_req", "-r", "/clock:=/req2/clock"), "/delta_hw_req already exists"),
                      (("-r", "__node:=delta_hw_req2", "-r", "/clock:=/req/clock", *SIM_TIME),
                       "/req/clock is already published by /delta_hw_req")):
        second = NodeProcess("delta_hardware.ros.hardware_node", *args)
        try:
            assert second.proc.wait(120) == 1, second.output()[-3000:]
            out = second.output()
            assert "cannot start: another stack is running in this ROS domain" in out and why in out, out[-3000:]
            assert "Traceback" not in out
        finally:
            second.close()


def test_a_clean_start_and_stop_prints_no_warning_error_or_exception():
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_quiet", "-r",
                       "/clock:=/quiet/clock", "-r", "/joint_states:=/quiet/joint_states", *SIM_TIME)
    client = RosClient("quiet_test")
    try:
        robot = HardwareProbe(client, node="delta_hw_quiet", joint_states="/quiet/joint_states")
        robot.wait_ready(120)
        n0 = robot.move([0.2, 0.2, 0.2], 0.5)
        robot.event_after(n0, "trajectory finished")
        time.sleep(0.5)
    finally:
        client.close()
        code = node.stop()
        out = node.output()
        node.close()
    assert code == 0, out[-3000:]
    assert not NOISE.search(out), out[-3000:]
