"""CiA 402 state machine tables, drives configs (every error names the file and the field),
unit scaling and the object dictionary (built in = the EDS file in config/drives)."""
import math
from pathlib import Path

import pytest

from delta_core.robot_file import load_robot
from delta_hardware import cia402
from delta_hardware.canopen import object_dictionary as odict
from delta_hardware.cia402 import Command, State
from delta_hardware.canopen.config import (DrivesConfigError, interpolation_period_encoding,
                                           load_drives_config, velocity_unit_factor)
from delta_hardware.drives import DriveState, Mode

ROBOT = load_robot("nt_robot")
DRIVES = Path(__file__).resolve().parent.parent / "config" / "drives"


# ---------------------------------------------------------------------------- CiA 402
@pytest.mark.parametrize("state", list(State))
def test_statusword_round_trip(state):
    sw = cia402.encode_statusword(state, target_reached=True, follows_command=True)
    assert cia402.decode_statusword(sw) is state
    assert sw & cia402.SW_REMOTE and sw & cia402.SW_TARGET_REACHED


def test_statusword_examples():
    assert cia402.decode_statusword(0x0250) is State.SWITCH_ON_DISABLED
    assert cia402.decode_statusword(0x0231) is State.READY_TO_SWITCH_ON
    assert cia402.decode_statusword(0x0233) is State.SWITCHED_ON
    assert cia402.decode_statusword(0x1637) is State.OPERATION_ENABLED
    assert cia402.decode_statusword(0x0217) is State.QUICK_STOP_ACTIVE      # bit 5 low
    assert cia402.decode_statusword(0x0218) is State.FAULT
    assert cia402.to_drive_state(State.SWITCHED_ON) is DriveState.DISABLED
    assert cia402.to_drive_state(State.FAULT_REACTION_ACTIVE) is DriveState.FAULT


@pytest.mark.parametrize("cw, cmd", [(0x0006, Command.SHUTDOWN), (0x000E, Command.SHUTDOWN),
                                     (0x0007, Command.SWITCH_ON), (0x000F, Command.ENABLE_OPERATION),
                                     (0x0000, Command.DISABLE_VOLTAGE), (0x000D, Command.DISABLE_VOLTAGE),
                                     (0x0002, Command.QUICK_STOP), (0x000B, Command.QUICK_STOP),
                                     (0x010F, Command.ENABLE_OPERATION)])
def test_controlword_commands(cw, cmd):
    assert cia402.decode_controlword(cw) is cmd


def test_fault_reset_needs_a_rising_edge():
    assert cia402.decode_controlword(0x0080, previous=0x0000) is Command.FAULT_RESET
    assert cia402.decode_controlword(0x0080, previous=0x0080) is None
    assert cia402.decode_controlword(0x008F, previous=0x0080) is None


def test_transition_table_numbers():
    t = cia402.drive_transition
    assert t(State.SWITCH_ON_DISABLED, Command.SHUTDOWN) == (State.READY_TO_SWITCH_ON, 2)
    assert t(State.SWITCHED_ON, Command.ENABLE_OPERATION) == (State.OPERATION_ENABLED, 4)
    assert t(State.OPERATION_ENABLED, Command.QUICK_STOP) == (State.QUICK_STOP_ACTIVE, 11)
    assert t(State.OPERATION_ENABLED, Command.DISABLE_VOLTAGE) == (State.SWITCH_ON_DISABLED, 9)
    assert t(State.FAULT, Command.FAULT_RESET) == (State.SWITCH_ON_DISABLED, 15)
    assert t(State.FAULT, Command.ENABLE_OPERATION) == (State.FAULT, None)            # fault ignores it
    assert t(State.QUICK_STOP_ACTIVE, Command.ENABLE_OPERATION, 6) == (State.OPERATION_ENABLED, 16)
    assert t(State.QUICK_STOP_ACTIVE, Command.ENABLE_OPERATION, 2) == (State.QUICK_STOP_ACTIVE, None)
    assert t(State.SWITCH_ON_DISABLED, Command.ENABLE_OPERATION) == (State.SWITCH_ON_DISABLED, None)


