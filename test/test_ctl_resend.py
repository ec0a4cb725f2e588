"""``delta-ctl`` over real DDS when an answer is lost: on a busy host Fast DDS drops the answer to
a client whose reader it has not matched yet (it waits 100 ms, then warns "failed to send response
(timeout)"). A query, a stop and a pause are sent again until answered; a reset is never sent
twice (a copy arriving after a new stop would clear that stop)."""
import json
import subprocess
import sys
import threading
import time

import pytest
from std_srvs.srv import SetBool, Trigger

from ros_helpers import RosClient, patient

pytestmark = pytest.mark.ros
NODE = "ctl_resend_hw"


class LossyServer:
    """The hardware node's services, taken by hand: the first request of each is left unanswered
    (its answer "lost"), the later ones answered. ``requests``: service name -> requests taken."""

    def __init__(self):
        self.client = RosClient("ctl_resend_server")
        node = self.client.node
        self.services = {"status": node.create_service(Trigger, f"/{NODE}/status", lambda q, r: r),
                         "emergency_stop": node.create_service(Trigger, f"/{NODE}/emergency_stop", lambda q, r: r),
                         "reset": node.create_service(Trigger, f"/{NODE}/reset", lambda q, r: r),
                         "pause": node.create_service(SetBool, f"/{NODE}/pause", lambda q, r: r)}
        self.requests = dict.fromkeys(self.services, 0)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.done.is_set():
            for name, srv in self.services.items():
                with srv.handle:
                    request, header = srv.handle.service_take_request(srv.srv_type.Request)
                if request is None:
                    continue
                self.requests[name] += 1
                if self.requests[name] > 1:
                    answer = srv.srv_type.Response(success=True)
                    answer.message = json.dumps({"active": True, "stopped": False}) if name == "status" else "ok"
                    srv.send_response(answer, header)
            time.sleep(0.005)

    def close(self):
        self.done.set()
        self.thread.join(5)
        self.client.close()


@pytest.fixture
def server():
    s = LossyServer()
    try:
        yield s
    finally:
        s.close()


def ctl(*args, timeout: float):
    """Run ``delta-ctl --timeout <timeout> args`` against the lossy server."""
    return subprocess.run([sys.executable, "-m", "delta_bringup.ctl", "--node", NODE, "--timeout", f"{timeout:g}", *args],
                          capture_output=True, text=True, timeout=timeout + patient(60))


@pytest.mark.parametrize("command, service", [("status", "status"), ("estop", "emergency_stop"),
                                              ("pause", "pause")])
def test_a_query_a_stop_and_a_pause_are_sent_again_until_answered(server, command, service):
    out = ctl(command, timeout=patient(20.0))
    assert out.returncode == 0, out.stdout + out.stderr
    assert server.requests[service] >= 2


def test_a_reset_is_sent_once_and_its_lost_answer_reported(server):
    wait = patient(6.0)                      # discovery first: a loaded host takes seconds
    out = ctl("reset", timeout=wait)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1] == f"delta-ctl: /{NODE}/reset did not answer within {wait:g} s", \
        out.stderr
    assert server.requests["reset"] == 1
