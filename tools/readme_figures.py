"""Run the demos the README quotes and rewrite its figure blocks from their results.

Each variant is ``delta-bringup --demo`` (simulated time: the figures do not depend on the
host's load; the wall time does) in a ROS domain of its own:

* ``explicit``: the rotary demo (nt_robot) on the default plant (``make run``);
* ``multibody``, ``mujoco``: the same on the other plants (``--plant``);
* ``linear``: the linear Delta (``--robot colombo2020``).

The README's blocks between ``<!-- demo-figures:NAME -->`` and ``<!-- /demo-figures:NAME -->``
(``headline``: the picture's caption, ``linear``: the linear demo's sentence, ``plants``: the
plant table, ``performance``: the demo paragraph of Performance) are replaced; so is
``docs/images/stack_demo.png`` (the explicit run's ``demo_tracking.png``). The load average
(``os.getloadavg``) before and after the runs is written into the blocks.
``test/test_readme_figures.py`` checks the README against fresh runs (1 %).

Usage: python tools/readme_figures.py [--variants explicit,multibody,mujoco,linear] [--jobs 1]
[--check] (``--check``: print the figures, leave the README alone)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
IMAGE = ROOT / "docs" / "images" / "stack_demo.png"

#: the demo variants: the arguments of delta-bringup after --demo --out DIR
VARIANTS = {
    "explicit": [],
    "multibody": ["--plant", "multibody"],
    "mujoco": ["--plant", "mujoco"],
    "linear": ["--robot", "colombo2020"],
}
PHASES = ("PD only", "nominal feedforward", "identified feedforward")
#: the demo's last phase: the same pick and place retimed time-optimally (``~/pick``)
OPTIMAL = "time-optimal, identified feedforward"
BLOCK = re.compile(r"(<!-- demo-figures:(?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- /demo-figures:(?P=name) -->)", re.S)


def run_demo(variant: str, out: Path, domain: int) -> dict:
    """One fresh demo run: its demo_results.json with the wall time (``wall_s``) and the
    output (``log``) added (RuntimeError with the log's end if it fails)."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
           "AMENT_PREFIX_PATH": os.environ.get("AMENT_PREFIX_PATH", sys.prefix),
           "RMW_IMPLEMENTATION": os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"), "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "delta_bringup.main", "--demo", "--out", str(out),
                           *VARIANTS[variant]], capture_output=True, text=True, env=env, timeout=1800)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"demo {variant} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    res = json.loads((out / "demo_results.json").read_text())
    if res.get("disturbances"):
        raise RuntimeError(f"demo {variant} was disturbed: {res['disturbances']}")
    res["wall_s"] = wall
    res["log"] = proc.stdout + proc.stderr
    return res


def _cycles(n: int) -> str:
    """'one cycle', 'three cycles', ... (the demo's cycles per payload)."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    return f"{words.get(n, n)} cycle{'s' if n != 1 else ''}"


def figures(res: dict, linear: bool) -> dict:
    """The README's numbers of one run: per phase the RMS joint error (mrad, or mm for the
    carriages of a linear Delta) and the platform error (mm); the two ratios."""
    k = 1e3
    out = {p: (k * res[p]["rms_rad"], res[p]["rms_mm"]) for p in (*PHASES, OPTIMAL)}
    out["cycle_fixed"] = 1e3 * res["cycle_time_s"][PHASES[2]]            # ms
    out["cycle_optimal"] = 1e3 * res["cycle_time_s"][OPTIMAL]
    w = res["monitoring"]
    if "detected_ms" in w:                 # a plant that takes a push (not multibody)
        out["push_N"], out["detected_ms"], out["estimated_N"] = w["push_N"], w["detected_ms"], w["estimated_N"]
    if w.get("payload"):                   # a plant whose payload can change
        loads = {p["extra_kg"]: p for p in w["payload"][1:]}              # the first run is the reference
        out["payload_kg"] = loads[max(loads)]["estimate_kg"]
        out["payload_extra_kg"] = max(loads)
        out["payload_off_kg"] = w["payload"][-1]["estimate_kg"]
        out["payload_cycles"] = w.get("payload_cycles", 3)
    out["vs_pd"] = out["PD only"][0] / out["identified feedforward"][0]
    out["vs_nominal"] = out["nominal feedforward"][0] / out["identified feedforward"][0]
    out["wall_s"] = res.get("wall_s", float("nan"))
    return out


def _x(v: float) -> str:
    return f"{v:.1f}×"


def _speed(v: dict, unit: str, digits: int) -> str:
    """The time-optimal phase's sentence: cycle times, picks per minute, tracking error."""
    fixed, best = v["cycle_fixed"], v["cycle_optimal"]
    return (f"{best:.1f} ms per cycle ({6e4 / best:.1f} picks/min) instead of {fixed:.0f} ms "
            f"({6e4 / fixed:.1f} picks/min), {100 * (1 - best / fixed):.0f} % shorter, tracked to {v[OPTIMAL][0]:.{digits}f} {unit} "
            f"({v[OPTIMAL][1]:.3f} mm at the platform)")


