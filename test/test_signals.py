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

from ros_helpers import SIM_TIME, NodeProcess, children

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
        assert node.proc.wait(20) == 0, node.output()[-3000:]
        for bad in ("Traceback", "Exception ignored", "leaked"):
            assert bad not in node.output(), node.output()[-3000:]
    finally:
        node.close()


def test_a_signal_during_a_finalizer_raises_nothing_there():
    """A signal that lands in a ``__del__`` (rclpy's Future.__del__ under the collector) must not
    raise there: Python would print "Exception ignored ... KeyboardInterrupt" with a traceback and
    drop it. Elsewhere the first signal raises KeyboardInterrupt, a second one nothing."""
    import sys

    from delta_core.ros.node_util import StopOnce
    handler = StopOnce()
    raised = []

    class Finalised:
        def __del__(self):
            try:
                handler(signal.SIGTERM, sys._getframe())
            except KeyboardInterrupt:
                raised.append("in __del__")

    Finalised()     # collected at once: __del__ runs here
    assert raised == [] and not handler.stopping
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGTERM, sys._getframe())
    handler(signal.SIGINT, sys._getframe())      # the second signal: ignored
    assert handler.stopping


def test_a_signal_while_rclpy_builds_a_task_leaves_it_whole(monkeypatch):
    """A signal that lands while the executor constructs a Task must not raise there: the
    half-built Task's ``__del__`` printed "'Task' object has no attribute '_exception'" with a
    traceback at a loaded stop. The whole Task is built, and no exception is printed."""
    import sys

    from rclpy.task import Future, Task

    from delta_core.ros.node_util import StopOnce
    handler = StopOnce()
    raised = []
    set_executor = Future._set_executor

    def interrupted(self, executor):              # called from Future.__init__, in rclpy/task.py
        try:
            handler(signal.SIGINT, sys._getframe())
        except KeyboardInterrupt:
            raised.append("in Task.__init__")
            raise AssertionError("the signal raised KeyboardInterrupt inside rclpy's Task.__init__") from None
        set_executor(self, executor)

    monkeypatch.setattr(Future, "_set_executor", interrupted)
    task = Task(lambda: None)
    assert raised == [] and not handler.stopping
    assert task._exception is None and not task.done()
    monkeypatch.setattr(Future, "_set_executor", set_executor)
    with pytest.raises(KeyboardInterrupt):       # elsewhere the signal still ends the spin
        handler(signal.SIGINT, sys._getframe())
