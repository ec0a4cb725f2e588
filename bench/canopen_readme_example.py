"""The README's CANopen example, run as a user would (not a test): ``delta-drive-sim`` in one
process, ``delta-bringup --hardware canopen`` on the same udp_multicast channel in others,
a homing move and a pick-and-place trajectory sent over ROS; ``--runs`` times, with ``--busy``
busy processes beside it.

``--fault emcy`` (default): during the pick-and-place the drive of axis 2 faults (EMCY 0x2310,
continuous over-current, a fault a reset clears: ``delta-drive-sim --inject-fault 2:0x2310``,
triggered by SIGUSR1 from the client). A run passes when the stack reports the fault naming
arm_2_joint and 0x2310, the other two drives are quick-stopped, ``~/reset`` recovers, and
after SIGINT to ``delta-bringup`` (exit 0) every drive is in *switch on disabled* (read from
``delta-drive-sim``'s last line). ``--fault none``: the trajectory must finish without one.

Usage: python bench/canopen_readme_example.py [--runs 20] [--busy 0] [--fault emcy|none] [--wall]
(``--wall``: the loop on the steady clock instead of the drive simulator's simulated time)

Reports per run what happened and how long the exit took, then the count of runs that passed
and the machine's load (it is shared: the figures are those of the load it ran at).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from _machine import describe  # bench/_machine.py

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

ARMS = ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def client(fault: str, sim_pid: int, timeout: float = 180.0) -> dict:
    """Home, then three pick-and-place cycles; with ``fault``: SIGUSR1 to the drive simulator
    0.5 s into them, the fault event expected, then ~/reset. Returns what happened."""
    import rclpy
    from builtin_interfaces.msg import Duration
    from std_msgs.msg import String
    from std_srvs.srv import Trigger
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
    reset = node.create_client(Trigger, "/delta_hardware/reset")
    model = RotaryModel.from_robot("nt_robot")
    start = np.array([-0.1525, 0.0, -0.78])
    deadline = time.monotonic() + timeout
    out = {"homed": False, "fault_event": "", "reset": "", "finished": False, "stops": []}

    def spin_until(pred):
        while time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
            if pred():
                return True
        return False

    def send(ts, q, qd=None, qdd=None) -> int:
        msg = JointTrajectory(joint_names=ARMS)
        for k in range(len(ts)):
            p = JointTrajectoryPoint(positions=[float(x) for x in q[k]],
                                     time_from_start=Duration(sec=int(ts[k]), nanosec=int(round((ts[k] % 1) * 1e9))))
            if qd is not None:
                p.velocities, p.accelerations = [float(x) for x in qd[k]], [float(x) for x in qdd[k]]
            msg.points.append(p)
        n0 = len(events)
        pub.publish(msg)
        return n0

    def after(n0, *texts):
        return [e for e in events[n0:] if any(e.startswith(t) or t in e for t in texts)]
    try:
        spin_until(lambda: pub.get_subscription_count() > 0)
        n0 = send([2.0], [inverse_kinematics(model, start)])
        spin_until(lambda: after(n0, "trajectory finished", "quick stop", "fault", "rejected"))
        out["homed"] = bool(after(n0, "trajectory finished"))
        tr = pick_place(start=tuple(start), lift_time=0.12, move_time=0.3, overlap=0.6, dwell=0.05, cycles=3, dt=1e-3)
        q, qd, qdd = joint_state(model, tr.X, tr.Xd, tr.Xdd)
        idx = np.arange(10, len(tr.t), 10)
        n0 = send(tr.t[idx], q[idx], qd[idx], qdd[idx])
        spin_until(lambda: after(n0, "accepted", "rejected"))
        if fault == "emcy" and out["homed"] and after(n0, "accepted"):
            t_end = time.monotonic() + 0.5
            spin_until(lambda: time.monotonic() > t_end)
            os.kill(sim_pid, signal.SIGUSR1)
            spin_until(lambda: after(n0, "fault:", "trajectory finished"))
            out["fault_event"] = (after(n0, "fault:") or [""])[0]
            if out["fault_event"]:
                assert reset.wait_for_service(timeout_sec=30)
                fut = reset.call_async(Trigger.Request())
                spin_until(fut.done)
                r = fut.result()
                out["reset"] = "ok" if r is not None and r.success else (r.message if r else "no answer")
        else:
            spin_until(lambda: after(n0, "trajectory finished", "quick stop", "fault", "rejected"))
            out["finished"] = bool(after(n0, "trajectory finished"))
        out["stops"] = after(0, "quick stop", "fault", "rejected")
        return out
    finally:
        node.destroy_node()
        rclpy.shutdown()


def one_run(k: int, wall: bool, fault: str) -> dict:
    channel = f"239.74.163.2:{44000 + (os.getpid() + k) % 900}"
    env = dict(os.environ, ROS_DOMAIN_ID=str(20 + (os.getpid() + k) % 70))
    sim_args = ["delta-drive-sim", "--interface", "udp_multicast", "--channel", channel,
                "--robot", "nt_robot", "--drives-config", "generic_cia402"]
    if fault == "emcy":
        sim_args += ["--inject-fault", "2:0x2310"]
    logs = [tempfile.TemporaryFile("w+") for _ in range(2)]      # never a full pipe that blocks a process
    sim = subprocess.Popen(sim_args, stdout=logs[0], stderr=subprocess.STDOUT, text=True, env=env)
    time.sleep(2.0)
    stack = subprocess.Popen(["delta-bringup", "--hardware", "canopen", "--can-interface", "udp_multicast",
                              "--can-channel", channel, "--no-sim-time" if wall else "--sim-time"],
                             stdout=logs[1], stderr=subprocess.STDOUT, text=True, env=env)
    r = {"run": k + 1}
    try:
        c = subprocess.run([sys.executable, __file__, "--client", "--fault", fault, "--sim-pid", str(sim.pid)],
                           env=env, capture_output=True, text=True, timeout=400)
        try:
            r.update(json.loads(c.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            r["client_error"] = (c.stdout + c.stderr)[-1500:]
    except subprocess.TimeoutExpired:
        r["client_error"] = "client timed out"
    finally:
        t0 = time.monotonic()
        stack.send_signal(signal.SIGINT)
        try:
            stack.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stack.kill()
            stack.wait()
        r["stack_exit"] = stack.returncode
        r["stack_exit_s"] = round(time.monotonic() - t0, 2)
        sim.send_signal(signal.SIGINT)
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
        sim_out, stack_out = (f.seek(0) or f.read() for f in logs)
        for f in logs:
            f.close()
        r["transfer_aborted"] = "Transfer aborted" in stack_out
        r["logs"] = (sim_out, stack_out)
        m = re.search(r"drives at exit: \[([^\]]*)\]", sim_out)
        r["drives_at_exit"] = m.group(1).split(", ") if m else ["unknown"]
    disabled = r["drives_at_exit"] == ["switch on disabled"] * 3
    sim_out, stack_out = r.pop("logs")
    if fault == "emcy":
        r["ok"] = bool(r.get("homed") and "arm_2_joint" in r.get("fault_event", "") and "0x2310" in r.get("fault_event", "")
                       and r.get("reset") == "ok" and r["stack_exit"] == 0 and disabled)
    else:
        r["ok"] = bool(r.get("homed") and r.get("finished") and r["stack_exit"] == 0 and disabled)
    if not r["ok"]:                                  # what the processes said, for the report
        path = os.path.join(tempfile.gettempdir(), f"canopen_readme_example_run{k + 1}.log")
        with open(path, "w") as f:
            f.write(f"== delta-drive-sim\n{sim_out}\n== delta-bringup\n{stack_out}\n")
        r["log"] = path
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--fault", choices=("emcy", "none"), default="emcy")
    ap.add_argument("--wall", action="store_true")
    ap.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sim-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        print(json.dumps(client(args.fault, args.sim_pid)))
        return
    print(f"machine: {describe()}", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    loads = []
    try:
        results = []
        for k in range(args.runs):
            loads.append(os.getloadavg()[0])
            r = one_run(k, args.wall, args.fault)
            results.append(r)
            print(f"run {k + 1}: {'ok' if r['ok'] else 'FAILED'}; fault event: {r.get('fault_event', '')[:90]!r}; "
                  f"reset: {r.get('reset', '')!r}; stack exit {r['stack_exit']} after {r['stack_exit_s']} s; "
                  f"drives at exit: {', '.join(r['drives_at_exit'])}"
                  + (f"; client: {r['client_error'][-300:]}" if "client_error" in r else "")
                  + (f"; logs: {r['log']}" if "log" in r else ""), flush=True)
    finally:
        for h in hogs:
            h.kill()
    ok = sum(r["ok"] for r in results)
    disabled = sum(r["drives_at_exit"] == ["switch on disabled"] * 3 for r in results)
    exits = [r["stack_exit_s"] for r in results]
    print(f"{ok} of {len(results)} runs passed; every drive disabled at exit in {disabled} of {len(results)}; "
          f"'Transfer aborted' printed in {sum(r['transfer_aborted'] for r in results)}; stack exit after SIGINT "
          f"{min(exits):.2f}-{max(exits):.2f} s ({'steady clock' if args.wall else 'simulated time'}, fault "
          f"{args.fault}, {args.busy} busy processes; load average {min(loads):.1f}-{max(loads):.1f} at the starts)")
    sys.exit(0 if ok == len(results) else 1)


if __name__ == "__main__":
    main()
