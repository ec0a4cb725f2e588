"""``delta-calibrate``: fit a robot's per-arm geometry to measured poses; choose poses; Klipper
configs in and out.

    delta-calibrate --robot <name|file> --measurements M.csv --out calibrated.yaml
                    [--parameters NAME ...] [--report DIR] [--no-robust]
    delta-calibrate poses --robot <name|file> --count N --out poses.csv [--heights [--height Z]]
    delta-calibrate from-klipper printer.cfg --out robot.yaml [--template <linear robot>]
    delta-calibrate to-klipper robot.yaml [--out printer.cfg]          (delta and rotary_delta)

Measurements (:mod:`delta_dynamics.calibration.data`): ``positions`` (q1,q2,q3,x,y,z) or
``heights`` (q1,q2,q3,z). Bad input (a missing file, a FIFO, a directory, a symlink loop, a
bad row, an unknown parameter, a pose whose chains cannot meet) ends with
``delta-calibrate: error: <message>`` on stderr and exit status 2, nothing written. Every file
is written atomically. Equations: ``docs/calibration.md``.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import sys

import numpy as np

from delta_core.atomic_file import atomic_write_text
from delta_core.paths import PathError, check_output_dir, check_output_file, check_readable_file
from delta_core.robot_file import RobotFileError, load_robot, parse_robot, save_robot
from delta_core.termination import run_terminable
from delta_core.text_input import TextInputError, read_text
from delta_dynamics.algorithms import UnreachableError
from delta_dynamics.calibration.data import Measurements, read_measurements
from delta_dynamics.calibration.fit import CalibrationError, calibrate
from delta_dynamics.calibration.klipper import (MAX_CONFIG_BYTES, KlipperError, KlipperRotaryDelta, format_klipper,
                                                klipper_from_robot, parse_klipper, robot_from_klipper,
                                                robot_from_klipper_rotary)
from delta_dynamics.calibration.poses import advise, choose_poses
from delta_dynamics.data_files.csv_io import CsvError, write_csv
from delta_dynamics.kinds import model_for

PROG = "delta-calibrate"
#: The robot of each kind whose masses, friction and limits ``from-klipper`` takes by default.
DEFAULT_TEMPLATE = {"linear": "colombo2020", "rotary": "nt_robot"}
#: Most poses ``poses --count`` chooses.
MAX_COUNT = 1000


class _Exit(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _load(robot: str):
    """A robot file by preset name or path (a path is checked first: FIFO, directory, loop)."""
    if os.sep in robot or robot.endswith((".yaml", ".yml")) or os.path.exists(robot):
        check_readable_file(robot, "a robot file")
    return load_robot(robot)


def select_parameters(names, patterns) -> tuple:
    """The parameter names matching any of ``patterns`` (exact names or shell patterns such as
    ``joint_offset_*``), in the model's order; an unmatched pattern is an error."""
    if not patterns:
        return tuple(names)
    out = []
    for pat in patterns:
        hit = [n for n in names if fnmatch.fnmatchcase(n, pat)]
        if not hit:
            raise _Exit(f"--parameters: {pat!r} names no parameter; they are {', '.join(names)}")
        out += hit
    return tuple(n for n in names if n in set(out))


def calibrated_robot(m, p, result, source: str):
    """The robot file of ``m.robot`` with the geometry of ``p`` and a ``metadata.calibration``
    summary (validated by the parser)."""
    d = m.robot.to_dict()
    d["geometry"] = m.chains.geometry_section(m.robot, p)
    meta = dict(d.get("metadata") or {})
    meta["calibration"] = {"measurements": source, "kind": result.kind, "poses": int(len(result.residual_before)),
                           "rms_before_m": float(f"{result.rms_before:.6g}"),
                           "rms_after_m": float(f"{result.rms_after:.6g}"),
                           "unidentifiable": list(result.ident.unidentifiable)}
    d["metadata"] = meta
    return parse_robot(d, source=str(m.robot.source or m.robot.name))


def _fmt(v: float, unit: str) -> str:
    return f"{v * 1e3:+.4f} mm" if unit == "m" else f"{np.degrees(v):+.5f} deg"


def advice_lines(unidentifiable, advice, kind: str) -> list:
    """The report's lines on what the data leave unidentifiable (kept at nominal), with
    :func:`~delta_dynamics.calibration.poses.advise`'s answer: the combinations no pose of this
    kind identifies, and the tool points whose measurement would identify the others."""
    lines = [f"  not identifiable from any {kind} poses (kept at nominal): {u}" for u in advice.structural]
    more = len(unidentifiable) - len(advice.structural)
    if more > 0:
        text = f"  {more} more combination(s) not identifiable from these poses (kept at nominal)"
        if advice.gained:
            pts = ", ".join(f"({x:.4f}, {y:.4f}, {z:.4f})" for x, y, z in advice.poses)
            some = "them" if advice.gained >= more else f"{advice.gained} of them"
            text += f"; measuring also at these tool points (m, base_link) would identify {some}: {pts}"
        lines.append(text)
    if advice.by_positions:
        lines.append(f"  measured positions (x, y, z) instead of heights would identify {advice.by_positions} of "
                     f"those not identifiable from any heights poses")
    return lines


