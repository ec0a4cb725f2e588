"""One CiA 402 drive as the master sees it: its :class:`canopen.RemoteNode`, its unit
scaling, its PDOs, the cache of its process values, and SDO access whose errors name the
axis, the object and its address.

Every other service of the backend (:mod:`.startup`, :mod:`.pdo_map`, :mod:`.monitor`,
:mod:`.cyclic`, the state machine in :mod:`.cia402`) works on these objects.
"""
from __future__ import annotations

import logging
import math
import threading
import time

import can
import canopen

from delta_hardware import cia402
from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.drives.interface import DriveError


class _OwnSdoErrors(logging.Filter):
    """``canopen`` logs "Transfer aborted by client with code 0x05040000" when an SDO request
    times out (it sends the abort to the drive); the backend raises its own error that names
    the axis and the object, so the bare line is left out."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Transfer aborted by client")


logging.getLogger("canopen.sdo.client").addFilter(_OwnSdoErrors())


class Axis:
    """The drive of one arm (``index`` 0-2, CAN ``node_id``) and what the master knows of it.

    ``lock`` guards ``values`` and ``stamp`` (the feedback cache, written by the TPDO
    callbacks and by SDO reads of the statusword); the backend shares one lock between its
    axes. The supervision fields (``hb_time``, ``silent_cycles``, ``lost``, ``quick_stop``)
    belong to :mod:`.monitor` and :mod:`.cyclic`.
    """

    def __init__(self, index: int, node_id: int, joint: str, units, node: canopen.RemoteNode,
                 catalogue: dict, lock=None):
        self.index = index
        self.node_id = node_id
        self.joint = joint
        self.units = units
        self.node = node
        self.cat = catalogue
        self.lock = lock if lock is not None else threading.RLock()
        self.rpdos: list = []                 # pdo_map.Pdo, as mapped at start-up
        self.tpdos: list = []
        #: no TPDO carries velocity_actual: :mod:`.cyclic` differentiates the positions
        self.derive_velocity = False
        self.values = {"statusword": 0, "position_actual": 0, "velocity_actual": 0, "torque_actual": 0,
                       "error_code": 0}
        self.stamp = -math.inf                # when `statusword` was true (SYNC or SDO read time)
        self.device_name = ""                 # 0x1008, read at start-up ('' if the drive has none)
        self.hb_time = None                   # monotonic time of the last heartbeat
        self.hb_state = None                  # the NMT state it reported
        self.silent_cycles = 0                # control cycles in a row without this axis' TPDOs
        self.lost = False                     # gone (TPDOs or heartbeat) since `lost_time`: not waited for
        self.silent = False                   # its TPDOs or an SDO answer stopped (not worth an SDO)
        self.lost_time = None
        self.tpdo_missed = 0                  # TPDO frames that did not answer their SYNC (held values)
        self.tpdo_missed_time = None          # monotonic time of the last one
        #: quick stop of this axis: None (none due), "sent" (decided: on every RPDO, and by SDO
        #: if the drive answers; not yet seen to hold) or "confirmed" (a statusword from after
        #: the first SYNC that latched it shows the drive out of operation enabled)
        self.quick_stop = None
        #: the stop command of the drive set (quick stop, disable voltage) still goes out on this
        #: drive's RPDOs before every SYNC: until its statusword shows that it holds
        self.rpdo_pending = False
        self.stop_latch = None                # monotonic time of the first SYNC after the command was (re)sent
        self.stop_resent = 0                  # times the drive was found out of the commanded state
        self.sdo_lock = threading.RLock()     # one SDO transfer to this drive at a time
        #: called with each controlword before it is written by SDO (the backend mirrors it on
        #: the RPDO while it steps the drive, so that RPDO data in flight cannot contradict it)
        self.before_controlword = None

    @property
    def label(self) -> str:
        """``axis <n> (<joint>, node <id>)`` for messages (n counts from 1)."""
        return f"axis {self.index + 1} ({self.joint}, node {self.node_id})"

    @property
    def cia_state(self) -> cia402.State | None:
        """The CiA 402 state the last statusword reports (None for a pattern CiA 402 does not define)."""
        return cia402.decode_statusword(self.values["statusword"])

    def has(self, name: str) -> bool:
        """Whether the drive's object dictionary holds the object ``name``."""
        spec = self.cat[name]
        return odict.find(self.node.object_dictionary, spec.index, spec.subindex) is not None

    # ------------------------------------------------------------------ SDO
    def read(self, name: str) -> int:
        """Upload the object ``name`` by SDO (bounded by the node's SDO timeout)."""
        spec = self.cat[name]
        var = odict.find(self.node.object_dictionary, spec.index, spec.subindex)
        try:
            with self.sdo_lock:
                data = self.node.sdo.upload(spec.index, spec.subindex)
            return var.decode_raw(data) if var is not None else int.from_bytes(data, "little")
        except canopen.SdoCommunicationError:
            raise DriveError(f"{self.label}: no SDO answer reading {name} ({spec.address}) within "
                             f"{self.node.sdo.RESPONSE_TIMEOUT:.2f} s") from None
        except canopen.SdoAbortedError as e:
            raise DriveError(f"{self.label}: reading {name} ({spec.address}) was refused: {e}") from None
        except (can.CanError, OSError) as e:
            raise DriveError(f"{self.label}: reading {name} ({spec.address}): CAN bus error: {e}") from None

    def write(self, name: str, value: int) -> None:
        """Download ``value`` to the object ``name`` by SDO; confirmed by the drive's answer."""
        spec = self.cat[name]
        var = odict.find(self.node.object_dictionary, spec.index, spec.subindex)
        if var is None:
            raise DriveError(f"{self.label}: the object dictionary has no {name} ({spec.address})")
        try:
            with self.sdo_lock:
                self.node.sdo.download(spec.index, spec.subindex, var.encode_raw(value))
        except canopen.SdoCommunicationError:
            raise DriveError(f"{self.label}: no SDO answer writing {name} ({spec.address}) within "
                             f"{self.node.sdo.RESPONSE_TIMEOUT:.2f} s") from None
        except canopen.SdoAbortedError as e:
            raise DriveError(f"{self.label}: writing {name} ({spec.address}) = {value} was refused: {e}") from None
        except (can.CanError, OSError) as e:
            raise DriveError(f"{self.label}: writing {name} ({spec.address}): CAN bus error: {e}") from None

    def read_device_name(self) -> str:
        """The manufacturer device name (0x1008, optional in CiA 301): '' if there is none."""
        try:
            with self.sdo_lock:
                return bytes(self.node.sdo.upload(0x1008, 0)).decode("latin-1").rstrip("\x00 ")
        except (canopen.SdoCommunicationError, canopen.SdoAbortedError, can.CanError, OSError):
            return ""

    def read_state(self) -> cia402.State | None:
        """The statusword by SDO; also updates the feedback cache (newer than any TPDO so far)."""
        t = time.monotonic()
        sw = self.read("statusword")
        with self.lock:
            if t >= self.stamp:
                self.values["statusword"] = sw
                self.stamp = t
        return cia402.decode_statusword(sw)

    def write_controlword(self, value: int) -> None:
        """The controlword by SDO (a step of :mod:`delta_hardware.cia402.master`)."""
        if self.before_controlword is not None:
            self.before_controlword(value)
        self.write("controlword", value)

    def error_text(self) -> str:
        """``error code 0x2310 (continuous over-current)``: by SDO, else the last TPDO's."""
        try:
            code = self.read("error_code")
        except DriveError:
            code = self.values.get("error_code", 0)
        return f"error code {cia402.error_text(code)}"
