"""delta-bringup: the whole stack in one process.

Composes the hardware, dynamics, state and identification nodes on one
MultiThreadedExecutor, with parameters from ``config/delta.yaml`` (ROS 2 parameter-file
format; ``--params-file`` for another, ``--ros-args -p name:=value`` overrides as usual) and
runs until Ctrl-C, then stops the loop, disables the drives and exits 0.

``delta-bringup --demo`` runs the scripted session of :mod:`delta_bringup.demo` on the
simulated robot instead, prints the tracking errors and writes plots into ``--out``.

Examples::

    delta-bringup
    delta-bringup --robot d3s800 --ros-args -p control_rate:=1000.0
    delta-bringup --hardware canopen --can-interface socketcan --can-channel can0
    delta-bringup --demo --out out/
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from delta_core.share import share_file


def parse_args(argv):
    if "--ros-args" in argv:
        k = argv.index("--ros-args")
        argv, ros_args = argv[:k], argv[k + 1:]
    else:
        ros_args = []
    ap = argparse.ArgumentParser(prog="delta-bringup", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params-file", help="ROS 2 parameter file (default: config/delta.yaml)")
    ap.add_argument("--robot", help="robot preset name or robot file, for every node")
    ap.add_argument("--hardware", choices=("sim", "canopen"), help="drive backend")
    ap.add_argument("--can-interface", help="python-can interface (canopen)")
    ap.add_argument("--can-channel", help="CAN channel (canopen)")
    ap.add_argument("--drives-config", help="config/drives/<name>.yaml or a path (canopen)")
    ap.add_argument("--demo", action="store_true", help="run the scripted demo on the simulated robot")
    ap.add_argument("--out", default="out", help="output folder of the demo (default: out)")
    ap.add_argument("--cycles", type=int, default=2, help="pick-and-place cycles per demo phase")
    args = ap.parse_args(argv)
    if args.cycles < 1:
        ap.error(f"--cycles must be >= 1, got {args.cycles}")
    return args, ros_args


def ros_arguments(args, ros_args, extra=()):
    try:
        params = args.params_file or str(share_file("config", "delta.yaml"))
    except FileNotFoundError as e:
        raise SystemExit(f"delta-bringup: error: {e}")
    # composed in one process: the feedforward comes from the dynamics node in-process
    out = ["delta-bringup", "--ros-args", "--params-file", params,
           "-p", "publish_desired_state:=false", "-p", "feedforward:=model"]
    for flag, name in (("robot", "robot"), ("hardware", "hardware"),
                       ("can_interface", "can_interface"), ("can_channel", "can_channel"),
                       ("drives_config", "drives_config")):
        value = getattr(args, flag)
        if value:
            out += ["-p", f"{name}:={value}"]
    for name, value in extra:
        out += ["-p", f"{name}:={value}"]
    return out + list(ros_args)


def _spin_until(executor, stop):
    """Spin ``executor`` in this thread until ``stop`` is set or the context shuts down (then
    the caller shuts the executor down). A signal shuts the context down at any moment, also
    in the middle of ``spin_once``, where rclpy then fails on the invalid context (e.g.
    "failed to create timer"): that is a shutdown too, not an error."""
    from rclpy.executors import ExternalShutdownException
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    except Exception:
        if executor.context.ok():
            raise


def apply_in_process(path, dynamics, hardware):
    """Give an identified robot file to the composed dynamics and hardware nodes directly
    (the same parameter callbacks as ``ros2 param set``); the names of what accepted it."""
    from rclpy.parameter import Parameter
    done = []
    for node, name in ((dynamics, "robot"), (hardware, "feedforward_robot")):
        result = node.set_parameters([Parameter(name, value=path)])[0]
        if result.successful:
            done.append(f"{node.get_name()}.{name}")
        else:
            node.get_logger().warning(f"refused {name}={path}: {result.reason}")
    return done


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args, ros_args = parse_args(argv)
    import os
    if args.params_file and not os.path.isfile(args.params_file):
        print(f"delta-bringup: error: --params-file {args.params_file}: no such file", file=sys.stderr)
        return 2
    extra = []
    if args.demo:
        from delta_bringup.demo import prepare
        try:
            extra = prepare(args)
        except (OSError, ValueError) as e:
            print(f"delta-bringup: error: {e}", file=sys.stderr)
            return 2

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from delta_description.ros.state_node import StateNode
    from delta_dynamics.ros.dynamics_node import DynamicsNode
    from delta_dynamics.ros.identification_node import IdentificationNode
    from delta_hardware.ros.hardware_node import HardwareNode

    rclpy.init(args=ros_arguments(args, ros_args, extra))
    stop = threading.Event()
    nodes = []
    code = 0
    try:
        try:
            hardware = HardwareNode()
            nodes = [hardware, DynamicsNode(), StateNode(), IdentificationNode()]
        except Exception as e:                     # a bad parameter: say which, exit 2
            print(f"delta-bringup: error: {e}", file=sys.stderr)
            return 2
        dynamics = nodes[1]
        hardware.start()
        if hardware.loop is not None:
            # Composed: the loop calls the dynamics node's model in-process (no DDS round trip
            # per cycle), so it follows every model the dynamics node is given (identification).
            names = list(hardware.model.joint_names)
            hardware.loop.reconfigure(function=lambda sp: dynamics.compute(names, sp.q, sp.qd, sp.qdd))
        if hardware.loop is None or not hardware._active():
            print("delta-bringup: error: the hardware node did not become active (see the log above)",
                  file=sys.stderr)
            return 1
        import gc
        gc.collect()
        gc.freeze()        # start-up objects leave the collector's view: shorter pauses for the loop
        # Single-threaded executors: rclpy's multi-threaded one adds milliseconds per
        # callback, too slow for 500 Hz topics. The identification node gets its own (a
        # refit blocks it for seconds); the rest share the main thread's.
        executor = SingleThreadedExecutor()
        for n in (hardware, dynamics, nodes[2]):
            executor.add_node(n)
        identification = nodes[3]
        identification.apply_hook = lambda path: apply_in_process(path, dynamics, hardware)
        ident_executor = SingleThreadedExecutor()
        ident_executor.add_node(identification)
        ident_thread = threading.Thread(target=_spin_until, args=(ident_executor, stop), daemon=True)
        ident_thread.start()
        if args.demo:
            from delta_bringup.demo import Demo
            demo = Demo(args, hardware)
            executor.add_node(demo.node)
            nodes.append(demo.node)
            worker = threading.Thread(target=demo.run_and_report, args=(stop,), daemon=True)
            worker.start()
        try:
            # spin until Ctrl-C or until the demo sets ``stop``; only this thread touches
            # the executor (shutting it down from another thread races with its spin)
            _spin_until(executor, stop)
        except KeyboardInterrupt:
            pass
        stop.set()
        ident_thread.join(5.0)
        ident_executor.shutdown(timeout_sec=1.0)
        if args.demo:
            worker.join(5.0)
            code = demo.exit_code
        executor.shutdown(timeout_sec=1.0)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)      # a second Ctrl-C must not cut the cleanup
        for n in nodes:
            if hasattr(n, "release"):
                n.release()
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
