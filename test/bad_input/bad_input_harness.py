"""Runs bad-input cases against the real command lines and checks what every case must show.

A case is data (:class:`Case`): the files to create, the command-line arguments, the error
text expected and the exit status. :func:`check_case` runs it, in-process through the tool's
``main(argv)`` (fast) or as a real subprocess (``python -m ...``, the console entry), and
asserts:

* the exit status (2 for bad input unless the case says otherwise);
* the last line of stderr is ``<prog>[ <subcommand>]: error: ...`` and holds the expected text;
* no ``Traceback`` anywhere on stderr, stderr's error line is one line of sane length;
* the output file that existed before the run is unchanged (bytes and mtime) and no
  temporary file (``.*.tmp``) is left in the folder.

Placeholders in ``args`` and in text files: ``{tmp}`` the case's folder, ``{out}`` the
pre-existing output file, ``{nt}`` the path of the nt_robot preset.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from delta_core.share import share_file

#: The documented exit status of bad input.
BAD_INPUT = 2
#: Longest acceptable error line (a message quoting a whole file is not clear).
MAX_ERROR_LINE = 600
NT_ROBOT = share_file("config", "robots", "nt_robot.yaml")
OUT_CONTENT = b"pre-existing output: must survive a failed run\n"


@dataclass
class Case:
    """One bad input: ``args`` for the tool, ``files`` to create first (name -> str, bytes or
    a callable(folder) -> None), the ``expect`` text of the error line, the exit ``code``."""

    id: str
    args: list
    expect: str
    files: dict = field(default_factory=dict)
    code: int = BAD_INPUT
    subprocess: bool = False
    out_name: str = "out.csv"

    def __str__(self) -> str:
        return self.id


def sparse(size: int):
    """A file maker: a sparse file of ``size`` bytes (a "10 GB" input that costs no disk)."""
    def make(p):
        with open(p, "wb") as f:
            f.truncate(size)
    return make


def fill(text: str, tmp: Path, out: Path) -> str:
    return (text.replace("{tmp}", str(tmp)).replace("{out}", str(out))
            .replace("{nt}", str(NT_ROBOT)))


def prepare(case: Case, tmp: Path):
    """Create the case's files and the pre-existing output; return (argv, out, its state)."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / case.out_name
    for name, content in case.files.items():
        p = tmp / name
        if callable(content):
            content(p)
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(fill(content, tmp, out), encoding="utf-8")
    out.write_bytes(OUT_CONTENT)
    os.utime(out, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    argv = [fill(str(a), tmp, out) for a in case.args]
    return argv, out


def run_in_process(main, argv):
    """(status, stdout, stderr) of ``main(argv)``; argparse's SystemExit gives the status."""
    so, se = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, so.getvalue(), se.getvalue()


def run_subprocess(module: str, argv, timeout: float = 300):
    r = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def verdict(case: Case, prog: str, code, stderr: str, out: Path) -> list:
    """Everything wrong with a run, as text (empty: the case passes). Each problem starts
    with its class: ``crash``, ``unsafe`` or ``unclear``."""
    problems = []
    if "Traceback" in stderr:
        problems.append(f"crash: a traceback on stderr: {stderr[-2000:]}")
    if code not in (0, 1, 2, 130, 143):
        problems.append(f"crash: exit status {code}")
    if code == 0 and case.code != 0:
        problems.append("unsafe: accepted (exit status 0)")
    elif code != case.code and not any(p.startswith("crash") for p in problems):
        problems.append(f"unclear: exit status {code}, expected {case.code}")
    if out.read_bytes() != OUT_CONTENT or out.stat().st_mtime_ns != 1_000_000_000_000_000_000:
        problems.append("unsafe: the pre-existing output file changed")
    left = [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    if left:
        problems.append(f"unsafe: temporary files left: {left}")
    if code != 0:
        line = error_line(stderr)
        if case.code == BAD_INPUT and not (line.startswith(f"{prog}: error: ") or
                                           line.startswith(f"{prog} ") and ": error: " in line):
            problems.append(f"unclear: the last stderr line is not '{prog}: error: ...': {line!r}")
        if case.expect not in line:
            problems.append(f"unclear: {case.expect!r} not in the error line {line!r}")
        if len(line) > MAX_ERROR_LINE:
            problems.append(f"unclear: error line of {len(line)} characters")
    return problems


def check_case(case: Case, tmp: Path, prog: str, main, module: str) -> None:
    """Run ``case`` (in-process, or as a subprocess if ``case.subprocess``) and assert that
    :func:`verdict` finds nothing."""
    argv, out = prepare(case, tmp)
    if case.subprocess:
        code, so, se = run_subprocess(module, argv)
    else:
        code, so, se = run_in_process(main, argv)
    problems = verdict(case, prog, code, se, out)
    assert not problems, f"{case.id}: {problems}\nstderr: {se[-3000:]}"


# ----------------------------------------------------------------------------- special files

def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _socket(p: Path) -> None:
    import socket
    s = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    try:                             # a short relative name: AF_UNIX paths are limited to 107 bytes
        os.chdir(p.parent)
        s.bind(p.name)
    finally:
        os.chdir(cwd)
        s.close()                    # the socket file stays


def _char_device(p: Path) -> None:
    os.symlink("/dev/null", p)       # followed: a character device (/dev/zero would never end)


def _block_device(p: Path) -> None:
    import stat
    os.mknod(p, stat.S_IFBLK | 0o600, os.makedev(7, 0))      # a loop device node, never opened


def _directory(p: Path) -> None:
    p.mkdir()


def _symlink_loop(p: Path) -> None:
    os.symlink(p.name, p)            # points at itself


def _dangling(p: Path) -> None:
    os.symlink(p.name + ".gone", p)


#: Every kind of path that is not a readable regular file: (maker(path), the words of the
#: refusal). A reader must refuse each by name, without blocking (a FIFO) and without
#: reading (a device).
SPECIALS = {
    "fifo": (_fifo, "a FIFO (named pipe)"),
    "socket": (_socket, "a socket"),
    "char-device": (_char_device, "a character device"),
    "block-device": (_block_device, "a block device"),
    "directory": (_directory, "a directory"),
    "symlink-loop": (_symlink_loop, "a symlink loop"),
    "dangling-symlink": (_dangling, "a dangling symlink"),
}


def _read_only(p: Path) -> None:
    p.write_text("keep me\n")
    p.chmod(0o444)


#: Output paths that must be refused before any work: (maker(path), words of the refusal).
OUTPUT_SPECIALS = {
    "fifo": (_fifo, "is a FIFO (named pipe); cannot write"),
    "socket": (_socket, "is a socket; cannot write"),
    "char-device": (_char_device, "is a character device; cannot write"),
    "block-device": (_block_device, "is a block device; cannot write"),
    "directory": (_directory, "is a directory; give a file name"),
    "symlink-loop": (_symlink_loop, "is a symlink loop"),
    "read-only": (_read_only, "is a read-only file; refusing to replace it"),
}
