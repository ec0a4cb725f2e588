"""Drives configs: one YAML file per drive model under ``config/drives/`` (or any path).

A drives config says how to talk to the three servo drives of a Delta robot: their CAN node
IDs, the mode of operation, the PDO mapping per mode, where each object lives (``objects:``),
the unit scaling per axis, heartbeat and timing, limits written at start-up, and the
simulated drive's own loop gains. ``base: <name>`` starts from another config and changes
only what the file gives. Field reference: ``docs/canopen.md``.

Every value is checked; a bad one raises :class:`DrivesConfigError` naming the file and the
field, e.g. ``config/drives/x.yaml: node_ids: must be 3 different node IDs 1..127, got [1, 1, 2]``.
"""
from __future__ import annotations

import difflib
import errno
import functools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from delta_core.paths import PathError, check_readable_file
from delta_core.share import share_file
from delta_core.text_input import TextInputError, read_text
from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.drives.interface import Mode
from delta_hardware.drives.scaling import AxisScaling

DEFAULT_CONFIG = "generic_cia402"
MODES = {"position": Mode.POSITION, "velocity": Mode.VELOCITY, "torque": Mode.TORQUE}


class DrivesConfigError(ValueError):
    """A drives config is missing, unreadable or holds an invalid value."""


# ---------------------------------------------------------------------------- units
_VELOCITY_UNIT = re.compile(r"^\s*(?:(?P<factor>[0-9.eE+-]+)\s*)?(?P<unit>rpm|inc/s)\s*$")


def velocity_unit_factor(unit: str, counts_per_rev: int) -> float:
    """Encoder increments per second in one velocity unit: ``inc/s``, ``rpm`` (motor
    revolutions per minute) or a multiple such as ``0.001 rpm``."""
    m = _VELOCITY_UNIT.match(str(unit))
    if not m:
        raise ValueError(f"must be inc/s, rpm or a multiple like '0.001 rpm', got {unit!r}")
    factor = float(m.group("factor") or 1.0)
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"must have a factor > 0, got {unit!r}")
    return factor * (counts_per_rev / 60.0 if m.group("unit") == "rpm" else 1.0)


@dataclass(frozen=True)
class AxisUnits:
    """The drive's integers <-> SI at the arm, for one axis (:class:`AxisScaling` plus the
    drive's velocity unit)."""
    scaling: AxisScaling
    velocity_unit: str = "inc/s"

    @functools.cached_property
    def counts_per_velocity_unit(self) -> float:
        """Encoder increments per second in one of the drive's velocity units (:func:`velocity_unit_factor`)."""
        return velocity_unit_factor(self.velocity_unit, self.scaling.counts_per_rev)

    def position_to_si(self, counts: int) -> float:
        """The joint position (rad; m on a linear robot) of ``counts`` encoder increments."""
        return self.scaling.position_to_si(counts)

    def position_to_counts(self, q: float) -> int:
        """The joint position ``q`` (rad; m on a linear robot) in encoder increments."""
        return self.scaling.position_to_counts(q)

    def velocity_to_si(self, value: float) -> float:
        """The joint velocity (rad/s; m/s on a linear robot) of ``value`` in the drive's velocity unit."""
        return self.scaling.velocity_to_si(value * self.counts_per_velocity_unit)

    def velocity_to_units(self, qd: float) -> int:
        """The joint velocity ``qd`` (rad/s; m/s on a linear robot) in the drive's velocity unit, rounded."""
        s = self.scaling
        return int(round(s.direction * qd / (s.rad_per_count * self.counts_per_velocity_unit)))

    def torque_to_si(self, permille: float) -> float:
        """The joint torque (N m; N on a linear robot) of ``permille`` of the motor's rated torque."""
        return self.scaling.torque_to_si(permille)

    def torque_to_permille(self, tau: float) -> int:
        """The joint torque ``tau`` (N m; N on a linear robot) in per-mille of the motor's rated torque, rounded."""
        return self.scaling.torque_to_permille(tau)


