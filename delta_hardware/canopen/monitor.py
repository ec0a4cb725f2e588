"""Supervision of the drives: heartbeat consumer (CiA 301 7.2.8.3.2), EMCY consumer
(CiA 301 7.2.7), NMT state, the drive's own fault in its statusword, and drives whose TPDOs
stopped answering the SYNC.

Each finding puts a reason text under the axis in the backend's fault table (the first
reason per axis stays, except that an EMCY replaces a bare "the drive is in fault"):

* **heartbeat lost**: none for longer than the consumer time ``heartbeat.timeout_ms`` (the
  drive is marked ``lost``: the exchange no longer waits for its TPDOs). The
  master's own stalls do not count: after a control cycle that came more than ``max_stall``
  late (the loop quick-stops for that itself), heartbeats are judged from that cycle on, since
  the ones that arrived meanwhile may not have been read yet;
* **left NMT operational**: a heartbeat reports another state (a reboot sends boot-up);
* **in fault**: the statusword (TPDO or SDO) shows fault; the error code comes with it;
* **silent**: no TPDO answer for ``ceil(max_stall * rate)`` control cycles in a row (the drives
  cannot run longer on their last targets: the exchange waits for a drive that owes TPDOs for
  more than ``timing.tpdo_misses`` cycles, :mod:`.cyclic`). Counted in cycles, not seconds, so
  a master that is itself late does not blame the drives; a silent drive is marked ``lost``.
  Single lost frames are not: the last values are held and counted (:mod:`.cyclic`).
"""
from __future__ import annotations

import math
import time

from delta_hardware import cia402
from delta_hardware.cia402 import State
from delta_hardware.canopen.startup import NMT_OPERATIONAL, nmt_name


