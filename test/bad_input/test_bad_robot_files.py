"""Bad robot files: every case is refused by ``load_robot`` with one line naming the file and
what is wrong (field path, line or byte offset), never a traceback; a handful also through
``delta-description check`` as a real subprocess.

Add a case: one row in CASES, (id, file content, expected text). The content is the nt_robot
preset with ``replace(old, new)`` applied, or any text or bytes.
"""
from __future__ import annotations

import math
import re

import pytest

from delta_core.robot_file import RobotFileError, linear, load_robot, rotary
from delta_core.robot_file.bounds import markdown_table
from delta_dynamics.rotary.model import RotaryModel

from bad_input_harness import NT_ROBOT, SPECIALS, Case, check_case

BASE = NT_ROBOT.read_text(encoding="utf-8")


def nt(*pairs) -> str:
    """The nt_robot file with each (old, new) replaced once (old must occur)."""
    text = BASE
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


ALIAS_BOMB = "metadata:\n  a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))

# (id, content, expected text of the error); the message must also start with the file path
CASES = [
    # --- the file itself
    ("not-utf8", BASE.encode().replace(b"name: nt_robot", b"name: nt_r\xffobot"),
     "not UTF-8 text: byte 0xff at offset"),
    ("latin1-comment", BASE.encode().replace(b"# NT Robot", b"# NT Rob\xe9t"), "not UTF-8 text: byte 0xe9"),
    ("utf16", BASE.encode("utf-16"), "not UTF-8 text: byte 0xff at offset 0 (line 1, column 1)"),
    ("nul-byte", nt(("gravity: 9.80665", "gravity: 9.8\x00")), "unacceptable character #x0000"),
    ("too-large", BASE + "#" * (1 << 20) + "\n", "allowed for a robot file"),
    ("empty", "", "is empty: a robot file is a mapping of fields"),
    ("only-comments", "# nothing here\n", "is empty"),
    ("top-level-list", "- a\n- b\n", "must be a mapping of fields, got list"),
    ("top-level-scalar", "42\n", "must be a mapping of fields, got int"),
    ("deep-nesting", "name: " + "[" * 5000 + "]" * 5000 + "\n", "line 1: nested deeper than 16 levels"),
    ("deep-mapping", "metadata: " + "{a: " * 40 + "1" + "}" * 40 + "\n", "nested deeper than 16 levels"),
    ("alias-bomb", BASE + ALIAS_BOMB, "an alias bomb?"),
    ("recursive-alias", BASE + "metadata: &m {self: *m}\n", "a recursive structure"),
    ("alias-chain", BASE + "metadata:\n" + "".join(
        f"  a{i}: &a{i} [{'*a' + str(i - 1) if i else 0}]\n" for i in range(40)),
     "nested deeper than 16 levels (aliases followed)"),
    ("5000-digit-int", nt(("mass: 2.033", "mass: " + "9" * 5000)), "an integer of 5000 characters"),
    ("long-hex-int", nt(("mass: 2.033", "mass: 0x" + "f" * 300)), "an integer of 302 characters"),
    ("duplicate-key", BASE + "gravity: 9.81\n", "key 'gravity' appears twice in this mapping"),
    ("duplicate-nested-key", nt(("platform: {mass: 2.033}", "platform: {mass: 2.033, mass: 3.0}")),
     "key 'mass' appears twice"),
    ("two-documents", BASE + "---\nname: other\n", "not valid YAML: line"),
    ("tab-indent", nt(("  base_radius: 0.2", "\tbase_radius: 0.2")), "cannot start any token"),
    ("unclosed-flow", nt(("chain_angles_deg: [60, 180, 300]", "chain_angles_deg: [60, 180, 300")),
     "not valid YAML: line"),
    ("python-tag", nt(("name: nt_robot", "name: !!python/object/apply:os.system [ls]")),
     "could not determine a constructor"),
    ("unhashable-key", BASE + "? [1, 2]\n: 3\n", "found unhashable key"),
    # --- numbers: not numbers, not finite, not plausible
    ("1e308-as-text", nt(("mass: 2.033", "mass: 1e308")),
     "mass_properties.platform.mass must be a number, got '1e308' (YAML 1.1"),
    ("1e308", nt(("mass: 2.033", "mass: 1.0e+308")),
     "mass_properties.platform.mass must be <= 1000 kg (plausibility bound for a Delta robot platform), "
     "got 1e+308"),
    ("huge-int", nt(("mass: 2.033", "mass: " + "1" + "0" * 50)),
     "mass_properties.platform.mass must be <= 1000 kg"),
    ("inf", nt(("mass: 2.033", "mass: .inf")), "mass_properties.platform.mass must be finite, got inf"),
    ("nan", nt(("gravity: 9.80665", "gravity: .nan")), "gravity must be finite, got nan"),
    ("bool", nt(("gravity: 9.80665", "gravity: true")), "gravity must be a number, got True"),
    ("text", nt(("gravity: 9.80665", "gravity: nine")), "gravity must be a number, got 'nine'"),
    ("date", nt(("gravity: 9.80665", "gravity: 2024-01-01")), "gravity must be a number, got datetime"),
    ("binary", nt(("gravity: 9.80665", "gravity: !!binary aGVsbG8=")), "gravity must be a number, got b'hello'"),
    ("gravity-1000", nt(("gravity: 9.80665", "gravity: 1000.0")), "gravity must be <= 100 m/s^2"),
    ("negative-gravity", nt(("gravity: 9.80665", "gravity: -9.81")), "gravity must be >= 0, got -9.81"),
    ("negative-mass", nt(("mass: 2.033", "mass: -2.0")), "mass_properties.platform.mass must be >= 0"),
    ("millimetres", nt(("forearm_length: 0.80", "forearm_length: 800")),
     "geometry.forearm_length must be <= 20 m (plausibility bound for a forearm"),
    ("tiny-length", nt(("base_radius: 0.2", "base_radius: 1.0e-300")),
     "geometry.base_radius must be >= 0.0001 m"),
    ("gear-1e6", nt(("gear_ratio: 21.0", "gear_ratio: 1000000")), "mass_properties.motor.gear_ratio must be <= 1000"),
    ("rotor-inertia", nt(("rotor_inertia: 2.25e-4", "rotor_inertia: 50.0")),
     "mass_properties.motor.rotor_inertia must be <= 1 kg m^2"),
    ("arm-inertia", nt(("inertia: 0.01919", "inertia: 1.0e+9")),
     "mass_properties.upper_arm.inertia must be <= 10000 kg m^2"),
    ("torque-limit", nt(("torque: [120.0, 120.0, 120.0]", "torque: [120.0, 1.0e+9, 120.0]")),
     "limits.torque[1] must be <= 100000 N m"),
    ("zero-velocity-limit", nt(("velocity: [8.0, 8.0, 8.0]", "velocity: [8.0, 8.0, 0]")),
     "limits.velocity[2] must be > 0, got 0"),
    ("viscous-huge", nt(("viscous: [1.5, 1.5, 1.5]", "viscous: [1.5, 1.0e+7, 1.5]")),
     "friction.viscous[1] must be <= 10000 N m s/rad"),
    ("viscous-nan", nt(("viscous: [1.5, 1.5, 1.5]", "viscous: [1.5, .nan, 1.5]")),
     "friction.viscous[1] must be finite"),
    ("viscous-four", nt(("viscous: [1.5, 1.5, 1.5]", "viscous: [1.5, 1.5, 1.5, 1.5]")),
     "friction.viscous must be a list of 3 numbers"),
    ("chain-angle", nt(("chain_angles_deg: [60, 180, 300]", "chain_angles_deg: [60, 180, 1.0e+6]")),
     "geometry.chain_angles_deg[2] must be <= 720 deg"),
    ("stribeck-velocity", nt(("velocity: 0.05}", "velocity: 1.0e-9}")),
     "friction.stribeck.velocity must be >= 1e-06 rad/s"),
    ("position-limit", nt(("position: [[-0.7, 1.5],", "position: [[-0.7, 10],")),
     "limits.position[0] must lie within [-pi, pi]"),
    ("position-nan", nt(("position: [[-0.7, 1.5],", "position: [[-0.7, .nan],")),
     "limits.position[0] must hold finite numbers"),
    ("forearm-inertia", nt(("inertia: 0.02144", "inertia: 1.0")),
     "mass_properties.forearm.inertia must be <= mass * com_ratio"),
    # --- structure
    ("missing-field", nt(("  platform: {mass: 2.033}     # m_p\n", "")), "mass_properties.platform.mass is missing"),
    ("unknown-field", nt(("gravity: 9.80665", "gravity: 9.80665\ngravty: 9.8")), "gravty is not a known field"),
    ("section-not-mapping", nt(("friction:", "friction: 3\nfriction_was:")), "friction must be a mapping"),
    ("two-joints", nt(("joint_names: [arm_1_joint, arm_2_joint, arm_3_joint]", "joint_names: [a, b]")),
     "joint_names must be a list of 3 non-empty names"),
    ("huge-joint-list", nt(("joint_names: [arm_1_joint, arm_2_joint, arm_3_joint]",
                            "joint_names: [" + ", ".join(f"j{i}" for i in range(20000)) + "]")),
     "characters)"),
    ("empty-name", nt(("name: nt_robot", "name: '  '")), "name must be a non-empty string"),
    ("name-mapping", nt(("name: nt_robot", "name: {a: 1}")), "name must be a non-empty string"),
    ("type-unknown", nt(("type: rotary", "type: cable")), "type must be one of"),
    ("lumped-implausible", BASE + "metadata: {identified: {lumped_parameters: {names: [m_x, m_k, "
     "arm_inertia_1, arm_inertia_2, arm_inertia_3, arm_moment_1, arm_moment_2, arm_moment_3, viscous_1, "
     "viscous_2, viscous_3, coulomb_1, coulomb_2, coulomb_3], values: [1.0e+9, 0.2, 0.2, 0.2, 0.2, 0.7, "
     "0.7, 0.7, 1.5, 1.5, 1.5, 2.0, 2.0, 2.0]}}}\n",
     "metadata.identified.lumped_parameters: m_x must be <= 5000 kg"),
    ("lumped-negative", BASE + "metadata: {identified: {lumped_parameters: {names: [m_x, m_k, "
     "arm_inertia_1, arm_inertia_2, arm_inertia_3, arm_moment_1, arm_moment_2, arm_moment_3, viscous_1, "
     "viscous_2, viscous_3, coulomb_1, coulomb_2, coulomb_3], values: [3.0, 0.2, 0.2, 0.2, 0.2, 0.7, "
     "0.7, 0.7, 1.5, 1.5, -1.5, 2.0, 2.0, 2.0]}}}\n",
     "viscous_3 must be >= 0 N m s/rad"),
]


