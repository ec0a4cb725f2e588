"""``delta-description`` on bad input: each case is data (args, files, expected error text,
exit status), run through ``main(argv)`` or, for a few, the real ``python -m
delta_description.cli``; see :mod:`bad_input_harness` for what every case must show (one
error line, no traceback, the pre-existing output untouched, no temporary file left).

Add a case: append a :class:`Case` to CASES.
"""
from __future__ import annotations

import pytest

from delta_description.cli import main

from bad_input_harness import NT_ROBOT, OUTPUT_SPECIALS, SPECIALS, Case, check_case, sparse

BASE = NT_ROBOT.read_text(encoding="utf-8")


def nt(old, new):
    assert old in BASE, old
    return BASE.replace(old, new, 1)


URDF = {"out_name": "out.urdf"}
CASES = [
    # robot files (more in test_bad_robot_files.py)
    Case("urdf-missing-robot", ["urdf", "--robot", "{tmp}/absent.yaml", "-o", "{out}"],
         "absent.yaml: robot file not found", **URDF),
    Case("urdf-no-preset", ["urdf", "--robot", "no_such_robot", "-o", "{out}"], "no such preset", **URDF,
         subprocess=True),
    Case("urdf-robot-dir", ["urdf", "--robot", "{tmp}/", "-o", "{out}"], "a directory, not a robot file", **URDF),
    Case("urdf-robot-sparse-10GB", ["urdf", "--robot", "{tmp}/big.yaml", "-o", "{out}"],
         "big.yaml: 10737418240 bytes, more than the 1 MB allowed for a robot file",
         files={"big.yaml": sparse(10 << 30)}, **URDF),
    Case("urdf-robot-binary", ["urdf", "--robot", "{tmp}/x.yaml", "-o", "{out}"], "not UTF-8 text: byte 0x89",
         files={"x.yaml": b"\x89PNG\r\n\x1a\n" + bytes(range(256))}, **URDF),
    Case("urdf-tab-in-joint-name", ["urdf", "--robot", "{tmp}/x.yaml", "-o", "{out}"],
         "x.yaml: joint_names[1] must be printable text",
         files={"x.yaml": nt("arm_2_joint", '"arm\\t2"')}, **URDF),
    Case("check-newline-in-name", ["check", "--robot", "{tmp}/x.yaml"], "x.yaml: name must be printable text",
         files={"x.yaml": nt("name: nt_robot", 'name: "nt\\nrobot"')}),
    Case("check-joint-name-clash", ["check", "--robot", "{tmp}/x.yaml"], "clash with joints the URDF generates",
         files={"x.yaml": nt("arm_1_joint", "tool0_joint")}),
    Case("controllers-1e308", ["controllers", "--robot", "{tmp}/x.yaml"],
         "x.yaml: limits.velocity[0] must be <= 1000 rad/s",
         files={"x.yaml": nt("velocity: [8.0, 8.0, 8.0]", "velocity: [1.0e+308, 8.0, 8.0]")}),
    # options
    Case("check-samples-0", ["check", "--robot", "nt_robot", "--samples", "0"],
         "argument --samples: must be >= 1, got 0"),
    Case("check-samples-1e9", ["check", "--robot", "nt_robot", "--samples", "1000000000"],
         "argument --samples: must be <= 10000", subprocess=True),
    Case("check-samples-text", ["check", "--robot", "nt_robot", "--samples", "many"],
         "argument --samples: not an integer: 'many'"),
    Case("urdf-arg-no-value", ["urdf", "--robot", "nt_robot", "--arg", "motor_mass", "-o", "{out}"],
         "--arg must be name:=value", **URDF),
    Case("urdf-arg-unknown", ["urdf", "--robot", "nt_robot", "--arg", "nosuch:=1", "-o", "{out}"],
         "unknown xacro argument 'nosuch'", **URDF),
    Case("urdf-arg-motor-mass", ["urdf", "--robot", "nt_robot", "--arg", "motor_mass:=heavy", "-o", "{out}"],
         "motor_mass must be a number of kg in [0, 1000], got 'heavy'", **URDF),
    Case("urdf-arg-motor-mass-inf", ["urdf", "--robot", "nt_robot", "--arg", "motor_mass:=inf", "-o", "{out}"],
         "motor_mass must be a number of kg", **URDF),
    Case("urdf-arg-interfaces", ["urdf", "--robot", "nt_robot", "--ros2-control", "mock", "--arg",
                                 "command_interfaces:=position torque", "-o", "{out}"],
         "command_interfaces must be a non-empty subset of position velocity effort", **URDF),
    Case("urdf-arg-topic-blank", ["urdf", "--robot", "nt_robot", "--arg", "joint_states_topic:=a b",
                                  "-o", "{out}"], "joint_states_topic must be a name", **URDF),
    Case("urdf-mode", ["urdf", "--robot", "nt_robot", "--ros2-control", "real", "-o", "{out}"],
         "argument --ros2-control: invalid choice", **URDF),
    Case("urdf-out-is-dir", ["urdf", "--robot", "nt_robot", "-o", "{tmp}"], "is a directory", **URDF),
    Case("urdf-out-unwritable", ["urdf", "--robot", "nt_robot", "-o", "/proc/x.urdf"],
         "/proc/x.urdf: No such file or directory", **URDF),
    # --urdf input of check
    Case("check-urdf-missing", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/absent.urdf"],
         "absent.urdf: URDF not found"),
    Case("check-urdf-binary", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/x.urdf"],
         "x.urdf: not UTF-8 text: byte 0xff", files={"x.urdf": b"<robot>\xff\xfe</robot>"}),
    Case("check-urdf-dev-zero", ["check", "--robot", "nt_robot", "--urdf", "/dev/zero"],
         "/dev/zero: a character device, not a URDF"),
    Case("check-urdf-sparse", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/x.urdf"],
         "bytes, more than the 10 MB allowed for a URDF", files={"x.urdf": sparse(10 << 30)}),
    Case("check-urdf-not-xml", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/x.urdf"],
         "problem(s) in", files={"x.urdf": "[" * 5000}, code=1),
    Case("check-urdf-entity-bomb", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/x.urdf"],
         "problem(s) in", code=1, files={"x.urdf": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
                                         + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">'
                                                   for i in range(8))
                                         + ']><robot name="&i;"/>'}),
    # render
    Case("render-bad-pose", ["render", "--robot", "nt_robot", "--pose", "1,2", "--out", "{out}"],
         "a pose is three arm angles", out_name="out.png"),
    Case("render-nan-pose", ["render", "--robot", "nt_robot", "--pose", "nan,0,0", "--out", "{out}"],
         "a pose is three arm angles", out_name="out.png"),
    Case("render-format", ["render", "--robot", "nt_robot", "--out", "{tmp}/x.xyz"],
         "unknown image format '.xyz'", out_name="out.png"),
    Case("render-too-many-poses", ["render", "--robot", "nt_robot", "--out", "{out}"]
         + ["--pose", "0.4,0.4,0.4"] * 13, "13 poses: draw 1 to 12 in one picture", out_name="out.png"),
    Case("render-bad-robot", ["render", "--robot", "{tmp}/x.yaml", "--out", "{out}"],
         "x.yaml: gravity must be finite", files={"x.yaml": nt("gravity: 9.80665", "gravity: .nan")},
         out_name="out.png", subprocess=True),
    # special files (bad_input_harness.SPECIALS): refused by name; a FIFO never blocks (as a
    # real subprocess, whose timeout fails a regression instead of hanging the run)
    *[Case(f"check-robot-{k}", ["check", "--robot", "{tmp}/r.yaml"], f"r.yaml: {w}", files={"r.yaml": m},
           subprocess=k == "fifo") for k, (m, w) in SPECIALS.items()],
    *[Case(f"check-urdf-{k}", ["check", "--robot", "nt_robot", "--urdf", "{tmp}/x.urdf"], f"x.urdf: {w}",
           files={"x.urdf": m}, subprocess=k == "fifo") for k, (m, w) in SPECIALS.items()],
    *[Case(f"urdf-out-{k}", ["urdf", "--robot", "nt_robot", "-o", "{tmp}/o.urdf"], f"o.urdf: {w}",
           files={"o.urdf": m}, **URDF) for k, (m, w) in OUTPUT_SPECIALS.items()],
    Case("urdf-out-dev-null", ["urdf", "--robot", "nt_robot", "-o", "/dev/null"],
         "/dev/null: is a character device; cannot write the output there", **URDF),
    Case("moveit-out-file", ["moveit", "--robot", "nt_robot", "--out", "{out}"], "is a regular file, not a folder",
         **URDF),
    *[Case(f"moveit-out-{k}", ["moveit", "--robot", "nt_robot", "--out", "{tmp}/cfg"], f"cfg: is {w}",
           files={"cfg": m}, **URDF) for k, (m, w) in SPECIALS.items() if k in ("fifo", "char-device", "socket")],
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(tmp_path, case):
    check_case(case, tmp_path, "delta-description", main, "delta_description.cli")
