"""``delta-identify``: refit a robot's dynamic parameters from recorded joint data.

    delta-identify --robot <name|file> --data <csv|bag> [--topic /joint_states]
                   [--method ols|wls|bounded|tsvd|dls|rls|pso|all] [--validate <csv|bag>]
                   [--out identified.yaml] [--report out/ident]
    delta-identify excite --robot <name|file> --out excite.csv [--period 5 --harmonics 5 ...]
                          [--from config/excitation/<robot>.yaml] [--save coefficients.yaml]

Bad input (missing file, topic, joints, effort, NaN samples, too few samples or too short a
run, a constant effort, positions outside the joint limits, data that do not excite the
parameters, an estimate that is not physical, an option outside its range, ...) ends with
``delta-identify: error: <message>`` on stderr and exit status 2, no file written; a file
that cannot be written with status 1; SIGTERM / SIGHUP with 143 / 129 and no temporary
file left. See docs/identification.md.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from delta_core.atomic_file import atomic_write_text
from delta_core.progress import Progress, progress_mode
from delta_core.robot_file import RobotFileError, load_robot
from delta_core.termination import run_terminable
from delta_dynamics.algorithms import joint_units, parameter_set
from delta_dynamics.cli.args import float_in, int_in, sample_time
from delta_dynamics.data_files.bag import is_bag
from delta_dynamics.kinds import model_for
from delta_dynamics.limits import MAX_SAMPLES

from . import IdentificationError
from .preprocess import MAX_DECIMATE, MAX_RESAMPLE_RATE, Preprocessing, preprocess
from .estimators import METHODS
from .excitation import design_excitation, load_excitation, save_excitation, write_trajectory_csv
from .pipeline import MAX_CONDITION, Options, build_problem, identify, result_problems
from .report import write_report
from .robot_update import identified_robot, model_from_robot_file, write_robot_file
from .stream import STREAM_ABOVE, finish, identify_stream, in_memory, read_stream, stream_problem

from delta_core.paths import output_dir_arg, output_file_arg

PROG = "delta-identify"
#: Largest PSO swarm and iteration count (the default 300 x 1000 takes about a minute).
MAX_PARTICLES = 10_000
MAX_ITERATIONS = 100_000


# ----------------------------------------------------------------------------- arguments

def _identify_parser():
    """The argument parser of ``delta-identify``."""
    p = argparse.ArgumentParser(
        prog=PROG, description="Identify the dynamic parameters of a Delta robot from joint positions "
        "and efforts (CSV or rosbag2) and write an updated robot file. "
        f"'{PROG} excite --help' designs an excitation trajectory.",
        epilog="Docs: docs/identification.md")
    p.add_argument("--robot", required=True, help="robot preset name or robot file (YAML)")
    p.add_argument("--data", required=True, help="CSV file (t,q1..3,tau1..3; f1..3 for a linear Delta) or "
                                                 "rosbag2 bag (dir, .db3, .mcap)")
    p.add_argument("--topic", default="/joint_states", help="JointState topic in a bag (default /joint_states)")
    p.add_argument("--effort", choices=("torque", "current"), default="torque",
                   help="what JointState.effort holds: arm torque (N m; carriage force in N on a linear "
                        "Delta) or motor current (A; "
                        "times torque_constant * gear_ratio)")
    p.add_argument("--stamp", choices=("header", "receive"), default="header",
                   help="bag time base: message header stamp (default) or bag receive time")
    p.add_argument("--method", choices=METHODS + ("all",), default="bounded",
                   help="estimator (default bounded: LS with masses, inertias, friction >= 0); "
                        "'all' compares every method")
    p.add_argument("--params", choices=("explicit", "kim"), default="explicit",
                   help="parameter set: the explicit model's 14 lumped parameters (default; either kind "
                        "of Delta) or Kim et al.'s 11 (eq. 30; rotary Deltas)")
    p.add_argument("--stribeck", action="store_true", help="also identify the Stribeck break-away torques (explicit set)")
    p.add_argument("--validate", help="CSV or bag to validate on (not used for fitting)")
    p.add_argument("--out", type=output_file_arg, help="identified robot file to write (YAML, same schema as config/robots)")
    p.add_argument("--report", type=output_dir_arg, help="directory for PNG plots and summary.md")
    g = p.add_argument_group("preprocessing")
    g.add_argument("--derivative", choices=("filter", "central"), default="filter",
                   help="filter: zero-phase low-pass then central differences (default); central: plain central differences")
    g.add_argument("--cutoff", type=float_in(0, 1e5, unit="Hz", lo_open=True), default=20.0,
                   help="low-pass cutoff in Hz (default 20; below the data's Nyquist frequency)")
    g.add_argument("--filter-order", type=int_in(1, 10), default=4, help="Butterworth order, 1 to 10 (default 4)")
    g.add_argument("--no-parallel-filter", action="store_true",
                   help="do not pass the regressor and torques through the same filter")
    g.add_argument("--decimate", type=int_in(1, MAX_DECIMATE), default=1,
                   help=f"keep every n-th sample after filtering, 1 to {MAX_DECIMATE}")
    g.add_argument("--resample", choices=("auto", "always", "never"), default="auto",
                   help="resample irregular time stamps onto a uniform grid (default: when jitter > 5 %%)")
    g.add_argument("--rate", type=float_in(0, MAX_RESAMPLE_RATE, unit="Hz", lo_open=True),
                   help=f"resampling rate in Hz, up to {MAX_RESAMPLE_RATE:g} (default: 1 / median step)")
    g.add_argument("--gap-factor", type=float_in(1, 1e6, lo_open=True), default=5.0,
                   help="a step longer than this times the median splits the data (> 1, default 5)")
    g.add_argument("--trim", type=int_in(0, MAX_SAMPLES),
                   help="samples dropped at each segment end, >= 0 (default 2 fs / cutoff)")
    g.add_argument("--min-duration", type=float_in(0, 1e6, unit="s"), default=1.0,
                   help="least usable time in s (default 1)")
    g.add_argument("--strict-time", action="store_true", help="duplicate or backwards time stamps are errors (default: dropped and reported)")
    g = p.add_argument_group("estimators")
    g.add_argument("--rank-tol", type=float_in(0, 1, lo_open=True, hi_open=True), default=1e-6,
                   help="relative tolerance of the base-parameter rank test, in (0, 1)")
    g.add_argument("--max-condition", type=float_in(1, 1e12), default=MAX_CONDITION,
                   help=f"refuse data whose column-normalised regressor has a larger condition number "
                        f"(default {MAX_CONDITION:g}; good excitation gives 5-100)")
    g.add_argument("--hold-unidentifiable", action="store_true",
                   help="keep parameters the data do not excite at the robot file's values instead of failing")
    g.add_argument("--tsvd-tol", type=float_in(0, 1, hi_open=True), default=1e-3,
                   help="TSVD: drop singular values below this fraction of the largest, in [0, 1)")
    g.add_argument("--dls-damping", type=float_in(0, 1e6), default=1e-3,
                   help="DLS: damping relative to the largest singular value, >= 0")
    g.add_argument("--dls-prior", choices=("nominal", "zero"), default="nominal", help="DLS: damp towards the robot file's values or zero")
    g.add_argument("--forgetting", type=float_in(0, 1, lo_open=True), default=1.0,
                   help="RLS forgetting factor in (0, 1]")
    g.add_argument("--pso-particles", type=int_in(2, MAX_PARTICLES), default=300,
                   help=f"PSO swarm size N_p, 2 to {MAX_PARTICLES} (default 300)")
    g.add_argument("--pso-neighbours", type=int_in(2, MAX_PARTICLES, even=True), default=60,
                   help="PSO cyclic neighbourhood N_s (even, at most N_p; default 60)")
    g.add_argument("--pso-iterations", type=int_in(1, MAX_ITERATIONS), default=1000,
                   help=f"PSO iterations, 1 to {MAX_ITERATIONS} (default 1000)")
    g.add_argument("--pso-samples", type=int_in(0, MAX_SAMPLES), default=20000,
                   help="PSO uses at most this many samples, evenly strided (default 20000; 0: all)")
    g.add_argument("--seed", type=int_in(0, 2 ** 32 - 1), default=0, help="random seed (PSO), 0 to 2^32 - 1")
    p.add_argument("--stream", choices=("auto", "always", "never"), default="auto",
                   help="read and fit a block at a time, in bounded memory (auto: data sets of more than "
                        f"{STREAM_ABOVE} samples; never: the whole regressor in memory, at most "
                        f"{MAX_SAMPLES} samples)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar and no timing lines")
    p.add_argument("--progress", action="store_true", help="progress bars even when stderr is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the result tables")
    return p


def _excite_parser():
    """The argument parser of ``delta-identify excite``."""
    p = argparse.ArgumentParser(
        prog=f"{PROG} excite", description="Design an excitation trajectory (finite Fourier series in joint "
        "space, optimised for the regressor's condition number, inside every limit) and write it as a "
        "platform trajectory CSV (t,x,y,z,xd,yd,zd,xdd,ydd,zdd) like 'delta-dynamics trajectory'.")
    p.add_argument("--robot", required=True, help="robot preset name or robot file")
    p.add_argument("--out", required=True, type=output_file_arg, help="trajectory CSV to write")
    p.add_argument("--period", type=float_in(0.1, 1000, unit="s"), default=5.0,
                   help="period of the Fourier series in s, 0.1 to 1000 (default 5)")
    p.add_argument("--harmonics", type=int_in(1, 50), default=5, help="number of harmonics, 1 to 50 (default 5)")
    p.add_argument("--cycles", type=int_in(1, 10000), default=4, help="periods written to the CSV (default 4)")
    p.add_argument("--dt", type=sample_time, default=1e-3, help="sample time of the CSV in s (default 0.001)")
    p.add_argument("--scale", type=float_in(0, 1, lo_open=True), default=0.8,
                   help="fraction of the velocity, acceleration, torque (force) limits to use, in (0, 1] "
                        "(default 0.8)")
    p.add_argument("--margin", type=float_in(0, 1, unit="rad"), default=0.05,
                   help="distance from the position limits in rad (m for a linear Delta; default 0.05)")
    p.add_argument("--min-measure", type=float_in(0, 1, hi_open=True), default=0.05,
                   help="lowest singularity measure allowed, in [0, 1) (default 0.05)")
    p.add_argument("--params", choices=("explicit", "kim"), default="explicit", help="parameter set to optimise for")
    p.add_argument("--starts", type=int_in(1, 100), default=3, help="random starts of the optimiser, 1 to 100 (default 3)")
    p.add_argument("--maxiter", type=int_in(1, 10000), default=60,
                   help="optimiser iterations per start, 1 to 10000 (default 60)")
    p.add_argument("--seed", type=int_in(0, 2 ** 32 - 1), default=0, help="random seed")
    p.add_argument("--from", dest="load", metavar="FILE",
                   help="take the coefficients from an excitation file (e.g. config/excitation/nt_robot.yaml) "
                        "instead of optimising: the same trajectory on every machine (the optimiser's end "
                        "point depends on the machine's floating point)")
    p.add_argument("--save", metavar="FILE", help="also write the coefficients as an excitation file (YAML)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar and no timing line")
    p.add_argument("--progress", action="store_true", help="progress bar even when stderr is not a terminal")
    p.add_argument("--coefficients", help="where to write the Fourier coefficients (YAML; default: next to "
                                          "--out, <name>.coefficients.yaml)")
    return p


class _Exit(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _progress(args, label, unit="", quiet=False, value_label="best"):
    """A :class:`delta_core.progress.Progress`: a bar on a terminal, else one line on stdout."""
    return Progress(label, unit=unit, enabled=progress_mode(args.no_progress, args.progress),
                    summary=not (args.no_progress or quiet), summary_stream=sys.stdout, value_label=value_label)


# ----------------------------------------------------------------------------- identify

def _table(header, rows) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _read(path, robot, args, what):
    """The samples of a CSV file or a bag, read a block at a time (:func:`.stream.read_stream`);
    at most MAX_SAMPLES with ``--stream never`` (the in-memory fit's limit)."""
    bag = is_bag(path)
    with _progress(args, f"reading {what}", "messages" if bag else "bytes", quiet=args.quiet) as bar:
        return read_stream(path, robot, topic=args.topic, effort=args.effort, stamp=args.stamp,
                           progress=bar, max_samples=MAX_SAMPLES if args.stream == "never" else None)


def run_identify(argv) -> int:
    """``delta-identify``: fit the parameters to the data of ``argv`` and report (and write)
    them; the exit status."""
    args = _identify_parser().parse_args(argv)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a))
    robot = load_robot(args.robot)
    model = model_from_robot_file(robot)
    units = joint_units(model)
    eu, ec = units["effort"], units["effort_column"]
    pset = parameter_set(model, args.params, stribeck=args.stribeck)
    pset.nominal(model)          # a set that cannot describe the robot (kim: per-arm) refuses it before any data is read
    pre = Preprocessing(derivative=args.derivative, cutoff=args.cutoff, order=args.filter_order,
                        parallel_filter=not args.no_parallel_filter, resample=args.resample, rate=args.rate,
                        gap_factor=args.gap_factor, trim=args.trim, decimate=args.decimate,
                        strict_time=args.strict_time, min_duration=args.min_duration)
    pre.check()
    if args.pso_neighbours > args.pso_particles:
        raise IdentificationError(f"--pso-neighbours {args.pso_neighbours} must be at most "
                                  f"--pso-particles {args.pso_particles}")
    opts = Options(params=args.params, stribeck=args.stribeck, rank_tol=args.rank_tol,
                   max_condition=args.max_condition,
                   hold_unidentifiable=args.hold_unidentifiable, tsvd_tol=args.tsvd_tol,
                   dls_damping=args.dls_damping, dls_prior=args.dls_prior, rls_forgetting=args.forgetting,
                   pso_particles=args.pso_particles, pso_neighbours=args.pso_neighbours,
                   pso_iterations=args.pso_iterations, pso_samples=args.pso_samples or None, seed=args.seed)
    opened = []
    try:
        return _identify(args, robot, model, units, eu, ec, pset, pre, opts, say, opened)
    finally:
        for d in opened:
            d.close()


