"""Progress of long operations: a bar on a terminal, one summary line otherwise.

Every command that can take more than a few seconds (reading a big bag, identification's
passes, ``delta-identify excite``, ``delta-dynamics simulate``) reports through
:class:`Progress`:

* on a terminal (stderr is a TTY, or ``enabled=True``): a ``tqdm`` bar on stderr, redrawn at
  most 10 times a second, with the rate and the time left;
* otherwise (a pipe, a log file, CI): nothing while it runs, then one line on stderr when it
  ends, ``label: done/total unit in 12.3 s`` (plus ``extra``), so a log says what took the time;
* ``enabled=False``: no bar; with ``summary=False`` as well (``--no-progress``) nothing at all.

A :class:`Progress` is a callable ``progress(done, total, value=None)``, the shape the
computing functions take (they never import this module: the layers below the command line
only call the callable they are given).

>>> import io
>>> out = io.StringIO()
>>> with Progress("reading", total=4, unit="messages", enabled=False, summary=True, stream=out) as p:
...     for k in range(1, 5):
...         p(k, 4)
>>> out.getvalue().startswith("reading: 4/4 messages in ")
True
"""
from __future__ import annotations

import math
import sys
import threading
import time


class Progress:
    """A progress report (see the module docstring).

    ``label``: what runs; ``total``: the amount of work (or None until the first call gives
    it); ``unit``: what is counted; ``enabled``: bar on (True), off (False), or None: a bar
    when ``stream`` is a terminal; ``summary``: the one-line summary when there is no bar, on
    ``summary_stream`` (default ``stream``; a command whose stderr carries only errors sends it
    to stdout with its other notes).
    """

    def __init__(self, label: str, total: float | None = None, unit: str = "", enabled: bool | None = None,
                 summary: bool = True, stream=None, value_label: str = "best", summary_stream=None):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar_on = bool(enabled)
        self.summary = summary and not self.bar_on
        self.value_label = value_label
        self.summary_stream = summary_stream if summary_stream is not None else self.stream
        self.t0 = time.perf_counter()
        self.done = 0
        self.value = None
        self.bar = None
        self.closed = False
        self.extra = ""

    def _bar(self):
        if self.bar is None:
            # tqdm: loaded when a bar is drawn
            from tqdm import tqdm
            self.bar = tqdm(total=self.total, desc=self.label, unit=f" {self.unit}" if self.unit else "it",
                            file=self.stream, dynamic_ncols=True, mininterval=0.1, leave=True,
                            unit_scale=bool(self.total and self.total >= 10000))
        return self.bar

    def __call__(self, done, total=None, value=None):
        if total is not None and total != self.total:
            self.total = total
            if self.bar is not None:
                self.bar.total = total
        self.done = done
        if value is not None:
            self.value = value
        if self.bar_on:
            bar = self._bar()
            bar.n = done
            if value is not None and math.isfinite(value):
                bar.set_postfix_str(f"{self.value_label} {value:.6g}", refresh=False)
            bar.refresh() if done >= (self.total or 0) else bar.update(0)

    def tick(self, every: float = 1.0):
        """Redraw the bar every ``every`` s until closed (work reported in few, long steps:
        the elapsed time still moves). No-op without a bar."""
        if not self.bar_on:
            return
        self._bar()
        self._stop = threading.Event()

        def run():
            while not self._stop.wait(every):
                bar = self.bar
                if bar is not None and not self.closed:
                    bar.refresh()
        self._ticker = threading.Thread(target=run, name="progress-tick", daemon=True)
        self._ticker.start()

    def set_extra(self, text: str):
        """Text the summary line ends with (e.g. a result)."""
        self.extra = text

    def close(self):
        """Stop the ticker, close the bar and print the timing line (once; later calls do
        nothing)."""
        if self.closed:
            return
        self.closed = True
        if getattr(self, "_stop", None) is not None:
            self._stop.set()
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()
        elif self.summary:
            took = time.perf_counter() - self.t0
            amount = f"{_fmt(self.done)}/{_fmt(self.total)}" if self.total else _fmt(self.done)
            extra = f", {self.value_label} {self.value:.6g}" if self.value is not None else ""
            self.summary_stream.write(f"{self.label}: {amount}{' ' + self.unit if self.unit else ''} in "
                                      f"{took:.1f} s{extra}{'; ' + self.extra if self.extra else ''}\n")
            self.summary_stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _fmt(x) -> str:
    if x is None:
        return "?"
    return f"{int(x)}" if float(x).is_integer() else f"{x:.4g}"


def progress_mode(no_progress: bool, progress: bool) -> bool | None:
    """``enabled`` for :class:`Progress` from a command's ``--no-progress`` / ``--progress``."""
    if no_progress:
        return False
    return True if progress else None


__all__ = ["Progress", "progress_mode"]
