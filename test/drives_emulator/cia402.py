"""CiA 402 device control as a drive executes it, written for the tests from CiA 402-2
(IEC 61800-7-201, 6.3 "device control"), independently of ``delta_hardware``: nothing here
is imported from the stack, so a misreading of the standard in the stack is not repeated.

States and the statusword (CiA 402-2, table "state coding"; x = don't care)::

    not ready to switch on   xxxx xxxx x0xx 0000
    switch on disabled       xxxx xxxx x1xx 0000
    ready to switch on       xxxx xxxx x01x 0001
    switched on              xxxx xxxx x01x 0011
    operation enabled        xxxx xxxx x01x 0111
    quick stop active        xxxx xxxx x00x 0111
    fault reaction active    xxxx xxxx x0xx 1111
    fault                    xxxx xxxx x0xx 1000

Commands of the controlword (table "device control commands", bits 7 3 2 1 0)::

    shutdown                       0 x 1 1 0   -> 2, 6, 8
    switch on                      0 0 1 1 1   -> 3
    switch on + enable operation   0 1 1 1 1   -> 3 + 4
    disable voltage                0 x x 0 x   -> 7, 9, 10, 12
    quick stop                     0 x 0 1 x   -> 7, 10, 11
    disable operation              0 0 1 1 1   -> 5
    enable operation               0 1 1 1 1   -> 4, 16
    fault reset                    rising edge of bit 7 -> 15

Transition 16 (quick stop active -> operation enabled on *enable operation*) exists only
with quick stop option code (0x605A) 5..8; with 0..4 the drive leaves quick stop active by
itself for switch on disabled once stopped (transition 12, automatic).
"""
from __future__ import annotations

NOT_READY = "not ready to switch on"
SWITCH_ON_DISABLED = "switch on disabled"
READY = "ready to switch on"
SWITCHED_ON = "switched on"
OPERATION_ENABLED = "operation enabled"
QUICK_STOP_ACTIVE = "quick stop active"
FAULT_REACTION_ACTIVE = "fault reaction active"
FAULT = "fault"

#: statusword bits 0-3, 5, 6 of each state (bit 5 "quick stop" is 1 when NO quick stop is active)
_STATUS_BITS = {
    NOT_READY: 0x0000,
    SWITCH_ON_DISABLED: 0x0040,
    READY: 0x0021,
    SWITCHED_ON: 0x0023,
    OPERATION_ENABLED: 0x0027,
    QUICK_STOP_ACTIVE: 0x0007,
    FAULT_REACTION_ACTIVE: 0x000F,
    FAULT: 0x0008,
}
VOLTAGE_ENABLED = 0x0010          # bit 4
WARNING = 0x0080                  # bit 7
REMOTE = 0x0200                   # bit 9
TARGET_REACHED = 0x0400           # bit 10
INTERNAL_LIMIT = 0x0800           # bit 11
FOLLOWS_TARGET = 0x1000           # bit 12 in the cyclic synchronous modes: target ignored = 0
FOLLOWING_ERROR = 0x2000          # bit 13 in CSP


def statusword(state: str, flags: int = 0) -> int:
    """The statusword of a drive in ``state`` with the extra ``flags`` (bits 4, 7, 9-13)."""
    return _STATUS_BITS[state] | REMOTE | flags


def command(cw: int) -> str | None:
    """The device control command of the controlword's bits 0-3 (bit 7 is handled apart)."""
    low = cw & 0x0F
    if not low & 0x02:
        return "disable voltage"               # 0 x x 0 x
    if low & 0x06 == 0x02:
        return "quick stop"                    # 0 x 0 1 x
    if low & 0x07 == 0x06:
        return "shutdown"                      # 0 x 1 1 0
    if low == 0x07:
        return "switch on"                     # 0 0 1 1 1 (disable operation in operation enabled)
    if low == 0x0F:
        return "enable operation"              # 0 1 1 1 1 (switch on + enable operation from ready)
    return None


#: (state, command) -> (next state, transition): the transitions a controlword causes
TRANSITIONS = {
    (SWITCH_ON_DISABLED, "shutdown"): (READY, "2"),
    (READY, "switch on"): (SWITCHED_ON, "3"),
    (READY, "enable operation"): (OPERATION_ENABLED, "3+4"),
    (SWITCHED_ON, "enable operation"): (OPERATION_ENABLED, "4"),
    (OPERATION_ENABLED, "switch on"): (SWITCHED_ON, "5"),
    (SWITCHED_ON, "shutdown"): (READY, "6"),
    (READY, "disable voltage"): (SWITCH_ON_DISABLED, "7"),
    (READY, "quick stop"): (SWITCH_ON_DISABLED, "7"),
    (OPERATION_ENABLED, "shutdown"): (READY, "8"),
    (OPERATION_ENABLED, "disable voltage"): (SWITCH_ON_DISABLED, "9"),
    (SWITCHED_ON, "disable voltage"): (SWITCH_ON_DISABLED, "10"),
    (SWITCHED_ON, "quick stop"): (SWITCH_ON_DISABLED, "10"),
    (OPERATION_ENABLED, "quick stop"): (QUICK_STOP_ACTIVE, "11"),
    (QUICK_STOP_ACTIVE, "disable voltage"): (SWITCH_ON_DISABLED, "12"),
    (QUICK_STOP_ACTIVE, "enable operation"): (OPERATION_ENABLED, "16"),
}


def next_state(state: str, cw: int, previous_cw: int, quick_stop_option: int):
    """(next state, transition or None) of a drive in ``state`` when the controlword changes
    from ``previous_cw`` to ``cw``."""
    if state == FAULT:
        if cw & 0x80 and not previous_cw & 0x80:
            return SWITCH_ON_DISABLED, "15"
        return state, None
    if state in (NOT_READY, FAULT_REACTION_ACTIVE):
        return state, None                     # automatic transitions only (1, 14)
    step = TRANSITIONS.get((state, command(cw)))
    if step is None:
        return state, None
    if step[1] == "16" and not 5 <= quick_stop_option <= 8:
        return state, None
    return step


def stays_in_quick_stop(quick_stop_option: int) -> bool:
    """0x605A 5..8: stop, then stay in quick stop active; 0..4: then switch on disabled."""
    return 5 <= quick_stop_option <= 8
