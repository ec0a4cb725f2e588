"""Robot files of linear Delta robots: the presets, the round trip through
save_robot, and one clear error (file, field, rule, value) for every kind of bad value,
including the geometric feasibility rules."""
import copy
import math

import pytest
import yaml

from delta_core.robot_file import (LinearGeometry, LinearLimits, RobotFileError, RobotParameters, list_presets,
                                   load_robot, save_robot)
from test_robot_file import refused


def preset_dict(name="colombo2020"):
    return copy.deepcopy(load_robot(name).to_dict())


def write(tmp_path, d, name="x.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump(d))
    return f


@pytest.mark.parametrize("name", ["colombo2020", "linear_delta_xl"])
def test_presets_load_and_round_trip(tmp_path, name):
    assert name in list_presets()
    r = load_robot(name)
    assert isinstance(r, RobotParameters) and isinstance(r.geometry, LinearGeometry)
    assert r.type == "linear"
    out = save_robot(r, tmp_path / f"{name}.yaml", header="copy")
    r2 = load_robot(out)
    assert r2.replace(source=r.source) == r
    assert out.read_text().startswith("# copy\n")


def test_the_paper_preset_holds_the_papers_masses():
    r = load_robot("colombo2020")
    m = r.mass
    assert (m.rod.mass, m.platform_mass, m.carriage.mass) == (0.02, 0.5, 0.25)
    g = r.geometry
    assert (g.rod_length, g.rail_radius, g.platform_radius, g.rod_spacing, g.tool_offset) == \
        (0.215, 0.1256, 0.0199, 0.04, 0.05)
    # a uniform 6/4 mm tube
    assert m.rod.inertia == pytest.approx(0.02 * (3 * (0.003 ** 2 + 0.002 ** 2) + 0.215 ** 2) / 12, rel=1e-4)
    assert round((6 * m.rod.mass + m.platform_mass + 3 * m.carriage.mass) * r.gravity, 2) == 13.44


def test_drive_and_limits_speak_the_rotary_robots_language():
    """``mass.motor.gear_ratio`` (motor rad per joint unit) and ``limits.effort`` work for both
    kinds, so the drivers need not ask which robot they drive."""
    r = load_robot("linear_delta_xl")
    d = r.mass.motor
    assert d.gear_ratio == pytest.approx(2 * math.pi / 0.15)
    assert d.reflected_inertia == pytest.approx(1.74e-4 * (2 * math.pi / 0.15) ** 2)
    assert d.torque_constant * d.gear_ratio == pytest.approx(0.636 * 2 * math.pi / 0.15)   # N per A
    assert isinstance(r.limits, LinearLimits) and r.limits.effort == r.limits.force == (400.0,) * 3
    rot = load_robot("nt_robot")
    assert rot.limits.effort == rot.limits.torque


@pytest.mark.parametrize("path, value, message", [
    ("geometry.rod_length", -0.2, "geometry.rod_length must be > 0, got -0.2"),
    ("geometry.rail_radius", "wide", "geometry.rail_radius must be a number, got 'wide'"),
    ("geometry.platform_radius", float("nan"), "geometry.platform_radius must be finite"),
    ("geometry.rod_spacing", -0.01, "geometry.rod_spacing must be >= 0, got -0.01"),
    ("geometry.rail_angles_deg", [0, 10, 20], "geometry.rail_angles_deg must spread the rails"),
    ("geometry.rail_angles_deg", [0, 120], r"geometry.rail_angles_deg must be a list of 3 numbers"),
    ("geometry.tool_offset", "down", "geometry.tool_offset must be a number, got 'down'"),
    ("mass_properties.carriage.mass", -1, "mass_properties.carriage.mass must be >= 0, got -1"),
    ("mass_properties.rod.mass", -0.1, "mass_properties.rod.mass must be >= 0, got -0.1"),
    ("mass_properties.rod.inertia", 0.01, r"mass_properties.rod.inertia must be <= mass \* rod_length\^2 / 4 "
                                          r"= 0.000231125 \(all the mass at the two joints"),
    ("mass_properties.motor.travel_per_revolution", 0, "mass_properties.motor.travel_per_revolution must be > 0, got 0"),
    ("mass_properties.motor.torque_constant", -1, "mass_properties.motor.torque_constant must be > 0"),
    ("mass_properties.platform.mass", None, "mass_properties.platform.mass must be a number, got None"),
    ("friction.viscous", [1, -1, 1], r"friction.viscous\[1\] must be >= 0, got -1"),
    ("limits.position", [[0.1, 0.5], [0.5, 0.1], [0.1, 0.5]], r"limits.position\[1\] must have lo < hi"),
    ("limits.position", [[0.1, 0.5]], r"limits.position must be 3 pairs \[lo, hi\] in m"),
    ("limits.position", [[0.1, 0.2], [0.3, 0.4], [0.1, 0.5]], "limits.position the three carriages have no common range"),
    ("limits.velocity", [1, 1, 0], r"limits.velocity\[2\] must be > 0, got 0"),
    ("limits.force", [60, "x", 60], r"limits.force\[1\] must be a finite number, got 'x'"),
    ("joint_names", ["a", "a", "b"], "joint_names must be 3 different names"),
    ("gravity", -9.8, "gravity must be >= 0, got -9.8"),
])
def test_each_bad_value_is_named_with_file_field_and_rule(tmp_path, path, value, message):
    refused(tmp_path, preset_dict(), path, value, message)


def test_rods_too_short_to_reach_the_platform_are_refused(tmp_path):
    d = preset_dict()
    d["geometry"]["rod_length"] = 0.1
    d["mass_properties"]["rod"]["inertia"] = 0.0
    with pytest.raises(RobotFileError, match=r"x.yaml: geometry.rod_length is too short for the rods to reach "
                                             r"the platform: needs > 0.1057 m \(rail_radius - platform_radius"):
        load_robot(write(tmp_path, d))


def test_platform_joints_as_far_out_as_the_rails_are_refused(tmp_path):
    d = preset_dict()
    d["geometry"]["platform_radius"] = 0.13
    with pytest.raises(RobotFileError, match=r"x.yaml: geometry.rail_radius must be > geometry.platform_radius "
                                             r"\(0.13\).*parallel singularity; got 0.1256"):
        load_robot(write(tmp_path, d))


def test_unknown_and_rotary_fields_are_refused_not_defaulted(tmp_path):
    d = preset_dict()
    d["limits"]["torque"] = d["limits"].pop("force")
    with pytest.raises(RobotFileError, match=r"x.yaml: limits.torque is not a known field "
                                             r"\(known here: position, velocity, acceleration, force\)"):
        load_robot(write(tmp_path, d))
    d = preset_dict()
    d["mass_properties"]["rod"]["inertia_axial"] = 1e-7
    with pytest.raises(RobotFileError, match="mass_properties.rod.inertia_axial is not a known field"):
        load_robot(write(tmp_path, d))


def test_missing_fields_are_named_and_optional_ones_default(tmp_path):
    d = preset_dict()
    del d["mass_properties"]["carriage"]
    with pytest.raises(RobotFileError, match=r"x.yaml: mass_properties.carriage.mass is missing"):
        load_robot(write(tmp_path, d))
    d = preset_dict()
    for k in ("rail_angles_deg", "tool_offset"):
        del d["geometry"][k]
    del d["friction"], d["mass_properties"]["payload"], d["mass_properties"]["motor"]["torque_constant"]
    r = load_robot(write(tmp_path, d))
    assert r.geometry.rail_angles_deg == (210.0, 330.0, 90.0) and r.geometry.tool_offset == 0.0
    assert r.friction.viscous == (0.0, 0.0, 0.0) and r.friction.smoothing_velocity == 0.001
    assert r.mass.payload_mass == 0.0 and r.mass.motor.torque_constant == 1.0


def test_a_file_of_the_old_type_name_prismatic_loads_as_linear(tmp_path):
    """Existing users' files say ``type: prismatic``: they load, as the linear kind, and saving
    writes the kind's name."""
    d = preset_dict()
    d["type"] = "prismatic"
    r = load_robot(write(tmp_path, d))
    assert r.type == "linear" and r == load_robot("colombo2020").replace(source=r.source)
    assert yaml.safe_load(save_robot(r, tmp_path / "y.yaml").read_text())["type"] == "linear"


def test_a_linear_file_without_a_type_is_read_as_rotary(tmp_path):
    d = preset_dict()
    del d["type"]
    with pytest.raises(RobotFileError, match=r"geometry.rail_\w+ is not a known field \(known here: base_radius"):
        load_robot(write(tmp_path, d))
