"""The hardware node: a lifecycle node that runs the control loop on the drives.

A thin adapter: the control (:class:`delta_hardware.control_loop.ControlLoop`), the
trajectory handling (:mod:`delta_hardware.trajectory_plan`) and the drives
(:mod:`delta_hardware.drives`) are plain Python. Topics, services and parameters:
``docs/ros_interfaces.md``.

Lifecycle: ``configure`` loads the robot file and opens the drives (a missing bus or drive
leaves the node unconfigured with the reason logged); ``activate`` enables the drives, holds
the current position and starts the loop thread; ``deactivate`` stops the loop and disables
the drives; ``cleanup`` releases them. With ``autostart`` (default) the node walks itself to
active at start-up; without, it waits for a lifecycle manager.
"""
from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory

from delta_core.robot_file import RobotFileError, load_robot
from delta_dynamics.model import DeltaModel
from delta_hardware.control_loop import ControlLoop, LoopConfig, LoopThread
from delta_hardware.drives import DriveError, make_drives
from delta_hardware.ros.messages import pick, to_sec, to_time
from delta_hardware.trajectory_plan import (TrajectoryRejected, build_plan, cartesian_to_joint,
                                            match_joint_names)

PARAMETERS = {
    "robot": "nt_robot",              # the controller's robot file (preset name or path)
    "hardware": "sim",                # sim | canopen
    "true_robot": "",                 # sim: physics robot file if it differs from `robot`
    "sim_payload": 0.0,               # sim: kg on the platform that the controller does not know
    "sim_torque_noise": 0.02,         # sim: N m standard deviation of the measured effort
    "sim_velocity_noise": 0.0,        # sim: rad/s
    "sim_counts_per_rev": 131072,     # sim: motor encoder increments per revolution
    "control_rate": 500.0,            # Hz
    "kp": [600.0, 600.0, 600.0],      # N m / rad
    "kd": [30.0, 30.0, 30.0],         # N m s / rad
    "feedforward": "topic",           # topic | model | none (changeable at run time)
    "feedforward_robot": "",          # robot file of the in-process feedforward model (default: robot); run time
    "feedforward_timeout": 0.01,      # s
    "command_timeout": 0.5,           # s
    "max_stall": 0.25,                # s between control cycles that quick-stops the robot
    "publish_desired_state": True,    # /delta/desired_state for the dynamics node (off when composed)
    "max_command_step": 0.1,          # rad: a streamed position further from the setpoint is refused
    "autostart": True,
    "can_interface": "virtual",       # canopen: python-can interface
    "can_channel": "vcan0",           # canopen: channel
    "drives_config": "",              # canopen: config/drives/<name>.yaml or a path
}


