"""The CiA 402 drive state machine ("device control", CiA 402-2 / IEC 61800-7-201 6.3): the
states, the statusword and controlword codings and the transitions, as pure tables and
functions that know no bus.

A CiA 402 drive is steered by its **controlword** (object 0x6040) and reports its state in its
**statusword** (object 0x6041), whatever carries them: CANopen SDO and PDOs, or EtherCAT's CoE
mailbox and process data. The master's stepping along the machine is :mod:`.master`.

States (CiA 402 part 2, figure "state machine of the drive")::

    Start -0-> Not ready to switch on -1-> Switch on disabled <-------------------+
                                           |2 ^7                                   |
                                           v  |            9 (disable voltage)     | 12
                                      Ready to switch on <----+                    |
                                           |3 ^6              |8 (shutdown)        |
                                           v  |               |                    |
                                      Switched on ---4--> Operation enabled --11--> Quick stop active
                                                  <--5---                   <--16--
    any state --13 (fault)--> Fault reaction active --14--> Fault --15 (fault reset)--> Switch on disabled

Only in *operation enabled* does a drive follow its targets; this stack never sends targets to
a drive in any other state.

>>> decode_statusword(0x0237) is State.OPERATION_ENABLED
True
>>> drive_transition(State.QUICK_STOP_ACTIVE, Command.ENABLE_OPERATION, quick_stop_option=6)
(<State.OPERATION_ENABLED: 'operation enabled'>, 16)
"""
from __future__ import annotations

import enum

from delta_hardware.drives.interface import DriveState


class State(enum.Enum):
    """The eight states of the CiA 402 state machine."""
    NOT_READY_TO_SWITCH_ON = "not ready to switch on"
    SWITCH_ON_DISABLED = "switch on disabled"
    READY_TO_SWITCH_ON = "ready to switch on"
    SWITCHED_ON = "switched on"
    OPERATION_ENABLED = "operation enabled"
    QUICK_STOP_ACTIVE = "quick stop active"
    FAULT_REACTION_ACTIVE = "fault reaction active"
    FAULT = "fault"


# ---------------------------------------------------------------------------- statusword 0x6041
SW_READY_TO_SWITCH_ON = 1 << 0       # bit 0
SW_SWITCHED_ON = 1 << 1              # bit 1
SW_OPERATION_ENABLED = 1 << 2        # bit 2
SW_FAULT = 1 << 3                    # bit 3
SW_VOLTAGE_ENABLED = 1 << 4          # bit 4: the power stage has its supply
SW_QUICK_STOP = 1 << 5               # bit 5: 0 = a quick stop is active (note the inverted sense)
SW_SWITCH_ON_DISABLED = 1 << 6       # bit 6
SW_WARNING = 1 << 7                  # bit 7
SW_REMOTE = 1 << 9                   # bit 9: the drive takes its controlword from the bus
SW_TARGET_REACHED = 1 << 10          # bit 10
SW_INTERNAL_LIMIT = 1 << 11          # bit 11: a limit (torque, software position limit) is active
SW_FOLLOWS_COMMAND = 1 << 12         # bit 12 in CSP/CSV/CST: the drive follows the cyclic target
SW_FOLLOWING_ERROR = 1 << 13         # bit 13 in CSP: following error

#: (mask, value): a statusword ``sw`` is in state S when ``sw & mask == value``.
STATUSWORD_PATTERNS = {
    State.NOT_READY_TO_SWITCH_ON: (0x4F, 0x00),
    State.SWITCH_ON_DISABLED: (0x4F, 0x40),
    State.READY_TO_SWITCH_ON: (0x6F, 0x21),
    State.SWITCHED_ON: (0x6F, 0x23),
    State.OPERATION_ENABLED: (0x6F, 0x27),
    State.QUICK_STOP_ACTIVE: (0x6F, 0x07),
    State.FAULT_REACTION_ACTIVE: (0x4F, 0x0F),
    State.FAULT: (0x4F, 0x08),
}