# ---------------------------------------------------------------------------- the config
@dataclass
class DrivesConfig:
    """A drives config as read and checked (a YAML file under ``config/drives/``; field reference:
    ``docs/canopen.md``). Times in s unless the name says ms."""
    name: str
    source: str
    description: str
    node_ids: tuple
    mode: Mode
    eds: Path | None
    objects: dict                        # relocations: name -> (index, subindex)
    rpdo: list                           # [[object name, ...], ...] for `mode`
    tpdo: list
    axes: list                           # AxisUnits per axis
    heartbeat_ms: int                    # 0x1017 written to every drive
    heartbeat_timeout: float             # s without a heartbeat -> the drive is lost (consumer time)
    max_stall: float                     # s the drives may run on their last targets unanswered
    interpolation_period: float | None   # s (None: 1 / control rate)
    sdo_timeout: float
    startup_timeout: float
    state_timeout: float
    tpdo_timeout: float | None           # s read() waits for this SYNC's TPDOs (None: 0.8 period)
    max_torque: list                     # per-mille per axis (0x6072)
    software_limits: bool
    position_limit_margin: float
    following_error_window: float        # rad at the arm (0: off)
    quick_stop_option_code: int
    write_rated_torque: bool
    check_encoder_resolution: bool
    simulate: bool
    sim: dict = field(default_factory=dict)   # position_gains, velocity_gain, drive_rate, noise
    tpdo_misses: int = 3                 # cycles in a row a drive's TPDOs may be missing (last values held)

    @property
    def catalogue(self):
        """The object catalogue of this drive model: the standard objects with ``objects`` relocations applied."""
        return odict.catalogue(self.objects)

    def object_dictionary(self, node_id: int):
        """The object dictionary of the drive at ``node_id`` (from the EDS file, or built)."""
        if self.eds is not None:
            try:
                od = odict.load_eds(self.eds, node_id)
            except Exception as e:                               # canopen raises several kinds
                raise DrivesConfigError(f"{self.source}: eds: cannot read {self.eds}: {e}") from None
        else:
            od = odict.build(node_id, self.objects, name=self.name)
        used = {n for m in self.rpdo + self.tpdo for n in m} | {"controlword", "statusword", "position_actual",
                                                                 "modes_of_operation", "device_type"}
        try:
            odict.check(od, self.catalogue, sorted(used), f"{self.source} ({self.eds or 'built-in objects'})")
        except ValueError as e:
            raise DrivesConfigError(str(e)) from None
        return od


_TOP = {"name", "description", "base", "eds", "node_ids", "mode", "heartbeat", "interpolation_period",
        "timing", "scaling", "axes", "limits", "quick_stop_option_code", "write_rated_torque",
        "check_encoder_resolution", "objects", "pdo", "simulation", "simulate"}
_SCALING = {"counts_per_rev", "gear_ratio", "rated_torque", "velocity_unit", "direction", "offset"}
_SECTIONS = {
    "heartbeat": {"producer_ms", "timeout_ms"},
    "timing": {"max_stall", "sdo_timeout", "startup_timeout", "state_timeout", "tpdo_timeout", "tpdo_misses"},
    "limits": {"max_torque", "software_position_limits", "position_limit_margin", "following_error_window"},
    "simulation": {"position_gains", "velocity_gain", "drive_rate", "torque_noise", "velocity_noise",
                   "sync_timeout"},
}


class _Reader:
    def __init__(self, source: str):
        self.source = source

    def fail(self, fld: str, msg: str):
        raise DrivesConfigError(f"{self.source}: {fld}: {msg}")

    def keys(self, d, allowed, where):
        if not isinstance(d, dict):
            self.fail(where or "top level", f"must be a mapping, got {d!r}")
        for k in d:
            if k not in allowed:
                near = difflib.get_close_matches(str(k), sorted(allowed), n=1)
                hint = f" (did you mean {near[0]}?)" if near else f"; known: {', '.join(sorted(allowed))}"
                self.fail(f"{where}.{k}" if where else str(k), f"unknown field{hint}")

    def number(self, v, fld, lo=None, hi=None, lo_open=False, integer=False):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(fld, f"must be a {'whole ' if integer else ''}number, got {v!r}")
        if integer and v != int(v):
            self.fail(fld, f"must be a whole number, got {v!r}")
        if lo is not None and (v <= lo if lo_open else v < lo):
            self.fail(fld, f"must be {'>' if lo_open else '>='} {lo}, got {v!r}")
        if hi is not None and v > hi:
            self.fail(fld, f"must be <= {hi}, got {v!r}")
        return int(v) if integer else float(v)


