"""``delta-ctl record``: a rosbag2 recorder on rclpy + rosbags (no ``ros2 bag``), over real DDS.

* every message a publisher sent before the stop is in the bag, for SIGINT and SIGTERM, in
  both storage formats; the bag's metadata carries the type hash the publisher announces;
  ``rosbags`` and ``delta-identify``'s reader read it;
* the README's identification loop: the simulated robot runs an excitation trajectory sent
  with ``delta-ctl run --wait`` while ``delta-ctl record`` records ``/joint_states``;
  ``delta-identify`` on that bag writes a robot file whose parameters are the simulated
  robot's (its plant is the robot file) and that loads again.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import JointState

from delta_core.robot_file import load_robot
from delta_dynamics.data_files import bag as B
from ros_helpers import SIM_TIME, TOLERATE_PAUSES, HardwareProbe, NodeProcess, RosClient

# a stack, a recorder and identification on its data: run alone (after the parallel part)
pytestmark = [pytest.mark.ros, pytest.mark.serial]
NAMES = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def start_record(*args):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "delta_bringup.ctl", "record", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_subscribed(client, pub, timeout=60.0):
    assert client.spin_until(lambda: pub.get_subscription_count() > 0, timeout), "the recorder never subscribed"


@pytest.mark.parametrize("storage, sig", [("mcap", signal.SIGINT), ("sqlite3", signal.SIGTERM)])
def test_every_message_sent_before_the_stop_is_in_the_bag(tmp_path, storage, sig):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    n = 3000
    client = RosClient("record_test_pub")
    pub = client.node.create_publisher(JointState, "/rec_test/joint_states",
                                       QoSProfile(depth=n, reliability=ReliabilityPolicy.RELIABLE))
    out = tmp_path / "bag"
    rec = start_record("/rec_test/joint_states", "--out", str(out), "--storage", storage)
    try:
        wait_subscribed(client, pub)
        time.sleep(0.5)
        for k in range(n):                       # as fast as Python publishes (several kHz)
            msg = JointState(name=NAMES, position=[0.1 * k, 0.2, 0.3], velocity=[], effort=[1.0, 2.0, float(k)])
            msg.header.stamp.sec, msg.header.stamp.nanosec = 100 + k // 1000, (k % 1000) * 1_000_000
            pub.publish(msg)
        client.spin_until(lambda: False, 0.2)
        rec.send_signal(sig)
        so, se = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        client.close()
    assert rec.returncode == 0, se
    assert f"wrote {out}: {n} on /rec_test/joint_states" in so, so + se
    assert "Traceback" not in se
    meta = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == storage and meta["message_count"] == n
    (topic,) = meta["topics_with_message_count"]
    md = topic["topic_metadata"]
    assert md["type"] == "sensor_msgs/msg/JointState" and md["serialization_format"] == "cdr"
    # the hash the publisher announced on the graph (the recorder warns when they differ)
    assert md["type_description_hash"].startswith("RIHS01_") and "note:" not in so
    data = B.read_bag(out, NAMES, topic="/rec_test/joint_states")
    assert len(data) == n
    np.testing.assert_array_equal(data.tau[:, 2], np.arange(n))         # every message, in order
    np.testing.assert_allclose(data.t, np.arange(n) * 1e-3, atol=1e-12)


def test_recording_nothing_says_why(tmp_path):
    rec = start_record("/nobody/publishes/this", "--out", str(tmp_path / "bag"), )
    env_timeout = 90
    so, se = rec.communicate(timeout=env_timeout)
    assert rec.returncode == 1
    assert "no publisher of /nobody/publishes/this" in se and "Traceback" not in se
    assert not (tmp_path / "bag").exists()


def test_the_identification_loop_from_a_recorded_bag(tmp_path):
    """README, Identification: excite -> delta-ctl run -> delta-ctl record -> delta-identify
    -> a robot file for delta-bringup --robot."""
    from delta_dynamics.identification.excitation import write_trajectory_csv
    from delta_dynamics.rotary.model import RotaryModel

    from test_identification import EXCITE, fourier
    model = RotaryModel.from_robot("nt_robot")
    excite = tmp_path / "excite.csv"
    write_trajectory_csv(excite, model, fourier(EXCITE), cycles=2)
    hw = NodeProcess("delta_hardware.ros.hardware_node", "-p", "feedforward:=model", *TOLERATE_PAUSES, *SIM_TIME)
    client = RosClient("record_loop_test")
    probe = HardwareProbe(client)
    bag = tmp_path / "run1"
    rec = None
    try:
        probe.wait_ready(90.0)
        rec = start_record("--out", str(bag))
        assert client.spin_until(lambda: client.node.count_subscribers("/joint_states") >= 2, 60), \
            "the recorder never subscribed"
        run = subprocess.run([sys.executable, "-m", "delta_bringup.ctl", "run", str(excite), "--wait"],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "trajectory finished" in run.stdout
        rec.send_signal(signal.SIGINT)
        so, se = rec.communicate(timeout=60)
        assert rec.returncode == 0, se
    finally:
        if rec is not None and rec.poll() is None:
            rec.kill()
            rec.wait()
        client.close()
        assert hw.stop() == 0, hw.output()[-3000:]
        hw.close()
    out = tmp_path / "identified.yaml"
    ident = subprocess.run([sys.executable, "-m", "delta_dynamics.identification.cli", "--robot", "nt_robot",
                            "--data", str(bag), "--out", str(out), "--no-progress"],
                           capture_output=True, text=True, timeout=600)
    assert ident.returncode == 0, ident.stdout + ident.stderr
    robot = load_robot(out)                                  # what delta-bringup --robot loads
    lumped = robot.metadata["identified"]["lumped_parameters"]
    nominal = model.params.as_vector()
    got = np.asarray(lumped["values"])
    # the plant is the robot file's model: the masses, inertias and moments come back
    np.testing.assert_allclose(got[:8], nominal[:8], rtol=0.05)
