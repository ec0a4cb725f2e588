"""delta-bringup: the whole stack with one command.

Every node runs in a process of its own, as ``ros2 launch`` runs them: the hardware node (the
control loop and the drives), the dynamics, state and identification nodes; nothing can take
the control loop's GIL, and each node gets its own share of a busy host. This process
supervises them (and runs the demo): when one ends by itself, the others are stopped. Parameters come from ``config/delta.yaml`` (ROS 2 parameter-file
format; ``--params-file`` for another, ``--ros-args -p name:=value`` overrides as usual).
Runs until Ctrl-C or SIGTERM, then stops every node (loop stopped, drives disabled) and
exits 0.

``--namespace /r1`` puts every node (and every topic, service and action) under ``/r1`` and
remaps ``/clock`` to ``/r1/clock`` for them: several stacks run side by side on one ROS network,
each in its own simulated time; ``--prefix r1_`` prefixes every joint name (docs/ros_interfaces.md,
"Namespaces and prefixes").

With the simulated drives the stack runs in simulated time by default (``--sim-time``; the
hardware node publishes ``/clock``, every node follows it; ``--real-time-factor`` paces it,
0: as fast as the host can); ``--no-sim-time`` runs the simulation on the wall clock.

``delta-bringup --demo`` runs the scripted session of :mod:`delta_bringup.demo` on the
simulated robot instead, prints the tracking errors and writes plots into ``--out``.

Examples::

    delta-bringup
    delta-bringup --robot d3s800 --ros-args -p control_rate:=1000.0
    delta-bringup --hardware canopen --can-interface socketcan --can-channel can0
    delta-bringup --demo --out out/
    delta-bringup --namespace r1 --prefix r1_ & delta-bringup --namespace r2 --prefix r2_
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import threading
import time

from delta_core.paths import PathError, check_output_dir
from delta_core.ros.names import check_namespace, check_prefix, clock_remap
from delta_core.share import share_file
from delta_core.text_input import TextInputError, read_text

#: the stack's nodes, each in a process of its own (as ``ros2 launch`` runs them): no node can
#: take another's GIL, and each gets its own share of a busy host's CPU
NODES = (("delta_hardware", "delta_hardware.ros.hardware_node"),
         ("delta_dynamics", "delta_dynamics.ros.dynamics_node"),
         ("delta_state", "delta_description.ros.state_node"),
         ("delta_identification", "delta_dynamics.ros.identification_node"))
STOP_TIMEOUT = 10.0               # s a node process gets to stop before it is killed


EPILOG = """\
ROS arguments: everything after --ros-args goes to every node of the stack, e.g.
  --ros-args -p control_rate:=1000.0       a node parameter (docs/ros_interfaces.md lists them)
  --ros-args --params-file my.yaml         more parameters from a file
  --ros-args --log-level warn              quieter logs

Examples:
  delta-bringup                                    every node, simulated time, until Ctrl-C
  delta-bringup --robot d3s800 --ros-args -p control_rate:=1000.0
  delta-bringup --demo --out out/                  the scripted demo (make run)
  delta-bringup --namespace r1 --prefix r1_        a second robot on the same network