class Monitor:
    """Heartbeat, EMCY, NMT and silence supervision of ``axes``.

    ``faults`` (axis index -> reason) and ``lock`` are the backend's; ``rate`` is the control
    (SYNC) rate. :meth:`check` is called by every reader of the state; :meth:`loop_cycle` and
    :meth:`count_silence` once per control cycle. Nothing is judged before :attr:`active`
    is set (after start-up).
    """

    def __init__(self, axes, cfg, lock, faults: dict, rate: float):
        self.axes = axes
        self.cfg = cfg
        self.lock = lock
        self.faults = faults
        self.rate = float(rate)
        self.consumer_time = cfg.heartbeat_timeout
        self.max_stall = cfg.max_stall
        self.silence_limit = max(2, int(math.ceil(cfg.max_stall * self.rate - 1e-9)))
        self.tolerance = cfg.tpdo_misses
        self.active = False
        self.emcy_log: list = []                  # (axis, code, register, monotonic time)
        self.resumed_at = -math.inf                # end of the master's last stall > max_stall
        self._last_cycle = None

    def attach(self, ax) -> None:
        """Subscribe to the EMCY and heartbeat messages of the drive ``ax``."""
        ax.node.emcy.add_callback(lambda e, ax=ax: self.on_emcy(ax, e))
        ax.node.nmt.add_heartbeat_callback(lambda s, ax=ax: self.on_heartbeat(ax, s))

    # ------------------------------------------------------------------ bus callbacks (notifier thread)
    def on_heartbeat(self, ax, state: int) -> None:
        """Heartbeat of drive ``ax`` (notifier thread): note when it was heard and the NMT state it reported."""
        ax.hb_time = time.monotonic()
        ax.hb_state = state

    def on_emcy(self, ax, e) -> None:
        """EMCY of drive ``ax`` (notifier thread): log it and, unless it is "error reset / no error", record
        the fault (its text replaces a plain "the drive is in fault")."""
        self.emcy_log.append((ax.index, e.code, e.register, time.monotonic()))
        if e.code & 0xFF00 == 0:
            return                                     # error reset / no error
        with self.lock:
            old = self.faults.get(ax.index, "")
            if not old or old.startswith("the drive is in fault"):     # the EMCY says more
                self.faults[ax.index] = (f"EMCY {cia402.error_text(e.code)}, error register "
                                         f"0x{e.register:02X}, node {ax.node_id}")

    # ------------------------------------------------------------------ per control cycle
    def loop_cycle(self, now: float) -> None:
        """A control cycle at ``now``: remember the end of a master stall longer than max_stall."""
        if self._last_cycle is not None and now - self._last_cycle > self.max_stall:
            self.resumed_at = now
        self._last_cycle = now

    def count_silence(self, missing) -> None:
        """One control cycle passed; ``missing``: indices of the axes whose TPDOs of the last
        SYNC are not all in. ``silence_limit`` cycles in a row: the drive is lost."""
        with self.lock:
            for ax in self.axes:
                if ax.index not in missing:
                    ax.silent_cycles = 0
                    continue
                ax.silent_cycles += 1
                if self.active and ax.silent_cycles >= self.silence_limit and not ax.lost:
                    self.mark_lost(ax)
                    self.faults.setdefault(ax.index, (
                        f"no TPDO for {ax.silent_cycles} cycles in a row ({ax.silent_cycles / self.rate:.2f} s; "
                        f"max_stall {self.max_stall * 1e3:.0f} ms), node {ax.node_id}"))

    @staticmethod
    def mark_lost(ax, silent: bool = True) -> None:
        """``ax`` is gone: the exchange no longer waits for its TPDOs. ``silent``: its TPDOs
        (or an SDO answer) stopped, so an SDO to it would only wait for its timeout."""
        if not ax.lost:
            ax.lost = True
            ax.lost_time = time.monotonic()
        ax.silent = ax.silent or silent

    # ------------------------------------------------------------------ any thread
    def responsive(self, ax) -> bool:
        """Whether ``ax`` answers (worth an SDO now): not found silent, and its TPDOs missing
        for no more cycles in a row than the lost frames tolerated (``timing.tpdo_misses``).
        A drive whose heartbeat alone is lost may still answer."""
        return not ax.silent and ax.silent_cycles <= max(self.tolerance, 1)

    def heartbeat_age(self, ax, now: float) -> float:
        """Seconds without a heartbeat from ``ax``, not counting the master's own long stalls."""
        return now - max(ax.hb_time, self.resumed_at)

    def check(self, now: float | None = None) -> None:
        """Record a fault for each drive whose heartbeat is lost, that left NMT operational,
        or whose statusword shows fault."""
        if not self.active:
            return
        now = time.monotonic() if now is None else now
        with self.lock:
            for ax in self.axes:
                if ax.index in self.faults:
                    continue
                if ax.hb_time is None or self.heartbeat_age(ax, now) > self.consumer_time:
                    age = "ever" if ax.hb_time is None else f"{now - ax.hb_time:.2f} s"
                    self.faults[ax.index] = (f"heartbeat lost: none for {age} "
                                             f"(consumer time {self.consumer_time * 1e3:.0f} ms), node {ax.node_id}")
                    self.mark_lost(ax, silent=False)    # gone: SYNC no longer waits for it
                elif ax.hb_state != NMT_OPERATIONAL:
                    self.faults[ax.index] = (f"the drive left NMT operational (heartbeat reports "
                                             f"{nmt_name(ax.hb_state)}), node {ax.node_id}")
                elif ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE):
                    self.faults[ax.index] = self.fault_text(ax)

    @staticmethod
    def fault_text(ax) -> str:
        """The fault reason of drive ``ax`` whose statusword shows fault, with its last error code."""
        return (f"the drive is in fault, error code {cia402.error_text(ax.values.get('error_code', 0))}, "
                f"node {ax.node_id}")

    def clear(self, ax) -> None:
        """After a successful reset of ``ax``: forget its silence and loss."""
        with self.lock:
            self.faults.pop(ax.index, None)
            ax.silent_cycles = 0
            ax.lost = ax.silent = False
            ax.lost_time = None
