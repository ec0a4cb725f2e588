"""``delta-dynamics retime`` and ``plan pick`` on bad input: path files (special files, not
UTF-8, too few rows, repeated points, NaN, unreachable, a singularity), options out of range,
doors that cannot be built, limits that cannot hold the platform. Each case is data; see
:mod:`bad_input_harness` for what every case must show (exit 2, one clear error line, the
existing output untouched, no temporary file).
"""
from __future__ import annotations

import pytest

from delta_dynamics.cli import main

from bad_input_harness import Case, check_case

RT = ["retime", "--path", "{tmp}/p.csv", "--out", "{out}"]
PICK = ["plan", "pick", "--from", "-0.1525", "0", "-0.78", "--to", "0.1525", "0", "-0.78", "--out", "{out}"]
GOOD = "x,y,z\n-0.1,0,-0.8\n0.1,0,-0.8\n"

CASES = [
    Case("retime-missing", RT, "p.csv: CSV file not found"),
    Case("retime-dev-zero", ["retime", "--path", "/dev/zero", "--out", "{out}"], "/dev/zero: a character device, not a CSV file"),
    Case("retime-directory", ["retime", "--path", "{tmp}", "--out", "{out}"], ": a directory, not a CSV file"),
    Case("retime-not-utf8", RT, "not UTF-8 text", files={"p.csv": b"x,y,z\n\xff,0,0\n"}),
    Case("retime-one-row", RT, "p.csv: 1 data row, need at least 2", files={"p.csv": "x,y,z\n0,0,-0.8\n"}),
    Case("retime-no-z", RT, "missing column 'z'", files={"p.csv": "x,y\n0,0\n1,1\n"}),
    Case("retime-nan", RT, "p.csv:3: column 'x': not a finite number", files={"p.csv": "x,y,z\n0,0,-0.8\nnan,0,-0.8\n"}),
    Case("retime-repeat", RT, "p.csv:4: path point 2 (0.1, 0, -0.8) repeats point 1",
         files={"p.csv": GOOD.replace("0.1,0,-0.8\n", "0.1,0,-0.8\n0.1,0,-0.8\n").replace("-0.1,0", "0,0")}),
    Case("retime-unreachable", RT, "is unreachable", files={"p.csv": "x,y,z\n-0.1,0,-0.8\n0,0,-0.1\n0.1,0,-0.8\n"}),
    Case("retime-joint-limits", RT, "outside its limits", files={"p.csv": "x,y,z\n0,0,-0.8\n0.6,0,-0.7\n"}),
    Case("retime-singularity", ["retime", "--robot", "colombo2020", "--path", "{tmp}/p.csv", "--out", "{out}"],
         "is at a singularity", files={"p.csv": "x,y,z\n0,0,0.10777684438082985\n0.11686427578,0,0.10777684438082985\n"}),
    Case("retime-gridpoints", RT + ["--gridpoints", "5"], "argument --gridpoints: must be >= 10", files={"p.csv": GOOD}),
    Case("retime-torque-scale", RT + ["--torque-scale", "nan"], "argument --torque-scale: not a finite number",
         files={"p.csv": GOOD}),
    Case("retime-out-dir", ["retime", "--path", "{tmp}/p.csv", "--out", "{tmp}"], "is a directory",
         files={"p.csv": GOOD}),
    Case("pick-same-point", ["plan", "pick", "--from", "0", "0", "-0.8", "--to", "0", "0", "-0.7", "--out", "{out}"],
         "same horizontal position"),
    Case("pick-blend", PICK + ["--blend", "0.2"], "blend 0.2 m does not fit the 0.025 m rise"),
    Case("pick-blend-zero", PICK + ["--blend", "0"], "--blend must be > 0 m"),
    Case("pick-height-huge", PICK + ["--height", "1e9"], "argument --height: must be <= 100 m"),
    Case("pick-unreachable", ["plan", "pick", "--from", "-0.1525", "0", "-0.78", "--to", "2", "0", "-0.78",
                              "--out", "{out}"], "is unreachable"),
    Case("pick-cycles", PICK + ["--cycles", "100000"], "more than the 1000000 a command may make"),
    Case("pick-dt", PICK + ["--dt", "0"], "argument --dt: must be >= 1e-06 s"),
    Case("pick-weak-robot", PICK + ["--torque-scale", "0.01"], "to hold the platform against gravity"),
    Case("pick-from-missing", ["plan", "pick", "--to", "0", "0", "-0.8", "--out", "{out}"],
         "the following arguments are required: --from"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(tmp_path, case):
    check_case(case, tmp_path, "delta-dynamics", main, "delta_dynamics.cli")