Then, in another shell: delta-ctl status, delta-ctl move 0.05 0 -0.75 --wait, delta-ctl --help."""


def _rtf(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(v) and 0 <= v <= 1000):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1000 (0: as fast as possible), got {text}")
    return v


def parse_args(argv):
    """(arguments, ROS arguments after ``--ros-args``) of ``argv``; a bad combination exits 2 with the reason."""
    if "--ros-args" in argv:
        k = argv.index("--ros-args")
        argv, ros_args = argv[:k], argv[k + 1:]
    else:
        ros_args = []
    ap = argparse.ArgumentParser(prog="delta-bringup", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s [options] [--ros-args ROS_ARGS ...]", epilog=EPILOG)
    ap.add_argument("--params-file", help="ROS 2 parameter file (default: config/delta.yaml)")
    ap.add_argument("--robot", help="robot preset name or robot file, for every node")
    ap.add_argument("--hardware", choices=("sim", "mock", "canopen"), help="drive backend (mock = sim)")
    ap.add_argument("--can-interface", help="python-can interface (canopen)")
    ap.add_argument("--can-channel", help="CAN channel (canopen)")
    ap.add_argument("--drives-config", help="config/drives/<name>.yaml or a path (canopen)")
    ap.add_argument("--sim-time", dest="sim_time", action="store_true", default=None,
                    help="simulated time (default with the simulated drives; with --hardware canopen only "
                    "for delta-drive-sim on the bus)")
    ap.add_argument("--no-sim-time", dest="sim_time", action="store_false",
                    help="run the simulated drives on the wall clock")
    ap.add_argument("--real-time-factor", type=_rtf, help="simulated seconds per wall second (default 1; 0: "
                    "as fast as possible)")
    ap.add_argument("--plant", choices=("explicit", "multibody", "mujoco"),
                    help="the simulated robot's physics (default explicit: the controller's model)")
    ap.add_argument("--namespace", default="", help="ROS namespace of every node of the stack (e.g. r1; /clock "
                    "becomes <namespace>/clock): several robots on one network")
    ap.add_argument("--prefix", default=None, help="joint and frame name prefix for every node (e.g. r1_)")
    ap.add_argument("--demo", action="store_true", help="run the scripted demo on the simulated robot")
    ap.add_argument("--out", default="out", help="output folder of the demo (default: out)")
    ap.add_argument("--cycles", type=int, default=2, help="pick-and-place cycles per demo phase")
    args = ap.parse_args(argv)
    if not 1 <= args.cycles <= 100:
        ap.error(f"--cycles must be from 1 to 100, got {args.cycles}")
    if args.sim_time is None:
        args.sim_time = args.hardware != "canopen"
    if args.demo and args.hardware == "canopen":
        ap.error("--demo runs on the simulated robot (--hardware sim)")
    try:
        args.namespace = check_namespace(args.namespace)
        if args.prefix is not None:
            check_prefix(args.prefix)
    except ValueError as e:
        ap.error(f"--{'namespace' if 'namespace' in str(e) else 'prefix'}: {e}")
    return args, ros_args


def missing_ros() -> str | None:
    """One line saying what to install if the ROS 2 Python packages are missing, else None."""
    try:
        import rclpy  # noqa: F401
        import rosgraph_msgs.msg  # noqa: F401
        import std_srvs.srv  # noqa: F401
    except ImportError as e:
        return (f"the ROS 2 Python packages are not installed ({e}): pip install '.[ros]' in the checkout "
                f"(or pip install -r requirements-ros.txt), or source a ROS 2 Jazzy install (README, ROS users)")
    return None


def check_params_file(path) -> str | None:
    """Why a ROS 2 parameter file is unusable (rcl would fail with a traceback), or None."""
    import yaml

    try:       # a FIFO, a device, a directory, a symlink loop: refused by name, no open blocks
        data = yaml.safe_load(read_text(path, 16 << 20, "a ROS 2 parameter file"))
    except TextInputError as e:
        return f"--params-file {e}"
    except OSError as e:
        return f"--params-file {path}: {e.strerror or e}"
    except yaml.YAMLError as e:
        return f"--params-file {path}: not valid YAML: {e}".replace("\n", " ")
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("ros__parameters"), dict) for v in data.values()):
        return (f"--params-file {path}: not a ROS 2 parameter file (expected <node name>: "
                f"{{ros__parameters: {{...}}}} for every node)")
    return None


def ros_arguments(args, ros_args, extra=()):
    """The ``--ros-args`` of every node of the stack (the same for both processes)."""
    try:
        params = args.params_file or str(share_file("config", "delta.yaml"))
    except FileNotFoundError as e:
        raise SystemExit(f"delta-bringup: error: {e}")
    out = ["--ros-args", "--params-file", params, "-p", f"use_sim_time:={'true' if args.sim_time else 'false'}"]
    if args.namespace:
        out += ["-r", f"__ns:={args.namespace}", *clock_remap(args.namespace)]
    for flag, name in (("robot", "robot"), ("hardware", "hardware"),
                       ("can_interface", "can_interface"), ("can_channel", "can_channel"),
                       ("drives_config", "drives_config"), ("real_time_factor", "real_time_factor"),
                       ("plant", "plant"), ("prefix", "prefix")):
        value = getattr(args, flag)
        if value is not None and (value != "" or name == "prefix"):
            out += ["-p", f"{name}:={value}" if value != "" else f"{name}:=''"]
    for name, value in extra:
        out += ["-p", f"{name}:={value}"]
    return out + list(ros_args)


class NodeProcess:
    """One node of the stack in its own process (its output goes to ours)."""

    def __init__(self, name, module, ros_args):
        self.name = name
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-m", module, *ros_args], env=env,
                                     start_new_session=True)   # our signals reach it through stop() only

    def alive(self) -> bool:
        """Whether the node's process is still running."""
        return self.proc.poll() is None

    def interrupt(self) -> None:
        """Send SIGINT to the node's process if it still runs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        """Wait for the exit (SIGKILL after ``timeout`` s); the exit status."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            print(f"delta-bringup: {self.name} did not stop within {timeout:g} s: killed", file=sys.stderr)
            self.proc.kill()
            self.proc.wait(5)
        return self.proc.returncode