def _decode_bits(sw: int) -> State | None:
    for state, (mask, value) in STATUSWORD_PATTERNS.items():
        if sw & mask == value:
            return state
    return None


#: the state of every value of the statusword's bits 0-6 (the only ones the patterns look at)
_STATE_OF_BITS = tuple(_decode_bits(b) for b in range(0x80))


def decode_statusword(sw: int) -> State | None:
    """The state a statusword reports (None for a pattern CiA 402 does not define): a table
    lookup on bits 0-6, the bits of :data:`STATUSWORD_PATTERNS` (the control loop asks for it
    several times per cycle).

    >>> decode_statusword(0x0637), decode_statusword(0x0250), decode_statusword(0x0F)
    (<State.OPERATION_ENABLED: 'operation enabled'>, <State.SWITCH_ON_DISABLED: 'switch on disabled'>, <State.FAULT_REACTION_ACTIVE: 'fault reaction active'>)
    """
    return _STATE_OF_BITS[sw & 0x7F]


def encode_statusword(state: State, *, voltage: bool = True, remote: bool = True,
                      target_reached: bool = False, internal_limit: bool = False,
                      follows_command: bool = False, following_error: bool = False,
                      warning: bool = False) -> int:
    """The statusword a drive in ``state`` sends, with the optional flag bits."""
    sw = STATUSWORD_PATTERNS[state][1]
    if state in (State.READY_TO_SWITCH_ON, State.SWITCHED_ON, State.OPERATION_ENABLED):
        sw |= SW_QUICK_STOP                     # bit 5 is 1 unless a quick stop is active
    for flag, bit in ((voltage, SW_VOLTAGE_ENABLED), (remote, SW_REMOTE), (warning, SW_WARNING),
                      (target_reached, SW_TARGET_REACHED), (internal_limit, SW_INTERNAL_LIMIT),
                      (follows_command, SW_FOLLOWS_COMMAND), (following_error, SW_FOLLOWING_ERROR)):
        if flag:
            sw |= bit
    return sw


# ---------------------------------------------------------------------------- controlword 0x6040
CW_SWITCH_ON = 1 << 0                # bit 0
CW_ENABLE_VOLTAGE = 1 << 1           # bit 1
CW_QUICK_STOP = 1 << 2               # bit 2: 0 = quick stop (inverted sense)
CW_ENABLE_OPERATION = 1 << 3         # bit 3
CW_FAULT_RESET = 1 << 7              # bit 7: fault reset on its rising edge
CW_HALT = 1 << 8                     # bit 8


class Command(enum.Enum):
    """Device control commands (the meaning of the controlword's low bits)."""
    SHUTDOWN = 0x0006                # -> ready to switch on (transitions 2, 6, 8)
    SWITCH_ON = 0x0007               # -> switched on (3); from operation enabled: disable operation (5)
    ENABLE_OPERATION = 0x000F        # -> operation enabled (4, 16); from ready to switch on: 3 + 4
    DISABLE_VOLTAGE = 0x0000         # -> switch on disabled (7, 9, 10, 12)
    QUICK_STOP = 0x0002              # -> quick stop active (11); elsewhere -> switch on disabled (7, 10)
    FAULT_RESET = 0x0080             # rising edge of bit 7: fault -> switch on disabled (15)


def decode_controlword(cw: int, previous: int = 0) -> Command | None:
    """The command a controlword gives, ``previous`` being the controlword before it (for the
    rising edge of fault reset). None: no command (e.g. bit 7 held high)."""
    if cw & CW_FAULT_RESET:
        return Command.FAULT_RESET if not previous & CW_FAULT_RESET else None
    if cw & 0x02 == 0x00:
        return Command.DISABLE_VOLTAGE           # 0xxx xx0x
    if cw & 0x06 == 0x02:
        return Command.QUICK_STOP                # 0xxx x01x
    if cw & 0x07 == 0x06:
        return Command.SHUTDOWN                  # 0xxx x110
    if cw & 0x0F == 0x07:
        return Command.SWITCH_ON                 # 0xxx 0111
    if cw & 0x0F == 0x0F:
        return Command.ENABLE_OPERATION          # 0xxx 1111
    return None


