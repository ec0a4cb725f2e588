"""CiA 402 servo drives emulated on a python-can bus, for the tests: written from CiA 301 and
CiA 402, on raw python-can frames, without ``canopen`` and without anything of
``delta_hardware`` (whose ``delta-drive-sim`` shares the stack's reading of the standards).

Each :class:`EmulatedDrive` is one CANopen device with:

* NMT slave (CiA 301 7.2.8): boot-up message, pre-operational / operational / stopped,
  reset node and reset communication (objects back to their defaults);
* an SDO server (CiA 301 7.2.4): expedited and segmented download and upload, abort codes
  for unknown objects, read-only / write-only access, wrong sizes and values out of range;
* a heartbeat producer (0x1017, CiA 301 7.2.8.3.2);
* PDOs (CiA 301 7.2.2, 7.5.2.35-38) configured by SDO with the standard's procedure (COB-ID
  invalid, sub-index 0 of the mapping to 0, entries, count, COB-ID valid; only objects marked
  mappable, at most 64 bits), processed in NMT operational only: synchronous RPDOs
  (transmission type 0..240) are stored and actuated at the next SYNC, event-driven ones
  (254, 255) at once; synchronous TPDOs (1..240) are sampled and sent on every n-th SYNC;
* EMCY (CiA 301 7.2.7): error code, error register (0x1001), and "error reset" (0x0000);
* the CiA 402 state machine (:mod:`.cia402`) on the controlword, whether it comes by SDO or
  by RPDO, with the quick stop option code (0x605A) and fault reaction;
* cyclic synchronous position, velocity and torque (0x6060 = 8, 9, 10) on a motor with an
  inertia, stepped by one interpolation period (0x60C2) per SYNC: in CSP a position loop on
  the target interpolated over the period (plus the velocity and torque offsets), in CSV a
  velocity loop, in CST the target torque plus the torque offset, limited to 0x6072; quick
  stop decelerates at 0x6085 and then holds; with the power stage off a brake holds.

Order on SYNC k, in NMT operational: the TPDOs are sampled and sent (the state at SYNC k),
the RPDO data received since SYNC k-1 is actuated (controlword, then targets), the motor
runs one interpolation period. A target received between SYNC k-1 and SYNC k thus acts
from SYNC k on and shows in the TPDO of SYNC k+1.

Fault injection (:class:`EmulatedDrives`): drop TPDO frames (the next n, every n-th, a
fraction), stop the heartbeat, stop answering altogether, a fault with its EMCY; and
:func:`send_foreign_datagram`, a datagram that is not a CAN frame on a ``udp_multicast``
port. Every state change is logged with its transition number and what caused it
(:attr:`EmulatedDrive.log`).
"""
from __future__ import annotations

import math
import random
import re
import socket
import struct
import threading
import time

import can

from . import cia402 as sm

# ---------------------------------------------------------------------------- object dictionary
U8, I8, U16, I16, U32, I32, STR = "B", "b", "H", "h", "I", "i", "s"
RO, RW, CONST = "ro", "rw", "const"

# SDO abort codes (CiA 301 table 22)
ABORT_TOGGLE = 0x05030000
ABORT_COMMAND = 0x05040001
ABORT_READ_WRITE_ONLY = 0x06010001
ABORT_WRITE_READ_ONLY = 0x06010002
ABORT_NO_OBJECT = 0x06020000
ABORT_NOT_MAPPABLE = 0x06040041
ABORT_PDO_LENGTH = 0x06040042
ABORT_LENGTH = 0x06070010
ABORT_NO_SUBINDEX = 0x06090011
ABORT_RANGE = 0x06090030
ABORT_GENERAL = 0x08000000
ABORT_DEVICE_STATE = 0x08000022

DEVICE_TYPE = 0x00020192                 # CiA 402 (0x0192), servo drive (0x0002)
SUPPORTED_MODES = (1 << 7) | (1 << 8) | (1 << 9)     # 0x6502: CSP, CSV, CST