class HardwareNode(LifecycleNode):
    def __init__(self, node_name: str = "delta_hardware", **kwargs):
        super().__init__(node_name, **kwargs)
        for name, default in PARAMETERS.items():
            self.declare_parameter(name, default)
        self.loop: ControlLoop | None = None
        self.thread: LoopThread | None = None
        self.model = None
        self.drives = None
        self._entities = []
        self._last_cycle = None
        self._cycle_lock = threading.Lock()
        self._diag_timer = None
        self._action_server = None
        self.add_on_set_parameters_callback(self._on_set_parameters)

    RUNTIME = ("feedforward", "feedforward_robot", "kp", "kd")

    def _on_set_parameters(self, params):
        """Run-time changes of the control law; anything else needs a reconfigure."""
        from rcl_interfaces.msg import SetParametersResult
        if self.loop is None:
            return SetParametersResult(successful=True)
        changes = {}
        try:
            for p in params:
                if p.name not in self.RUNTIME:
                    if p.name in PARAMETERS and p.value != self.get_parameter(p.name).value:
                        return SetParametersResult(successful=False, reason=f"{p.name} can only change "
                                                   "while unconfigured (deactivate, cleanup, set, configure)")
                    continue
                if p.name == "feedforward":
                    if p.value not in ("topic", "model", "none"):
                        raise ValueError(f"feedforward must be topic, model or none, got {p.value!r}")
                    changes["feedforward"] = p.value
                elif p.name == "feedforward_robot":
                    changes["model"] = DeltaModel(load_robot(p.value or self.get_parameter("robot").value))
                else:
                    v = [float(x) for x in p.value]
                    if len(v) != 3 or not all(np.isfinite(v)) or min(v) < 0:
                        raise ValueError(f"{p.name} must be 3 numbers >= 0, got {v}")
                    changes[p.name] = np.array(v)
        except (RobotFileError, ValueError, TypeError) as e:
            return SetParametersResult(successful=False, reason=str(e))
        self.loop.reconfigure(**changes)
        if changes:
            self.event(f"control law updated: {', '.join(sorted(changes))}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        p = {name: self.get_parameter(name).value for name in PARAMETERS}
        try:
            robot = load_robot(p["robot"])
            self.model = DeltaModel(robot)
            cfg = LoopConfig(rate=float(p["control_rate"]), kp=tuple(p["kp"]), kd=tuple(p["kd"]),
                             command_timeout=float(p["command_timeout"]), feedforward=p["feedforward"],
                             max_stall=float(p["max_stall"]),
                             feedforward_timeout=float(p["feedforward_timeout"]))
            if p["hardware"] == "sim":
                options = dict(true_robot=p["true_robot"] or None, payload=float(p["sim_payload"]),
                               torque_noise=float(p["sim_torque_noise"]),
                               velocity_noise=float(p["sim_velocity_noise"]),
                               counts_per_rev=int(p["sim_counts_per_rev"]))
            else:
                options = dict(interface=p["can_interface"], channel=p["can_channel"],
                               drives_config=p["drives_config"], rate=float(p["control_rate"]))
            self.drives = make_drives(p["hardware"], robot, **options)
            self.loop = ControlLoop(self.model, self.drives, cfg)
            if p["feedforward_robot"]:
                self.loop.reconfigure(model=DeltaModel(load_robot(p["feedforward_robot"])))
        except (RobotFileError, DriveError, ValueError) as e:
            self.get_logger().error(f"configure failed, staying unconfigured: {e}")
            self._close_drives()
            return TransitionCallbackReturn.FAILURE
        self.max_step = float(p["max_command_step"])
        self.publish_desired = bool(p["publish_desired_state"])
        self._create_entities()
        self.get_logger().info(f"configured: robot {robot.name} ({robot.source}), hardware {p['hardware']}, "
                               f"{cfg.rate:g} Hz, feedforward {cfg.feedforward}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        try:
            self.loop.activate()
        except DriveError as e:
            self.get_logger().error(f"activate failed: {e}")
            return TransitionCallbackReturn.FAILURE
        self.thread = LoopThread(self.loop, self._on_cycle, clock=time.time)
        self.thread.start()
        self.get_logger().info("active: holding position")
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_thread()
        self.loop.deactivate()
        self.get_logger().info("inactive: drives disabled")
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        self._destroy_entities()
        self._close_drives()
        self.loop = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.release()
        self._destroy_entities()
        self._close_drives()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: State) -> TransitionCallbackReturn:
        self._stop_thread()
        if self.drives is not None:
            try:
                self.drives.quick_stop("node error")
            except DriveError:
                pass
        return TransitionCallbackReturn.SUCCESS

    def start(self) -> None:
        """Walk to active if ``autostart`` is set (as users of the simulated robot expect)."""
        if self.get_parameter("autostart").value:
            if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
                self.trigger_activate()

    def release(self) -> None:
        """Stop the loop and disable the drives (brakes hold) without lifecycle transitions,
        for a process that is shutting down."""
        self._stop_thread()
        if self.loop is not None:
            try:
                self.loop.deactivate()
            except DriveError:
                pass

    def destroy_node(self):
        self.release()
        self._close_drives()
        super().destroy_node()

    # ------------------------------------------------------------------ entities
    def _create_entities(self):
        fast = QoSProfile(depth=10)
        self.pub_js = self.create_publisher(JointState, "/joint_states", fast)
        self.pub_desired = self.create_publisher(JointTrajectory, "/delta/desired_state", fast)
        self.pub_events = self.create_publisher(String, "~/events", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        subs = [
            self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_joint_trajectory, 10),
            self.create_subscription(MultiDOFJointTrajectory, "~/cartesian_trajectory", self._on_cartesian_trajectory, 10),
            self.create_subscription(JointState, "/delta/joint_commands", self._on_joint_command, fast),
            self.create_subscription(JointState, "/delta/feedforward", self._on_feedforward, fast),
        ]
        srvs = [self.create_service(Trigger, "~/emergency_stop", self._on_estop),
                self.create_service(Trigger, "~/reset", self._on_reset)]
        self._diag_timer = self.create_timer(1.0, self._publish_diagnostics)
        self._entities = ([(self.destroy_publisher, e) for e in
                           (self.pub_js, self.pub_desired, self.pub_events, self.pub_diag)]
                          + [(self.destroy_subscription, e) for e in subs]
                          + [(self.destroy_service, e) for e in srvs])
        self._create_action_server()

    def _create_action_server(self):
        try:
            from delta_hardware.ros.follow_joint_trajectory import FollowJointTrajectoryServer
        except ImportError:
            return                                             # control_msgs is not installed
        self._action_server = FollowJointTrajectoryServer(self)

    def _destroy_entities(self):
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if self._action_server is not None:
            self._action_server.destroy()
            self._action_server = None
        for destroy, entity in self._entities:
            destroy(entity)
        self._entities = []

    def _stop_thread(self):
        if self.thread is not None:
            self.thread.stop()
            self.thread = None

    def _close_drives(self):
        if self.drives is not None:
            try:
                self.drives.close()
            finally:
                self.drives = None

    # ------------------------------------------------------------------ the loop's output
    def _on_cycle(self, out):
        with self._cycle_lock:
            self._last_cycle = out
        names = list(self.model.joint_names)
        if out.preview is not None and self.publish_desired:
            d = JointTrajectory()
            d.header.stamp = to_time(out.time + self.loop.period)
            d.joint_names = names
            pt = JointTrajectoryPoint()
            pt.positions = out.preview.q.tolist()
            pt.velocities = out.preview.qd.tolist()
            pt.accelerations = out.preview.qdd.tolist()
            d.points = [pt]
            self.pub_desired.publish(d)                 # first: the dynamics node is waiting
        js = JointState()
        js.header.stamp = to_time(out.time)
        js.name = names
        js.position = list(out.position)
        js.velocity = list(out.velocity)
        js.effort = list(out.effort)
        self.pub_js.publish(js)
        for e in out.events:
            self.event(e, warn=not e.startswith("trajectory finished"))

    def event(self, text: str, warn: bool = False) -> None:
        if warn:     # rclpy wants one severity per call site
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)
        self.pub_events.publish(String(data=text))

    # ------------------------------------------------------------------ commands
    def _active(self) -> bool:
        return self.thread is not None and self.thread.running

    def _now(self) -> float:
        return time.time()

    def _submit_points(self, source, start, times, q, qd, qdd):
        now = self._now()
        plan = build_plan(self.model, now, self.loop.current_setpoint(), start or now, times, q, qd, qdd)
        self.loop.submit_plan(plan)
        self.event(f"{source} accepted: {len(times)} points, {plan.end_time - now:.3f} s")
        return plan

    def _on_joint_trajectory(self, msg: JointTrajectory):
        try:
            if not self._active():
                raise TrajectoryRejected("the hardware node is not active")
            q, qd, qdd, times = self.joint_points(msg)
            self._submit_points("joint trajectory", to_sec(msg.header.stamp), times, q, qd, qdd)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            self.event(f"joint trajectory rejected: {e}", warn=True)

    def joint_points(self, msg: JointTrajectory):
        """(q, qd, qdd, times) in joint space from a JointTrajectory (arm or platform joints)."""
        kind, order = match_joint_names(self.model, msg.joint_names)
        if not msg.points:
            raise TrajectoryRejected("trajectory has no points")
        names = msg.joint_names
        rows = {"positions": [], "velocities": [], "accelerations": []}
        for k, p in enumerate(msg.points):
            for field in rows:
                try:
                    rows[field].append(pick(getattr(p, field), order, f"point {k}: {field}", names))
                except ValueError as e:
                    raise TrajectoryRejected(str(e)) from None
        if any(r is None for r in rows["positions"]):
            raise TrajectoryRejected("every point needs positions")
        arrays = []
        for field in ("velocities", "accelerations"):
            present = [r is not None for r in rows[field]]
            if any(present) and not all(present):
                raise TrajectoryRejected(f"{field} must be given for every point or for none")
            arrays.append(np.array(rows[field]) if all(present) else None)
        qd, qdd = arrays
        if qd is None and qdd is not None:
            raise TrajectoryRejected("accelerations need velocities")
        q = np.array(rows["positions"])
        times = [to_sec(p.time_from_start) for p in msg.points]
        if kind == "platform":
            q, qd, qdd = cartesian_to_joint(self.model, q, qd, qdd)
        return q, qd, qdd, times

    def _on_cartesian_trajectory(self, msg: MultiDOFJointTrajectory):
        try:
            if not self._active():
                raise TrajectoryRejected("the hardware node is not active")
            if not msg.points:
                raise TrajectoryRejected("trajectory has no points")
            X, V, A = [], [], []
            for k, p in enumerate(msg.points):
                if not p.transforms:
                    raise TrajectoryRejected(f"point {k}: no transform (platform position)")
                t = p.transforms[0].translation
                X.append([t.x, t.y, t.z])
                if p.velocities:
                    v = p.velocities[0].linear
                    V.append([v.x, v.y, v.z])
                if p.accelerations:
                    a = p.accelerations[0].linear
                    A.append([a.x, a.y, a.z])
            for what, rows in (("velocities", V), ("accelerations", A)):
                if rows and len(rows) != len(X):
                    raise TrajectoryRejected(f"{what} must be given for every point or for none")
            q, qd, qdd = cartesian_to_joint(self.model, X, V or None, A or None)
            times = [to_sec(p.time_from_start) for p in msg.points]
            self._submit_points("cartesian trajectory", to_sec(msg.header.stamp), times, q, qd, qdd)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            self.event(f"cartesian trajectory rejected: {e}", warn=True)

    def _on_joint_command(self, msg: JointState):
        try:
            if not self._active():
                raise TrajectoryRejected("the hardware node is not active")
            kind, order = match_joint_names(self.model, msg.name)
            if kind != "joint":
                raise TrajectoryRejected("joint commands must name the arm joints")
            q = pick(msg.position, order, "position", msg.name)
            tau = pick(msg.effort, order, "effort", msg.name)
            if q is None and tau is None:
                raise TrajectoryRejected("a joint command needs position or effort")
            for what, v in (("position", q), ("effort", tau)):
                if v is not None and not np.isfinite(v).all():
                    raise TrajectoryRejected(f"{what} must be finite numbers, got {v}")
            if q is not None:
                lim = self.model.robot.limits.position
                for i, v in enumerate(q):
                    if not lim[i][0] <= v <= lim[i][1]:
                        raise TrajectoryRejected(f"{self.model.joint_names[i]} position {v:.4f} rad "
                                                 f"is outside its limits {list(lim[i])}")
                step = np.abs(np.array(q) - self.loop.current_setpoint().q).max()
                if step > self.max_step:
                    raise TrajectoryRejected(f"too fast: the command is {step:.3f} rad from the setpoint "
                                             f"(max_command_step {self.max_step:g} rad)")
            if tau is not None:
                lim = np.array(self.model.robot.limits.torque)
                if (np.abs(tau) > lim).any():
                    raise TrajectoryRejected(f"effort {tau} exceeds the torque limits {lim.tolist()}")
            self.loop.submit_command(self._now(), q=q, tau=tau)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            self.event(f"joint command rejected: {e}", warn=True)

    def _on_feedforward(self, msg: JointState):
        if self.loop is None:
            return
        try:
            kind, order = match_joint_names(self.model, msg.name)
            tau = pick(msg.effort, order, "effort", msg.name)
        except (TrajectoryRejected, ValueError):
            return
        if tau is not None and kind == "joint" and np.isfinite(tau).all():
            self.loop.set_feedforward(to_sec(msg.header.stamp), tau, received=self._now())

    def _on_estop(self, request, response):
        if self.loop is None:
            response.success, response.message = False, "not configured"
            return response
        self.loop.emergency_stop("emergency stop service")
        self.event("emergency stop: every axis quick-stopped, holding", warn=True)
        response.success, response.message = True, "stopped"
        return response

    def _on_reset(self, request, response):
        if self.loop is None or not self._active():
            response.success, response.message = False, "the hardware node is not active"
            return response
        try:
            self.loop.reset()
        except DriveError as e:
            response.success, response.message = False, f"reset failed: {e}"
            return response
        self.event("reset: holding position")
        response.success, response.message = True, "reset"
        return response

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self):
        if self.loop is None:
            return
        s = self.loop.stats.summary()
        st = DiagnosticStatus(name="delta_hardware: control loop", hardware_id=self.model.robot.name)
        reason = self.loop.stopped_reason
        state = self.drives.state.value if self.drives is not None else "closed"
        if reason:
            st.level, st.message = DiagnosticStatus.ERROR, f"stopped: {reason}"
        elif self.thread is not None and self.thread.error is not None:
            st.level, st.message = DiagnosticStatus.ERROR, f"loop error: {self.thread.error}"
        elif s.get("period_p99_ms", 0) > 1.2e3 * self.loop.period:
            st.level, st.message = DiagnosticStatus.WARN, "loop period p99 above 1.2 x nominal"
        else:
            st.level, st.message = DiagnosticStatus.OK, f"drives {state}"
        values = {"drive_state": state, "control_rate_hz": f"{self.loop.cfg.rate:g}",
                  **{k: json.dumps(v) if isinstance(v, list) else f"{v:.4g}" if isinstance(v, float) else str(v)
                     for k, v in s.items()}}
        if self.drives is not None and hasattr(self.drives, "diagnostics"):
            values.update(self.drives.diagnostics())      # per axis: state, heartbeat age, late frames
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [st]
        self.pub_diag.publish(arr)


def _started() -> "HardwareNode":
    node = HardwareNode()
    node.start()
    return node


def main(args=None) -> int:
    """Spin the node on a single-threaded executor: its callbacks are short (the loop has
    its own thread), and rclpy's multi-threaded executor would add milliseconds of latency
    to the 500 Hz feedforward topic."""
    from delta_core.ros.node_util import run
    return run(_started, "delta_hardware", args)


if __name__ == "__main__":
    sys.exit(main())
