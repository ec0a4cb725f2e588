"""``delta-drive-sim``: three simulated CiA 402 servo drives on a CAN bus, with the robot's
physics behind them.

Each drive is a :class:`canopen.LocalNode` (SDO server, NMT slave, heartbeat producer,
EMCY producer) on a python-can bus, with what a real drive adds on top:

* the CiA 402 state machine (:mod:`.cia402`) driven by the controlword, written by SDO or
  received in an RPDO;
* PDOs as the master maps them over SDO (0x1400/0x1600 RPDO, 0x1800/0x1A00 TPDO
  communication and mapping parameters), processed in NMT operational only: synchronous
  RPDOs are latched at the next SYNC, synchronous TPDOs (transmission type 1..240) sent on
  every n-th SYNC;
* on SYNC k, in this order (CiA 301 synchronous PDOs): the physics steps by one
  interpolation period (0x60C2) under the targets latched at SYNC k-1, which applied since;
  the actual values are sampled and the TPDOs sent; then the RPDO data received since SYNC
  k-1 is latched as the targets of the next period. Simulated time is the SYNC count times
  the period (deterministic in tests), so a slow host slows the simulation instead of
  breaking it: the drives' time only passes when the master's SYNC comes. Modes: cyclic
  synchronous position (the drive's own PD loop, gains from the drives config, torque offset
  0x60B2 and velocity offset 0x60B1 as feedforward; without a velocity offset in its RPDOs,
  the target position's change over the last period instead, as a drive's interpolator
  gives its velocity loop), velocity, or torque (0x6071 per-mille of
  0x6076, plus the torque offset), limited to 0x6072;
* faults: following error (0x8611), the mechanism leaving its workspace, no SYNC for
  ``simulation.sync_timeout`` while enabled (0x8100: a real drive faults when its master
  falls silent, whatever it last commanded), or injected ones
  (:meth:`SimulatedCia402Drives.inject_fault`) put a drive in fault and send an EMCY with the
  code; fault reset clears it once the cause is gone.

Behind the bus is the same physics as the ``sim`` backend: a
:class:`~delta_hardware.drives.simulated.SimulatedDriveSet` (Asadi & Heydari's forward
dynamics with friction); the arms are braked unless all three drives are in operation
enabled.

Run it in its own process (``udp_multicast`` or ``socketcan``) for a master in another
(the command line: :mod:`.sim_cli`)::

    delta-drive-sim --interface udp_multicast --channel 239.74.163.2 --robot nt_robot \\
        --drives-config generic_cia402
"""
from __future__ import annotations

import math
import struct
import threading
import time

import canopen
import numpy as np
from canopen import LocalNode

from delta_core.robot_file import load_robot
from delta_hardware import cia402
from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.canopen.bus import DRIVE_RECEIVES, open_bus
from delta_hardware.canopen.receiver import ReceiverWatch
from delta_hardware.canopen.startup import SIMULATED_DEVICE
from delta_hardware.cia402 import Command, State
from delta_hardware.canopen.config import DrivesConfig, load_drives_config
from delta_hardware.drives.interface import DriveState, Mode
from delta_hardware.drives.simulated import SimulatedDriveSet

SYNC_COB_ID = 0x80
ERROR_REGISTER_BITS = {0x2: 0x02, 0x3: 0x04, 0x4: 0x08, 0x8: 0x10}   # code class -> 0x1001 bit
WORKSPACE_FAULT = 0xFF01             # device specific: the simulated mechanism left its workspace
MODE_FAULT = 0x6320                  # parameter error: the three drives are in different modes
SYNC_FAULT = 0x8100                  # communication: no SYNC for simulation.sync_timeout while enabled
DEVICE_NAME = SIMULATED_DEVICE       # 0x1008 manufacturer device name: how a master knows it is simulated