class Entry:
    """One object (a variable) of the dictionary."""
    __slots__ = ("fmt", "access", "default", "mappable", "value")

    def __init__(self, fmt, access, default, mappable=False):
        self.fmt, self.access, self.default, self.mappable = fmt, access, default, mappable
        self.value = default

    @property
    def size(self) -> int:
        return len(self.value) if self.fmt == STR else struct.calcsize("<" + self.fmt)

    def encode(self, value=None) -> bytes:
        v = self.value if value is None else value
        return v if self.fmt == STR else struct.pack("<" + self.fmt, v)

    def decode(self, data: bytes):
        return bytes(data) if self.fmt == STR else struct.unpack("<" + self.fmt, data)[0]


def _dictionary(node_id: int, name: bytes) -> dict:
    """(index, sub-index) -> Entry: CiA 301 communication objects and the CiA 402 objects of
    a servo drive with the cyclic synchronous modes."""
    od = {
        (0x1000, 0): Entry(U32, RO, DEVICE_TYPE),
        (0x1001, 0): Entry(U8, RO, 0, True),
        (0x1005, 0): Entry(U32, RW, 0x80),
        (0x1006, 0): Entry(U32, RW, 0),
        (0x1008, 0): Entry(STR, CONST, name),
        (0x1014, 0): Entry(U32, RO, 0x80 + node_id),
        (0x1017, 0): Entry(U16, RW, 0),
        (0x1018, 0): Entry(U8, RO, 1),
        (0x1018, 1): Entry(U32, RO, 0x00000000),
        (0x603F, 0): Entry(U16, RO, 0, True),
        (0x6040, 0): Entry(U16, RW, 0, True),
        (0x6041, 0): Entry(U16, RO, 0, True),
        (0x605A, 0): Entry(I16, RW, 2),          # CiA 402 default: quick stop ramp, then switch on disabled
        (0x605E, 0): Entry(I16, RW, 2),
        (0x6060, 0): Entry(I8, RW, 0, True),
        (0x6061, 0): Entry(I8, RO, 0, True),
        (0x6064, 0): Entry(I32, RO, 0, True),
        (0x6065, 0): Entry(U32, RW, 0xFFFFFFFF),
        (0x606C, 0): Entry(I32, RO, 0, True),
        (0x6071, 0): Entry(I16, RW, 0, True),
        (0x6072, 0): Entry(U16, RW, 3000),
        (0x6076, 0): Entry(U32, RW, 1000),
        (0x6077, 0): Entry(I16, RO, 0, True),
        (0x607A, 0): Entry(I32, RW, 0, True),
        (0x607D, 0): Entry(U8, RO, 2),
        (0x607D, 1): Entry(I32, RW, -(1 << 31)),
        (0x607D, 2): Entry(I32, RW, (1 << 31) - 1),
        (0x6085, 0): Entry(U32, RW, 40_000_000),   # quick stop deceleration, inc/s^2
        (0x608F, 0): Entry(U8, RO, 2),
        (0x608F, 1): Entry(U32, RW, 131072),
        (0x608F, 2): Entry(U32, RW, 1),
        (0x60B1, 0): Entry(I32, RW, 0, True),
        (0x60B2, 0): Entry(I16, RW, 0, True),
        (0x60C2, 0): Entry(U8, RO, 2),
        (0x60C2, 1): Entry(U8, RW, 1),
        (0x60C2, 2): Entry(I8, RW, -3),
        (0x60FF, 0): Entry(I32, RW, 0, True),
        (0x6502, 0): Entry(U32, RO, SUPPORTED_MODES),
    }
    for n in range(4):
        # RPDO n+1: 0x1400+n communication (sub 1 COB-ID, 2 transmission type), 0x1600+n mapping
        od[(0x1400 + n, 0)] = Entry(U8, RO, 2)
        od[(0x1400 + n, 1)] = Entry(U32, RW, (0x200 + 0x100 * n + node_id) | (0 if n == 0 else 1 << 31))
        od[(0x1400 + n, 2)] = Entry(U8, RW, 255)
        od[(0x1600 + n, 0)] = Entry(U8, RW, 0)
        # TPDO n+1: 0x1800+n (sub 1 COB-ID, 2 type, 3 inhibit time, 5 event timer), 0x1A00+n
        od[(0x1800 + n, 0)] = Entry(U8, RO, 5)
        od[(0x1800 + n, 1)] = Entry(U32, RW, (0x180 + 0x100 * n + node_id) | (0 if n == 0 else 1 << 31))
        od[(0x1800 + n, 2)] = Entry(U8, RW, 255)
        od[(0x1800 + n, 3)] = Entry(U16, RW, 0)
        od[(0x1800 + n, 5)] = Entry(U16, RW, 0)
        od[(0x1A00 + n, 0)] = Entry(U8, RW, 0)
        for s in range(1, 9):
            od[(0x1600 + n, s)] = Entry(U32, RW, 0)
            od[(0x1A00 + n, s)] = Entry(U32, RW, 0)
    return od


