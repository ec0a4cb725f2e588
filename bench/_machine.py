"""What the bench scripts share: the machine a benchmark ran on, its header and its table."""
import datetime
import os
import platform
from pathlib import Path

import numpy as np


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def print_header(title: str, blank: bool = True) -> None:
    """The benchmark's first lines: ``# <title>, <date>``, the machine with its load at start,
    the Python and numpy versions (then a blank line unless ``blank`` is False)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"# {title}, {datetime.date.today().isoformat()}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, load average {load[0]:.2f} at start")
    print(f"python {platform.python_version()}, numpy {np.__version__}" + ("\n" if blank else ""), flush=True)


def mark(ok: bool) -> str:
    """✓ for a target met, ✗ for one missed."""
    return "✓" if ok else "✗"


def print_table(head: tuple, rows: list) -> None:
    """A Markdown table of four columns, each as wide as its widest cell."""
    w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")


def describe() -> str:
    """One line: CPU, cores, Python, current load."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load:.2f}"
