#!/usr/bin/env python3
"""Build ``control_msgs`` (FollowJointTrajectory, JointTolerance, JointComponentTolerance) and
``delta_msgs`` (delta_robot's own: the ``Pick`` service) into the virtual environment, where no
ROS install provides them. Run by ``make setup``; each package on its own, as below.

* A ROS install's ``control_msgs`` takes precedence: if ``import control_msgs.action`` finds a
  package outside this venv (a sourced ROS install on ``PYTHONPATH``), nothing is built.
* Idempotent: the venv keeps a fingerprint of what it was built from (the interface files, the
  generator wheels' versions, the Python version); the same fingerprint and an importable
  package skip the build (about 1 s).
* Needs python3, cmake and a C/C++ compiler; the rosidl / ament generator wheels come from
  ``requirements-build.txt`` (most of rosidl is already in the venv as rclpy's dependencies).
  The build takes about 65 s of CPU time (wall time: see README.md here).

The definitions are our own copies of control_msgs 5.x (ROS 2 Jazzy), field for field, so the
type hashes (RIHS01) are those of the real package that MoveIt uses: see README.md here and
``test/test_control_msgs_build.py``.

Usage: ``python interfaces/build_control_msgs.py [--venv .venv] [--force]``
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-build.txt"
FINGERPRINT_NAME = "delta_robot_build.txt"          # in <venv>/share/<package>/
#: package -> the import that proves it is installed
PACKAGES = {
    "control_msgs": "from control_msgs.action import FollowJointTrajectory; from control_msgs.msg import JointTolerance",
    "delta_msgs": "from delta_msgs.srv import Pick",
}
PACKAGE = "control_msgs"                            # the one being built (for the messages)
SOURCE = HERE / PACKAGE
CHECK = PACKAGES[PACKAGE]


def select(package: str) -> None:
    """Build ``package`` (one of PACKAGES) from now on."""
    global PACKAGE, SOURCE, CHECK
    PACKAGE, SOURCE, CHECK = package, HERE / package, PACKAGES[package]


def log(text: str) -> None:
    print(f"{PACKAGE}: {text}", flush=True)


def venv_env(venv: Path) -> dict:
    """The environment the Makefile gives ROS tools: the venv is the ament prefix."""
    env = dict(os.environ)
    env["AMENT_PREFIX_PATH"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["CMAKE_PREFIX_PATH"] = str(venv)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)        # let the venv set LD_LIBRARY_PATH itself
    return env


def find_elsewhere(python: Path, venv: Path, env: dict) -> str | None:
    """Where control_msgs is importable from outside ``venv`` (a ROS install), else None."""
    code = (f"import importlib.util as u; s = u.find_spec('{PACKAGE}'); "
            "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')")
    r = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True)
    where = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
    if where and not Path(where).resolve().is_relative_to(venv.resolve()):
        return where
    return None


def importable(python: Path, env: dict) -> bool:
    return subprocess.run([str(python), "-c", CHECK], env=env, capture_output=True).returncode == 0


def fingerprint(python: Path, env: dict) -> str:
    """What the installed package was built from: interface files, build recipe, generator
    versions, Python version."""
    h = hashlib.sha256()
    for p in sorted(SOURCE.rglob("*")) + [REQUIREMENTS]:
        if p.is_file():
            h.update(p.relative_to(HERE).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    code = ("import sys, importlib.metadata as m; print(sys.version); "
            "[print(d.metadata['Name'], d.version) for d in sorted(m.distributions(), "
            "key=lambda d: d.metadata['Name'] or '') if (d.metadata['Name'] or '').startswith('ros-')]")
    r = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True)
    h.update(r.stdout.encode())
    return h.hexdigest()


def run(cmd, cwd, env, logfile: Path) -> None:
    with open(logfile, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n")
        f.flush()
        r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        tail = logfile.read_text(encoding="utf-8", errors="replace").splitlines()[-25:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise SystemExit(f"{PACKAGE}: error: '{' '.join(map(str, cmd[:2]))} ...' failed "
                         f"(exit {r.returncode}); the whole log: {logfile}")


def build(venv: Path, build_dir: Path, env: dict) -> None:
    python = venv / "bin" / "python"
    for tool in ("cmake", "cc", "c++"):
        if shutil.which(tool, path=env["PATH"]) is None:
            raise SystemExit(f"{PACKAGE}: error: '{tool}' not found; install cmake and gcc/g++ "
                             "(Debian: apt-get install cmake g++)")
    if build_dir.exists():
        shutil.rmtree(build_dir)
    build_dir.mkdir(parents=True)
    logfile = build_dir / "build.log"
    log(f"installing the generator wheels ({REQUIREMENTS.name})")
    run([python, "-m", "pip", "install", "-q", "-r", REQUIREMENTS], build_dir, env, logfile)
    log(f"building into {venv} (log: {logfile})")
    run(["cmake", SOURCE, f"-DCMAKE_INSTALL_PREFIX={venv}", f"-DCMAKE_PREFIX_PATH={venv}",
         f"-DPython3_EXECUTABLE={python}",
         "-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release"], build_dir, env, logfile)
    run(["cmake", "--build", ".", "--parallel", str(os.cpu_count() or 2)], build_dir, env, logfile)
    run(["cmake", "--install", "."], build_dir, env, logfile)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="build_control_msgs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default=str(HERE.parent / ".venv"), help="the virtual environment (.venv)")
    ap.add_argument("--build-dir", default=str(HERE.parent / "build"),
                    help="scratch build folder (<dir>/<package>, removed and made anew for each build)")
    ap.add_argument("--force", action="store_true", help="build even if the fingerprint matches")
    ap.add_argument("--package", choices=sorted(PACKAGES), action="append",
                    help="build only this package (repeatable; default: all)")
    args = ap.parse_args(argv)
    venv = Path(args.venv).resolve()
    python = venv / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{PACKAGE}: error: no Python at {python} (run make setup)")
    env = venv_env(venv)
    for package in args.package or list(PACKAGES):         # control_msgs first: it installs the wheels
        select(package)
        build_one(args, venv, python, env)
    return 0


def build_one(args, venv: Path, python: Path, env: dict) -> int:
    """Build the selected package unless a ROS install has it or the fingerprint matches."""
    elsewhere = find_elsewhere(python, venv, env)
    if elsewhere:
        log(f"using the ROS install's package at {elsewhere}; nothing to build")
        return 0
    stamp = venv / "share" / PACKAGE / FINGERPRINT_NAME
    want = fingerprint(python, env)
    if not args.force and stamp.is_file() and stamp.read_text().strip() == want and importable(python, env):
        log("up to date")
        return 0
    t0 = time.monotonic()
    build(venv, Path(args.build_dir) / PACKAGE, env)
    if not importable(python, env):
        raise SystemExit(f"{PACKAGE}: error: built, but '{CHECK}' fails in {python}")
    want = fingerprint(python, env)                       # the generator wheels may be new now
    stamp.write_text(want + "\n")
    log(f"built and installed in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
