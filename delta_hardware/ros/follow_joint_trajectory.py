"""The ``control_msgs/FollowJointTrajectory`` action of the hardware node, for MoveIt and
other clients of ros2_control's ``joint_trajectory_controller`` (JTC).

Imported only where ``control_msgs`` is installed (it is not available as a PyPI wheel);
the node runs without it. Behaviour, as JTC's (Jazzy), with the differences marked:

* **Goal callback**: a goal is rejected (``GoalResponse.REJECT``; the reason on ``~/events``
  and in the log) unless the node is active and the trajectory passes every check the topics
  apply: joint names (the arm joints or ``platform_x/y/z``, all of them, with the robot's
  ``prefix``), finite numbers (NaN is refused: *beyond JTC*), increasing times, reachability
  (every platform point through inverse kinematics), joint position, velocity and acceleration
  limits of the robot file along the interpolated plan (*beyond JTC*, which checks neither at
  goal time), and tolerances that are -1, 0 or positive and name the goal's joints. A point
  at time 0 (MoveIt's start state) is dropped if it is within ``action_start_tolerance`` of the
  setpoint, else the goal is refused (a jump). A ``multi_dof_trajectory`` of the one
  multi-DOF joint ``<prefix>platform`` (translation only) is accepted too (JTC accepts none).
* **Tolerances**: ``path_tolerance`` / ``goal_tolerance`` per joint (position and velocity;
  acceleration is not measured and is ignored), ``component_path_tolerance`` /
  ``component_goal_tolerance`` on ``<prefix>platform`` (X_AXIS, Y_AXIS, Z_AXIS, TRANSLATION:
  the distance; ROTATION is always met, the platform keeps its orientation). Values: -1 no
  check, 0 the node's default (``action_path_tolerance``, ``action_goal_tolerance``; 0: no
  check), > 0 this value. Platform tolerances are in metres on the platform position (forward
  kinematics of the measured arm angles), arm tolerances in rad. The path tolerance is
  checked on every control cycle until the last point's time: a violation holds the robot
  and aborts with ``PATH_TOLERANCE_VIOLATED`` (-4). After the end, the goal tolerance must be
  met within ``goal_time_tolerance`` (0: the node's ``action_goal_time``; 0 there: no limit,
  as JTC) or the goal aborts with ``GOAL_TOLERANCE_VIOLATED`` (-5).
* **Feedback** at ``action_monitor_rate`` (default 20 Hz, JTC's default) of wall time,
  ``header.stamp`` = the node's time (simulated time when it owns it), in the goal's joint
  space (desired, actual, error: position and velocity).
* **Preemption**: a newer goal, trajectory or command replaces a running goal, which ends
  ABORTED with ``INVALID_GOAL`` at once (JTC since its July 2026 Jazzy release). **Cancel**:
  CANCELED, the robot holds where its setpoint is. A quick stop aborts with the reason.
* **Timing** (*beyond JTC*): with the node's ``trajectory_timing: time_optimal`` a goal's path
  is kept (its points' positions, from the setpoint, joined by a cubic spline of the platform
  positions over chord length) and timed time-optimally under ``motion_limit_scale`` of the
  robot file's velocity, acceleration and torque limits with the node's current model
  (:mod:`delta_hardware.ros.timed_motion`), instead of following the goal's times; it starts
  when accepted (``header.stamp`` is not used), from rest (a goal that arrives while the robot
  moves is aborted with the reason), and ends at the goal's last point. Tolerances apply to the
  retimed motion.

The server lives on a companion node ``<hardware node>_actions`` in the same namespace,
spun by an executor thread of its own (executing a goal blocks for the trajectory's
duration, and the hardware node's single-threaded executor must keep its other callbacks
fast). The companion ignores the process's global ``--ros-args`` (a ``__node:=`` remap from
``ros2 launch`` would otherwise rename it to the hardware node's name too) and has no
parameter services; its clock is the hardware node's (simulated time when that node uses it),
set by the hardware node's time source rather than a ``/clock`` subscription of its own
(:func:`~delta_core.ros.rclpy_adapter.share_time`). The action keeps the
hardware node's name: ``<ns>/<hardware node>/follow_joint_trajectory``. :meth:`destroy`
ends running goals, shuts the executor down and joins its thread before the nodes go.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointComponentTolerance
from geometry_msgs.msg import Transform, Twist, Vector3
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from trajectory_msgs.msg import JointTrajectoryPoint, MultiDOFJointTrajectoryPoint

from delta_core.ros.rclpy_adapter import share_time
from delta_dynamics.algorithms import forward_kinematics, jacobian
from delta_hardware.drives import DriveError
from delta_hardware.pick_run import retime_joint_path
from delta_hardware.ros.messages import to_sec, to_time
from delta_hardware.ros.timed_motion import PlanningModel, limit_scale, submit_knots
from delta_hardware.ros.trajectory_intake import MULTI_DOF_JOINT, cartesian_points, check_duration, joint_points
from delta_hardware.trajectory_plan import PLATFORM_JOINTS, TrajectoryRejected, build_plan, match_joint_names

Result = FollowJointTrajectory.Result
#: threads of the companion's executor: a running goal, a new goal (which preempts it), cancels
THREADS = 4


class GoalRejected(ValueError):
    """A goal refused in the goal callback; the message says why."""


@dataclass
class Tolerances:
    """Per coordinate (3 values, NaN: no check) of the goal's space: arm joints (rad) or the
    platform position (m); ``translation``: a bound on the platform position error's norm."""
    path_position: np.ndarray
    path_velocity: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    path_translation: float = float("nan")
    goal_translation: float = float("nan")

    def any_path(self) -> bool:
        """Whether any path tolerance is to be checked (a finite value)."""
        return bool(np.isfinite(self.path_position).any() or np.isfinite(self.path_velocity).any()
                    or np.isfinite(self.path_translation))


