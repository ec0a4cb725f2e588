"""The hardware node: a lifecycle node that wires ROS to the control loop.

The loop (drives, :class:`~delta_hardware.control_loop.ControlLoop`, loop thread) runs in a process
of its own without ROS (:mod:`delta_hardware.loop_process`, reached through
:class:`~delta_hardware.loop_client.LoopClient`). Requests: :mod:`delta_hardware.ros.requests`
(rules: :class:`~delta_hardware.loop_config.LoopRules`); parameters:
:mod:`delta_hardware.ros.parameters`; publication: :mod:`delta_hardware.ros.broadcaster`; status:
:mod:`delta_hardware.ros.status`. Interfaces: ``docs/ros_interfaces.md``.

Lifecycle: ``configure`` checks the parameters, refuses to start beside another stack of the
same names (:mod:`delta_hardware.ros.stack_guard`), starts the loop process (robot files, drives);
``activate`` enables the drives and starts the loop; ``deactivate`` stops it and disables the
drives; ``cleanup`` ends the process. A loop that dies quick-stops its drives and takes the node
through error processing to unconfigured. With ``autostart`` (default) the node walks itself to
active. Callbacks: e-stop, status and diagnostics in one group, reset and pause in another,
``~/pick`` (where delta_msgs is installed: it plans for a while) in its own,
everything else (parameters, lifecycle, messages) in the default one, on a multi-threaded
executor: whatever else runs, the e-stop and the status answer.
"""
from __future__ import annotations

import gc
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from delta_core.robot_file import RobotFileError
from delta_core.ros.node_util import publish_while_up, run
from delta_dynamics.kinds import joint_units, model_for
from delta_hardware.drives import DriveError
from delta_hardware.loop_client import LoopClient
from delta_hardware.loop_config import LoopRules
from delta_hardware.ros.broadcaster import Broadcaster
from delta_hardware.ros.monitoring import Monitoring
from delta_hardware.ros.parameters import PARAMETERS, check_parameters, loop_spec
from delta_core.ros.rclpy_adapter import StampedExecutor, lifecycle_state, refuse_disallowed_transitions, trigger
from delta_hardware.ros.requests import Requests
from delta_hardware.ros.stack_guard import other_stack
from delta_hardware.ros.status import diagnostics, node_status
from delta_hardware.ros.trajectory_intake import TrajectoryIntake

#: requests each service keeps queued (more are dropped by the middleware, unanswered)
SERVICE_DEPTH = 1000
SUCCESS, FAILURE, ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                           TransitionCallbackReturn.ERROR)


