"""The object dictionary of a CiA 402 servo drive: the objects this stack uses, what each
means, and how to build a :class:`canopen.ObjectDictionary` from them (or load one from an
EDS file).

Every CANopen device keeps its parameters and process values in an object dictionary,
addressed by a 16-bit index and an 8-bit sub-index. The communication objects (0x1000-0x1FFF)
are defined by CiA 301, the drive objects (0x6000-0x67FF) by the CiA 402 drive profile.
The master reads and writes them one by one with SDO (start-up configuration) and exchanges
the cyclic ones in PDOs (one CAN frame holds up to 8 bytes of mapped objects).

:data:`CATALOGUE` names the drive objects the backend and the simulated drive use; a drives
config may move a named object to another index (a vendor-specific object with the same
meaning and type) under ``objects:``. :func:`build` turns the catalogue into an object
dictionary; :func:`write_eds` writes it as an EDS file (``config/drives/generic_cia402.eds``
is made that way).
"""
from __future__ import annotations

import io
import locale
from dataclasses import dataclass, replace

import canopen
from canopen.objectdictionary import (INTEGER8, INTEGER16, INTEGER32, UNSIGNED8, UNSIGNED16,
                                      UNSIGNED32, VISIBLE_STRING, ODArray, ODRecord, ODVariable,
                                      ObjectDictionary)
from canopen.objectdictionary.eds import export_eds

from delta_core.paths import check_output_file, read_bytes

DEVICE_TYPE_SERVO = 0x00020192           # 0x1000: profile 402 (0x0192), type servo drive (0x0002)
PDO_SLOTS = 4                            # RPDO/TPDO 1..4 (the pre-defined connection set)


@dataclass(frozen=True)
class ObjectSpec:
    """One object (a variable) of the drive: where it is, its type, and what it means."""
    index: int
    subindex: int
    data_type: int
    access: str                          # ro | rw | wo | const
    pdo: bool                            # may be mapped into a PDO
    description: str
    unit: str = ""
    default: int | None = None

    @property
    def address(self) -> str:
        """The object's address as ``0xIIII:SS`` (hexadecimal index and subindex)."""
        return f"0x{self.index:04X}:{self.subindex:02X}"