def _watch(v: dict) -> str:
    """The monitoring phase's sentence: the push detected, the payload estimated."""
    return (f"a {v['push_N']:g} N push at the platform during a cycle is detected {v['detected_ms']:.0f} ms after "
            f"it begins ({v['estimated_N']:.1f} N estimated) and stops the robot; with {v['payload_extra_kg']:g} kg "
            f"more on the simulated platform\nthe payload estimate reads {v['payload_kg']:.3f} kg after "
            f"{_cycles(v.get('payload_cycles', 3))}, {v['payload_off_kg']:.3f} kg once it is off again")


def blocks(f: dict, load: str) -> dict:
    """The text of each README block from the figures ``f`` (variant -> :func:`figures`)."""
    out = {}
    e = f.get("explicit")
    if e:
        pd, nom, idf = (e[p] for p in PHASES)
        out["headline"] = (
            "*Made by `make run`: the whole stack on a simulated `nt_robot` whose true parameters differ\n"
            "from its robot file (1.5 kg payload, more friction, heavier arms), in simulated time.\n"
            "Pick-and-place cycles (25 mm up, 305 mm across, 25 mm down) with PD control only, with the\n"
            "nominal model's feedforward, then, after an excitation run (the stored trajectory\n"
            "`config/excitation/nt_robot.yaml`) and a refit by the identification node, with the identified\n"
            f"feedforward: the RMS tracking error falls from {pd[0]:.2f} mrad to {nom[0]:.2f} mrad to "
            f"{idf[0]:.3f} mrad\n"
            f"({pd[1]:.1f} mm, {nom[1]:.2f} mm, {idf[1]:.3f} mm at the platform): {_x(e['vs_pd'])} better than "
            f"PD only,\n{_x(e['vs_nominal'])} better than the nominal model. Last, the same pick and place timed "
            "time-optimally by the\nhardware node with the identified model (`~/pick`, within 90 % of the robot "
            f"file's limits):\n{_speed(e, 'mrad', 2)}.\nWith the momentum observer on (thresholds from those "
            f"cycles), {_watch(e)}.\nThe same figures on every machine and "
            "at any load\n(simulated time, a stored excitation): `tools/readme_figures.py` wrote them from a fresh "
            f"run\n({load}) and `test/test_readme_figures.py` checks them against one.*\n")
        out["performance"] = (
            f"**The demo in simulated time** (`make run`): PD only {pd[0]:.2f} mrad, nominal feedforward\n"
            f"{nom[0]:.2f} mrad, identified feedforward {idf[0]:.3f} mrad, {_x(e['vs_pd'])} better than PD only "
            f"(target\n≥ 10×) and {_x(e['vs_nominal'])} better than the nominal model; wall time {e['wall_s']:.0f} s "
            f"({load}).\nEvery plant: [Plants](#plants-the-simulated-robot-need-not-be-the-controllers-model).\n")
    lin = f.get("linear")
    if lin:
        pd, nom, idf = (lin[p] for p in PHASES)
        out["linear"] = (
            "`delta-bringup --demo --robot colombo2020` runs the same session on a linear Delta (carriage\n"
            f"errors in mm: PD only {pd[0]:.2f} mm, nominal feedforward {nom[0]:.3f} mm, identified feedforward "
            f"{idf[0]:.4f} mm,\n{_x(lin['vs_pd'])} better than PD only, {_x(lin['vs_nominal'])} better than the "
            f"nominal model; time-optimal cycles:\n{_speed(lin, 'mm', 4)}; {_watch(lin)}); "
            "`--plant mujoco` or `--plant multibody` runs\nit on a simulated robot whose structure "
            "differs from the controller's model\n"
            "([Plants](#plants-the-simulated-robot-need-not-be-the-controllers-model)).\n")
    rows = [("explicit", "`explicit` (default)"), ("multibody", "`multibody`"), ("mujoco", "`mujoco`")]
    if any(k in f for k, _ in rows):
        lines = ["| plant | PD only | nominal feedforward | identified feedforward | identified vs PD | "
                 "vs nominal | time-optimal cycles, identified feedforward | wall time |",
                 "|---|---|---|---|---|---|---|---|"]
        for key, label in rows:
            if key in f:
                v = f[key]
                cells = [f"{v[p][0]:.2f} mrad ({v[p][1]:.2f} mm)" for p in PHASES[:2]]
                cells.append(f"{v[PHASES[2]][0]:.3f} mrad ({v[PHASES[2]][1]:.3f} mm)")
                fast = (f"{v[OPTIMAL][0]:.2f} mrad ({v[OPTIMAL][1]:.3f} mm), {v['cycle_optimal']:.1f} ms per cycle "
                        f"instead of {v['cycle_fixed']:.0f} ms")
                lines.append(f"| {label} | {' | '.join(cells)} | {_x(v['vs_pd'])} | {_x(v['vs_nominal'])} | "
                             f"{fast} | {v['wall_s']:.0f} s |")
        out["plants"] = "\n".join(lines) + f"\n\nMeasured by `tools/readme_figures.py` ({load}).\n"
    return out