def summary(m, result, advice=None) -> str:
    """The text report: residuals, parameter changes with their standard deviations,
    identifiability and, with ``advice``, what more measurements would identify."""
    ch = m.chains
    lines = [f"poses: {len(result.residual_before)} ({result.kind}), residual RMS {result.rms_before * 1e3:.4f} mm "
             f"-> {result.rms_after * 1e3:.4f} mm ({result.rms_inliers * 1e3:.4f} mm without the outliers); "
             f"noise estimate {result.noise * 1e3:.4f} mm",
             f"identifiable combinations: {result.ident.rank} of {len(result.ident.free)} parameters "
             f"(singular values {result.ident.singular_values.max():.3g} .. "
             f"{result.ident.singular_values[:max(result.ident.rank, 1)].min():.3g})"]
    if advice is None:
        lines += [f"  not identifiable from these data (kept at nominal): {u}" for u in result.ident.unidentifiable]
    else:
        lines += advice_lines(result.ident.unidentifiable, advice, result.kind)
    if result.outliers:
        lines.append("outlier poses (down-weighted): " + ", ".join(str(i + 1) for i in result.outliers))
    lines.append(f"{'parameter':<22} {'change':>14} {'std dev':>14}")
    for name, a, b, dv, sd in result.changes():
        u = ch.unit(name)
        sds = _fmt(sd, u).lstrip("+") if sd > 0 else "-"
        lines.append(f"{name:<22} {_fmt(dv, u):>14} {sds:>14}")
    return "\n".join(lines)


def write_report(directory: str, m, result, meas, advice=None) -> None:
    """``DIR/summary.txt``, ``DIR/residuals.csv`` and ``DIR/residuals.png`` (per pose, before
    and after)."""
    import matplotlib                  # heavy: the report only
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    check_output_dir(directory, "the report")
    os.makedirs(directory, exist_ok=True)
    atomic_write_text(os.path.join(directory, "summary.txt"), summary(m, result, advice) + "\n")
    n = len(result.residual_before)
    write_csv(check_output_file(os.path.join(directory, "residuals.csv"), "a residual file"),
              ("pose", "before_m", "after_m"),
              np.column_stack((np.arange(1, n + 1), result.residual_before, result.residual_after)))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    k = np.arange(1, n + 1)
    ax.bar(k - 0.2, result.residual_before * 1e3, 0.4, label="before (nominal geometry)")
    ax.bar(k + 0.2, result.residual_after * 1e3, 0.4, label="after calibration")
    ax.set_xlabel("pose")
    ax.set_ylabel("residual |measured - predicted| (mm)")
    ax.set_yscale("log")
    ax.set_title(f"{m.robot.name}: {result.kind} residual per pose")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    png = check_output_file(os.path.join(directory, "residuals.png"), "a plot")
    tmp = os.path.join(directory, f".residuals.{os.getpid()}.png")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, png)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


def run_calibrate(argv) -> int:
    """``delta-calibrate``: fit the per-arm geometry of a robot file to measured poses (``--measurements``, SI
    units) and write the calibrated robot file (``--out``) and optionally a report; the exit status."""
    ap = argparse.ArgumentParser(prog=PROG, description="Fit the per-arm geometry of a robot file to measured "
                                 "poses (positions: q1,q2,q3,x,y,z; heights: q1,q2,q3,z).")
    ap.add_argument("--robot", required=True, help="preset name or robot file")
    ap.add_argument("--measurements", required=True, help="CSV of positions or heights (SI units)")
    ap.add_argument("--out", required=True, help="calibrated robot file to write")
    ap.add_argument("--parameters", nargs="+", metavar="NAME",
                    help="parameters to fit (names or patterns such as 'joint_offset_*'; default: all)")
    ap.add_argument("--report", metavar="DIR", help="write summary.txt, residuals.csv and residuals.png here")
    ap.add_argument("--no-robust", action="store_true", help="plain least squares (no outlier down-weighting)")
    args = _parse(ap, argv)
    check_output_file(args.out, "a robot file")
    if args.report:
        check_output_dir(args.report, "the report")
    m = model_for(_load(args.robot))
    meas = read_measurements(args.measurements)
    free = select_parameters(m.chains.names, args.parameters)
    result = calibrate(m.chains, m.chains.parameters(m.robot), meas, free=free, robust=not args.no_robust)
    robot = calibrated_robot(m, result.p, result, os.fspath(args.measurements))
    advice = None
    if result.ident.unidentifiable:
        height = float(np.median(meas.values[:, 0])) if meas.kind == "heights" else 0.0
        try:
            advice = advise(m, meas.q, meas.kind, height, free=free)
        except UnreachableError:                    # no candidate poses on that surface: no advice, the fit stands
            advice = None
    print(summary(m, result, advice))
    if args.report:
        write_report(args.report, m, result, meas, advice)
    save_robot(robot, args.out, header=f"calibrated by delta-calibrate from {args.measurements}")
    print(f"wrote {args.out}")
    return 0


