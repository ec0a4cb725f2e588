"""A joint and frame name prefix on a generated URDF (several robots in one TF tree).

Every ``<link name>`` and ``<joint name>`` gets ``prefix`` in front, and so does every
reference to them: ``<parent link>``, ``<child link>``, ``<mimic joint>``, the joints of a
``<ros2_control>`` block and ``<gazebo reference>``. Done on the XML the xacro produced (the
xacro itself is prefix-free), so the URDF, the SRDF
(:mod:`delta_description.moveit_config`), the joint states (``prefix`` node parameter) and
TF agree.

    >>> urdf = '<robot name="d"><link name="base_link"/><link name="a"/>' \\
    ...        '<joint name="j" type="fixed"><parent link="base_link"/><child link="a"/></joint></robot>'
    >>> print(prefix_urdf(urdf, "r1_"))  # doctest: +NORMALIZE_WHITESPACE
    <robot name="d"><link name="r1_base_link" /><link name="r1_a" /><joint name="r1_j" type="fixed"><parent
    link="r1_base_link" /><child link="r1_a" /></joint></robot>
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from delta_description.xacro_urdf import DescriptionError


def prefix_urdf(urdf: str, prefix: str) -> str:
    """The URDF text with ``prefix`` on every link and joint name (unchanged for '')."""
    if not prefix:
        return urdf
    try:
        root = ET.fromstring(urdf.encode() if isinstance(urdf, str) else urdf)
    except ET.ParseError as e:
        raise DescriptionError(f"URDF is not valid XML: {e}") from None
    for el in root.iter():
        tag = el.tag
        if tag in ("link", "joint") and el.get("name") and (el in list(root) or tag == "joint"):
            el.set("name", prefix + el.get("name"))
        elif tag in ("parent", "child") and el.get("link"):
            el.set("link", prefix + el.get("link"))
        elif tag == "mimic" and el.get("joint"):
            el.set("joint", prefix + el.get("joint"))
        elif tag == "gazebo" and el.get("reference"):
            el.set("reference", prefix + el.get("reference"))
    return ET.tostring(root, encoding="unicode")
