"""Every way a user stops the stack ends it cleanly: ``delta-bringup`` and the node processes
exit 0 on SIGINT and SIGTERM, started from a terminal (Ctrl-C reaches the whole foreground
process group), as a background job of a non-interactive script (which starts with SIGINT
ignored), or by a supervisor's SIGTERM; no node process is left behind. (``ros2 launch``:
test_launch_files.py.)"""
import os
import signal
import subprocess
import sys
import time

import pytest

from ros_helpers import SIM_TIME, NodeProcess, children, patient

pytestmark = pytest.mark.ros


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def _wait_up(proc, log, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "active: holding position" in log.read_text(errors="replace") and len(children(proc.pid)) >= 4:
            return
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    raise AssertionError("the stack did not come up:\n" + log.read_text()[-3000:])


@pytest.mark.parametrize("how", ["terminal Ctrl-C", "background job SIGINT", "SIGTERM"])
def test_delta_bringup_exits_cleanly_with_every_node(how, tmp_path):
    log = tmp_path / "bringup.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "delta_bringup.main"]
    with open(log, "w") as out:
        if how == "background job SIGINT":
            # bash without job control starts background jobs with SIGINT ignored
            proc = subprocess.Popen(["bash", "-c", f"{' '.join(cmd)} & echo $! ; wait"], stdout=subprocess.PIPE,
                                    stderr=out, env=env, text=True, start_new_session=True)
            pid = int(proc.stdout.readline())
            target = pid
        else:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            target = proc.pid
    try:
        class P:
            pid = target

            @staticmethod
            def poll():
                return None if _alive(target) else 0
        _wait_up(P, log)
        nodes = children(target)
        if how == "terminal Ctrl-C":
            os.killpg(os.getpgid(target), signal.SIGINT)
        elif how == "background job SIGINT":
            os.kill(target, signal.SIGINT)
        else:
            os.kill(target, signal.SIGTERM)
        rc = proc.wait(40)
        text = log.read_text(errors="replace")
        assert rc == 0, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        left = [p for p in nodes if _alive(p)]
        assert not left, f"node processes left behind: {left}"
    finally:
        if proc.poll() is None:
            os.killpg(os.getpgid(proc.pid), signal.SIGKILL)
            proc.wait(5)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_hardware_node_exits_cleanly(sig):
    node = NodeProcess("delta_hardware.ros.hardware_node", "-r", "__node:=delta_hw_sig", *SIM_TIME)
    try:
        assert node.wait_for_output("active: holding position", 60), node.output()[-2000:]
        node.proc.send_signal(sig)
        assert node.proc.wait(patient(60)) == 0, node.output()[-3000:]
        for bad in ("Traceback", "Exception ignored", "leaked"):
            assert bad not in node.output(), node.output()[-3000:]
    finally:
        node.close()


#: A node process with nothing to do: no timer, no message, so its executor waits in ``rcl_wait``
#: until something wakes it. argv[1]: when it signals itself ("during start-up": twice, in the
#: middle of building the node; "never": the test sends the signal).
_IDLE_NODE = """
import os, signal, sys
import rclpy.signals
from rclpy.node import Node
from delta_core.ros.node_util import run

def idle():
    node = Node("delta_idle_sig")
    print("rclpy signal handlers:", rclpy.signals.get_current_signal_handlers_options().name, flush=True)
    if sys.argv[1] == "during start-up":
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    print("up", flush=True)
    return node

sys.exit(run(idle, "delta_idle_sig"))
"""


@pytest.mark.parametrize("sig, when", [(signal.SIGINT, "while waiting"), (signal.SIGTERM, "while waiting"),
                                       (None, "during start-up")])
def test_a_node_stops_on_a_signal_with_rclpy_handlers_off(sig, when):
    """The shared ``run`` handles SIGINT/SIGTERM itself: rclpy's handlers, which shut the context
    down from a thread of rclpy's while the main thread destroys the node (a segfault, exit -11, at
    a loaded stop), are not installed. A signal wakes an executor waiting in ``rcl_wait`` with
    nothing else to do; one during the node's start-up (and a second one) stops it once built.
    Exit 0, nothing printed but the node's own lines."""
    proc = subprocess.Popen([sys.executable, "-c", _IDLE_NODE, "never" if when == "while waiting" else when],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline() == "rclpy signal handlers: NO\n"
        assert proc.stdout.readline() == "up\n"
        if when == "while waiting":
            time.sleep(0.5)                               # into rcl_wait (a shorter wait only tests less)
            proc.send_signal(sig)
        rc = proc.wait(patient(20))
        rest = proc.stdout.read()
        assert rc == 0, rest
        assert rest == "", rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
