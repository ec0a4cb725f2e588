"""CiA 402 modes of operation (object 0x6060 / 0x6061) the stack drives."""
from __future__ import annotations

MODE_NAMES = {8: "cyclic synchronous position (CSP)", 9: "cyclic synchronous velocity (CSV)",
              10: "cyclic synchronous torque (CST)"}
#: Object 0x6502 "supported drive modes": bit 7 CSP, bit 8 CSV, bit 9 CST.
SUPPORTED_MODE_BITS = {8: 1 << 7, 9: 1 << 8, 10: 1 << 9}