def _identify(args, robot, model, units, eu, ec, pset, pre, opts, say, opened) -> int:
    """Read, fit, report and write (:func:`run_identify`'s work once the options are checked)."""
    t0 = time.perf_counter()
    sdata = _read(args.data, robot, args, "data")
    opened.append(sdata)
    svdata = None
    if args.validate:
        svdata = _read(args.validate, robot, args, "validation data")
        opened.append(svdata)
    biggest = max(len(sdata), len(svdata) if svdata is not None else 0)
    streamed = args.stream == "always" or (args.stream == "auto" and biggest > STREAM_ABOVE)
    if not streamed and biggest > MAX_SAMPLES:
        raise IdentificationError(f"{sdata.source if len(sdata) == biggest else svdata.source}: {biggest} samples, "
                                  f"more than the {MAX_SAMPLES} the in-memory fit holds (MAX_SAMPLES in "
                                  "delta_dynamics/limits.py): use --stream auto")
    if streamed:
        with _progress(args, "regressor (pass 1 of 2)", "samples", quiet=args.quiet) as bar:
            problem = stream_problem(model, sdata, pset, pre, opts, progress=bar)
        vproblem = None
        if svdata is not None:
            vproblem = stream_problem(model, svdata, pset, pre, opts, what="validation", accumulate=False)
        source = problem.source
    else:
        prepared = preprocess(in_memory(sdata), pre)
        problem = build_problem(model, prepared, pset)
        vproblem = None
        if svdata is not None:
            vproblem = build_problem(model, preprocess(in_memory(svdata), pre), pset, what="validation")
        source = prepared.source
    say(f"{PROG}: robot {robot.name} ({robot.source}), {len(problem)} samples from {source}"
        + (f", {len(vproblem)} validation samples from {vproblem.source}" if vproblem else "")
        + (" (streamed: a block at a time, the normal equations as a QR update)" if streamed else ""))
    for n in problem.notes:
        say(f"  {n}")
    if vproblem is not None:
        for n in vproblem.notes:
            if n not in problem.notes:
                say(f"  validation: {n}")
    say(f"  reading, preprocessing and regressor: {time.perf_counter() - t0:.3f} s")

    methods = list(METHODS) if args.method == "all" else [args.method]
    results = []
    for meth in methods:
        if meth == "pso":
            with _progress(args, "pso", "iterations", quiet=args.quiet) as bar:
                results.append(identify_stream(problem, meth, opts, progress=bar) if streamed else
                               identify(problem, meth, opts, validation=vproblem, progress=bar))
        else:
            results.append(identify_stream(problem, meth, opts) if streamed else
                           identify(problem, meth, opts, validation=vproblem))
    if streamed:
        with _progress(args, "metrics (pass 2 of 2)", "samples", quiet=args.quiet) as bar:
            finish(results, problem, vproblem, progress=bar)
        problem_plots, vproblem_plots = problem.thin, (vproblem.thin if vproblem is not None else None)
    else:
        problem_plots, vproblem_plots = problem, vproblem
    base = results[0].base
    say(f"\nbase parameters: rank {base.rank} of {len(base.names)}, condition number "
        f"{base.condition:.4g} (column-normalised regressor)")
    if base.dependent:
        say("  not identifiable, held at the robot file's values: " + "; ".join(base.explain_dependent()))
        say("  identifiable combinations: " + ", ".join(base.combinations()))

    def score(r):
        m = r.validation or r.fit
        f = float(sum(m["fitness"]))
        # a physical result with a finite fitness beats any other
        return (not result_problems(r, model), f if np.isfinite(f) else -np.inf)

    chosen = max(results, key=score) if len(results) > 1 else results[0]
    which = "validation" if vproblem is not None else "fitting"
    if len(results) > 1:
        rows = []
        for r in results:
            m = r.validation or r.fit
            rows.append([r.method, *(f"{v:.4f}" for v in m["fitness"]), f"{np.mean(m['rms_error']):.4g}",
                         f"{r.seconds:.3f}"])
        print(f"\nmodel fitness (Kim et al. eq. 41) on the {which} data:")
        print(_table(["method", f"{ec}_1", f"{ec}_2", f"{ec}_3", f"RMS err [{eu}]", "time [s]"], rows))
        print(f"best: {chosen.method}")
    # parameter table of the chosen result
    rows = []
    for n, u, nom, v, s in zip(chosen.names, chosen.pset.units, chosen.nominal, chosen.values, chosen.estimate.std):
        held = n in chosen.held
        rows.append([n, u, f"{nom:.6g}", f"{v:.6g}", "held" if held else (f"{s:.3g}" if math.isfinite(s) else "-"),
                     "" if held or not math.isfinite(s) or v == 0 else f"{100 * s / abs(v):.3g} %"])
    print(f"\nparameters ({chosen.method}, {chosen.pset.key} set):")
    print(_table(["parameter", "unit", "robot file", "estimate", "std", "rel. std"], rows))
    fm = chosen.fit
    print("\nfitness on the fitting data:    " + "  ".join(f"{v:.4f}" for v in fm["fitness"])
          + f"   RMS error [{eu}]: " + "  ".join(f"{v:.4g}" for v in fm["rms_error"]))
    if chosen.validation:
        vm = chosen.validation
        print("fitness on the validation data: " + "  ".join(f"{v:.4f}" for v in vm["fitness"])
              + f"   RMS error [{eu}]: " + "  ".join(f"{v:.4g}" for v in vm["rms_error"]))
    bad = result_problems(chosen, model)
    if bad:
        hint = ("Use --method bounded (the default: masses, inertias and friction >= 0) or record a "
                "richer motion" if any("< 0" in b and "fitness" not in b for b in bad) and
                chosen.method != "bounded" else "Check the data")
        shown = "; ".join(bad[:4]) + (f" (and {len(bad) - 4} more)" if len(bad) > 4 else "")
        raise IdentificationError(f"the {chosen.method} estimate cannot be used: {shown}; "
                                  f"no file written. {hint}")
    if args.out:
        new = identified_robot(robot, chosen, model, source, vproblem.source if vproblem else None)
        model_from_robot_file(new)          # the file must load again, lumped parameters included
        try:
            path = write_robot_file(args.out, new, header=f"{robot.name}: dynamic parameters identified by {PROG} "
                                                          f"({chosen.method}) from {source}")
        except OSError as e:
            raise _Exit(1, f"cannot write {args.out}: {e.strerror or e}") from None
        say(f"\nwrote {path}")
    else:
        say("\n(no --out given: no robot file written)")
    if args.report:
        try:
            files = write_report(args.report, results, problem_plots, vproblem_plots, chosen,
                                 robot_name=robot.name, data_source=source,
                                 validation_source=vproblem.source if vproblem else None,
                                 out_file=args.out, units=units)
        except OSError as e:
            raise _Exit(1, f"cannot write the report to {args.report}: {e.strerror or e}") from None
        say(f"wrote {len(files)} report files to {args.report}")
    return 0


