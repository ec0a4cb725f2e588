"""Soak (not a test): the hardware node on the simulated robot for ``--minutes``, moved without
a pause by random reachable joint trajectories and streamed commands, with a bad message among
them every few seconds; reports the node's memory over time (RSS from /proc), the events it
published, quick stops and whether it stayed alive.

Usage: python bench/soak_stack.py [--minutes 10] [--rate 1000] [--sim-time | --wall]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
from _machine import describe  # bench/_machine.py

os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 90 + 10))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy  # noqa: E402
from builtin_interfaces.msg import Duration  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from delta_dynamics.rotary.kinematics import inverse_kinematics, sample_workspace  # noqa: E402
from delta_dynamics.rotary.model import RotaryModel  # noqa: E402

ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return math.nan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--wall", action="store_true", help="the wall-clock simulation (default: simulated time)")
    args = ap.parse_args()
    print(f"machine: {describe()}")
    model = RotaryModel.from_robot("nt_robot")
    goals = inverse_kinematics(model, sample_workspace(model, 400, seed=3, min_measure=0.2))
    hw = subprocess.Popen([sys.executable, "-m", "delta_hardware.ros.hardware_node", "--ros-args",
                           "-p", f"control_rate:={args.rate}", "-p", "feedforward:=model",
                           "-p", f"use_sim_time:={'false' if args.wall else 'true'}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    node = rclpy.create_node("soak")
    events, js = [], [None]
    node.create_subscription(String, "/delta_hardware/events", lambda m: events.append(m.data), 100)
    node.create_subscription(JointState, "/joint_states", lambda m: js.__setitem__(0, m), 10)
    traj = node.create_publisher(JointTrajectory, "/delta_hardware/joint_trajectory", 10)
    cmd = node.create_publisher(JointState, "/delta/joint_commands", 10)
    reset = node.create_client(Trigger, "/delta_hardware/reset")
    rng = np.random.default_rng(1)
    memory, sent, bad, k = [], 0, 0, 0
    t0 = time.monotonic()
    next_mem = t0
    try:
        while js[0] is None and time.monotonic() < t0 + 60:
            rclpy.spin_once(node, timeout_sec=0.1)
        t0 = time.monotonic()
        while time.monotonic() < t0 + 60 * args.minutes:
            k += 1
            if k % 5 == 0:                                  # a bad one among the good
                msg = JointTrajectory(joint_names=ARMS, points=[JointTrajectoryPoint(
                    positions=[float("nan"), 0.2, 0.2], time_from_start=Duration(sec=1))])
                traj.publish(msg)
                bad += 1
            elif k % 7 == 0:
                q = np.array(js[0].position)
                for _ in range(50):                         # 0.5 s of streamed positions
                    q = q + rng.uniform(-0.004, 0.004, 3)
                    cmd.publish(JointState(name=ARMS, position=q.tolist()))
                    rclpy.spin_once(node, timeout_sec=0.01)
            else:
                g = goals[rng.integers(len(goals))]
                traj.publish(JointTrajectory(joint_names=ARMS, points=[JointTrajectoryPoint(
                    positions=g.tolist(), time_from_start=Duration(sec=1, nanosec=200_000_000))]))
                sent += 1
            end = time.monotonic() + 1.5
            while time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
            if any(e.startswith(("quick stop", "fault")) for e in events[-20:]):
                reset.call_async(Trigger.Request())
            if time.monotonic() >= next_mem:
                memory.append((time.monotonic() - t0, rss_mb(hw.pid)))
                next_mem += 30
            if hw.poll() is not None:
                break
        alive = hw.poll() is None
    finally:
        if hw.poll() is None:
            hw.send_signal(signal.SIGINT)
        code = hw.wait(20)
        node.destroy_node()
        rclpy.shutdown()
    m = np.array(memory)
    slope = float(np.polyfit(m[len(m) // 3:, 0] / 60, m[len(m) // 3:, 1], 1)[0]) if len(m) > 4 else math.nan
    summary = {
        "minutes": args.minutes, "clock": "wall" if args.wall else "sim", "rate_hz": args.rate,
        "trajectories": sent, "bad_messages": bad, "alive": alive, "exit_code": code,
        "rss_mb_start": float(m[0, 1]) if len(m) else None, "rss_mb_end": float(m[-1, 1]) if len(m) else None,
        "rss_growth_mb_per_min_after_warmup": slope,
        "quick_stops": sum(e.startswith("quick stop") for e in events),
        "rejected": sum("rejected" in e for e in events),
        "finished": sum(e.startswith("trajectory finished") for e in events),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
