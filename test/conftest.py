"""Test-session setup shared by all tests.

Set at import time (before any test or rclpy import) so every subprocess a test
spawns inherits the same values.
"""
import fcntl
import os
import sys
import tempfile

# A ROS domain of its own per test run, so parallel runs / CI jobs on one host don't see each
# other's topics. Fast DDS accepts 0..101 (port range); we use 10..99. The domain is held by
# an exclusive lock on a file for as long as this process lives (released by the kernel when
# it ends, however it ends), so two runs on one host never share a domain; the pid only picks
# where the search starts.
_DOMAINS = range(10, 100)
_LOCK_DIR = os.path.join(tempfile.gettempdir(), "delta_robot_ros_domains")


def _claim_domain() -> int:
    os.makedirs(_LOCK_DIR, exist_ok=True)
    start = os.getpid() % len(_DOMAINS)
    for k in range(len(_DOMAINS)):
        domain = _DOMAINS[(start + k) % len(_DOMAINS)]
        fd = os.open(os.path.join(_LOCK_DIR, f"{domain}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        globals()["_DOMAIN_LOCK_FD"] = fd       # kept open: the lock lives as long as we do
        return domain
    raise RuntimeError(f"every ROS domain {_DOMAINS.start}..{_DOMAINS.stop - 1} is held by another "
                       f"test run on this host (locks in {_LOCK_DIR})")


# A pytest run inside a test inherits ours; each pytest-xdist worker (make test runs three) claims
# its own, so the workers' nodes, which share names, never meet.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
if os.environ.get("DELTA_TEST_DOMAIN_CLAIMED") != _WORKER:
    os.environ['ROS_DOMAIN_ID'] = str(_claim_domain())
    os.environ["DELTA_TEST_DOMAIN_CLAIMED"] = _WORKER
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
# the ROS wheels find their share files through the ament index (make sets it; plain pytest too)
os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
