"""CiA 402 device control for any bus that carries it (CANopen today, EtherCAT's CoE the
same objects): the state machine and its codings (:mod:`.state_machine`), the master's
confirmed steps along it (:mod:`.master`), the modes of operation (:mod:`.modes`) and the
error codes (:mod:`.errors`). Nothing here knows a bus: a backend passes a drive handle
that reads the statusword and writes the controlword its own way."""
from delta_hardware.cia402.errors import ERROR_CODES, error_text
from delta_hardware.cia402.master import POWER_OFF, disable, drive_to, next_command
from delta_hardware.cia402.modes import MODE_NAMES, SUPPORTED_MODE_BITS
from delta_hardware.cia402.state_machine import (CW_ENABLE_OPERATION, CW_ENABLE_VOLTAGE, CW_FAULT_RESET,
                                                 CW_HALT, CW_QUICK_STOP, CW_SWITCH_ON, STATUSWORD_PATTERNS,
                                                 SW_FAULT, SW_FOLLOWING_ERROR, SW_FOLLOWS_COMMAND,
                                                 SW_INTERNAL_LIMIT, SW_OPERATION_ENABLED, SW_QUICK_STOP,
                                                 SW_READY_TO_SWITCH_ON, SW_REMOTE, SW_SWITCH_ON_DISABLED,
                                                 SW_SWITCHED_ON, SW_TARGET_REACHED, SW_VOLTAGE_ENABLED,
                                                 SW_WARNING, TRANSITIONS, Command, State, decode_controlword,
                                                 decode_statusword, drive_transition, encode_statusword,
                                                 quick_stop_completes, to_drive_state)

__all__ = ["CW_ENABLE_OPERATION", "CW_ENABLE_VOLTAGE", "CW_FAULT_RESET", "CW_HALT", "CW_QUICK_STOP",
           "CW_SWITCH_ON", "Command", "ERROR_CODES", "MODE_NAMES", "POWER_OFF", "STATUSWORD_PATTERNS",
           "SUPPORTED_MODE_BITS", "SW_FAULT", "SW_FOLLOWING_ERROR", "SW_FOLLOWS_COMMAND", "SW_INTERNAL_LIMIT",
           "SW_OPERATION_ENABLED", "SW_QUICK_STOP", "SW_READY_TO_SWITCH_ON", "SW_REMOTE",
           "SW_SWITCH_ON_DISABLED", "SW_SWITCHED_ON", "SW_TARGET_REACHED", "SW_VOLTAGE_ENABLED", "SW_WARNING",
           "State", "TRANSITIONS", "decode_controlword", "decode_statusword", "disable", "drive_to",
           "drive_transition", "encode_statusword", "error_text", "next_command", "quick_stop_completes",
           "to_drive_state"]
