"""A SIGTERM during an atomic write leaves no temporary file and the old target untouched.

A real signal, sent with ``os.kill`` to a real process while it is inside the write:

* :func:`delta_core.atomic_file.atomic_write_chunks` in a child that blocks in the middle
  of its chunks (deterministic: the child says when it is inside the write), with and without
  :func:`delta_core.termination.signals_raise` (without, the default action kills the child
  and the temporary file stays: the problem this guards against);
* the real ``delta-dynamics trajectory`` writing a 1,000,000-row CSV (about 150 MB, several
  seconds of writing): the signal goes as soon as its temporary file appears.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

OLD = b"the old content\n"

CHILD = textwrap.dedent("""
    import sys
    from delta_core.atomic_file import atomic_write_chunks
    from delta_core.termination import Terminated, signals_raise

    def chunks():
        yield "x" * (8 << 20)            # 8 MB written ...
        print("inside", flush=True)      # ... then wait inside the write for the signal
        sys.stdin.read()
        yield "never"

    def write():
        atomic_write_chunks(sys.argv[1], chunks())

    if sys.argv[2] == "handled":
        with signals_raise():
            try:
                write()
            except Terminated as e:
                print(f"child: {e}", file=sys.stderr)
                sys.exit(e.exit_code)
    else:
        write()
""")


def _tmp_files(d):
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("mode", ["handled", "default"])
def test_sigterm_inside_an_atomic_write(tmp_path, mode):
    target = tmp_path / "target.txt"
    target.write_bytes(OLD)
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(target), mode], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"inside\n"
        assert len(_tmp_files(tmp_path)) == 1          # the write is under way
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert target.read_bytes() == OLD
    if mode == "handled":
        assert p.returncode == 143, err
        assert err.decode().strip() == "child: terminated by SIGTERM"
        assert _tmp_files(tmp_path) == []
    else:                                              # what signals_raise prevents
        assert p.returncode == -signal.SIGTERM
        assert len(_tmp_files(tmp_path)) == 1


def test_sigterm_during_a_large_cli_write(tmp_path):
    out = tmp_path / "traj.csv"
    out.write_bytes(OLD)
    p = subprocess.Popen([sys.executable, "-m", "delta_dynamics.cli", "trajectory", "circle",
                          "--duration", "999", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # poll for the temporary file (no timing assumption: it exists for the whole write)
        while not _tmp_files(tmp_path) and p.poll() is None:
            time.sleep(0.01)
        assert p.poll() is None, "the CLI finished before its temporary file was seen"
        p.send_signal(signal.SIGTERM)
        so, se = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = se.decode()
    assert p.returncode == 143, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "delta-dynamics: terminated by SIGTERM"
    assert out.read_bytes() == OLD
    assert _tmp_files(tmp_path) == []


def test_the_handlers_are_restored_and_nohup_is_respected():
    from delta_core.termination import signals_raise
    before = signal.getsignal(signal.SIGTERM)
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)       # as nohup leaves it
    try:
        with signals_raise():
            assert signal.getsignal(signal.SIGTERM) is not before
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGHUP, old_hup)


def test_every_cli_main_runs_under_signals_raise(monkeypatch, capsys):
    """The three tools end cleanly on SIGTERM: each main enters signals_raise (directly or
    through delta_core.termination.run_terminable) before it parses its arguments."""
    import contextlib

    from delta_core import termination
    from delta_description import cli as description
    from delta_dynamics import cli as dynamics
    from delta_dynamics.identification import cli as identify
    entered = []
    real = termination.signals_raise

    @contextlib.contextmanager
    def spy():
        entered.append(True)
        with real():
            yield
    monkeypatch.setattr(termination, "signals_raise", spy)
    for mod in (description, dynamics, identify):
        monkeypatch.setattr(mod, "signals_raise", spy, raising=False)
        entered.clear()
        with pytest.raises(SystemExit):
            mod.main(["--help"])
        assert entered, mod.__name__
