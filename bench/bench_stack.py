"""Stack benchmark (not a test): control-loop timing, feedforward latency, tracking error.

1. Control-loop period over ``--seconds`` (default 20) at 500 Hz and 1 kHz on the wall clock
   (``use_sim_time:=false``: what real drives get): the hardware node (simulated drives) in its
   own process, the identification node refitting its window every second in another, idle
   and with ``--busy`` (default 2) busy processes, with real-time priority (``thread_priority``
   50, SCHED_FIFO) and without (0). Periods from the stamps of /joint_states (one per cycle).
   Target: p99 <= 1.2 x nominal at 500 Hz under that load with real-time priority.
2. With ``feedforward: topic``: latency from the cycle that previewed a setpoint (published on
   /delta/desired_state by the node's broadcaster) to its feedforward (/delta/feedforward from
   the dynamics node, another process) back in the control-loop process, as the loop measures it
   (``~/status`` at the end: every answer counted), idle and busy, and how many cycles used the
   topic's answer (it must come back within one period) or the in-process model. The default
   feedforward is the in-process model; this measures what the topic costs.
3. Tracking error on the pick-and-place cycle with PD only, the nominal feedforward and the
   identified feedforward: ``delta-bringup --demo`` (simulated time). Target: identified >= 10x
   better than PD.

Usage: python bench/bench_stack.py [--seconds 20] [--busy 2] [--skip-demo]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _machine import describe  # bench/_machine.py

os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 90 + 10))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402


def spawn(module, *ros_args):
    return subprocess.Popen([sys.executable, "-m", module, "--ros-args", *ros_args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(*procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()


def busy_processes(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def loop_timing(rate: float, seconds: float, priority: int, busy: int):
    hw = spawn("delta_hardware.ros.hardware_node", "-p", f"control_rate:={rate}", "-p", "feedforward:=model",
               "-p", "publish_desired_state:=false", "-p", "use_sim_time:=false",
               "-p", f"thread_priority:={priority}")
    ident = spawn("delta_dynamics.ros.identification_node", "-p", "refit_period:=1.0", "-p", "min_samples:=100",
                  "-p", "window:=10.0", "-p", "output:=/tmp/bench_stack_identified.yaml")
    hogs = busy_processes(busy)
    node = rclpy.create_node("bench_loop")
    stamps = np.zeros(int(rate * (seconds + 30)))
    n = [0]

    def on_js(m):
        if n[0] < len(stamps):
            stamps[n[0]] = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
            n[0] += 1
    node.create_subscription(JointState, "/joint_states", on_js, QoSProfile(depth=5000))
    try:
        t_end = time.monotonic() + 30
        while n[0] < 50 and time.monotonic() < t_end:
            rclpy.spin_once(node, timeout_sec=0.1)
        k0 = n[0] + int(2 * rate)                  # skip the first two seconds
        t_end = time.monotonic() + seconds + 2.0
        while time.monotonic() < t_end:
            rclpy.spin_once(node, timeout_sec=0.05)
    finally:
        stop(hw, ident)
        for h in hogs:
            h.kill()
        node.destroy_node()
    st = np.sort(stamps[k0:n[0]])
    d = np.diff(st)
    lost = int(round((st[-1] - st[0]) * rate)) + 1 - len(st)
    return d, lost


def feedforward_latency(seconds: float, busy: int) -> dict:
    """The hardware node's ``~/status`` after ``seconds`` of topic feedforward from the dynamics node."""
    hw = spawn("delta_hardware.ros.hardware_node", "-p", "feedforward:=topic", "-p", "use_sim_time:=false")
    dyn = spawn("delta_dynamics.ros.dynamics_node")
    hogs = busy_processes(busy)
    node = rclpy.create_node("bench_latency")
    status = node.create_client(Trigger, "/delta_hardware/status")
    st = {}
    try:
        if status.wait_for_service(timeout_sec=120):
            t_end = time.monotonic() + seconds + 5
            while time.monotonic() < t_end:
                rclpy.spin_once(node, timeout_sec=0.1)
            fut = status.call_async(Trigger.Request())
            rclpy.spin_until_future_complete(node, fut, timeout_sec=10)
            if fut.done():
                st = json.loads(fut.result().message)
    finally:
        stop(hw, dyn)
        for h in hogs:
            h.kill()
            h.wait()
        node.destroy_node()
    return st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the stack in the loaded runs")
    ap.add_argument("--skip-demo", action="store_true")
    args = ap.parse_args()
    print(f"machine: {describe()}")
    rclpy.init()
    rows = []
    try:
        for rate in (500.0, 1000.0):
            for busy in (0, args.busy):
                for priority in (50, 0):
                    d, lost = loop_timing(rate, args.seconds, priority, busy)
                    nominal = 1e3 / rate
                    p50, p99, mx = (1e3 * np.percentile(d, 50), 1e3 * np.percentile(d, 99), 1e3 * d.max())
                    target = "-"
                    if rate == 500.0 and busy and priority:
                        target = f"p99 <= {1.2 * nominal:.2f} ms {'✓' if p99 <= 1.2 * nominal else '✗'}"
                    load = f"{busy} busy" if busy else "idle"
                    rows.append(f"| loop period, {rate:g} Hz, {load}, refit beside, priority "
                                f"{priority or 'normal'} | p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {mx:.2f} ms, "
                                f"{lost} cycles missing of {len(d) + 1 + lost} | {target} |")
                    print(rows[-1], flush=True)
        for busy in (0, args.busy):
            st = feedforward_latency(min(args.seconds, 20.0), busy)
            p50 = float(st.get("feedforward_latency_p50_ms") or "nan")
            p99 = float(st.get("feedforward_latency_p99_ms") or "nan")
            used, model = st.get("feedforward_from_topic", 0), st.get("feedforward_from_model", 0)
            rows.append(f"| topic feedforward: cycle -> answer back in the loop (loop process, node, DDS, dynamics "
                        f"node), {f'{busy} busy' if busy else 'idle'} | p50 {p50:.3f} ms, p99 {p99:.3f} ms over "
                        f"{st.get('feedforward_answers', 0)} answers; {used} cycles used the topic's answer, "
                        f"{model} the in-process model | - |")
            print(rows[-1], flush=True)
    finally:
        rclpy.shutdown()
    if not args.skip_demo:
        out = Path(tempfile.mkdtemp(prefix="bench_demo_"))
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "delta_bringup.main", "--demo", "--out", str(out), "--cycles", "2"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
            sys.exit("demo failed")
        res = json.loads((out / "demo_results.json").read_text())
        pd, nom, idf = (res[k]["rms_rad"] for k in ("PD only", "nominal feedforward", "identified feedforward"))
        ok = "✓" if pd / idf >= 10 else "✗"
        rows.append(f"| pick-and-place RMS tracking error (demo, simulated time, {time.monotonic() - t0:.0f} s) | PD "
                    f"only {1e3 * pd:.2f} mrad, nominal feedforward {1e3 * nom:.2f} mrad, identified feedforward "
                    f"{1e3 * idf:.2f} mrad: {pd / idf:.1f}x | identified >= 10x better than PD {ok} |")
        print(rows[-1], flush=True)
    print("\n| measurement | result | target |\n|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