def _write(tmp_path, content):
    p = tmp_path / "x.yaml"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


@pytest.mark.parametrize("name, content, message", CASES, ids=[c[0] for c in CASES])
def test_bad_robot_file_is_refused_in_one_line(tmp_path, name, content, message):
    p = _write(tmp_path, content)
    with pytest.raises(RobotFileError) as e:
        RotaryModel(load_robot(p))      # the model reads metadata.identified.lumped_parameters
    text = str(e.value)
    assert text.startswith(f"{p}: "), text
    assert message in text, text
    assert "\n" not in text and len(text) < 600, text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(SPECIALS))
def test_a_special_file_is_refused_by_name_without_blocking(tmp_path, kind):
    """A FIFO (the open used to wait for a writer forever), a socket, a device, a directory, a
    symlink loop (it said 'robot file not found'), a dangling symlink: one line naming it."""
    make, words = SPECIALS[kind]
    p = tmp_path / "r.yaml"
    make(p)
    with pytest.raises(RobotFileError) as e:
        load_robot(p)
    assert str(e.value).startswith(f"{p}: {words}"), str(e.value)
    assert "not found" not in str(e.value) or kind == "dangling-symlink"


def test_special_files(tmp_path):
    with pytest.raises(RobotFileError, match=r"^/dev/zero: a character device, not a robot file"):
        load_robot("/dev/zero")
    with pytest.raises(RobotFileError, match="a directory, not a robot file"):
        load_robot(str(tmp_path) + "/")
    big = tmp_path / "sparse.yaml"
    with open(big, "wb") as f:                 # a 10 GB file that takes no disk space
        f.truncate(10 << 30)
    with pytest.raises(RobotFileError, match=r"sparse.yaml: 10737418240 bytes, more than the 1 MB"):
        load_robot(big)