def run_poses(argv) -> int:
    """``delta-calibrate poses``: choose ``--count`` measurement poses that make the geometry identifiable and write
    them as a CSV of q1,q2,q3,x,y,z (m, or rad for a rotary robot's joints); the exit status."""
    ap = argparse.ArgumentParser(prog=f"{PROG} poses", description="Choose measurement poses that make the "
                                 "geometry identifiable (maximise the smallest singular value).")
    ap.add_argument("--robot", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True, help="CSV of q1,q2,q3,x,y,z (nominal tool points)")
    ap.add_argument("--heights", action="store_true", help="probe poses on a surface (printers)")
    ap.add_argument("--height", type=float, default=0.0, help="the surface's height in base_link, m")
    ap.add_argument("--seed", type=int, default=0)
    args = _parse(ap, argv)
    if not 3 <= args.count <= MAX_COUNT:
        raise _Exit(f"--count must be within [3, {MAX_COUNT}], got {args.count}")
    check_output_file(args.out, "a pose file")
    m = model_for(_load(args.robot))
    d = choose_poses(m, args.count, "heights" if args.heights else "positions", args.height, args.seed)
    write_csv(args.out, ("q1", "q2", "q3", "x", "y", "z"), np.column_stack((d.q, d.X)))
    print(f"{len(d.q)} poses, smallest singular value {d.smallest_singular_value:.4g}")
    for u in d.unidentifiable:
        print(f"  not identifiable from such poses: {u}")
    print(f"wrote {args.out}")
    return 0


def run_from_klipper(argv) -> int:
    """``delta-calibrate from-klipper``: a robot file from a Klipper ``printer.cfg`` (``delta`` or ``rotary_delta``),
    masses, friction and drive limits taken from ``--template``; the exit status."""
    ap = argparse.ArgumentParser(prog=f"{PROG} from-klipper", description="A robot file from a Klipper "
                                 "printer.cfg ([printer] kinematics: delta or rotary_delta).")
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--template", default=None,
                    help="robot file of the same kind for masses, friction and drive limits (default "
                         + ", ".join(f"{v} for {k}" for k, v in DEFAULT_TEMPLATE.items()) + ")")
    ap.add_argument("--name", default=None, help="the robot's name (default klipper_delta / klipper_rotary_delta)")
    args = _parse(ap, argv)
    check_output_file(args.out, "a robot file")
    check_readable_file(args.config, "a Klipper config")
    text = read_text(args.config, MAX_CONFIG_BYTES, "a Klipper config")
    k = parse_klipper(text, args.config)
    kind = "rotary" if isinstance(k, KlipperRotaryDelta) else "linear"
    template = _load(args.template or DEFAULT_TEMPLATE[kind])
    if model_for(template).kind != kind:
        raise _Exit(f"--template {args.template}: a {model_for(template).kind} robot; this config is a {kind} delta")
    if kind == "rotary":
        data = robot_from_klipper_rotary(k, template, args.name or "klipper_rotary_delta", args.config)
    else:
        data = robot_from_klipper(k, template.to_dict(), args.name or "klipper_delta", args.config)
    robot = parse_robot(data, args.out)
    save_robot(robot, args.out, header=f"from Klipper config {args.config} by delta-calibrate from-klipper")
    print(f"wrote {args.out}")
    return 0


def run_to_klipper(argv) -> int:
    """``delta-calibrate to-klipper``: the Klipper ``[printer]``/``[stepper_*]`` values of a robot file (mm, deg), to
    ``--out`` or standard output; the exit status."""
    ap = argparse.ArgumentParser(prog=f"{PROG} to-klipper", description="Klipper [printer]/[stepper_*] values "
                                 "of a robot file (linear: delta; rotary: rotary_delta).")
    ap.add_argument("robot")
    ap.add_argument("--out", help="file to write (default: standard output)")
    args = _parse(ap, argv)
    if args.out:
        check_output_file(args.out, "a Klipper config")
    m = model_for(_load(args.robot))
    k, notes = klipper_from_robot(m)
    text = format_klipper(k, notes, header=f"delta_robot {m.robot.name}: Klipper values (mm, deg)") + "\n"
    for n in notes:
        print(f"{PROG}: note: {n}", file=sys.stderr)
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def _parse(ap, argv):
    try:
        return ap.parse_args(argv)
    except SystemExit as e:
        raise _Exit("", int(e.code or 0)) from None


COMMANDS = {"poses": run_poses, "from-klipper": run_from_klipper, "to-klipper": run_to_klipper}


def main(argv=None) -> int:
    """Entry point of ``delta-calibrate``; the exit status."""
    return run_terminable(PROG, _main, argv)


def _main(argv) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            return COMMANDS[argv[0]](argv[1:])
        return run_calibrate(argv)
    except _Exit as e:
        if str(e):
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.code
    except (CalibrationError, KlipperError, RobotFileError, CsvError, PathError, TextInputError,
            ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"{PROG}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
