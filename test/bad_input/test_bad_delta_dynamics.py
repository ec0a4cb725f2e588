"""``delta-dynamics`` on bad input: trajectory options (every size-like option bounded, at most
MAX_SAMPLES samples), CSV inputs of ``inverse`` / ``forward`` (not UTF-8, no line breaks,
/dev/zero, a sparse 10 GB file, more than MAX_SAMPLES rows, NaN, ...), single points.
Each case is data; see :mod:`bad_input_harness` for what every case must show.

Add a case: append a :class:`Case` to CASES.
"""
from __future__ import annotations

import numpy as np
import pytest

from delta_dynamics.cli import main
from delta_dynamics.limits import MAX_SAMPLES

from bad_input_harness import NT_ROBOT, OUTPUT_SPECIALS, SPECIALS, Case, check_case, sparse

HEADER = "t,x,y,z,xd,yd,zd,xdd,ydd,zdd\n"
JOINT_HEADER = "t,q1,q2,q3,qd1,qd2,qd3,tau1,tau2,tau3\n"


def traj_rows(n, t0=0.0, dt=1e-3):
    return "".join(f"{t0 + k * dt:.6f},-0.1525,0,-0.8,0,0,0,0,0,0\n" for k in range(n))


GOOD_TRAJ = HEADER + traj_rows(10)
GOOD_JOINT = JOINT_HEADER + "".join(f"{k * 1e-3:.3f},0.4,0.4,0.4,0,0,0,10,10,10\n" for k in range(10))


def too_many_rows(p):
    """MAX_SAMPLES + 1 data rows (times need not increase: the row cap comes first)."""
    with open(p, "wb") as f:
        f.write(HEADER.encode())
        f.write(b"0,-0.1525,0,-0.8,0,0,0,0,0,0\n" * (MAX_SAMPLES + 1))


def long_torques(p):
    """20001 rows of holding torques: with --substeps 1000 more than MAX_STEPS."""
    t = np.arange(20001) * 1e-3
    with open(p, "w") as f:
        f.write(JOINT_HEADER)
        np.savetxt(f, np.column_stack((t, np.full((len(t), 3), 0.4), np.zeros((len(t), 3)),
                                       np.full((len(t), 3), 10.0))), delimiter=",", fmt="%.6g")


