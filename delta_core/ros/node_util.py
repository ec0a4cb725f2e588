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
import threading
import time

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

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


class StopRequest:
    """SIGINT/SIGTERM handling of a node process that spins in its main thread (:func:`run`).

    rclpy's own handlers are not installed (``SignalHandlerOptions.NO``): on a signal they shut
    the context down and trigger every executor's guard condition from a C++ thread of rclpy's,
    without the GIL or a lock, while the main thread, woken by the same signal, destroys the
    executor, the node and the context: a use-after-free, seen as a segmentation fault (exit
    -11) of the state node on SIGINT in a loaded ``make test``. Here a signal only records
    itself and wakes the spin; the main thread then tears everything down, alone and in order.

    The Python-level handler (this object, called in the main thread) only sets
    :attr:`signalled`: it raises nothing, so no callback, finalizer or rclpy constructor is cut
    in the middle. Python runs it only between bytecodes, not while the main thread waits in
    ``rcl_wait``: the C-level handler also writes the signal number to a pipe
    (:func:`signal.set_wakeup_fd`), and a watcher thread blocked on that pipe triggers the guard
    condition given to :meth:`attach`, which wakes the executor. Later signals (a second
    Ctrl-C) change nothing.
    """

    def __init__(self):
        self.signalled = False
        self._lock = threading.Lock()
        self._guard = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._previous_fd = -1
        self._watcher = threading.Thread(target=self._watch, name="signal-watch", daemon=True)

    def __call__(self, signum, frame):
        self.signalled = True

    def install(self) -> None:
        """Handle SIGINT and SIGTERM (call from the main thread, before ``rclpy.init``)."""
        signal.signal(signal.SIGINT, self)
        signal.signal(signal.SIGTERM, self)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._watcher.start()

    def _watch(self) -> None:
        if os.read(self._read, 1) == b"\0":     # written by close(): no signal came
            return
        with self._lock:
            self.signalled = True
            if self._guard is not None:
                self._guard.trigger()

    def attach(self, guard) -> bool:
        """Trigger ``guard`` (a guard condition of the spun node) on the first signal; whether
        one came already (then do not spin)."""
        with self._lock:
            self._guard = guard
            return self.signalled

    def detach(self) -> None:
        """Trigger nothing any more; returns once no trigger is in progress."""
        with self._lock:
            self._guard = None

    def close(self) -> None:
        """Stop the watcher, restore the previous wakeup fd (SIGINT and SIGTERM stay handled)."""
        self.detach()
        if self._watcher.is_alive():
            try:
                os.write(self._write, b"\0")
            except BlockingIOError:             # the pipe is full of signal numbers: the watcher has ended
                pass
            self._watcher.join(5.0)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read)
        os.close(self._write)


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
    ``executor_factory``, a function returning one, any other executor.

    Signals are handled by :class:`StopRequest`, not by rclpy: a signal during the node's
    start-up is acted on once the node exists (an exception in the middle of its constructor
    would leave a half-built node nobody destroys); once the spin has ended, the main thread
    lets the executor's callbacks end, shuts the executor down, destroys the node, then
    shuts the context down."""
    stop = StopRequest()
    stop.install()
    stop_with_parent()
    node = executor = None
    try:
        try:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except RCLError as e:     # a bad --params-file or --ros-args: one line naming it, exit 2
            why = str(e).split(", at /")[0].replace("\n", " ")
            print(f"{name}: error: {why}", file=sys.stderr)
            return 2
        # an executor of our own (not rclpy's global one, which would keep the node alive until
        # the interpreter's teardown)
        executor = (executor_factory() if executor_factory is not None else MultiThreadedExecutor()
                    if multithreaded else SingleThreadedExecutor())
        try:
            node = node_factory()
        except Exception as e:  # noqa: BLE001 - a node that cannot start says why and exits 1
            rclpy.logging.get_logger(name).fatal(f"cannot start: {e}")
            return 1
        executor.add_node(node)
        # a signal triggers this guard condition: the executor runs its (empty) callback, and
        # spin_once returns to the test of stop.signalled
        if not stop.attach(node.create_guard_condition(lambda: None)):
            while not stop.signalled and executor.context.ok():
                executor.spin_once()
    except ExternalShutdownException:       # the context was shut down by the node itself
        pass
    finally:
        stop.detach()
        if executor is not None:
            settle(executor, 2.0)
            executor.shutdown(timeout_sec=1.0)
            if node is not None:
                executor.remove_node(node)
            executor = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        stop.close()
        # a node may have frozen its start-up objects out of the collector (gc.freeze): give
        # them back and collect the cycles now, while every module is intact, rather than
        # leaving them to the interpreter's teardown (finalizers on half-destroyed objects)
        node = None
        gc.unfreeze()
        gc.collect()
        # Python restores SIG_DFL for handled signals while the interpreter exits, so a late
        # signal would still kill the process (exit -2, -15): ignore them from here on.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
