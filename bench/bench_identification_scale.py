"""Identification of an hour at 1 kHz in bounded memory: wall time and peak memory of
``delta-identify`` on 3.6 million samples (MCAP, sqlite3 and CSV), streamed, against the
in-memory fit on 10^6 samples.

Data: the "true" nt_robot (lumped parameters perturbed by up to 20 %, per-joint friction)
runs the optimised excitation trajectory of bench_identification.py for ``--minutes`` at
1 kHz; exact torques by inverse dynamics over one 5 s period, repeated, positions quantised
to 2^17 counts/rev, 1 % torque noise. Every run is a separate ``delta-identify`` process
under ``/usr/bin/time -v`` (peak resident memory: "Maximum resident set size"; CPU time, user +
system, which a busy host changes far less than the wall time).

``python bench/bench_identification_scale.py [--minutes 60] [--formats mcap,sqlite3,csv]
[--in-memory 1000000] [--workdir DIR]``; prints a table and writes
bench/results/identification_scale.md (with the load average it ran at).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from _machine import describe  # noqa: E402
from delta_core.robot_file import load_robot  # noqa: E402
from delta_dynamics.identification import synthetic  # noqa: E402
from delta_dynamics.data_files.bag import joint_state_cdr  # noqa: E402
from delta_dynamics.identification.excitation import FourierTrajectory  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402

from bench_identification import EXCITE  # noqa: E402

TARGET_MB = 500.0
CHUNK = 50_000


def motion(minutes: float, rate: float = 1000.0):
    """(t, q, tau) chunks of ``minutes`` of the excitation at ``rate`` Hz (see the module docstring)."""
    model = RotaryModel.from_robot("nt_robot")
    truth = synthetic.perturbed_model(model, spread=0.2, seed=1)
    period, q0, a, b = EXCITE
    tr = FourierTrajectory(period, np.array(q0), np.array(a), np.array(b))
    one, _ = synthetic.open_loop_data(truth, tr, duration=period, dt=1.0 / rate, noise=0.0, counts_per_rev=None)
    per = int(round(period * rate))
    q1, tau1 = one.q[:per], one.tau[:per]
    rms = np.sqrt(np.mean(tau1 ** 2, axis=0))
    n = int(round(minutes * 60 * rate))
    rng = np.random.default_rng(0)
    step = 2 * np.pi / 2 ** 17
    for k0 in range(0, n, CHUNK):
        k = np.arange(k0, min(n, k0 + CHUNK))
        q = np.round(q1[k % per] / step) * step
        tau = tau1[k % per] + 0.01 * rms * rng.standard_normal((len(k), 3))
        yield k / rate, q, tau


def write_bag(path, minutes, storage):
    from rosbags.rosbag2 import StoragePlugin, Writer

    from delta_dynamics.data_files.bag import typestore
    names = list(load_robot("nt_robot").joint_names)
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conn = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=typestore())
        for t, q, tau in motion(minutes):
            ns = 1_700_000_000_000_000_000 + np.round(t * 1e9).astype(np.int64)
            for stamp, raw in zip(ns.tolist(), joint_state_cdr(ns, names, q, tau)):
                w.write(conn, stamp, raw)


def write_csv(path, minutes):
    with open(path, "w") as f:
        f.write("t,q1,q2,q3,tau1,tau2,tau3\n")
        for t, q, tau in motion(minutes):
            np.savetxt(f, np.column_stack((t, q, tau)), fmt="%.9g", delimiter=",")


def timed(argv) -> dict:
    """Run ``argv`` under /usr/bin/time -v: wall s, peak RSS MB, exit code, stdout."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr))
    err = "\n".join(line for line in p.stderr.splitlines() if not line.startswith("\t") and "Command being timed" not in line)
    return {"wall": wall, "cpu": cpu, "rss": int(m.group(1)) / 1024 if m else float("nan"), "code": p.returncode,
            "out": p.stdout, "err": err}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--formats", default="mcap,sqlite3,csv")
    ap.add_argument("--in-memory", type=int, default=1_000_000, help="samples of the in-memory comparison (0: none)")
    ap.add_argument("--workdir", help="where the data go (default: a temporary directory, removed)")
    args = ap.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("needs /usr/bin/time (GNU time: apt-get install time)")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="delta_ident_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    exe = str(Path(sys.executable).with_name("delta-identify"))
    load0 = os.getloadavg()
    rows = []
    try:
        runs = []
        for fmt in args.formats.split(","):
            path = work / (f"hour_{fmt}" if fmt != "csv" else "hour.csv")
            t0 = time.perf_counter()
            if not path.exists():
                write_csv(path, args.minutes) if fmt == "csv" else write_bag(path, args.minutes, fmt)
            print(f"{fmt}: data written in {time.perf_counter() - t0:.0f} s", flush=True)
            runs.append((f"{args.minutes:g} min at 1 kHz ({int(args.minutes * 60000)} samples), {fmt}, streamed", path,
                         ["--stream", "auto"]))
        if args.in_memory:
            path = work / "in_memory.csv"
            if not path.exists():
                write_csv(path, args.in_memory / 60000.0)
            runs.append((f"{args.in_memory / 1000:g} s at 1 kHz ({args.in_memory} samples), csv, in memory", path,
                         ["--stream", "never"]))
            runs.append((f"{args.in_memory / 1000:g} s at 1 kHz ({args.in_memory} samples), csv, streamed", path,
                         ["--stream", "always"]))
        for label, path, extra in runs:
            r = timed([exe, "--robot", "nt_robot", "--data", str(path), "--method", "bounded", "--no-progress",
                       "-q", *extra])
            n = re.search(r"(\d+) samples", r["out"])
            ok = "ok" if r["code"] == 0 else f"exit {r['code']}: {r['err'].strip().splitlines()[0] if r['err'] else ''}"
            fit = re.search(r"fitness on the fitting data:\s+([\d. ]+)", r["out"])
            rows.append((label, f"{r['wall']:.0f} s", f"{r['cpu']:.0f} s", f"{r['rss']:.0f} MB",
                         fit.group(1).strip() if fit else "-", ok))
            print(" | ".join(rows[-1]), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()
    md = ["| run | wall time | CPU time (user + sys) | peak RSS | fitness τ1 τ2 τ3 | |", "|---|---|---|---|---|---|"]
    md += [f"| {' | '.join(r)} |" for r in rows]
    md += ["", f"Target: peak RSS <= {TARGET_MB:g} MB for the hour, time linear in the samples.",
           f"Machine: {describe()}; load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end."]
    text = "\n".join(md)
    print(text)
    out = HERE / "results" / "identification_scale.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("# delta-identify at scale (bench/bench_identification_scale.py)\n\n" + text + "\n")
    bad = [r for r in rows if "streamed" in r[0] and float(r[3].split()[0]) > TARGET_MB]
    return 1 if bad or any(r[5] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
