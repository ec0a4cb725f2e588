"""The cyclic exchange (CiA 301 7.2.2 PDO, 7.2.5 SYNC): RPDOs out, SYNC, TPDOs back.

One control cycle of the backend::

    cycle():  SYNC k                     drives: step one period under the targets latched
                                                 at SYNC k-1, sample, TPDOs, latch the RPDOs
                                                 received since SYNC k-1
    read():   wait (bounded) for the TPDOs of SYNC k  ->  actual values of time k
    write():  RPDOs at once              drives: store them; latched at SYNC k+1

Synchronous RPDOs take effect at the next SYNC, so a target computed from the feedback of
SYNC k acts from SYNC k+1 on: one period of latency, the least a SYNC-driven bus allows.

**A lost frame is tolerated; a drive that falls behind gets no SYNC to pile up.** Real buses
lose frames (error frames, a busy bus, a host that drops datagrams). A drive whose TPDOs of the
last SYNC are not all in when the next cycle begins keeps its last values (the feedback cache
holds them), the frames are counted per axis (``Axis.tpdo_missed``, in the diagnostics) and
the next SYNC goes out as usual: up to ``tolerance`` cycles in a row (``timing.tpdo_misses``).
A drive that owes TPDOs for more cycles than that is behind or gone, and while the drives run
on targets :meth:`CyclicExchange.sync` then sends no new SYNC (the cycle is *withheld*):
simulated drives on a busy host, or a drive process paused, would otherwise find a backlog of
SYNCs in their receive queue, each one an interpolation period to run under their last
targets, so such a drive slows the exchange instead of running ahead of its master. But a
drive that is alive (its heartbeat came after the SYNC it owes was sent) and still silent did
not get that SYNC (a frame lost on the way to it): it gets a new one (``stats["resynced"]``).
A withheld cycle advances nothing: ``cycle()`` tells the loop so, and the loop's trajectory waits too
(no jump of the position target when SYNC resumes). A drive silent for ``max_stall`` is
declared lost by :mod:`.monitor` (a fault: every axis is stopped) and no longer waited for.
The same holds while the drives are stopped or disabled: a slow drive's queue never fills with
SYNCs, nor do its answers to SDO (a fault reset, the disable at exit) wait behind them; the
feedback of the others keeps coming, and a drive found lost is not waited for. (The backend
sends the stop command on the RPDOs only until each drive's statusword shows that it holds,
so a stopped bus carries SYNC and TPDOs alone.)

**State commands on the RPDO.** A synchronous RPDO received before a SYNC is latched at that
SYNC whatever the master decided meanwhile: a controlword *enable operation* (0x000F) in
flight undoes a quick stop given by SDO (CiA 402 transition 16, with quick stop option code
5-8). So from the moment a stop is decided every RPDO carries the stop
(:meth:`CyclicExchange.transmit_command`: controlword quick stop 0x0002, or disable voltage
0x0000, with zero torque and velocity targets and offsets and the position target held), sent
at once, overriding what was in flight, and again before every SYNC; the drive's statusword
in the TPDOs of the following SYNCs confirms it. The same rides to a drive that does not
answer SDO: whenever it listens again, the first SYNC it latches carries the stop.

**Velocity from positions.** A drive whose TPDOs carry no ``velocity_actual`` (one PDO each way
per drive, what a 1 Mbit/s bus carries at 1 kHz: ``generic_cia402_1khz``) reports its velocity
as the difference of its last two positions over the SYNCs between them:
``v_k = (p_k - p_j) / ((k - j) T)`` with ``T`` the interpolation period (0x60C2; the drive
samples at each SYNC, and a simulated drive steps exactly ``T`` per SYNC); 0 until the drive has
answered two SYNCs since it was configured. A backward difference is half a period late against
a drive's own velocity: at 1 kHz, 0.5 ms.
"""
from __future__ import annotations

import struct
import time

import numpy as np

from delta_hardware.cia402 import Command


class Ring:
    """The last ``size`` samples of a statistic (e.g. SYNC periods), with a summary in ms."""

    def __init__(self, size: int = 10000):
        self.a = np.zeros(size)
        self.n = 0

    def add(self, v: float) -> None:
        """Append the sample ``v`` (overwriting the oldest once full)."""
        self.a[self.n % len(self.a)] = v
        self.n += 1

    def values(self) -> np.ndarray:
        """The samples kept (at most ``size``), in ring order (not time order once it has wrapped)."""
        return self.a[:min(self.n, len(self.a))]

    def summary(self, scale: float = 1e3) -> dict:
        """``mean``, ``p50``, ``p99``, ``max`` and ``std`` of the samples times ``scale`` (default s -> ms);
        ``{}`` without samples."""
        v = self.values()
        if not len(v):
            return {}
        return {"mean": scale * float(v.mean()), "p50": scale * float(np.percentile(v, 50)),
                "p99": scale * float(np.percentile(v, 99)), "max": scale * float(v.max()),
                "std": scale * float(v.std())}


