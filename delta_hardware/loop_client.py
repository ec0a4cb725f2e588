"""The hardware node's handle on its control-loop process (:mod:`delta_hardware.loop_process`),
without ROS: start it, ask it, read what it produces.

:class:`LoopClient` starts the process, sends it the :class:`~delta_hardware.loop_config.LoopSpec`
and then offers what the node and its FollowJointTrajectory server need of a loop:
requests (``request``: answered, with a timeout; ``send``: fire and forget, a refusal comes back
through ``on_refusal``), trajectory plans over the bulk socket (:meth:`submit_plan`), the newest
cycle (:meth:`latest`, :meth:`current_setpoint`, :meth:`limits`, :meth:`now`), and the records
and events in order for the broadcaster (:meth:`take_records`, :meth:`take_events`).

Every request carries the time it was received (``rx``, ``time.time_ns()``; for DDS requests
the middleware's reception stamp): the loop voids a reset, plan or command received before its
latest stop (:meth:`~delta_hardware.control_loop.ControlLoop.reset`).

A process that stops answering (``REQUEST_TIMEOUT``) or ends is reported once through
``on_lost``; its drives are disabled by the process itself (or, if it was killed, by the
drives' own watchdogs: nothing of the node can reach them).
"""
from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from delta_hardware.drives.interface import DriveError, DriveState, Feedback
from delta_hardware.loop_link import (FLAG_SETPOINT, FLAG_STOPPED, LOST, SharedBlock, recv_message,
                                      send_message, wait_doorbell)
from delta_hardware.joint_plan import Setpoint

#: s a request waits for its answer by default (the loop process answers in well under a
#: millisecond; a slow step, enabling CANopen drives, takes longer: see the callers)
REQUEST_TIMEOUT = 2.0
#: s the loop process may leave a request unread (its socket buffer full) before it counts as hung
SEND_TIMEOUT = 5.0
#: s a trajectory plan may take to be taken by the loop process (MBs for 10^5 points)
PLAN_TIMEOUT = 20.0
#: s the process gets to start (imports, the model, the drives) and to end
START_TIMEOUT = 120.0
STOP_TIMEOUT = 10.0


class LoopUnavailable(DriveError):
    """The control-loop process is not there or does not answer."""


