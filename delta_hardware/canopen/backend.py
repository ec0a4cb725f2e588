"""The ``canopen`` drive backend: three CiA 402 servo drives on a CAN bus, through the
``canopen`` and ``python-can`` packages.

Start-up (the constructor; any failure raises :class:`DriveError` naming the node and axis,
within bounded SDO timeouts, and releases the bus):

1. open the bus (``can.Bus(interface=..., channel=...)``), one :class:`canopen.RemoteNode`
   per axis with the object dictionary of the drives config (EDS file or built in);
2. NMT pre-operational, then ask every drive for its device type (0x1000) at once: a silent
   bus or a missing drive is reported with the node IDs that did not answer;
3. SDO configuration of each drive (in parallel): a drive left enabled is disabled; encoder
   resolution checked (0x608F); mode of operation (0x6060: 8 CSP, 9 CSV, 10 CST) and its
   display checked (0x6061); interpolation period (0x60C2) and SYNC period (0x1006); max
   torque (0x6072), motor rated torque (0x6076), quick stop option (0x605A), software
   position limits (0x607D), following error window (0x6065); heartbeat producer (0x1017);
   the PDO mapping of the config (RPDO: controlword + targets, TPDO: statusword + actual
   values), synchronous (transmission type 1);
4. NMT start, a heartbeat from every drive, one SYNC answered by every TPDO.

The cyclic exchange, one :meth:`cycle` per control period: the RPDOs with the targets of the
last :meth:`write` (only while every axis is in operation enabled), then SYNC; the drives
apply the targets, and answer with their TPDOs; the next :meth:`read` waits (bounded) for the
TPDOs of that SYNC and returns them in SI units.

State changes (enable, disable, quick stop, fault reset) go by SDO to the controlword with
the statusword read back, so they are confirmed and never ride on a PDO that carries targets.

Faults: an EMCY from a drive, its heartbeat missing for longer than the consumer time, its
NMT state leaving operational, or its statusword showing fault put the drive set in FAULT;
the first :meth:`read` that sees it quick-stops every axis itself and reports, per axis, the
reason (``Feedback.faults``). :meth:`reset` clears them once the cause is gone.
"""
from __future__ import annotations

import math
import struct
import threading
import time

import canopen
import numpy as np
from canopen.objectdictionary import (INTEGER8, INTEGER16, INTEGER32, UNSIGNED8, UNSIGNED16,
                                      UNSIGNED32)

from delta_core.robot_file import RobotFileError, load_robot
from delta_hardware.canopen import cia402
from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.canopen.bus import open_bus
from delta_hardware.canopen.cia402 import Command, State
from delta_hardware.canopen.config import (DrivesConfigError, interpolation_period_encoding,
                                           load_drives_config)
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode

_CODES = {UNSIGNED8: "B", INTEGER8: "b", UNSIGNED16: "H", INTEGER16: "h", UNSIGNED32: "I", INTEGER32: "i"}
NMT_OPERATIONAL = 5
TPDO_MISS_LIMIT_S = 0.1          # s of SYNCs without a TPDO from a drive -> fault


class _Pdo:
    """One configured PDO of one axis: COB-ID, the objects in it and their packing."""
    __slots__ = ("cob_id", "names", "st", "slot", "callback")

    def __init__(self, cob_id, names, specs, slot):
        self.callback = None
        self.cob_id = cob_id
        self.names = tuple(names)
        self.st = struct.Struct("<" + "".join(_CODES[s.data_type] for s in specs))
        self.slot = slot


def _clamp_int(v, code):
    bits = struct.calcsize(code) * 8
    lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if code.islower() else (0, (1 << bits) - 1))
    return min(max(int(v), lo), hi)


class _Axis:
    def __init__(self, index, node_id, joint, units, node):
        self.index = index
        self.node_id = node_id
        self.joint = joint
        self.units = units
        self.node = node
        self.rpdos: list[_Pdo] = []
        self.tpdos: list[_Pdo] = []
        self.values = {"statusword": 0, "position_actual": 0, "velocity_actual": 0, "torque_actual": 0,
                       "error_code": 0}
        self.stamp = -math.inf              # when `statusword` was true (SYNC or SDO read time)
        self.hb_time = None                 # monotonic time of the last heartbeat
        self.hb_state = None                # NMT state it reported
        self.missed = 0                     # consecutive SYNCs without this axis' TPDOs
        self.qs_sent = False

    @property
    def label(self):
        return f"axis {self.index + 1} ({self.joint}, node {self.node_id})"

    @property
    def cia_state(self):
        return cia402.decode_statusword(self.values["statusword"])