# ----------------------------------------------------------------------------- excite

def run_excite(argv) -> int:
    """``delta-identify excite``: design an excitation trajectory (or take a stored one) and
    write it as CSV with its coefficients; the exit status."""
    args = _excite_parser().parse_args(argv)
    n = round(args.cycles * args.period / args.dt) + 1
    if n > MAX_SAMPLES:
        raise IdentificationError(f"--cycles {args.cycles} x --period {args.period:g} s at --dt {args.dt:g} s gives "
                                  f"{n} samples, more than {MAX_SAMPLES} (MAX_SAMPLES in "
                                  "delta_dynamics/limits.py): fewer cycles or a larger --dt")
    model = model_for(args.robot)
    units = joint_units(model)
    if args.load:
        res = load_excitation(args.load, model, scale=args.scale, min_measure=args.min_measure)
        args.period, args.harmonics = res.trajectory.period, res.trajectory.harmonics
        n = round(args.cycles * args.period / args.dt) + 1
        if n > MAX_SAMPLES:
            raise IdentificationError(f"--cycles {args.cycles} x the period {args.period:g} s of {args.load} at "
                                      f"--dt {args.dt:g} s gives {n} samples, more than {MAX_SAMPLES}")
    else:
        with _progress(args, "optimising", "starts", value_label="condition number") as bar:
            bar.tick()
            res = design_excitation(model, period=args.period, harmonics=args.harmonics, seed=args.seed,
                                    scale=args.scale, margin=args.margin, min_measure=args.min_measure,
                                    starts=args.starts, maxiter=args.maxiter, params=args.params,
                                    progress=lambda s, n, c: bar(s, n, c))
    if res.violations:
        raise IdentificationError("the optimised trajectory breaks limits: " + "; ".join(res.violations))
    coef_path = Path(args.coefficients) if args.coefficients else _coefficients_path(args.out)
    try:
        path = write_trajectory_csv(args.out, model, res.trajectory, dt=args.dt, cycles=args.cycles)
    except OSError as e:
        raise _Exit(1, f"cannot write {args.out}: {e.strerror or e}") from None
    if args.save:
        design = {"copied_from": str(args.load)} if args.load else dict(period=args.period, harmonics=args.harmonics, scale=args.scale,
                                           margin=args.margin, min_measure=args.min_measure, starts=args.starts,
                                           maxiter=args.maxiter, seed=args.seed, params=args.params)
        try:
            save_excitation(args.save, model, res, design, header=f"written by {PROG} excite")
        except OSError as e:
            raise _Exit(1, f"cannot write {args.save}: {e.strerror or e}") from None
    try:
        write_coefficients(coef_path, res, robot=model.robot.name, params=args.params, seed=args.seed,
                           scale=args.scale, units=units)
    except OSError as e:
        raise _Exit(1, f"cannot write {coef_path}: {e.strerror or e}") from None
    print(f"{PROG} excite: {args.cycles} x {args.period:g} s, {args.harmonics} harmonics, condition number "
          f"{res.condition:.4g} ({args.params} set, column-normalised regressor; good excitation: 5-100)"
          f"{f'; taken from {args.load}' if args.load else ''}")
    print(f"  wrote {path} (platform trajectory, {n} samples at {args.dt:g} s: run it with "
          f"'delta-ctl run {path} --wait')")
    print(f"  wrote {coef_path} (the Fourier coefficients)")
    if args.save:
        print(f"  wrote {args.save} (the excitation file: --from takes it back)")
    print()
    print(excitation_table(model, res, args.scale, units, args.margin))
    return 0