#: The drive objects by name. "per-mille" is 1/1000 of the motor rated torque (0x6076);
#: "inc" an encoder increment on the motor shaft; velocity units are set by the drives config.
CATALOGUE: dict[str, ObjectSpec] = {
    "device_type": ObjectSpec(0x1000, 0, UNSIGNED32, "ro", False,
                              "device type: low word the device profile (402), high word the type "
                              "(0x0002 servo drive)", default=DEVICE_TYPE_SERVO),
    "error_register": ObjectSpec(0x1001, 0, UNSIGNED8, "ro", True,
                                 "error register: bit 0 generic error, 1 current, 2 voltage, "
                                 "3 temperature, 4 communication", default=0),
    "sync_cob_id": ObjectSpec(0x1005, 0, UNSIGNED32, "rw", False,
                              "COB-ID of the SYNC message the drive listens to", default=0x80),
    "communication_cycle_period": ObjectSpec(0x1006, 0, UNSIGNED32, "rw", False,
                                             "SYNC period the drive expects (0 = not monitored)", "us", 0),
    "producer_heartbeat_time": ObjectSpec(0x1017, 0, UNSIGNED16, "rw", False,
                                          "period of the drive's heartbeat message (0 = off)", "ms", 0),
    "error_code": ObjectSpec(0x603F, 0, UNSIGNED16, "ro", True,
                             "the drive's last error code (the code of its last EMCY message)", default=0),
    "controlword": ObjectSpec(0x6040, 0, UNSIGNED16, "rw", True,
                              "controlword: the master's device control commands "
                              "(shutdown, switch on, enable operation, quick stop, fault reset)", default=0),
    "statusword": ObjectSpec(0x6041, 0, UNSIGNED16, "ro", True,
                             "statusword: the CiA 402 state and flags (target reached, following error, ...)",
                             default=0),
    "quick_stop_option_code": ObjectSpec(0x605A, 0, INTEGER16, "rw", False,
                                         "what quick stop does: 1-4 stop then switch on disabled, "
                                         "5-8 stop and stay in quick stop active", default=6),
    "modes_of_operation": ObjectSpec(0x6060, 0, INTEGER8, "rw", True,
                                     "requested mode: 8 cyclic synchronous position, 9 velocity, 10 torque",
                                     default=0),
    "modes_of_operation_display": ObjectSpec(0x6061, 0, INTEGER8, "ro", True,
                                             "the mode the drive is in", default=0),
    "position_actual": ObjectSpec(0x6064, 0, INTEGER32, "ro", True,
                                  "position actual value (motor encoder)", "inc", 0),
    "following_error_window": ObjectSpec(0x6065, 0, UNSIGNED32, "rw", False,
                                         "CSP: largest target-actual difference before the drive faults "
                                         "(0xFFFFFFFF = off)", "inc", 0xFFFFFFFF),
    "velocity_actual": ObjectSpec(0x606C, 0, INTEGER32, "ro", True,
                                  "velocity actual value", "velocity unit", 0),
    "target_torque": ObjectSpec(0x6071, 0, INTEGER16, "rw", True,
                                "CST: target torque", "per-mille", 0),
    "max_torque": ObjectSpec(0x6072, 0, UNSIGNED16, "rw", False,
                             "largest torque the drive applies, in any mode", "per-mille", 3000),
    "rated_torque": ObjectSpec(0x6076, 0, UNSIGNED32, "rw", False,
                               "motor rated torque: what 1000 per-mille means", "mN m", 1000),
    "torque_actual": ObjectSpec(0x6077, 0, INTEGER16, "ro", True,
                                "torque actual value (the torque the drive applies)", "per-mille", 0),
    "target_position": ObjectSpec(0x607A, 0, INTEGER32, "rw", True,
                                  "CSP: target position", "inc", 0),
    "software_position_limit_min": ObjectSpec(0x607D, 1, INTEGER32, "rw", False,
                                              "software position limit: the drive keeps the target "
                                              "above this", "inc", -0x80000000),
    "software_position_limit_max": ObjectSpec(0x607D, 2, INTEGER32, "rw", False,
                                              "software position limit: the drive keeps the target "
                                              "below this", "inc", 0x7FFFFFFF),
    "encoder_increments": ObjectSpec(0x608F, 1, UNSIGNED32, "rw", False,
                                     "position encoder resolution: increments per `motor_revolutions`",
                                     "inc", 4096),
    "motor_revolutions": ObjectSpec(0x608F, 2, UNSIGNED32, "rw", False,
                                    "position encoder resolution: motor revolutions", "rev", 1),
    "velocity_offset": ObjectSpec(0x60B1, 0, INTEGER32, "rw", True,
                                  "CSP/CSV: velocity feedforward added to the drive's velocity loop",
                                  "velocity unit", 0),
    "torque_offset": ObjectSpec(0x60B2, 0, INTEGER16, "rw", True,
                                "CSP/CSV/CST: torque feedforward added to the drive's torque command",
                                "per-mille", 0),
    "interpolation_period_value": ObjectSpec(0x60C2, 1, UNSIGNED8, "rw", False,
                                             "interpolation time period: value (period = value * "
                                             "10^index s); the drive expects a target this often", "", 1),
    "interpolation_period_index": ObjectSpec(0x60C2, 2, INTEGER8, "rw", False,
                                             "interpolation time period: power of ten of the value", "", -3),
    "target_velocity": ObjectSpec(0x60FF, 0, INTEGER32, "rw", True,
                                  "CSV: target velocity", "velocity unit", 0),
    "supported_drive_modes": ObjectSpec(0x6502, 0, UNSIGNED32, "ro", False,
                                        "supported modes: bit 7 CSP, bit 8 CSV, bit 9 CST",
                                        default=(1 << 7) | (1 << 8) | (1 << 9)),
}

#: Names a drives config may relocate (``objects:``) and map into PDOs.
PROCESS_OBJECTS = ("controlword", "statusword", "target_position", "target_velocity", "target_torque",
                   "velocity_offset", "torque_offset", "position_actual", "velocity_actual",
                   "torque_actual", "error_code", "modes_of_operation_display", "error_register")

