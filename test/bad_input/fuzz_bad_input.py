"""Randomised bad input, per class, with a count table: ``make fuzz`` (or
``pytest -m fuzz test/bad_input``).

Every generated input is bad by construction (a mutation that no valid file or option
survives), except for the bag class, where flipped bytes may leave a readable bag. Each case
is classified like the hand-written tables (:mod:`bad_input_harness`):

* crash: a traceback, an exception other than the tool's error, an unexpected exit status;
* unsafe: accepted (exit 0) although bad, the pre-existing output changed, a temporary file
  left behind;
* unclear: refused, but not in one ``<prog>: error: ...`` line naming the file and where in
  it (field path, line, byte offset) or the option.

Classes: robot files (``load_robot`` + model), CSV (``delta-dynamics inverse`` and
``delta-identify`` on mutated files), bags (``delta-identify`` on corrupted sqlite3 / mcap
bags), CLI (every bounded option of the three tools given values outside its range, and
option combinations that ask for more than MAX_SAMPLES).

    python test/bad_input/fuzz_bad_input.py [--seed 1] [--cases 200]
"""
from __future__ import annotations

import argparse
import copy
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bad_input_harness import NT_ROBOT, OUT_CONTENT, Case, prepare, run_in_process, verdict  # noqa: E402

CLASSES = ("robot files", "CSV", "bags", "CLI")


class Tally:
    def __init__(self):
        self.rows = {c: {"cases": 0, "crash": 0, "unsafe": 0, "unclear": 0, "accepted": 0} for c in CLASSES}
        self.examples = []

    def add(self, cls, problems, label, accepted=False):
        r = self.rows[cls]
        r["cases"] += 1
        r["accepted"] += bool(accepted)
        kinds = {p.split(":", 1)[0] for p in problems}
        for k in ("crash", "unsafe", "unclear"):
            if k in kinds:
                r[k] += 1
        if problems:
            self.examples.append(f"[{cls}] {label}: {problems[0][:300]}")

    def table(self) -> str:
        lines = ["| class | cases / crash / unsafe / unclear |", "|---|---|"]
        for c, r in self.rows.items():
            extra = f" ({r['accepted']} corrupted bags still readable, accepted)" if c == "bags" and r["accepted"] else ""
            lines.append(f"| {c} | {r['cases']} / {r['crash']} / {r['unsafe']} / {r['unclear']}{extra} |")
        return "\n".join(lines)

    @property
    def failures(self) -> int:
        return sum(r["crash"] + r["unsafe"] + r["unclear"] for r in self.rows.values())


# ----------------------------------------------------------------------------- robot files

BASE_TEXT = NT_ROBOT.read_text(encoding="utf-8")
BASE = yaml.safe_load(BASE_TEXT)
REQUIRED = ["name", "joint_names", "geometry.base_radius", "geometry.platform_radius",
            "geometry.upper_arm_length", "geometry.forearm_length", "geometry.forearm_spacing",
            "mass_properties.upper_arm.mass", "mass_properties.upper_arm.com_distance",
            "mass_properties.upper_arm.inertia", "mass_properties.motor.rotor_inertia",
            "mass_properties.motor.gear_ratio", "mass_properties.forearm.mass",
            "mass_properties.forearm.com_ratio", "mass_properties.forearm.inertia",
            "mass_properties.platform.mass", "limits.position", "limits.velocity",
            "limits.acceleration", "limits.torque"]


def _numeric_paths():
    from delta_core.robot_file.rotary import BOUNDS
    out = []
    for path in BOUNDS:
        node = BASE
        ok = True
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                ok = False
                break
            node = node[part]
        if ok:
            out.append(path)
    return out


def _set(d, path, value):
    parts = path.split(".")
    for p in parts[:-1]:
        d = d[p]
    d[parts[-1]] = value


def _delete(d, path):
    parts = path.split(".")
    for p in parts[:-1]:
        d = d[p]
    del d[parts[-1]]


def _bad_number(rng, path):
    from delta_core.robot_file.bounds import bound_for
    from delta_core.robot_file.rotary import BOUNDS
    b = bound_for(path, BOUNDS)
    pool = [float("nan"), float("inf"), -float("inf"), "abc", "1e5", True, None, [1, 2], {"a": 1},
            b.hi * (1 + rng.random()) + 1.0, 10 ** rng.randint(101, 300), "9" * rng.randint(1, 50) + "x"]
    if b.lo > -1e6:
        pool.append(b.lo - abs(b.lo) * rng.random() - 1e-3 - rng.random())
    return rng.choice(pool)


