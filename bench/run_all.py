"""Run every bench/bench_*.py in turn (each as its own process); exit non-zero if any fails.

Every figure depends on how busy the machine is, so each script's run is recorded with the
load it ran at: the 1-minute load average before and after it and the number of CPUs (a load
above the CPU count means other work took turns with the benchmark). The table goes to stdout
and to ``bench/results/run_all.md``; the README's Performance section quotes it. Targets that
hold only on an idle machine say so in the README.

``python bench/run_all.py [--only NAME ...]`` (``make bench``).
"""
import argparse
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from _machine import describe  # noqa: E402


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="bench scripts to run (names without .py; default all)")
    args = ap.parse_args()
    scripts = sorted(here.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem in args.only or s.name in args.only]
    rows, failed = [], []
    cpus = os.cpu_count() or 1
    for script in scripts:
        l0, t0 = load(), time.perf_counter()
        print(f"== {script.name} (load average {l0:.1f} on {cpus} CPUs)", flush=True)
        code = subprocess.call([sys.executable, str(script)], cwd=here.parent)
        wall, l1 = time.perf_counter() - t0, load()
        busy = "idle" if max(l0, l1) < 0.5 * cpus + 1 else ("loaded" if max(l0, l1) <= 2 * cpus else "saturated")
        rows.append((script.name, "ok" if code == 0 else f"exit {code}", f"{wall:.0f} s", f"{l0:.1f} -> {l1:.1f}", busy))
        print(f"== {script.name}: {rows[-1][1]} in {wall:.0f} s, load average {l0:.1f} -> {l1:.1f} ({busy})",
              flush=True)
        if code != 0:
            failed.append(script.name)
    md = [f"# make bench, {datetime.date.today().isoformat()}", "", describe(), "",
          "| script | result | wall time | load average (1 min) before -> after | machine |",
          "|---|---|---|---|---|", *[f"| {' | '.join(r)} |" for r in rows], "",
          f"'idle': load below {0.5 * cpus + 1:g}; 'loaded': up to {2 * cpus}; 'saturated': more. "
          "Figures taken on a loaded or saturated machine are not the README's idle figures."]
    out = here / "results" / "run_all.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(md) + "\n")
    print("\n".join(md))
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
