"""SIGTERM and SIGHUP as an exception, so the command-line tools end cleanly.

A signal's default action ends the process at once: no ``finally`` and no ``except`` runs,
so an atomic write in progress (:mod:`delta_core.atomic_file`) would leave its temporary file
behind. The tools' ``main`` functions run under :func:`signals_raise`: the first SIGTERM (or
SIGHUP, a closed terminal) raises :class:`Terminated` in the main thread at its next bytecode,
the stack unwinds through every clean-up, and ``main`` prints ``<prog>: terminated by
SIGTERM`` and returns :attr:`Terminated.exit_code` = 128 + signal number (143 for SIGTERM),
the status a shell reports for a process the signal killed. Further signals while unwinding
are ignored, so a second SIGTERM cannot interrupt the clean-up. A signal the parent set to
be ignored (``nohup`` ignores SIGHUP) stays ignored. SIGINT keeps Python's own
KeyboardInterrupt.

Example::

    >>> import os, signal
    >>> before = signal.getsignal(signal.SIGTERM)
    >>> with signals_raise():
    ...     try:
    ...         if signal.getsignal(signal.SIGTERM) is not before:   # ours is installed
    ...             os.kill(os.getpid(), signal.SIGTERM)
    ...             for _ in range(10 ** 6):  # the handler raises at one of these bytecodes
    ...                 pass
    ...     except Terminated as e:
    ...         print(e, e.exit_code)
    terminated by SIGTERM 143
"""
from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

#: The signals turned into :class:`Terminated`.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM / SIGHUP under :func:`signals_raise`.

    A BaseException, like KeyboardInterrupt: ``except Exception`` does not swallow it.
    """

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process ended by that signal."""
        return 128 + self.signum


@contextmanager
def signals_raise(signums=SIGNALS):
    """Within the block, the first of ``signums`` raises :class:`Terminated` (main thread only;
    elsewhere the block runs unchanged). Handlers are restored on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def handler(signum, frame):
        nonlocal fired
        if fired:               # already unwinding: let the clean-up finish
            return
        fired = True
        raise Terminated(signum)

    old = {}
    try:
        for s in signums:
            if signal.getsignal(s) is signal.SIG_DFL:
                old[s] = signal.signal(s, handler)
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run_terminable(prog: str, fn, *args, lead: str = "") -> int:
    """``fn(*args)`` under :func:`signals_raise`: its exit status, or on SIGTERM / SIGHUP
    ``<lead><prog>: <signal>`` on stderr and 128 + the signal number (the command-line tools'
    ``main``; ``lead`` is ``"\\n"`` after a progress line)."""
    with signals_raise():
        try:
            return fn(*args)
        except Terminated as e:
            print(f"{lead}{prog}: {e}", file=sys.stderr)
            return e.exit_code
