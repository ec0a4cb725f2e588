"""Time-optimal motions on the hardware node: the model it plans with and the hand-over of a
planned motion to the loop, shared by ``~/pick`` (:mod:`delta_hardware.ros.pick_service`) and
the FollowJointTrajectory option ``trajectory_timing: time_optimal``
(:mod:`delta_hardware.ros.follow_joint_trajectory`).

The model is the loop's: the ``feedforward_robot`` file (an identified model) when set, else
the ``robot`` file. The limits are ``motion_limit_scale`` of the robot file's. The plan passes
the checks of every plan (:func:`delta_hardware.knot_plan.knot_plan`) and carries the request's
reception time: a stop received while it was planned voids it.
"""
from __future__ import annotations

from delta_dynamics.kinds import model_for
from delta_hardware.knot_plan import knot_plan
from delta_hardware.ros.parameters import load_bounded
from delta_hardware.trajectory_plan import TrajectoryRejected


class PlanningModel:
    """The model ``node`` plans with: its ``feedforward_robot`` (loaded once per file name) or
    its driven model."""

    def __init__(self, node):
        self.node = node
        self._cache = ("", None)

    def __call__(self):
        """The current planning model (reads a changed ``feedforward_robot`` file, bounded in time)."""
        name = self.node.get_parameter("feedforward_robot").value
        if not name:
            return self.node.model
        if self._cache[0] != name:
            self._cache = (name, model_for(load_bounded(name)))
        return self._cache[1]


def limit_scale(node) -> float:
    """The node's ``motion_limit_scale``."""
    return float(node.get_parameter("motion_limit_scale").value)


def submit_knots(node, source: str, knots, rx=None):
    """Check and start ``knots`` (:class:`~delta_dynamics.motion.knots.Knots` from the current
    setpoint) on ``node``'s loop as ``source``; ``rx``: when the request was received (ns).
    The plan, or TrajectoryRejected with the reason (a stop since ``rx``, a limit, the robot
    moving or stopped)."""
    if not node.active():
        raise TrajectoryRejected("the hardware node is not active")
    why = (node.loop.void(rx) if rx else "") or node.loop.stopped_reason
    if why:                                        # a stop came while it was planned: it wins
        raise TrajectoryRejected(f"the robot stopped while the motion was planned ({why})")
    now = node.now()
    plan = knot_plan(node.model, now, node.loop.current_setpoint(), knots, limits=node.loop.limits(),
                     abort=lambda: node.loop.void(rx) if rx else "")
    plan.on_receipt = True                         # it starts when the loop takes it
    return node.requests.submit_plan(source, plan, len(knots.t), now, rx)