class _Ring:
    def __init__(self, size=10000):
        self.a = np.zeros(size)
        self.n = 0

    def add(self, v):
        self.a[self.n % len(self.a)] = v
        self.n += 1

    def values(self):
        return self.a[:min(self.n, len(self.a))]

    def summary(self, scale=1e3):
        v = self.values()
        if not len(v):
            return {}
        return {"mean": scale * float(v.mean()), "p50": scale * float(np.percentile(v, 50)),
                "p99": scale * float(np.percentile(v, 99)), "max": scale * float(v.max()),
                "std": scale * float(v.std())}


class CanopenDriveSet(DriveSet):
    """Three CiA 402 servo drives on a CAN bus (see the module docstring).

    ``robot``: the robot file (joint names, gear ratio, limits); ``interface``/``channel``:
    the python-can bus; ``drives_config``: ``config/drives/<name>.yaml`` or a path (default
    ``generic_cia402``); ``rate``: the control rate, which is the SYNC rate. Extra options:
    ``simulate`` (start ``delta-drive-sim`` in-process on the same bus; default from the
    config), ``sim_options`` (dict for :class:`~.drive_sim.SimulatedCia402Drives`),
    ``config_overrides`` (dict merged over the config file), ``bus_options`` (dict for
    ``can.Bus``).
    """

    def __init__(self, robot, interface: str = "virtual", channel: str = "vcan0", drives_config: str = "",
                 rate: float = 500.0, simulate: bool | None = None, sim_options: dict | None = None,
                 config_overrides: dict | None = None, bus_options: dict | None = None, **kw):
        if kw:
            raise DriveError(f"canopen backend: unknown option(s) {', '.join(sorted(kw))}")
        try:
            self.robot = load_robot(robot)
            self.cfg = load_drives_config(drives_config, self.robot, config_overrides)
        except (RobotFileError, DrivesConfigError) as e:
            raise DriveError(str(e)) from None
        if not (rate > 0 and math.isfinite(rate)):
            raise DriveError(f"canopen backend: rate must be > 0 Hz, got {rate}")
        self.mode = self.cfg.mode
        self.rate = float(rate)
        self.period = 1.0 / self.rate
        self.interp_period = self.cfg.interpolation_period or self.period
        self.tpdo_timeout = self.cfg.tpdo_timeout if self.cfg.tpdo_timeout is not None else 0.8 * self.period
        self.interface, self.channel = interface, channel
        self.where = f"{interface} {channel}"
        self.cat = self.cfg.catalogue
        self._lock = threading.RLock()          # command state; held while RPDOs + SYNC go out
        self._sdo_lock = threading.RLock()      # one SDO sequence at a time
        self._fb = threading.Condition()        # feedback cache and TPDO arrival
        self._faults: dict[int, str] = {}
        self._running = False                   # enabled by enable(), until disable/quick stop/fault
        self._stopped = ""                      # quick stop reason
        self._fault_handled = False
        self._fresh = False
        self._cmd = [self._hold_targets(None) for _ in range(3)]
        self._sync_out = False
        self._sync_time = 0.0
        self._got: set = set()
        self._expected = 0
        self._monitoring = False
        self._closed = False
        self.sim = None
        self.network = None
        self.emcy_log: list = []
        self.stats = {"syncs": 0, "late": 0, "rpdo_frames": 0, "sync_period": _Ring(), "latency": _Ring()}
        self._last_sync_sent = None
        #: optional ``recorder(kind, time, data)`` for benchmarks: kind "sync" with the targets
        #: sent (list of dicts, or None), "tpdo" with (axis, {object: value})
        self.recorder = None
        try:
            if self.cfg.simulate if simulate is None else simulate:
                from delta_hardware.canopen.drive_sim import SimulatedCia402Drives
                try:
                    self.sim = SimulatedCia402Drives(self.robot, interface, channel, self.cfg, **(sim_options or {}))
                except (DriveError, TypeError, ValueError) as e:
                    raise DriveError(f"cannot start the simulated drives on {self.where}: {e}") from None
                except Exception as e:                   # python-can errors opening the bus
                    raise DriveError(f"cannot open CAN bus {self.where} for the simulated drives: {e}") from None
            try:
                bus = open_bus(interface, channel, **(bus_options or {}))
            except Exception as e:
                raise DriveError(f"cannot open CAN bus {self.where}: {e}") from None
            self.network = canopen.Network(bus)
            self.network.NOTIFIER_CYCLE = 0.05
            self.axes: list[_Axis] = []
            for i, node_id in enumerate(self.cfg.node_ids):
                node = canopen.RemoteNode(node_id, self.cfg.object_dictionary(node_id))
                node.sdo.RESPONSE_TIMEOUT = self.cfg.sdo_timeout
                node.sdo.MAX_RETRIES = 1
                self.network.add_node(node)
                ax = _Axis(i, node_id, self.robot.joint_names[i], self.cfg.axes[i], node)
                node.emcy.add_callback(lambda e, ax=ax: self._on_emcy(ax, e))
                node.nmt.add_heartbeat_callback(lambda s, ax=ax: self._on_heartbeat(ax, s))
                self.axes.append(ax)
            self.network.connect()
            self._startup()
        except BaseException:
            self.close()
            raise

    # ================================================================== start-up
    def _startup(self):
        for ax in self.axes:
            ax.node.nmt.state = "PRE-OPERATIONAL"
        self._probe()
        self._parallel(self._configure, "configuration")
        t_start = time.monotonic()
        for ax in self.axes:
            ax.node.nmt.state = "OPERATIONAL"
        wait = max(self.cfg.startup_timeout, 2.5 * self.cfg.heartbeat_ms / 1000.0)
        deadline = t_start + wait
        while time.monotonic() < deadline:
            if all(ax.hb_time is not None and ax.hb_time >= t_start and ax.hb_state == NMT_OPERATIONAL
                   for ax in self.axes):
                break
            time.sleep(0.002)
        bad = [ax for ax in self.axes if not (ax.hb_time is not None and ax.hb_time >= t_start)]
        if bad:
            raise DriveError(f"no heartbeat within {wait:.2f} s from {self._labels(bad)} on {self.where} "
                             f"(producer time {self.cfg.heartbeat_ms} ms was written to 0x1017)")
        bad = [ax for ax in self.axes if ax.hb_state != NMT_OPERATIONAL]
        if bad:
            raise DriveError(f"{self._labels(bad)} did not go to NMT operational "
                             f"(heartbeat reports {[self._nmt_name(ax.hb_state) for ax in bad]})")
        self._monitoring = True
        self.cycle(self.period)                         # one SYNC: every TPDO must answer
        deadline = time.monotonic() + self.cfg.startup_timeout
        with self._fb:
            while len(self._got) < self._expected and time.monotonic() < deadline:
                self._fb.wait(0.005)
            missing = [ax for ax in self.axes if any((ax.index, p.slot) not in self._got for p in ax.tpdos)]
            self._sync_out = False
        if missing:
            raise DriveError(f"no TPDO after SYNC from {self._labels(missing)} within "
                             f"{self.cfg.startup_timeout:.2f} s: the PDO mapping was not taken")

    def _probe(self):
        """Ask every drive for its device type at once; name the ones that do not answer."""
        results: dict[int, object] = {}

        def ask(ax):
            ax.node.sdo.RESPONSE_TIMEOUT = self.cfg.startup_timeout
            try:
                results[ax.index] = self._read(ax, "device_type")
            except DriveError as e:
                results[ax.index] = e
            finally:
                ax.node.sdo.RESPONSE_TIMEOUT = self.cfg.sdo_timeout

        threads = [threading.Thread(target=ask, args=(ax,), daemon=True) for ax in self.axes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.cfg.startup_timeout + 1.0)
        silent = [ax for ax in self.axes if not isinstance(results.get(ax.index), int)]
        if len(silent) == len(self.axes):
            raise DriveError(f"no drive answered on {self.where} within {self.cfg.startup_timeout:.2f} s "
                             f"(node IDs {', '.join(str(a.node_id) for a in self.axes)}): the bus is silent - "
                             f"check power, wiring, bitrate, channel and the node IDs in {self.cfg.source}")
        if silent:
            raise DriveError(f"drive missing: no answer from {self._labels(silent)} on {self.where} within "
                             f"{self.cfg.startup_timeout:.2f} s (the other drives answered)")
        for ax in self.axes:
            dt = results[ax.index]
            if dt & 0xFFFF != 402:
                raise DriveError(f"{ax.label} is not a CiA 402 drive: device type 0x{dt:08X} (0x1000)")

    def _configure(self, ax: _Axis):
        st = self._read_state(ax)
        if st in (State.READY_TO_SWITCH_ON, State.SWITCHED_ON, State.OPERATION_ENABLED, State.QUICK_STOP_ACTIVE):
            self._write(ax, "controlword", Command.DISABLE_VOLTAGE.value)      # a safe start
        u = ax.units.scaling
        if self.cfg.check_encoder_resolution and odict.find(ax.node.object_dictionary, 0x608F, 1) is not None:
            inc, rev = self._read(ax, "encoder_increments"), self._read(ax, "motor_revolutions")
            if rev == 0 or inc / rev != u.counts_per_rev:
                raise DriveError(f"{ax.label}: the drive's encoder has {inc}/{rev} increments per motor "
                                 f"revolution (0x608F), {self.cfg.source} says counts_per_rev {u.counts_per_rev}")
        mode = self.mode.value
        self._write(ax, "modes_of_operation", mode)
        shown = self._read(ax, "modes_of_operation_display")
        if shown != mode:
            raise DriveError(f"{ax.label} does not take mode {mode} ({cia402.MODE_NAMES[mode]}): "
                             f"0x6061 shows {shown}")
        value, index = interpolation_period_encoding(self.interp_period)
        self._write(ax, "interpolation_period_value", value)
        self._write(ax, "interpolation_period_index", index)
        if odict.find(ax.node.object_dictionary, 0x1006, 0) is not None:
            self._write(ax, "communication_cycle_period", int(round(self.period * 1e6)))
        self._write(ax, "max_torque", self.cfg.max_torque[ax.index])
        if self.cfg.write_rated_torque:
            self._write(ax, "rated_torque", int(round(u.rated_torque * 1000)))
        self._write(ax, "quick_stop_option_code", self.cfg.quick_stop_option_code)
        if self.cfg.software_limits:
            lo, hi = self.robot.limits.position[ax.index]
            m = self.cfg.position_limit_margin
            c = sorted((ax.units.position_to_counts(lo - m), ax.units.position_to_counts(hi + m)))
            self._write(ax, "software_position_limit_min", c[0])
            self._write(ax, "software_position_limit_max", c[1])
        few = self.cfg.following_error_window
        self._write(ax, "following_error_window",
                    min(int(round(few / u.rad_per_count)), 0xFFFFFFFE) if few > 0 else 0xFFFFFFFF)
        self._write(ax, "producer_heartbeat_time", self.cfg.heartbeat_ms)
        self._map_pdos(ax)

    def _map_pdos(self, ax: _Axis):
        net = self.network
        for p in ax.tpdos:
            try:
                net.unsubscribe(p.cob_id, p.callback)
            except (KeyError, ValueError):
                pass
        ax.rpdos, ax.tpdos = [], []
        for maps, wanted, base, out in ((ax.node.rpdo.map, self.cfg.rpdo, 0x200, ax.rpdos),
                                        (ax.node.tpdo.map, self.cfg.tpdo, 0x180, ax.tpdos)):
            kind = "RPDO" if base == 0x200 else "TPDO"
            if len(wanted) > len(maps):
                raise DriveError(f"{ax.label}: the object dictionary has {len(maps)} {kind}s, "
                                 f"{self.cfg.source} maps {len(wanted)}")
            for slot, m in maps.items():
                if slot > odict.PDO_SLOTS:
                    continue
                m.clear()
                m.cob_id = base + 0x100 * (slot - 1) + ax.node_id
                if slot <= len(wanted):
                    names = wanted[slot - 1]
                    for name in names:
                        spec = self.cat[name]
                        m.add_variable(spec.index, spec.subindex)
                    m.trans_type = 1                    # synchronous: every SYNC
                    m.enabled = True
                else:
                    m.enabled = False
                    m.trans_type = None
                try:
                    m.save()
                except (canopen.SdoCommunicationError, canopen.SdoAbortedError) as e:
                    raise DriveError(f"{ax.label}: mapping {kind}{slot} failed: {e}") from None
                try:
                    net.unsubscribe(m.cob_id, m.on_message)     # we decode the frames ourselves
                except (KeyError, ValueError):
                    pass
                if m.enabled:
                    names = wanted[slot - 1]
                    out.append(_Pdo(m.cob_id, names, [self.cat[n] for n in names], slot))
        for p in ax.tpdos:
            p.callback = lambda cid, data, ts, ax=ax, p=p: self._on_tpdo(ax, p, data)
            net.subscribe(p.cob_id, p.callback)

    # ================================================================== SDO helpers
    def _read(self, ax: _Axis, name: str):
        spec = self.cat[name]
        var = odict.find(ax.node.object_dictionary, spec.index, spec.subindex)
        try:
            data = ax.node.sdo.upload(spec.index, spec.subindex)
            return var.decode_raw(data) if var is not None else int.from_bytes(data, "little")
        except canopen.SdoCommunicationError:
            raise DriveError(f"{ax.label}: no SDO answer reading {name} ({spec.address}) within "
                             f"{ax.node.sdo.RESPONSE_TIMEOUT:.2f} s") from None
        except canopen.SdoAbortedError as e:
            raise DriveError(f"{ax.label}: reading {name} ({spec.address}) was refused: {e}") from None

    def _write(self, ax: _Axis, name: str, value: int):
        spec = self.cat[name]
        var = odict.find(ax.node.object_dictionary, spec.index, spec.subindex)
        if var is None:
            raise DriveError(f"{ax.label}: the object dictionary has no {name} ({spec.address})")
        try:
            ax.node.sdo.download(spec.index, spec.subindex, var.encode_raw(value))
        except canopen.SdoCommunicationError:
            raise DriveError(f"{ax.label}: no SDO answer writing {name} ({spec.address}) within "
                             f"{ax.node.sdo.RESPONSE_TIMEOUT:.2f} s") from None
        except canopen.SdoAbortedError as e:
            raise DriveError(f"{ax.label}: writing {name} ({spec.address}) = {value} was refused: {e}") from None

    def _read_state(self, ax: _Axis) -> State | None:
        """The statusword by SDO (also updates the feedback cache: newer than any TPDO so far)."""
        t = time.monotonic()
        sw = self._read(ax, "statusword")
        with self._fb:
            if t >= ax.stamp:
                ax.values["statusword"] = sw
                ax.stamp = t
        return cia402.decode_statusword(sw)

    def _drive_to(self, ax: _Axis, target: State) -> None:
        """Step ``ax`` through the state machine to ``target`` by SDO, bounded by state_timeout."""
        deadline = time.monotonic() + self.cfg.state_timeout
        while True:
            st = self._read_state(ax)
            if st is target:
                return
            if st in (State.FAULT, State.FAULT_REACTION_ACTIVE) and target is State.OPERATION_ENABLED:
                raise DriveError(f"{ax.label} is in fault ({self._error_text(ax)}): reset first")
            if time.monotonic() > deadline:
                sw = ax.values["statusword"]
                more = f", {self._error_text(ax)}" if st is State.FAULT else ""
                raise DriveError(f"{ax.label} stays in {st.value if st else 'an undefined state'} "
                                 f"(statusword 0x{sw:04X}{more}) after {self.cfg.state_timeout:.2f} s "
                                 f"on the way to {target.value}")
            cmd = cia402.next_command(st, target)
            if cmd is Command.FAULT_RESET:
                self._write(ax, "controlword", 0x0000)            # bit 7 low first: a rising edge
                self._write(ax, "controlword", Command.FAULT_RESET.value)
                time.sleep(0.01)
            elif cmd is not None:
                self._write(ax, "controlword", cmd.value)
            else:
                time.sleep(0.002)

    def _error_text(self, ax: _Axis) -> str:
        try:
            code = self._read(ax, "error_code")
        except DriveError:
            code = ax.values.get("error_code", 0)
        return f"error code {cia402.error_text(code)}"

    def _parallel(self, fn, what: str):
        errors: dict[int, BaseException] = {}

        def run(ax):
            try:
                fn(ax)
            except BaseException as e:     # collected and re-raised below
                errors[ax.index] = e

        threads = [threading.Thread(target=run, args=(ax,), daemon=True) for ax in self.axes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            first = errors[min(errors)]
            if isinstance(first, DriveError):
                raise DriveError("; ".join(str(errors[k]) for k in sorted(errors))) from None
            raise first

    # ================================================================== bus callbacks (notifier thread)
    def _on_tpdo(self, ax: _Axis, p: _Pdo, data):
        now = time.monotonic()
        try:
            values = p.st.unpack_from(data)
        except struct.error:
            return
        with self._fb:
            stamp = self._sync_time
            for name, v in zip(p.names, values):
                if name == "statusword":
                    if stamp < ax.stamp:
                        continue                       # older than an SDO read of the statusword
                    ax.stamp = stamp
                ax.values[name] = v
            if self.recorder is not None:
                self.recorder("tpdo", now, (ax.index, dict(zip(p.names, values))))
            key = (ax.index, p.slot)
            if self._sync_out and key not in self._got:
                self._got.add(key)
                if len(self._got) == self._expected:
                    self.stats["latency"].add(now - self._sync_time)
                    self._fb.notify_all()

    def _on_emcy(self, ax: _Axis, e):
        self.emcy_log.append((ax.index, e.code, e.register, time.monotonic()))
        if e.code & 0xFF00 == 0:
            return                                     # error reset / no error
        with self._fb:
            old = self._faults.get(ax.index, "")
            if not old or old.startswith("the drive is in fault"):     # the EMCY says more
                self._faults[ax.index] = (f"EMCY {cia402.error_text(e.code)}, error register "
                                          f"0x{e.register:02X}, node {ax.node_id}")

    def _on_heartbeat(self, ax: _Axis, state: int):
        ax.hb_time = time.monotonic()
        ax.hb_state = state

    # ================================================================== health
    @staticmethod
    def _nmt_name(state):
        if state is None:
            return "nothing"
        return {0: "boot-up"}.get(state, canopen.nmt.NMT_STATES.get(state, f"state {state}"))

    def _check_health(self):
        if not self._monitoring:
            return
        now = time.monotonic()
        timeout = self.cfg.heartbeat_timeout
        with self._fb:
            for ax in self.axes:
                if ax.index in self._faults:
                    continue
                if ax.hb_time is None or now - ax.hb_time > timeout:
                    age = "ever" if ax.hb_time is None else f"{now - ax.hb_time:.2f} s"
                    self._faults[ax.index] = (f"heartbeat lost: none for {age} "
                                              f"(consumer time {timeout * 1e3:.0f} ms), node {ax.node_id}")
                elif ax.hb_state != NMT_OPERATIONAL:
                    self._faults[ax.index] = (f"the drive left NMT operational (heartbeat reports "
                                              f"{self._nmt_name(ax.hb_state)}), node {ax.node_id}")
                elif ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE):
                    self._faults[ax.index] = (f"the drive is in fault, error code "
                                              f"{cia402.error_text(ax.values.get('error_code', 0))}, "
                                              f"node {ax.node_id}")

    def _combined_state(self) -> DriveState:
        if self._faults or any(ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE) for ax in self.axes):
            return DriveState.FAULT
        if self._running and all(ax.cia_state is State.OPERATION_ENABLED for ax in self.axes):
            return DriveState.ENABLED
        if self._stopped or any(ax.cia_state is State.QUICK_STOP_ACTIVE for ax in self.axes):
            return DriveState.QUICK_STOP
        return DriveState.DISABLED

    @property
    def state(self) -> DriveState:
        if self._closed:
            return DriveState.DISABLED
        self._check_health()
        with self._fb:
            return self._combined_state()

    @property
    def faults(self) -> dict:
        with self._fb:
            return dict(self._faults)

    # ================================================================== DriveSet
    def enable(self) -> None:
        self._check_health()
        with self._fb:
            faults = dict(self._faults)
        if faults:
            k = min(faults)
            raise DriveError(f"cannot enable: {self.axes[k].label} is in fault: {faults[k]}; reset first")
        with self._sdo_lock:
            targets = []
            for ax in self.axes:
                counts = self._read(ax, "position_actual")
                with self._fb:
                    ax.values["position_actual"] = counts
                targets.append(counts)
            with self._lock:
                self._cmd = [self._hold_targets(c) for c in targets]
                self._fresh = True                         # the first RPDO holds the actual position
            done = []
            try:
                for ax in self.axes:
                    self._drive_to(ax, State.OPERATION_ENABLED)
                    done.append(ax)
            except DriveError as e:
                for other in done:
                    try:
                        self._write(other, "controlword", Command.DISABLE_VOLTAGE.value)
                    except DriveError:
                        pass
                raise DriveError(f"cannot enable: {e}") from None
            with self._lock, self._fb:
                self._running = True
                self._stopped = ""
                self._fault_handled = False
                for ax in self.axes:
                    ax.qs_sent = False
                    ax.missed = 0

    def _stop_targets(self, reason: str | None = None) -> None:
        """Send no more targets (and, with ``reason``, remember why the drives were stopped)."""
        with self._lock:
            self._running = False
            self._fresh = False
            if reason is not None:
                self._stopped = reason

    def disable(self) -> None:
        self._stop_targets()
        problems = []
        with self._sdo_lock:
            for ax in self.axes:
                if ax.index in self._faults and ax.hb_time is not None and \
                        time.monotonic() - ax.hb_time > self.cfg.heartbeat_timeout:
                    continue                                    # lost: nothing to tell it
                try:
                    st = self._read_state(ax)
                    if st not in (State.SWITCH_ON_DISABLED, State.FAULT, State.FAULT_REACTION_ACTIVE,
                                  State.NOT_READY_TO_SWITCH_ON):
                        self._write(ax, "controlword", Command.DISABLE_VOLTAGE.value)
                        self._read_state(ax)
                except DriveError as e:
                    problems.append(str(e))
        with self._lock:
            self._stopped = ""
        if problems:
            raise DriveError("disable: " + "; ".join(problems))

    def quick_stop(self, reason: str = "") -> None:
        self._stop_targets(reason or "quick stop")
        with self._fb:
            lost = {k for k, r in self._faults.items() if r.startswith("heartbeat lost")}
        order = sorted(self.axes, key=lambda ax: ax.index in lost)       # healthy drives first
        with self._sdo_lock:
            for ax in order:
                if ax.qs_sent or ax.cia_state not in (State.OPERATION_ENABLED, None):
                    continue
                ax.qs_sent = True
                try:
                    self._write(ax, "controlword", Command.QUICK_STOP.value)
                except DriveError as e:
                    with self._fb:
                        self._faults.setdefault(ax.index, f"quick stop not confirmed: {e}")

    def reset(self) -> None:
        self._check_health()
        self._stop_targets()
        problems = []
        with self._sdo_lock:
            for ax in self.axes:
                try:
                    self._revive(ax)
                    self._drive_to(ax, State.SWITCH_ON_DISABLED)
                except DriveError as e:
                    problems.append(f"{e}")
                    continue
                with self._fb:
                    self._faults.pop(ax.index, None)
                    ax.missed = 0
        if problems:
            raise DriveError("reset failed, the cause remains: " + "; ".join(problems))
        with self._lock, self._fb:
            self._stopped = ""
            self._fault_handled = False
            for ax in self.axes:
                ax.qs_sent = False

    def _wait_heartbeat(self, ax: _Axis, since: float, operational: bool) -> bool:
        deadline = time.monotonic() + max(2.5 * self.cfg.heartbeat_ms / 1000.0, 0.05)
        while time.monotonic() < deadline:
            if ax.hb_time is not None and ax.hb_time >= since and \
                    (not operational or ax.hb_state == NMT_OPERATIONAL):
                return True
            time.sleep(0.002)
        return False

    def _revive(self, ax: _Axis) -> None:
        """Before a fault reset: a drive without heartbeat that still answers SDO gets its
        heartbeat producer time again; one that rebooted (not NMT operational) is configured
        again and started. Raises DriveError if the drive stays silent."""
        now = time.monotonic()
        if ax.hb_time is None or now - ax.hb_time > self.cfg.heartbeat_timeout:
            age = "ever" if ax.hb_time is None else f"{now - ax.hb_time:.2f} s"
            try:
                self._write(ax, "producer_heartbeat_time", self.cfg.heartbeat_ms)
            except DriveError:
                raise DriveError(f"{ax.label}: still no heartbeat (none for {age}) and no SDO answer") from None
            if not self._wait_heartbeat(ax, now, operational=False):
                raise DriveError(f"{ax.label}: still no heartbeat (none for {age}; the drive answers SDO "
                                 f"but does not produce its heartbeat)")
        if ax.hb_state != NMT_OPERATIONAL:                   # it rebooted: configure it again
            ax.node.nmt.state = "PRE-OPERATIONAL"
            self._configure(ax)
            t = time.monotonic()
            ax.node.nmt.state = "OPERATIONAL"
            if not self._wait_heartbeat(ax, t, operational=True):
                raise DriveError(f"{ax.label} did not go back to NMT operational "
                                 f"(heartbeat reports {self._nmt_name(ax.hb_state)})")

    # ------------------------------------------------------------------ cyclic
    def _hold_targets(self, counts):
        return {"controlword": Command.ENABLE_OPERATION.value, "target_position": counts or 0,
                "target_velocity": 0, "target_torque": 0, "velocity_offset": 0, "torque_offset": 0}

    def write(self, torque=None, position=None, velocity=None) -> None:
        st = self.state
        if st is not DriveState.ENABLED:
            raise DriveError(f"drives are {st.value}, not operation enabled: command refused")
        vals = {}
        for name, v in (("torque", torque), ("position", position), ("velocity", velocity)):
            if v is not None:
                t = tuple(float(x) for x in v)
                if len(t) != 3 or not all(math.isfinite(x) for x in t):
                    raise DriveError(f"{name} command must be 3 finite numbers, got {list(v)!r}")
                vals[name] = t
        if self.mode is Mode.POSITION and "position" not in vals:
            raise DriveError("cyclic synchronous position mode needs a position command")
        if self.mode is Mode.VELOCITY and "velocity" not in vals:
            raise DriveError("cyclic synchronous velocity mode needs a velocity command")
        if self.mode is Mode.TORQUE and "torque" not in vals:
            raise DriveError("cyclic synchronous torque mode needs a torque command")
        cmds = []
        for i, ax in enumerate(self.axes):
            u, lim = ax.units, self.cfg.max_torque[i]
            c = dict(self._cmd[i])
            tau = u.torque_to_permille(vals["torque"][i]) if "torque" in vals else 0
            tau = min(max(tau, -lim), lim)
            if self.mode is Mode.TORQUE:
                c["target_torque"], c["torque_offset"] = tau, 0
            else:
                c["torque_offset"] = tau
                v = u.velocity_to_units(vals["velocity"][i]) if "velocity" in vals else 0
                if self.mode is Mode.POSITION:
                    c["target_position"] = u.position_to_counts(vals["position"][i])
                    c["velocity_offset"] = v
                else:
                    c["target_velocity"], c["velocity_offset"] = v, 0
            cmds.append(c)
        with self._lock:
            self._cmd = cmds
            self._fresh = True

    def cycle(self, dt: float) -> None:
        with self._lock:
            send = (self._fresh and self._running and not self._faults
                    and all(ax.cia_state is State.OPERATION_ENABLED for ax in self.axes))
            self._fresh = False
            frames = []
            if send:
                for ax, c in zip(self.axes, self._cmd):
                    for p in ax.rpdos:
                        vals = [_clamp_int(c[n], code) for n, code in zip(p.names, p.st.format[1:])]
                        frames.append((p.cob_id, p.st.pack(*vals)))
            now = time.monotonic()
            with self._fb:
                self._got = set()
                self._expected = sum(len(ax.tpdos) for ax in self.axes)
                self._sync_out = True
                self._sync_time = now
            if self._last_sync_sent is not None:
                self.stats["sync_period"].add(now - self._last_sync_sent)
            self._last_sync_sent = now
            try:
                for cob, data in frames:
                    self.network.send_message(cob, data)
                self.network.sync.transmit()
            except Exception as e:                       # python-can errors, a closed bus
                with self._fb:
                    for ax in self.axes:
                        self._faults.setdefault(ax.index, f"CAN bus error on {self.where}: {e}")
                return
            self.stats["syncs"] += 1
            self.stats["rpdo_frames"] += len(frames)
            if self.recorder is not None:
                self.recorder("sync", now, [dict(c) for c in self._cmd] if send else None)

    def read(self) -> Feedback:
        with self._fb:
            if self._sync_out:
                deadline = self._sync_time + self.tpdo_timeout
                while len(self._got) < self._expected:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._fb.wait(left)
                if len(self._got) < self._expected:
                    self.stats["late"] += 1
                    limit = max(10, int(math.ceil(TPDO_MISS_LIMIT_S * self.rate)))
                    for ax in self.axes:
                        if all((ax.index, p.slot) in self._got for p in ax.tpdos):
                            ax.missed = 0
                            continue
                        ax.missed += 1
                        if ax.missed >= limit and self._monitoring:
                            self._faults.setdefault(ax.index, f"no TPDO for {ax.missed} SYNC in a row, "
                                                              f"node {ax.node_id}")
                else:
                    for ax in self.axes:
                        ax.missed = 0
                self._sync_out = False
            snap = [dict(ax.values) for ax in self.axes]
        self._check_health()
        with self._fb:
            state = self._combined_state()
            faults = dict(self._faults)
            for ax in self.axes:
                if ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE) and ax.index not in faults:
                    faults[ax.index] = (f"the drive is in fault, error code "
                                        f"{cia402.error_text(ax.values.get('error_code', 0))}, node {ax.node_id}")
        if state is DriveState.FAULT and not self._fault_handled:
            self._fault_handled = True
            reason = "; ".join(f"{self.axes[k].label}: {r}" for k, r in sorted(faults.items()))
            self.quick_stop(f"drive fault: {reason}")       # every axis, at once, whoever reads
            with self._fb:
                state = self._combined_state()
        q = tuple(ax.units.position_to_si(v["position_actual"]) for ax, v in zip(self.axes, snap))
        qd = tuple(ax.units.velocity_to_si(v["velocity_actual"]) for ax, v in zip(self.axes, snap))
        tau = tuple(ax.units.torque_to_si(v["torque_actual"]) for ax, v in zip(self.axes, snap))
        return Feedback(q, qd, tau, state, faults)

    # ------------------------------------------------------------------ tools
    def diagnostics(self) -> dict:
        """Key/value strings for ``/diagnostics``: per-axis state and the bus statistics."""
        now = time.monotonic()
        d = {"bus": self.where, "drives_config": self.cfg.name, "mode": self.mode.name.lower(),
             "syncs": str(self.stats["syncs"]), "late_syncs": str(self.stats["late"])}
        for key in ("sync_period", "latency"):
            s = self.stats[key].summary()
            for k in ("p50", "p99", "max"):
                if k in s:
                    d[f"{key}_{k}_ms"] = f"{s[k]:.3f}"
        for ax in self.axes:
            st = ax.cia_state
            hb = "never" if ax.hb_time is None else f"{max(now - ax.hb_time, 0.0):.2f} s ago"
            d[f"axis{ax.index + 1}"] = (f"{ax.joint} node {ax.node_id}: {st.value if st else 'unknown'}, "
                                        f"heartbeat {hb}" + (f", FAULT: {self._faults[ax.index]}"
                                                             if ax.index in self._faults else ""))
        return d

    def bus_load(self, bitrate: int = 1_000_000) -> float:
        """Estimated CAN bus load (0..1) of the cyclic traffic at this rate: SYNC, RPDOs,
        TPDOs; a classic frame with n data bytes is 47 + 8 n bits plus ~20 % bit stuffing."""
        bits = 47 * 1.2                                  # SYNC, no data
        for ax in self.axes:
            for p in ax.rpdos + ax.tpdos:
                bits += (47 + 8 * p.st.size) * 1.2
        return bits * self.rate / bitrate

    def _labels(self, axes) -> str:
        return ", ".join(ax.label for ax in axes)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.network is not None and getattr(self, "axes", None) and self._running:
            try:
                self.disable()
            except DriveError:
                pass
        if self.network is not None:
            try:
                self.network.disconnect()
            except Exception:
                pass
            self.network = None
        if self.sim is not None:
            self.sim.close()
            self.sim = None
