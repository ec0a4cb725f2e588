"""The link between the hardware node (ROS) and its control-loop process (no ROS).

The loop process (:mod:`delta_hardware.loop_process`) and the node
(:mod:`delta_hardware.loop_client` on its side) share one block of memory and one pair of
sockets, all created by the node and inherited by the loop process:

* **state out**: a ring of :data:`STATE` records in shared memory (``memfd``), one per
  control cycle, written by the loop thread and read by the node's broadcaster at its own
  pace (as ros2_control's state broadcasters read the real-time loop's buffers). Each record
  carries a *seqlock*: ``seq`` is 2k + 1 while record k is written and 2k + 2 once it is
  complete, so a reader never takes a half-written record and sees at once when the writer
  has lapped it (the record was lost to a reader more than a ring behind: counted). The
  loop thread never waits for a reader on the wall clock; in simulated time it waits while
  the ring is full (time can wait; nothing is lost).
* **events out**: a smaller ring of :data:`EVENT` text records, the same seqlock; a full ring
  overwrites the oldest events and the reader counts what it lost.
* a **doorbell** pipe: one byte per record (never waited for: a full pipe is skipped) lets
  the reader sleep in ``select`` instead of polling, and its system calls order the shared
  memory writes before the reads on every CPU.
* **requests in**: a control socket for small messages (commands, the emergency stop,
  lifecycle steps; answered on the same socket) and a bulk socket for trajectory plans (MBs
  of coefficients), so that an emergency stop never waits behind a plan.

Messages are pickled (protocol 5, arrays out of band: a plan's coefficients arrive with
``recv_into`` in the kernel's copy and are used where they landed). Both ends are this
package, over sockets nobody else holds.

>>> import numpy as np
>>> block = SharedBlock.create(ring=8, events=4)
>>> r = block.states
>>> r.write(0, time=0.5, position=(1.0, 2.0, 3.0))
>>> rec = r.read(0)
>>> float(rec["time"]), rec["position"].tolist()
(0.5, [1.0, 2.0, 3.0])
>>> rec["setpoint"].shape
(3, 3)
>>> r.read(1) is None                      # not written yet
True
>>> for k in range(1, 10):
...     r.write(k, time=k * 0.5)
>>> r.read(0) is LOST                      # lapped by the writer
True
>>> block.events.write_text(0, "trajectory finished", 0, tick=10)
>>> block.events.read_text(0)
('trajectory finished', 0, 10)
>>> block.close()
"""
from __future__ import annotations

import mmap
import os
import pickle
import select
import socket
import struct
import threading
import time

import numpy as np

MAGIC = 0x44454C54414C4F4F          # "DELTALOO"
VERSION = 2

#: One control cycle as the node publishes it (SI units of the joints: rad or m): the fields of
#: a row of float64 (one row per record: written with a few slice copies, read with one).
STATE_FIELDS = (
    ("seq", 1),                      # seqlock (module docstring)
    ("tick", 1),                     # cycle number since the loop started
    ("time", 1),                     # the cycle's stamp (s: simulated or ROS time)
    ("period", 1),                   # s since the previous cycle (steady clock / simulated)
    ("position", 3), ("velocity", 3), ("effort", 3),
    ("setpoint", 9),                 # q, qd, qdd the cycle controlled to (NaN: none)
    ("preview_time", 1),             # the time the preview applies at
    ("preview", 9),                  # the setpoint one period ahead (for a feedforward source)
    ("torque", 3),                   # written (clamped) effort
    ("feedforward", 3),
    ("flags", 1),                    # FLAG_*
    ("plan", 1),                     # id of the plan followed (0: none)
    ("lo", 3), ("hi", 3), ("vmax", 3),   # position/velocity limits in force
    ("residual", 3),                 # momentum observer residual (N m or N per joint; NaN: not observing)
    ("external_force", 3),           # platform force that explains it (N, base_link; NaN: not observing)
    ("payload", 2),                  # estimated payload and its standard deviation (kg; NaN: none yet)
)
STATE_SLICES, _at = {}, 0
for _name, _width in STATE_FIELDS:
    STATE_SLICES[_name] = slice(_at, _at + _width)
    _at += _width
STATE_WIDTH = _at
STATE = np.dtype((np.float64, (STATE_WIDTH,)))
_MATRIX = ("setpoint", "preview")


class Record:
    """A copy of one state record: ``rec["position"]`` (an array view of the copy; (3, 3) for
    ``setpoint`` and ``preview``: q, qd, qdd), ``rec["time"]`` (a float)."""

    __slots__ = ("row",)

    def __init__(self, row):
        self.row = row

    def __getitem__(self, name):
        s = STATE_SLICES[name]
        if s.stop - s.start == 1:
            return self.row[s.start]
        v = self.row[s]
        return v.reshape(3, 3) if name in _MATRIX else v


