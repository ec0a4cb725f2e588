"""Helpers for the CANopen tests: unique virtual channels, a frame recorder on the bus, the
simulated drives and the backend on the same channel, and ``delta-drive-sim`` in a process
of its own."""
from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import can
import canopen

from delta_core.robot_file import load_robot
from delta_hardware.canopen.axis import Axis
from delta_hardware.canopen.backend import CanopenDriveSet
from delta_hardware.canopen.bus import open_bus
from delta_hardware.canopen.config import load_drives_config
from delta_hardware.canopen.drive_sim import SimulatedCia402Drives

_counter = itertools.count()


def unique_channel(prefix="t") -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


class Frames(can.Listener):
    """Every frame on a channel, with its timestamp (time.time of the sender's send)."""

    def __init__(self, channel, interface="virtual"):
        self.frames = []
        self._lock = threading.Lock()
        self._where = dict(interface=interface, channel=channel)
        self.bus = can.Bus(interface=interface, channel=channel)
        self.notifier = can.Notifier(self.bus, [self], timeout=0.05)

    def on_message_received(self, msg):
        with self._lock:
            self.frames.append((msg.timestamp, msg.arbitration_id, bytes(msg.data)))

    def mark(self) -> int:
        with self._lock:
            return len(self.frames)

    #: the id of the marker frame of :meth:`mark_sent` (no node of the tests uses node ID 127)
    MARKER = 0x7FF

    def mark_sent(self, timeout: float = 10.0) -> int:
        """The mark after every frame sent on the channel so far, however far this listener's
        thread is behind (a busy host): a marker frame sent now, from a bus of its own, is queued
        behind them; wait until it is received. (``mark`` counts only what was received.)"""
        n = self.mark()
        sender = can.Bus(**self._where)
        try:
            sender.send(can.Message(arbitration_id=self.MARKER, data=b"mark", is_extended_id=False))
        finally:
            sender.shutdown()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for k in range(n, len(self.frames)):
                    if self.frames[k][1] == self.MARKER:
                        return k + 1
            time.sleep(0.005)
        raise AssertionError(f"the marker frame did not arrive within {timeout} s")

    def since(self, n=0):
        with self._lock:
            return list(self.frames[n:])

    def wait_for(self, n, count, cobs, timeout=2.0):
        """Frames since mark ``n`` once ``count`` of them have an id in ``cobs``: this
        listener's thread may still be behind the bus when the sender already has its
        answers."""
        deadline = time.monotonic() + timeout
        while True:
            rec = self.since(n)
            if sum(cob in cobs for _, cob, _ in rec) >= count or time.monotonic() > deadline:
                return rec
            time.sleep(0.005)

    def close(self):
        self.notifier.stop(1.0)
        self.bus.shutdown()


def drives_on(channel, config="generic_cia402", rate=500.0, **overrides):
    """The backend on ``channel``; overrides merged over the config. For tests that must not
    depend on the machine's load: read() waits up to 0.5 s for this cycle's TPDOs (they
    always come, in one process), an SDO answer up to 0.5 s, and the heartbeat consumer
    time is 1 s (the heartbeat tests set them back)."""
    over = {"timing": {"tpdo_timeout": 0.5, "sdo_timeout": 0.5}, "heartbeat": {"timeout_ms": 1000}}
    for k, v in overrides.items():
        over[k] = {**over.get(k, {}), **v} if isinstance(v, dict) else v
    return CanopenDriveSet("nt_robot", "virtual", channel, config, rate=rate, config_overrides=over)


def sim_on(channel, config="generic_cia402", **kw):
    return SimulatedCia402Drives("nt_robot", "virtual", channel, config, **kw)


def bare_axes(channel, config="generic_cia402", overrides=None, interface="virtual"):
    """Without the backend, for the tests of one service alone: a canopen network on
    ``channel`` and one :class:`Axis` per drive of the config. Returns (network, axes, cfg);
    disconnect the network afterwards. SDO answers may take 0.5 s (a loaded machine)."""
    robot = load_robot("nt_robot")
    over = dict(overrides or {})
    over["timing"] = {"sdo_timeout": 0.5, **over.get("timing", {})}
    cfg = load_drives_config(config, robot, over)
    net = canopen.Network(open_bus(interface, channel))
    net.NOTIFIER_CYCLE = 0.05
    lock = threading.Condition()
    axes = []
    for i, node_id in enumerate(cfg.node_ids):
        node = canopen.RemoteNode(node_id, cfg.object_dictionary(node_id))
        node.sdo.RESPONSE_TIMEOUT = cfg.sdo_timeout
        node.sdo.MAX_RETRIES = 1
        net.add_node(node)
        axes.append(Axis(i, node_id, robot.joint_names[i], cfg.axes[i], node, cfg.catalogue, lock))
    net.connect()
    return net, axes, cfg


def wait_until(pred, timeout=2.0, step=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


ROOT = Path(__file__).resolve().parent.parent


def multicast_channel(offset: int = 0) -> str:
    """A ``udp_multicast`` channel with a UDP port of this test process's own (Linux hands a
    port's datagrams to every socket bound to it, whatever group it joined)."""
    return f"239.74.163.2:{44000 + (os.getpid() * 7 + offset) % 1500}"


class SimProcess:
    """``delta-drive-sim`` in its own process; ``background``: started as a shell's background
    job (SIGINT ignored, as ``cmd &`` in a script does)."""

    def __init__(self, *args, background: bool = False, timeout: float = 30.0):
        cmd = [sys.executable, "-m", "delta_hardware.canopen.sim_cli", *map(str, args)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=pre)
        self.lines = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                self.lines.append(line.rstrip())
                if "Ctrl-C to stop" in line:
                    return
        out, err = self.stop()
        raise RuntimeError(f"delta-drive-sim did not start (exit {self.proc.returncode}):\n{out}\n{err}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, sig=signal.SIGINT, timeout: float = 20.0):
        """Send ``sig`` (if running; continued first if stopped) and wait: (stdout, stderr) of
        the whole run."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return "\n".join(self.lines + out.splitlines()), err
