"""Design the excitation trajectories of the robot presets and store them in
``config/excitation/<robot>.yaml`` (the files ``delta-bringup --demo`` and
``delta-identify excite --from`` load).

The optimiser (SLSQP from seeded random starts, :func:`delta_dynamics.identification.excitation.design_excitation`)
ends at another point on another machine: its path depends on the last bit of every BLAS call.
That is why the result is stored, not recomputed: run this script only to change a preset's
excitation, look at the printed summary, and commit the file. Figures published from the demo
(README) must be regenerated afterwards (``tools/readme_figures.py``).

Usage: python tools/design_excitations.py [--robot nt_robot,colombo2020] [--out-dir config/excitation]
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from delta_core.robot_file import load_robot  # noqa: E402
from delta_dynamics.identification.excitation import design_excitation, save_excitation  # noqa: E402
from delta_dynamics.kinds import model_for  # noqa: E402

#: the design settings per preset (the demo's: two periods of 8 s at 60 % of the limits)
DESIGNS = {
    "nt_robot": dict(period=8.0, harmonics=4, scale=0.6, margin=0.05, min_measure=0.05, grid=200,
                     starts=1, maxiter=25, seed=1),
    "colombo2020": dict(period=8.0, harmonics=4, scale=0.6, margin=0.05, min_measure=0.05, grid=200,
                        starts=1, maxiter=25, seed=1),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default=",".join(DESIGNS), help="comma-separated presets (default: %(default)s)")
    ap.add_argument("--out-dir", default=str(ROOT / "config" / "excitation"), help="folder of the files")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in [r.strip() for r in args.robot.split(",") if r.strip()]:
        if name not in DESIGNS:
            ap.error(f"no design settings for {name!r} (known: {', '.join(DESIGNS)})")
        model = model_for(load_robot(name))
        design = DESIGNS[name]
        res = design_excitation(model, params="explicit", **design)
        if res.violations:
            print(f"{name}: the design breaks limits: {'; '.join(res.violations)}", file=sys.stderr)
            return 1
        path = save_excitation(out / f"{name}.yaml", model, res, design, header=(
            f"Excitation trajectory of {name} (finite Fourier series in joint space), designed on "
            f"{datetime.date.today().isoformat()} by tools/design_excitations.py.\n"
            "The coefficients are the trajectory: loaded as they are, never re-optimised (the optimiser's\n"
            "end point differs between machines). Regenerate the README figures after changing it."))
        print(f"{name}: condition number {res.condition:.1f} (random start {res.initial_condition:.1f}), "
              f"{res.iterations} iterations; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
