"""Start-up of the drives (CiA 301 NMT and SDO, CiA 402 parameters): find them, configure
them, start them. Every step is bounded by a timeout of the drives config and fails with a
:class:`DriveError` that names the node ID and the axis.

1. :func:`probe`: NMT pre-operational, then every drive asked for its device type (0x1000)
   at once; a silent bus and a missing drive are told apart and named;
2. :func:`configure` (per drive, the backend runs them in parallel with :func:`parallel`): its
   device name read (0x1008, optional; ``delta-drive-sim``'s drives, a Python process that a
   busy host slows, get :data:`SIMULATED_SDO_TIMEOUT` for their SDO answers); a drive left
   enabled is disabled; encoder resolution checked (0x608F); mode of operation
   (0x6060) written and its display (0x6061) checked; interpolation period (0x60C2) and SYNC
   period (0x1006); max torque (0x6072), motor rated torque (0x6076), quick stop option
   (0x605A), software position limits (0x607D), following error window (0x6065); heartbeat
   producer time (0x1017); the PDO mapping (:mod:`.pdo_map`);
3. :func:`start`: NMT operational, and a heartbeat in state operational from every drive.

:func:`revive` brings back a drive that lost its heartbeat or rebooted (for a fault reset).
"""
from __future__ import annotations

import threading
import time

import canopen

from delta_hardware import cia402
from delta_hardware.cia402 import Command, State
from delta_hardware.canopen.config import interpolation_period_encoding
from delta_hardware.canopen.pdo_map import map_pdos
from delta_hardware.drives.interface import DriveError

NMT_OPERATIONAL = 5
#: 0x1008 of ``delta-drive-sim``'s drives: how a master knows they are simulated
SIMULATED_DEVICE = "delta-drive-sim"
#: s an SDO answer of a simulated drive may take: a Python process on a busy host, not a drive
SIMULATED_SDO_TIMEOUT = 1.0


def nmt_name(state) -> str:
    """The NMT state a heartbeat reports, as text (0 is the boot-up message)."""
    if state is None:
        return "nothing"
    return {0: "boot-up"}.get(state, canopen.nmt.NMT_STATES.get(state, f"state {state}"))


def labels(axes) -> str:
    """The labels of ``axes`` (:attr:`.axis.Axis.label`), comma separated."""
    return ", ".join(ax.label for ax in axes)


