"""The ``canopen`` drive bus: its parameter block, and where its drive set is
(:class:`~delta_hardware.canopen.backend.CanopenDriveSet`, imported only when built).
Registered with one line in :mod:`delta_hardware.drives`."""
from __future__ import annotations

from delta_hardware.drives.bus import BusParameter, DriveBus

BUS = DriveBus(
    description="CiA 402 servo drives on a CAN bus (canopen + python-can): SYNC-driven PDO exchange, "
                "heartbeat and EMCY supervision",
    parameters=(
        BusParameter("can_interface", "virtual", "canopen: python-can interface (socketcan, pcan, kvaser, "
                                                 "udp_multicast, virtual, ...)"),
        BusParameter("can_channel", "vcan0", "canopen: channel (udp_multicast: group[:port])"),
        BusParameter("drives_config", "", "canopen: config/drives/<name>.yaml or a path (default generic_cia402)"),
    ),
    drive_set="delta_hardware.canopen.backend:CanopenDriveSet")