def test_a_valid_file_with_aliases_and_merge_keys_still_loads(tmp_path):
    text = nt(("velocity: [8.0, 8.0, 8.0]", "velocity: &v [8.0, 8.0, 8.0]"),
              ("acceleration: [150.0, 150.0, 150.0]", "acceleration: *v")) + \
        "metadata: {base: &b {a: 1}, over: {<<: *b, a: 2}}\n"
    r = load_robot(_write(tmp_path, text))
    assert r.limits.acceleration == (8.0, 8.0, 8.0) and r.metadata["over"] == {"a": 2}


def _numeric_leaves(schema, where=""):
    for key, sub in schema.items():
        path = f"{where}.{key}" if where else key
        if isinstance(sub, dict):
            yield from _numeric_leaves(sub, path)
        elif sub is None and path not in ("name", "type", "joint_names"):
            yield path


def test_every_numeric_field_has_a_plausibility_bound():
    """A new numeric field needs its row in its kind's BOUNDS (delta_core/robot_file/<kind>.py)
    and in the docs."""
    missing = [p for kind in (rotary, linear) for p in _numeric_leaves(kind.SCHEMA) if p not in kind.BOUNDS]
    assert not missing, f"add plausibility bounds for {missing}"
    for kind in (rotary, linear):
        for path, b in kind.BOUNDS.items():
            assert b.lo < b.hi and math.isfinite(b.lo) and math.isfinite(b.hi), path


