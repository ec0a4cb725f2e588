"""The robot file's optional full-body section (mass_properties.full_body): loading, the
presets' values in our body frames, round trip, consistency with the lumped fields, and a
clear error for every bad value."""
import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from delta_core.robot_file import RobotFileError, load_robot, parse_robot, save_robot
from delta_dynamics.reference.bodies import body_set
from delta_dynamics.rotary.identification import physical_from_lumped
from delta_dynamics.rotary.model import RotaryModel

REPO = Path(__file__).resolve().parents[1]


def preset_dict(name):
    return yaml.safe_load((REPO / "config" / "robots" / f"{name}.yaml").read_text())


def test_d3s800_bodies_are_elshami_table_2_in_our_frames():
    bs = body_set(load_robot("d3s800"))
    assert bs.source.startswith("full-body data")
    assert bs.upper_arm.mass == 6.2 and bs.upper_arm.inertia == (0.0051, 0.12448, 0.125448)
    # one bar of the six: 1.65 kg; its smallest moment (their Iyy) is about our x, along the bar
    assert bs.bar.mass == 1.65 and bs.bar.inertia == (0.00006, 0.1394, 0.1394)
    assert bs.bar.com == pytest.approx(0.48) and bs.bar.length == 0.96
    for block in (bs.elbow_block, bs.platform_block):          # the connecting rods
        assert block.mass == 0.2 and block.inertia == (0.0000147, 0.000101, 0.000101)
        assert block.length == 0.095 and block.com == pytest.approx(0.0475)
    assert bs.platform.mass == 0.9 and bs.platform.inertia == (0.001031, 0.001031, 0.002019)
    assert bs.forearm_mass == pytest.approx(3.7)


def test_staicu2003_bodies_are_the_papers_tensors_moved_to_the_com():
    bs = body_set(load_robot("staicu2003"))
    # J_1 = diag(0.05, 0.1, 0.1) about the joint A_1, COM at l_1 / 2 = 0.05 m
    assert bs.upper_arm.inertia == pytest.approx((0.05, 0.1 - 2.5 * 0.05 ** 2, 0.1 - 2.5 * 0.05 ** 2))
    # J_3 = diag(0.4, 0.2, 0.4) about the bar's upper joint, bar along their -y_3
    assert bs.bar.inertia == pytest.approx((0.2, 0.4 - 5 * 0.175 ** 2, 0.4 - 5 * 0.175 ** 2))
    assert bs.elbow_block.inertia == (0.01, 0.02, 0.02)
    assert bs.platform_block.inertia == pytest.approx((0.04, 0.08 - 2 * 0.025 ** 2, 0.08 - 2 * 0.025 ** 2))
    assert (bs.upper_arm.mass, bs.elbow_block.mass, bs.bar.mass, bs.platform_block.mass,
            bs.platform.mass) == (2.5, 2.0, 5.0, 2.0, 15.0)
    g = load_robot("staicu2003").geometry
    assert (g.base_radius, g.upper_arm_length, g.forearm_spacing, g.forearm_length) == (0.35, 0.1, 0.05, 0.35)
    assert g.platform_radius == pytest.approx(0.35 - 0.35 * np.sin(np.pi / 6))


def test_without_the_section_the_bodies_come_from_the_lumped_fields():
    r = load_robot("nt_robot")
    assert r.mass.full_body is None
    bs = body_set(r)
    assert bs.source == "derived from the lumped robot-file fields"
    assert bs.bar.mass == pytest.approx(0.5 * r.mass.forearm.mass)
    assert bs.elbow_block.mass == bs.platform_block.mass == 0.0


@pytest.mark.parametrize("name", ["d3s800", "staicu2003"])
def test_lumped_forearm_is_what_the_bodies_imply(name):
    r = load_robot(name)
    implied = r.mass.full_body.implied_forearm(r.geometry.forearm_length)
    assert implied.mass == pytest.approx(r.mass.forearm.mass, rel=1e-12)
    assert implied.com_ratio == pytest.approx(r.mass.forearm.com_ratio, rel=1e-12)
    assert implied.inertia == pytest.approx(r.mass.forearm.inertia, rel=1e-9)


def test_round_trip_keeps_the_section(tmp_path):
    for name in ("d3s800", "staicu2003"):
        r = load_robot(name)
        back = load_robot(save_robot(r, tmp_path / f"{name}.yaml"))
        assert back.mass == r.mass and back.mass.full_body is not None


