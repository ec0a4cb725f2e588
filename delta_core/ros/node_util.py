"""Small pieces shared by the stack's rclpy nodes: the ``robot`` and ``prefix`` parameters,
QoS profiles, per-kind throttled warnings for dropped messages, and a ``main`` that spins a node
and exits cleanly on SIGINT/SIGTERM. Ground layer: imports nothing of the other packages.

Names (:mod:`delta_core.ros.names`, ``docs/ros_interfaces.md``, "Namespaces and prefixes"): every topic of the stack is
relative to the node's namespace (``joint_states``, ``diagnostics``, ``delta/...``) or private
(``~/...``); only ``/clock`` is absolute, and a namespaced stack remaps it to ``<ns>/clock``.
The ``prefix`` parameter (joint and frame name prefix, e.g. ``r1_``) is added to every joint
name a node publishes and must be on every joint name it receives.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import signal
import sys
import time

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from delta_core.ros.names import (add_prefix, check_namespace, check_prefix, clock_remap,  # noqa: F401
                                  strip_prefix)
from delta_core.ros.rclpy_adapter import RCLError, settle

DEFAULT_ROBOT = "nt_robot"

#: Subscriptions to high-rate state topics: best effort matches both reliable and best-effort
#: publishers, and a late sample is worth nothing to the consumers here.
STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                       reliability=ReliabilityPolicy.BEST_EFFORT)
#: Publishers: reliable (the default) reaches reliable and best-effort subscribers alike.
PUB_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                     reliability=ReliabilityPolicy.RELIABLE)


def robot_descriptor(extra: str = "") -> ParameterDescriptor:
    """The ``robot`` parameter's descriptor (a string: preset name or file path), ``extra``
    completing its description."""
    return ParameterDescriptor(
        type=ParameterType.PARAMETER_STRING,
        description="robot preset name (config/robots/<name>.yaml) or robot file path" + extra)


def prefix_descriptor() -> ParameterDescriptor:
    """The read-only ``prefix`` parameter's descriptor (joint and frame name prefix)."""
    return ParameterDescriptor(type=ParameterType.PARAMETER_STRING, read_only=True, description=(
        "joint and frame name prefix (e.g. r1_): added to every joint name published, required on every "
        "joint name received"))


def declare_prefix(node) -> str:
    """Declare the read-only ``prefix`` parameter on ``node``; its checked value."""
    return check_prefix(node.declare_parameter("prefix", "", prefix_descriptor()).value)


class DropLog:
    """Warnings about dropped messages, throttled per kind of problem.

    The first problem of each kind is logged at once; further ones of that kind within
    ``period`` seconds are counted and reported with the next warning of that kind.
    """

    def __init__(self, logger, period: float = 2.0):
        self._logger = logger
        self.period = period
        self._last: dict = {}
        self._suppressed: dict = {}
        self.count = 0

    def warn(self, kind: str, text: str) -> None:
        """Count a dropped ``kind`` of message and log ``text``, at most once per ``period`` per kind."""
        self.count += 1
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.period:
            self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
            return
        n = self._suppressed.pop(kind, 0)
        more = f" ({n} more of this kind dropped in the last {now - last:.1f} s)" if n else ""
        self._last[kind] = now
        self._logger.warning(text + more)


_RCLPY_DIR = os.sep + "rclpy" + os.sep


