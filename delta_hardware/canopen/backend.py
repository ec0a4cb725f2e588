"""The ``canopen`` drive backend: three CiA 402 servo drives on a CAN bus, through the
``canopen`` and ``python-can`` packages.

:class:`CanopenDriveSet` is the drive interface (:class:`~delta_hardware.drives.DriveSet`)
over the services of this package, one module each (as ``canopen`` itself is organised):

* :mod:`.axis`: one drive as the master sees it, and SDO access whose errors name the axis;
* :mod:`.startup`: find the drives, configure them by SDO, start them (NMT);
* :mod:`.pdo_map`: the PDO mapping written to the drives, and the frames' packing;
* :mod:`.cyclic`: the cyclic exchange, RPDOs, SYNC and TPDOs;
* :mod:`.monitor`: heartbeat, EMCY, NMT state, drive faults and silent drives;
* :mod:`.receiver`: the bus receiver's own health;
* :mod:`delta_hardware.cia402`: the CiA 402 state machine, stepped by confirmed controlword writes.

Start-up (the constructor; any failure raises :class:`DriveError` naming the node and axis,
within bounded SDO timeouts, and releases the bus): open the bus (with a large receive
buffer, :mod:`.bus`), :func:`.startup.probe`, :func:`.startup.configure` every drive in
parallel, :func:`.startup.start`, then one SYNC that every TPDO must answer.

The cyclic exchange, driven by the control loop (``cycle``, ``read``, compute, ``write``):
:meth:`cycle` sends SYNC, :meth:`read` waits (bounded) for the TPDOs answering it and returns
them in SI units, :meth:`write` sends the RPDOs at once; the drives latch them at the next
SYNC. A lost TPDO frame is tolerated (the last values held, counted per axis); a drive that
owes TPDOs for longer gets no SYNC to pile up, and :meth:`cycle` then returns 0: the drives
did not advance (:mod:`.cyclic`).

**What the RPDOs carry** is one latched command of the drive set: the loop's targets with
*enable operation* (0x000F) only between :meth:`enable` and the next stop; from the moment a
quick stop is decided (:meth:`quick_stop`: the loop's e-stop and stall stop, and every fault
reaction of this backend) *quick stop* (0x0002) with zero torques, velocities held at 0 and the
position held; from :meth:`disable` on *disable voltage* (0x0000). The stop goes out at once,
overriding a target RPDO still in flight, and again before every SYNC; the drives that
answer also get it by SDO; and each drive's statusword from after the first SYNC that latched
it confirms it (``Axis.quick_stop``: "sent", then "confirmed"; found back in operation
enabled, the stop is sent again and counted). Nothing sent before a stop undoes it.

Other state changes (enable, disable, fault reset) go by SDO to the controlword with the
statusword read back, so they are confirmed and never ride on a PDO that carries targets.

Faults: an EMCY from a drive, its heartbeat missing for longer than the consumer time, its
NMT state leaving operational, its statusword showing fault, its TPDOs missing for
``max_stall``, or the bus receiver failing put the drive set in FAULT; the first :meth:`read`
that sees it quick-stops every axis itself and reports, per axis, the reason
(``Feedback.faults``). :meth:`reset` clears the faults once the cause is gone.

At every exit (:meth:`close`, and :meth:`disable`): every drive, also one marked lost, gets
disable voltage by SDO with the statusword read back until it reports switch on disabled (or
fault: its power stage is off too); a drive that does not answer is named in the error.
"""
from __future__ import annotations

import logging
import math
import threading
import time

import canopen

from delta_core.robot_file import RobotFileError, load_robot
from delta_hardware import cia402
from delta_hardware.canopen import startup
from delta_hardware.canopen.axis import Axis
from delta_hardware.canopen.bus import MASTER_RECEIVES, RECEIVE_BUFFER, open_bus, receive_stats
from delta_hardware.canopen.config import DrivesConfigError, load_drives_config
from delta_hardware.canopen.cyclic import CyclicExchange, hold_targets
from delta_hardware.canopen.monitor import Monitor
from delta_hardware.canopen.pdo_map import cyclic_bus_load
from delta_hardware.canopen.receiver import ReceiverWatch
from delta_hardware.cia402 import Command, State
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode

log = logging.getLogger(__name__)
TARGETS = "targets"                 # what the RPDOs carry while running (else a Command, or None)
#: python-can interfaces without a bitrate (in-process, UDP): no bus load limit
BUSES_WITHOUT_BITRATE = ("virtual", "udp_multicast")


class CanopenDriveSet(DriveSet):
    """Three CiA 402 servo drives on a CAN bus (see the module docstring).

    ``robot``: the robot file (joint names, gear ratio, limits); ``interface``/``channel``:
    the python-can bus; ``drives_config``: ``config/drives/<name>.yaml`` or a path (default
    ``generic_cia402``); ``rate``: the control rate, which is the SYNC rate. Extra options:
    ``simulate`` (start ``delta-drive-sim`` in-process on the same bus; default from the
    config), ``sim_options`` (dict for :class:`~.drive_sim.SimulatedCia402Drives`),
    ``config_overrides`` (dict merged over the config file), ``bus_options`` (dict for
    ``can.Bus``), ``receive_buffer`` (bytes of the socket's receive buffer, :mod:`.bus`).

    :attr:`close_error`: what :meth:`close` could not confirm (a drive that did not answer),
    also logged as a warning; empty when every drive was confirmed disabled.

    :attr:`max_stall` (s, ``timing.max_stall`` of the drives config) is how long the drives
    may go without a control cycle: the control loop should quick-stop after a longer gap
    (``LoopConfig.max_stall``), as this backend does for drives whose TPDOs stop.
    """

    def __init__(self, robot, interface: str = "virtual", channel: str = "vcan0", drives_config: str = "",
                 rate: float = 500.0, simulate: bool | None = None, sim_options: dict | None = None,
                 config_overrides: dict | None = None, bus_options: dict | None = None,
                 receive_buffer: int = RECEIVE_BUFFER, **kw):
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
        load = cyclic_bus_load(self.cfg, self.rate)
        if load > 1.0 and interface not in BUSES_WITHOUT_BITRATE:
            raise DriveError(f"{self.cfg.source}: at {self.rate:g} Hz the SYNC and PDOs of {len(self.cfg.node_ids)} "
                             f"drives need {100 * load:.0f} % of a 1 Mbit/s CAN bus, the most classic CAN carries: "
                             f"map one PDO each way per drive (generic_cia402_1khz) or lower control_rate")
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
        self._rpdo = None                       # what every RPDO carries: TARGETS, a Command, or None (nothing)
        self._stop_epoch = 0                    # stops and disables so far (an enable in progress loses to them)
        self._disabled = False                  # the last disable() confirmed every drive, and nothing since
        self._started = False
        self._closed = False
        self.close_error = ""
        self.sim = None
        self.network = None
        self.axes: list[Axis] = []
        try:
            if self.cfg.simulate if simulate is None else simulate:
                from delta_hardware.canopen.drive_sim import SimulatedCia402Drives   # in-function: simulate only
                try:
                    self.sim = SimulatedCia402Drives(self.robot, interface, channel, self.cfg, **(sim_options or {}))
                except (DriveError, TypeError, ValueError) as e:
                    raise DriveError(f"cannot start the simulated drives on {self.where}: {e}") from None
                except Exception as e:                   # python-can errors opening the bus
                    raise DriveError(f"cannot open CAN bus {self.where} for the simulated drives: {e}") from None
            try:
                bus = open_bus(interface, channel, receive_buffer=receive_buffer, receives=MASTER_RECEIVES,
                               **(bus_options or {}))
            except Exception as e:
                raise DriveError(f"cannot open CAN bus {self.where}: {e}") from None
            self.network = canopen.Network(bus)
            self.network.NOTIFIER_CYCLE = 0.05
            self.receiver = ReceiverWatch(self.where)
            self.receiver.attach(self.network)
            cat = self.cfg.catalogue
            for i, node_id in enumerate(self.cfg.node_ids):
                node = canopen.RemoteNode(node_id, self.cfg.object_dictionary(node_id))
                node.sdo.RESPONSE_TIMEOUT = self.cfg.sdo_timeout
                node.sdo.MAX_RETRIES = 1
                self.network.add_node(node)
                self.axes.append(Axis(i, node_id, self.robot.joint_names[i], self.cfg.axes[i], node, cat, self._fb))
            self.monitor = Monitor(self.axes, self.cfg, self._fb, self._faults, self.rate)
            if self.cfg.tpdo_misses >= self.monitor.silence_limit:
                raise DriveError(f"{self.cfg.source}: timing.tpdo_misses ({self.cfg.tpdo_misses}) must be fewer than "
                                 f"the cycles of timing.max_stall ({self.monitor.silence_limit} at {self.rate:g} Hz)")
            self.cyclic = CyclicExchange(self.network, self.axes, self._fb, self.tpdo_timeout, self.cfg.tpdo_misses)
            self.cyclic.velocity_period = self.interp_period
            for ax in self.axes:
                self.monitor.attach(ax)
            before = set(threading.enumerate())
            self.network.connect()
            self.receiver.connected(before)
            self._startup()
            self._started = True
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
        """The bus and the drives config's name (for the node's start-up line)."""
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
        """Set the recorder (None: none)."""
        self.cyclic.recorder = fn

    @property
    def simulated(self) -> bool:
        """Whether every drive is ``delta-drive-sim`` (its device name, 0x1008)."""
        return bool(self.axes) and all(ax.device_name.startswith(startup.SIMULATED_DEVICE) for ax in self.axes)

    #: s of wall time simulated drives may be silent in simulated time before they count as lost
    LOCKSTEP_SILENCE = 5.0

    def lockstep(self) -> None:
        """Run in simulated time with simulated drives (``delta-drive-sim``): every read waits
        for the answers to its SYNC, and a drive counts as lost (heartbeat consumer time) only
        after ``LOCKSTEP_SILENCE`` s of silence, an SDO answer is waited for half that and a
        state change that long: a starved simulator process slows the simulation, a dead one is
        still found. Real drives never run this way."""
        if not self.simulated:
            raise DriveError("lockstep (simulated time) needs simulated drives (delta-drive-sim)")
        self.tpdo_timeout = self.cyclic.tpdo_timeout = self.LOCKSTEP_SILENCE
        self.monitor.consumer_time = max(self.monitor.consumer_time, self.LOCKSTEP_SILENCE)
        # a starved simulator answers SDO late too (reset, enable, disable): not a lost drive
        self.cfg.sdo_timeout = max(self.cfg.sdo_timeout, self.LOCKSTEP_SILENCE / 2)
        self.cfg.state_timeout = max(self.cfg.state_timeout, self.LOCKSTEP_SILENCE)
        for ax in self.axes:
            ax.node.sdo.RESPONSE_TIMEOUT = self.cfg.sdo_timeout

    @property
    def bus_time(self) -> float:
        """SYNCs sent times the period (s): the time the drives have run through. Simulated
        drives (``delta-drive-sim``) step one interpolation period per SYNC, so this is
        their simulated time: a loop whose clock is this runs on the same time base as the
        simulation, however slow the host (withheld cycles do not advance it)."""
        return self.cyclic.stats["syncs"] * self.interp_period

    @property
    def emcy_log(self) -> list:
        """The EMCY messages received: ``(axis index, error code, error register, monotonic time)``."""
        return self.monitor.emcy_log

    # ================================================================== state
    def _combined_state(self) -> DriveState:
        if self._faults or any(ax.cia_state in (State.FAULT, State.FAULT_REACTION_ACTIVE) for ax in self.axes):
            return DriveState.FAULT
        if self._running and all(ax.cia_state is State.OPERATION_ENABLED for ax in self.axes):
            return DriveState.ENABLED
        if (self._stopped or self._rpdo is Command.QUICK_STOP
                or any(ax.cia_state is State.QUICK_STOP_ACTIVE for ax in self.axes)):
            return DriveState.QUICK_STOP
        return DriveState.DISABLED

    @property
    def state(self) -> DriveState:
        """The combined state: FAULT if any axis faulted, ENABLED only if all are; DISABLED once closed.
        The monitor checks heartbeats, NMT states and statuswords first."""
        if self._closed:
            return DriveState.DISABLED
        self.monitor.check()
        with self._fb:
            return self._combined_state()

    @property
    def faults(self) -> dict:
        """A copy of the faults: axis index -> reason."""
        with self._fb:
            return dict(self._faults)

    # ================================================================== DriveSet: state changes
    def enable(self) -> None:
        """Every drive to operation enabled by SDO, confirmed, holding where it is (each step
        mirrored on its RPDO); then the RPDOs carry targets. A stop decided meanwhile wins
        (DriveError)."""
        self._check_receiver()
        self.monitor.check()
        with self._fb:
            faults = dict(self._faults)
        if faults:
            k = min(faults)
            raise DriveError(f"cannot enable: {self.axes[k].label} is in fault: {faults[k]}; reset first")
        with self._lock:
            self._rpdo = None                            # the RPDOs carry only the steps below
            epoch = self._stop_epoch
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
                    # each step's controlword on the RPDO first: whatever a SYNC latches meanwhile
                    # (a stop sent before, still in flight) repeats the step, never undoes it
                    ax.before_controlword = lambda cw, ax=ax: self._send(
                        lambda: self.cyclic.transmit_command(ax, cw, self._held(ax)), fault=False)
                    try:
                        cia402.drive_to(ax, State.OPERATION_ENABLED, self.cfg.state_timeout)
                    finally:
                        ax.before_controlword = None
                    done.append(ax)
            except DriveError as e:
                self._rpdo = Command.DISABLE_VOLTAGE
                for other in done:
                    try:
                        other.write("controlword", Command.DISABLE_VOLTAGE.value)
                    except DriveError:
                        pass
                raise DriveError(f"cannot enable: {e}") from None
            with self._lock, self._fb:
                if self._stop_epoch == epoch:
                    self._running = True
                    self._rpdo = TARGETS
                    self._stopped = ""
                    self._fault_handled = False
                    self._disabled = False
                    for ax in self.axes:
                        ax.quick_stop = ax.stop_latch = None
                        ax.rpdo_pending = False
                        ax.silent_cycles = 0
                    self.cyclic.restart()
                    self._transmit(self._cmd)            # the next SYNC latches the hold targets
                    return
        reason = self._stopped or "disabled"
        self.quick_stop(reason)                          # the drives enabled meanwhile stop again
        raise DriveError(f"cannot enable: stopped while enabling ({reason})")

    def _decide(self, command: Command, reason: str | None = None) -> list:
        """From now on every RPDO carries ``command`` (quick stop or disable voltage): sent at
        once to every drive (overriding targets in flight) and before every SYNC. Returns the
        axes for which a quick stop is newly decided."""
        newly = []
        with self._lock:
            self._running = False
            self._stop_epoch += 1
            self._disabled = False
            if reason is not None:
                self._stopped = reason
            if command is Command.DISABLE_VOLTAGE or self._rpdo is not Command.DISABLE_VOLTAGE:
                self._rpdo = command                       # (a quick stop does not undo a disable)
            for ax in self.axes:
                ax.rpdo_pending, ax.stop_latch = True, None
                if self._rpdo is Command.QUICK_STOP and ax.quick_stop is None:
                    ax.quick_stop = "sent"
                    newly.append(ax)
            if self.network is not None:
                for ax in self.axes:
                    self._send(lambda ax=ax: self.cyclic.transmit_command(ax, self._rpdo, self._held(ax)), fault=False)
        return newly

    def _held(self, ax: Axis) -> int:
        return ax.values.get("position_actual", 0)

    def quick_stop(self, reason: str = "") -> None:
        """Quick stop (controlword 0x0002) of every axis, latched until :meth:`reset` /
        :meth:`enable`: on every RPDO from now on (see the module docstring), and by SDO to
        every drive not found silent, the ones whose TPDOs come first (one that does not
        answer costs its SDO timeout once, and is then found silent)."""
        newly = self._decide(Command.QUICK_STOP, reason or "quick stop")
        for ax in sorted(newly, key=lambda a: not self.monitor.responsive(a)):
            if ax.silent or ax.cia_state not in (State.OPERATION_ENABLED, None):
                continue                                 # found silent: its stop rides on the RPDO
            try:
                ax.write("controlword", Command.QUICK_STOP.value)
            except DriveError as e:
                with self._fb:
                    self._faults.setdefault(ax.index, f"quick stop not confirmed: {e}")
                    self.monitor.mark_lost(ax)

    def _confirm_commands(self) -> None:
        """Each drive's statusword from after the first SYNC that latched the stop command: in
        the commanded state (quick stop: out of operation enabled; disable: power stage off),
        the command holds and no longer needs to go out ("confirmed"); out of it, it did not:
        it goes out again (by SDO too, if the drive answers) and is confirmed anew. Checked on
        every read, so a drive that leaves the commanded state later is caught too."""
        cmd = self._rpdo
        if not isinstance(cmd, Command):
            return
        for ax in self.axes:
            if ax.stop_latch is None:
                continue
            with self._fb:
                fresh = ax.stamp > ax.stop_latch
                st = ax.cia_state
            if not fresh:
                continue
            if cmd is Command.QUICK_STOP:
                holds = st is not State.OPERATION_ENABLED
            else:
                holds = st in cia402.POWER_OFF or st is State.FAULT_REACTION_ACTIVE
            if holds:
                ax.rpdo_pending = False
                if cmd is Command.QUICK_STOP:
                    ax.quick_stop = "confirmed"
                continue
            with self._lock:
                ax.rpdo_pending, ax.stop_latch = True, None
                ax.stop_resent += 1
                if cmd is Command.QUICK_STOP:
                    ax.quick_stop = "sent"
                self._send(lambda ax=ax: self.cyclic.transmit_command(ax, cmd, self._held(ax)), fault=False)
            if self.monitor.responsive(ax):
                try:
                    ax.write("controlword", cmd.value)
                except DriveError:
                    pass

    def disable(self) -> None:
        """Disable voltage to every drive, confirmed: by SDO to every drive, also one marked
        lost, with the statusword read back until it reports switch on disabled (or fault),
        all drives at once (a drive that does not answer is asked again until
        ``timing.state_timeout`` + 3 SDO timeouts have passed); and on the RPDOs, with one SYNC
        after the SDOs that latches it (the path that needs no SDO answer, e.g. when the loop
        that sent SYNC is gone). Raises :class:`DriveError` naming every drive that did not
        answer or stays powered."""
        self._decide(Command.DISABLE_VOLTAGE)
        if self.network is None:
            raise DriveError(f"disable: the bus {self.where} is closed; the drives' state is unknown")
        self._check_receiver()                            # a dead receiver: restarted, to hear the answers
        results: dict = {}
        deadline = time.monotonic() + self.cfg.state_timeout + 3 * self.cfg.sdo_timeout

        def one(ax):
            while True:
                try:
                    results[ax.index] = cia402.disable(ax, max(deadline - time.monotonic(), 0.0))
                    return
                except DriveError as e:
                    results[ax.index] = e
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.01)

        threads = [threading.Thread(target=one, args=(ax,), daemon=True, name=f"disable_{ax.node_id}")
                   for ax in self.axes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.cfg.state_timeout + 6 * self.cfg.sdo_timeout + 1.0)
        with self._lock:                                  # the RPDO path, for a drive the SDOs did not reach
            self._send(lambda: self.cyclic.sync(time.monotonic(), wait_for_answers=False), fault=False)
        problems = []
        for ax in self.axes:
            r = results.get(ax.index)
            if isinstance(r, State):
                ax.rpdo_pending = False                   # confirmed by its statusword
                continue
            last = ax.cia_state
            problems.append(f"{r if r is not None else ax.label + ': no answer in time'} - not confirmed disabled "
                            f"(its last statusword said {last.value if last else 'nothing'})")
        with self._lock:
            self._stopped = ""
            for ax in self.axes:
                ax.quick_stop = None
            self._disabled = not problems
        if problems:
            raise DriveError("disable: " + "; ".join(problems))

    def reset(self) -> None:
        """Fault reset: every drive back to switch on disabled (a drive without heartbeat that
        answers gets its producer time again, a rebooted one is configured again); raises
        DriveError naming the drives whose cause remains."""
        self._check_receiver()
        self.monitor.check()
        self._decide(Command.DISABLE_VOLTAGE)
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
                ax.rpdo_pending = False                   # in switch on disabled, confirmed by SDO
        self.cyclic.restart()
        if problems:
            raise DriveError("reset failed, the cause remains: " + "; ".join(problems))
        with self._lock, self._fb:
            self._stopped = ""
            self._fault_handled = False

    # ================================================================== DriveSet: cyclic
    def _send(self, fn, fault: bool = True):
        """Run a transmission; a python-can error (a closed bus, ...) faults every axis."""
        try:
            return fn()
        except Exception as e:
            if fault:
                with self._fb:
                    for ax in self.axes:
                        self._faults.setdefault(ax.index, f"CAN bus error on {self.where}: {e}")
            return None

    def _may_send_targets(self) -> bool:
        return (self._running and self._rpdo == TARGETS and not self._faults
                and all(ax.cia_state is State.OPERATION_ENABLED for ax in self.axes))

    def _check_receiver(self) -> None:
        """A receive error or a dead receive thread (:mod:`.receiver`): a fault of every axis;
        a dead thread is started again (so that the stop and the disable are confirmed)."""
        if self.network is None:
            return
        text = self.receiver.check()
        if text is None:
            return
        if self.receiver.restart(self.network):
            text += "; receiver restarted to stop and disable the drives"
        with self._fb:
            for ax in self.axes:
                self._faults.setdefault(ax.index, text)

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

    def cycle(self, dt: float) -> float:
        """Begin a control cycle: the receiver checked, the stop command (if one is latched) on
        the RPDOs of every drive not yet seen to hold it, then SYNC, unless a drive (not lost)
        has owed TPDOs for more than ``timing.tpdo_misses`` cycles. Returns ``dt`` when SYNC
        went out, 0 when it was held back (the drives did not advance)."""
        if self._closed:
            return 0.0
        now = time.monotonic()
        self._check_receiver()
        self.monitor.loop_cycle(now)
        self.monitor.count_silence(self.cyclic.begin_cycle(now))
        with self._lock:
            cmd = self._rpdo
            if isinstance(cmd, Command):
                for ax in self.axes:
                    if ax.rpdo_pending:
                        self._send(lambda ax=ax: self.cyclic.transmit_command(ax, cmd, self._held(ax)))
            sent = self._send(lambda: self.cyclic.sync(now))
            if sent:
                for ax in self.axes:
                    if ax.rpdo_pending and ax.stop_latch is None:
                        ax.stop_latch = now
        return float(dt) if sent else 0.0

    def read(self) -> Feedback:
        """The feedback of the last SYNC (values held for a drive whose TPDOs did not come),
        the combined state and the faults; the first read that sees a fault quick-stops every
        axis (the fault reaction)."""
        self.cyclic.wait()
        with self._fb:
            snap = [dict(ax.values) for ax in self.axes]
        self.monitor.check()
        self._confirm_commands()
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
    def receive_stats(self) -> dict:
        """The bus receiver: ``receive_buffer`` (bytes granted), ``dropped`` (frames the host
        dropped, None where unknown), ``receive_errors``, ``receiver_restarts``
        (:mod:`.bus`, :mod:`.receiver`)."""
        out = {"receive_buffer": None, "dropped": None}
        if self.network is not None and self.network.bus is not None:
            out = receive_stats(self.network.bus, self.interface, self.channel)
        out["receive_errors"] = self.receiver.errors if self.network is not None else 0
        out["receiver_restarts"] = self.receiver.restarts if self.network is not None else 0
        return out

    def diagnostics(self) -> dict:
        """Key/value strings for ``/diagnostics``: per-axis state, TPDOs missed, the stop's
        confirmation, and the bus statistics (SYNCs, receive buffer and dropped frames)."""
        now = time.monotonic()
        s = self.stats
        r = self.receive_stats()
        d = {"bus": self.where, "drives_config": self.cfg.name, "mode": self.mode.name.lower(),
             "syncs": str(s["syncs"]), "late_syncs": str(s["late"]), "withheld_syncs": str(s["withheld"]),
             "max_stall_ms": f"{self.max_stall * 1e3:.0f}",
             "heartbeat_consumer_ms": f"{self.cfg.heartbeat_timeout * 1e3:.0f}",
             "tpdo_misses_tolerated": str(self.cfg.tpdo_misses),
             "bus_receive_buffer_bytes": "unknown" if r["receive_buffer"] is None else str(r["receive_buffer"]),
             "bus_frames_dropped": "unknown" if r["dropped"] is None else str(r["dropped"]),
             "bus_receive_errors": str(r["receive_errors"]),
             "bus_receiver_restarts": str(r["receiver_restarts"])}
        for key in ("sync_period", "latency"):
            summary = s[key].summary()
            for k in ("p50", "p99", "max"):
                if k in summary:
                    d[f"{key}_{k}_ms"] = f"{summary[k]:.3f}"
        for ax in self.axes:
            st = ax.cia_state
            hb = "never" if ax.hb_time is None else f"{max(now - ax.hb_time, 0.0):.2f} s ago"
            qs = {"sent": ", quick stop sent (not yet seen to hold)",
                  "confirmed": ", quick stop confirmed"}.get(ax.quick_stop, "")
            if ax.stop_resent:
                qs += f" (found back in operation enabled and stopped again {ax.stop_resent} times)"
            missed = ""
            if ax.tpdo_missed:
                missed = (f", {ax.tpdo_missed} TPDO{'s' if ax.tpdo_missed > 1 else ''} missed "
                          f"(last values held; the last {now - ax.tpdo_missed_time:.1f} s ago)")
            d[f"axis{ax.index + 1}"] = (f"{ax.joint} node {ax.node_id} ({ax.device_name or 'no device name'}): "
                                        f"{st.value if st else 'unknown'}, heartbeat {hb}{missed}{qs}"
                                        + (f", FAULT: {self._faults[ax.index]}" if ax.index in self._faults else ""))
        return d

    def bus_load(self, bitrate: int = 1_000_000) -> float:
        """Estimated CAN bus load (0..1) of the cyclic traffic at this rate: SYNC, RPDOs,
        TPDOs; a classic frame with n data bytes is 47 + 8 n bits plus ~20 % bit stuffing."""
        return cyclic_bus_load(self.cfg, self.rate, bitrate)

    def close(self) -> None:
        """Disable every drive that answers (:meth:`disable`, unless the last one confirmed
        them all and nothing was enabled or stopped since), then release the bus. Never
        raises: a drive that could not be confirmed disabled is in :attr:`close_error` and
        logged as a warning. Safe to call more than once, from any thread."""
        if self._closed:
            return
        try:
            if self._started and self.network is not None and not self._disabled:
                try:
                    self.disable()
                except DriveError as e:
                    self.close_error = str(e)
                    log.warning("%s", e)
        finally:
            self._closed = True
            if self.network is not None:
                try:
                    self.receiver.clear_exception(self.network)
                    self.network.disconnect()
                except Exception:              # a bus that failed already: nothing more to release
                    pass
                self.network = None
            if self.sim is not None:
                self.sim.close()
                self.sim = None