def _deep_merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def resolve_path(source: str | os.PathLike) -> Path:
    """``generic_cia402`` -> ``config/drives/generic_cia402.yaml`` (share files); a path as is."""
    s = str(source) if str(source) else DEFAULT_CONFIG
    if os.sep in s or s.endswith((".yaml", ".yml")):
        return Path(s)
    try:
        return Path(share_file("config", "drives", s + ".yaml"))
    except FileNotFoundError as e:
        raise DrivesConfigError(f"drives config {s!r}: {e}") from None


def _read_yaml(path: Path, chain=()) -> dict:
    if str(path) in chain:
        raise DrivesConfigError(f"{path}: base: circular ({' -> '.join(chain)} -> {path})")
    try:
        text = read_text(path, 1 << 20, "a drives config")     # no open blocks (delta_core.paths)
    except TextInputError as e:
        raise DrivesConfigError(str(e)) from None
    except OSError as e:
        raise DrivesConfigError(f"drives config {path}: cannot read it ({e.strerror or e})") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise DrivesConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise DrivesConfigError(f"{path}: top level: must be a mapping, got {type(data).__name__}")
    eds = data.get("eds")
    if eds and not Path(str(eds)).is_absolute():
        data["eds"] = str(path.parent / str(eds))        # relative to the file that names it
    base = data.pop("base", None)
    if base:
        b = str(base)
        if os.sep in b or b.endswith((".yaml", ".yml")):
            bpath = Path(b) if Path(b).is_absolute() else path.parent / b    # relative to this file
        else:
            bpath = resolve_path(b)                                           # a name in config/drives
        data = _deep_merge(_read_yaml(bpath, (*chain, str(path))), data)
    return data


def parse_object_address(text, r: _Reader, fld: str):
    """``0x6064``, ``0x607D:01`` (the sub-index in hex, as CiA writes it) or an int -> (index, subindex)."""
    if isinstance(text, int) and not isinstance(text, bool):
        index, sub = text, 0
    else:
        m = re.match(r"^\s*(0x[0-9a-fA-F]+|\d+)\s*(?::\s*(0x[0-9a-fA-F]+|\d+))?\s*$", str(text))
        if not m:
            r.fail(fld, f"must be an index like 0x6064 or index:subindex like 0x607D:01, got {text!r}")
        sub = m.group(2) or "0"
        index, sub = int(m.group(1), 0), int(sub, 0 if sub.lower().startswith("0x") else 16)  # sub-index: hex
    if not 0x1000 <= index <= 0xFFFF or not 0 <= sub <= 0xFF:
        r.fail(fld, f"index must be 0x1000..0xFFFF and subindex 0..255, got 0x{index:X}:{sub}")
    return index, sub