def _no_raise_here(frame) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) is inside a ``__del__``
    (Python would only print the exception as "ignored") or inside the constructor of an rclpy
    object (a Task half-built by the executor: its ``__del__`` later fails with "'Task' object
    has no attribute '_exception'", printed as an ignored exception with a traceback)."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or (code.co_name == "__init__" and _RCLPY_DIR in code.co_filename):
            return True
        frame = frame.f_back
    return False


class StopOnce:
    """Python-level SIGINT/SIGTERM handler, called by rclpy's handler after it has started the
    shutdown: the first signal raises KeyboardInterrupt in the main thread (as Python's default
    SIGINT handler does, so the spin ends even if the executor is asleep), later ones are ignored so
    that a second Ctrl-C (``ros2 launch`` and the terminal both send one) cannot interrupt the
    cleanup. While ``deferred`` (the node is being built: an exception in the middle of its
    constructor would leave a half-built node nobody destroys), it only remembers the signal;
    :meth:`release` raises it once the node exists.

    A signal that arrives while a finalizer runs (``__del__``, e.g. rclpy's ``Future.__del__``
    called by the garbage collector) or while rclpy builds an object (the executor making a
    Task) raises nothing: Python would only print the exception as "ignored", or leave a
    half-built object whose finalizer fails, and the spin would not see it. rclpy's own handler
    has already shut the context down, which wakes the executor and ends the spin just the same."""

    def __init__(self):
        self.stopping = False
        self.deferred = False
        self.pending = False

    def __call__(self, signum, frame):
        if self.deferred:
            self.pending = True
        elif not self.stopping and not _no_raise_here(frame):
            self.stopping = True
            raise KeyboardInterrupt

    def release(self):
        """Stop deferring; raise KeyboardInterrupt if a signal came meanwhile."""
        self.deferred = False
        if self.pending and not self.stopping:
            self.stopping = True
            raise KeyboardInterrupt


def stop_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (``PR_SET_PDEATHSIG``):
    a node whose supervisor is gone (``ros2 launch`` ended by SIGTERM, which it documents as
    leaving its processes orphaned; a killed ``delta-bringup``) then stops cleanly instead of
    running on unsupervised. A no-op where prctl is not available."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        parent = os.getppid()
        libc.prctl(1, signal.SIGTERM)          # PR_SET_PDEATHSIG
        if os.getppid() != parent:            # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def publish_while_up(node, publisher, msg) -> bool:
    """Publish ``msg`` unless the node is going down: a callback still running when SIGINT shut
    the context down (or after ``destroy_node``) drops its message instead of failing, which
    rclpy would report at exit as "The following exception was never retrieved". Any other
    failure is raised. Whether the message was published."""
    try:
        publisher.publish(msg)
        return True
    except Exception:
        if node.context.ok() and _alive(publisher):
            raise
        return False


def _alive(entity) -> bool:
    try:
        with entity.handle:
            return True
    except Exception:  # noqa: BLE001 - InvalidHandle: destruction requested
        return False


def run(node_factory, name: str, args=None, multithreaded: bool = False, executor_factory=None) -> int:
    """rclpy.init, build the node, spin until SIGINT/SIGTERM; 0 on a clean stop, 1 if the node
    cannot start (e.g. a bad ``robot`` parameter; the reason is logged), 2 on bad ROS
    arguments (an unreadable ``--params-file``: one line on stderr). ``multithreaded``
    spins a MultiThreadedExecutor (for nodes whose callbacks wait on service calls);
    ``executor_factory``, a function returning one, any other executor."""
    handler = StopOnce()
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    stop_with_parent()
    node = executor = None
    try:
        try:
            rclpy.init(args=args)
        except RCLError as e:     # a bad --params-file or --ros-args: one line naming it, exit 2
            why = str(e).split(", at /")[0].replace("\n", " ")
            print(f"{name}: error: {why}", file=sys.stderr)
            return 2
        handler.deferred = True
        # an executor of our own (not rclpy's global one, which would keep the node alive until
        # the interpreter's teardown), made before the node: a signal during the node's start-up
        # shuts the context down, and an executor begun on a shut-down context fails half-built
        # (rclpy's Executor.__del__ then prints "Exception ignored ... no attribute '_sigint_gc'")
        executor = (executor_factory() if executor_factory is not None else MultiThreadedExecutor()
                    if multithreaded else SingleThreadedExecutor())
        try:
            node = node_factory()
        except ExternalShutdownException:
            return 0
        except Exception as e:  # noqa: BLE001 - a node that cannot start says why and exits 1
            rclpy.logging.get_logger(name).fatal(f"cannot start: {e}")
            return 1
        executor.add_node(node)
        handler.release()
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if node is None or (node.context.ok() and not handler.stopping):
            raise
        # shut down by a signal while taking a message: rclpy may then fail on a finalised handle,
        # or wrap our KeyboardInterrupt, raised inside its message conversion before its own
        # handler has shut the context down, into a RuntimeError
    finally:
        handler.stopping = True
        if executor is not None:
            settle(executor, 2.0)
            executor.shutdown(timeout_sec=1.0)
            if node is not None:
                executor.remove_node(node)
            executor = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        # a node may have frozen its start-up objects out of the collector (gc.freeze): give
        # them back and collect the cycles now, while every module is intact, rather than
        # leaving them to the interpreter's teardown (finalizers on half-destroyed objects)
        node = None
        gc.unfreeze()
        gc.collect()
        # Python restores SIG_DFL for handled signals while the interpreter exits, so a late
        # second Ctrl-C would still kill the process (exit -2): ignore SIGINT from here on.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return 0


class StopOnSignal:
    """SIGINT/SIGTERM handler for a process that runs its own spin loops (delta-bringup):
    every signal sets ``stop``; ``signalled`` says that one came."""

    def __init__(self, stop):
        self.stop = stop
        self.signalled = False
        self.stopping = False

    def __call__(self, signum, frame):
        self.signalled = True
        self.stop.set()


def install_stop_handler(stop) -> StopOnSignal:
    """Install :class:`StopOnSignal` for SIGINT and SIGTERM (call before rclpy.init with
    ``SignalHandlerOptions.NO``, so that the process, not rclpy, decides when to shut down)."""
    handler = StopOnSignal(stop)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return handler
