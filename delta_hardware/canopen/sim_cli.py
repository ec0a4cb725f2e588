"""``delta-drive-sim``: the command line of the simulated CiA 402 drives (:mod:`.drive_sim`).

    delta-drive-sim [--interface udp_multicast] [--channel 239.74.163.2[:port]] [--robot nt_robot]
                    [--drives-config generic_cia402] [--true-robot FILE] [--payload KG]
                    [--torque-noise NM] [--velocity-noise RAD_S] [--realtime] [--absent AXIS ...]
                    [--status-period S] [--duration S] [--inject-fault AXIS:CODE@S ...]

Every argument is checked; a bad one prints one line, ``delta-drive-sim: error: argument
--duration: must be a finite number >= 0 s, got -1 (see --help)``, and exits with status 2.

SIGINT (Ctrl-C) and SIGTERM stop it cleanly at any moment, also as a background job (whose
SIGINT the shell ignores): the drives leave the bus, the bus is closed, the last line says so,
exit status 0. This module imports nothing heavy before its handlers are installed, so a
signal during start-up is no exception either.
"""
from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time

from delta_hardware.canopen.channel import check_channel    # stdlib only

PROG = "delta-drive-sim"


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line ``delta-drive-sim: error: argument --x: ...``, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _number(what: str):
    """An argument type: a finite number >= 0 (``what`` names the unit in the message)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (math.isfinite(v) and v >= 0):
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0{what}, got {text}")
        return v
    return parse


def _axis(text: str) -> int:
    if text.strip() not in ("1", "2", "3"):
        raise argparse.ArgumentTypeError(f"must be an axis 1, 2 or 3, got {text!r}")
    return int(text)


def _fault(text: str):
    """``AXIS:CODE[@SECONDS]`` -> (axis 0-2, code, simulated s or None: on SIGUSR1): ``2:0x2310@3.5``.

    >>> _fault("2:0x2310@3.5"), _fault("3:0x7121")
    ((1, 8976, 3.5), (2, 28961, None))
    """
    try:
        axis, rest = text.split(":", 1)
        code, _, at = rest.partition("@")
        a, c, t = _axis(axis) - 1, int(code, 0), (float(at) if at else None)
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"must be AXIS:CODE[@SECONDS] like 2:0x2310@3.5, got {text!r}") from None
    if not (0 < c <= 0xFFFF and (t is None or (math.isfinite(t) and t >= 0))):
        raise argparse.ArgumentTypeError(f"must have an error code 0x0001-0xFFFF and a time >= 0 s, got {text!r}")
    return a, c, t


def _interface(text: str) -> str:
    import can
    if text not in can.interfaces.VALID_INTERFACES:
        raise argparse.ArgumentTypeError(f"unknown python-can interface {text!r} (e.g. udp_multicast, "
                                         f"socketcan, virtual)")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``delta-drive-sim``."""
    ap = _Parser(prog=PROG, description=(
        "Three simulated CiA 402 servo drives on a CAN bus, the robot's physics behind them. "
        "Runs until Ctrl-C, SIGINT or SIGTERM (exit status 0, bus closed)."))
    ap.add_argument("--interface", default="udp_multicast", type=_interface,
                    help="python-can interface: udp_multicast (default; this host only), socketcan, virtual")
    ap.add_argument("--channel", default="239.74.163.2",
                    help="CAN channel: multicast group[:port] for udp_multicast, can0, ...")
    ap.add_argument("--robot", default="nt_robot", help="robot file: preset name or path")
    ap.add_argument("--drives-config", default="generic_cia402", help="config/drives/<name>.yaml or a path")
    ap.add_argument("--true-robot", default=None, help="robot file of the physics, if it differs")
    ap.add_argument("--payload", type=_number(" kg"), default=0.0,
                    help="kg on the platform the controller does not know")
    ap.add_argument("--torque-noise", type=_number(" N m"), default=None,
                    help="N m (N on a linear robot's carriages) standard deviation of the reported "
                         "torque (default: the drives config's)")
    ap.add_argument("--velocity-noise", type=_number(" rad/s"), default=None,
                    help="rad/s (m/s) standard deviation of the reported velocity (default: the drives "
                         "config's)")
    ap.add_argument("--realtime", action="store_true",
                    help="step the physics by the time between the master's SYNCs (at most 5 periods), not by "
                         "one interpolation period per SYNC: for a master on the wall clock")
    ap.add_argument("--absent", type=_axis, nargs="*", default=[], help="axes (1-3) whose drive is not on the bus")
    ap.add_argument("--status-period", type=_number(" s"), default=0.0, help="s between status lines (0: none)")
    ap.add_argument("--duration", type=_number(" s"), default=0.0, help="s to run (0: until stopped)")
    ap.add_argument("--inject-fault", type=_fault, nargs="*", default=[], metavar="AXIS:CODE[@S]",
                    help="fault the drive of AXIS (1-3) with the EMCY error CODE (a fault a reset clears) once the "
                         "drives' simulated time reaches S seconds, e.g. 2:0x2310@3.5; without @S each time the "
                         "process gets SIGUSR1")
    return ap