class LoopClient:
    """The node's side of one control-loop process (module docstring).

    ``on_failure(text)``: the loop thread died (its drives are quick-stopped); ``on_lost(text)``:
    the process ended or stopped answering; ``on_refusal(op, text)``: a fire-and-forget request
    was refused. All are called from the client's reply thread."""

    def __init__(self, spec, on_failure=None, on_lost=None, on_refusal=None, python: str = sys.executable):
        self.spec = spec
        self.on_failure, self.on_lost, self.on_refusal = on_failure, on_lost, on_refusal
        self.python = python
        self.proc = None
        self.block = None
        self.info: dict = {}
        self._seq = itertools.count(1)
        self._waiters: dict = {}
        self._waiters_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._bulk_lock = threading.Lock()
        self._reader = 0                     # next state record to take
        self._event_reader = 0
        self._closing = False
        self._lost = ""
        self.stop_ns = 0                     # reception time of the latest e-stop asked for here
        self.failure = ""                    # why the loop thread died (its drives quick-stopped)
        self._stop_reason = ""
        self._plans = itertools.count(1)

    # ------------------------------------------------------------------ life
    def start(self, timeout: float = START_TIMEOUT) -> dict:
        """Start the process and build the loop there; what it says of its drives (``simulated``,
        ``max_stall``, ``period``, ``pid``). DriveError (or ValueError) with the reason if it
        cannot be built; then nothing is left running."""
        spec = self.spec
        self.block = SharedBlock.create(ring=spec.ring, events=spec.events)
        self.control, control = socket.socketpair()
        self.bulk, bulk = socket.socketpair()
        self.doorbell, bell = os.pipe()
        os.set_blocking(bell, False)
        for s in (self.control, self.bulk):
            s.setblocking(False)
        fds = (control.fileno(), bulk.fileno(), self.block.fd, bell)
        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "delta_hardware.loop_process", "--control", str(fds[0]), "--bulk", str(fds[1]),
                 "--block", str(fds[2]), "--doorbell", str(fds[3])],
                pass_fds=fds, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            control.close()
            bulk.close()
            os.close(bell)
        threading.Thread(target=self._read_replies, name="delta_loop_replies", daemon=True).start()
        try:
            reply = self.request("start", timeout=timeout, spec=spec)
        except LoopUnavailable:
            self.close()
            raise
        if not reply["ok"]:
            self.close()
            raise DriveError(reply["message"])
        self.info = reply
        return reply

    def close(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """End the process (its drives disabled), wait for it (SIGKILL after ``timeout``); its
        exit status."""
        self._closing = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                send_message(self.control, {"op": "close", "seq": 0}, self._send_lock, timeout=1.0)
            except (OSError, TimeoutError, ValueError):
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for s in (getattr(self, "control", None), getattr(self, "bulk", None)):
            if s is not None:
                s.close()
        return None if proc is None else proc.returncode

    def alive(self) -> bool:
        """Whether the process runs and its link has not been lost."""
        return self.proc is not None and self.proc.poll() is None and not self._lost

    # ------------------------------------------------------------------ requests
    def request(self, op: str, timeout: float = REQUEST_TIMEOUT, rx: int | None = None, **args) -> dict:
        """Send request ``op`` and wait for its answer ({"ok", "message", ...});
        LoopUnavailable if none comes within ``timeout`` s."""
        rx = rx or time.time_ns()
        if op == "estop":
            self.stop_ns = max(self.stop_ns, rx)
        seq = next(self._seq)
        done = threading.Event()
        slot = [done, None]
        with self._waiters_lock:
            self._waiters[seq] = slot
        try:
            self._send(self.control, self._send_lock, {"op": op, "seq": seq, "rx": rx or time.time_ns(), **args},
                       SEND_TIMEOUT)
            if not done.wait(timeout):
                raise LoopUnavailable(f"the control loop did not answer ({op}) within {timeout:g} s")
            return slot[1]
        finally:
            with self._waiters_lock:
                self._waiters.pop(seq, None)

    def ask(self, op: str, timeout: float = REQUEST_TIMEOUT, rx: int | None = None, **args) -> dict:
        """:meth:`request`, and DriveError with the loop's reason if it refuses."""
        reply = self.request(op, timeout=timeout, rx=rx, **args)
        if not reply["ok"]:
            raise DriveError(reply["message"])
        return reply

    def send(self, op: str, rx: int | None = None, **args) -> None:
        """Send request ``op`` without waiting; a refusal comes to ``on_refusal``."""
        self._send(self.control, self._send_lock, {"op": op, "seq": -next(self._seq), "rx": rx or time.time_ns(),
                                                   **args}, SEND_TIMEOUT)

    def submit_plan(self, plan, rx: int | None = None, timeout: float = PLAN_TIMEOUT) -> None:
        """Hand ``plan`` (a :class:`~delta_hardware.trajectory_plan.JointPlan`, given an ``id``
        here) to the loop; DriveError with the reason if the loop refuses it."""
        plan.id = next(self._plans)
        seq = next(self._seq)
        done = threading.Event()
        slot = [done, None]
        with self._waiters_lock:
            self._waiters[seq] = slot
        try:
            self._send(self.bulk, self._bulk_lock, {"op": "plan", "seq": seq, "rx": rx or time.time_ns(),
                                                    "plan": plan}, timeout)
            if not done.wait(timeout):
                raise LoopUnavailable(f"the control loop did not take the trajectory within {timeout:g} s")
        finally:
            with self._waiters_lock:
                self._waiters.pop(seq, None)
        if not slot[1]["ok"]:
            raise DriveError(slot[1]["message"])
        plan.first_tick = int(slot[1].get("tick", 0)) + 1      # the first cycle sure to follow it
        start = slot[1].get("start")
        if start is not None and start != plan.start_time:      # the loop shifted it (plan.on_receipt)
            plan.delay(start - plan.start_time)

    def _send(self, sock, lock, msg, timeout) -> None:
        if self._lost:
            raise LoopUnavailable(f"the control loop is gone: {self._lost}")
        try:
            send_message(sock, msg, lock, timeout=timeout)
        except (TimeoutError, OSError) as e:
            self._lose(f"it took no request for {timeout:g} s" if isinstance(e, TimeoutError)
                       else f"the link broke ({e})")
            raise LoopUnavailable(f"the control loop is gone: {self._lost}") from None

    def _read_replies(self) -> None:
        while True:
            try:
                msg = recv_message(self.control)
            except (EOFError, OSError):
                break
            if "re" in msg:
                with self._waiters_lock:
                    slot = self._waiters.get(msg["re"])
                if slot is not None:
                    slot[1] = msg
                    slot[0].set()
                elif not msg["ok"] and self.on_refusal is not None and msg["re"] != 0 and not self._closing:
                    self.on_refusal(msg.get("op", ""), msg["message"])
            elif msg.get("op") == "failed":
                self.failure = msg["message"]
                if self.on_failure is not None and not self._closing:    # no callback into a node being destroyed
                    self.on_failure(msg["message"])
        if not self._closing:
            code = self.proc.wait(5) if self.proc is not None else None
            self._lose(f"the control loop process ended (exit status {code})")

    def _lose(self, why: str) -> None:
        if self._lost:
            return
        self._lost = why
        with self._waiters_lock:
            for slot in self._waiters.values():
                if slot[0].is_set():           # answered before the link ended: that answer stands
                    continue
                slot[1] = {"ok": False, "message": f"the control loop is gone: {why}"}
                slot[0].set()
        if not self._closing:
            for s in (self.control, self.bulk):      # the process sees the link end: drives disabled, exit
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            threading.Thread(target=self._reap, daemon=True).start()
            if self.on_lost is not None:
                self.on_lost(why)

    def _reap(self) -> None:
        """A process that does not end after losing its link is hung: SIGTERM, then SIGKILL
        (its drives' own watchdogs take over then)."""
        proc = self.proc
        if proc is None:
            return
        for sig in (None, "terminate", "kill"):
            if sig is not None and proc.poll() is None:
                getattr(proc, sig)()
            try:
                proc.wait(STOP_TIMEOUT / 2)
                return
            except subprocess.TimeoutExpired:
                continue

    # ------------------------------------------------------------------ what the loop produces
    def latest(self):
        """The newest complete cycle record (:data:`~delta_hardware.loop_link.STATE`), or None."""
        h = self.block.header
        for _ in range(3):
            head = int(h["head"])
            if head == 0:
                return None
            rec = self.block.states.read(head - 1)
            if rec is not None and rec is not LOST:
                return rec
        return None

    def now(self) -> float:
        """The loop's time: the newest cycle's stamp (simulated time stands where it is paused)."""
        return float(self.block.header["now"])

    @property
    def paused(self) -> bool:
        """Whether simulated time is paused (the shared block's flag)."""
        return bool(self.block.header["paused"])

    def take_records(self, limit: int = 1000):
        """(records not taken yet, oldest first, at most ``limit``; how many were lost because
        the reader fell a whole ring behind). Frees their room for simulated time."""
        h = self.block.header
        out, lost, self._reader = _drain(self.block.states.read, self.block.states.n, int(h["head"]),
                                         self._reader, limit)
        h["reader"] = self._reader
        return out, lost

    @property
    def reader(self) -> int:
        """State records taken so far (the next one :meth:`take_records` returns)."""
        return self._reader

    def take_events(self):
        """([(text, level, tick)] not taken yet, how many were overwritten before they were
        taken); ``tick``: the state records written when the event was raised."""
        ring = self.block.events
        out, lost, self._event_reader = _drain(ring.read_text, ring.n, int(self.block.header["event_head"]),
                                               self._event_reader)
        return out, lost

    def wait(self, timeout: float) -> bool:
        """Sleep until the loop produces something (or ``timeout`` s)."""
        return wait_doorbell(self.doorbell, timeout)

    # ------------------------------------------------------------------ a loop's face
    @property
    def period(self) -> float:
        """The control period (s) the loop process reported at start (else 1 / the configured rate)."""
        return float(self.info.get("period", 1.0 / self.spec.config.rate))

    def current_setpoint(self) -> Setpoint:
        """The setpoint of the newest cycle (a new plan starts from it)."""
        rec = self.latest()
        if rec is None:
            raise LoopUnavailable("the control loop has not run a cycle yet")
        if int(rec["flags"]) & FLAG_SETPOINT:
            q, qd, qdd = (np.array(v) for v in rec["setpoint"])
            return Setpoint(q, qd, qdd)
        return Setpoint.hold(np.array(rec["position"]))

    def limits(self):
        """(lo, hi, velocity) a plan must keep now (widened during the way back into the limits)."""
        rec = self.latest()
        if rec is None:
            raise LoopUnavailable("the control loop has not run a cycle yet")
        return np.array(rec["lo"]), np.array(rec["hi"]), np.array(rec["vmax"])

    def feedback(self) -> Feedback:
        """The newest measured state (position, velocity, effort)."""
        rec = self.latest()
        if rec is None:
            raise LoopUnavailable("the control loop has not run a cycle yet")
        state = DriveState.QUICK_STOP if int(rec["flags"]) & FLAG_STOPPED else DriveState.ENABLED
        return Feedback(tuple(rec["position"].tolist()), tuple(rec["velocity"].tolist()),
                        tuple(rec["effort"].tolist()), state)

    @property
    def stopped_reason(self) -> str:
        """Why the robot is stopped ('' while it is not)."""
        if self.failure or self._lost:
            return self.failure or self._lost
        rec = self.latest()
        if rec is None or not int(rec["flags"]) & FLAG_STOPPED:
            self._stop_reason = ""
            return ""
        if not self._stop_reason:
            try:
                reason = self.request("status", timeout=0.5).get("status", {}).get("stopped")
            except LoopUnavailable:
                return "stopped"
            if not reason:                          # reset since that cycle
                return ""
            self._stop_reason = reason
        return self._stop_reason

    def is_following(self, plan) -> bool:
        """Whether ``plan`` (submitted here) is still the one being executed."""
        rec = self.latest()
        if rec is None or int(rec["tick"]) < getattr(plan, "first_tick", 0):
            return True                            # no cycle since it was handed over
        return int(rec["plan"]) == getattr(plan, "id", -1)

    def void(self, rx: int) -> str:
        """Why a request received at ``rx`` (``time.time_ns()``) is void ('' if it is not): it
        came before a stop this client asked for (the loop process decides for the others)."""
        return "void: it was sent before the latest stop; send it again" if rx < self.stop_ns else ""

    def hold(self) -> None:
        """Stop following the plan or stream; hold the current setpoint's position."""
        self.request("hold")


def _drain(read, size: int, head: int, reader: int, limit: int | None = None):
    """(entries ``reader`` .. ``head`` of a ring of ``size`` read with ``read(k)``, at most
    ``limit``; how many were lost (overwritten before they were read, or torn); the next
    reader). An entry not yet complete (``read`` gives None) ends the batch."""
    lost = 0
    if head - reader > size:                  # the writer went a whole ring past us
        lost = head - size - reader
        reader = head - size
    out = []
    while reader < head and (limit is None or len(out) < limit):
        rec = read(reader)
        if rec is None:
            break
        if rec is LOST:
            lost += 1
        else:
            out.append(rec)
        reader += 1
    return out, lost, reader