T = ["trajectory"]
INV = ["inverse", "--trajectory", "{tmp}/in.csv", "--out", "{out}"]
FWD = ["forward", "--torques", "{tmp}/in.csv", "--out", "{out}"]
CASES = [
    # --- trajectory: size-like options
    Case("circle-duration-1e9", T + ["circle", "--duration", "1e9", "--out", "{out}"],
         "argument --duration: must be <= 1e+06 s", subprocess=True),
    Case("circle-duration-samples", T + ["circle", "--duration", "5000", "--out", "{out}"],
         "gives 5e+06 samples, more than the 1000000"),
    Case("circle-dt-tiny", T + ["circle", "--dt", "1e-9", "--out", "{out}"], "argument --dt: must be >= 1e-06 s"),
    Case("circle-dt-zero", T + ["circle", "--dt", "0", "--out", "{out}"], "argument --dt: must be >= 1e-06 s"),
    Case("circle-dt-nan", T + ["circle", "--dt", "nan", "--out", "{out}"], "argument --dt: not a finite number"),
    Case("circle-dt-text", T + ["circle", "--dt", "fast", "--out", "{out}"], "argument --dt: not a number"),
    Case("circle-dt-gt-duration", T + ["circle", "--dt", "5", "--duration", "1", "--out", "{out}"],
         "time step must be in (0, duration]"),
    Case("circle-period-tiny", T + ["circle", "--period", "1e-300", "--out", "{out}"],
         "time step must be in (0, duration]"),
    Case("circle-ramp-1e9", T + ["circle", "--ramp", "1e9", "--out", "{out}"], "argument --ramp: must be <= 1e+06 s"),
    Case("circle-radius-1e300", T + ["circle", "--radius", "1e300", "--out", "{out}"],
         "argument --radius: must be <= 100 m"),
    Case("circle-radius-negative", T + ["circle", "--radius", "-0.1", "--out", "{out}"],
         "argument --radius: must be > 0 m"),
    Case("circle-unreachable", T + ["circle", "--radius", "2", "--robot", "nt_robot", "--out", "{out}"],
         "circle on nt_robot: sample 0"),
    Case("circle-bad-robot", T + ["circle", "--robot", "{tmp}/r.yaml", "--out", "{out}"],
         "r.yaml: not UTF-8 text", files={"r.yaml": b"name: \xff"}),
    Case("lissajous-speed-tiny", T + ["lissajous", "--speed", "1e-9", "--out", "{out}"],
         "argument --speed: must be >= 0.0001 m/s"),
    Case("lissajous-samples", T + ["lissajous", "--speed", "0.0002", "--out", "{out}"],
         "more than the 1000000 a command may make", subprocess=True),
    Case("pick-place-cycles-0", T + ["pick-place", "--cycles", "0", "--out", "{out}"], "argument --cycles: must be >= 1"),
    Case("pick-place-cycles-float", T + ["pick-place", "--cycles", "1e6", "--out", "{out}"],
         "argument --cycles: not an integer"),
    Case("pick-place-cycles-max", T + ["pick-place", "--cycles", "1000000", "--out", "{out}"],
         "argument --cycles: must be <= 100000"),
    Case("pick-place-samples", T + ["pick-place", "--cycles", "100000", "--out", "{out}"],
         "100000 cycles of 1.3 s at --dt 0.001 s gives 1.3e+08 samples"),
    Case("pick-place-dwell-negative", T + ["pick-place", "--dwell", "-1", "--out", "{out}"],
         "argument --dwell: must be >= 0 s"),
    Case("trajectory-out-dir", T + ["circle", "--out", "{tmp}"], "is a directory"),
    # --- inverse: the trajectory CSV
    Case("inverse-missing", INV, "in.csv: CSV file not found"),
    Case("inverse-dev-zero", ["inverse", "--trajectory", "/dev/zero", "--out", "{out}"],
         "/dev/zero: a character device, not a CSV file", subprocess=True),
    Case("inverse-sparse-10GB", INV, "in.csv:1: line longer than 64 kB", files={"in.csv": sparse(10 << 30)}),
    Case("inverse-no-newline", INV, "in.csv:1: line longer than 64 kB",
         files={"in.csv": "t,x,y,z" + ",0" * 100000}),
    Case("inverse-not-utf8", INV, "in.csv: not UTF-8 text: byte 0xff at offset 29 (line 2, column 1)",
         files={"in.csv": HEADER.encode() + b"\xff" + traj_rows(5).encode()}),
    Case("inverse-binary", INV, "not UTF-8 text", files={"in.csv": bytes(range(256)) * 100}),
    Case("inverse-empty", INV, "in.csv: empty file", files={"in.csv": ""}),
    Case("inverse-header-only", INV, "in.csv: 0 data rows, need at least 4", files={"in.csv": HEADER}),
    Case("inverse-nan", INV, "in.csv:4: column 'y': not a finite number: 'nan'",
         files={"in.csv": HEADER + traj_rows(2) + "0.002,-0.1525,nan,-0.8,0,0,0,0,0,0\n" + traj_rows(3, 0.003)}),
    Case("inverse-inf", INV, "column 'xdd': not a finite number: 'inf'",
         files={"in.csv": HEADER + traj_rows(2) + "0.002,-0.1525,0,-0.8,0,0,0,inf,0,0\n" + traj_rows(3, 0.003)}),
    Case("inverse-1e400", INV, "not a finite number: '1e400'",
         files={"in.csv": HEADER + "0,1e400,0,-0.8,0,0,0,0,0,0\n" + traj_rows(5, 0.001)}),
    Case("inverse-text", INV, "in.csv:3: column 'z': not a number: 'deep'",
         files={"in.csv": HEADER + traj_rows(1) + "0.001,-0.1525,0,deep,0,0,0,0,0,0\n" + traj_rows(3, 0.002)}),
    Case("inverse-long-cell", INV, "... (5000 characters)",
         files={"in.csv": HEADER + traj_rows(1) + "0.001,-0.1525,0," + "x" * 5000 + ",0,0,0,0,0,0\n"}),
    Case("inverse-short-row", INV, "in.csv:3: column 'zdd' is missing",
         files={"in.csv": HEADER + traj_rows(1) + "0.001,-0.1525,0,-0.8,0,0,0,0,0\n" + traj_rows(3, 0.002)}),
    Case("inverse-time-back", INV, "column 't': 0.001 is not after the previous row's 0.002",
         files={"in.csv": HEADER + traj_rows(3) + traj_rows(3, 0.001)}),
    Case("inverse-tiny-steps", INV, "the velocity and acceleration derived from the positions are not finite",
         files={"in.csv": "t,x,y,z\n" + "".join(f"{k}e-300,-0.1525,0,-0.8\n" for k in range(6))}),
    Case("inverse-too-many-rows", INV, f"more than {MAX_SAMPLES} data rows", files={"in.csv": too_many_rows},
         subprocess=True),
    Case("inverse-unreachable", INV, "in.csv:2 (t = 0 s)",
         files={"in.csv": HEADER + "0,3,0,-0.8,0,0,0,0,0,0\n" + traj_rows(5, 0.001)}),
    Case("inverse-smoothing", INV + ["--smoothing", "-1"], "argument --smoothing: must be >= 0",
         files={"in.csv": GOOD_TRAJ}),
    Case("inverse-robot-lumped-implausible", INV + ["--robot", "{tmp}/r.yaml"], "lumped_parameters: m_x must be <= 5000 kg",
         files={"in.csv": GOOD_TRAJ, "r.yaml": NT_ROBOT.read_text() + "metadata: {identified: {lumped_parameters: "
                "{names: [m_x, m_k, arm_inertia_1, arm_inertia_2, arm_inertia_3, arm_moment_1, arm_moment_2, "
                "arm_moment_3, viscous_1, viscous_2, viscous_3, coulomb_1, coulomb_2, coulomb_3], values: "
                "[1.0e+300, 0.2, 0.2, 0.2, 0.2, 0.7, 0.7, 0.7, 1.5, 1.5, 1.5, 2.0, 2.0, 2.0]}}}\n"}),
    # --- forward
    Case("forward-substeps-1e9", FWD + ["--substeps", "1e9"], "argument --substeps: not an integer: '1e9'",
         files={"in.csv": GOOD_JOINT}, subprocess=True),
    Case("forward-substeps-big", FWD + ["--substeps", "1000000"], "argument --substeps: must be <= 1000",
         files={"in.csv": GOOD_JOINT}),
    Case("forward-steps", FWD + ["--method", "rk4", "--substeps", "1000"], "is 20000000 fixed steps, more than",
         files={"in.csv": long_torques}),
    Case("forward-rtol", FWD + ["--rtol", "1e-300"], "argument --rtol: must be >= 1e-12",
         files={"in.csv": GOOD_JOINT}),
    Case("forward-atol-negative", FWD + ["--atol", "-1"], "argument --atol: must be >= 1e-15",
         files={"in.csv": GOOD_JOINT}),
    Case("forward-wrong-file", FWD, "missing columns 'q1'", files={"in.csv": GOOD_TRAJ}),
    Case("forward-one-row", FWD, "in.csv: 1 data row, need at least 2", files={"in.csv": JOINT_HEADER + "0,0.4,0.4,0.4,0,0,0,1,1,1\n"}),
    Case("forward-start-outside", FWD, "initial state: joint 1 angle",
         files={"in.csv": GOOD_JOINT.replace("0.000,0.4", "0.000,3.0")}),
    Case("forward-dev-zero", ["forward", "--torques", "/dev/zero", "--out", "{out}"],
         "/dev/zero: a character device, not a CSV file"),
    # --- single points
    Case("ik-nan", ["ik", "nan", "0", "-0.8"], "argument X: not a finite number"),
    Case("ik-huge", ["ik", "0", "0", "1e308"], "argument Z: must be <= 100 m"),
    Case("ik-unreachable", ["ik", "0", "0", "5"], "is unreachable"),
    Case("fk-huge", ["fk", "1e300", "0", "0"], "argument Q1: must be <= 10 rad"),
    Case("fk-limits", ["fk", "2", "0", "0"], "joint 1 angle 2.0000 rad is outside its limits"),
    Case("ik-robot-dev-zero", ["ik", "0", "0", "-0.8", "--robot", "/dev/zero"],
         "/dev/zero: a character device, not a robot file"),
    Case("demo-out-unwritable", ["demo", "--out", "/proc/x"], "/proc/x: No such file or directory"),
    # --- special files (bad_input_harness.SPECIALS): refused by name before any work; a FIFO
    # never blocks (a real subprocess: its timeout fails a regression instead of hanging)
    *[Case(f"ik-robot-{k}", ["ik", "0", "0", "-0.8", "--robot", "{tmp}/r.yaml"], f"r.yaml: {w}",
           files={"r.yaml": m}, subprocess=k == "fifo") for k, (m, w) in SPECIALS.items()],
    *[Case(f"inverse-trajectory-{k}", INV, f"in.csv: {w}", files={"in.csv": m}, subprocess=k == "fifo")
      for k, (m, w) in SPECIALS.items()],
    *[Case(f"forward-torques-{k}", FWD, f"in.csv: {w}", files={"in.csv": m}, subprocess=k == "fifo")
      for k, (m, w) in SPECIALS.items()],
    *[Case(f"circle-out-{k}", T + ["circle", "--out", "{tmp}/o.csv"], f"o.csv: {w}",
           files={"o.csv": m}) for k, (m, w) in OUTPUT_SPECIALS.items()],
    *[Case(f"inverse-out-{k}", ["inverse", "--trajectory", "{tmp}/in.csv", "--out", "{tmp}/o.csv"],
           f"o.csv: {w}", files={"in.csv": GOOD_TRAJ, "o.csv": m}) for k, (m, w) in OUTPUT_SPECIALS.items()],
    Case("forward-out-dev-null", FWD[:3] + ["--out", "/dev/null"], "/dev/null: is a character device; cannot write",
         files={"in.csv": GOOD_JOINT}),
    Case("demo-out-file", ["demo", "--out", "{out}"], "is a regular file, not a folder"),
    Case("demo-out-fifo", ["demo", "--out", "{tmp}/d"], "d: is a FIFO (named pipe), not a folder",
         files={"d": SPECIALS["fifo"][0]}),
    Case("compare-plot-read-only", ["compare", "--trajectory", "{tmp}/in.csv", "--plot", "{tmp}/p.png"],
         "p.png: is a read-only file", files={"in.csv": GOOD_TRAJ, "p.png": OUTPUT_SPECIALS["read-only"][0]}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(tmp_path, case):
    check_case(case, tmp_path, "delta-dynamics", main, "delta_dynamics.cli")
