"""The identification node's parameters: each unusable value is refused by name, when it is
set at run time (over DDS) as at start, and the node does not start with one (exit 1, the
reason logged)."""
import math
import os
import subprocess
import sys

import pytest

from delta_dynamics.ros.identification_node import PARAMETERS, check_parameters


@pytest.mark.parametrize("name, value, rule", [
    ("window", -1.0, "window must be > 0 s, got -1.0"),
    ("window", float("inf"), "window must be a finite number, got inf"),
    ("window", 1e6, "window must be at most 600 s"),
    ("validation_fraction", 1.5, "validation_fraction must be in (0, 1), got 1.5"),
    ("method", "bogus", "method must be one of ols, wls, bounded, tsvd, dls, got 'bogus'"),
    ("forgetting_factor", 0.0, "forgetting_factor must be in (0, 1]"),
    ("fitness_threshold", 2.0, "fitness_threshold must be in (0, 1]"),
    ("push_to", ["delta_dynamics"], "push_to entries must be node:parameter"),
    ("output", " ", "output must be a file path"),
    ("window", math.nan, "window must be a finite number, got nan"),
    ("window_end", math.inf, "window_end must be a finite number, got inf"),
    ("rls_rate", math.inf, "rls_rate must be a finite number"),
    ("rls_rate", 1e9, "rls_rate must be at most 1000 Hz"),
    ("cutoff", math.nan, "cutoff must be a finite number"),
    ("output", "{tmp}", "output: {tmp}: is a directory; give a file name"),
    ("output", "{tmp}/ro.yaml", "output: {tmp}/ro.yaml: is a read-only file; refusing to replace it"),
    ("output", "{tmp}/fifo.yaml", "output: {tmp}/fifo.yaml: is a FIFO (named pipe); cannot write"),
    ("output", "/dev/null", "output: /dev/null: is a character device; cannot write"),
])
def test_each_unusable_parameter_is_named(tmp_path, name, value, rule):
    check_parameters(dict(PARAMETERS))                    # the defaults are fine
    (tmp_path / "ro.yaml").write_text("keep\n")
    (tmp_path / "ro.yaml").chmod(0o444)
    os.mkfifo(tmp_path / "fifo.yaml")
    if isinstance(value, str):
        value = value.replace("{tmp}", str(tmp_path))
    with pytest.raises(ValueError) as e:
        check_parameters({**PARAMETERS, name: value})
    assert rule.replace("{tmp}", str(tmp_path)) in str(e.value)


@pytest.mark.ros
def test_parameters_are_checked_when_set(tmp_path):
    """window NaN or 1e9, an output that is a directory, a read-only file or a FIFO, a window
    longer than the buffer, another robot: each refused by set_parameters with the reason (they
    were accepted and failed at the next refit, or never); a good value is accepted."""
    from ros_helpers import NodeProcess, RosClient
    (tmp_path / "ro.yaml").write_text("keep\n")
    (tmp_path / "ro.yaml").chmod(0o444)
    os.mkfifo(tmp_path / "fifo.yaml")
    node = NodeProcess("delta_dynamics.ros.identification_node", "-r", "__node:=ident_params",
                       "-p", "rls_rate:=0.0", "-p", f"output:={tmp_path / 'id.yaml'}")
    client = RosClient("ident_params_test")
    try:
        assert node.wait_for_output("identifying", 60), node.output()[-2000:]
        for name, value, reason in [
            ("window", math.nan, "window must be a finite number, got nan"),
            ("window", 1e9, "window must be at most 600 s"),
            ("window", 30.0, "window 30 s is longer than the 20 s this node keeps"),
            ("output", str(tmp_path), "is a directory; give a file name"),
            ("output", str(tmp_path / "ro.yaml"), "is a read-only file; refusing to replace it"),
            ("output", str(tmp_path / "fifo.yaml"), "is a FIFO (named pipe); cannot write"),
            ("robot", "d3s800", "robot is read at start only"),
            ("forgetting_factor", 2.0, "forgetting_factor must be in (0, 1]"),
        ]:
            res = client.set_parameter("ident_params", name, value)
            assert not res.successful and reason in res.reason, (name, value, res.reason)
        assert client.set_parameter("ident_params", "window", 10.0).successful
        assert client.set_parameter("ident_params", "output", str(tmp_path / "new" / "id.yaml")).successful
        assert (tmp_path / "ro.yaml").read_text() == "keep\n"
    finally:
        client.close()
        assert node.stop() == 0, node.output()[-2000:]
        assert "Traceback" not in node.output(), node.output()[-2000:]
        node.close()


@pytest.mark.ros
def test_the_node_refuses_to_start_with_a_bad_parameter():
    proc = subprocess.run([sys.executable, "-m", "delta_dynamics.ros.identification_node",
                           "--ros-args", "-p", "window:=-5.0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "cannot start: delta_identification parameter window must be > 0 s, got -5.0" in out
    assert "Traceback" not in out


@pytest.mark.ros
def test_a_refit_names_the_samples_lost_from_its_window():
    """Joint states stamped every 2 ms with 50 of them never sent (lost in delivery): the refit's
    answer says how many are missing and where the gap is, whatever the fit's outcome."""
    import numpy as np
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from ros_helpers import NodeProcess, RosClient
    node = NodeProcess("delta_dynamics.ros.identification_node", "-r", "__node:=ident_gap",
                       "-p", "min_samples:=100", "-p", "rls_rate:=0.0", "-p", "output:=/nonexistent/x.yaml")
    client = RosClient("ident_gap_test")
    try:
        pub = client.node.create_publisher(JointState, "/joint_states", 1000)
        refit = client.node.create_client(Trigger, "/ident_gap/refit")
        assert client.spin_until(lambda: pub.get_subscription_count() > 0, 30), node.output()[-2000:]
        rng = np.random.default_rng(3)
        sent = [k for k in range(600) if not 200 <= k < 250]
        for k in sent:
            t = 10.0 + 0.002 * k
            m = JointState(name=["arm_1_joint", "arm_2_joint", "arm_3_joint"])
            m.header.stamp = Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))
            m.position = [0.3 * np.sin(3 * t + i) for i in range(3)]
            m.velocity = [0.9 * np.cos(3 * t + i) for i in range(3)]
            m.effort = list(rng.normal(0.0, 5.0, 3))
            pub.publish(m)
            if k % 50 == 0:
                client.spin_for(0.01)
        answers = []

        def complete():          # the samples around the gap have arrived
            answers.append(_answer(client, refit))
            return "(50 missing: the largest gap 0.102 s at t = 10.398 s)" in answers[-1]
        assert client.spin_until(complete, 30), answers[-3:]
        # a window longer than the node's buffer (sized at start) is refused by name, when set
        res = client.set_parameter("ident_gap", "window", 30.0)
        assert not res.successful and "window 30 s is longer than the 20 s this node keeps" in res.reason
    finally:
        client.close()
        assert node.stop() == 0, node.output()[-2000:]
        assert "Traceback" not in node.output(), node.output()[-2000:]
        node.close()


def _answer(client, refit) -> str:
    return client.call(refit, __import__("std_srvs.srv", fromlist=["Trigger"]).Trigger.Request(), 30).message
