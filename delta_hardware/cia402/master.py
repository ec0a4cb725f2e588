"""The master's side of CiA 402 device control, for any bus: steps along the state machine
(:mod:`.state_machine`) confirmed by the drive, one controlword at a time.

The functions work on a *drive handle*, anything with ``read_state()`` (the statusword read
back from the drive, confirmed: CANopen SDO upload, EtherCAT CoE upload), ``write_controlword
(value)`` (a confirmed write), ``error_text()``, ``values`` (with ``"statusword"``) and
``label`` (names the axis in errors): :class:`delta_hardware.canopen.axis.Axis` is one.
"""
from __future__ import annotations

import time

from delta_hardware.cia402.state_machine import Command, State
from delta_hardware.drives.interface import DriveError


#: The next command on the way from a state towards operation enabled (the master's path).
_PATH_TO_ENABLED = {
    State.SWITCH_ON_DISABLED: Command.SHUTDOWN,
    State.READY_TO_SWITCH_ON: Command.SWITCH_ON,
    State.SWITCHED_ON: Command.ENABLE_OPERATION,
    State.QUICK_STOP_ACTIVE: Command.DISABLE_VOLTAGE,   # back through switch on disabled, not 16
    State.FAULT: Command.FAULT_RESET,
}


def next_command(current: State | None, target: State) -> Command | None:
    """The command the master sends to move a drive from ``current`` one step towards
    ``target`` (operation enabled or switch on disabled); None if there is nothing to send
    (already there, or an automatic transition to wait for)."""
    if current is None or current is target:
        return None
    if current in (State.NOT_READY_TO_SWITCH_ON, State.FAULT_REACTION_ACTIVE):
        return None                                       # automatic transitions 1 and 14
    if target is State.OPERATION_ENABLED:
        return _PATH_TO_ENABLED.get(current)
    if target is State.SWITCH_ON_DISABLED:
        return Command.FAULT_RESET if current is State.FAULT else Command.DISABLE_VOLTAGE
    raise ValueError(f"next_command: target must be operation enabled or switch on disabled, got {target}")


def drive_to(axis, target: State, timeout: float) -> None:
    """Step the drive ``axis`` to ``target`` (operation enabled or switch on disabled).

    ``axis`` is a :class:`~delta_hardware.canopen.axis.Axis` (anything with ``read_state()``,
    ``write_controlword(value)``, ``error_text()``, ``values`` and ``label``). Each step
    writes the controlword of :func:`next_command` and reads the statusword back, so every
    transition is confirmed by the drive; a fault reset is a rising edge of bit 7 (0x0000,
    then 0x0080). Raises :class:`DriveError` naming the axis, the state it stays in and its
    statusword if ``target`` is not reached within ``timeout`` s, and at once for a drive in
    fault on the way to operation enabled (it needs a reset first).
    """
    deadline = time.monotonic() + timeout
    while True:
        st = axis.read_state()
        if st is target:
            return
        if st in (State.FAULT, State.FAULT_REACTION_ACTIVE) and target is State.OPERATION_ENABLED:
            raise DriveError(f"{axis.label} is in fault ({axis.error_text()}): reset first")
        if time.monotonic() > deadline:
            sw = axis.values["statusword"]
            more = f", {axis.error_text()}" if st is State.FAULT else ""
            raise DriveError(f"{axis.label} stays in {st.value if st else 'an undefined state'} "
                             f"(statusword 0x{sw:04X}{more}) after {timeout:.2f} s on the way to {target.value}")
        cmd = next_command(st, target)
        if cmd is Command.FAULT_RESET:
            axis.write_controlword(0x0000)                 # bit 7 low first: a rising edge
            axis.write_controlword(Command.FAULT_RESET.value)
            time.sleep(0.01)
        elif cmd is not None:
            axis.write_controlword(cmd.value)
        else:
            time.sleep(0.002)                               # an automatic transition




#: States whose power stage is off: nothing left to disable (a fault is not reset on the way out)
POWER_OFF = (State.SWITCH_ON_DISABLED, State.NOT_READY_TO_SWITCH_ON, State.FAULT)


def disable(axis, timeout: float) -> State:
    """Disable voltage (controlword 0x0000: transitions 7, 9, 10, 12), confirmed by the drive.

    Writes disable voltage (whatever the state), then reads the state back, writing it again,
    until the drive reports a state of :data:`POWER_OFF` (a fault reaction in progress is
    waited for); returns that state.
    Raises :class:`DriveError` naming the axis if it does not answer (the handle's error) or
    still reports a powered state after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    axis.write_controlword(Command.DISABLE_VOLTAGE.value)     # given in any state (a no-op where it is off)
    while True:
        st = axis.read_state()
        if st in POWER_OFF:
            return st
        if time.monotonic() > deadline:
            raise DriveError(f"{axis.label} stays in {st.value if st else 'an undefined state'} "
                             f"(statusword 0x{axis.values['statusword']:04X}) after disable voltage "
                             f"for {timeout:.2f} s: its power stage may be on")
        if st is not State.FAULT_REACTION_ACTIVE:
            axis.write_controlword(Command.DISABLE_VOLTAGE.value)
        else:
            time.sleep(0.002)                                 # transition 14 comes by itself