@dataclass
class Prepared:
    """A goal checked in the goal callback: the joint points and its tolerances."""
    space: str                         # "joint" | "platform" (platform_x/y/z or the multi-DOF joint)
    multi_dof: bool
    names: list                        # feedback joint names (with the prefix)
    q: np.ndarray
    qd: np.ndarray | None
    qdd: np.ndarray | None
    times: np.ndarray
    start: float
    tol: Tolerances
    goal_time: float                   # s, 0: no limit
    unit: str = "rad"                  # of positions in the goal's space (rad, or m)


@dataclass
class Running:
    """The goal being executed: its plan and prepared goal, a path tolerance violation found by the
    loop thread, whether it is done, and the lock that guards them."""
    plan: object
    prepared: Prepared
    violation: str = ""                # set by the loop thread (path tolerance)
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(v: float, default: float, what: str) -> float:
    """JTC's convention: -1 no check (NaN here), 0 the default, > 0 the value; else refuse."""
    if not np.isfinite(v) or (v < 0 and v != -1.0):
        raise GoalRejected(f"{what} must be -1 (no check), 0 (default) or positive, got {v}")
    if v == -1.0:
        return float("nan")
    if v == 0.0:
        return default if default > 0 else float("nan")
    return float(v)


class FollowJointTrajectoryServer:
    """The ``follow_joint_trajectory`` action of ``node``, served by the companion node
    ``<node>_actions`` on an executor thread of its own (module docstring)."""

    def __init__(self, node):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter
        self.node = node
        self.model = PlanningModel(node)                   # trajectory_timing: time_optimal
        self._closing = False
        self._running: Running | None = None
        self._executing = 0
        self._cv = threading.Condition()
        self._prepared: dict = {}
        self.host = rclpy.create_node(
            f"{node.get_name()}_actions", namespace=node.get_namespace(), context=node.context,
            use_global_arguments=False, start_parameter_services=False,
            parameter_overrides=[Parameter("use_sim_time", value=False)])
        share_time(node, self.host.get_clock())          # the node's time, no /clock subscription of its own
        self.action_name = f"{node.get_fully_qualified_name()}/follow_joint_trajectory"
        self.server = ActionServer(self.host, FollowJointTrajectory, self.action_name,
                                   execute_callback=self._execute, goal_callback=self._on_goal,
                                   cancel_callback=lambda goal: CancelResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        self.executor = MultiThreadedExecutor(num_threads=THREADS, context=node.context)
        self.executor.add_node(self.host)
        self.thread = threading.Thread(target=self._spin, name="follow_joint_trajectory", daemon=True)
        self.thread.start()

    def _spin(self):
        from rclpy.executors import ExternalShutdownException
        try:
            self.executor.spin()
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
        except Exception:                                   # the context shut down under a wait
            if self.node.context.ok() and not self._closing:
                raise

    def destroy(self, timeout: float = 5.0):
        """End running goals (aborted: shutting down), shut the executor down, join its thread,
        destroy the server and the companion node: nothing of it outlives the hardware node."""
        with self._cv:
            self._closing = True
            self._cv.wait_for(lambda: self._executing == 0, timeout)
        self.executor.shutdown(timeout_sec=timeout)
        self.thread.join(timeout)
        self.server.destroy()
        self.host.destroy_node()

    # ------------------------------------------------------------------ goal time
    def _on_goal(self, goal):
        try:
            prepared = self.prepare(goal)
        except (GoalRejected, TrajectoryRejected, DriveError, ValueError) as e:
            self.node.event(f"action goal rejected: {e}", warn=True)
            return GoalResponse.REJECT
        with self._cv:
            self._prepared[id(goal)] = (goal, prepared)
        return GoalResponse.ACCEPT

    def prepare(self, goal) -> Prepared:
        """Every check of the goal callback (module docstring); the prepared goal or
        GoalRejected / TrajectoryRejected with the reason."""
        node = self.node
        if self._closing or not node.active():
            raise GoalRejected("the hardware node is not active")
        model, prefix = node.model, node.prefix
        has_joint, has_multi = len(goal.trajectory.points) > 0, len(goal.multi_dof_trajectory.points) > 0
        if has_joint == has_multi:
            raise GoalRejected("a goal needs points in exactly one of trajectory and multi_dof_trajectory")
        max_points = int(node.get_parameter("max_trajectory_points").value)
        n_points = len(goal.trajectory.points) + len(goal.multi_dof_trajectory.points)
        if n_points > max_points:
            raise GoalRejected(f"{n_points} points, more than max_trajectory_points {max_points}")
        if has_multi:
            names = list(goal.multi_dof_trajectory.joint_names)
            if names != [prefix + MULTI_DOF_JOINT]:
                raise GoalRejected(f"multi_dof_trajectory must name the one multi-DOF joint "
                                   f"{prefix + MULTI_DOF_JOINT!r}, got {names}")
            q, qd, qdd, times, start = cartesian_points(model, goal.multi_dof_trajectory, prefix)
            space, order = "platform", [0, 1, 2]
            fb_names = [prefix + MULTI_DOF_JOINT]
            given = list(PLATFORM_JOINTS)
        else:
            q, qd, qdd, times, start = joint_points(model, goal.trajectory, prefix)
            given = [n[len(prefix):] for n in goal.trajectory.joint_names]
            space, order = match_joint_names(model, given)
            canonical = list(model.joint_names) if space == "joint" else list(PLATFORM_JOINTS)
            fb_names = [prefix + n for n in canonical]
        check_duration(times, start, node.now(), float(node.get_parameter("max_trajectory_duration").value))
        current = node.loop.current_setpoint()
        start_tol = float(node.get_parameter("action_start_tolerance").value)
        if len(times) and times[0] == 0.0:
            gap = float(np.abs(q[0] - current.q).max())
            if gap > start_tol:
                u = node.units["position"]
                raise GoalRejected(f"point 0 (time 0) is {gap:.4g} {u} from the robot's setpoint "
                                   f"{np.round(current.q, 4).tolist()} {u}, more than action_start_tolerance "
                                   f"{start_tol:g} {u}")
            q, times = q[1:], times[1:]
            qd = None if qd is None else qd[1:]
            qdd = None if qdd is None else qdd[1:]
            if not len(times):
                raise GoalRejected("the trajectory has only its start point (time 0)")
        now = node.now()
        build_plan(model, now, current, start or now, times, q, qd, qdd, limits=node.loop.limits())
        tol = self._tolerances(goal, space, has_multi, given)
        goal_time = to_sec(goal.goal_time_tolerance)
        if not np.isfinite(goal_time) or goal_time < 0:
            raise GoalRejected(f"goal_time_tolerance must be >= 0, got {goal_time}")
        if goal_time == 0:
            goal_time = float(node.get_parameter("action_goal_time").value)
        unit = node.units["position"] if space == "joint" else "m"
        return Prepared(space, has_multi, fb_names, q, qd, qdd, times, start, tol, goal_time, unit)

    def _tolerances(self, goal, space, multi, given) -> Tolerances:
        node = self.node
        prefix = node.prefix
        d_path = float(node.get_parameter("action_path_tolerance").value)
        d_goal = float(node.get_parameter("action_goal_tolerance").value)
        full = lambda d: np.full(3, d if d > 0 else np.nan)       # noqa: E731
        tol = Tolerances(full(d_path), full(np.nan), full(d_goal), full(np.nan))
        canonical = list(node.model.joint_names) if space == "joint" else list(PLATFORM_JOINTS)
        for kind, items in (("path", goal.path_tolerance), ("goal", goal.goal_tolerance)):
            for t in items:
                name = t.name[len(prefix):] if t.name.startswith(prefix) else None
                if multi or name not in canonical:
                    raise GoalRejected(f"{kind}_tolerance names {t.name!r}, not a joint of this goal "
                                       f"({[prefix + n for n in canonical] if not multi else 'multi-DOF goal'})")
                i = canonical.index(name)
                default = d_path if kind == "path" else d_goal
                getattr(tol, f"{kind}_position")[i] = _value(t.position, default, f"{kind}_tolerance {t.name} position")
                getattr(tol, f"{kind}_velocity")[i] = _value(t.velocity, 0.0, f"{kind}_tolerance {t.name} velocity")
                _value(t.acceleration, 0.0, f"{kind}_tolerance {t.name} acceleration")   # checked, not measured
        axes = {JointComponentTolerance.X_AXIS: 0, JointComponentTolerance.Y_AXIS: 1, JointComponentTolerance.Z_AXIS: 2}
        for kind, items in (("path", goal.component_path_tolerance), ("goal", goal.component_goal_tolerance)):
            for t in items:
                what = f"component_{kind}_tolerance {t.joint_name} component {t.component}"
                if t.joint_name != prefix + MULTI_DOF_JOINT:
                    raise GoalRejected(f"{what}: the one multi-DOF joint is {prefix + MULTI_DOF_JOINT!r}")
                if space != "platform":
                    raise GoalRejected(f"{what}: platform tolerances need a platform goal "
                                       f"(platform_x/y/z or multi_dof_trajectory)")
                default = d_path if kind == "path" else d_goal
                pos = _value(t.position, default, what + " position")
                vel = _value(t.velocity, 0.0, what + " velocity")
                _value(t.acceleration, 0.0, what + " acceleration")
                if t.component in axes:
                    getattr(tol, f"{kind}_position")[axes[t.component]] = pos
                    getattr(tol, f"{kind}_velocity")[axes[t.component]] = vel
                elif t.component == JointComponentTolerance.TRANSLATION:
                    setattr(tol, f"{kind}_translation", pos)
                elif t.component != JointComponentTolerance.ROTATION:   # rotation: always met
                    raise GoalRejected(f"{what}: component must be X_AXIS, Y_AXIS, Z_AXIS, TRANSLATION or ROTATION")
        return tol

    # ------------------------------------------------------------------ the loop thread
    def errors(self, prepared: Prepared, plan, t: float, q, qd):
        """(position error, velocity error) of the measured state against the plan at ``t``,
        in the goal's space (arm rad, or platform m and m/s)."""
        sp = plan.sample(min(t, plan.end_time))
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        if prepared.space == "joint":
            return q - sp.q, qd - sp.qd
        model = self.node.model
        X, Xr = forward_kinematics(model, q), forward_kinematics(model, sp.q)
        V = np.linalg.solve(jacobian(model, X), qd)
        Vr = np.linalg.solve(jacobian(model, Xr), sp.qd)
        return X - Xr, V - Vr

    def on_cycle(self, t: float, q, qd) -> None:
        """Called by the hardware node after each control cycle: the path tolerance check."""
        run = self._running
        if run is None or run.done or run.violation or t > run.plan.end_time or not run.prepared.tol.any_path():
            return
        try:
            e, ev = self.errors(run.prepared, run.plan, t, q, qd)
        except Exception as ex:  # noqa: BLE001 - never let the check disturb the loop
            run.violation = f"path tolerance not checkable: {ex}"
            return
        why = _violations(run.prepared, e, ev, "path")
        if why:
            run.violation = f"path tolerance violated at t = {t:.3f} s: {why}"

    # ------------------------------------------------------------------ execution
    def _execute(self, handle):
        with self._cv:
            self._executing += 1
            _, prepared = self._prepared.pop(id(handle.request), (None, None))
        started = {}                            # "plan": the plan submitted for this goal
        try:
            return self._run(handle, prepared, started)
        except Exception as e:                # noqa: BLE001 - a goal never ends without a code and a reason
            if not self.node.context.ok() or self._closing:       # the context went down under us (SIGINT)
                return Result(error_code=Result.INVALID_GOAL, error_string="the hardware node is shutting down")
            self._hold_if_following(started.get("plan"))
            text = f"execution failed ({type(e).__name__}: {e}); the robot holds where its setpoint is"
            self.node.get_logger().error(f"action goal: {text}")
            try:
                return self._finish(handle, Result.INVALID_GOAL, text)
            except Exception:                 # noqa: BLE001 - the handle is already terminal
                return Result(error_code=Result.INVALID_GOAL, error_string=text)
        finally:
            with self._cv:
                self._executing -= 1
                self._cv.notify_all()

    def _hold_if_following(self, plan) -> None:
        """Hold the robot if it still follows ``plan``: a goal reported failed never keeps
        moving the robot (a newer trajectory that replaced it is left alone)."""
        loop = getattr(self.node, "loop", None)
        if plan is not None and loop is not None and loop.is_following(plan):
            loop.hold()

    def _finish(self, handle, code, text, how="abort", plan=None):
        """End the goal: ``how`` abort | cancel | succeed, with ``code`` and ``text``; an abort
        holds the robot if it still follows ``plan``."""
        if how == "abort":
            self._hold_if_following(plan)
        result = Result(error_code=code, error_string=text)
        getattr(handle, {"abort": "abort", "cancel": "canceled", "succeed": "succeed"}[how])()
        if code != Result.SUCCESSFUL:
            self.node.event(f"action goal {'canceled' if how == 'cancel' else 'aborted'}: {text}",
                            warn=how != "cancel")
        return result

    def _run(self, handle, prepared, started: dict):
        node = self.node
        if prepared is None:
            return self._finish(handle, Result.INVALID_GOAL, "goal not checked")
        try:
            if self._closing:
                raise TrajectoryRejected("the hardware node is shutting down")
            if node.get_parameter("trajectory_timing").value == "time_optimal":
                plan = self._retimed(prepared)
            else:
                plan = node.submit_points("action goal", prepared.start, prepared.times, prepared.q,
                                          prepared.qd, prepared.qdd)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            return self._finish(handle, Result.INVALID_GOAL, str(e))
        started["plan"] = plan                        # for _execute's error path: hold it
        run = Running(plan, prepared)
        self._running = run
        period = 1.0 / float(node.get_parameter("action_monitor_rate").value)
        try:
            while True:
                if not node.context.ok():                   # SIGINT: rclpy shut the context down
                    return Result(error_code=Result.INVALID_GOAL, error_string="the hardware node is shutting down")
                if self._closing or not node.active():
                    return self._finish(handle, Result.INVALID_GOAL, "the hardware node stopped (shutdown or "
                                        "deactivated)", plan=plan)
                if handle.is_cancel_requested:
                    node.loop.hold()
                    node.event("action goal canceled: holding")
                    return self._finish(handle, Result.SUCCESSFUL, "canceled", how="cancel")
                if node.loop.stopped_reason:
                    return self._finish(handle, Result.PATH_TOLERANCE_VIOLATED,
                                        f"robot stopped: {node.loop.stopped_reason}", plan=plan)
                if run.violation:
                    return self._finish(handle, Result.PATH_TOLERANCE_VIOLATED, run.violation, plan=plan)
                now = node.now()
                following = node.loop.is_following(plan)
                if not following and now < plan.end_time - 1e-3:
                    return self._finish(handle, Result.INVALID_GOAL, "replaced by a newer trajectory or command")
                state = node.loop.feedback()
                e, ev = self.errors(prepared, plan, now, state.position, state.velocity)
                handle.publish_feedback(self._feedback(prepared, plan, now, state, e, ev))
                if now >= plan.end_time:
                    why = _violations(prepared, e, ev, "goal")
                    if not why:
                        return self._finish(handle, Result.SUCCESSFUL, "", how="succeed")
                    if prepared.goal_time > 0 and now > plan.end_time + prepared.goal_time:
                        return self._finish(handle, Result.GOAL_TOLERANCE_VIOLATED,
                                            f"{why} {now - plan.end_time:.3f} s after the end "
                                            f"(goal_time_tolerance {prepared.goal_time:g} s)", plan=plan)
                time.sleep(period)
        finally:
            run.done = True
            if self._running is run:
                self._running = None

    def _retimed(self, prepared):
        """``trajectory_timing: time_optimal``: the goal's path (its joint positions from the
        setpoint) timed time-optimally under the model's limits and started now (module docstring)."""
        node = self.node
        q = np.vstack((node.loop.current_setpoint().q, prepared.q))
        knots = retime_joint_path(self.model(), q, limit_scale=limit_scale(node))
        return submit_knots(node, f"action goal (time-optimal, {prepared.times[-1]:.3f} s as sent)", knots)

    def _feedback(self, prepared, plan, now, state, e, ev):
        fb = FollowJointTrajectory.Feedback()
        fb.header.stamp = to_time(now)
        sp = plan.sample(min(now, plan.end_time))
        if prepared.space == "joint":
            desired = (sp.q, sp.qd)
            actual = (np.asarray(state.position, float), np.asarray(state.velocity, float))
        else:
            actual_x = forward_kinematics(self.node.model, np.asarray(state.position, float))
            desired_x = forward_kinematics(self.node.model, sp.q)
            desired = (desired_x, np.linalg.solve(jacobian(self.node.model, desired_x), sp.qd))
            actual = (actual_x, desired[1] + ev)
        if prepared.multi_dof:
            fb.multi_dof_joint_names = prepared.names
            for field_name, (p, v) in (("multi_dof_desired", desired), ("multi_dof_actual", actual),
                                       ("multi_dof_error", (e, ev))):
                pt = MultiDOFJointTrajectoryPoint(
                    transforms=[Transform(translation=Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2])))],
                    velocities=[Twist(linear=Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2])))])
                setattr(fb, field_name, pt)
            return fb
        fb.joint_names = prepared.names
        fb.desired = JointTrajectoryPoint(positions=list(map(float, desired[0])), velocities=list(map(float, desired[1])))
        fb.actual = JointTrajectoryPoint(positions=list(map(float, actual[0])), velocities=list(map(float, actual[1])))
        fb.error = JointTrajectoryPoint(positions=list(map(float, e)), velocities=list(map(float, ev)))
        for p in (fb.desired, fb.actual, fb.error):
            p.time_from_start.sec, p.time_from_start.nanosec = _duration(now - plan.start_time)
        return fb