class HardwareNode(LifecycleNode):
    """The hardware node (module docstring): a lifecycle node whose control loop runs in a process of its own."""

    def __init__(self, node_name: str = "delta_hardware", **kwargs):
        super().__init__(node_name, **kwargs)
        for name, prm in PARAMETERS.items():
            self.declare_parameter(name, prm.default, ParameterDescriptor(description=prm.meaning))
        self.loop = self.rules = self.model = self.intake = self.broadcaster = self.action_server = None
        self.monitoring = None                                  # ~/external_wrench, ~/plant/external_wrench
        self.units, self.prefix, self.joint_names, self.loop_status = {}, "", [], {}
        self.failure = self.refusal = ""
        self.owns_time = self._running = False
        self._subs = []
        safety, requests = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.pub_events = self.create_publisher(String, "~/events", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        qos = QoSProfile(depth=SERVICE_DEPTH)
        self.requests = r = Requests(self)
        self.submit_points = r.submit_points                 # for the FollowJointTrajectory server
        for srv, name, cb, group in ((Trigger, "~/status", r.on_status, safety),
                                     (Trigger, "~/emergency_stop", r.on_estop, safety),
                                     (Trigger, "~/reset", r.on_reset, requests),
                                     (SetBool, "~/pause", r.on_pause, requests)):
            self.create_service(srv, name, cb, qos_profile=qos, callback_group=group)
        try:
            from delta_hardware.ros.pick_service import PickService   # in-function: delta_msgs is optional
            self.pick_service = PickService(self, qos)
        except ImportError:
            self.pick_service = None                        # delta_msgs is not installed
        self.create_timer(1.0, lambda: publish_while_up(self, self.pub_diag, diagnostics(self, node_status(self))),
                          callback_group=safety, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._loop_failed = self.create_guard_condition(self._after_loop_error)
        self.add_on_set_parameters_callback(r.on_set_parameters)
        refuse_disallowed_transitions(self, lambda text: self.event(text, warn=True))

    # ------------------------------------------------------------------ small helpers
    def params(self) -> dict:
        """The node's parameter values by name (:data:`~delta_hardware.ros.parameters.PARAMETERS`)."""
        return {name: self.get_parameter(name).value for name in PARAMETERS}

    def lifecycle(self) -> str:
        """The lifecycle state's label (``unconfigured``, ``inactive``, ``active``, ...)."""
        return lifecycle_state(self)

    def active(self) -> bool:
        """Whether the node is active and its loop process alive."""
        return self._running and self.loop is not None and self.loop.alive()

    def now(self) -> float:
        """The node's time in seconds: the loop's simulated time when it owns it, else ROS (wall) time."""
        return self.loop.now() if self.owns_time and self.loop is not None else time.time()

    def event(self, text: str, warn: bool = False, error: bool = False) -> None:
        """Log ``text`` (info, warning or error) and publish it on ``~/events``."""
        if error:                # rclpy wants one severity per call site
            self.get_logger().error(text)
        elif warn:
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)
        publish_while_up(self, self.pub_events, String(data=text))

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        """Lifecycle ``configure``: check the parameters, refuse beside another stack, start the loop process
        and create the entities; FAILURE leaves the node unconfigured."""
        p = self.params()
        try:
            check_parameters(p)
            sim_time = bool(self.get_parameter("use_sim_time").value)
            spec = loop_spec(p, sim_time, feedforward_topic=self.resolve_topic_name("delta/feedforward"))
            self.model = model_for(spec.robot)
            self.rules = LoopRules(self.model, spec.config.rate, float(p["max_command_step"]))
            for name in ("kp", "kd"):
                self.rules.check_gain(name, p[name])
            self.refusal = other_stack(self, owns_clock=sim_time)        # before the drives are opened
            if self.refusal:
                raise ValueError(self.refusal)
            self.loop = LoopClient(spec, self._on_loop_failure, self._on_loop_failure, self.requests.on_refusal)
            info = self.loop.start()
            self.refusal = other_stack(self, owns_clock=sim_time, wait=0.0)   # discovered while it started
            if self.refusal:
                self.loop.close()
                raise ValueError(self.refusal)
        except (RobotFileError, DriveError, ValueError) as e:
            self.loop = None
            if self.refusal and self.get_parameter("autostart").value:
                return FAILURE                                # said once, by start()'s caller
            self.get_logger().error(f"configure failed, staying unconfigured: {e}")
            self.event(f"configure failed: {e}", warn=True)
            return FAILURE
        self.owns_time, self.failure, self.units, self.prefix = spec.clock == "sim", "", joint_units(self.model), p["prefix"]
        self.joint_names = [self.prefix + n for n in self.model.joint_names]
        self._create_entities(p)
        clock = (f"simulated time (real_time_factor {spec.real_time_factor:g})" if self.owns_time
                 else f"steady clock, max_stall {info['max_stall'] * 1e3:.0f} ms")
        hw = p["hardware"] + (f" ({info['summary']})" if info.get("summary") else "")
        self.get_logger().info(f"configured: robot {spec.robot.name} ({spec.robot.source}), hardware {hw}, {spec.config.rate:g}"
                               f" Hz, {clock}, feedforward {spec.config.feedforward}; control loop in process {info['pid']}")
        return SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        """Lifecycle ``activate``: enable the drives and start the loop, holding position; FAILURE if the
        drives refuse."""
        try:
            reply = self.loop.ask("activate", timeout=60.0)
        except DriveError as e:
            self.get_logger().error(f"activate failed: {e}")
            return FAILURE
        for text in reply.get("realtime_warnings", []):
            self.event(text, warn=not self.owns_time)
        if reply.get("paused"):
            self.event("simulation paused at t = 0 (start_paused): resume with ~/pause false")
        self._running = True
        self.get_logger().info("active: holding position")
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        """Lifecycle ``deactivate``: stop the loop and disable the drives; ERROR (to error processing) after
        a loop failure."""
        self._running = False
        try:
            self.loop.ask("deactivate", timeout=30.0)
        except DriveError as e:
            self.get_logger().error(f"disabling the drives failed: {e}")
        if self.failure:
            return ERROR                                  # -> error processing -> on_error
        self.get_logger().info("inactive: drives disabled")
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        """Lifecycle ``cleanup``: :meth:`release`."""
        self.release()
        return SUCCESS
    on_shutdown = on_cleanup

    def on_error(self, state: State) -> TransitionCallbackReturn:
        """Lifecycle error processing: :meth:`release`; the node ends unconfigured."""
        self.release()
        self.get_logger().error(f"error processing done, unconfigured: {self.failure or 'node error'}")
        return SUCCESS

    def start(self) -> None:
        """Walk to active if ``autostart`` is set; RuntimeError if another stack is in the way.
        The start-up objects leave the collector's view before the loop starts."""
        if self.get_parameter("autostart").value:
            configured = trigger(self.trigger_configure)
            if self.refusal:
                raise RuntimeError(self.refusal)
            gc.collect()
            gc.freeze()
            if configured:
                trigger(self.trigger_activate)

    def release(self) -> None:
        """Destroy the entities and end the loop process (its drives disabled)."""
        self._running = False
        self._destroy_entities()
        loop, self.loop = self.loop, None
        if loop is not None:
            loop.close()
            self.loop_status = {}
            if self.context.ok():                             # its last words: the drives' state
                for text, level, _ in loop.take_events()[0]:
                    self.event(text, warn=level > 0)
            loop.block.close()

    def destroy_node(self):
        """:meth:`release`, then destroy the node."""
        self.release()
        super().destroy_node()

    def _on_loop_failure(self, text: str) -> None:
        """From the client's thread: the loop died or its process ended (drives quick-stopped)."""
        if not self.failure:
            self.failure = text
            self._loop_failed.trigger()

    def _after_loop_error(self):
        self.event(self.failure, error=True)
        if self.lifecycle() == "active":
            trigger(self.trigger_deactivate)                # returns ERROR -> on_error -> unconfigured

    # ------------------------------------------------------------------ entities
    def _create_entities(self, p):
        self.broadcaster = Broadcaster(self, self.loop, self.joint_names, self.owns_time, p["publish_desired_state"],
                                       clock_rate=p["clock_rate"])
        self.broadcaster.desired = p["publish_desired_state"] or p["feedforward"] == "topic"
        r = self.requests
        self.intake = TrajectoryIntake(lambda: self.model, r.submit_points, r.reject,
                                       lambda: (int(p["max_trajectory_points"]), float(p["max_trajectory_duration"])),
                                       prefix=self.prefix, void=self.loop.void, now=self.now)
        self._subs = r.subscriptions()
        self.monitoring = Monitoring(self)
        try:
            from delta_hardware.ros.follow_joint_trajectory import FollowJointTrajectoryServer   # in-function: control_msgs is optional
            self.action_server = FollowJointTrajectoryServer(self)
        except ImportError:
            self.action_server = None                       # control_msgs is not installed
        self.broadcaster.start()

    def _destroy_entities(self):
        for attr in ("broadcaster", "action_server", "intake", "monitoring"):
            part = getattr(self, attr)
            setattr(self, attr, None)
            if part is not None:
                (part.close if attr == "intake" else part.destroy)()
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []


def main(args=None) -> int:
    """Spin the node on the multi-threaded executor of :mod:`~delta_core.ros.rclpy_adapter`."""
    def started():
        node = HardwareNode()
        node.start()
        return node
    return run(started, "delta_hardware", args, executor_factory=lambda: StampedExecutor(num_threads=4))


if __name__ == "__main__":
    sys.exit(main())
