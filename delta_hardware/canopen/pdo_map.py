"""PDO mapping (CiA 301 7.2.2): which objects travel in which CAN frame, written to the drive
over SDO, and the packing of those frames.

The master writes each PDO's communication parameter (0x1400+n RPDO / 0x1800+n TPDO: COB-ID,
transmission type) and mapping parameter (0x1600+n / 0x1A00+n: index, sub-index and bit
length of each mapped object) with ``canopen``'s PDO maps; unused PDOs are invalidated
(COB-ID bit 31). Every used PDO is synchronous (transmission type 1): a TPDO is sent on every
SYNC, an RPDO's data is applied at the next SYNC. COB-IDs are the pre-defined connection set:
RPDOn = 0x200 + 0x100 (n - 1) + node ID, TPDOn = 0x180 + 0x100 (n - 1) + node ID.

The frames themselves are packed and unpacked here (:class:`Pdo`), not by ``canopen``'s PDO
objects, so that one ``struct`` call does a whole frame in the control cycle.
"""
from __future__ import annotations

import struct

import canopen
from canopen.objectdictionary import INTEGER8, INTEGER16, INTEGER32, UNSIGNED8, UNSIGNED16, UNSIGNED32

from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.drives.interface import DriveError

_CODES = {UNSIGNED8: "B", INTEGER8: "b", UNSIGNED16: "H", INTEGER16: "h", UNSIGNED32: "I", INTEGER32: "i"}
SYNCHRONOUS = 1                            # transmission type: every SYNC


def clamp_int(value, code: str) -> int:
    """``value`` saturated to the range of the struct code ``code`` (``h``: INTEGER16, ...).

    >>> clamp_int(40000, "h"), clamp_int(-3, "H"), clamp_int(7.6, "i")
    (32767, 0, 7)
    """
    bits = struct.calcsize(code) * 8
    lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if code.islower() else (0, (1 << bits) - 1))
    return min(max(int(value), lo), hi)


def frame_bits(data_bytes: int) -> float:
    """Bits on the wire of a classic CAN frame (11-bit ID) with ``data_bytes`` data bytes: 47 + 8 n,
    plus about 20 % of stuffing bits.

    >>> frame_bits(0), frame_bits(8)
    (56.4, 133.2)
    """
    return (47 + 8 * data_bytes) * 1.2


def cyclic_bus_load(cfg, rate: float, bitrate: int = 1_000_000) -> float:
    """The share (0..) of a ``bitrate`` CAN bus the cyclic traffic of drives config ``cfg``
    takes at ``rate`` Hz: SYNC, then every RPDO and TPDO of its mapping for each drive."""
    size = {name: struct.calcsize(_CODES[spec.data_type]) for name, spec in cfg.catalogue.items()}
    per_drive = sum(frame_bits(sum(size[n] for n in pdo)) for pdo in [*cfg.rpdo, *cfg.tpdo])
    return (frame_bits(0) + len(cfg.node_ids) * per_drive) * rate / bitrate


class Pdo:
    """One configured PDO of one axis: its COB-ID, the objects in it (by name, in order) and
    their little-endian packing; ``slot`` is n of RPDOn / TPDOn.

    >>> from delta_hardware.canopen.object_dictionary import CATALOGUE as C
    >>> p = Pdo(0x201, ["controlword", "target_torque"], [C["controlword"], C["target_torque"]], 1)
    >>> p.pack({"controlword": 0x0F, "target_torque": -5}).hex()
    '0f00fbff'
    >>> p.unpack(bytes.fromhex("0f00fbff"))
    {'controlword': 15, 'target_torque': -5}
    """
    __slots__ = ("cob_id", "names", "st", "slot", "callback", "_fields")

    def __init__(self, cob_id: int, names, specs, slot: int):
        self.callback = None
        self.cob_id = cob_id
        self.names = tuple(names)
        codes = [_CODES[s.data_type] for s in specs]
        self.st = struct.Struct("<" + "".join(codes))
        self.slot = slot
        self._fields = tuple((n, clamp_int(-(1 << 63), c), clamp_int(1 << 64, c)) for n, c in zip(self.names, codes))

    def pack(self, values: dict) -> bytes:
        """The frame's data from ``values`` (object name -> integer; saturated to each type)."""
        return self.st.pack(*[min(max(int(values[n]), lo), hi) for n, lo, hi in self._fields])

    def unpack(self, data) -> dict:
        """Object name -> value; raises ``struct.error`` for a frame of the wrong length."""
        return dict(zip(self.names, self.st.unpack_from(data)))


def map_pdos(ax, rpdo: list, tpdo: list, network: canopen.Network, where: str = "") -> None:
    """Write the mapping ``rpdo`` / ``tpdo`` (lists of PDOs, each a list of object names) to
    the drive ``ax`` (an :class:`~.axis.Axis`, NMT pre-operational) over SDO, and set
    ``ax.rpdos`` / ``ax.tpdos``. ``canopen``'s own PDO callbacks are removed: the frames are
    decoded by :mod:`.cyclic`. Raises :class:`DriveError` naming the axis and the PDO."""
    ax.rpdos, ax.tpdos = [], []
    for maps, wanted, base, out in ((ax.node.rpdo.map, rpdo, 0x200, ax.rpdos),
                                    (ax.node.tpdo.map, tpdo, 0x180, ax.tpdos)):
        kind = "RPDO" if base == 0x200 else "TPDO"
        if len(wanted) > len(maps):
            raise DriveError(f"{ax.label}: the object dictionary has {len(maps)} {kind}s, "
                             f"{where or 'the drives config'} maps {len(wanted)}")
        for slot, m in maps.items():
            if slot > odict.PDO_SLOTS:
                continue
            m.clear()
            m.cob_id = base + 0x100 * (slot - 1) + ax.node_id
            if slot <= len(wanted):
                for name in wanted[slot - 1]:
                    spec = ax.cat[name]
                    m.add_variable(spec.index, spec.subindex)
                m.trans_type = SYNCHRONOUS
                m.enabled = True
            else:
                m.enabled = False
                m.trans_type = None
            try:
                m.save()
            except (canopen.SdoCommunicationError, canopen.SdoAbortedError) as e:
                raise DriveError(f"{ax.label}: mapping {kind}{slot} failed: {e}") from None
            try:
                network.unsubscribe(m.cob_id, m.on_message)
            except (KeyError, ValueError):
                pass
            if m.enabled:
                names = wanted[slot - 1]
                out.append(Pdo(m.cob_id, names, [ax.cat[n] for n in names], slot))
    ax.derive_velocity = not any("velocity_actual" in p.names for p in ax.tpdos)