def _say(text: str, err: bool = False) -> None:
    try:
        print(text, file=sys.stderr if err else sys.stdout, flush=True)
    except (BrokenPipeError, ValueError):       # the terminal or pipe is gone: nothing to tell
        pass


def main(argv=None) -> int:
    """Entry point of ``delta-drive-sim``; returns the exit status (0, or 2 for bad input)."""
    stop = threading.Event()
    usr1 = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):    # also when started with SIGINT ignored (background)
            signal.signal(sig, lambda *_: stop.set())
        signal.signal(signal.SIGUSR1, lambda *_: usr1.set())
    ap = build_parser()
    a = ap.parse_args(argv)
    problem = check_channel(a.interface, a.channel)
    if problem:
        ap.error(f"argument --channel: {problem}")
    if len(set(a.absent)) != len(a.absent):
        ap.error(f"argument --absent: an axis given twice: {a.absent}")
    if len(a.absent) == 3:
        ap.error("argument --absent: at least one drive must be on the bus")

    # in-function, here and below: nothing heavy before the signal handlers (module docstring)
    from delta_core.robot_file import RobotFileError, load_robot
    from delta_hardware.canopen.config import DrivesConfigError, load_drives_config
    try:
        robot = load_robot(a.robot)
    except RobotFileError as e:
        ap.error(f"argument --robot: {e}")
    try:
        true_robot = load_robot(a.true_robot) if a.true_robot else None
    except RobotFileError as e:
        ap.error(f"argument --true-robot: {e}")
    noise = {k: v for k, v in (("torque_noise", a.torque_noise), ("velocity_noise", a.velocity_noise))
             if v is not None}
    try:
        cfg = load_drives_config(a.drives_config, robot, {"simulation": noise} if noise else None)
    except DrivesConfigError as e:
        ap.error(f"argument --drives-config: {e}")
    if stop.is_set():
        _say(f"{PROG}: stopped before the bus was opened")
        return 0

    import numpy as np

    # in-function: python-can and the drives only once the arguments are checked
    from delta_hardware.canopen.drive_sim import SimulatedCia402Drives
    from delta_hardware.drives.interface import DriveError
    try:
        sim = SimulatedCia402Drives(robot, a.interface, a.channel, cfg, true_robot=true_robot,
                                    payload=a.payload, absent=tuple(k - 1 for k in a.absent),
                                    realtime=a.realtime, faults=[f for f in a.inject_fault if f[2] is not None])
    except (DrivesConfigError, DriveError, ValueError) as e:
        _say(f"{PROG}: error: {e}", err=True)
        return 2
    except Exception as e:                                # python-can's errors opening the bus
        _say(f"{PROG}: error: cannot open {a.interface} {a.channel}: {e}", err=True)
        return 2
    try:
        ids = ", ".join(str(d.node_id) for d in sim.present)
        _say(f"{PROG}: drives {sim.cfg.name} at node IDs {ids} on {a.interface} {a.channel}, "
             f"robot {sim.robot.name}; Ctrl-C to stop")
        from delta_dynamics.kinds import joint_units         # in-function: as the drives above
        unit = joint_units(sim.robot)["position"]
        t0 = time.monotonic()
        next_status = t0 + a.status_period
        end = t0 + a.duration if a.duration else math.inf
        while not stop.is_set():
            now = time.monotonic()
            wake = min(end, next_status if a.status_period else math.inf, now + 0.02)
            stop.wait(max(wake - now, 0.0))
            now = time.monotonic()
            if usr1.is_set():
                usr1.clear()
                for axis, code, at in a.inject_fault:
                    if at is None and sim.drives[axis] is not None:
                        sim.inject_fault(axis, code, persistent=False)
                        _say(f"{PROG}: fault 0x{code:04X} injected on axis {axis + 1} (SIGUSR1)")
            if a.status_period and now >= next_status:
                next_status += a.status_period
                with sim.lock:
                    states = ", ".join(d.state.value if d else "absent" for d in sim.drives)
                    q = ", ".join(f"{v:+.4f}" for v in sim.joint_positions())
                _say(f"t={sim.time:8.3f} s  SYNC {sim.sync_count}  q=[{q}] {unit}  [{states}]")
            if now >= end:
                break
    except KeyboardInterrupt:                             # only if the handler could not be installed
        pass
    finally:
        states = sim.states()
        closed = sim.close()
    p = sim.sync_periods()
    stats = (f"; SYNC period p50 {1e3 * np.percentile(p, 50):.3f} ms, p99 {1e3 * np.percentile(p, 99):.3f} ms, "
             f"max {1e3 * p.max():.3f} ms" if len(p) > 1 else "")
    _say(f"{PROG}: stopped after {sim.sync_count} SYNC ({sim.time:.3f} s simulated, {sim.enabled_time:.3f} s "
         f"enabled), drives at exit: [{states}]{stats}; {'bus closed' if closed else 'the bus did not close cleanly'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
