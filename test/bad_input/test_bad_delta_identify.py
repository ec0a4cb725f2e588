"""``delta-identify`` on bad CSV data and bad options: degenerate data (no torque, constant
torque, outside the joint limits, in degrees, too few samples, too short, not excited enough,
an estimate that is not physical or fits worse than nothing), unreadable files (/dev/zero, a
sparse 10 GB file, not UTF-8, more than MAX_SAMPLES rows) and every numeric option outside
its range. The data are real: synthetic excitation runs through the model, written as CSV.
Each case is data; see :mod:`bad_input_harness` for what every case must show (exit 2, one
error line, no traceback, the pre-existing output robot file untouched).

Add a case: append a :class:`Case` to CASES (a file is text, bytes or a callable(path)).
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import synthetic
from delta_dynamics.identification.cli import main
from delta_dynamics.limits import MAX_SAMPLES
from delta_dynamics.rotary.model import RotaryModel

from bad_input_harness import OUTPUT_SPECIALS, SPECIALS, Case, check_case, sparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_identification import EXCITE, fourier  # noqa: E402

ROBOT = load_robot("nt_robot")


@lru_cache(maxsize=None)
def excitation():
    """10 s of excitation data of a perturbed nt_robot: (t, q, tau)."""
    truth = synthetic.perturbed_model(RotaryModel(ROBOT), seed=1)
    d, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=10.0, seed=21)
    return d.t, d.q, d.tau


def csv(change=None, n=None):
    """A callable writing the excitation data as CSV, after ``change(t, q, tau)`` (copies)."""
    def make(p):
        t, q, tau = (a.copy() for a in excitation())
        if n is not None:
            t, q, tau = t[:n], q[:n], tau[:n]
        if change is not None:
            t, q, tau = change(t, q, tau)
        J.write_joint_data(p, t, q, tau)
    return make


def still_joint_2(t, q, tau):
    q = q.copy()
    q[:, 1] = q[0, 1]
    return t, q, tau


def too_many_rows(p):
    with open(p, "wb") as f:
        f.write(b"t,q1,q2,q3,tau1,tau2,tau3\n")
        f.write(b"0,0.4,0.4,0.4,1,1,1\n" * (MAX_SAMPLES + 1))


HEAD = "t,q1,q2,q3,tau1,tau2,tau3\n"
ROWS = "".join(f"{k * 1e-3:.3f},0.4,0.4,0.4,1,2,3\n" for k in range(5))
OUT = {"out_name": "out.yaml"}
RUN = ["--robot", "nt_robot", "--data", "{tmp}/d.csv", "--out", "{out}", "--no-progress", "-q"]
EXC = ["excite", "--robot", "nt_robot", "--out", "{out}", "--no-progress"]

CASES = [
    # --- degenerate data
    Case("all-zero-efforts", RUN, "the effort of joint 1 (tau1) is all zero over all 10001 samples",
         files={"d.csv": csv(lambda t, q, tau: (t, q, 0 * tau))}, subprocess=True, **OUT),
    Case("constant-effort", RUN, "the effort of joint 2 (tau2) is constant at 5",
         files={"d.csv": csv(lambda t, q, tau: (t, q, np.column_stack((tau[:, 0], np.full(len(t), 5.0), tau[:, 2]))))},
         **OUT),
    Case("outside-limits", RUN, "d.csv: line 502: q1 = ", files={"d.csv": csv(
        lambda t, q, tau: (t, q + np.where(np.arange(len(t)) >= 500, 1.0, 0.0)[:, None] * [1, 0, 0], tau))},
         subprocess=True, **OUT),
    Case("degrees", RUN, "is outside joint 1's limits [-0.7, 1.5] rad of robot nt_robot",
         files={"d.csv": csv(lambda t, q, tau: (t, np.degrees(q), tau))}, **OUT),
    Case("too-few", RUN, "too few samples: 60", files={"d.csv": csv(n=60)}, **OUT),
    Case("too-short", RUN, "too short: the usable data cover", files={"d.csv": csv(n=400)}, **OUT),
    Case("still-joint", RUN, "the data do not excite all parameters", files={"d.csv": csv(still_joint_2)}, **OUT),
    Case("poorly-excited", RUN + ["--max-condition", "5"], "the data barely excite some parameters: condition number",
         files={"d.csv": csv()}, **OUT),
    Case("negative-effort-sign", RUN, "the fitness of joint(s) 1", files={"d.csv": csv(
        lambda t, q, tau: (t, q, -tau))}, **OUT),
    Case("ols-unphysical", RUN + ["--method", "ols"], "the ols estimate cannot be used: m_x = ",
         files={"d.csv": csv(lambda t, q, tau: (t, q, -tau))}, **OUT),
    Case("strict-time", RUN + ["--strict-time"], "duplicate timestamp", files={"d.csv": csv(
        lambda t, q, tau: (np.where(np.arange(len(t)) == 300, t - 1e-3, t), q, tau))}, **OUT),
    Case("all-same-time", RUN, "too few samples in time order: 1", files={"d.csv": csv(
        lambda t, q, tau: (0 * t, q, tau))}, **OUT),
    # --- unreadable or malformed files
    Case("missing", RUN, "d.csv: data file not found", **OUT),
    Case("directory", ["--robot", "nt_robot", "--data", "{tmp}", "--out", "{out}"], "a directory", **OUT),
    Case("dev-zero", ["--robot", "nt_robot", "--data", "/dev/zero", "--out", "{out}"],
         "/dev/zero: a character device, not a data file", subprocess=True, **OUT),
    Case("sparse-10GB", RUN, "d.csv:1: line longer than 64 kB", files={"d.csv": sparse(10 << 30)}, **OUT),
    Case("not-utf8", RUN, "d.csv: not UTF-8 text: byte 0xe9", files={"d.csv": HEAD.encode() + b"# caf\xe9\n"}, **OUT),
    Case("empty", RUN, "d.csv: empty file", files={"d.csv": ""}, **OUT),
    Case("header-only", RUN, "d.csv: 0 data rows, need at least 1", files={"d.csv": HEAD}, **OUT),
    Case("missing-column", RUN, "d.csv:1: missing column 'tau3'", files={"d.csv": HEAD.replace(",tau3", "") + "0,0,0,0,0,0\n"},
         **OUT),
    Case("duplicate-column", RUN, "d.csv:1: column 'q1' appears twice in the header", files={"d.csv": HEAD.replace("\n", ",q1\n")}, **OUT),
    Case("nan", RUN, "d.csv:4: column 'tau2': not a finite number: 'nan'", files={"d.csv": HEAD + "0,0.4,0.4,0.4,1,2,3\n0.001,0.4,0.4,0.4,1,2,3\n0.002,0.4,0.4,0.4,1,nan,3\n"}, **OUT),
    Case("inf", RUN, "d.csv:2: column 'q3': not a finite number: 'inf'", files={"d.csv": HEAD + "0,0.4,0.4,inf,1,2,3\n" + ROWS}, **OUT),
    Case("text", RUN, "d.csv:2: column 'q2': not a number: 'abc'", files={"d.csv": HEAD + "0,0.4,abc,0.4,1,2,3\n"}, **OUT),
    Case("short-row", RUN, "d.csv:3: column 'tau3' is missing: the row has 6 fields, the header 7", files={"d.csv": HEAD + "0,0.4,0.4,0.4,1,2,3\n0,1,2,3,4,5\n"},
         **OUT),
    Case("too-many-rows", RUN + ["--stream", "never"], f"more than {MAX_SAMPLES} data rows", files={"d.csv": too_many_rows},
         **OUT),
    Case("current-csv", RUN + ["--effort", "current"], "CSV files hold torques", files={"d.csv": csv(n=200)}, **OUT),
    Case("validate-bad", RUN + ["--validate", "{tmp}/v.csv"], "v.csv: not UTF-8", files={"d.csv": csv(), "v.csv": b"\xff"},
         **OUT),
    Case("robot-bad", ["--robot", "{tmp}/r.yaml", "--data", "{tmp}/d.csv", "--out", "{out}"], "r.yaml: is empty",
         files={"r.yaml": "", "d.csv": HEAD + ROWS}, **OUT),
    Case("out-dir", ["--robot", "nt_robot", "--data", "{tmp}/d.csv", "--out", "{tmp}", "-q"],
         "is a directory; give a file name", files={"d.csv": csv()}, **OUT),
    # special files (bad_input_harness.SPECIALS): refused by name before any work; a FIFO never
    # blocks (a real subprocess: its timeout fails a regression instead of hanging)
    *[Case(f"data-{k}", RUN, f"d.csv: {w}", files={"d.csv": m}, subprocess=k == "fifo", **OUT)
      for k, (m, w) in SPECIALS.items() if k != "directory"],
    *[Case(f"robot-{k}", ["--robot", "{tmp}/r.yaml", "--data", "{tmp}/d.csv", "--out", "{out}"], f"r.yaml: {w}",
           files={"r.yaml": m, "d.csv": HEAD + ROWS}, subprocess=k == "fifo", **OUT) for k, (m, w) in SPECIALS.items()],
    *[Case(f"out-{k}", ["--robot", "nt_robot", "--data", "{tmp}/d.csv", "--out", "{tmp}/o.yaml"],
           f"o.yaml: {w}", files={"d.csv": HEAD + ROWS, "o.yaml": m}, **OUT)
      for k, (m, w) in OUTPUT_SPECIALS.items()],
    Case("report-file", RUN + ["--report", "{out}"], "is a regular file, not a folder", files={"d.csv": HEAD + ROWS}, **OUT),
    Case("bag-storage-fifo", ["--robot", "nt_robot", "--data", "{tmp}/bag", "--out", "{out}"],
         "bag_0.db3: a FIFO (named pipe), not a rosbag2 storage file", files={"bag": lambda p: (
             p.mkdir(), (p / "metadata.yaml").write_text(
                 "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n"
                 "  relative_file_paths: [bag_0.db3]\n"), os.mkfifo(p / "bag_0.db3"))},
         subprocess=True, **OUT),
    # --- options
    *[Case(f"option{opt}-{val}", RUN + [opt, val], f"argument {opt}: {msg}", files={"d.csv": HEAD + ROWS}, **OUT)
      for opt, val, msg in [
          ("--trim", "-1", "must be >= 0, got -1"),
          ("--dls-damping", "-1", "must be >= 0, got -1"),
          ("--cutoff", "0", "must be > 0 Hz"),
          ("--cutoff", "nan", "not a finite number"),
          ("--filter-order", "0", "must be >= 1"),
          ("--filter-order", "11", "must be <= 10"),
          ("--decimate", "0", "must be >= 1"),
          ("--decimate", "5000", "must be <= 1000"),
          ("--rate", "0", "must be > 0 Hz"),
          ("--rate", "1e7", "must be <= 1e+06 Hz"),
          ("--gap-factor", "1", "must be > 1"),
          ("--rank-tol", "0", "must be > 0"),
          ("--rank-tol", "1", "must be < 1"),
          ("--tsvd-tol", "1", "must be < 1"),
          ("--forgetting", "0", "must be > 0"),
          ("--forgetting", "1.5", "must be <= 1"),
          ("--pso-particles", "1", "must be >= 2"),
          ("--pso-particles", "1e9", "not an integer"),
          ("--pso-neighbours", "3", "must be even"),
          ("--pso-iterations", "0", "must be >= 1"),
          ("--pso-iterations", "100000000", "must be <= 100000"),
          ("--pso-samples", "-1", "must be >= 0"),
          ("--seed", "-1", "must be >= 0"),
          ("--max-condition", "0.5", "must be >= 1"),
          ("--min-duration", "-1", "must be >= 0 s"),
      ]],
    Case("pso-neighbours-gt-particles", RUN + ["--pso-particles", "10", "--pso-neighbours", "20"],
         "--pso-neighbours 20 must be at most --pso-particles 10", files={"d.csv": HEAD + ROWS}, **OUT),
    Case("cutoff-nyquist", RUN + ["--cutoff", "900"], "is not below the Nyquist frequency", files={"d.csv": csv()}, **OUT),
    Case("rate-grid", RUN + ["--rate", "1e6", "--resample", "always", "--trim", "2"],
         "resampling 10 s at 1e+06 Hz gives more than 1000000 samples", files={"d.csv": csv()}, **OUT),
    # --- excite
    Case("excite-period-0", EXC + ["--period", "0"], "argument --period: must be >= 0.1 s", out_name="out.csv"),
    Case("excite-dt-0", EXC + ["--dt", "0"], "argument --dt: must be >= 1e-06 s", out_name="out.csv"),
    Case("excite-harmonics", EXC + ["--harmonics", "1000"], "argument --harmonics: must be <= 50", out_name="out.csv"),
    Case("excite-samples", EXC + ["--cycles", "10000", "--period", "1000"], "gives 10000000001 samples, more than",
         out_name="out.csv", subprocess=True),
    Case("excite-scale", EXC + ["--scale", "2"], "argument --scale: must be <= 1", out_name="out.csv"),
    Case("excite-starts", EXC + ["--starts", "0"], "argument --starts: must be >= 1", out_name="out.csv"),
    Case("excite-robot", ["excite", "--robot", "/dev/zero", "--out", "{out}"],
         "/dev/zero: a character device, not a robot file", out_name="out.csv"),
    Case("excite-robot-fifo", ["excite", "--robot", "{tmp}/r.yaml", "--out", "{out}"],
         "r.yaml: a FIFO (named pipe), not a robot file", files={"r.yaml": SPECIALS["fifo"][0]},
         out_name="out.csv", subprocess=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(tmp_path, case):
    check_case(case, tmp_path, "delta-identify", main, "delta_dynamics.identification.cli")
