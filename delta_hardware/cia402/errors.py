"""CiA 301 / CiA 402 error codes (the EMCY code, object 0x603F), as text.

>>> error_text(0x2310)
'0x2310 (continuous over-current)'
>>> error_text(0x4321)
'0x4321 (temperature error)'
"""
from __future__ import annotations

#: Common error codes (CiA 301 table 21 and CiA 402 annex), the EMCY code and object 0x603F.
ERROR_CODES = {
    0x0000: "no error / error reset",
    0x1000: "generic error",
    0x2300: "current, device output side",
    0x2310: "continuous over-current",
    0x2320: "short circuit / earth leakage",
    0x2330: "earth leakage",
    0x3100: "mains voltage",
    0x3210: "DC link over-voltage",
    0x3220: "DC link under-voltage",
    0x4210: "excess temperature, device",
    0x4310: "excess temperature, drive",
    0x5000: "device hardware",
    0x5530: "data storage (EEPROM)",
    0x6100: "internal software",
    0x6320: "parameter error",
    0x7121: "motor blocked",
    0x7300: "sensor",
    0x7305: "incremental sensor 1 fault",
    0x7500: "communication",
    0x8110: "CAN overrun (objects lost)",
    0x8120: "CAN in error passive mode",
    0x8100: "communication (e.g. SYNC timeout)",
    0x8130: "life guard / heartbeat error",
    0x8140: "recovered from bus off",
    0x8210: "PDO not processed due to length error",
    0x8250: "RPDO timeout",
    0x8400: "velocity speed controller",
    0x8611: "following error",
    0x8612: "reference limit",
    0x9000: "external error",
    0xFF00: "device specific",
}

_CLASSES = [(0x1000, 0xFF00, "generic"), (0x2000, 0xF000, "current"), (0x3000, 0xF000, "voltage"),
            (0x4000, 0xF000, "temperature"), (0x5000, 0xFF00, "device hardware"),
            (0x6000, 0xF000, "device software"), (0x7000, 0xFF00, "additional modules"),
            (0x8000, 0xF000, "monitoring"), (0x9000, 0xFF00, "external"),
            (0xF000, 0xFF00, "additional functions"), (0xFF00, 0xFF00, "device specific")]


def error_text(code: int) -> str:
    """``0x2310 (continuous over-current)``: an error code with its meaning."""
    meaning = ERROR_CODES.get(code)
    if meaning is None:
        meaning = next((f"{name} error" for base, mask, name in _CLASSES if code & mask == base), "unknown error")
    return f"0x{code:04X} ({meaning})"