def test_presets_lie_well_inside_the_bounds():
    from delta_core.robot_file import list_presets
    for name in list_presets():
        load_robot(name)


def test_docs_list_the_bounds():
    from delta_core.share import share_file
    doc = (share_file("config").parent / "docs" / "robot_file.md").read_text(encoding="utf-8")
    assert markdown_table(rotary.BOUNDS) in doc and markdown_table(linear.BOUNDS) in doc, \
        "docs/robot_file.md: paste delta_core.robot_file.bounds.markdown_table(<kind>.BOUNDS) into it"


# ----------------------------------------------------------------------------- through the CLI

from delta_description.cli import main as description_main  # noqa: E402

CLI_CASES = [
    Case("check-not-utf8", ["check", "--robot", "{tmp}/x.yaml"], "x.yaml: not UTF-8 text: byte 0xff",
         files={"x.yaml": BASE.encode().replace(b"nt_robot", b"nt\xffrobot")}, subprocess=True),
    Case("check-deep", ["check", "--robot", "{tmp}/x.yaml"], "x.yaml: line 1: nested deeper than 16",
         files={"x.yaml": "a: " + "[" * 5000 + "]" * 5000}, subprocess=True),
    Case("check-5000-digits", ["check", "--robot", "{tmp}/x.yaml"], "an integer of 5000 characters",
         files={"x.yaml": nt(("mass: 2.033", "mass: " + "9" * 5000))}, subprocess=True),
    Case("check-1e308", ["check", "--robot", "{tmp}/x.yaml"],
         "x.yaml: mass_properties.platform.mass must be <= 1000 kg (plausibility bound for a Delta robot "
         "platform), got 1e+308", files={"x.yaml": nt(("mass: 2.033", "mass: 1.0e+308"))}, subprocess=True),
    Case("urdf-alias-bomb", ["urdf", "--robot", "{tmp}/x.yaml", "-o", "{out}"], "alias bomb",
         files={"x.yaml": BASE + ALIAS_BOMB}, out_name="out.urdf"),
    Case("urdf-dev-zero", ["urdf", "--robot", "/dev/zero", "-o", "{out}"],
         "/dev/zero: a character device, not a robot file", out_name="out.urdf"),
    Case("check-fifo", ["check", "--robot", "{tmp}/x.yaml"], "x.yaml: a FIFO (named pipe), not a robot file",
         files={"x.yaml": SPECIALS["fifo"][0]}, subprocess=True),
    Case("check-symlink-loop", ["check", "--robot", "{tmp}/x.yaml"], "x.yaml: a symlink loop",
         files={"x.yaml": SPECIALS["symlink-loop"][0]}),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=str)
def test_bad_robot_file_through_the_cli(tmp_path, case):
    check_case(case, tmp_path, "delta-description", description_main, "delta_description.cli")


def test_error_names_the_field_path_like_the_issue(tmp_path):
    """The example of the reliability issue, verbatim."""
    p = _write(tmp_path, nt(("mass: 2.033", "mass: 1.0e+308")))
    with pytest.raises(RobotFileError) as e:
        load_robot(p)
    assert re.fullmatch(re.escape(f"{p}: mass_properties.platform.mass must be <= 1000 kg (plausibility "
                                  "bound for a Delta robot platform), got 1e+308"), str(e.value))