def hold_targets(counts: int | None = None) -> dict:
    """Targets that move nothing: controlword enable operation, target position ``counts``
    (the actual position), every velocity and torque 0."""
    return {"controlword": Command.ENABLE_OPERATION.value, "target_position": counts or 0,
            "target_velocity": 0, "target_torque": 0, "velocity_offset": 0, "torque_offset": 0}


class CyclicExchange:
    """SYNC, RPDOs and TPDOs of ``axes`` on ``network``.

    ``lock`` (a ``threading.Condition``) guards the feedback cache of the axes and the SYNC
    bookkeeping; TPDO arrival notifies it. ``tpdo_timeout``: how long :meth:`wait` waits
    after the cycle began. ``stats``: ``syncs`` sent, ``withheld`` cycles, ``late`` reads,
    ``rpdo_frames``, ``sync_period`` and ``latency`` (SYNC -> all TPDOs) rings.
    ``tolerance``: cycles in a row a drive may owe TPDOs before SYNC waits for it (see the
    module docstring); the axes' ``silent_cycles`` count them (:mod:`.monitor`).
    ``recorder(kind, time, data)``, if set: ``"sync"`` with the targets the drives latch at
    that SYNC (one dict per axis, or None if none were sent since the previous one),
    ``"tpdo"`` with (axis index, {object: value}).
    """

    def __init__(self, network, axes, lock, tpdo_timeout: float, tolerance: int = 3):
        self.network = network
        self.axes = axes
        self.lock = lock
        self.tpdo_timeout = tpdo_timeout
        self.tolerance = int(tolerance)
        self.stats = {"syncs": 0, "late": 0, "withheld": 0, "resynced": 0, "rpdo_frames": 0,
                      "sync_period": Ring(), "latency": Ring()}
        self.recorder = None
        self.sync_time = 0.0
        self._expected: set = set()              # (axis, slot) that owe a TPDO for the last SYNC
        self._got: set = set()
        self._cycle = 0                          # control cycles begun (SYNC sent or withheld)
        self._cycle_time = 0.0
        self._read_cycle = -1                    # the cycle whose answers read() waited for
        self._fresh = False
        self._last_sync_sent = None
        self._latched = None                     # targets sent since the last SYNC (recorder)
        self._counted = True                     # the missing TPDOs of the last SYNC are counted
        #: the interpolation period (s) by which positions are differentiated for axes whose
        #: TPDOs carry no velocity_actual (see the module docstring)
        self.velocity_period = None
        self._last_position: dict = {}           # axis index -> (SYNC number, position_actual)
        self._sync_number = 0                    # SYNCs sent, counted under the lock before sending

    # ------------------------------------------------------------------ TPDOs (notifier thread)
    def attach(self, ax) -> None:
        """Decode the TPDOs of ``ax`` as mapped now (after :func:`.pdo_map.map_pdos`)."""
        for p in ax.tpdos:
            if p.callback is None:
                p.callback = lambda cid, data, ts, ax=ax, p=p: self._on_tpdo(ax, p, data)
                self.network.subscribe(p.cob_id, p.callback)

    def detach(self, ax) -> None:
        """Stop decoding the TPDOs of ``ax`` (undo :meth:`attach`)."""
        for p in ax.tpdos:
            if p.callback is not None:
                try:
                    self.network.unsubscribe(p.cob_id, p.callback)
                except (KeyError, ValueError):
                    pass
                p.callback = None

    def _on_tpdo(self, ax, p, data) -> None:
        now = time.monotonic()
        try:
            values = p.unpack(data)
        except struct.error:
            return
        with self.lock:
            stamp = self.sync_time
            for name, v in values.items():
                if name == "statusword":
                    if stamp < ax.stamp:
                        continue                       # older than an SDO read of the statusword
                    ax.stamp = stamp
                ax.values[name] = v
            if ax.derive_velocity and "position_actual" in values:
                self._differentiate(ax, values["position_actual"])
            if self.recorder is not None:
                self.recorder("tpdo", now, (ax.index, values))
            key = (ax.index, p.slot)
            if key in self._expected and key not in self._got:
                self._got.add(key)
                if not self._missing():
                    self.stats["latency"].add(now - self.sync_time)
                    self.lock.notify_all()

    def _differentiate(self, ax, position: int) -> None:
        k = self._sync_number
        last = self._last_position.get(ax.index)
        if last is not None and k > last[0] and self.velocity_period:
            counts_per_s = (position - last[1]) / ((k - last[0]) * self.velocity_period)
            ax.values["velocity_actual"] = counts_per_s / ax.units.counts_per_velocity_unit
        if last is None or k > last[0]:
            self._last_position[ax.index] = (k, position)

    def _missing(self) -> set:
        return {i for i, s in self._expected if (i, s) not in self._got and not self.axes[i].lost}

    def missing(self) -> set:
        """Indices of the axes (not lost) whose TPDOs of the last SYNC are not all in."""
        with self.lock:
            return self._missing()

    # ------------------------------------------------------------------ RPDOs
    def transmit(self, commands) -> int:
        """Send the RPDOs of every axis with ``commands`` (one dict of object values per
        axis) now; the drives latch them at the next SYNC. Returns the number of frames."""
        frames = [(p.cob_id, p.pack(c)) for ax, c in zip(self.axes, commands) for p in ax.rpdos]
        for cob, data in frames:
            self.network.send_message(cob, data)
        self.stats["rpdo_frames"] += len(frames)
        self._latched = [dict(c) for c in commands]
        return len(frames)

    def transmit_command(self, ax, command, position: int | None) -> None:
        """The RPDOs of ``ax`` with the controlword of ``command`` (a :class:`Command`: quick
        stop 0x0002, disable voltage 0x0000; or a controlword value), zero torque and velocity
        targets and offsets and the position target ``position`` (increments: the drive's
        actual position)."""
        c = dict(hold_targets(position), controlword=getattr(command, "value", command))
        for p in ax.rpdos:
            self.network.send_message(p.cob_id, p.pack(c))
        self.stats["rpdo_frames"] += len(ax.rpdos)
        if self._latched is None:
            self._latched = [None] * len(self.axes)
        self._latched[ax.index] = c

    # ------------------------------------------------------------------ SYNC
    def begin_cycle(self, now: float) -> set:
        """A control cycle begins: returns the axes still owing TPDOs of the last SYNC (for
        :meth:`.monitor.Monitor.count_silence`); the frames they owe are counted as missed
        (once per SYNC)."""
        with self.lock:
            self._cycle += 1
            self._cycle_time = now
            missing = self._missing()
            if not self._counted:
                self._counted = True
                for i, slot in self._expected - self._got:
                    ax = self.axes[i]
                    if not ax.lost:
                        ax.tpdo_missed += 1
                        ax.tpdo_missed_time = now
            return missing

    def restart(self) -> None:
        """Forget the TPDOs owed for the last SYNC (after a reset or enable: a drive
        configured again does not answer a SYNC from before)."""
        with self.lock:
            self._expected = set()
            self._got = set()
            self._last_position = {}
            for ax in self.axes:
                if ax.derive_velocity:
                    ax.values["velocity_actual"] = 0

    def sync(self, now: float, wait_for_answers: bool = True) -> bool:
        """Send SYNC; but with ``wait_for_answers`` (the backend's way) not while a drive that
        is not lost has owed TPDOs for more than ``tolerance`` cycles in a row, unless its
        heartbeat came after the last SYNC was sent: then the cycle is withheld (returns
        False). Raises python-can's errors."""
        with self.lock:
            behind = [self.axes[i] for i in self._missing() if self.axes[i].silent_cycles > self.tolerance]
            if wait_for_answers and behind:
                if all(ax.hb_time is not None and ax.hb_time > self.sync_time for ax in behind):
                    self.stats["resynced"] += 1         # alive, but that SYNC never reached it
                else:
                    self.stats["withheld"] += 1
                    return False
            self._got = set()
            self._counted = False
            self._expected = {(ax.index, p.slot) for ax in self.axes if not ax.lost for p in ax.tpdos}
            self.sync_time = now
            self._sync_number += 1                  # before it goes out: its answers may come at once
            latched, self._latched = self._latched, None
        try:
            self.network.sync.transmit()
        except Exception:
            with self.lock:
                self._expected = set()              # nothing owed for a SYNC that did not go out
                self._sync_number -= 1
            raise
        if self._last_sync_sent is not None:
            self.stats["sync_period"].add(now - self._last_sync_sent)
        self._last_sync_sent = now
        self.stats["syncs"] += 1
        if self.recorder is not None:
            self.recorder("sync", now, latched)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait (once per control cycle, until ``tpdo_timeout`` after the cycle began, or
        ``timeout`` s from now) for the TPDOs of the last SYNC. True if they are all in
        (the feedback is of the last SYNC); a cycle whose wait ends without them counts as
        late."""
        with self.lock:
            if timeout is None:
                if self._read_cycle == self._cycle:
                    return self._fresh
                self._read_cycle = self._cycle
                deadline = self._cycle_time + self.tpdo_timeout
            else:
                deadline = time.monotonic() + timeout
            while self._missing():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.lock.wait(left)
            self._fresh = not self._missing()
            if not self._fresh and timeout is None:
                self.stats["late"] += 1
            return self._fresh