class _Pdo:
    """One PDO as mapped in a drive's object dictionary: COB-ID, transmission type, entries.

    ``whole``: one struct for all the entries when they follow each other with nothing between
    them (every PDO the master maps), else None (then each entry is packed on its own);
    ``names`` the entries' object names in order; ``fields`` (TPDOs, set by
    :meth:`SimulatedDrive.refresh`): per entry a function giving its value and its integer
    range."""
    __slots__ = ("slot", "cob_id", "trans_type", "entries", "size", "whole", "names", "fields")

    def __init__(self, slot, cob_id, trans_type, entries, size):
        self.slot, self.cob_id, self.trans_type, self.entries, self.size = slot, cob_id, trans_type, entries, size
        self.names = tuple(name for name, _, _ in entries)
        self.fields = ()
        off, fmt = 0, "<"
        for _, o, st in entries:
            if o != off or st.format[0] != "<":
                fmt = None
                break
            fmt += st.format[1:]
            off += st.size
        self.whole = struct.Struct(fmt) if fmt is not None and off == size else None


def _bounds(st: struct.Struct):
    """The integer range of the struct ``st`` (one integer)."""
    bits = st.size * 8
    if st.format[-1] in "bhilq":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _clamp(value, st: struct.Struct):
    lo, hi = _bounds(st)
    return min(max(int(value), lo), hi)