@pytest.mark.parametrize("start", [State.SWITCH_ON_DISABLED, State.READY_TO_SWITCH_ON, State.SWITCHED_ON,
                                   State.QUICK_STOP_ACTIVE, State.FAULT, State.OPERATION_ENABLED])
@pytest.mark.parametrize("target", [State.OPERATION_ENABLED, State.SWITCH_ON_DISABLED])
def test_the_master_path_reaches_its_target_from_every_state(start, target):
    state, cw, steps = start, 0x0000, 0
    while state is not target:
        cmd = cia402.next_command(state, target)
        assert cmd is not None and steps < 6
        new_cw = cmd.value
        state, _ = cia402.drive_transition(state, cia402.decode_controlword(new_cw, cw))
        cw, steps = new_cw, steps + 1
    assert cia402.next_command(state, target) is None
    if target is State.OPERATION_ENABLED:
        assert steps <= 4


def test_error_texts():
    assert cia402.error_text(0x2310) == "0x2310 (continuous over-current)"
    assert cia402.error_text(0x8611) == "0x8611 (following error)"
    assert cia402.error_text(0x4201) == "0x4201 (temperature error)"
    assert cia402.error_text(0xFF42) == "0xFF42 (device specific error)"


# ---------------------------------------------------------------------------- drives configs
@pytest.mark.parametrize("name", ["generic_cia402", "maxon_epos4", "sim_cia402"])
def test_the_shipped_configs_load(name):
    cfg = load_drives_config(name, ROBOT)
    assert cfg.node_ids == (1, 2, 3) and cfg.mode is Mode.POSITION
    assert all(a.scaling.gear_ratio == 21.0 for a in cfg.axes)
    for node_id in cfg.node_ids:
        cfg.object_dictionary(node_id)
    assert cfg.simulate is (name == "sim_cia402")


def test_maxon_units():
    cfg = load_drives_config("maxon_epos4", ROBOT)
    u = cfg.axes[0]
    assert u.scaling.counts_per_rev == 4096 and u.velocity_unit == "rpm"
    assert cfg.eds is None and not cfg.write_rated_torque
    # 1 rpm of the motor = 2 pi / 60 / 21 rad/s at the arm
    assert u.velocity_to_si(1) == pytest.approx(2 * math.pi / 60 / 21)
    assert u.velocity_to_units(u.velocity_to_si(1234)) == 1234
    assert cfg.max_torque[0] == math.ceil(120 * 1000 / (21 * 0.5))