_RECORD_NAMES = {0x607D: ("software position limit", "array"),
                 0x608F: ("position encoder resolution", "array"),
                 0x60C2: ("interpolation time period", "record")}


def catalogue(overrides: dict | None = None) -> dict[str, ObjectSpec]:
    """The catalogue with the config's relocations ``{name: (index, subindex)}`` applied."""
    cat = dict(CATALOGUE)
    for name, (index, sub) in (overrides or {}).items():
        cat[name] = replace(cat[name], index=index, subindex=sub)
    return cat


def _variable(name, spec: ObjectSpec, relative_default: str | None = None):
    var = ODVariable(name, spec.index, spec.subindex)
    var.data_type = spec.data_type
    var.access_type = spec.access
    var.pdo_mappable = spec.pdo
    var.description = spec.description
    var.unit = spec.unit
    var.default = spec.default
    if spec.default is not None and spec.default < 0:
        var.default_raw = str(spec.default)          # canopen's EDS export writes negatives as "0x-3"
    if relative_default is not None:                 # a COB-ID that depends on the node ID
        var.default_raw = relative_default
        var.relative = True
    return var


def _u8(name, index, sub, default, access="ro"):
    return _variable(name, ObjectSpec(index, sub, UNSIGNED8, access, False, name, default=default))


def _pdo_objects(od: ObjectDictionary, node_id: int | None):
    nid = node_id or 0
    for k in range(PDO_SLOTS):
        for kind, com, mapping, base in (("RPDO", 0x1400, 0x1600, 0x200), ("TPDO", 0x1800, 0x1A00, 0x180)):
            cob = base + 0x100 * k
            rec = ODRecord(f"{kind}{k + 1} communication parameter", com + k)
            subs = [1, 2, 5] if kind == "RPDO" else [1, 2, 3, 5, 6]
            rec.add_member(_u8("highest sub-index supported", com + k, 0, max(subs)))
            cob_var = _variable("COB-ID", ObjectSpec(com + k, 1, UNSIGNED32, "rw", False,
                                                     f"COB-ID of {kind}{k + 1} (bit 31: not valid)",
                                                     default=cob + nid),
                                relative_default=f"$NODEID+0x{cob:X}")
            rec.add_member(cob_var)
            rec.add_member(_variable("transmission type", ObjectSpec(
                com + k, 2, UNSIGNED8, "rw", False,
                "1-240: synchronous (every n-th SYNC), 254/255: event-driven", default=0xFF)))
            if kind == "TPDO":
                rec.add_member(_variable("inhibit time", ObjectSpec(com + k, 3, UNSIGNED16, "rw", False,
                                                                    "inhibit time", "100 us", 0)))
            rec.add_member(_variable("event timer", ObjectSpec(com + k, 5, UNSIGNED16, "rw", False,
                                                               "event timer", "ms", 0)))
            if kind == "TPDO":
                rec.add_member(_variable("SYNC start value", ObjectSpec(com + k, 6, UNSIGNED8, "rw", False,
                                                                        "SYNC start value", default=0)))
            od.add_object(rec)
            m = ODRecord(f"{kind}{k + 1} mapping parameter", mapping + k)
            m.add_member(_variable("number of mapped objects", ObjectSpec(
                mapping + k, 0, UNSIGNED8, "rw", False, "number of mapped objects", default=0)))
            for s in range(1, 9):
                m.add_member(_variable(f"mapped object {s}", ObjectSpec(
                    mapping + k, s, UNSIGNED32, "rw", False,
                    "index << 16 | sub-index << 8 | length in bits", default=0)))
            od.add_object(m)


