"""The channel of a CAN bus: checks and the ``<IPv4 group>:<port>`` form of a ``udp_multicast``
channel. Standard library only (``delta-drive-sim`` checks its arguments before it imports
python-can)."""
from __future__ import annotations

import ipaddress
import re

#: ``<IPv4 address>:<port>``
IPV4_PORT = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$")


def split_port(channel: str) -> tuple:
    """``(address, port)`` of a ``<IPv4 address>:<port>`` channel, ``(channel, None)`` otherwise.

    >>> split_port("239.74.163.2:43200"), split_port("can0")
    (('239.74.163.2', 43200), ('can0', None))
    """
    m = IPV4_PORT.match(str(channel))
    return (m.group(1), int(m.group(2))) if m else (channel, None)


def check_channel(interface: str, channel: str) -> str:
    """'' if ``channel`` suits ``interface``, else what is wrong (udp_multicast: a multicast
    group, optionally ``:port``; every interface: not empty).

    >>> check_channel("udp_multicast", "239.74.163.2:43200"), check_channel("socketcan", "can0")
    ('', '')
    >>> check_channel("udp_multicast", "10.0.0.1")
    "must be a multicast group (224.0.0.0/4 or ff00::/8), optionally with :port, got '10.0.0.1'"
    """
    if not channel.strip():
        return "must not be empty"
    if interface == "udp_multicast":
        group, port = split_port(channel)
        port = 1 if port is None else port
        try:
            ok = ipaddress.ip_address(group).is_multicast and 1 <= port <= 65535
        except ValueError:
            ok = False
        if not ok:
            return f"must be a multicast group (224.0.0.0/4 or ff00::/8), optionally with :port, got {channel!r}"
    return ""