def robot_file_case(rng, tmp):
    """(file content, words one of which the message must hold, label)."""
    kind = rng.choice(["number", "number", "number", "element", "delete", "unknown", "utf8", "nul",
                       "deep", "bomb", "duplicate", "truncate", "type", "random-bytes", "random-yaml"])
    d = copy.deepcopy(BASE)
    if kind == "random-bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 3000))), [""], "random bytes"
    if kind == "random-yaml":
        return yaml.safe_dump(_random_data(rng, 0)), [""], "random yaml"
    if kind in ("number", "element"):
        paths = _numeric_paths()
        path = rng.choice(paths)
        node = d
        for part in path.split("."):
            node = node[part]
        if kind == "element" and isinstance(node, list):
            k = rng.randrange(len(node))
            if path == "limits.position":
                node[k] = [node[k][0], _bad_number(rng, path)] if rng.random() < 0.5 else "x"
            else:
                node[k] = _bad_number(rng, path)
            where = f"{path}[{k}]"
        else:
            _set(d, path, _bad_number(rng, path))
            where = path
        return yaml.safe_dump(d, sort_keys=False), [where, path], f"{kind} {where}"
    if kind == "delete":
        path = rng.choice(REQUIRED)
        _delete(d, path)
        return yaml.safe_dump(d, sort_keys=False), [path], f"delete {path}"
    if kind == "unknown":
        section = rng.choice(["", "geometry", "mass_properties", "mass_properties.motor", "friction", "limits"])
        node = d
        for part in filter(None, section.split(".")):
            node = node[part]
        key = rng.choice(["mas", "lenght", "x", "Mass", "gravity_"])
        node[key] = 1.0
        path = f"{section}.{key}" if section else key
        return yaml.safe_dump(d, sort_keys=False), [path], f"unknown {path}"
    if kind == "type":
        path = rng.choice(["geometry", "mass_properties", "limits", "friction", "mass_properties.motor"])
        _set(d, path, rng.choice([1.0, "text", [1, 2, 3], None]))
        return yaml.safe_dump(d, sort_keys=False), [path], f"type {path}"
    text = BASE_TEXT
    if kind == "utf8":
        k = rng.randrange(len(text.encode()))
        data = text.encode()
        return data[:k] + bytes([rng.choice([0x80, 0xc3, 0xff, 0xfe, 0xe9])]) + b"\x80" * 0 + data[k:], ["offset"], \
            f"utf8 at {k}"
    if kind == "nul":
        k = rng.randrange(len(text))
        return text[:k] + "\x00" + text[k:], ["unacceptable character", "line"], f"nul at {k}"
    if kind == "deep":
        n = rng.randint(17, 20000)
        return text + "metadata: " + "[" * n + "]" * n + "\n", ["nested deeper"], f"deep {n}"
    if kind == "bomb":
        levels = rng.randint(6, 12)
        bomb = "metadata:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"  a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * 10)}]\n" for i in range(1, levels))
        return text + bomb, ["alias bomb"], f"bomb {levels}"
    if kind == "duplicate":
        key = rng.choice(["gravity", "name", "limits", "type"])
        return text + f"{key}: 1\n", ["appears twice"], f"duplicate {key}"
    # truncate before the end of the torque limit line: a required field is missing or cut
    end = text.index("  torque: [") + len("  torque: [")
    k = rng.randrange(end)
    return text[:k], ["is missing", "not valid YAML", "is empty", "must be", "line"], f"truncate at {k}"


