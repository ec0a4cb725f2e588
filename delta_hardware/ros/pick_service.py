"""The hardware node's ``~/pick`` service (``delta_msgs/srv/Pick``): plan pick-and-place
cycles with the node's current model and run them through the plans every trajectory takes.

Imported only where ``delta_msgs`` is installed (``make setup`` builds it into .venv:
interfaces/README.md); the node runs without it. The callback runs in a callback group of
its own on the node's multi-threaded executor, so planning (TOPP-RA, tens to hundreds of ms)
never delays ``~/emergency_stop`` or ``~/status``. The request's reception time goes with the
plan: a stop received during planning or before the plan reaches the loop voids it (the stop
is latched), as for every trajectory. Planning: :mod:`delta_hardware.pick_run`; the plan and
its checks and the model: :mod:`delta_hardware.ros.timed_motion`.
"""
from __future__ import annotations

import numpy as np
from delta_msgs.srv import Pick
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from delta_core.robot_file import RobotFileError
from delta_core.ros.rclpy_adapter import request_received_ns
from delta_hardware.drives import DriveError
from delta_hardware.pick_run import PickRefused, plan_pick_run
from delta_hardware.ros.timed_motion import PlanningModel, limit_scale, submit_knots
from delta_hardware.trajectory_plan import TrajectoryRejected


class PickService:
    """``~/pick`` of ``node`` (a :class:`~delta_hardware.ros.hardware_node.HardwareNode`;
    module docstring)."""

    def __init__(self, node, qos):
        self.node = node
        self.model = PlanningModel(node)
        self.service = node.create_service(Pick, "~/pick", self.on_pick, qos_profile=qos,
                                           callback_group=MutuallyExclusiveCallbackGroup())

    def on_pick(self, request, response):
        """Plan and start the run; the answer says its duration, cycle time and picks per minute,
        or why it was refused (the robot holds)."""
        node, rx = self.node, request_received_ns()
        try:
            response.duration, response.cycle_time, response.picks_per_minute, text = self.run(request, rx)
            response.success, response.message = True, text
        except (PickRefused, TrajectoryRejected, RobotFileError, DriveError, ValueError) as e:
            response.success, response.message = False, f"pick refused: {e}"
            node.event(response.message, warn=True)
        return response

    def run(self, request, rx):
        """(duration, cycle time, picks per minute, message) of the run started for ``request``
        (received at ``rx`` ns); PickRefused / TrajectoryRejected with the reason."""
        node = self.node
        if not node.active():
            raise PickRefused("the hardware node is not active")
        if node.loop.stopped_reason:
            raise PickRefused(f"the robot is stopped ({node.loop.stopped_reason}): reset first")
        p = lambda pt: [pt.x, pt.y, pt.z]                     # noqa: E731
        current = node.loop.current_setpoint()
        if np.abs(current.qd).max() > 1e-6:
            raise PickRefused("the robot is moving: wait for the running motion's end (or stop it)")
        params = node.params()
        run = plan_pick_run(self.model(), current.q, p(request.from_point), p(request.to_point),
                            float(request.height), float(request.blend), float(request.dwell), int(request.cycles),
                            limit_scale=limit_scale(node),
                            max_points=int(params["max_trajectory_points"]))
        if run.duration > float(params["max_trajectory_duration"]):
            raise PickRefused(f"the run lasts {run.duration:.4g} s, more than max_trajectory_duration "
                              f"{params['max_trajectory_duration']:g} s; ask for fewer cycles")
        submit_knots(node, "pick", run.knots, rx)
        text = (f"{request.cycles} cycles of {run.cycle_time:.4f} s ({run.picks_per_minute:.1f} picks/min)"
                f"{f' after {run.approach:.3f} s to the start' if run.approach else ''}, {run.duration:.3f} s "
                f"in all; planned in {run.planning_time * 1e3:.0f} ms")
        node.event(f"pick: {text}")
        return run.duration, run.cycle_time, run.picks_per_minute, text

    def destroy(self):
        """Destroy the service."""
        self.node.destroy_service(self.service)
