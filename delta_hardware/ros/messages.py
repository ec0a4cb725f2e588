"""Conversions between ROS messages and plain values, shared by the stack's nodes."""
from __future__ import annotations

import math

from builtin_interfaces.msg import Duration, Time


def to_sec(stamp) -> float:
    """builtin_interfaces Time or Duration -> float seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


def to_time(t: float) -> Time:
    """float seconds -> builtin_interfaces Time (nanoseconds rounded, at most 999999999)."""
    sec = math.floor(t)
    return Time(sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def to_duration(t: float) -> Duration:
    """float seconds -> builtin_interfaces Duration (nanoseconds rounded, at most 999999999)."""
    sec = math.floor(t)
    return Duration(sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def pick(values, order, what: str, names) -> list | None:
    """Reorder a message array by ``order``; None if empty; ValueError if its length is wrong."""
    if len(values) == 0:
        return None
    if len(values) != len(names):
        raise ValueError(f"{what} has {len(values)} values for {len(names)} joint names")
    return [float(values[k]) for k in order]