def test_optional_entries_default_and_unbalanced_bar_com(tmp_path):
    d = preset_dict("nt_robot")
    d["mass_properties"]["full_body"] = {"bar": {"mass": 0.2, "com_ratio": 0.3, "inertia": [0, 0.01, 0.01]},
                                         "platform_block": {"mass": 0.1}}
    lk = d["geometry"]["forearm_length"]
    # the implied lumped forearm, by hand
    M = 0.4 + 0.1
    rk = (0.4 * 0.3 + 0.1) / M
    I = 2 * (0.01 + 0.2 * (0.3 - rk) ** 2 * lk ** 2) + 0.1 * ((1 - rk) * lk) ** 2
    d["mass_properties"]["forearm"] = {"mass": M, "com_ratio": rk, "inertia": I}
    r = parse_robot(d)
    bs = body_set(r)
    assert bs.elbow_block.mass == 0 and bs.platform_block.inertia == (0.0, 0.0, 0.0)
    assert bs.bar.com == pytest.approx(0.3 * lk)
    arm = r.mass.upper_arm.inertia
    assert bs.upper_arm.inertia == pytest.approx((1e-3 * arm, arm, arm))        # derived
    rp = d["geometry"]["platform_radius"]
    assert bs.platform.inertia[2] == pytest.approx(r.mass.platform_mass * rp ** 2 / 2)


def _with(d, path, value):
    d = copy.deepcopy(d)
    node = d
    *parents, leaf = path.split(".")
    for p in parents:
        node = node[p]
    if value is ...:
        del node[leaf]
    else:
        node[leaf] = value
    return d


FB = "mass_properties.full_body"


@pytest.mark.parametrize("path, value, message", [
    (f"{FB}.bar.mass", -1, rf"{FB}.bar.mass must be >= 0, got -1"),
    (f"{FB}.bar.mass", ..., rf"{FB}.bar.mass is missing"),
    (f"{FB}.bar.inertia", ..., rf"{FB}.bar.inertia is missing"),
    (f"{FB}.bar.com_ratio", 1.5, rf"{FB}.bar.com_ratio must be <= 1, got 1.5"),
    (f"{FB}.bar.inertia", [0.1, 0.1], rf"{FB}.bar.inertia must be a list of 3 principal moments"),
    (f"{FB}.bar.inertia", 0.1, rf"{FB}.bar.inertia must be a list of 3 principal moments"),
    (f"{FB}.elbow_block.inertia", [0.1, -0.1, 0.1], rf"{FB}.elbow_block.inertia\[1\] must be >= 0, got -0.1"),
    (f"{FB}.elbow_block.inertia", [0.1, "a", 0.1], rf"{FB}.elbow_block.inertia\[1\] must be a finite number"),
    (f"{FB}.platform_inertia", [0.001, 0.001, 0.003],
     rf"{FB}.platform_inertia is not the inertia of a rigid body: Izz = 0.003 exceeds the sum of the other two"),
    (f"{FB}.bar.massy", 1, rf"{FB}.bar.massy is not a known field \(known here: mass, com_ratio, inertia\)"),
    (f"{FB}.bar", 3, rf"{FB}.bar must be a mapping of fields, got 3"),
    ("mass_properties.forearm.mass", 2.05,
     r"mass_properties.forearm.mass must equal what mass_properties.full_body implies, "
     r"2 bar.mass \+ elbow_block.mass \+ platform_block.mass = 3.7, got 2.05"),
    ("mass_properties.forearm.inertia", 0.23156, r"mass_properties.forearm.inertia must equal .* = 0.37096, got 0.23156"),
    ("mass_properties.forearm.com_ratio", 0.45, r"mass_properties.forearm.com_ratio must equal .* = 0.5, got 0.45"),
    ("mass_properties.upper_arm.inertia", 0.1,
     r"mass_properties.upper_arm.inertia must equal what .* upper_arm_inertia\[1\] \(Iyy\) = 0.12448, got 0.1"),
    (f"{FB}.elbow_block.mass", 0.3, r"mass_properties.forearm.mass must equal .* = 3.8, got 3.7"),
])
def test_each_bad_value_is_named(tmp_path, path, value, message):
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(_with(preset_dict("d3s800"), path, value)))
    with pytest.raises(RobotFileError, match=f"^{str(f)}: {message}"):
        load_robot(f)


def test_the_slender_bar_rule_gives_way_to_the_full_body_checks():
    """staicu2003's bars are thicker than a line (I_K > M_K r_K (1 - r_K) l_K^2): accepted with
    full-body data, refused as lumped-only data with the usual rule."""
    d = preset_dict("staicu2003")
    parse_robot(d)
    with pytest.raises(RobotFileError, match="mass_properties.forearm.inertia must be <= mass"):
        parse_robot(_with(d, FB, ...))
    assert RotaryModel.from_robot("staicu2003").m_k < 0


def test_identification_drops_the_section_it_would_contradict(tmp_path):
    r = load_robot("d3s800")
    m = RotaryModel.from_robot(r)
    updated, notes = physical_from_lumped(r, m.params)
    assert updated.mass.full_body is None
    assert any("full_body dropped" in n for n in notes)
    save_robot(updated, tmp_path / "ident.yaml")        # a valid file