FLAG_SETPOINT = 1                    # the cycle controlled (not stopped, drives enabled)
FLAG_PREVIEW = 2
FLAG_STOPPED = 4                     # latched stop (emergency stop, fault, limit trip)
FLAG_RECOVERY = 8                    # a joint outside its limits: slow way back
FLAG_SATURATED = 16                  # 16, 32, 64: joint i's torque at its limit this cycle
FLAG_ACTIVATED = 128                 # not a cycle: the state at activation (a loop paused from the start
                                     # has one too); not published

#: One event: level (0 info, 1 warning, 2 error) and UTF-8 text.
EVENT_TEXT = 500
EVENT = np.dtype([("seq", "<u8"), ("tick", "<u8"), ("level", "<u4"), ("length", "<u4"), ("text", f"S{EVENT_TEXT}")])

#: The block's header: counters both sides read.
HEADER = np.dtype([
    ("magic", "<u8"), ("version", "<u8"), ("ring", "<u8"), ("events", "<u8"),
    ("head", "<u8"),                 # state records completed (the next one is record `head`)
    ("reader", "<u8"),               # state records the node has taken (simulated-time backpressure)
    ("event_head", "<u8"),
    ("now", "<f8"),                  # time of the newest cycle (s)
    ("paused", "<u8"),               # 1 while simulated time is paused
    ("pad", "<u8", 7),
])

LOST = object()                      # a record the writer has overwritten


class StateRing:
    """``n`` :data:`STATE` rows at ``offset`` in ``buf``: one writer, any readers; record k lives
    in row k % n (module docstring)."""

    def __init__(self, buf, offset: int, n: int):
        self.n = int(n)
        self.a = np.ndarray((self.n, STATE_WIDTH), dtype=np.float64, buffer=buf, offset=offset)
        self.nbytes = self.a.nbytes

    def write(self, k: int, **fields) -> None:
        """Write record ``k`` (fields not given keep whatever the row held)."""
        row = self.a[k % self.n]
        row[0] = 2 * k + 1
        for name, value in fields.items():
            s = STATE_SLICES[name]
            if name in _MATRIX:
                row[s] = np.ravel(value)
            else:
                row[s] = value
        row[0] = 2 * k + 2

    def read(self, k: int):
        """A :class:`Record` copy of record ``k``; None if it is not complete yet, :data:`LOST`
        if overwritten."""
        i = k % self.n
        want = 2 * k + 2
        s = self.a[i, 0]
        if s != want:
            return LOST if s > want else None
        row = self.a[i].copy()
        if self.a[i, 0] != want:
            return LOST
        return Record(row)


class Ring:
    """``n`` records of a structured ``dtype`` (whose first field is ``seq``) at ``offset`` in
    ``buf``, the same seqlock (the events)."""

    def __init__(self, buf, offset: int, dtype: np.dtype, n: int):
        self.n = int(n)
        self.a = np.ndarray((self.n,), dtype=dtype, buffer=buf, offset=offset)
        self.seq = self.a["seq"]
        self.nbytes = self.a.nbytes

    def write(self, k: int, **fields) -> None:
        """Write record ``k`` (fields not given keep whatever the slot held)."""
        i = k % self.n
        self.seq[i] = 2 * k + 1
        rec = self.a[i]
        for name, value in fields.items():
            rec[name] = value
        self.seq[i] = 2 * k + 2

    def read(self, k: int):
        """A copy of record ``k``; None if it is not complete yet, :data:`LOST` if overwritten."""
        i = k % self.n
        want = 2 * k + 2
        s = int(self.seq[i])
        if s != want:
            return LOST if s > want else None
        rec = self.a[i].copy()
        if int(self.seq[i]) != want:
            return LOST
        return rec

    def write_text(self, k: int, text: str, level: int, tick: int = 0) -> None:
        """Event ``k``: ``text`` at ``level``, raised when ``tick`` state records had been written."""
        data = text.encode("utf-8", "replace")[:EVENT_TEXT]
        self.write(k, tick=tick, level=level, length=len(data), text=data)

    def read_text(self, k: int):
        """(text, level, tick) of event ``k``; None / :data:`LOST` as :meth:`read`."""
        rec = self.read(k)
        if rec is None or rec is LOST:
            return rec
        return (bytes(rec["text"])[:int(rec["length"])].decode("utf-8", "replace"), int(rec["level"]),
                int(rec["tick"]))


