"""The drive interface of the three axes: what the control loop needs from any backend.

Values are SI at the arm (rad, rad/s, N m) in the robot file's joint order. A backend keeps
the CiA 402 meaning of its state (:class:`DriveState`) and refuses commands unless every
axis is in operation enabled.
"""
from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass, field


class DriveError(RuntimeError):
    """A drive refused, faulted or could not be reached; the message names the axis."""


class DriveState(enum.Enum):
    """The combined CiA 402 state of the three axes as the control loop sees it."""
    DISABLED = "disabled"              # CiA 402: switch on disabled / ready / switched on
    ENABLED = "operation_enabled"
    QUICK_STOP = "quick_stop_active"
    FAULT = "fault"


class Mode(enum.Enum):
    """The cyclic synchronous mode of operation; the value is its CiA 402 code (0x6060)."""
    POSITION = 8                       # cyclic synchronous position (CSP)
    VELOCITY = 9                       # cyclic synchronous velocity (CSV)
    TORQUE = 10                        # cyclic synchronous torque (CST)


@dataclass
class Feedback:
    """The latest state of the three axes (rad, rad/s, N m: the torque measured or applied), the combined
    state and the faults (axis index -> reason)."""
    position: tuple                    # rad
    velocity: tuple                    # rad/s
    torque: tuple                      # N m (measured / applied)
    state: DriveState
    faults: dict = field(default_factory=dict)   # axis index -> reason


class DriveSet(ABC):
    """Three servo axes driven together, one cycle at a time.

    A bus builds its drive set from its parameter block with the classmethod
    ``from_parameters(robot, values, rate)`` (:class:`~delta_hardware.drives.bus.DriveBus`).
    """

    mode: Mode = Mode.TORQUE
    #: the drives are simulated (their time is the simulation's): the loop may run them in
    #: simulated time (``use_sim_time``); real drives run on the steady clock
    simulated: bool = False
    #: s the drives may run on their last targets without a control cycle (None: no figure of
    #: their own; the loop's default applies)
    max_stall: float | None = None

    @property
    def summary(self) -> str:
        """A few words on what the drives are (for the node's start-up line)."""
        return ""

    def lockstep(self) -> None:
        """Run in simulated time: every exchange waits for the drives' answers (simulated
        drives only; a no-op where the simulation is in process)."""

    def diagnostics(self) -> dict:
        """Key/value strings for ``/diagnostics`` (the bus, per-axis state, counters)."""
        return {}

    @abstractmethod
    def enable(self) -> None:
        """Bring every axis to operation enabled (raises DriveError naming the axis)."""

    @abstractmethod
    def disable(self) -> None:
        """Disable every axis (brakes hold the arms), confirmed by each drive that answers;
        raises DriveError naming every drive that could not be confirmed. Safe to call at any
        time, from any thread, also after a fault or a quick stop, and more than once."""

    @abstractmethod
    def quick_stop(self, reason: str = "") -> None:
        """Stop every axis now and hold (CiA 402 quick stop)."""

    @abstractmethod
    def reset(self) -> None:
        """Clear faults and quick stop (fault reset); raises DriveError if a cause remains."""

    @abstractmethod
    def read(self) -> Feedback:
        """The latest feedback of the three axes."""

    @abstractmethod
    def write(self, torque=None, position=None, velocity=None) -> None:
        """Set the next cycle's targets (torque: N m; position: rad; velocity: rad/s).

        In torque mode ``torque`` is the target; in position mode ``position`` is the target
        and ``torque`` an additive feedforward. Raises DriveError unless operation enabled.
        """

    @abstractmethod
    def cycle(self, dt: float) -> float:
        """Run one exchange of ``dt`` seconds (advance the simulation, or send SYNC). Returns
        the time (s) the drives advanced: ``dt``, or 0 when the exchange was held back (no SYNC
        went out: a drive still owes the last one's answers); the loop's trajectory time must
        not run ahead of the drives (a jump of the position target)."""

    def close(self) -> None:
        """Disable every drive that answers (as :meth:`disable`, never raising) and release the
        bus / resources. Called on every exit path; safe to call more than once."""

    @property
    @abstractmethod
    def state(self) -> DriveState:
        """The combined state: FAULT if any axis faulted, ENABLED only if all are."""
