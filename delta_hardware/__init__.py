"""Hardware side: drive interfaces (CANopen) and the hardware node."""