def stop_all(processes) -> dict:
    """SIGINT to every node process at once, then wait for each (bounded); name -> status."""
    for p in processes:
        p.interrupt()
    return {p.name: p.wait() for p in processes}


def _spin_until(executor, stop):
    """Spin ``executor`` in this thread until ``stop`` is set or the context shuts down. A
    signal shuts the context down at any moment, also in the middle of ``spin_once``, where
    rclpy then fails on the invalid context: that is a shutdown too, not an error."""
    from rclpy.executors import ExternalShutdownException
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    except Exception:
        if executor.context.ok():
            raise


def _wait_active(node, processes, stop, timeout: float = 60.0) -> bool:
    """Until the hardware node answers ``~/status`` as active (or a node process ends, or a
    signal comes)."""
    import json

    import rclpy
    from std_srvs.srv import Trigger
    client = node.create_client(Trigger, "delta_hardware/status")        # in the stack's namespace
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and all(p.alive() for p in processes) and not stop.is_set():
            if client.wait_for_service(timeout_sec=0.5):
                future = client.call_async(Trigger.Request())
                rclpy.spin_until_future_complete(node, future, timeout_sec=5.0)
                if future.done() and json.loads(future.result().message).get("active"):
                    return True
                time.sleep(0.2)
        return False
    finally:
        node.destroy_client(client)


def _watch(processes, stop: threading.Event, ended: list):
    """End the stack when a node process ends by itself."""
    while not stop.is_set():
        for p in processes:
            if not p.alive():
                ended.append(p)
                stop.set()
                return
        time.sleep(0.2)


def main(argv=None) -> int:
    """Entry point of ``delta-bringup``: start every node's process, supervise them (and run the demo) until
    Ctrl-C, SIGTERM or a node ending, then stop them all; the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args, ros_args = parse_args(argv)
    missing = missing_ros()
    if missing:
        print(f"delta-bringup: error: {missing}", file=sys.stderr)
        return 2
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    if args.params_file:
        why = check_params_file(args.params_file)
        if why:
            print(f"delta-bringup: error: {why}", file=sys.stderr)
            return 2
    if args.robot:
        from delta_core.robot_file import RobotFileError, load_robot    # in-function: numpy, for --robot only
        try:
            load_robot(args.robot)
        except RobotFileError as e:
            print(f"delta-bringup: error: --robot: {e}", file=sys.stderr)
            return 2
    extra = []
    if args.demo:
        try:
            check_output_dir(args.out, "the demo's results")
        except PathError as e:
            print(f"delta-bringup: error: --out {e}", file=sys.stderr)
            return 2
        from delta_bringup.demo import prepare      # in-function: rclpy, after the arguments are checked
        try:
            extra = prepare(args)
        except (OSError, ValueError) as e:
            print(f"delta-bringup: error: {e}", file=sys.stderr)
            return 2
    from delta_core.ros.node_util import install_stop_handler   # in-function: rclpy, after the arguments are checked

    node_args = ros_arguments(args, ros_args, extra)
    stop = threading.Event()
    handler = install_stop_handler(stop)
    processes = [NodeProcess(name, module, node_args) for name, module in NODES]
    rclpy.init(args=["delta-bringup", *node_args], signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    code, ended, worker, demo, node, executor = 0, [], None, None, None, None
    try:
        node = rclpy.create_node("delta_bringup")
        if not _wait_active(node, processes, stop):
            if not stop.is_set():
                dead = [f"{p.name} (exit {p.proc.returncode})" for p in processes if not p.alive()]
                print(f"delta-bringup: error: the stack did not come up{': ' + ', '.join(dead) + ' ended' if dead else ''}"
                      f" (see the log above)", file=sys.stderr)
                return 1
            return 0
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        if args.demo:
            from delta_bringup.demo import Demo     # in-function: rclpy, with --demo only
            demo = Demo(args, args.excitation, time_owner=node)
            executor.add_node(demo.node)
            worker = threading.Thread(target=demo.run_and_report, args=(stop,), daemon=True)
            worker.start()
        threading.Thread(target=_watch, args=(processes, stop, ended), daemon=True).start()
        _spin_until(executor, stop)
        if ended and not handler.signalled:
            p = ended[0]
            print(f"delta-bringup: error: {p.name} ended (exit {p.proc.returncode})", file=sys.stderr)
            code = 1
        if worker is not None:
            worker.join(10.0)
            code = demo.exit_code if not ended else 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)      # a second Ctrl-C must not cut the cleanup
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop.set()
        status = stop_all(processes)
        bad = {n: rc for n, rc in status.items() if rc not in (0, None)}
        if bad and code == 0 and not handler.signalled:
            print(f"delta-bringup: node processes exited with {bad}", file=sys.stderr)
            code = 1
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if demo is not None:
            demo.node.destroy_node()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
