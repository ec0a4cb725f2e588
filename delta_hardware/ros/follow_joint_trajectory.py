"""The ``control_msgs/FollowJointTrajectory`` action of the hardware node, for MoveIt and
other clients of ros2_control's trajectory interface.

Imported only where ``control_msgs`` is installed (it is not available as a PyPI wheel);
the node runs without it. A goal goes through the same validation as the
``~/joint_trajectory`` topic; feedback (desired, actual, error) is sent at 20 Hz; cancel
holds the robot where its setpoint is; at the end the goal tolerances are checked on
position (within ``goal_time_tolerance``).

The server lives on a companion node (``<hardware node>_actions``) spun by its own
executor thread: executing a goal blocks for the trajectory's duration, and the hardware
node's single-threaded executor must keep its other callbacks (the 500 Hz feedforward) fast.
The action keeps the hardware node's name: ``/<hardware node>/follow_joint_trajectory``.
"""
from __future__ import annotations

import time

import numpy as np
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from trajectory_msgs.msg import JointTrajectoryPoint

from delta_hardware.drives import DriveError
from delta_hardware.ros.messages import to_sec
from delta_hardware.ros.trajectory_intake import joint_points
from delta_hardware.trajectory_plan import TrajectoryRejected

Result = FollowJointTrajectory.Result


class FollowJointTrajectoryServer:
    def __init__(self, node):
        import threading

        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        self.node = node
        self.host = rclpy.create_node(f"{node.get_name()}_actions", namespace=node.get_namespace(),
                                      context=node.context)
        name = f"{node.get_fully_qualified_name()}/follow_joint_trajectory"
        self.server = ActionServer(self.host, FollowJointTrajectory, name,
                                   execute_callback=self._execute, goal_callback=self._on_goal,
                                   cancel_callback=lambda goal: CancelResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        self.executor = MultiThreadedExecutor(num_threads=2, context=node.context)
        self.executor.add_node(self.host)
        self.thread = threading.Thread(target=self._spin, name="follow_joint_trajectory", daemon=True)
        self.thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:                                   # shutdown
            pass

    def destroy(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.server.destroy()
        self.host.destroy_node()

    def _on_goal(self, goal):
        return GoalResponse.ACCEPT if self.node._active() else GoalResponse.REJECT

    def _execute(self, handle):
        node = self.node
        goal = handle.request
        result = Result()
        try:
            q, qd, qdd, times, start = joint_points(node.model, goal.trajectory)
            plan = node.submit_points("action goal", start, times, q, qd, qdd)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            result.error_code = Result.INVALID_JOINTS if "joint names" in str(e) else Result.INVALID_GOAL
            result.error_string = str(e)
            node.event(f"action goal rejected: {e}", warn=True)
            handle.abort()
            return result
        names = list(node.model.joint_names)
        while node.loop.is_following(plan):
            if handle.is_cancel_requested:
                node.loop.hold()
                handle.canceled()
                node.event("action goal canceled: holding")
                result.error_string = "canceled"
                return result
            if node.loop.stopped_reason:
                result.error_code = Result.PATH_TOLERANCE_VIOLATED
                result.error_string = f"robot stopped: {node.loop.stopped_reason}"
                handle.abort()
                return result
            handle.publish_feedback(self._feedback(names, plan))
            time.sleep(0.05)
        if node.now() < plan.end_time - 1e-3:              # replaced by another command
            result.error_code = Result.INVALID_GOAL
            result.error_string = "replaced by a newer trajectory or command"
            handle.abort()
            return result
        tol = {t.name: t.position for t in goal.goal_tolerance if t.position > 0}
        deadline = plan.end_time + to_sec(goal.goal_time_tolerance)
        goal_q = plan.sample(plan.end_time).q
        while True:
            q_now = np.array(node.loop.drives.read().position)
            bad = [(n, abs(q_now[i] - goal_q[i]), tol[n]) for i, n in enumerate(names)
                   if n in tol and abs(q_now[i] - goal_q[i]) > tol[n]]
            if not bad or node.now() >= deadline:
                break
            time.sleep(0.01)
        if bad:
            result.error_code = Result.GOAL_TOLERANCE_VIOLATED
            result.error_string = "; ".join(f"{n} off by {e:.4g} rad (tolerance {t:g})" for n, e, t in bad)
            handle.abort()
            return result
        result.error_code = Result.SUCCESSFUL
        handle.succeed()
        return result

    def _feedback(self, names, plan):
        fb = FollowJointTrajectory.Feedback()
        fb.joint_names = names
        sp = plan.sample(self.node.now())
        state = self.node.loop.drives.read()
        fb.desired = JointTrajectoryPoint(positions=sp.q.tolist(), velocities=sp.qd.tolist())
        fb.actual = JointTrajectoryPoint(positions=list(state.position), velocities=list(state.velocity))
        fb.error = JointTrajectoryPoint(positions=(sp.q - np.array(state.position)).tolist(),
                                        velocities=(sp.qd - np.array(state.velocity)).tolist())
        return fb