#: (state, command) -> (next state, CiA 402 transition number), as a drive executes it.
#: Pairs not listed leave the state unchanged.
TRANSITIONS = {
    (State.SWITCH_ON_DISABLED, Command.SHUTDOWN): (State.READY_TO_SWITCH_ON, 2),
    (State.READY_TO_SWITCH_ON, Command.SWITCH_ON): (State.SWITCHED_ON, 3),
    (State.READY_TO_SWITCH_ON, Command.ENABLE_OPERATION): (State.OPERATION_ENABLED, 3),   # 3 then 4
    (State.SWITCHED_ON, Command.ENABLE_OPERATION): (State.OPERATION_ENABLED, 4),
    (State.OPERATION_ENABLED, Command.SWITCH_ON): (State.SWITCHED_ON, 5),
    (State.SWITCHED_ON, Command.SHUTDOWN): (State.READY_TO_SWITCH_ON, 6),
    (State.READY_TO_SWITCH_ON, Command.DISABLE_VOLTAGE): (State.SWITCH_ON_DISABLED, 7),
    (State.READY_TO_SWITCH_ON, Command.QUICK_STOP): (State.SWITCH_ON_DISABLED, 7),
    (State.OPERATION_ENABLED, Command.SHUTDOWN): (State.READY_TO_SWITCH_ON, 8),
    (State.OPERATION_ENABLED, Command.DISABLE_VOLTAGE): (State.SWITCH_ON_DISABLED, 9),
    (State.SWITCHED_ON, Command.DISABLE_VOLTAGE): (State.SWITCH_ON_DISABLED, 10),
    (State.SWITCHED_ON, Command.QUICK_STOP): (State.SWITCH_ON_DISABLED, 10),
    (State.OPERATION_ENABLED, Command.QUICK_STOP): (State.QUICK_STOP_ACTIVE, 11),
    (State.QUICK_STOP_ACTIVE, Command.DISABLE_VOLTAGE): (State.SWITCH_ON_DISABLED, 12),
    (State.QUICK_STOP_ACTIVE, Command.ENABLE_OPERATION): (State.OPERATION_ENABLED, 16),
    (State.FAULT, Command.FAULT_RESET): (State.SWITCH_ON_DISABLED, 15),
}


def drive_transition(state: State, command: Command | None, quick_stop_option: int = 6):
    """What a drive in ``state`` does on ``command``: (next state, transition number or None).

    ``quick_stop_option`` is object 0x605A: with 5..8 the drive stays in quick stop active and
    may go back to operation enabled (16); with 1..4 (and 0) it leaves quick stop active by
    itself once stopped (12, see :func:`quick_stop_completes`) and 16 is not possible.
    """
    if command is None:
        return state, None
    nxt = TRANSITIONS.get((state, command))
    if nxt is None:
        return state, None
    if nxt[1] == 16 and not 5 <= quick_stop_option <= 8:
        return state, None
    return nxt


def quick_stop_completes(quick_stop_option: int) -> bool:
    """True if a drive leaves quick stop active for switch on disabled once stopped (0x605A 0..4)."""
    return not 5 <= quick_stop_option <= 8


def to_drive_state(state: State | None) -> DriveState:
    """The drive interface's coarser state of one axis."""
    if state is State.OPERATION_ENABLED:
        return DriveState.ENABLED
    if state is State.QUICK_STOP_ACTIVE:
        return DriveState.QUICK_STOP
    if state in (State.FAULT, State.FAULT_REACTION_ACTIVE):
        return DriveState.FAULT
    return DriveState.DISABLED


