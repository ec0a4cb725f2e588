"""What Linux does to a real-time thread that keeps a CPU busy (not a test; docs/timing.md).

A SCHED_FIFO thread pinned to one CPU runs a 1 kHz loop that works ``duty`` of each period
(spinning) and sleeps to the next deadline (re-anchored when late: no catching up), beside an
ordinary process (``python3 -c 'while True: pass'``, ended by PID) pinned to the same CPU.
Linux keeps 5 % of each second for ordinary processes on a CPU that real-time threads would
otherwise hold: since 6.12 the *fair server* (a deadline server, 50 ms every 1 s per CPU, in
``/sys/kernel/debug/sched/fair_server``), before that real-time throttling
(``kernel.sched_rt_runtime_us``, 950 ms of every 1 s). When the real-time thread asks for more
than that, it is stopped for about 50 ms once a second. That is the 50-55 ms pause of the
CANopen loop at 1 kHz when its threads and the drive simulator float over a 2-core machine
(``bench_loop.py --canopen --no-pin``).

Usage: python bench/bench_fair_server.py [--seconds 10] [--duties 0.85 0.97] [--cpu 0]
Prints, per duty, the cycles, the pauses over 10 ms (count and a typical length) and the
kernel's settings as far as they can be read. Needs SCHED_FIFO (root or an rtprio limit).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time


def probe(duty: float, seconds: float, cpu: int) -> None:
    """Child process: the real-time loop; prints ``cycles pauses worst_ms median_pause_ms``."""
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    period, t, end = 1e-3, time.monotonic(), time.monotonic() + seconds
    last, gaps, cycles = t, [], 0
    while t < end:
        start = time.monotonic()
        gap = start - last
        if gap > 0.010:
            gaps.append(gap)
        last = start
        cycles += 1
        while time.monotonic() - start < duty * period:   # the cycle's work
            pass
        t = max(t + period, time.monotonic())             # re-anchored when late
        time.sleep(max(0.0, t - time.monotonic()))
    gaps.sort()
    med = 1e3 * gaps[len(gaps) // 2] if gaps else 0.0
    print(cycles, len(gaps), f"{1e3 * max(gaps, default=0.0):.1f}", f"{med:.1f}")


def read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"unreadable ({e.strerror})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--duties", type=float, nargs="+", default=[0.85, 0.97])
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--probe", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe is not None:
        probe(args.probe, args.seconds, args.cpu)
        return
    print(f"kernel {platform.release()}, {os.cpu_count()} CPUs; kernel.sched_rt_runtime_us "
          f"{read('/proc/sys/kernel/sched_rt_runtime_us')} of {read('/proc/sys/kernel/sched_rt_period_us')}; "
          f"fair server runtime on CPU {args.cpu}: "
          f"{read(f'/sys/kernel/debug/sched/fair_server/cpu{args.cpu}/runtime')} ns")
    for duty in args.duties:
        hog = subprocess.Popen(["taskset", "-c", str(args.cpu), sys.executable, "-c", "while True: pass"])
        try:
            out = subprocess.run([sys.executable, __file__, "--probe", str(duty), "--seconds", str(args.seconds),
                                  "--cpu", str(args.cpu)], capture_output=True, text=True, timeout=args.seconds + 60)
        finally:
            hog.kill()                                   # ended by PID
            hog.wait()
        if out.returncode != 0:
            sys.exit(f"bench_fair_server: the probe failed: {out.stderr.strip().splitlines()[-1:]}")
        cycles, pauses, worst, med = out.stdout.split()
        print(f"real-time loop at 1 kHz working {duty:.0%} of each period, an ordinary busy process on the same "
              f"CPU, {args.seconds:g} s: {cycles} cycles, {pauses} pauses over 10 ms (median {med} ms, "
              f"worst {worst} ms)")


if __name__ == "__main__":
    main()
