"""Opening the python-can bus for the backend and the simulated drives, with a receive buffer
sized for a master that may stall, and the count of frames the host dropped.

A master on a general-purpose host reads the bus in a Python thread that a busy host can hold
off for tens of milliseconds; meanwhile the frames wait in the socket's receive buffer, and
what does not fit is dropped by the kernel (on ``udp_multicast`` the default buffer of
~200 kB dropped 3 500-124 000 datagrams per run on a loaded host, and each drop looks like a
lost TPDO or heartbeat). :func:`open_bus` asks for :data:`RECEIVE_BUFFER` bytes on the
sockets of ``udp_multicast`` and ``socketcan`` (SO_RCVBUFFORCE where the process may, else
SO_RCVBUF, which Linux caps at ``net.core.rmem_max``); :func:`receive_stats` reports what
was granted and the frames dropped so far.

Each side receives only what is meant for it (:data:`MASTER_RECEIVES`, :data:`DRIVE_RECEIVES`):
on ``udp_multicast`` every member of the group gets every datagram, its own included, and at
1 kHz with three drives the 13 frames of a cycle cost each receive thread a Python dispatch
apiece; the master's own RPDOs and the drives' own TPDOs are dropped
before that dispatch (python-can's ``can_filters``: in the kernel on ``socketcan``, right after
the read elsewhere). On a host-local ``udp_multicast`` bus (``hop_limit`` 0, the default here)
each bus sends from a socket of its own (:class:`LocalUdpMulticastBus`), so a datagram's sender
port tells one's own frames, looped back by the kernel, from the others' and they are dropped
before they are decoded: of the 7 datagrams of a 1 kHz cycle with one PDO each way per drive,
the master decodes the 3 TPDOs, a drive the SYNC and its RPDO.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

import can
from can.interfaces.udp_multicast import UdpMulticastBus
from can.interfaces.udp_multicast.utils import pack_message, unpack_message

from delta_hardware.canopen.channel import split_port

#: bytes of receive buffer asked for (8 MiB: seconds of a saturated 1 Mbit/s bus)
RECEIVE_BUFFER = 8 << 20
#: the frames a CANopen master reads (python-can ``can_filters``): odd function codes (bit 7 of
#: the COB-ID set: EMCY 0x080+n, TPDO1-4 0x180/0x280/0x380/0x480+n, SDO answers 0x580+n, and
#: SYNC 0x080) and heartbeats 0x700+n; not its own RPDOs (0x200-0x5FF even codes), SDO requests or NMT
MASTER_RECEIVES = ({"can_id": 0x080, "can_mask": 0x080}, {"can_id": 0x700, "can_mask": 0x780})
#: the frames a (simulated) drive reads: NMT 0x000, RPDO1-4 0x200/0x300/0x400/0x500+n, SDO
#: requests 0x600+n (even function codes, bit 7 clear; heartbeats 0x700+n pass too) and SYNC
#: 0x080; not the drives' TPDOs, EMCY or SDO answers
DRIVE_RECEIVES = ({"can_id": 0x000, "can_mask": 0x080}, {"can_id": 0x080, "can_mask": 0x7FF})
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)     # Linux; not exported by Python's socket module


def open_bus(interface: str, channel: str, receive_buffer: int = RECEIVE_BUFFER, receives=None, **kwargs):
    """A python-can bus, ``can.Bus(interface=..., channel=...)``.

    ``udp_multicast``: the frames stay on this host (TTL 0) unless ``hop_limit`` is given, and
    a channel ``<IPv4 group>:<port>`` selects the UDP port (default 43113). Linux delivers a
    group's datagrams to every socket bound to the port, whatever group it joined, so two
    buses that must not hear each other need different ports, not just different groups.
    ``udp_multicast`` and ``socketcan``: the socket's receive buffer is set to
    ``receive_buffer`` bytes (0: the system's default). ``receives``: the frames to read
    (:data:`MASTER_RECEIVES`, :data:`DRIVE_RECEIVES`; None: all), unless ``can_filters`` is given.
    """
    if receives is not None:
        kwargs.setdefault("can_filters", [dict(f) for f in receives])
    if interface == "udp_multicast":
        kwargs.setdefault("hop_limit", 0)
        channel, port = split_port(channel)
        if port is not None:
            kwargs.setdefault("port", port)
    if interface == "udp_multicast" and kwargs["hop_limit"] == 0:
        bus = LocalUdpMulticastBus(channel, **kwargs)
    else:
        bus = can.Bus(interface=interface, channel=channel, **kwargs)
    if receive_buffer and interface in ("udp_multicast", "socketcan"):
        try:
            set_receive_buffer(bus.fileno(), receive_buffer)
        except (OSError, NotImplementedError, ValueError):
            pass                                   # reported by receive_stats as what was granted
    return bus


class LocalUdpMulticastBus(UdpMulticastBus):
    """python-can's ``udp_multicast`` bus on one host (``hop_limit`` 0) that sends from a socket
    of its own (an ephemeral port) and drops, unread, the datagrams that came from it: the
    kernel loops a group's datagrams back to every member, the sender's included, and all
    members receive on the group's port, so only the sender port tells them apart. The
    datagrams are python-can's (msgpack), so other ``udp_multicast`` buses on the group, of
    any program, hear this one as before.

    >>> port = 45000 + os.getpid() % 1000                   # a port of this process's own
    >>> a, b = LocalUdpMulticastBus("239.74.163.9", port=port), LocalUdpMulticastBus("239.74.163.9", port=port)
    >>> a.send(can.Message(arbitration_id=0x181, data=b"hi", is_extended_id=False))
    >>> hex(b.recv(1.0).arbitration_id), a.recv(0.2)       # b hears it; a does not hear itself
    ('0x181', None)
    >>> a.shutdown(); b.shutdown()
    """

    def __init__(self, channel: str, port: int = 43113, hop_limit: int = 0, **kwargs):
        super().__init__(channel, port=port, hop_limit=hop_limit, **kwargs)
        group = self._multicast.group
        family = socket.getaddrinfo(group, port, type=socket.SOCK_DGRAM)[0][0]
        tx = socket.socket(family, socket.SOCK_DGRAM)
        try:
            if family == socket.AF_INET:
                tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, hop_limit)
                tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            else:
                tx.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, hop_limit)
                tx.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
            tx.bind(("", 0))
        except OSError as e:
            tx.close()
            self._multicast.shutdown()
            raise can.CanInitializationError(f"cannot open the send socket for {group}:{port}: {e}") from e
        self._tx = tx
        self._tx_port = tx.getsockname()[1]
        self._destination = (group, port)

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        """Send ``msg`` to the group from this bus's own socket (a datagram does not block)."""
        if msg.is_fd and self.protocol is not can.CanProtocol.CAN_FD:
            raise can.CanOperationError("cannot send FD message over bus with CAN FD disabled")
        data = pack_message(msg)
        try:
            if self._tx.sendto(data, self._destination) < len(data):
                raise can.CanOperationError("failed to send via socket: datagram truncated")
        except OSError as e:
            raise can.CanOperationError(f"failed to send via socket: {e}") from e

    def _recv_internal(self, timeout):
        result = self._multicast.recv(timeout)
        if not result or result[1][1] == self._tx_port:
            return None, False                       # none, or our own looped back: BusABC.recv reads on
        data, _, timestamp = result
        try:
            msg = unpack_message(data, replace={"timestamp": timestamp}, check=True)
        except Exception as e:
            raise can.CanOperationError("could not unpack received message") from e
        if msg.is_fd and self.protocol is not can.CanProtocol.CAN_FD:
            return None, False
        return msg, False

    def shutdown(self) -> None:
        """Close the send socket and python-can's receive socket."""
        try:
            self._tx.close()
        finally:
            super().shutdown()


def set_receive_buffer(fd: int, size: int) -> int:
    """Ask for ``size`` bytes of receive buffer on the socket ``fd``; returns the bytes granted
    (Linux reports twice the usable size; this returns the usable size)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, size)     # beyond rmem_max (CAP_NET_ADMIN)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
    finally:
        sock.close()


def receive_stats(bus, interface: str, channel: str) -> dict:
    """``receive_buffer`` (usable bytes, or None) and ``dropped`` (frames the host dropped
    since the socket was opened, or None where not known): for ``udp_multicast`` the drops of
    this socket (``/proc/net/udp``), for ``socketcan`` the interface's receive drops and
    overruns (``/sys/class/net/<channel>/statistics``, every socket of the interface)."""
    out = {"receive_buffer": None, "dropped": None}
    try:
        fd = bus.fileno()
    except (NotImplementedError, AttributeError, ValueError, OSError):
        return out
    if fd is None or fd < 0:
        return out
    try:
        sock = socket.socket(fileno=os.dup(fd))
        try:
            out["receive_buffer"] = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
        finally:
            sock.close()
    except OSError:
        pass
    if interface == "udp_multicast":
        out["dropped"] = _udp_drops(fd)
    elif interface == "socketcan":
        out["dropped"] = _netdev_drops(str(channel))
    return out


def _udp_drops(fd: int) -> int | None:
    """The ``drops`` column of this socket's line in /proc/net/udp (matched by inode)."""
    try:
        inode = str(os.fstat(fd).st_ino)
    except OSError:
        return None
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) >= 13 and cols[9] == inode:
                return int(cols[12])
    return None


def _netdev_drops(ifname: str) -> int | None:
    base = Path("/sys/class/net") / ifname / "statistics"
    total, found = 0, False
    for name in ("rx_dropped", "rx_over_errors", "rx_fifo_errors"):
        try:
            total += int((base / name).read_text())
            found = True
        except (OSError, ValueError):
            pass
    return total if found else None
