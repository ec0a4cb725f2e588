"""The ``canopen`` drive backend: three CiA 402 servo drives on a CAN bus, through the
``canopen`` and ``python-can`` packages.

:class:`CanopenDriveSet` is the drive interface (:class:`~delta_hardware.drives.DriveSet`)
over the services of this package, one module each (as ``canopen`` itself is organised):

* :mod:`.axis`: one drive as the master sees it, and SDO access whose errors name the axis;
* :mod:`.startup`: find the drives, configure them by SDO, start them (NMT);
* :mod:`.pdo_map`: the PDO mapping written to the drives, and the frames' packing;
* :mod:`.cyclic`: the cyclic exchange, RPDOs, SYNC and TPDOs;
* :mod:`.monitor`: heartbeat, EMCY, NMT state, drive faults and silent drives;
* :mod:`.cia402`: the CiA 402 state machine, stepped by confirmed controlword writes.

Start-up (the constructor; any failure raises :class:`DriveError` naming the node and axis,
within bounded SDO timeouts, and releases the bus): open the bus, :func:`.startup.probe`,
:func:`.startup.configure` every drive in parallel, :func:`.startup.start`, then one SYNC
that every TPDO must answer.

The cyclic exchange, driven by the control loop (``cycle``, ``read``, compute, ``write``):
:meth:`cycle` sends SYNC, :meth:`read` waits (bounded) for the TPDOs answering it and returns
them in SI units, :meth:`write` sends the RPDOs at once; the drives latch them at the next
SYNC. Targets go out only while every axis is in operation enabled, the set is enabled and
no fault is pending (the one exception is a quick stop to a drive that does not answer SDO,
see :mod:`.cyclic`).

State changes (enable, disable, quick stop, fault reset) go by SDO to the controlword with
the statusword read back, so they are confirmed and never ride on a PDO that carries targets.

Faults: an EMCY from a drive, its heartbeat missing for longer than the consumer time, its
NMT state leaving operational, its statusword showing fault, or its TPDOs missing for
``max_stall`` put the drive set in FAULT; the first :meth:`read` that sees it quick-stops
every axis itself and reports, per axis, the reason (``Feedback.faults``). A drive that was
silent gets its quick stop again, confirmed by SDO, as soon as it answers. :meth:`reset`
clears the faults once the cause is gone.
"""
from __future__ import annotations

import math
import threading
import time

import canopen

from delta_core.robot_file import RobotFileError, load_robot
from delta_hardware import cia402
from delta_hardware.canopen import startup
from delta_hardware.canopen.axis import Axis
from delta_hardware.canopen.bus import open_bus
from delta_hardware.cia402 import Command, State
from delta_hardware.canopen.config import DrivesConfigError, load_drives_config
from delta_hardware.canopen.cyclic import CyclicExchange, hold_targets
from delta_hardware.canopen.monitor import Monitor
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode


class CanopenDriveSet(DriveSet):
    """Three CiA 402 servo drives on a CAN bus (see the module docstring).

    ``robot``: the robot file (joint names, gear ratio, limits); ``interface``/``channel``:
    the python-can bus; ``drives_config``: ``config/drives/<name>.yaml`` or a path (default
    ``generic_cia402``); ``rate``: the control rate, which is the SYNC rate. Extra options:
    ``simulate`` (start ``delta-drive-sim`` in-process on the same bus; default from the
    config), ``sim_options`` (dict for :class:`~.drive_sim.SimulatedCia402Drives`),
    ``config_overrides`` (dict merged over the config file), ``bus_options`` (dict for
    ``can.Bus``).

    :attr:`max_stall` (s, ``timing.max_stall`` of the drives config) is how long the drives
    may go without a control cycle: the control loop should quick-stop after a longer gap
    (``LoopConfig.max_stall``), as this backend does for drives whose TPDOs stop.
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
        self.max_stall = self.cfg.max_stall
        self.interp_period = self.cfg.interpolation_period or self.period
        self.tpdo_timeout = self.cfg.tpdo_timeout if self.cfg.tpdo_timeout is not None else 0.8 * self.period
        self.interface, self.channel = interface, channel
        self.where = f"{interface} {channel}"
        self._lock = threading.RLock()          # command state; held while RPDOs or SYNC go out
        self._sdo_lock = threading.RLock()      # one SDO sequence at a time
        self._fb = threading.Condition()        # feedback cache, faults, TPDO arrival
        self._faults: dict[int, str] = {}
        self._running = False                   # enabled by enable(), until disable/quick stop/fault
        self._stopped = ""                      # quick stop reason
        self._fault_handled = False
        self._cmd = [hold_targets(None) for _ in range(3)]
        self._closed = False
        self.sim = None
        self.network = None
        self.axes: list[Axis] = []
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
            cat = self.cfg.catalogue
            for i, node_id in enumerate(self.cfg.node_ids):
                node = canopen.RemoteNode(node_id, self.cfg.object_dictionary(node_id))
                node.sdo.RESPONSE_TIMEOUT = self.cfg.sdo_timeout
                node.sdo.MAX_RETRIES = 1
                self.network.add_node(node)
                self.axes.append(Axis(i, node_id, self.robot.joint_names[i], self.cfg.axes[i], node, cat, self._fb))
            self.monitor = Monitor(self.axes, self.cfg, self._fb, self._faults, self.rate)
            self.cyclic = CyclicExchange(self.network, self.axes, self._fb, self.tpdo_timeout)
            for ax in self.axes:
                self.monitor.attach(ax)
            self.network.connect()
            self._startup()
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_parameters(cls, robot, values: dict, rate: float) -> "CanopenDriveSet":
        """The ``canopen`` bus from its parameter block (:data:`.plugin.BUS`): the SYNC rate is
        the control rate."""
        return cls(robot, interface=values["can_interface"], channel=values["can_channel"],
                   drives_config=values["drives_config"], rate=rate)

    @property
    def summary(self) -> str:
        return f"{self.where}, drives config {self.cfg.name}"

    # ================================================================== start-up
    def _startup(self):
        startup.probe(self.axes, self.cfg, self.where)
        startup.parallel(self._configure, self.axes)
        startup.start(self.axes, self.cfg, self.where)
        self.monitor.active = True
        now = time.monotonic()                            # one SYNC: every TPDO must answer
        self.cyclic.begin_cycle(now)
        self.cyclic.sync(now)
        if not self.cyclic.wait(timeout=self.cfg.startup_timeout):
            missing = [self.axes[i] for i in sorted(self.cyclic.missing())]
            raise DriveError(f"no TPDO after SYNC from {startup.labels(missing)} within "
                             f"{self.cfg.startup_timeout:.2f} s: the PDO mapping was not taken")

    def _configure(self, ax: Axis):
        self.cyclic.detach(ax)
        startup.configure(ax, self.cfg, self.robot, self.period, self.interp_period, self.network)
        self.cyclic.attach(ax)

    # ================================================================== statistics, for tools
    @property
    def stats(self) -> dict:
        """``syncs``, ``withheld``, ``late``, ``rpdo_frames``; ``sync_period`` and ``latency`` rings."""
        return self.cyclic.stats

    @property
    def recorder(self):
        """Optional ``recorder(kind, time, data)`` for benchmarks (see :class:`.cyclic.CyclicExchange`)."""
        return self.cyclic.recorder

    @recorder.setter
    def recorder(self, fn):
        self.cyclic.recorder = fn

    @property
    def simulated(self) -> bool:
        """Whether every drive is ``delta-drive-sim`` (its device name, 0x1008)."""
        return bool(self.axes) and all(ax.device_name.startswith("delta-drive-sim") for ax in self.axes)

    #: s of wall time simulated drives may be silent in simulated time before they count as lost
    LOCKSTEP_SILENCE = 5.0

    def lockstep(self) -> None:
        """Run in simulated time with simulated drives (``delta-drive-sim``): every read waits
        for the answers to its SYNC, and a drive counts as lost (heartbeat consumer time) only
        after ``LOCKSTEP_SILENCE`` s of silence: a starved simulator process slows the
        simulation, a dead one is still found. Real drives never run this way."""
        if not self.simulated:
            raise DriveError("lockstep (simulated time) needs simulated drives (delta-drive-sim)")
        self.tpdo_timeout = self.cyclic.tpdo_timeout = self.LOCKSTEP_SILENCE
        self.monitor.consumer_time = max(self.monitor.consumer_time, self.LOCKSTEP_SILENCE)

    @property
    def bus_time(self) -> float:
        """SYNCs sent times the period (s): the time the drives have run through. Simulated
        drives (``delta-drive-sim``) step one interpolation period per SYNC, so this is
        their simulated time: a loop whose clock is this runs on the same time base as the
        simulation, however slow the host (withheld cycles do not advance it)."""
        return self.cyclic.stats["syncs"] * self.interp_period

    @property
    def emcy_log(self) -> list:
        return self.monitor.emcy_log

    # ================================================================== state
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
        self.monitor.check()
        with self._fb:
            return self._combined_state()

    @property
    def faults(self) -> dict:
        with self._fb:
            return dict(self._faults)

    # ================================================================== DriveSet: state changes
    def enable(self) -> None:
        self.monitor.check()
        with self._fb:
            faults = dict(self._faults)
        if faults:
            k = min(faults)
            raise DriveError(f"cannot enable: {self.axes[k].label} is in fault: {faults[k]}; reset first")
        with self._sdo_lock:
            hold = []
            for ax in self.axes:
                counts = ax.read("position_actual")
                with self._fb:
                    ax.values["position_actual"] = counts
                hold.append(hold_targets(counts))
                # what the drive holds from before (targets of another session) must not act
                for name in sorted({n for p in ax.rpdos for n in p.names} - {"controlword"}):
                    ax.write(name, hold[-1][name])
            with self._lock:
                self._cmd = hold
            done = []
            try:
                for ax in self.axes:
                    cia402.drive_to(ax, State.OPERATION_ENABLED, self.cfg.state_timeout)
                    done.append(ax)
            except DriveError as e:
                for other in done:
                    try:
                        other.write("controlword", Command.DISABLE_VOLTAGE.value)
                    except DriveError:
                        pass
                raise DriveError(f"cannot enable: {e}") from None
            with self._lock, self._fb:
                self._running = True
                self._stopped = ""
                self._fault_handled = False
                for ax in self.axes:
                    ax.quick_stop = None
                    ax.silent_cycles = 0
                self.cyclic.restart()
                self._transmit(self._cmd)                # the next SYNC latches the hold targets

    def _stop_targets(self, reason: str | None = None) -> None:
        """Send no more targets (and, with ``reason``, remember why the drives were stopped)."""
        with self._lock:
            self._running = False
            if reason is not None:
                self._stopped = reason

    def disable(self) -> None:
        self._stop_targets()
        problems = []
        with self._sdo_lock:
            for ax in self.axes:
                if ax.lost or (ax.index in self._faults and ax.hb_time is not None
                               and time.monotonic() - ax.hb_time > self.cfg.heartbeat_timeout):
                    continue                                    # lost: nothing to tell it
                try:
                    st = ax.read_state()
                    if st not in (State.SWITCH_ON_DISABLED, State.FAULT, State.FAULT_REACTION_ACTIVE,
                                  State.NOT_READY_TO_SWITCH_ON):
                        ax.write("controlword", Command.DISABLE_VOLTAGE.value)
                        ax.read_state()
                except DriveError as e:
                    problems.append(str(e))
        with self._lock:
            self._stopped = ""
        if problems:
            raise DriveError("disable: " + "; ".join(problems))

    def quick_stop(self, reason: str = "") -> None:
        """Quick stop (controlword 0x0002) to every axis in operation enabled: by SDO,
        healthy drives first; to a drive that does not answer, by RPDO until it does."""
        self._stop_targets(reason or "quick stop")
        order = sorted(self.axes, key=lambda ax: not self.monitor.responsive(ax))
        with self._sdo_lock:
            for ax in order:
                if ax.quick_stop or ax.cia_state not in (State.OPERATION_ENABLED, None):
                    continue
                if not self.monitor.responsive(ax):
                    self._quick_stop_by_pdo(ax)
                    continue
                try:
                    ax.write("controlword", Command.QUICK_STOP.value)
                    ax.quick_stop = "confirmed"
                except DriveError as e:
                    with self._fb:
                        self._faults.setdefault(ax.index, f"quick stop not confirmed: {e}")
                    self._quick_stop_by_pdo(ax)

    def _quick_stop_by_pdo(self, ax: Axis) -> None:
        with self._lock, self._fb:
            self.monitor.mark_lost(ax)
            ax.quick_stop = "sent"
            self._send(lambda: self.cyclic.transmit_quick_stop(ax, self._cmd[ax.index]))

    def _confirm_quick_stops(self) -> None:
        """A silent drive that got its quick stop by RPDO answers again: quick stop by SDO,
        confirmed, and its torque targets zeroed, before anything else goes to it."""
        for ax in self.axes:
            if ax.quick_stop != "sent" or not self.monitor.resumed(ax):
                continue
            with self._sdo_lock:
                try:
                    ax.write("controlword", Command.QUICK_STOP.value)
                    for name in ("target_torque", "torque_offset"):
                        if ax.has(name):
                            ax.write(name, 0)
                    ax.quick_stop = "confirmed"
                except DriveError:
                    ax.lost_time = time.monotonic()            # try again on its next sign of life

    def reset(self) -> None:
        self.monitor.check()
        self._stop_targets()
        problems = []
        with self._sdo_lock:
            for ax in self.axes:
                try:
                    startup.revive(ax, self.cfg, self._configure)
                    cia402.drive_to(ax, State.SWITCH_ON_DISABLED, self.cfg.state_timeout)
                except DriveError as e:
                    problems.append(f"{e}")
                    continue
                self.monitor.clear(ax)
                ax.quick_stop = None
        self.cyclic.restart()
        if problems:
            raise DriveError("reset failed, the cause remains: " + "; ".join(problems))
        with self._lock, self._fb:
            self._stopped = ""
            self._fault_handled = False

    # ================================================================== DriveSet: cyclic
    def _send(self, fn):
        """Run a transmission; a python-can error (a closed bus, ...) faults every axis."""
        try:
            return fn()
        except Exception as e:
            with self._fb:
                for ax in self.axes:
                    self._faults.setdefault(ax.index, f"CAN bus error on {self.where}: {e}")
            return None

    def _may_send_targets(self) -> bool:
        return (self._running and not self._faults
                and all(ax.cia_state is State.OPERATION_ENABLED for ax in self.axes))

    def _transmit(self, cmds) -> None:
        if self._may_send_targets():
            self._send(lambda: self.cyclic.transmit(cmds))

    def write(self, torque=None, position=None, velocity=None) -> None:
        """Set the targets and send them at once (RPDOs; the drives latch them at the next SYNC)."""
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
            self._transmit(cmds)

    def cycle(self, dt: float) -> None:
        """Begin a control cycle: SYNC, unless a drive still owes the previous one's TPDOs.
        Before it, a drive that was silent and answers again is quick-stopped by SDO, and
        every quick stop not yet confirmed goes out again on the RPDOs."""
        now = time.monotonic()
        self.monitor.loop_cycle(now)
        self.monitor.count_silence(self.cyclic.begin_cycle(now))
        self._confirm_quick_stops()
        with self._lock:
            for ax in self.axes:
                if ax.quick_stop == "sent":
                    self._send(lambda ax=ax: self.cyclic.transmit_quick_stop(ax, self._cmd[ax.index]))
            self._send(lambda: self.cyclic.sync(now, wait_for_answers=self._running))

    def read(self) -> Feedback:
        self.cyclic.wait()
        with self._fb:
            snap = [dict(ax.values) for ax in self.axes]
        self.monitor.check()
        with self._fb:
            state = self._combined_state()
            faults = dict(self._faults)
            for ax in self.axes:
                if ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE) and ax.index not in faults:
                    faults[ax.index] = self.monitor.fault_text(ax)
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

    # ================================================================== tools
    def diagnostics(self) -> dict:
        """Key/value strings for ``/diagnostics``: per-axis state and the bus statistics."""
        now = time.monotonic()
        s = self.stats
        d = {"bus": self.where, "drives_config": self.cfg.name, "mode": self.mode.name.lower(),
             "syncs": str(s["syncs"]), "late_syncs": str(s["late"]), "withheld_syncs": str(s["withheld"]),
             "max_stall_ms": f"{self.max_stall * 1e3:.0f}",
             "heartbeat_consumer_ms": f"{self.cfg.heartbeat_timeout * 1e3:.0f}"}
        for key in ("sync_period", "latency"):
            summary = s[key].summary()
            for k in ("p50", "p99", "max"):
                if k in summary:
                    d[f"{key}_{k}_ms"] = f"{summary[k]:.3f}"
        for ax in self.axes:
            st = ax.cia_state
            hb = "never" if ax.hb_time is None else f"{max(now - ax.hb_time, 0.0):.2f} s ago"
            qs = {"sent": ", quick stop sent by RPDO (not confirmed)",
                  "confirmed": ", quick stop confirmed"}.get(ax.quick_stop, "")
            d[f"axis{ax.index + 1}"] = (f"{ax.joint} node {ax.node_id} ({ax.device_name or 'no device name'}): "
                                        f"{st.value if st else 'unknown'}, "
                                        f"heartbeat {hb}{qs}" + (f", FAULT: {self._faults[ax.index]}"
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

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.network is not None and self.axes and self._running:
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