def _duration(t: float):
    t = max(t, 0.0)
    return int(t), min(int(round((t - int(t)) * 1e9)), 999_999_999)


def _violations(prepared: Prepared, e, ev, kind: str) -> str:
    """Which tolerances of ``kind`` (path | goal) the errors break ('' if none)."""
    tol = prepared.tol
    pos, vel = getattr(tol, f"{kind}_position"), getattr(tol, f"{kind}_velocity")
    unit = prepared.unit
    names = prepared.names if len(prepared.names) == 3 else ["x", "y", "z"]
    out = []
    for i in range(3):
        if np.isfinite(pos[i]) and abs(e[i]) > pos[i]:
            out.append(f"{names[i]} position off by {abs(e[i]):.4g} {unit} (tolerance {pos[i]:g})")
        if np.isfinite(vel[i]) and abs(ev[i]) > vel[i]:
            out.append(f"{names[i]} velocity off by {abs(ev[i]):.4g} {unit}/s (tolerance {vel[i]:g})")
    bound = getattr(tol, f"{kind}_translation")
    if np.isfinite(bound) and float(np.linalg.norm(e)) > bound:
        out.append(f"platform off by {float(np.linalg.norm(e)):.4g} m (translation tolerance {bound:g})")
    return "; ".join(out)