def _write(tmp_path, text, name="d.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BASE = "base: generic_cia402\n"


@pytest.mark.parametrize("text, field, message", [
    ("node_ids: [1, 1, 2]\n", "node_ids", "3 different node IDs"),
    ("node_ids: [1, 2, 200]\n", "node_ids", "1..127"),
    ("mode: csp\n", "mode", "must be one of position, velocity, torque"),
    ("nodeids: [1, 2, 3]\n", "nodeids", "unknown field (did you mean node_ids?)"),
    ("heartbeat: {producer_ms: 100, timeout_ms: 50}\n", "heartbeat.timeout_ms", "must be >= 100"),
    ("scaling: {counts_per_rev: 0}\n", "scaling.counts_per_rev", "must be >= 1"),
    ("scaling: {velocity_unit: furlongs}\n", "scaling.velocity_unit", "inc/s, rpm"),
    ("axes: [{direction: 2}, {}, {}]\n", "axes[0].direction", "must be 1 or -1"),
    ("axes: [{}, {}]\n", "axes", "3 mappings"),
    ("eds: nowhere.eds\n", "eds", "does not exist"),
    ("objects: {velocity_actual: 0x606C:xx}\n", "objects.velocity_actual", "index like 0x6064"),
    ("objects: {speed: 0x606C}\n", "objects.speed", "unknown object"),
    ("pdo: {position: {rpdo: [[controlword, target_position, velocity_offset]],"
     " tpdo: [[statusword, position_actual, torque_actual], [velocity_actual]]}}\n",
     "pdo.position.rpdo[0]", "80 bits do not fit in one CAN frame"),
    ("pdo: {position: {rpdo: [[controlword, position_actual]], tpdo: [[statusword]]}}\n",
     "pdo.position.rpdo[0]", "position_actual is read-only"),
    ("pdo: {position: {rpdo: [[controlword, torque_offset]],"
     " tpdo: [[statusword, position_actual, torque_actual], [velocity_actual]]}}\n",
     "pdo.position.rpdo", "must map target_position"),
    ("pdo: {position: {rpdo: [[controlword, target_position]], tpdo: [[statusword, position_actual]]}}\n",
     "pdo.position.tpdo", "must map torque_actual"),
    ("scaling: {rated_torque: 0.01}\n", "limits.max_torque", "does not fit a target torque"),
    ("simulation: {position_gains: [1]}\n", "simulation.position_gains", "[kp, kd]"),
    ("heartbeat: {timeout_ms: 300}\n", "heartbeat.timeout_ms",
     "must be at least producer_ms + timing.max_stall = 350 ms (a stall that max_stall tolerates"),
    ("timing: {max_stall: 0}\n", "timing.max_stall", "must be > 0"),
    ("timing: {max_stall: .nan}\n", "timing.max_stall", "must be a number"),
    ("timing: {max_stal: 0.1}\n", "timing.max_stal", "unknown field (did you mean max_stall?)"),
    ("simulation: {sync_timeout: -1}\n", "simulation.sync_timeout", "must be >= 0"),
])
def test_config_errors_name_the_file_and_the_field(tmp_path, text, field, message):
    p = _write(tmp_path, BASE + text)
    with pytest.raises(DrivesConfigError) as e:
        load_drives_config(str(p), ROBOT)
    assert str(e.value).startswith(f"{p}: {field}: "), str(e.value)
    assert message in str(e.value)


def test_timing_from_what_the_drives_need():
    """max_stall per drives config; consumer time auto = 2 producer + max_stall (CiA 301: a
    margin above the producer time, plus the stall the master tolerates)."""
    cfg = load_drives_config("generic_cia402", ROBOT)
    assert cfg.max_stall == 0.25 and cfg.heartbeat_ms == 100
    assert cfg.heartbeat_timeout == pytest.approx(0.450)
    assert cfg.sim["sync_timeout"] == 5.0 > cfg.max_stall
    assert load_drives_config("maxon_epos4", ROBOT).heartbeat_timeout == pytest.approx(0.350)
    cfg = load_drives_config("generic_cia402", ROBOT, {"timing": {"max_stall": 0.1}})
    assert cfg.heartbeat_timeout == pytest.approx(0.300)
    cfg = load_drives_config("generic_cia402", ROBOT, {"heartbeat": {"timeout_ms": 350}})
    assert cfg.heartbeat_timeout == pytest.approx(0.350)                     # the least it may be


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(DrivesConfigError, match="drives config 'no_such_drive'.*not found"):
        load_drives_config("no_such_drive", ROBOT)
    p = _write(tmp_path, "node_ids: [1, 2\n")
    with pytest.raises(DrivesConfigError, match=f"{p}: not valid YAML"):
        load_drives_config(str(p), ROBOT)
    p = _write(tmp_path, "base: other.yaml\n", "a.yaml")
    _write(tmp_path, "base: a.yaml\n", "other.yaml")
    with pytest.raises(DrivesConfigError, match="base: circular"):
        load_drives_config(str(p), ROBOT)


def test_base_and_overrides(tmp_path):
    p = _write(tmp_path, BASE + "node_ids: [4, 5, 6]\nmode: torque\nscaling: {direction: -1}\n")
    cfg = load_drives_config(str(p), ROBOT)
    assert cfg.node_ids == (4, 5, 6) and cfg.mode is Mode.TORQUE
    assert cfg.rpdo == [["controlword", "target_torque"]]
    assert cfg.axes[2].scaling.direction == -1 and cfg.axes[2].scaling.counts_per_rev == 2 ** 17
    assert cfg.eds == DRIVES / "generic_cia402.eds"             # relative to the file naming it
    cfg = load_drives_config(str(p), ROBOT, {"heartbeat": {"timeout_ms": 1000}})
    assert cfg.heartbeat_timeout == 1.0 and cfg.heartbeat_ms == 100


def test_a_relocated_object_must_exist_in_the_eds(tmp_path):
    p = _write(tmp_path, BASE + "objects: {velocity_actual: 0x30D3:01}\n")
    cfg = load_drives_config(str(p), ROBOT)
    with pytest.raises(DrivesConfigError, match="has no velocity_actual at 0x30D3:01"):
        cfg.object_dictionary(1)
    p = _write(tmp_path, BASE + "eds: null\nobjects: {velocity_actual: 0x30D3:01}\n")
    od = load_drives_config(str(p), ROBOT).object_dictionary(1)      # built: the object is added
    assert odict.find(od, 0x30D3, 1) is not None


# ---------------------------------------------------------------------------- units
def test_velocity_units():
    assert velocity_unit_factor("inc/s", 4096) == 1.0
    assert velocity_unit_factor("rpm", 6000) == 100.0
    assert velocity_unit_factor("0.001 rpm", 60000) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        velocity_unit_factor("rad/s", 4096)


@pytest.mark.parametrize("period, enc", [(0.002, (2, -3)), (0.001, (1, -3)), (0.004, (4, -3)),
                                         (0.0025, (25, -4)), (1 / 3000, (33, -5))])
def test_interpolation_period_encoding(period, enc):
    assert interpolation_period_encoding(period) == enc


def test_direction_and_offset_scaling():
    cfg = load_drives_config("generic_cia402", ROBOT, {"axes": [{"direction": -1, "offset": 0.2}, {}, {}]})
    u = cfg.axes[0]
    assert u.position_to_counts(0.2) == 0
    assert u.position_to_counts(0.3) < 0
    assert u.position_to_si(u.position_to_counts(0.45)) == pytest.approx(0.45, abs=u.scaling.rad_per_count)
    assert u.torque_to_si(1000) == pytest.approx(-21 * 2.4)


# ---------------------------------------------------------------------------- object dictionary
def test_the_eds_file_is_the_built_object_dictionary(tmp_path):
    built = odict.build(5, name="generic CiA 402 servo drive")
    eds = odict.load_eds(DRIVES / "generic_cia402.eds", 5)
    assert sorted(built) == sorted(eds)
    for index in built:
        a, b = built[index], eds[index]
        subs_a = [a] if not hasattr(a, "subindices") else [a[s] for s in a]
        subs_b = [b] if not hasattr(b, "subindices") else [b[s] for s in b]
        assert [(v.subindex, v.data_type, v.access_type, v.default, v.pdo_mappable) for v in subs_a] == \
               [(v.subindex, v.data_type, v.access_type, v.default, v.pdo_mappable) for v in subs_b], hex(index)
    assert eds[0x1800][1].default == 0x185 and eds[0x1400][1].default == 0x205     # $NODEID+0x180 / 0x200
    out = tmp_path / "generic_cia402.eds"
    odict.write_eds(out)
    assert out.read_text() == (DRIVES / "generic_cia402.eds").read_text()          # regenerated: no diff


def test_catalogue_describes_every_object():
    for name, spec in odict.CATALOGUE.items():
        assert spec.description and 0x1000 <= spec.index <= 0x6FFF, name
    assert odict.CATALOGUE["controlword"].address == "0x6040:00"
    assert odict.CATALOGUE["device_type"].default & 0xFFFF == 402
