"""The hardware node's requests to its control loop: services (emergency stop, reset, pause,
status), streamed joint commands, the feedforward topic, trajectories and run-time parameter
changes, each converted from its message, checked by the loop's rules
(:class:`~delta_hardware.loop_config.LoopRules`) and handed to the loop process
(:class:`~delta_hardware.loop_client.LoopClient`) with the time it was received.

A refusal is a plain sentence: on ``~/events`` (and the log) for topics, in the answer for
services. Every request carries its reception time (the middleware's stamp), so that the loop
voids what was received before its latest stop: a reset queued before an emergency stop does
not undo it.
"""
from __future__ import annotations

import json
import time

from rcl_interfaces.msg import SetParametersResult
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

from delta_core.robot_file import RobotFileError
from delta_core.ros.names import strip_prefix
from delta_hardware.drives import DriveError
from delta_hardware.ros.messages import pick, to_sec
from delta_hardware.ros.parameters import NODE_SIDE, PARAMETERS, check_parameters, load_bounded
from delta_core.ros.rclpy_adapter import request_received_ns
from delta_hardware.ros.status import node_status
from delta_hardware.trajectory_plan import TrajectoryRejected, build_plan, match_joint_names


class Requests:
    """The callbacks of ``node`` (a :class:`~delta_hardware.ros.hardware_node.HardwareNode`)
    that turn requests into loop requests (module docstring)."""

    def __init__(self, node):
        self.node = node

    # ------------------------------------------------------------------ parameters
    def on_set_parameters(self, params):
        """Run-time changes of the control law (LoopRules); anything else needs a reconfigure."""
        node = self.node
        if node.loop is None:
            return SetParametersResult(successful=True)          # checked when configuring
        changes = {}
        merged = {**node.params(), **{p.name: p.value for p in params if p.name in PARAMETERS}}
        try:
            for p in params:
                if p.name not in PARAMETERS or (p.value == node.get_parameter(p.name).value and p.name != "pause_at"):
                    continue
                check_parameters(merged)              # with the call's other values: monitoring and thresholds together
                if p.name in NODE_SIDE:
                    continue                                # read by the node when it plans
                if p.name == "pause_at":
                    node.loop.ask("pause_at", t=float(p.value))
                elif not PARAMETERS[p.name].runtime:
                    raise ValueError(f"{p.name} can only change while unconfigured (deactivate, cleanup, set, configure)")
                elif p.name == "plant_payload_mass":       # the simulated robot's, not the model's
                    node.loop.ask("plant", payload=float(p.value))
                    node.event(f"plant payload: the simulated robot now carries {float(p.value):g} kg")
                elif p.name == "feedforward_robot":        # read off the executor, bounded in time
                    robot = load_bounded(p.value or node.get_parameter("robot").value)
                    changes.update(node.rules.runtime_change(p.name, p.value, robot))
                else:
                    changes.update(node.rules.runtime_change(p.name, p.value))
            if changes:
                node.loop.ask("reconfigure", changes=changes)
        except (RobotFileError, ValueError, TypeError, DriveError) as e:
            return SetParametersResult(successful=False, reason=str(e))
        if changes:
            node.event(f"control law updated: {', '.join(sorted(changes))}")
            if "feedforward" in changes and node.broadcaster is not None:   # a source needs the setpoints
                node.broadcaster.desired = bool(node.params()["publish_desired_state"]) or changes["feedforward"] == "topic"
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ trajectories and commands
    def subscriptions(self) -> list:
        """The node's subscriptions of trajectories (raw: parsed on the intake's thread),
        streamed commands and feedforward; each callback gets the message's reception time."""
        node, fast = self.node, QoSProfile(depth=10)
        return [
            node.create_subscription(JointTrajectory, "~/joint_trajectory",
                                     lambda raw, info: self.on_trajectory("joint trajectory", raw, info), 10, raw=True),
            node.create_subscription(MultiDOFJointTrajectory, "~/cartesian_trajectory",
                                     lambda raw, info: self.on_trajectory("cartesian trajectory", raw, info), 10,
                                     raw=True),
            node.create_subscription(JointState, "delta/joint_commands", self.on_joint_command, fast),
            node.create_subscription(JointState, "delta/feedforward", self.on_feedforward, fast)]

    def submit_points(self, source, start, times, q, qd, qdd, rx=None):
        """Build, validate and submit a plan from joint-space points (times relative to
        ``start``, 0: now; ``rx``: when the request was received); the plan, or
        TrajectoryRejected with the reason."""
        node = self.node
        if not node.active():
            raise TrajectoryRejected("the hardware node is not active")
        now = node.now()
        try:
            plan = build_plan(node.model, now, node.loop.current_setpoint(), start or now, times, q, qd, qdd,
                              limits=node.loop.limits(), abort=lambda: node.loop.void(rx) if rx else "")
            plan.on_receipt = not start                  # no header.stamp: it starts when the loop takes it
        except DriveError as e:
            raise TrajectoryRejected(str(e)) from None
        return self.submit_plan(source, plan, len(times), now, rx)

    def submit_plan(self, source, plan, points, now, rx=None):
        """Hand a validated ``plan`` (of ``points`` points, built at ``now``) to the loop, which
        voids it if a stop came after ``rx``; the plan, or TrajectoryRejected with the reason."""
        node = self.node
        try:
            node.loop.submit_plan(plan, rx=rx)
        except DriveError as e:
            raise TrajectoryRejected(str(e)) from None
        node.event(f"{source} accepted: {points} points, {plan.end_time - now:.3f} s, "
                   f"from t = {plan.start_time:.3f} s")
        return plan

    def on_refusal(self, op, text):
        """A fire-and-forget request the loop refused (a streamed command once the robot stopped)."""
        self.node.event(f"joint command rejected: {text}", warn=True)

    def reject(self, source, reason):
        """A refused ``source`` (a trajectory), with the reason, on ``~/events`` as a warning."""
        self.node.event(f"{source} rejected: {reason}", warn=True)

    def on_trajectory(self, source, raw, info):
        """Message of ``~/joint_trajectory`` or ``~/cartesian_trajectory`` (``raw``: serialized): to the
        intake with its reception time if the node is active, else rejected."""
        node = self.node
        if not node.active():
            self.reject(source, "the hardware node is not active")
        elif node.intake is not None:
            node.intake.put(source, raw, rx=info.get("received_timestamp") or time.time_ns())

    def on_joint_command(self, msg, info):
        """Message of ``delta/joint_commands``: a streamed position (and effort) command of the arm joints,
        checked by the loop's rules and sent to the loop; a refusal goes to ``~/events``."""
        node = self.node
        try:
            if not node.active():
                raise TrajectoryRejected("the hardware node is not active")
            kind, order = match_joint_names(node.model, strip_prefix(node.prefix, msg.name))
            if kind != "joint":
                raise TrajectoryRejected(f"joint commands must name the actuated joints {node.joint_names}")
            q, tau = node.rules.check_command(pick(msg.position, order, "position", msg.name),
                                              pick(msg.effort, order, "effort", msg.name),
                                              node.loop.current_setpoint().q, node.loop.limits())
            node.loop.send("command", rx=info.get("received_timestamp"), q=q, tau=tau)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            node.event(f"joint command rejected: {e}", warn=True)

    def on_feedforward(self, msg):
        """Message of ``delta/feedforward``: the arm joints' efforts (N m; N on a linear robot) for its stamp,
        sent to the loop; anything else is ignored."""
        node = self.node
        if node.loop is None:
            return
        try:
            kind, order = match_joint_names(node.model, strip_prefix(node.prefix, msg.name))
            tau = pick(msg.effort, order, "effort", msg.name)
            if tau is not None and kind == "joint":
                node.loop.send("feedforward", stamp=to_sec(msg.header.stamp), tau=tau)
        except (TrajectoryRejected, ValueError, DriveError):
            return

    # ------------------------------------------------------------------ services
    def on_estop(self, request, response):
        """Service ``~/emergency_stop``: quick-stop every axis and hold; success once the loop confirms."""
        node, rx = self.node, request_received_ns()
        try:
            if node.loop is None:
                raise DriveError("not configured: no drives to stop")
            node.loop.ask("estop", timeout=1.0, rx=rx, reason="emergency stop service")
        except DriveError as e:
            response.success, response.message = False, f"emergency stop not confirmed: {e}"
            return response
        node.event("emergency stop: every axis quick-stopped, holding", warn=True)
        response.success, response.message = True, "stopped"
        return response

    def on_reset(self, request, response):
        """Service ``~/reset``: clear the latched stop (void if received before it) and hold position."""
        node, rx = self.node, request_received_ns()
        try:
            if not node.active():
                raise DriveError("the hardware node is not active")
            node.loop.ask("reset", timeout=30.0, rx=rx)
        except DriveError as e:
            response.success, response.message = False, f"reset refused: {e}"
            return response
        node.event("reset: holding position")
        response.success, response.message = True, "reset"
        return response

    def on_pause(self, request, response):
        """Pause (true) or resume (false) simulated time."""
        try:
            if self.node.loop is None:
                raise DriveError("not configured")
            now = self.node.loop.ask("pause" if request.data else "resume")["now"]
            if request.data and self.node.broadcaster is not None:
                self.node.broadcaster.catch_up()          # everything up to the pause is published
        except DriveError as e:
            response.success, response.message = False, str(e)
            return response
        response.success, response.message = True, f"{'paused' if request.data else 'running'} at t = {now:.3f} s"
        return response

    def on_status(self, request, response):
        """Service ``~/status``: the node's status as JSON; success while active and not stopped."""
        st = node_status(self.node)
        response.success = not st["stopped"] and st["active"]
        response.message = json.dumps(st)
        return response
