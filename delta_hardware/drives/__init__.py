"""Servo drives for the three arms: the interface (:mod:`.interface`), unit scaling
(:mod:`.scaling`) and the physics-simulated backend (:mod:`.simulated`), the default."""
from delta_hardware.drives.interface import DriveError, DriveSet, DriveState, Feedback, Mode
from delta_hardware.drives.scaling import AxisScaling

__all__ = ["AxisScaling", "DriveError", "DriveSet", "DriveState", "Feedback", "Mode", "make_drives"]


def make_drives(backend: str, robot, **options) -> DriveSet:
    """A drive set by backend name: ``sim`` (default) or ``canopen``."""
    if backend == "sim":
        from delta_hardware.drives.simulated import SimulatedDriveSet
        return SimulatedDriveSet(robot, **options)
    if backend == "canopen":
        try:
            from delta_hardware.canopen.backend import CanopenDriveSet
        except ImportError as e:
            raise DriveError(f"hardware backend 'canopen' is not available: {e}") from None
        return CanopenDriveSet(robot, **options)
    raise DriveError(f"hardware backend must be 'sim' or 'canopen', got {backend!r}")