class SimulatedDrive:
    """One simulated CiA 402 drive (axis ``axis``) as a canopen local node."""

    def __init__(self, owner: "SimulatedCia402Drives", axis: int, node_id: int, od):
        self.owner = owner
        self.axis = axis
        self.node_id = node_id
        self.units = owner.cfg.axes[axis]
        self.cat = owner.cfg.catalogue
        self.names = {(s.index, s.subindex): n for n, s in self.cat.items()}
        self.node = LocalNode(node_id, od)
        self.od = od
        self.node.add_read_callback(self._on_read)
        self.node.add_write_callback(self._on_write)
        self.state = State.SWITCH_ON_DISABLED
        self.cw = 0
        self.error_code = 0
        self.error_register = 0
        self.fault_cause = None               # an injected cause that outlives a fault reset
        self.targets = {"target_position": 0, "target_velocity": 0, "target_torque": 0,
                        "velocity_offset": 0, "torque_offset": 0}
        self.actual = {"position_actual": 0, "velocity_actual": 0, "torque_actual": 0}
        self.following_error = False
        self.internal_limit = False
        self.rpdos: list[_Pdo] = []
        self.tpdos: list[_Pdo] = []
        self.pending: dict[int, bytes] = {}
        self.velocity_offset_mapped = True     # else CSP's velocity feedforward comes from the targets
        self.last_target = None                # the position target of the last period (rad; m)
        self.params: dict = {}
        self.dirty = True
        self.heartbeat_enabled = True
        self.enabled_at = 0.0                  # monotonic time it entered operation enabled
        self._subscribed: list[int] = []
        self.init_store()

    def init_store(self) -> None:
        """What this drive's hardware sets itself: its encoder resolution, motor rated torque
        and device name (0x1008: ``delta-drive-sim (<drives config>)``)."""
        if 0x1008 in self.od:
            name = f"{DEVICE_NAME} ({self.owner.cfg.name})".encode()
            self.node.data_store.setdefault(0x1008, {})[0] = name
        defaults = {"encoder_increments": self.units.scaling.counts_per_rev, "motor_revolutions": 1,
                    "rated_torque": int(round(self.units.scaling.rated_torque * 1000))}
        for name, value in defaults.items():
            spec = self.cat[name]
            var = odict.find(self.od, spec.index, spec.subindex)
            if var is not None:
                self.node.data_store.setdefault(spec.index, {})[spec.subindex] = var.encode_raw(value)

    # ------------------------------------------------------------------ object access
    def _var(self, name):
        spec = self.cat[name]
        return odict.find(self.od, spec.index, spec.subindex)

    def read_param(self, name, default=None):
        """A parameter as stored in the drive's object dictionary (written by SDO or default)."""
        spec = self.cat[name]
        var = odict.find(self.od, spec.index, spec.subindex)
        if var is None:
            return default
        try:
            return var.decode_raw(self.node.get_data(spec.index, spec.subindex))
        except Exception:
            return default

    def _raw(self, index, sub):
        var = odict.find(self.od, index, sub)
        return var.decode_raw(self.node.get_data(index, sub))

    def value_of(self, name):
        """The value of the object ``name`` as a TPDO carries it: statusword, controlword, an actual value,
        a target, error code or register, or the mode of operation display; None for any other."""
        if name == "statusword":
            return self.statusword()
        if name == "controlword":
            return self.cw
        if name in self.actual:
            return self.actual[name]
        if name in self.targets:
            return self.targets[name]
        if name == "error_code":
            return self.error_code
        if name == "error_register":
            return self.error_register
        if name == "modes_of_operation_display":
            return self.read_param("modes_of_operation", 0)
        return None

    def _getter(self, name):
        """A function of no argument giving :meth:`value_of` ``name`` (0 for an unnamed entry), for the TPDOs."""
        if not name:
            return lambda: 0
        if name == "statusword":
            return self.statusword
        if name == "controlword":
            return lambda: self.cw
        if name in self.actual:
            return lambda: self.actual[name]
        if name in self.targets:
            return lambda: self.targets[name]
        if name == "error_code":
            return lambda: self.error_code
        if name == "error_register":
            return lambda: self.error_register
        return lambda: self.value_of(name)

    def _on_read(self, index, subindex, od):
        name = self.names.get((index, subindex))
        if name is None:
            return None
        with self.owner.lock:
            return self.value_of(name)

    def _on_write(self, index, subindex, od, data):
        name = self.names.get((index, subindex))
        with self.owner.lock:
            if name == "controlword":
                value = od.decode_raw(data)
                self.pending.clear()            # an SDO controlword overrides RPDO data not yet applied
                self.apply_controlword(value)
            elif name in self.targets:
                self.targets[name] = od.decode_raw(data)
            self.dirty = True

    # ------------------------------------------------------------------ state machine
    def statusword(self) -> int:
        """The statusword of the drive's CiA 402 state, with following error, internal limit (torque at its limit),
        target following (modes 8-10) and target reached (CSP, within 10 increments) bits."""
        mode = self.params.get("mode", 0)
        oe = self.state is State.OPERATION_ENABLED
        return cia402.encode_statusword(
            self.state, follows_command=oe and mode in (8, 9, 10), internal_limit=self.internal_limit,
            following_error=self.following_error,
            target_reached=oe and mode == 8 and abs(self.targets["target_position"]
                                                    - self.actual["position_actual"]) <= 10)

    def apply_controlword(self, cw: int) -> None:
        """Step the CiA 402 state machine by the controlword ``cw`` (SDO or RPDO). A fault reset leaves the
        fault only once an injected cause is cleared (then the error is reset and a "no error" EMCY sent);
        entering operation enabled holds the actual position until the first target arrives."""
        command = cia402.decode_controlword(cw, self.cw)
        self.cw = cw
        if command is Command.FAULT_RESET and self.state is State.FAULT and self.fault_cause is not None:
            return                                       # the cause is still there: stay in fault
        before = self.state
        self.state, _ = cia402.drive_transition(self.state, command, self.params.get("qso", 6))
        if before is State.FAULT and self.state is not State.FAULT:
            self.error_code = 0
            self.error_register = 0
            self.following_error = False
            self.owner.send_emcy(self, 0x0000, 0)       # "error reset / no error"
        if self.state is State.OPERATION_ENABLED and before is not State.OPERATION_ENABLED:
            self.enabled_at = time.monotonic()
            # like a real CSP drive: hold where it is until the first target arrives
            self.targets.update(target_position=self.actual["position_actual"], target_velocity=0,
                                target_torque=0, velocity_offset=0, torque_offset=0)

    def fault(self, code: int, persistent: bool = False) -> None:
        """Go to fault (13, 14) with error ``code``; send the EMCY."""
        if persistent:
            self.fault_cause = code
        if self.state is State.FAULT and self.error_code == code:
            return
        self.state = State.FAULT
        self.error_code = code
        self.error_register = 0x01 | ERROR_REGISTER_BITS.get(code >> 12, 0)
        self.owner.send_emcy(self, code, self.error_register)

    # ------------------------------------------------------------------ PDOs
    def refresh(self) -> None:
        """Re-read the PDO mapping and the parameters from the object dictionary."""
        self.dirty = False
        p = self.params
        p["mode"] = self.read_param("modes_of_operation", 0)
        value = self.read_param("interpolation_period_value", 1)
        index = self.read_param("interpolation_period_index", -3)
        p["period"] = value * 10.0 ** index if value else 1e-3
        p["max_torque"] = self.read_param("max_torque", 32767)
        p["rated_torque"] = self.read_param("rated_torque", 1000)
        p["qso"] = self.read_param("quick_stop_option_code", 6)
        p["limit_min"] = self.read_param("software_position_limit_min", -(1 << 31))
        p["limit_max"] = self.read_param("software_position_limit_max", (1 << 31) - 1)
        p["following_window"] = self.read_param("following_error_window", 0xFFFFFFFF)
        self.rpdos = self._layout(0x1400, 0x1600)
        self.tpdos = self._layout(0x1800, 0x1A00)
        self.velocity_offset_mapped = any(e[0] == "velocity_offset" for pdo in self.rpdos for e in pdo.entries)
        self.last_target = None
        for pdo in self.tpdos:
            pdo.fields = tuple((self._getter(name), *_bounds(st)) for name, _, st in pdo.entries)
        net = self.owner.network
        for cob in self._subscribed:
            net.unsubscribe(cob, self._on_rpdo)
        self._subscribed = []
        for pdo in self.rpdos:
            net.subscribe(pdo.cob_id, self._on_rpdo)
            self._subscribed.append(pdo.cob_id)

    def _layout(self, com_base, map_base):
        out = []
        for k in range(512):
            if com_base + k not in self.od:
                break
            cob = self._raw(com_base + k, 1)
            if cob & (1 << 31):
                continue
            n = self._raw(map_base + k, 0)
            entries, bit = [], 0
            for s in range(1, n + 1):
                e = self._raw(map_base + k, s)
                index, sub, nbits = e >> 16, (e >> 8) & 0xFF, e & 0xFF
                var = odict.find(self.od, index, sub)
                if var is None or nbits % 8 or bit % 8:
                    entries = None                   # the sim handles byte-aligned objects only
                    break
                entries.append((self.names.get((index, sub)), bit // 8, var.STRUCT_TYPES[var.data_type]))
                bit += nbits
            if entries is not None:
                out.append(_Pdo(k, cob & 0x7FF, self._raw(com_base + k, 2), entries, bit // 8))
        return out

    def _on_rpdo(self, can_id, data, timestamp):
        if self.node.nmt.state != "OPERATIONAL":
            return
        with self.owner.lock:
            for pdo in self.rpdos:
                if pdo.cob_id == can_id:
                    if pdo.trans_type <= 240:
                        self.pending[pdo.slot] = bytes(data)     # applied at the next SYNC
                    else:
                        self._apply_rpdo(pdo, bytes(data))

    def latch(self) -> None:
        """Apply the RPDO data received since the last SYNC (synchronous RPDOs): the targets
        of the next interpolation period."""
        for pdo in self.rpdos:
            data = self.pending.pop(pdo.slot, None)
            if data is not None:
                self._apply_rpdo(pdo, data)

    def _apply_rpdo(self, pdo: _Pdo, data: bytes) -> None:
        if len(data) < pdo.size:
            return
        if pdo.whole is not None:
            values = {name: v for name, v in zip(pdo.names, pdo.whole.unpack_from(data)) if name}
        else:
            values = {name: st.unpack_from(data, off)[0] for name, off, st in pdo.entries if name}
        if "controlword" in values:
            self.apply_controlword(values.pop("controlword"))
        if self.state is State.OPERATION_ENABLED:          # targets only count when enabled
            for name, v in values.items():
                if name in self.targets:
                    self.targets[name] = v

    def send_tpdos(self, sync_count: int) -> None:
        """Send the TPDOs due at SYNC number ``sync_count`` (transmission type 0, or n <= 240 on every n-th
        SYNC), in NMT operational only."""
        if self.node.nmt.state != "OPERATIONAL":
            return
        for pdo in self.tpdos:
            tt = pdo.trans_type
            if not pdo.entries or tt > 240 or (tt > 0 and sync_count % tt):
                continue
            if pdo.whole is not None:
                data = pdo.whole.pack(*[min(max(int(get() or 0), lo), hi) for get, lo, hi in pdo.fields])
            else:
                buf = bytearray(pdo.size)
                for name, off, st in pdo.entries:
                    v = self.value_of(name) if name else 0
                    st.pack_into(buf, off, _clamp(v or 0, st))
                data = bytes(buf)
            self.owner.network.send_message(pdo.cob_id, data)

    def detach(self):
        """Leave the bus: unsubscribe from the RPDOs and stop the heartbeat."""
        net = self.owner.network
        for cob in self._subscribed:
            net.unsubscribe(cob, self._on_rpdo)
        self._subscribed = []
        self.node.nmt.stop_heartbeat()


class SimulatedCia402Drives:
    """Three simulated CiA 402 drives (one per arm) on a CAN bus, the robot physics behind.

    ``robot``: the robot file for joint order, gear ratio and limits; ``true_robot`` /
    ``payload``: the physics if it differs; ``drives_config``: name, path or a loaded
    :class:`~delta_hardware.canopen.config.DrivesConfig`; ``absent``: axes (0-2) whose drive
    is not on the bus; ``initial_position``: platform position (m) to start from;
    ``realtime``: step the physics by the time between the master's SYNCs (from the frames'
    timestamps, so not stretched by this process's own lag; at least 0, at most 5
    interpolation periods) instead of one interpolation period per SYNC: for a master that
    runs its trajectories on the wall clock. ``faults``: (axis 0-2, error code, simulated
    time in s) to inject once that time is reached (a fault a reset clears: demos, benches).
    A receive error of the bus (a datagram that is not a CAN frame on a ``udp_multicast``
    port) is counted (``receiver.errors``), not fatal.

    :attr:`enabled_time`: simulated seconds stepped with all three drives in operation
    enabled (the time the robot moved under the master's targets).
    """

    def __init__(self, robot="nt_robot", interface="virtual", channel="vcan0", drives_config="",
                 true_robot=None, payload: float = 0.0, absent=(), initial_position=None, seed=0,
                 bus_options=None, realtime: bool = False, faults=()):
        self.realtime = bool(realtime)
        self.robot = load_robot(robot)
        self.cfg: DrivesConfig = (drives_config if isinstance(drives_config, DrivesConfig)
                                  else load_drives_config(drives_config, self.robot))
        sim = self.cfg.sim
        self.physics = SimulatedDriveSet(self.robot, true_robot=true_robot, payload=payload,
                                         drive_rate=sim["drive_rate"], counts_per_rev=2 ** 40,
                                         initial_position=initial_position, mode=Mode.TORQUE,
                                         position_gains=sim["position_gains"], seed=seed)
        self._rng = np.random.default_rng(seed)
        self.lock = threading.RLock()
        self.sync_count = 0
        self.enabled_time = 0.0
        self._last_sync = None
        self._last_sync_stamp = None
        self._sync_periods = np.zeros(100000)
        self._closing = threading.Event()
        self.interface, self.channel = interface, channel
        self.bus = open_bus(interface, channel, receives=DRIVE_RECEIVES, **(bus_options or {}))
        self.network = canopen.Network(self.bus)
        self.network.NOTIFIER_CYCLE = 0.05
        self.drives: list[SimulatedDrive | None] = []
        for axis, node_id in enumerate(self.cfg.node_ids):
            if axis in absent:
                self.drives.append(None)
                continue
            d = SimulatedDrive(self, axis, node_id, self.cfg.object_dictionary(node_id))
            self.network.add_node(d.node)
            self.drives.append(d)
        self.faults = sorted(((float(t), int(a), int(c)) for a, c, t in faults), reverse=True)
        self.receiver = ReceiverWatch(f"{interface} {channel}")
        self.receiver.attach(self.network)
        self.network.subscribe(SYNC_COB_ID, self._on_sync)
        self.network.subscribe(0, self._on_nmt)
        self.network.connect()
        self._update_actual()
        for d in self.present:
            self._boot(d)
        self._watchdog = threading.Thread(target=self._watch_sync, name="drive_sim_sync_watchdog", daemon=True)
        self._watchdog.start()

    @property
    def present(self):
        """The drives on the bus (the absent ones left out)."""
        return [d for d in self.drives if d is not None]

    # ------------------------------------------------------------------ NMT
    def _boot(self, d: SimulatedDrive):
        d.node.nmt.state = "INITIALISING"                # sends the boot-up message
        d.node.nmt.state = "PRE-OPERATIONAL"             # starts the heartbeat (0x1017)
        if not d.heartbeat_enabled:
            d.node.nmt.stop_heartbeat()
        d.dirty = True

    def _on_nmt(self, can_id, data, timestamp):
        if len(data) < 2:
            return
        cmd, node_id = data[0], data[1]
        with self.lock:
            for d in self.present:
                if node_id not in (0, d.node_id):
                    continue
                if cmd in (129, 130):                    # reset node / communication: boot again
                    if cmd == 129:
                        d.node.data_store.clear()
                        d.init_store()
                    else:
                        for index in [i for i in d.node.data_store if 0x1000 <= i < 0x2000]:
                            del d.node.data_store[index]
                    d.state = State.SWITCH_ON_DISABLED
                    self._boot(d)
                elif cmd == 1:
                    d.refresh()                          # PDOs as mapped now

    # ------------------------------------------------------------------ SYNC: one interpolation period
    def _on_sync(self, can_id, data, timestamp):
        """SYNC k: step under the targets latched at SYNC k-1, sample and send the TPDOs,
        then latch the RPDOs received since SYNC k-1."""
        now = time.monotonic()
        with self.lock:
            if self._last_sync is not None:
                self._sync_periods[self.sync_count % len(self._sync_periods)] = now - self._last_sync
            since = None if self._last_sync_stamp is None else max(timestamp - self._last_sync_stamp, 0.0)
            self._last_sync = now
            self._last_sync_stamp = timestamp
            self.sync_count += 1
            drives = self.present
            for d in drives:
                if d.dirty:
                    d.refresh()
            self._step(drives, since)
            while self.faults and self.time >= self.faults[-1][0] - 1e-9:
                _, axis, code = self.faults.pop()
                if self.drives[axis] is not None:
                    self.drives[axis].fault(code)
            self._update_actual()
            for d in drives:
                d.send_tpdos(self.sync_count)
            for d in drives:
                d.latch()

    def _watch_sync(self, interval: float = 0.02) -> None:
        """A drive in operation enabled without SYNC for ``simulation.sync_timeout`` faults
        (0x8100), as a real drive does when its master falls silent. Not after a stall of
        this process itself: then SYNCs may be waiting unread, and the clock restarts."""
        last = time.monotonic()
        grace = last
        while not self._closing.wait(interval):
            now = time.monotonic()
            if now - last > 5 * interval:
                grace = now
            last = now
            timeout = self.cfg.sim["sync_timeout"]
            if not timeout:
                continue
            with self.lock:
                seen = self._last_sync if self._last_sync is not None else -math.inf
                for d in self.present:
                    if d.state is State.OPERATION_ENABLED and now - max(seen, grace, d.enabled_at) > timeout:
                        d.fault(SYNC_FAULT)

    def _step(self, drives, since=None):
        ph = self.physics
        period = drives[0].params.get("period", 1e-3) if drives else 1e-3
        if self.realtime and since is not None:
            period = min(since, 5 * period)
        all_enabled = len(drives) == 3 and all(d.state is State.OPERATION_ENABLED for d in drives)
        for d in drives:
            if d.state is State.QUICK_STOP_ACTIVE and cia402.quick_stop_completes(d.params.get("qso", 6)):
                d.state = State.SWITCH_ON_DISABLED       # stopped at once (the brakes): transition 12
        modes = {d.params.get("mode") for d in drives}
        if all_enabled and (len(modes) != 1 or next(iter(modes)) not in (8, 9, 10)):
            for d in drives:
                d.fault(MODE_FAULT)
            all_enabled = False
        if not all_enabled:
            for d in drives:
                d.last_target = None
            if ph.state is DriveState.ENABLED:
                ph.disable()                             # the brakes hold the arms
            ph.cycle(period)
            for d in drives:
                d.internal_limit = False
            return
        if ph.state is not DriveState.ENABLED:
            ph.reset()
            ph.enable()
        mode = next(iter(modes))
        units = [d.units for d in drives]
        lim = self.robot.limits.effort                   # N m at the arms, N on carriages
        ph.torque_limit = tuple(min(lim[i], d.params["max_torque"] * units[i].scaling.gear_ratio
                                    * d.params["rated_torque"] / 1e6) for i, d in enumerate(drives))
        rated = [u.scaling.gear_ratio * d.params["rated_torque"] / 1e6 * u.scaling.direction
                 for u, d in zip(units, drives)]         # N m at the arm (N on a carriage) per per-mille
        ff = [rated[i] * d.targets["torque_offset"] for i, d in enumerate(drives)]
        if mode != 8:
            for d in drives:
                d.last_target = None
        if mode == 8:
            ph.mode = Mode.POSITION
            ph.kp, ph.kd = self.cfg.sim["position_gains"]
            q = [units[i].position_to_si(min(max(d.targets["target_position"], d.params["limit_min"]),
                                             d.params["limit_max"])) for i, d in enumerate(drives)]
            v = []
            for i, d in enumerate(drives):
                if d.velocity_offset_mapped:
                    v.append(units[i].velocity_to_si(d.targets["velocity_offset"]))
                else:                                    # the interpolator's velocity: targets T apart
                    v.append(0.0 if d.last_target is None else (q[i] - d.last_target) / d.params["period"])
                d.last_target = q[i]
            ph.write(position=q, velocity=v, torque=ff)
        elif mode == 9:
            ph.mode = Mode.POSITION                       # kp = 0: a velocity loop
            ph.kp, ph.kd = 0.0, self.cfg.sim["velocity_gain"]
            v = [units[i].velocity_to_si(d.targets["target_velocity"] + d.targets["velocity_offset"])
                 for i, d in enumerate(drives)]
            ph.write(position=[0.0] * 3, velocity=v, torque=ff)
        else:
            ph.mode = Mode.TORQUE
            tau = []
            for i, d in enumerate(drives):
                pm = d.targets["target_torque"] + d.targets["torque_offset"]
                pm = min(max(pm, -d.params["max_torque"]), d.params["max_torque"])
                tau.append(rated[i] * pm)
            ph.write(torque=tau)
        ph.cycle(period)
        self.enabled_time += period
        if ph.state is DriveState.FAULT:
            for d in drives:
                d.fault(WORKSPACE_FAULT)

    def _update_actual(self):
        fb = self.physics.read()
        sim = self.cfg.sim
        vn, tn = sim["velocity_noise"], sim["torque_noise"]
        limits = self.physics.torque_limit
        for i, d in enumerate(self.drives):
            if d is None:
                continue
            u = d.units
            sc = u.scaling
            qd = fb.velocity[i] + (vn * self._rng.standard_normal() if vn else 0)
            tau = fb.torque[i] + (tn * self._rng.standard_normal() if tn else 0)
            actual, params = d.actual, d.params
            actual["position_actual"] = position = u.position_to_counts(fb.position[i])
            actual["velocity_actual"] = u.velocity_to_units(qd)
            rated = params.get("rated_torque") or int(round(sc.rated_torque * 1000))
            actual["torque_actual"] = int(round(sc.direction * tau * 1e6 / (sc.gear_ratio * rated)))
            enabled = d.state is State.OPERATION_ENABLED
            d.internal_limit = enabled and abs(fb.torque[i]) >= limits[i] - 1e-9
            window = params.get("following_window", 0xFFFFFFFF)
            if (enabled and window != 0xFFFFFFFF and params.get("mode") == 8
                    and abs(d.targets["target_position"] - position) > window):
                d.following_error = True
                d.fault(0x8611)

    # ------------------------------------------------------------------ EMCY
    def send_emcy(self, d: SimulatedDrive, code: int, register: int) -> None:
        """Send an EMCY of drive ``d`` with error ``code`` and error ``register`` (in NMT operational or
        pre-operational only)."""
        if d.node.nmt.state in ("OPERATIONAL", "PRE-OPERATIONAL"):
            d.node.emcy.send(code, register)

    # ------------------------------------------------------------------ for tests and demos
    def inject_fault(self, axis: int, code: int = 0x2310, persistent: bool = True) -> None:
        """Put the drive of ``axis`` (0-2) in fault with error ``code`` and send the EMCY.
        ``persistent``: a fault reset does not clear it until :meth:`clear_fault`."""
        with self.lock:
            self.drives[axis].fault(code, persistent)

    def clear_fault(self, axis: int) -> None:
        """The cause of an injected fault is gone: a fault reset now clears it."""
        with self.lock:
            self.drives[axis].fault_cause = None

    def stop_heartbeat(self, axis: int) -> None:
        """The drive of ``axis`` stops sending heartbeats (everything else goes on)."""
        with self.lock:
            d = self.drives[axis]
            d.heartbeat_enabled = False
            d.node.nmt.stop_heartbeat()
            d.node.nmt.start_heartbeat = lambda ms: None      # broken: writing 0x1017 does not help

    def start_heartbeat(self, axis: int) -> None:
        """The drive of ``axis`` sends heartbeats again (undoes :meth:`stop_heartbeat`), at its 0x1017 period
        or the drives config's."""
        with self.lock:
            d = self.drives[axis]
            d.heartbeat_enabled = True
            d.node.nmt.__dict__.pop("start_heartbeat", None)
            d.node.nmt.start_heartbeat(d.read_param("producer_heartbeat_time", 0) or self.cfg.heartbeat_ms)

    def reboot(self, axis: int) -> None:
        """The drive of ``axis`` loses power for a moment: it boots again with its defaults
        (no PDO mapping, no heartbeat producer, switch on disabled, NMT pre-operational)."""
        with self.lock:
            d = self.drives[axis]
            d.node.nmt.stop_heartbeat()
            d.node.data_store.clear()
            d.init_store()
            d.state, d.cw, d.pending = State.SWITCH_ON_DISABLED, 0, {}
            self._boot(d)
            d.refresh()

    def unplug(self, axis: int) -> None:
        """The drive of ``axis`` leaves the bus: no heartbeat, no SDO answers, no PDOs."""
        with self.lock:
            d = self.drives[axis]
            if d is None:
                return
            d.detach()
            del self.network[d.node_id]
            self.drives[axis] = None

    def drive_state(self, axis: int) -> State:
        """The CiA 402 state of the drive of ``axis`` (0-2)."""
        return self.drives[axis].state

    def states(self) -> str:
        """The CiA 402 state of each drive, e.g. ``switch on disabled, fault, absent``."""
        with self.lock:
            return ", ".join(d.state.value if d else "absent" for d in self.drives)

    def sync_periods(self) -> np.ndarray:
        """Intervals (s) between the SYNC messages received (the last 100000)."""
        with self.lock:
            n = max(self.sync_count - 1, 0)
            return self._sync_periods[1:n + 1].copy() if n < len(self._sync_periods) else self._sync_periods.copy()

    @property
    def time(self) -> float:
        """Simulated time (s): SYNC count times the interpolation period."""
        return self.physics.time

    @property
    def platform_position(self):
        """The true platform position (m) of the simulated robot."""
        return self.physics.platform_position

    def joint_positions(self):
        """The true joint positions (rad; m on a linear robot) of the simulated robot."""
        return self.physics.read().position

    def close(self) -> bool:
        """Stop the drives and release the bus; True if the bus was closed cleanly."""
        self._closing.set()
        with self.lock:
            for d in self.present:
                d.detach()
        try:
            self.network.disconnect()
        except Exception:
            return False
        return True
