"""Unit conversions between a drive's integers and SI values at the arm.

A drive counts encoder increments on the motor shaft and takes torque in per-mille of the
motor's rated torque (CiA 402 objects 0x6064, 0x606C, 0x6077, 0x6071). With gear ratio n
(motor turns per arm turn), zero offset q0 (rad at the arm) and direction s = +-1::

    q_arm   = s * 2 pi * counts / (counts_per_rev * n) + q0
    qd_arm  = s * 2 pi * counts_per_s / (counts_per_rev * n)
    tau_arm = s * n * rated_torque * permille / 1000
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class AxisScaling:
    """One axis' conversions between the drive's integers and SI at the arm (the equations of the module
    docstring); on a linear robot m, m/s and N, with ``gear_ratio`` = 2 pi / travel per motor revolution."""
    counts_per_rev: int = 2 ** 17      # encoder increments per motor revolution
    gear_ratio: float = 1.0            # motor turns per arm turn
    rated_torque: float = 1.0          # N m at the motor for 1000 per-mille
    offset: float = 0.0                # rad at the arm when the encoder reads 0
    direction: int = 1                 # +1 or -1: motor sense relative to the arm's q

    def __post_init__(self):
        if not self.counts_per_rev > 0:
            raise ValueError(f"counts_per_rev must be > 0, got {self.counts_per_rev}")
        if not self.gear_ratio > 0:
            raise ValueError(f"gear_ratio must be > 0, got {self.gear_ratio}")
        if not self.rated_torque > 0:
            raise ValueError(f"rated_torque must be > 0, got {self.rated_torque}")
        if self.direction not in (1, -1):
            raise ValueError(f"direction must be +1 or -1, got {self.direction}")

    @functools.cached_property
    def rad_per_count(self) -> float:
        """Arm angle of one encoder increment (rad)."""
        return 2.0 * math.pi / (self.counts_per_rev * self.gear_ratio)

    def position_to_si(self, counts: int) -> float:
        """q_arm = s 2 pi counts / (counts_per_rev n) + q0 (rad) of ``counts`` encoder increments."""
        return self.direction * counts * self.rad_per_count + self.offset

    def position_to_counts(self, q: float) -> int:
        """The encoder increments of the arm position ``q`` (rad), rounded (the inverse of :meth:`position_to_si`)."""
        return int(round(self.direction * (q - self.offset) / self.rad_per_count))

    def velocity_to_si(self, counts_per_s: float) -> float:
        """qd_arm = s 2 pi counts_per_s / (counts_per_rev n) (rad/s) of ``counts_per_s`` increments per second."""
        return self.direction * counts_per_s * self.rad_per_count

    def velocity_to_counts(self, qd: float) -> int:
        """The encoder increments per second of the arm velocity ``qd`` (rad/s), rounded."""
        return int(round(self.direction * qd / self.rad_per_count))

    def torque_to_si(self, permille: float) -> float:
        """tau_arm = s n rated_torque permille / 1000 (N m) of ``permille`` of the motor's rated torque."""
        return self.direction * self.gear_ratio * self.rated_torque * permille / 1000.0

    def torque_to_permille(self, tau: float) -> int:
        """The per-mille of the motor's rated torque for the arm torque ``tau`` (N m), rounded."""
        return int(round(self.direction * tau * 1000.0 / (self.gear_ratio * self.rated_torque)))

    def quantize_position(self, q: float) -> float:
        """The arm angle as the encoder reports it (rounded to whole increments)."""
        return self.position_to_si(self.position_to_counts(q))
