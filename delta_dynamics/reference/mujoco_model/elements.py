"""Small writers of MJCF elements shared by :mod:`.mjcf` and the mechanisms of :mod:`.kinds`."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np


def numbers(v) -> str:
    """An MJCF number list: ``numbers((1, 0.5))`` is ``"1.0 0.5"`` (full precision)."""
    return " ".join(repr(float(x)) for x in np.atleast_1d(v))


def yaw_quat(angle: float) -> str:
    """MuJoCo quaternion (w x y z) of a rotation by ``angle`` (rad) about z."""
    return numbers((math.cos(angle / 2.0), 0.0, 0.0, math.sin(angle / 2.0)))


def inertial(parent, mass: float, inertia, pos=(0.0, 0.0, 0.0), quat=None):
    """An ``<inertial>`` under ``parent``: ``mass`` (kg), principal ``inertia`` (kg m^2) at
    ``pos`` in the body frame, principal axes turned by ``quat``."""
    attrs = {"pos": numbers(pos), "mass": repr(float(mass)), "diaginertia": numbers(inertia)}
    if quat is not None:
        attrs["quat"] = quat
    ET.SubElement(parent, "inertial", attrs)


def visual(parent, **attrs):
    """A geom for the eye only: no contact, no mass (``inertiafromgeom`` is off)."""
    ET.SubElement(parent, "geom", {"contype": "0", "conaffinity": "0", "group": "1", **attrs})