class SdoAbort(Exception):
    def __init__(self, code: int):
        super().__init__(f"SDO abort 0x{code:08X}")
        self.code = code


# ---------------------------------------------------------------------------- one drive
NMT_STATE_CODE = {"pre-operational": 0x7F, "operational": 0x05, "stopped": 0x04}


class Motor:
    """The motor and load behind a drive (motor side, SI): inertia ``J`` (kg m^2), viscous
    friction ``b`` (N m s/rad); position loop gains of CSP (``kp`` N m/rad, ``kd`` N m s/rad)
    and the velocity loop gain of CSV (``kv`` N m s/rad); ``substeps`` per interpolation
    period."""

    def __init__(self, J=5e-4, b=1e-3, kp=11.0, kd=0.15, kv=0.15, substeps=10):
        self.J, self.b, self.kp, self.kd, self.kv, self.substeps = J, b, kp, kd, kv, substeps
        self.q = 0.0                   # rad (motor)
        self.w = 0.0                   # rad/s
        self.tau = 0.0                 # N m applied


class EmulatedDrive:
    """One CiA 402 drive at CAN node ``node_id`` (see the module docstring)."""

    def __init__(self, owner: "EmulatedDrives", node_id: int, name: str, motor: Motor | None = None):
        self.owner = owner
        self.node_id = node_id
        self.name = name.encode()
        self.motor = motor or Motor()
        self.od = _dictionary(node_id, self.name)
        self.nmt = "pre-operational"
        self.state = sm.SWITCH_ON_DISABLED
        self.cw = 0
        self.pending: dict[int, bytes] = {}          # RPDO number -> data received since the last SYNC
        self.sync_count = 0
        self.prev_target = None                      # CSP: the target of the last period (inc)
        self.fault_cause = None                      # an injected fault that outlives a fault reset
        self.following_error = False
        self.log: list = []                          # (monotonic time, sync count, from, to, transition, source)
        self.cw_log: list = []                       # (monotonic time, sync count, controlword, source)
        self.sdo_log: list = []                      # (monotonic time, "read" | "write", index, sub-index)
        # fault injection
        self.heartbeat_on = True
        self.muted = False
        self.tpdo_drop = 0                           # drop the next n TPDO frames
        self.tpdo_drop_every = 0                     # drop every n-th TPDO1 frame
        self.tpdo_loss = 0.0                         # drop this fraction of TPDO frames
        self.tpdos_sent = 0
        self.tpdos_dropped = 0
        self._rng = random.Random(node_id)
        self._segment = None                         # SDO segmented transfer in progress
        self._hb_next = 0.0
        self.boot()

    # ------------------------------------------------------------------ objects
    def get(self, index, sub=0):
        return self.od[(index, sub)].value

    def set(self, index, sub, value):
        self.od[(index, sub)].value = value

    def _refresh_inputs(self):
        """The process values the drive reports, from the motor and the state machine."""
        m = self.motor
        inc = self.increments_per_rad
        self.set(0x6064, 0, int(round(m.q * inc)))
        self.set(0x606C, 0, int(round(m.w * inc)))
        rated = max(self.get(0x6076), 1) / 1000.0
        self.set(0x6077, 0, max(-32768, min(32767, int(round(m.tau / rated * 1000.0)))))
        self.set(0x6061, 0, self.get(0x6060))
        self.set(0x6041, 0, self.statusword())

    @property
    def increments_per_rad(self) -> float:
        return self.get(0x608F, 1) / max(self.get(0x608F, 2), 1) / (2 * math.pi)

    @property
    def period(self) -> float:
        """The interpolation period (0x60C2: value * 10^index s)."""
        return self.get(0x60C2, 1) * 10.0 ** self.get(0x60C2, 2)

    def statusword(self) -> int:
        flags = 0
        if self.state not in (sm.NOT_READY, sm.SWITCH_ON_DISABLED):
            flags |= sm.VOLTAGE_ENABLED
        if self.state == sm.OPERATION_ENABLED and self.get(0x6060) in (8, 9, 10):
            flags |= sm.FOLLOWS_TARGET
        if self.following_error:
            flags |= sm.FOLLOWING_ERROR
        return sm.statusword(self.state, flags)

    # ------------------------------------------------------------------ NMT
    def boot(self):
        """Power on / reset node: every object to its default, boot-up, pre-operational."""
        for e in self.od.values():
            e.value = e.default
        self.state = sm.SWITCH_ON_DISABLED
        self.cw = 0
        self.pending.clear()
        self.prev_target = None
        self._boot_up()

    def _boot_up(self):
        self.nmt = "pre-operational"
        self.send(0x700 + self.node_id, b"\x00")      # boot-up message
        self._hb_next = time.monotonic()

    def on_nmt(self, data: bytes):
        if len(data) < 2 or data[1] not in (0, self.node_id):
            return
        cmd = data[0]
        if cmd == 0x01:
            self.nmt = "operational"
        elif cmd == 0x02:
            self.nmt = "stopped"
        elif cmd == 0x80:
            self.nmt = "pre-operational"
        elif cmd == 0x81:
            self.boot()
        elif cmd == 0x82:                               # reset communication: 0x1000-0x1FFF
            for (index, _), e in self.od.items():
                if 0x1000 <= index <= 0x1FFF:
                    e.value = e.default
            self._boot_up()

    def heartbeat(self, now: float):
        period = self.get(0x1017) / 1000.0
        if period <= 0 or not self.heartbeat_on or self.muted:
            return
        if now >= self._hb_next:
            self.send(0x700 + self.node_id, bytes([NMT_STATE_CODE[self.nmt]]))
            self._hb_next = max(self._hb_next + period, now)

    # ------------------------------------------------------------------ frames
    def send(self, cob_id: int, data: bytes):
        if not self.muted:
            self.owner.send(cob_id, data)

    def on_frame(self, cob: int, data: bytes):
        if self.muted:
            return
        if cob == 0x600 + self.node_id:
            if self.nmt != "stopped":
                self.on_sdo(data)
        elif cob == self.get(0x1005) & 0x7FF and self.nmt == "operational":
            self.on_sync()
        elif self.nmt == "operational":
            for n in range(4):
                cob_id = self.get(0x1400 + n, 1)
                if not cob_id & (1 << 31) and cob == cob_id & 0x7FF:
                    if self.get(0x1400 + n, 2) <= 240:
                        self.pending[n] = bytes(data)           # actuated at the next SYNC
                    else:
                        self._actuate(n, bytes(data), "RPDO")

    # ------------------------------------------------------------------ SDO server
    def on_sdo(self, data: bytes):
        if len(data) != 8:
            return
        ccs = data[0] >> 5
        index, sub = struct.unpack_from("<HB", data, 1)
        try:
            if ccs == 1:                                   # initiate download
                e, s = data[0] & 0x02, data[0] & 0x01
                if e:
                    n = 4 - ((data[0] >> 2) & 0x03) if s else 4
                    self.write(index, sub, data[4:4 + n], "SDO")
                    self._reply(struct.pack("<BHB4x", 0x60, index, sub))
                else:
                    size = struct.unpack_from("<I", data, 4)[0] if s else None
                    self._segment = ("down", index, sub, bytearray(), 0, size)
                    self._reply(struct.pack("<BHB4x", 0x60, index, sub))
            elif ccs == 0 and self._segment and self._segment[0] == "down":   # download segment
                _, index, sub, buf, toggle, size = self._segment
                if (data[0] >> 4) & 1 != toggle:
                    raise SdoAbort(ABORT_TOGGLE)
                n = 7 - ((data[0] >> 1) & 0x07)
                buf += data[1:1 + n]
                self._reply(bytes([0x20 | (toggle << 4)]) + bytes(7))
                if data[0] & 0x01:                        # last segment
                    self._segment = None
                    self.write(index, sub, bytes(buf), "SDO")
                else:
                    self._segment = ("down", index, sub, buf, toggle ^ 1, size)
            elif ccs == 2:                                 # initiate upload
                value = self.read(index, sub)
                if len(value) <= 4:
                    self._reply(struct.pack("<BHB", 0x43 | ((4 - len(value)) << 2), index, sub)
                                + value + bytes(4 - len(value)))
                else:
                    self._segment = ("up", index, sub, value, 0, len(value))
                    self._reply(struct.pack("<BHBI", 0x41, index, sub, len(value)))
            elif ccs == 3 and self._segment and self._segment[0] == "up":      # upload segment
                _, index, sub, value, toggle, _ = self._segment
                if (data[0] >> 4) & 1 != toggle:
                    raise SdoAbort(ABORT_TOGGLE)
                chunk, rest = value[:7], value[7:]
                last = not rest
                self._reply(bytes([(toggle << 4) | ((7 - len(chunk)) << 1) | int(last)]) + chunk
                            + bytes(7 - len(chunk)))
                self._segment = None if last else ("up", index, sub, rest, toggle ^ 1, len(rest))
            elif ccs == 4:                                 # abort from the client
                self._segment = None
            else:
                raise SdoAbort(ABORT_COMMAND)
        except SdoAbort as a:
            self._segment = None
            self._reply(struct.pack("<BHBI", 0x80, index, sub, a.code))

    def _reply(self, data: bytes):
        self.send(0x580 + self.node_id, data)

    def _entry(self, index, sub) -> Entry:
        e = self.od.get((index, sub))
        if e is None:
            raise SdoAbort(ABORT_NO_SUBINDEX if any(i == index for i, _ in self.od) else ABORT_NO_OBJECT)
        return e

    def read(self, index, sub) -> bytes:
        self.sdo_log.append((time.monotonic(), "read", index, sub))
        e = self._entry(index, sub)
        self._refresh_inputs()
        return e.encode()

    def write(self, index, sub, data: bytes, source: str):
        self.sdo_log.append((time.monotonic(), "write", index, sub))
        e = self._entry(index, sub)
        if e.access in (RO, CONST):
            raise SdoAbort(ABORT_WRITE_READ_ONLY)
        if e.fmt != STR and len(data) != e.size:
            raise SdoAbort(ABORT_LENGTH)
        value = e.decode(data)
        self._check_write(index, sub, value)
        e.value = value
        if index == 0x6040:
            self.on_controlword(value, source)

    def _check_write(self, index, sub, value):
        """The rules of the objects that have some (CiA 301 PDO configuration, CiA 402 modes)."""
        if 0x1400 <= index <= 0x1403 or 0x1800 <= index <= 0x1803:
            if sub == 1:
                old = self.get(index, 1)
                if not old & (1 << 31) and not value & (1 << 31) and value != old:
                    raise SdoAbort(ABORT_RANGE)            # change the COB-ID of a valid PDO: invalid first
                if not value & (1 << 31):
                    self._check_mapping(index + 0x200)
        elif 0x1600 <= index <= 0x1603 or 0x1A00 <= index <= 0x1A03:
            com_valid = not self.get(index - 0x200, 1) & (1 << 31)
            if com_valid:
                raise SdoAbort(ABORT_DEVICE_STATE)          # mapping of a valid PDO
            if sub == 0:
                if value > 8:
                    raise SdoAbort(ABORT_RANGE)
                self._check_mapping(index, value)
            elif self.get(index, 0) != 0:
                raise SdoAbort(ABORT_DEVICE_STATE)          # entries only while sub-index 0 is 0
            elif value:
                self._check_entry(value, rpdo=index < 0x1A00)
        elif index == 0x6060 and value not in (0, 8, 9, 10):
            raise SdoAbort(ABORT_RANGE)

    def _check_entry(self, entry: int, rpdo: bool) -> int:
        index, sub, bits = entry >> 16, (entry >> 8) & 0xFF, entry & 0xFF
        e = self.od.get((index, sub))
        if e is None:
            raise SdoAbort(ABORT_NO_OBJECT)
        if not e.mappable or (rpdo and e.access != RW) or bits != 8 * e.size:
            raise SdoAbort(ABORT_NOT_MAPPABLE)
        return bits

    def _check_mapping(self, map_index: int, count: int | None = None):
        n = self.get(map_index, 0) if count is None else count
        bits = sum(self._check_entry(self.get(map_index, s), rpdo=map_index < 0x1A00) for s in range(1, n + 1))
        if bits > 64:
            raise SdoAbort(ABORT_PDO_LENGTH)

    # ------------------------------------------------------------------ CiA 402
    def on_controlword(self, cw: int, source: str):
        prev, self.cw = self.cw, cw
        self.cw_log.append((time.monotonic(), self.sync_count, cw, source))
        if self.state == sm.FAULT and cw & 0x80 and not prev & 0x80 and self.fault_cause is not None:
            return                                          # the cause remains: stays in fault
        nxt, transition = sm.next_state(self.state, cw, prev, self.get(0x605A))
        if transition is not None:
            self._go(nxt, transition, source)

    def _go(self, state: str, transition: str, source: str):
        before = self.state
        self.log.append((time.monotonic(), self.sync_count, before, state, transition, source))
        self.state = state
        if state == sm.OPERATION_ENABLED:
            # the interpolation of the position target starts where the motor is
            self.prev_target = int(round(self.motor.q * self.increments_per_rad))
        if before == sm.FAULT:
            self.set(0x603F, 0, 0)
            self.set(0x1001, 0, 0)
            self.following_error = False
            self.emcy(0x0000)

    def fault(self, code: int, persistent: bool = False):
        """Fault (transition 13, then 14 once stopped) with error ``code``: EMCY."""
        if persistent:
            self.fault_cause = code
        if self.state in (sm.FAULT, sm.FAULT_REACTION_ACTIVE):
            return
        self.set(0x603F, 0, code)
        self.set(0x1001, 0, 0x01 | {2: 0x02, 3: 0x04, 4: 0x08, 8: 0x10}.get(code >> 12, 0))
        self._go(sm.FAULT_REACTION_ACTIVE, "13", "fault")
        self.emcy(code)
        if self.motor.w == 0.0:                              # nothing to stop: fault at once
            self._go(sm.FAULT, "14", "fault reaction completed")

    def emcy(self, code: int):
        if self.nmt in ("pre-operational", "operational"):
            self.send(self.get(0x1014) & 0x7FF, struct.pack("<HB5x", code, self.get(0x1001)))

    # ------------------------------------------------------------------ PDOs and motion
    def _mapping(self, map_index):
        out = []
        for s in range(1, self.get(map_index, 0) + 1):
            entry = self.get(map_index, s)
            out.append((entry >> 16, (entry >> 8) & 0xFF))
        return out

    def _actuate(self, n: int, data: bytes, source: str):
        mapping = self._mapping(0x1600 + n)
        size = sum(self.od[k].size for k in mapping)
        if len(data) < size:
            return                                           # CiA 301: a too short RPDO is not processed
        off, cw = 0, None
        for key in mapping:
            e = self.od[key]
            v = e.decode(data[off:off + e.size])
            off += e.size
            if key == (0x6040, 0):
                cw = v
            else:
                e.value = v
        if cw is not None:
            self.set(0x6040, 0, cw)
            self.on_controlword(cw, source)

    def on_sync(self):
        self.sync_count += 1
        self._refresh_inputs()
        for n in range(4):                                    # TPDOs: the state at this SYNC
            cob_id = self.get(0x1800 + n, 1)
            tt = self.get(0x1800 + n, 2)
            if cob_id & (1 << 31) or not 1 <= tt <= 240 or self.sync_count % tt:
                continue
            data = b"".join(self.od[k].encode() for k in self._mapping(0x1A00 + n))
            self.tpdos_sent += 1
            if self._drop(n):
                self.tpdos_dropped += 1
                continue
            self.send(cob_id & 0x7FF, data)
        for n in sorted(self.pending):                        # synchronous RPDOs: actuated now
            self._actuate(n, self.pending.pop(n), "RPDO")
        self.step(self.period)

    def _drop(self, n: int) -> bool:
        if self.tpdo_drop > 0:
            self.tpdo_drop -= 1
            return True
        if self.tpdo_drop_every and n == 0 and self.sync_count % self.tpdo_drop_every == 0:
            return True
        return self.tpdo_loss > 0 and self._rng.random() < self.tpdo_loss

    def step(self, period: float):
        """The motor over one interpolation period under the state and the targets."""
        m = self.motor
        inc = self.increments_per_rad
        rated = self.get(0x6076) / 1e6                       # N m per per-mille
        t_max = self.get(0x6072) * rated
        mode = self.get(0x6060)
        h = period / m.substeps
        target = self.get(0x607A)
        lo, hi = self.get(0x607D, 1), self.get(0x607D, 2)
        if lo < hi:
            target = min(max(target, lo), hi)
        start = self.prev_target if self.prev_target is not None else target
        for k in range(1, m.substeps + 1):
            if self.state == sm.OPERATION_ENABLED:
                tau_off = self.get(0x60B2) * rated
                if mode == 8:
                    qt = (start + (target - start) * k / m.substeps) / inc
                    tau = m.kp * (qt - m.q) + m.kd * (self.get(0x60B1) / inc - m.w) + tau_off
                elif mode == 9:
                    tau = m.kv * ((self.get(0x60FF) + self.get(0x60B1)) / inc - m.w) + tau_off
                elif mode == 10:
                    tau = self.get(0x6071) * rated + tau_off
                else:
                    tau = 0.0
                tau = min(max(tau, -t_max), t_max)
                m.tau = tau
                m.w += h * (tau - m.b * m.w) / m.J
                m.q += h * m.w
            elif self.state in (sm.QUICK_STOP_ACTIVE, sm.FAULT_REACTION_ACTIVE):
                dec = self.get(0x6085) / inc                 # rad/s^2
                m.w = math.copysign(max(abs(m.w) - dec * h, 0.0), m.w)
                m.q += h * m.w
                m.tau = 0.0
            else:                                            # power stage off: the brake holds
                m.w = 0.0
                m.tau = 0.0
        self.prev_target = target
        if self.state == sm.OPERATION_ENABLED and mode == 8:
            window = self.get(0x6065)
            if window != 0xFFFFFFFF and abs(target - m.q * inc) > window:
                self.following_error = True
                self.fault(0x8611)
        if m.w == 0.0:                                       # stopped: the automatic transitions
            if self.state == sm.QUICK_STOP_ACTIVE and not sm.stays_in_quick_stop(self.get(0x605A)):
                self._go(sm.SWITCH_ON_DISABLED, "12", "quick stop completed")
            elif self.state == sm.FAULT_REACTION_ACTIVE:
                self._go(sm.FAULT, "14", "fault reaction completed")

    # ------------------------------------------------------------------ for the tests
    def states_since(self, mark: int = 0) -> list:
        """(from, to, transition, source) of the state changes since log entry ``mark``."""
        return [e[2:] for e in self.log[mark:]]


