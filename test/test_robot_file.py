"""Robot file loading: presets, paths, round trip, and a clear error for every bad value."""
import copy
from pathlib import Path

import pytest
import yaml

from delta_core.robot_file import (RobotFileError, list_presets, load_robot, parse_robot,
                                          save_robot)
from delta_dynamics.rotary.model import RotaryModel

REPO = Path(__file__).resolve().parents[1]


def preset_dict(name="nt_robot"):
    return yaml.safe_load((REPO / "config" / "robots" / f"{name}.yaml").read_text())


def refused(tmp_path, d, path, value, message):
    """``d`` with ``value`` at the dotted ``path``, written to a file, is refused by name:
    "<file>: <message>"."""
    node = d
    *parents, leaf = path.split(".")
    for p in parents:
        node = node[p]
    node[leaf] = value
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match=f"^{str(f)}: {message}"):
        load_robot(f)


def test_presets_load_by_name_and_by_path():
    assert {"nt_robot", "d3s800"} <= set(list_presets())
    a = load_robot("nt_robot")
    b = load_robot(REPO / "config" / "robots" / "nt_robot.yaml")
    assert a.name == b.name == "nt_robot"
    assert a.geometry == b.geometry and a.mass == b.mass
    assert a.mass.motor.reflected_inertia == pytest.approx(21 ** 2 * 2.25e-4)
    assert load_robot("d3s800").geometry.forearm_length == 0.96


def test_save_and_reload_round_trip(tmp_path):
    r = load_robot("d3s800")
    out = save_robot(r.replace(metadata={"method": "ols"}), tmp_path / "x.yaml", header="identified")
    back = load_robot(out)
    assert back.geometry == r.geometry and back.mass == r.mass and back.friction == r.friction
    assert back.metadata == {"method": "ols"}
    assert out.read_text().startswith("# identified")


def test_save_never_writes_an_invalid_file_and_keeps_the_old_one(tmp_path):
    target = tmp_path / "robot.yaml"
    target.write_text("old content\n")
    r = load_robot("nt_robot")
    bad = r.replace(geometry=r.geometry.__class__(**{**r.geometry.__dict__, "forearm_length": -1.0}))
    with pytest.raises(RobotFileError, match="forearm_length must be > 0"):
        save_robot(bad, target)
    assert target.read_text() == "old content\n"
    assert list(tmp_path.iterdir()) == [target]


@pytest.mark.parametrize("path, value, message", [
    ("geometry.forearm_length", -0.3, "geometry.forearm_length must be > 0, got -0.3"),
    ("geometry.base_radius", "wide", "geometry.base_radius must be a number, got 'wide'"),
    ("geometry.upper_arm_length", float("nan"), "geometry.upper_arm_length must be finite"),
    ("geometry.chain_angles_deg", [0, 10, 20], "geometry.chain_angles_deg must spread the chains"),
    ("geometry.chain_angles_deg", [0, 120], r"geometry.chain_angles_deg must be a list of 3 numbers"),
    ("mass_properties.upper_arm.mass", -1, "mass_properties.upper_arm.mass must be >= 0, got -1"),
    ("mass_properties.upper_arm.com_distance", 0.5, "mass_properties.upper_arm.com_distance must be <= geometry.upper_arm_length"),
    ("mass_properties.forearm.com_ratio", 1.0, "mass_properties.forearm.com_ratio must be < 1, got 1"),
    ("mass_properties.forearm.inertia", 1.0, "mass_properties.forearm.inertia must be <= mass"),
    ("mass_properties.motor.gear_ratio", 0, "mass_properties.motor.gear_ratio must be > 0, got 0"),
    ("friction.viscous", [1, -1, 1], r"friction.viscous\[1\] must be >= 0, got -1"),
    ("limits.position", [[0, 1], [1, 0], [0, 1]], r"limits.position\[1\] must have lo < hi"),
    ("limits.position", [[0, 1]], r"limits.position must be 3 pairs"),
    ("limits.velocity", [1, 1, 0], r"limits.velocity\[2\] must be > 0, got 0"),
    ("joint_names", ["a", "a", "b"], "joint_names must be 3 different names"),
    ("joint_names", "arm", "joint_names must be a list of 3 non-empty names"),
    # a rotary file declared linear (or prismatic, the old name): its fields are not a linear Delta's
    ("type", "linear", r"geometry.base_radius is not a known field \(known here: rail_radius, "),
    ("type", "prismatic", r"geometry.base_radius is not a known field \(known here: rail_radius, "),
    ("type", "cable", r"type must be one of rotary, linear \(or prismatic \(the old name of linear\)\), got 'cable'"),
    ("gravity", -9.8, "gravity must be >= 0, got -9.8"),
])
def test_each_bad_value_is_named_with_file_field_and_rule(tmp_path, path, value, message):
    refused(tmp_path, preset_dict(), path, value, message)


def test_a_forearm_that_cannot_reach_the_platform_is_refused(tmp_path):
    d = preset_dict()
    d["geometry"]["forearm_length"] = 0.1
    d["mass_properties"]["forearm"]["inertia"] = 0.0
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match=r"x.yaml: geometry.forearm_length is too short for the "
                                             r"forearm to reach the platform: needs > 0.1[0-9]* m"):
        load_robot(f)


def test_a_misspelt_field_is_refused_not_defaulted(tmp_path):
    d = preset_dict()
    d["mass_properties"]["payload"] = {"mas": 1.0}
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match=r"x.yaml: mass_properties.payload.mas is not a known field "
                                             r"\(known here: mass\)"):
        load_robot(f)
    d = preset_dict()
    d["geometry"]["forearm_lenght"] = 0.8
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match="geometry.forearm_lenght is not a known field"):
        load_robot(f)
    d = preset_dict()
    d["metadata"] = {"anything": {"goes": [1, 2]}}              # free-form
    f.write_text(yaml.safe_dump(d))
    assert load_robot(f).metadata == {"anything": {"goes": [1, 2]}}


def test_missing_field_is_named(tmp_path):
    d = preset_dict()
    del d["mass_properties"]["platform"]
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match=r"x.yaml: mass_properties.platform.mass is missing"):
        load_robot(f)


def test_unreadable_inputs(tmp_path):
    with pytest.raises(RobotFileError, match="no such preset"):
        load_robot("no_such_robot")
    with pytest.raises(RobotFileError, match="robot file not found"):
        load_robot(tmp_path / "absent.yaml")
    f = tmp_path / "broken.yaml"
    f.write_text("name: [unclosed\n")
    with pytest.raises(RobotFileError, match="broken.yaml: not valid YAML"):
        load_robot(f)
    f.write_text("- just\n- a list\n")
    with pytest.raises(RobotFileError, match="must be a mapping of fields"):
        load_robot(f)
    with pytest.raises(RobotFileError, match="empty name"):
        load_robot("")


def test_the_model_uses_the_robot_file_values():
    r = load_robot("nt_robot")
    m = RotaryModel.from_robot(r)
    assert m.l == r.geometry.upper_arm_length and m.lk == r.geometry.forearm_length
    d = copy.deepcopy(r.to_dict())
    d["mass_properties"]["payload"]["mass"] = 1.5
    heavier = RotaryModel(parse_robot(d))
    assert heavier.m_x == pytest.approx(m.m_x + 1.5)
