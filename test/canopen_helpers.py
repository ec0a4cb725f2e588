"""Helpers for the CANopen tests: unique virtual channels, a frame recorder on the bus, the
simulated drives and the backend on the same channel."""
from __future__ import annotations

import itertools
import os
import threading
import time

import can

from delta_hardware.canopen.backend import CanopenDriveSet
from delta_hardware.canopen.drive_sim import SimulatedCia402Drives

_counter = itertools.count()


def unique_channel(prefix="t") -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


class Frames(can.Listener):
    """Every frame on a channel, with its timestamp (time.time of the sender's send)."""

    def __init__(self, channel, interface="virtual"):
        self.frames = []
        self._lock = threading.Lock()
        self.bus = can.Bus(interface=interface, channel=channel)
        self.notifier = can.Notifier(self.bus, [self], timeout=0.05)

    def on_message_received(self, msg):
        with self._lock:
            self.frames.append((msg.timestamp, msg.arbitration_id, bytes(msg.data)))

    def mark(self) -> int:
        with self._lock:
            return len(self.frames)

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
    always come, in one process), and the heartbeat consumer time is 1 s (the heartbeat
    tests set both back)."""
    over = {"timing": {"tpdo_timeout": 0.5}, "heartbeat": {"timeout_ms": 1000}}
    for k, v in overrides.items():
        over[k] = {**over.get(k, {}), **v} if isinstance(v, dict) else v
    return CanopenDriveSet("nt_robot", "virtual", channel, config, rate=rate, config_overrides=over)


def sim_on(channel, config="generic_cia402", **kw):
    return SimulatedCia402Drives("nt_robot", "virtual", channel, config, **kw)


def wait_until(pred, timeout=2.0, step=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