def _coefficients_path(out) -> Path:
    p = Path(out)
    return p.with_name(p.stem + ".coefficients.yaml")


def excitation_table(model, res, scale: float, units, margin: float = 0.0) -> str:
    """Per joint: the range of motion and the peak velocity, acceleration and effort against
    the robot file's limits (the optimiser keeps the peaks below ``scale`` times the limits)."""
    lim = model.robot.limits
    m = res.margins
    pu, vu, au, eu = units["position"], units["velocity"], units["acceleration"], units["effort"]
    ec = units["effort_column"]
    rows = []
    for j in range(3):
        lo, hi = lim.position[j]
        row = [str(j + 1), f"{lo + margin + _margin(m, 'position_low', j):.3g} .. "
                           f"{hi - margin - _margin(m, 'position_high', j):.3g}", f"{lo:g} .. {hi:g}"]
        for key, limit in (("velocity", lim.velocity[j]), ("acceleration", lim.acceleration[j]),
                           ("torque", lim.effort[j])):
            peak = scale * limit - float(np.ravel(m[key])[j])
            row.append(f"{peak:.3g} / {limit:g} ({100 * peak / limit:.0f} %)")
        rows.append(row)
    return _table([units["joint"], f"range [{pu}]", f"limits [{pu}]", f"peak |{'q_d' if pu == 'rad' else 'v'}| "
                   f"[{vu}]", f"peak |{'q_dd' if pu == 'rad' else 'a'}| [{au}]", f"peak |{ec}| [{eu}]"], rows)


