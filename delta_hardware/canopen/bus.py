"""Opening the python-can bus for the backend and the simulated drives."""
from __future__ import annotations

import re

_IPV4_PORT = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$")


def open_bus(interface: str, channel: str, **kwargs):
    """A python-can bus, ``can.Bus(interface=..., channel=...)``.

    ``udp_multicast``: the frames stay on this host (TTL 0) unless ``hop_limit`` is given, and
    a channel ``<IPv4 group>:<port>`` selects the UDP port (default 43113). Linux delivers a
    group's datagrams to every socket bound to the port, whatever group it joined, so two
    buses that must not hear each other need different ports, not just different groups.
    """
    import can
    if interface == "udp_multicast":
        kwargs.setdefault("hop_limit", 0)
        m = _IPV4_PORT.match(str(channel))
        if m:
            channel = m.group(1)
            kwargs.setdefault("port", int(m.group(2)))
    return can.Bus(interface=interface, channel=channel, **kwargs)