class SharedBlock:
    """The shared memory of one loop process: header, state ring, event ring, over a memfd
    (no name in the file system, freed when both processes have closed it)."""

    def __init__(self, fd: int, create: bool = False, ring: int = 0, events: int = 0):
        self.fd = fd
        if create:
            size = HEADER.itemsize + ring * STATE.itemsize + events * EVENT.itemsize
            os.ftruncate(fd, size)
        size = os.fstat(fd).st_size
        self.mm = mmap.mmap(fd, size)
        self.header = np.ndarray((1,), dtype=HEADER, buffer=self.mm)[0]
        if create:
            self.header["magic"], self.header["version"] = MAGIC, VERSION
            self.header["ring"], self.header["events"] = ring, events
        elif int(self.header["magic"]) != MAGIC or int(self.header["version"]) != VERSION:
            raise RuntimeError("not a delta_hardware loop block (another version of the package?)")
        ring, events = int(self.header["ring"]), int(self.header["events"])
        self.states = StateRing(self.mm, HEADER.itemsize, ring)
        self.events = Ring(self.mm, HEADER.itemsize + self.states.nbytes, EVENT, events)

    @classmethod
    def create(cls, ring: int = 8192, events: int = 256) -> "SharedBlock":
        """A new block in an anonymous memory file (``memfd``) with room for ``ring`` state records and
        ``events`` events."""
        fd = os.memfd_create("delta_loop", 0)
        return cls(fd, create=True, ring=ring, events=events)

    def close(self) -> None:
        """Unmap and close (views into the block must be gone; copies of records are safe)."""
        self.header = self.states = self.events = None
        try:
            self.mm.close()
        except BufferError:               # a view still exists: the mapping goes with the process
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


# ----------------------------------------------------------------------------- messages

_LEN = struct.Struct("<I")


def encode_message(obj) -> list:
    """``obj`` as the parts of one frame: pickled (protocol 5, contiguous arrays out of band),
    preceded by the count of parts and their sizes."""
    buffers = []
    meta = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    parts = [memoryview(meta)] + [b.raw() for b in buffers]
    head = _LEN.pack(len(parts)) + struct.pack(f"<{len(parts)}Q", *(p.nbytes for p in parts))
    return [memoryview(head)] + parts


def send_message(sock: socket.socket, obj, lock: threading.Lock | None = None,
                 timeout: float | None = None) -> None:
    """Send ``obj`` as one frame (:func:`encode_message`). With ``timeout`` the socket must take
    the whole frame within that many seconds, else TimeoutError (the link is then unusable:
    part of a frame may have gone)."""
    parts = encode_message(obj)
    if lock is None:
        _send_parts(sock, parts, timeout)
    else:
        with lock:
            _send_parts(sock, parts, timeout)


def _send_parts(sock, parts, timeout):
    if timeout is None:
        for p in parts:
            sock.sendall(p)
        return
    deadline = time.monotonic() + timeout
    for p in parts:
        p = p.cast("B")
        while len(p):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [sock], [], left)[1]:
                raise TimeoutError(f"the other end took no data for {timeout:g} s")
            try:
                n = sock.send(p)
            except BlockingIOError:
                continue
            p = p[n:]


def _recv_into(sock: socket.socket, buf) -> None:
    view = memoryview(buf)
    got = 0
    while got < len(view):
        try:
            n = sock.recv_into(view[got:])        # the kernel copies; the GIL is released
        except BlockingIOError:                   # a non-blocking socket: wait for data
            select.select([sock], [], [])
            continue
        if n == 0:
            raise EOFError("the other end closed the link")
        got += n


def recv_message(sock: socket.socket):
    """The next frame's object (arrays over the received buffers, no copy); EOFError when the
    other end has gone."""
    head = bytearray(_LEN.size)
    _recv_into(sock, head)
    (count,) = _LEN.unpack(head)
    if not 1 <= count <= 64:
        raise EOFError(f"corrupt frame ({count} parts)")
    sizes = bytearray(8 * count)
    _recv_into(sock, sizes)
    parts = [bytearray(s) for s in struct.unpack(f"<{count}Q", sizes)]
    for p in parts:
        _recv_into(sock, p)
    return pickle.loads(parts[0], buffers=parts[1:])


def ring_doorbell(fd: int) -> None:
    """One byte into the (non-blocking) doorbell pipe; a full pipe is fine (the reader is awake)."""
    try:
        os.write(fd, b"\x01")
    except (BlockingIOError, BrokenPipeError, OSError):
        pass


def wait_doorbell(fd: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the doorbell and drain it; whether it rang."""
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        return False
    try:
        return bool(os.read(fd, 1 << 16))
    except BlockingIOError:
        return False