def load_drives_config(source: str | os.PathLike = "", robot=None, overrides: dict | None = None) -> DrivesConfig:
    """Load and check a drives config (a name in ``config/drives/`` or a path).

    ``robot`` (RobotParameters) fills ``gear_ratio: robot`` and ``max_torque: robot``;
    ``overrides`` is merged over the file (tests, tools)."""
    path = resolve_path(source)
    data = _read_yaml(path)
    if overrides:
        data = _deep_merge(data, overrides)
    r = _Reader(str(path))
    r.keys(data, _TOP, "")
    for sec, allowed in _SECTIONS.items():
        if sec in data:
            r.keys(data[sec], allowed, sec)

    name = str(data.get("name") or path.stem)
    ids = data.get("node_ids")
    if (not isinstance(ids, list) or len(ids) != 3 or len(set(ids)) != 3
            or not all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= 127 for i in ids)):
        r.fail("node_ids", f"must be 3 different node IDs 1..127 (one per axis, in joint order), got {ids!r}")
    mode_name = data.get("mode", "position")
    if mode_name not in MODES:
        r.fail("mode", f"must be one of {', '.join(MODES)}, got {mode_name!r}")
    mode = MODES[mode_name]

    eds = data.get("eds") or None
    if eds is not None:
        eds = Path(str(eds))
        if not eds.is_absolute():
            eds = path.parent / eds
        try:
            check_readable_file(eds, "an EDS file")             # a FIFO, a device, missing: by name
        except PathError as e:
            missing = e.errno == errno.ENOENT and not os.path.lexists(eds)
            r.fail("eds", f"file {eds} does not exist" if missing else str(e))

    objects = {}
    for obj_name, addr in (data.get("objects") or {}).items():
        if obj_name not in odict.PROCESS_OBJECTS:
            near = difflib.get_close_matches(str(obj_name), odict.PROCESS_OBJECTS, n=1)
            r.fail(f"objects.{obj_name}", "unknown object" + (f" (did you mean {near[0]}?)" if near else
                                                               f"; known: {', '.join(odict.PROCESS_OBJECTS)}"))
        objects[obj_name] = parse_object_address(addr, r, f"objects.{obj_name}")
    cat = odict.catalogue(objects)

    pdo = data.get("pdo") or {}
    if not isinstance(pdo, dict) or mode_name not in pdo:
        r.fail(f"pdo.{mode_name}", f"missing: the PDO mapping for mode {mode_name}")
    maps = {}
    for direction in ("rpdo", "tpdo"):
        fld = f"pdo.{mode_name}.{direction}"
        lst = pdo[mode_name].get(direction) if isinstance(pdo[mode_name], dict) else None
        if not isinstance(lst, list) or not 1 <= len(lst) <= odict.PDO_SLOTS:
            r.fail(fld, f"must be a list of 1..{odict.PDO_SLOTS} PDOs, each a list of object names, got {lst!r}")
        for k, entries in enumerate(lst):
            if not isinstance(entries, list) or not entries:
                r.fail(f"{fld}[{k}]", f"must be a non-empty list of object names, got {entries!r}")
            bits = 0
            for e in entries:
                if e not in cat or e not in odict.PROCESS_OBJECTS:
                    r.fail(f"{fld}[{k}]", f"unknown object {e!r}; known: {', '.join(odict.PROCESS_OBJECTS)}")
                spec = cat[e]
                writable = spec.access in ("rw", "wo")
                if direction == "rpdo" and not writable:
                    r.fail(f"{fld}[{k}]", f"{e} is read-only: it cannot be received by the drive")
                bits += len(odict._variable(e, spec))
            if bits > 64:
                r.fail(f"{fld}[{k}]", f"{bits} bits do not fit in one CAN frame (64 bits): {entries}")
        maps[direction] = [list(e) for e in lst]
    rnames = [n for m in maps["rpdo"] for n in m]
    tnames = [n for m in maps["tpdo"] for n in m]
    need_r = {"controlword", {Mode.POSITION: "target_position", Mode.VELOCITY: "target_velocity",
                              Mode.TORQUE: "target_torque"}[mode]}
    for n in sorted(need_r - set(rnames)):
        r.fail(f"pdo.{mode_name}.rpdo", f"must map {n}")
    for n in ("statusword", "position_actual", "torque_actual"):   # velocity_actual: or from positions
        if n not in tnames:
            r.fail(f"pdo.{mode_name}.tpdo", f"must map {n}")
    for n in set(rnames):
        if rnames.count(n) > 1:
            r.fail(f"pdo.{mode_name}.rpdo", f"maps {n} twice")

    t = data.get("timing") or {}
    max_stall = r.number(t.get("max_stall", 0.25), "timing.max_stall", 0, 10, lo_open=True)
    hb = data.get("heartbeat") or {}
    heartbeat_ms = r.number(hb.get("producer_ms", 100), "heartbeat.producer_ms", 1, 65535, integer=True)
    tm = hb.get("timeout_ms", "auto")
    if tm in ("auto", None):
        timeout_ms = consumer_time_ms(heartbeat_ms, max_stall)
    else:
        timeout_ms = r.number(tm, "heartbeat.timeout_ms", heartbeat_ms, 600000)
        if timeout_ms <= heartbeat_ms:
            r.fail("heartbeat.timeout_ms", f"must be longer than producer_ms ({heartbeat_ms}), got {timeout_ms}")
        least = heartbeat_ms + 1000.0 * max_stall
        if timeout_ms < least:
            r.fail("heartbeat.timeout_ms", f"must be at least producer_ms + timing.max_stall = {least:g} ms "
                                           f"(a stall that max_stall tolerates must not read as a lost "
                                           f"heartbeat), got {timeout_ms:g}")

    ip = data.get("interpolation_period", "auto")
    interp = None if ip in ("auto", None) else r.number(ip, "interpolation_period", 0, 0.255, lo_open=True)

    sdo_timeout = r.number(t.get("sdo_timeout", 0.1), "timing.sdo_timeout", 0, 10, lo_open=True)
    startup_timeout = r.number(t.get("startup_timeout", 0.5), "timing.startup_timeout", 0, 60, lo_open=True)
    state_timeout = r.number(t.get("state_timeout", 0.5), "timing.state_timeout", 0, 60, lo_open=True)
    tt = t.get("tpdo_timeout", "auto")
    tpdo_timeout = None if tt in ("auto", None) else r.number(tt, "timing.tpdo_timeout", 0, 1)
    tpdo_misses = r.number(t.get("tpdo_misses", 3), "timing.tpdo_misses", 0, 1000, integer=True)

    # scaling: defaults for every axis, then per-axis overrides
    base_scaling = data.get("scaling") or {}
    r.keys(base_scaling, _SCALING, "scaling")
    per_axis = data.get("axes") or [{}, {}, {}]
    if not isinstance(per_axis, list) or len(per_axis) != 3:
        r.fail("axes", f"must be a list of 3 mappings (one per axis; {{}} for none), got {per_axis!r}")
    axes = []
    for i, ax in enumerate(per_axis):
        r.keys(ax or {}, _SCALING, f"axes[{i}]")
        s = {**base_scaling, **(ax or {})}
        where = (lambda k: f"axes[{i}].{k}" if k in (ax or {}) else f"scaling.{k}")
        gear = s.get("gear_ratio", "robot")
        if gear == "robot":
            if robot is None:
                r.fail(where("gear_ratio"), "is 'robot' but no robot file was given")
            gear = robot.mass.motor.gear_ratio
        gear = r.number(gear, where("gear_ratio"), 0, lo_open=True)
        cpr = r.number(s.get("counts_per_rev", 2 ** 17), where("counts_per_rev"), 1, 2 ** 31, integer=True)
        rated = r.number(s.get("rated_torque", 1.0), where("rated_torque"), 0, lo_open=True)
        direction = s.get("direction", 1)
        if direction not in (1, -1):
            r.fail(where("direction"), f"must be 1 or -1, got {direction!r}")
        offset = r.number(s.get("offset", 0.0), where("offset"))
        vunit = s.get("velocity_unit", "inc/s")
        try:
            velocity_unit_factor(vunit, cpr)
        except ValueError as e:
            r.fail(where("velocity_unit"), str(e))
        axes.append(AxisUnits(AxisScaling(counts_per_rev=cpr, gear_ratio=gear, rated_torque=rated,
                                          offset=offset, direction=direction), str(vunit)))

    lim = data.get("limits") or {}
    mt = lim.get("max_torque", "robot")
    max_torque = []
    for i in range(3):
        if mt == "robot":
            if robot is None:
                r.fail("limits.max_torque", "is 'robot' but no robot file was given")
            tau = robot.limits.effort[i]                 # N m at the arm, N on a carriage
            pm = int(math.ceil(tau * 1000.0 / (axes[i].scaling.gear_ratio * axes[i].scaling.rated_torque)))
        else:
            v = mt[i] if isinstance(mt, list) and len(mt) == 3 else mt
            pm = r.number(v, "limits.max_torque", 1, 65535, integer=True)
        if pm > 32767:
            r.fail("limits.max_torque", f"axis {i + 1}: {pm} per-mille does not fit a target torque "
                                        f"(INTEGER16); is rated_torque too small?")
        max_torque.append(pm)
    software_limits = bool(lim.get("software_position_limits", True))
    margin = r.number(lim.get("position_limit_margin", 0.05), "limits.position_limit_margin", 0)
    few = r.number(lim.get("following_error_window", 0.0), "limits.following_error_window", 0)

    qso = r.number(data.get("quick_stop_option_code", 6), "quick_stop_option_code", 0, 8, integer=True)
    sim = data.get("simulation") or {}
    gains = sim.get("position_gains", [4000.0, 80.0])
    if not isinstance(gains, list) or len(gains) != 2:
        r.fail("simulation.position_gains", f"must be [kp, kd], got {gains!r}")
    sim_out = {
        "position_gains": (r.number(gains[0], "simulation.position_gains[0]", 0),
                           r.number(gains[1], "simulation.position_gains[1]", 0)),
        "velocity_gain": r.number(sim.get("velocity_gain", 80.0), "simulation.velocity_gain", 0),
        "drive_rate": r.number(sim.get("drive_rate", 1000.0), "simulation.drive_rate", 0, lo_open=True),
        "torque_noise": r.number(sim.get("torque_noise", 0.0), "simulation.torque_noise", 0),
        "velocity_noise": r.number(sim.get("velocity_noise", 0.0), "simulation.velocity_noise", 0),
        "sync_timeout": r.number(sim.get("sync_timeout", 5.0), "simulation.sync_timeout", 0, 600),
    }
    return DrivesConfig(
        name=name, source=str(path), description=str(data.get("description", "")).strip(),
        node_ids=tuple(ids), mode=mode, eds=eds, objects=objects, rpdo=maps["rpdo"], tpdo=maps["tpdo"],
        axes=axes, heartbeat_ms=heartbeat_ms, heartbeat_timeout=timeout_ms / 1000.0, max_stall=max_stall,
        interpolation_period=interp, sdo_timeout=sdo_timeout, startup_timeout=startup_timeout,
        state_timeout=state_timeout, tpdo_timeout=tpdo_timeout, max_torque=max_torque,
        software_limits=software_limits, position_limit_margin=margin, following_error_window=few,
        quick_stop_option_code=qso, write_rated_torque=bool(data.get("write_rated_torque", True)),
        check_encoder_resolution=bool(data.get("check_encoder_resolution", False)),
        simulate=bool(data.get("simulate", False)), sim=sim_out, tpdo_misses=tpdo_misses)