class EmulatedDrives:
    """CiA 402 drives at ``node_ids`` on one python-can bus (``interface``, ``channel``; a
    ``udp_multicast`` channel may be ``group:port``), with one receive thread that handles
    every frame in the order of arrival and a heartbeat thread.

    ``motors``: a :class:`Motor` per drive (default: the same for each). ``rcvbuf``: bytes of
    the ``udp_multicast`` socket's receive buffer (asked for; Linux caps it at rmem_max).
    """

    def __init__(self, interface="virtual", channel="emulated", node_ids=(1, 2, 3), motors=None,
                 name="CiA 402 emulator", rcvbuf=8 << 20):
        kwargs = {}
        if interface == "udp_multicast":
            group, port = parse_udp_channel(channel)
            channel, kwargs = group, {"port": port, "hop_limit": 0}
        self.bus = can.Bus(interface=interface, channel=channel, **kwargs)
        if interface == "udp_multicast":
            sock = socket.socket(fileno=socket.dup(self.bus.fileno()))
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            finally:
                sock.close()
        self.lock = threading.RLock()
        self.drives = [EmulatedDrive(self, nid, name, (motors or [None] * len(node_ids))[i])
                       for i, nid in enumerate(node_ids)]
        self.by_node = {d.node_id: d for d in self.drives}
        self.frames_received = 0
        #: s from a frame's arrival at the socket (its kernel time stamp) to its handling here:
        #: the largest, and the largest of an SDO request (the drives' backlog on a busy host)
        self.max_lag = self.max_sdo_lag = 0.0
        self.errors: list = []                    # what the receive thread could not handle
        self._stop = threading.Event()
        self._rx = threading.Thread(target=self._receive, name="cia402_emulator_rx", daemon=True)
        self._hb = threading.Thread(target=self._heartbeats, name="cia402_emulator_hb", daemon=True)
        self._rx.start()
        self._hb.start()

    def send(self, cob_id: int, data: bytes):
        try:
            self.bus.send(can.Message(arbitration_id=cob_id, data=data, is_extended_id=False))
        except can.CanError as e:
            self.errors.append(f"send 0x{cob_id:03X}: {e}")

    def _receive(self):
        while not self._stop.is_set():
            try:
                msg = self.bus.recv(0.05)
            except can.CanError as e:                # a datagram that is not a frame: counted, not fatal
                self.errors.append(str(e))
                continue
            if msg is None or msg.is_error_frame or msg.is_remote_frame:
                continue
            with self.lock:
                self.frames_received += 1
                cob, data = msg.arbitration_id, bytes(msg.data)
                if msg.timestamp > 1e9:                  # a kernel time stamp (udp_multicast)
                    lag = time.time() - msg.timestamp
                    self.max_lag = max(self.max_lag, lag)
                    if 0x601 <= cob <= 0x67F:
                        self.max_sdo_lag = max(self.max_sdo_lag, lag)
                if cob == 0x000:
                    for d in self.drives:
                        d.on_nmt(data)
                    continue
                for d in self.drives:
                    d.on_frame(cob, data)

    def _heartbeats(self):
        while not self._stop.wait(0.005):
            now = time.monotonic()
            with self.lock:
                for d in self.drives:
                    d.heartbeat(now)

    def close(self):
        self._stop.set()
        self._rx.join(2.0)
        self._hb.join(2.0)
        self.bus.shutdown()

    # ------------------------------------------------------------------ inspection
    def __getitem__(self, axis: int) -> EmulatedDrive:
        return self.drives[axis]

    def states(self) -> list:
        with self.lock:
            return [d.state for d in self.drives]

    def marks(self) -> list:
        """Where each drive's state log is now (for :meth:`EmulatedDrive.states_since`)."""
        with self.lock:
            return [len(d.log) for d in self.drives]

    def velocities(self) -> list:
        """Motor speeds (rad/s)."""
        with self.lock:
            return [d.motor.w for d in self.drives]

    # ------------------------------------------------------------------ fault injection
    def drop_tpdos(self, axis: int, count: int = 1):
        """The drive of ``axis`` drops its next ``count`` TPDO frames."""
        with self.lock:
            self.drives[axis].tpdo_drop += count

    def drop_every(self, axis: int, n: int):
        """The drive of ``axis`` drops every ``n``-th TPDO1 frame (0: none)."""
        with self.lock:
            self.drives[axis].tpdo_drop_every = n

    def lose(self, axis: int, fraction: float):
        with self.lock:
            self.drives[axis].tpdo_loss = fraction

    def stop_heartbeat(self, axis: int, stopped: bool = True):
        with self.lock:
            self.drives[axis].heartbeat_on = not stopped

    def mute(self, axis: int, muted: bool = True):
        """The drive of ``axis`` answers nothing and sends nothing (it keeps its state)."""
        with self.lock:
            self.drives[axis].muted = muted

    def inject_fault(self, axis: int, code: int = 0x2310, persistent: bool = True):
        with self.lock:
            self.drives[axis].fault(code, persistent)

    def clear_fault(self, axis: int):
        with self.lock:
            self.drives[axis].fault_cause = None


def parse_udp_channel(channel: str):
    m = re.match(r"^(\d{1,3}(?:\.\d{1,3}){3})(?::(\d+))?$", channel)
    if not m:
        raise ValueError(f"udp_multicast channel must be group[:port], got {channel!r}")
    return m.group(1), int(m.group(2) or 43113)


def send_foreign_datagram(channel: str, payload: bytes = b"\x17\xfe not a CAN frame"):
    """A UDP datagram that is not a python-can frame, to the ``udp_multicast`` channel's group
    and port on this host (what another program using the same port sends)."""
    group, port = parse_udp_channel(channel)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 0)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        s.sendto(payload, (group, port))
    finally:
        s.close()