def _random_data(rng, depth):
    """A random YAML-able structure without a robot file's required fields."""
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice([rng.random() * 10 ** rng.randint(-300, 300), rng.randint(-10 ** 30, 10 ** 30), "x",
                           None, True, float("nan"), "", "é" * rng.randint(0, 5), -0.0])
    if r < 0.7:
        return [_random_data(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    keys = ["geometry", "limits", "mass", "a", "friction", "metadata", "gravity", "1", "joint_name"]
    return {rng.choice(keys) + ("" if depth else "_"): _random_data(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def run_robot_files(rng, tmp, n, tally):
    from delta_core.robot_file import RobotFileError, load_robot
    from delta_dynamics.rotary.model import RotaryModel
    for i in range(n):
        content, words, label = robot_file_case(rng, tmp)
        p = tmp / f"r{i}.yaml"
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        problems = []
        try:
            RotaryModel(load_robot(p))
            problems.append("unsafe: accepted")
        except RobotFileError as e:
            msg = str(e)
            if "\n" in msg or len(msg) > 600 or not msg.startswith(f"{p}: "):
                problems.append(f"unclear: not one line naming the file: {msg[:300]!r}")
            elif not any(w in msg for w in words):
                problems.append(f"unclear: none of {words} in {msg!r}")
        except BaseException as e:  # noqa: BLE001 - everything else is a crash
            problems.append(f"crash: {type(e).__name__}: {e}")
        tally.add("robot files", problems, label)
        p.unlink()


# ----------------------------------------------------------------------------- CSV

BAD_CELLS = ["nan", "inf", "-inf", "", "abc", "1e400", "-1e999", "0x10", "1e", ".", "+-1", "\x00", "1 2",
             "١٢" + "x", "NaN", "--", "1.2.3", "e5", "x" * 3000]


def _csv_texts():
    from delta_dynamics.data_files import joint_data as J
    from delta_dynamics.data_files.csv_io import format_csv
    from delta_dynamics.data_files.trajectory import TRAJECTORY_COLUMNS
    from delta_dynamics.motion.trajectories import circle
    traj = circle(duration=0.2, radius=0.1, depth=-0.8)
    ttext = format_csv(TRAJECTORY_COLUMNS, np.column_stack((traj.t, traj.X, traj.Xd, traj.Xdd)))
    tmp = Path(tempfile.mkdtemp())
    from bad_input_harness import NT_ROBOT as _  # noqa: F401
    t = np.arange(2001) * 1e-3
    q = 0.4 + 0.3 * np.sin(np.outer(t, [3.0, 4.0, 5.0]))
    tau = 10 * np.cos(np.outer(t, [3.0, 4.0, 5.0]))
    itext = J.write_joint_data(tmp / "i.csv", t, q, tau).read_text()
    shutil.rmtree(tmp)
    return ttext, itext


def csv_case(rng, text, needed, strict):
    """(mutated text or bytes, words the error must hold, label, extra args)."""
    lines = text.split("\n")
    header = lines[0].split(",")
    kind = rng.choice(["cell", "cell", "cell", "fields", "utf8", "header", "oneline", "time", "random-bytes"])
    if kind == "random-bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 5000))), [""], "random bytes", []
    if kind == "cell":
        k = rng.randrange(1, len(lines) - 1)
        cells = lines[k].split(",")
        j = rng.choice([header.index(c) for c in needed])
        cells[j] = rng.choice(BAD_CELLS)
        lines[k] = ",".join(cells)
        return "\n".join(lines), [f"line {k + 1}", f":{k + 1}:"], f"cell {k + 1}/{header[j]}={cells[j][:10]!r}", []
    if kind == "fields":
        k = rng.randrange(1, len(lines) - 1)
        cells = lines[k].split(",")
        if rng.random() < 0.5 and len(cells) > 1:
            cells.pop(rng.randrange(len(cells)))
        else:
            cells.insert(rng.randrange(len(cells) + 1), "1")
        lines[k] = ",".join(cells)
        return "\n".join(lines), [f"line {k + 1}", f":{k + 1}:"], f"fields on line {k + 1}", []
    if kind == "utf8":
        data = text.encode()
        k = rng.randrange(len(data))
        return data[:k] + bytes([rng.choice([0x80, 0xff, 0xc3])]) + data[k:], ["offset"], f"utf8 at {k}", []
    if kind == "header":
        cols = list(header)
        c = rng.choice(needed)
        if rng.random() < 0.5:
            cols[cols.index(c)] = c + "x"
        else:
            cols[rng.randrange(len(cols))] = c if cols.count(c) == 1 and len(cols) > 1 else cols[0]
            if len(set(cols)) == len(cols):
                cols[cols.index(c)] = c + "x"
        lines[0] = ",".join(cols)
        return "\n".join(lines), ["line 1", ":1:"], f"header {cols}", []
    if kind == "oneline":
        return text.replace("\n", " ") + "," * rng.randint(0, 70000), ["line 1", ":1:"], "one line", []
    k = rng.randrange(2, len(lines) - 1)
    cells = lines[k].split(",")
    prev = lines[k - 1].split(",")
    cells[0] = prev[0]
    lines[k] = ",".join(cells)
    return "\n".join(lines), ["duplicate", f":{k + 1}:"], f"time on line {k + 1}", (["--strict-time"] if strict else [])


def run_csv(rng, tmp, n, tally):
    from delta_dynamics.cli import main as dyn_main
    from delta_dynamics.identification.cli import main as id_main
    ttext, itext = _csv_texts()
    for i in range(n):
        if i % 2:
            content, words, label, extra = csv_case(rng, ttext, ("t", "x", "y", "z", "xd", "yd", "zd", "xdd",
                                                                 "ydd", "zdd"), False)
            prog, main = "delta-dynamics", dyn_main
            args = ["inverse", "--trajectory", "{tmp}/in.csv", "--out", "{out}"]
        else:
            content, words, label, extra = csv_case(rng, itext, ("t", "q1", "q2", "q3", "tau1", "tau2", "tau3"),
                                                    True)
            prog, main = "delta-identify", id_main
            args = ["--robot", "nt_robot", "--data", "{tmp}/in.csv", "--out", "{out}", "-q", "--no-progress",
                    "--min-duration", "0.5"]
        case = Case(label, args + extra, "", files={"in.csv": content})
        _run(case, tmp / f"c{i}", prog, main, words, "CSV", tally)


def _run(case, folder, prog, main, words, cls, tally, accept_ok=False):
    argv, out = prepare(case, folder)
    try:
        code, so, se = run_in_process(main, argv)
    except BaseException as e:  # noqa: BLE001
        code, se = "exception", f"Traceback (in process): {type(e).__name__}: {e}"
    problems = verdict(case, prog, code, se, out)
    problems = [p for p in problems if not p.startswith("unclear: '' not in")]
    if code != 0:
        line = [ln for ln in se.splitlines() if ln.strip()][-1:] or [""]
        if words and not any(w in line[0] for w in words):
            problems.append(f"unclear: none of {words} in {line[0][:300]!r}")
    elif accept_ok:
        problems = [p for p in problems if not p.startswith("unsafe: accepted")]
    tally.add(cls, problems, case.id, accepted=(code == 0))
    shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------- bags

def run_bags(rng, tmp, n, tally):
    from delta_core.robot_file import load_robot
    from delta_dynamics.data_files import bag as B
    from delta_dynamics.identification.cli import main as id_main
    names = load_robot("nt_robot").joint_names
    t = np.arange(2000) * 1e-3
    q = 0.4 + 0.3 * np.sin(np.outer(t, [3.0, 4.0, 5.0]))
    tau = 10 * np.cos(np.outer(t, [3.0, 4.0, 5.0]))
    good = {}
    for st in ("mcap", "sqlite3"):
        good[st] = B.write_bag(tmp / f"good_{st}", t, q, tau, names, storage=st)
    for i in range(n):
        st = rng.choice(["mcap", "sqlite3"])
        kind = rng.choice(["flip", "flip", "truncate", "metadata", "garbage-tail"])

        def make(path, st=st, kind=kind, seed=rng.randrange(1 << 30)):
            r = random.Random(seed)
            shutil.copytree(good[st], path)
            f = next(p for p in path.iterdir() if p.suffix in (".mcap", ".db3"))
            b = bytearray(f.read_bytes())
            if kind == "flip":
                for _ in range(r.randint(1, 50)):
                    b[r.randrange(len(b))] ^= 1 << r.randrange(8)
            elif kind == "truncate":
                del b[r.randrange(len(b)):]
            elif kind == "garbage-tail":
                b += bytes(r.randrange(256) for _ in range(r.randint(1, 5000)))
            else:
                m = path / "metadata.yaml"
                lines = m.read_text().splitlines()
                k = r.randrange(len(lines))
                lines[k] = lines[k][:r.randrange(len(lines[k]) + 1)] + r.choice(["[", ": :", "\t", "-1", "x"])
                m.write_text("\n".join(lines) + "\n")
            f.write_bytes(bytes(b))
        case = Case(f"{kind} {st}", ["--robot", "nt_robot", "--data", "{tmp}/bag", "-q", "--no-progress",
                                     "--min-duration", "0.5"], "", files={"bag": make})
        _run(case, tmp / f"b{i}", "delta-identify", id_main, ["bag"], "bags", tally, accept_ok=True)


# ----------------------------------------------------------------------------- CLI options

def _bounded_actions(parser):
    """(subcommand path, option strings, bounds) of every option with a bounded type."""
    out = []

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, path + [name])
            elif getattr(a.type, "bounds", None) is not None:
                out.append((path, a.option_strings[0] if a.option_strings else None, a.type.bounds, a))
    walk(parser, [])
    return out


def _bad_values(rng, bounds):
    lo, hi, lo_open, hi_open, kind = bounds
    pool = ["nan", "inf", "-inf", "", "abc", "1e999", "9" * rng.randint(40, 5000)]
    if kind is int:
        pool += ["1.5", "1e3", "0x10"]
    if hi is not None:
        v = hi * (1 + rng.random()) + 1 if hi >= 0 else hi / 2 + 1
        pool.append(str(int(v) + 1 if kind is int else v))
        if hi_open:
            pool.append(str(hi))
    if lo is not None:
        v = lo - abs(lo) * rng.random() - 1
        pool.append(str(int(v) - 1 if kind is int else v))
        if lo_open:
            pool.append(str(lo))
    return rng.choice(pool)


def run_cli(rng, tmp, n, tally):
    from delta_description.cli import build_parser as desc_parser, main as desc_main
    from delta_dynamics.cli import build_parser as dyn_parser, main as dyn_main
    from delta_dynamics.identification import cli as idc
    tools = [
        ("delta-dynamics", dyn_main, _bounded_actions(dyn_parser()),
         {("trajectory", "circle"): [], ("trajectory", "lissajous"): [], ("trajectory", "pick-place"): [],
          ("forward",): ["--torques", "{tmp}/x.csv"], ("inverse",): ["--trajectory", "{tmp}/x.csv"],
          ("ik",): ["0", "0", "-0.8"], ("fk",): ["0.4", "0.4", "0.4"]}),
        ("delta-identify", idc.main, _bounded_actions(idc._identify_parser()),
         {(): ["--robot", "nt_robot", "--data", "{tmp}/x.csv"]}),
        ("delta-identify", idc.main, [(["excite"], *a[1:]) for a in _bounded_actions(idc._excite_parser())],
         {("excite",): ["--robot", "nt_robot"]}),
        ("delta-description", desc_main, _bounded_actions(desc_parser()), {("check",): ["--robot", "nt_robot"]}),
    ]
    for i in range(n):
        if i % 5 == 4:
            _samples_case(rng, tmp / f"s{i}", dyn_main, tally)
            continue
        prog, main, actions, base = rng.choice(tools)
        path, opt, bounds, action = rng.choice(actions)
        value = _bad_values(rng, bounds)
        head = list(path)
        rest = list(base.get(tuple(path), []))
        if opt is None:                      # a positional (ik / fk): replace one of them
            k = ["x", "y", "z", "q1", "q2", "q3"].index(action.dest) % 3
            rest[k] = value
            args = head + ["--"] + rest if value.startswith("-") else head + rest
            name = f"argument {action.metavar or action.dest}"
        else:
            args = head + rest + [f"{opt}={value}"]
            name = f"argument {opt}"
        if path and path[0] not in ("ik", "fk", "check", "excite") or path == ["excite"]:
            args += ["--out", "{out}"]
        case = Case(f"{' '.join(path)} {opt}={value[:20]!r}", args, "", files={"x.csv": "t,x\n"})
        _run(case, tmp / f"a{i}", prog, main, [name], "CLI", tally)


def _samples_case(rng, folder, main, tally):
    """Options each within range whose product asks for more than MAX_SAMPLES samples."""
    kind = rng.choice(["circle", "pick-place", "lissajous"])
    dt = 10 ** rng.uniform(-6, -3)
    if kind == "circle":
        args = ["trajectory", "circle", "--duration", f"{1.2e6 * dt * rng.uniform(1, 100):.6g}", "--dt", f"{dt:.6g}"]
    elif kind == "pick-place":
        args = ["trajectory", "pick-place", "--cycles", str(rng.randint(2000, 100000)), "--dt", f"{dt:.6g}"]
    else:
        args = ["trajectory", "lissajous", "--speed", f"{rng.uniform(1e-4, 1e-3):.6g}", "--dt", f"{dt:.6g}"]
    case = Case(" ".join(args), args + ["--out", "{out}"], "", files={})
    _run(case, folder, "delta-dynamics", main, ["samples, more than"], "CLI", tally)


# ----------------------------------------------------------------------------- main

def fuzz(seed: int = 1, cases: int = 100, bags: int | None = None) -> Tally:
    rng = random.Random(seed)
    tally = Tally()
    tmp = Path(tempfile.mkdtemp(prefix="fuzz_bad_input_"))
    try:
        run_robot_files(rng, tmp, cases, tally)
        run_csv(rng, tmp, cases, tally)
        run_bags(rng, tmp, bags if bags is not None else max(10, cases // 4), tally)
        run_cli(rng, tmp, cases, tally)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cases", type=int, default=200, help="cases per class (bags: a quarter)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    tally = fuzz(args.seed, args.cases)
    print(f"bad-input fuzz, seed {args.seed}, {time.perf_counter() - t0:.0f} s\n")
    print(tally.table())
    for e in tally.examples[:30]:
        print(e)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