def build(node_id: int | None = None, overrides: dict | None = None, name: str = "CiA 402 servo drive",
          vendor: str = "delta_robot") -> ObjectDictionary:
    """An object dictionary with the CiA 301 communication objects (heartbeat, SYNC, identity,
    PDO 1-4 communication and mapping parameters) and every object of the catalogue, the
    config's relocations ``{name: (index, subindex)}`` applied."""
    od = ObjectDictionary()
    od.node_id = node_id
    od.device_information.product_name = name
    od.device_information.vendor_name = vendor
    od.device_information.nr_of_RXPDO = PDO_SLOTS
    od.device_information.nr_of_TXPDO = PDO_SLOTS
    cat = catalogue(overrides)
    compound: dict[int, list] = {}
    for obj_name, spec in cat.items():
        if spec.subindex == 0 and spec.index not in _RECORD_NAMES:
            od.add_object(_variable(obj_name, spec))
        else:
            compound.setdefault(spec.index, []).append((obj_name, spec))
    dev = ODVariable("manufacturer device name", 0x1008)
    dev.data_type, dev.access_type, dev.default = VISIBLE_STRING, "const", name
    od.add_object(dev)
    ident = ODRecord("identity object", 0x1018)
    ident.add_member(_u8("number of entries", 0x1018, 0, 4))
    for s, what in enumerate(("vendor-ID", "product code", "revision number", "serial number"), start=1):
        ident.add_member(_variable(what, ObjectSpec(0x1018, s, UNSIGNED32, "ro", False, what, default=0)))
    od.add_object(ident)
    for index, members in compound.items():
        title, kind = _RECORD_NAMES.get(index, (f"object 0x{index:04X}", "record"))
        rec = ODArray(title, index) if kind == "array" else ODRecord(title, index)
        rec.add_member(_u8("highest sub-index supported", index, 0, max(s.subindex for _, s in members)))
        for obj_name, spec in members:
            rec.add_member(_variable(obj_name, spec))
        od.add_object(rec)
    _pdo_objects(od, node_id)
    return od


def write_eds(path, name: str = "generic CiA 402 servo drive") -> None:
    """Write the catalogue's object dictionary as an EDS file (COB-IDs relative to $NODEID)."""
    od = build(None, name=name)
    buf = io.StringIO()
    info = {"FileName": str(path).rsplit("/", 1)[-1], "FileVersion": 1, "FileRevision": 1,
            "EdsVersion": "4.0", "Description": "CiA 402 servo drive: the objects delta_robot uses",
            "CreationDate": "01-01-2025", "CreationTime": "12:00PM",
            "ModificationDate": "01-01-2025", "ModificationTime": "12:00PM", "CreatedBy": "delta_robot"}
    export_eds(od, buf, file_info=info)
    check_output_file(path, "the EDS file")              # a FIFO or a device: refused, no open blocks
    with open(path, "w", encoding="utf-8") as f:
        f.write(buf.getvalue())


def load_eds(path, node_id: int) -> ObjectDictionary:
    """The object dictionary of an EDS/DCF file, COB-IDs resolved for ``node_id``. The file is
    read through :func:`delta_core.paths.read_bytes` (a FIFO or a device is refused, no open
    blocks; at most 16 MB) and decoded as ``open`` would."""
    data = read_bytes(path, 16 << 20, "an EDS file")
    text = io.StringIO(data.decode(locale.getpreferredencoding(False)))
    text.name = str(path)                                  # canopen tells EDS from EPF by the name
    return canopen.import_od(text, node_id)


def find(od: ObjectDictionary, index: int, subindex: int) -> ODVariable | None:
    """The variable at index:subindex of ``od`` (None if absent)."""
    if index not in od:
        return None
    obj = od[index]
    if isinstance(obj, ODVariable):
        return obj if subindex == 0 else None
    return obj.subindices.get(subindex)


def check(od: ObjectDictionary, cat: dict[str, ObjectSpec], names, where: str) -> None:
    """Raise ValueError naming ``where`` if an object in ``names`` is missing from ``od`` or has
    another size than the catalogue says."""
    for name in names:
        spec = cat[name]
        var = find(od, spec.index, spec.subindex)
        if var is None:
            raise ValueError(f"{where}: the object dictionary has no {name} at {spec.address}")
        if len(var) != len(_variable(name, spec)):
            raise ValueError(f"{where}: {name} at {spec.address} is {len(var)} bits in the object "
                             f"dictionary, expected {len(_variable(name, spec))}")
