"""CiA 402 drives emulated from CiA 301 / CiA 402 for the tests, independently of the stack
(:mod:`.emulator`, state machine tables in :mod:`.cia402`)."""
from .emulator import EmulatedDrive, EmulatedDrives, Motor, parse_udp_channel, send_foreign_datagram

__all__ = ["EmulatedDrive", "EmulatedDrives", "Motor", "parse_udp_channel", "send_foreign_datagram"]