def parallel(fn, axes) -> None:
    """``fn(ax)`` for every axis at once (one thread each); the DriveErrors of all of them
    are raised as one, in axis order."""
    errors: dict[int, BaseException] = {}

    def run(ax):
        try:
            fn(ax)
        except BaseException as e:     # collected and re-raised below
            errors[ax.index] = e

    threads = [threading.Thread(target=run, args=(ax,), daemon=True) for ax in axes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        first = errors[min(errors)]
        if isinstance(first, DriveError):
            raise DriveError("; ".join(str(errors[k]) for k in sorted(errors))) from None
        raise first


def probe(axes, cfg, where: str) -> None:
    """NMT pre-operational, then ask every drive for its device type at once (each within
    ``timing.startup_timeout``); name the drives that do not answer, and refuse a device type
    that is not CiA 402."""
    for ax in axes:
        ax.node.nmt.state = "PRE-OPERATIONAL"
    results: dict[int, object] = {}

    def ask(ax):
        ax.node.sdo.RESPONSE_TIMEOUT = cfg.startup_timeout
        try:
            results[ax.index] = ax.read("device_type")
        except DriveError as e:
            results[ax.index] = e
        finally:
            ax.node.sdo.RESPONSE_TIMEOUT = cfg.sdo_timeout

    threads = [threading.Thread(target=ask, args=(ax,), daemon=True) for ax in axes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(cfg.startup_timeout + 1.0)
    silent = [ax for ax in axes if not isinstance(results.get(ax.index), int)]
    if len(silent) == len(axes):
        raise DriveError(f"no drive answered on {where} within {cfg.startup_timeout:.2f} s "
                         f"(node IDs {', '.join(str(a.node_id) for a in axes)}): the bus is silent - "
                         f"check power, wiring, bitrate, channel and the node IDs in {cfg.source}")
    if silent:
        raise DriveError(f"drive missing: no answer from {labels(silent)} on {where} within "
                         f"{cfg.startup_timeout:.2f} s (the other drives answered)")
    for ax in axes:
        dt = results[ax.index]
        if dt & 0xFFFF != 402:
            raise DriveError(f"{ax.label} is not a CiA 402 drive: device type 0x{dt:08X} (0x1000)")


def configure(ax, cfg, robot, period: float, interp_period: float, network: canopen.Network) -> None:
    """Configure one drive (NMT pre-operational) by SDO for ``cfg`` (a DrivesConfig), the
    robot file ``robot`` (limits) and the control ``period`` (s): the parameters listed in
    the module docstring, then the PDO mapping. The drive ends in switch on disabled (or
    where it was, if below)."""
    ax.device_name = ax.read_device_name()
    if ax.device_name.startswith(SIMULATED_DEVICE):
        ax.node.sdo.RESPONSE_TIMEOUT = max(cfg.sdo_timeout, SIMULATED_SDO_TIMEOUT)
    st = ax.read_state()
    if st in (State.READY_TO_SWITCH_ON, State.SWITCHED_ON, State.OPERATION_ENABLED, State.QUICK_STOP_ACTIVE):
        ax.write("controlword", Command.DISABLE_VOLTAGE.value)      # a safe start
    u = ax.units.scaling
    if cfg.check_encoder_resolution and ax.has("encoder_increments"):
        inc, rev = ax.read("encoder_increments"), ax.read("motor_revolutions")
        if rev == 0 or inc / rev != u.counts_per_rev:
            raise DriveError(f"{ax.label}: the drive's encoder has {inc}/{rev} increments per motor "
                             f"revolution (0x608F), {cfg.source} says counts_per_rev {u.counts_per_rev}")
    mode = cfg.mode.value
    ax.write("modes_of_operation", mode)
    shown = ax.read("modes_of_operation_display")
    if shown != mode:
        raise DriveError(f"{ax.label} does not take mode {mode} ({cia402.MODE_NAMES[mode]}): 0x6061 shows {shown}")
    value, index = interpolation_period_encoding(interp_period)
    ax.write("interpolation_period_value", value)
    ax.write("interpolation_period_index", index)
    if ax.has("communication_cycle_period"):
        ax.write("communication_cycle_period", int(round(period * 1e6)))
    ax.write("max_torque", cfg.max_torque[ax.index])
    if cfg.write_rated_torque:
        ax.write("rated_torque", int(round(u.rated_torque * 1000)))
    ax.write("quick_stop_option_code", cfg.quick_stop_option_code)
    if cfg.software_limits:
        lo, hi = robot.limits.position[ax.index]
        m = cfg.position_limit_margin
        c = sorted((ax.units.position_to_counts(lo - m), ax.units.position_to_counts(hi + m)))
        ax.write("software_position_limit_min", c[0])
        ax.write("software_position_limit_max", c[1])
    few = cfg.following_error_window
    ax.write("following_error_window", min(int(round(few / u.rad_per_count)), 0xFFFFFFFE) if few > 0 else 0xFFFFFFFF)
    ax.write("producer_heartbeat_time", cfg.heartbeat_ms)
    map_pdos(ax, cfg.rpdo, cfg.tpdo, network, cfg.source)


def wait_heartbeat(ax, since: float, operational: bool, timeout: float) -> bool:
    """Wait (up to ``timeout`` s) for a heartbeat of ``ax`` received after ``since``
    (monotonic), in NMT operational if ``operational``."""
    deadline = time.monotonic() + timeout
    while True:
        if ax.hb_time is not None and ax.hb_time >= since and \
                (not operational or ax.hb_state == NMT_OPERATIONAL):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)


def start(axes, cfg, where: str) -> None:
    """NMT start every drive; wait for a heartbeat in state operational from each (within
    ``timing.startup_timeout``, at least 2.5 producer periods)."""
    t_start = time.monotonic()
    for ax in axes:
        ax.node.nmt.state = "OPERATIONAL"
    wait = max(cfg.startup_timeout, 2.5 * cfg.heartbeat_ms / 1000.0)
    for ax in axes:
        wait_heartbeat(ax, t_start, True, t_start + wait - time.monotonic())
    bad = [ax for ax in axes if not (ax.hb_time is not None and ax.hb_time >= t_start)]
    if bad:
        raise DriveError(f"no heartbeat within {wait:.2f} s from {labels(bad)} on {where} "
                         f"(producer time {cfg.heartbeat_ms} ms was written to 0x1017)")
    bad = [ax for ax in axes if ax.hb_state != NMT_OPERATIONAL]
    if bad:
        raise DriveError(f"{labels(bad)} did not go to NMT operational "
                         f"(heartbeat reports {[nmt_name(ax.hb_state) for ax in bad]})")


def revive(ax, cfg, reconfigure) -> None:
    """Before a fault reset: a drive without heartbeat that still answers SDO gets its
    heartbeat producer time again; one that rebooted (not NMT operational) is configured
    again by ``reconfigure(ax)`` and started. Raises DriveError if the drive stays silent."""
    now = time.monotonic()
    wait = max(2.5 * cfg.heartbeat_ms / 1000.0, 0.05)
    if ax.hb_time is None or now - ax.hb_time > cfg.heartbeat_timeout:
        age = "ever" if ax.hb_time is None else f"{now - ax.hb_time:.2f} s"
        try:
            ax.write("producer_heartbeat_time", cfg.heartbeat_ms)
        except DriveError:
            raise DriveError(f"{ax.label}: still no heartbeat (none for {age}) and no SDO answer") from None
        if not wait_heartbeat(ax, now, False, wait):
            raise DriveError(f"{ax.label}: still no heartbeat (none for {age}; the drive answers SDO "
                             f"but does not produce its heartbeat)")
    if ax.hb_state != NMT_OPERATIONAL:                   # it rebooted: configure it again
        ax.node.nmt.state = "PRE-OPERATIONAL"
        reconfigure(ax)
        t = time.monotonic()
        ax.node.nmt.state = "OPERATIONAL"
        if not wait_heartbeat(ax, t, True, wait):
            raise DriveError(f"{ax.label} did not go back to NMT operational "
                             f"(heartbeat reports {nmt_name(ax.hb_state)})")
