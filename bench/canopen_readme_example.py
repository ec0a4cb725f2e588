"""The README's CANopen example, run as a user would (not a test): ``delta-drive-sim`` in one
process, ``delta-bringup --hardware canopen`` on the same udp_multicast channel in others,
a homing move and a pick-and-place trajectory sent over ROS; ``--runs`` times, with ``--busy``
busy processes beside it. Reports per run whether the trajectory finished without a fault.

Usage: python bench/canopen_readme_example.py [--runs 5] [--busy 2] [--wall]
(``--wall``: the loop on the steady clock instead of the drive simulator's simulated time)
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

import numpy as np
from _machine import describe  # bench/_machine.py

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def client(timeout: float = 120.0) -> tuple[bool, list]:
    """Home, then three pick-and-place cycles; (finished without a fault, events)."""
    import rclpy
    from builtin_interfaces.msg import Duration
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from delta_dynamics.rotary.dynamics import joint_state
    from delta_dynamics.rotary.kinematics import inverse_kinematics
    from delta_dynamics.rotary.model import RotaryModel
    from delta_dynamics.motion.trajectories import pick_place
    rclpy.init()
    node = rclpy.create_node("readme_example")
    events = []
    node.create_subscription(String, "/delta_hardware/events", lambda m: events.append(m.data), 100)
    pub = node.create_publisher(JointTrajectory, "/delta_hardware/joint_trajectory", 10)
    model = RotaryModel.from_robot("nt_robot")
    start = np.array([-0.1525, 0.0, -0.78])
    deadline = time.monotonic() + timeout

    def send(ts, q, qd=None, qdd=None):
        msg = JointTrajectory(joint_names=ARMS)
        for k in range(len(ts)):
            p = JointTrajectoryPoint(positions=[float(x) for x in q[k]],
                                     time_from_start=Duration(sec=int(ts[k]), nanosec=int(round((ts[k] % 1) * 1e9))))
            if qd is not None:
                p.velocities, p.accelerations = [float(x) for x in qd[k]], [float(x) for x in qdd[k]]
            msg.points.append(p)
        n0 = len(events)
        pub.publish(msg)
        while time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
            new = events[n0:]
            if any(e.startswith(("quick stop", "fault")) or "rejected" in e for e in new):
                return False
            if any(e.startswith("trajectory finished") for e in new):
                return True
        return False
    try:
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        ok = send([2.0], [inverse_kinematics(model, start)])
        tr = pick_place(start=tuple(start), lift_time=0.12, move_time=0.3, overlap=0.6, dwell=0.05, cycles=3, dt=1e-3)
        q, qd, qdd = joint_state(model, tr.X, tr.Xd, tr.Xdd)
        idx = np.arange(10, len(tr.t), 10)
        ok = ok and send(tr.t[idx], q[idx], qd[idx], qdd[idx])
        return ok, events
    finally:
        node.destroy_node()
        rclpy.shutdown()


def one_run(k: int, wall: bool) -> bool:
    channel = f"239.74.163.2:{44000 + (os.getpid() + k) % 900}"
    env = dict(os.environ, ROS_DOMAIN_ID=str(20 + (os.getpid() + k) % 70))
    sim = subprocess.Popen(["delta-drive-sim", "--interface", "udp_multicast", "--channel", channel,
                            "--robot", "nt_robot", "--drives-config", "generic_cia402"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(2.0)
    stack = subprocess.Popen(["delta-bringup", "--hardware", "canopen", "--can-interface", "udp_multicast",
                              "--can-channel", channel, "--no-sim-time" if wall else "--sim-time"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        out = subprocess.run([sys.executable, __file__, "--client"], env=env, capture_output=True, text=True,
                             timeout=300)
        ok = out.returncode == 0
        if not ok:
            print(out.stdout[-2000:], out.stderr[-2000:])
        return ok
    finally:
        for p in (stack, sim):
            p.send_signal(signal.SIGINT)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--wall", action="store_true")
    ap.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        ok, events = client()
        faults = [e for e in events if e.startswith(("quick stop", "fault")) or "rejected" in e]
        print("\n".join(faults))
        sys.exit(0 if ok else 1)
    print(f"machine: {describe()}")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        results = []
        for k in range(args.runs):
            results.append(one_run(k, args.wall))
            print(f"run {k + 1}: {'finished, no fault' if results[-1] else 'FAILED'}", flush=True)
    finally:
        for h in hogs:
            h.kill()
    print(f"{sum(results)} of {len(results)} runs finished without a fault "
          f"({'steady clock' if args.wall else 'simulated time'}, {args.busy} busy processes)")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