def _margin(m, key, j):
    """Margin ``key`` of joint ``j`` (limit minus peak; the position ones beyond --margin)."""
    v = m.get(key)
    return 0.0 if v is None else float(np.ravel(v)[j])


def write_coefficients(path, res, robot: str, params: str, seed: int, scale: float, units) -> Path:
    """The excitation's Fourier series as YAML (period, q0, a, b per joint; joint units)."""
    tr = res.trajectory
    doc = {"robot": robot, "parameter_set": params, "seed": int(seed), "limit_scale": float(scale),
           "condition_number": float(res.condition), "period_s": float(tr.period),
           "harmonics": int(tr.harmonics),
           "q0": [float(v) for v in tr.q0],
           "a": [[float(v) for v in row] for row in np.asarray(tr.a)],
           "b": [[float(v) for v in row] for row in np.asarray(tr.b)]}
    head = (f"# Excitation trajectory of {robot} (delta-identify excite): joint j's position is\n"
            f"#   q_j(t) = q0_j + sum_k [a_jk / (w k) sin(w k t) - b_jk / (w k) cos(w k t)],  w = 2 pi / period_s\n"
            f"# (Swevers et al. 1997; delta_dynamics/identification/excitation.py); q0 in {units['position']},\n"
            f"# a and b in {units['velocity']}. Row j of a and b: joint j.\n")
    return atomic_write_text(path, head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120))


# ----------------------------------------------------------------------------- main

def main(argv=None) -> int:
    """Entry point of ``delta-identify`` (and ``delta-identify excite``); the exit status."""
    return run_terminable(PROG, _main, argv, lead="\n")


def _main(argv) -> int:
    """Run the command of ``argv``; the errors a user can cause become one line and 2 (or 1)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "excite":
            return run_excite(argv[1:])
        return run_identify(argv)
    except _Exit as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.code
    except (IdentificationError, RobotFileError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:   # e.g. UnreachableError from the model on bad data
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"{PROG}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