def consumer_time_ms(producer_ms: float, max_stall: float) -> float:
    """The default heartbeat consumer time (ms) for a producer time and the master's ``max_stall`` (s).

    CiA 301 only asks consumer time > producer time; installations use 1.5-3 producer
    periods for the drive's own jitter. A master on a general-purpose host adds its own: a
    stall of up to ``max_stall`` does not stop the robot (beyond it the loop quick-stops), so
    it must not read as a lost heartbeat either. Hence one producer period, plus the longest
    tolerated stall, plus one more producer period of margin::

        T_consumer = 2 T_producer + max_stall

    >>> consumer_time_ms(100, 0.25)
    450.0
    """
    return 2.0 * producer_ms + 1000.0 * max_stall


def interpolation_period_encoding(period: float) -> tuple[int, int]:
    """(value, index) of object 0x60C2 with value * 10**index closest to ``period`` (s),
    value 1..255."""
    best = None
    for index in range(0, -7, -1):              # the coarsest exact one: 2 ms = (2, -3)
        value = int(round(period / 10.0 ** index))
        if 1 <= value <= 255:
            err = abs(value * 10.0 ** index - period)
            if best is None or err < best[0] - 1e-12 * period:
                best = (err, value, index)
    if best is None:
        raise ValueError(f"interpolation period {period} s cannot be written to 0x60C2")
    return best[1], best[2]
