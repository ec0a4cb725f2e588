"""Servo drives for the three arms: the interface (:mod:`.interface`), unit scaling
(:mod:`.scaling`), the shape of a bus plug-in (:mod:`.bus`) and the drive buses,
:data:`BUSES`: ``sim`` (the physics-simulated drives of :mod:`.simulated`, the default; also
``mock``) and ``canopen`` (CiA 402 drives on a CAN bus, :mod:`delta_hardware.canopen`).

A caller names a bus and passes the parameter values it has; it never imports a bus:

>>> sorted(BUSES.names())
['canopen', 'mock', 'sim']
>>> [p.name for p in BUSES.get("canopen").parameters]
['can_interface', 'can_channel', 'drives_config']
"""
from delta_core.plugins import PluginError, Registry
from delta_hardware.drives.bus import BusParameter, DriveBus
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode
from delta_hardware.drives.scaling import AxisScaling

__all__ = ["AxisScaling", "BUSES", "BusParameter", "DriveBus", "DriveError", "DriveSet", "DriveState",
           "Feedback", "Mode", "bus_parameters", "get_bus", "make_drives"]

#: The drive buses, by name: one line each (third parties: entry-point group ``delta_robot.drive_bus``)
BUSES = Registry("drive bus", "delta_robot.drive_bus")
BUSES.register("sim", "delta_hardware.drives.simulated:BUS", description="simulated drives on the robot's physics")
BUSES.register("mock", "delta_hardware.drives.simulated:BUS", description="the same as sim")
BUSES.register("canopen", "delta_hardware.canopen.plugin:BUS", description="CiA 402 drives on a CAN bus")


def get_bus(name: str) -> DriveBus:
    """The bus ``name`` (raises :class:`DriveError` naming the known ones)."""
    try:
        return BUSES.get(name)
    except PluginError as e:
        raise DriveError(str(e)) from None


def bus_parameters() -> dict:
    """Every registered bus's parameters, name -> :class:`BusParameter` (a bus that cannot be
    loaded contributes none)."""
    out = {}
    for name in BUSES.names():
        try:
            b = BUSES.get(name)
        except PluginError:
            continue
        for p in b.parameters:
            out.setdefault(p.name, p)
    return out


def make_drives(name: str, robot, params: dict | None = None, rate: float = 500.0) -> DriveSet:
    """The drive set of the bus ``name`` for the loaded robot file ``robot``, built from the
    bus's own parameters taken from ``params`` (a dict that may hold any other names too;
    missing ones take their defaults) at the control rate ``rate`` (Hz).

    >>> from delta_core.robot_file import load_robot
    >>> make_drives("sim", load_robot("nt_robot"), {"sim_torque_noise": 0.0}).state.value
    'disabled'
    """
    return get_bus(name).build(robot, params or {}, rate)