def rewrite(text: str, new: dict) -> str:
    """``text`` with the blocks named in ``new`` replaced (ValueError if one is missing)."""
    found = {m.group("name") for m in BLOCK.finditer(text)}
    missing = sorted(set(new) - found)
    if missing:
        raise ValueError(f"README.md has no block <!-- demo-figures:{missing[0]} -->")
    return BLOCK.sub(lambda m: m.group(1) + new.get(m.group("name"), m.group("body")) + m.group(4)
                     if m.group("name") in new else m.group(0), text)


def parse(text: str) -> dict:
    """The figures the README quotes, per variant: {variant: {phase: joint error (mrad or mm)},
    and vs_pd}; what the test compares with a fresh run."""
    b = {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}
    out = {}
    for line in b.get("plants", "").splitlines():
        m = re.match(r"\| `(\w+)`[^|]*\|(.*)", line)
        if m:
            nums = re.findall(r"([0-9.]+) mrad", m.group(2))
            ratio = re.findall(r"([0-9.]+)×", m.group(2))
            cycle = re.findall(r"([0-9.]+) ms per cycle", m.group(2))
            out[m.group(1)] = {**dict(zip((*PHASES, OPTIMAL), map(float, nums))), "vs_pd": float(ratio[0]),
                               **({"cycle_optimal": float(cycle[0])} if cycle else {})}
    lin = b.get("linear", "")
    m = re.search(r"PD only ([0-9.]+) mm, nominal feedforward ([0-9.]+) mm, identified feedforward ([0-9.]+) mm,"
                  r"\s*([0-9.]+)×", lin)
    if m:
        out["linear"] = {**dict(zip(PHASES, map(float, m.groups()[:3]))), "vs_pd": float(m.group(4))}
        fast = re.search(r"time-optimal cycles:\s*([0-9.]+) ms per cycle.*?tracked to ([0-9.]+) mm", lin, re.S)
        if fast:
            out["linear"].update({"cycle_optimal": float(fast.group(1)), OPTIMAL: float(fast.group(2))})
    for name, variant in (("headline", "explicit"), ("linear", "linear")):
        m = re.search(r"detected ([0-9.]+) ms after.*?payload estimate reads ([-0-9.]+) kg", b.get(name, ""), re.S)
        if m and variant in out:
            out[variant].update({"detected_ms": float(m.group(1)), "payload_kg": float(m.group(2))})
    return out


def load_text() -> str:
    a = os.getloadavg()
    return f"load average {a[0]:.1f}, {a[1]:.1f}, {a[2]:.1f} over 1, 5, 15 min on {os.cpu_count()} cores"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="demos run at once, each in its own ROS domain (default 1)")
    ap.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "0") or 0) or 40,
                    help="ROS domain of the first demo; the next ones count up (default: ROS_DOMAIN_ID or 40)")
    ap.add_argument("--check", action="store_true", help="print the figures only, leave the README alone")
    args = ap.parse_args(argv)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in names:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r} (known: {', '.join(VARIANTS)})")
    before = load_text()
    print(f"readme_figures: {len(names)} demo(s), {before}", flush=True)
    with tempfile.TemporaryDirectory(prefix="readme_figures_") as tmp:
        def one(i_v):
            i, v = i_v
            res = run_demo(v, Path(tmp) / v, args.domain + i)
            print(f"  {v}: " + ", ".join(f"{p} {1e3 * res[p]['rms_rad']:.4f}" for p in (*PHASES, OPTIMAL))
                  + f" ({res['wall_s']:.0f} s)", flush=True)
            return v, res
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = dict(pool.map(one, enumerate(names)))
        after = os.getloadavg()
        load = (f"{before}, {after[0]:.1f} after; {len(names)} demos, {max(1, args.jobs)} at a time"
                if len(names) > 1 else f"{before}, {after[0]:.1f} after")
        f = {v: figures(r, v == "linear") for v, r in results.items()}
        new = blocks(f, load)
        if args.check:
            print(json.dumps(f, indent=1))
            return 0
        README.write_text(rewrite(README.read_text(), new))
        if "explicit" in results:
            IMAGE.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / "explicit" / "demo_tracking.png", IMAGE)
    print(f"readme_figures: rewrote {', '.join(sorted(new))} in {README.relative_to(ROOT)}"
          + (f" and {IMAGE.relative_to(ROOT)}" if "explicit" in results else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
