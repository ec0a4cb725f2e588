"""Plans from joint knots with one-sided accelerations (time-optimal motions), without ROS.

:func:`knot_plan` turns :class:`~delta_dynamics.motion.knots.Knots` (a time-optimal timing's
gridpoints, with the joint acceleration on each side of every knot) into a
:class:`~delta_hardware.joint_plan.JointPlan` of quintic segments and validates it with
:func:`~delta_hardware.trajectory_plan.validate_plan`, the check every trajectory passes (joint
position, velocity, acceleration and effort limits along the interpolated path). The motion
must start at rest at the loop's current setpoint: its first knot is that setpoint.
"""
from __future__ import annotations

import numpy as np

from delta_dynamics.algorithms import joint_units
from delta_hardware.joint_plan import JointPlan, Setpoint, TrajectoryRejected
from delta_hardware.trajectory_plan import validate_plan

#: rad (m): how far the motion's first knot may be from the current setpoint, and the speed
#: (rad/s, m/s) below which the setpoint is at rest
START_TOLERANCE = 1e-6


def knot_plan(model, now: float, current: Setpoint, knots, limits=None, abort=None) -> JointPlan:
    """A validated plan starting at ``now`` (s) that follows ``knots`` (``t``, ``q``, ``qd``
    and ``coefficients()``, as :class:`~delta_dynamics.motion.knots.Knots`) from the current
    setpoint ``current``; ``limits`` and ``abort`` as for
    :func:`~delta_hardware.trajectory_plan.validate_plan`. TrajectoryRejected (why) if the
    setpoint is moving or elsewhere, or the plan leaves a limit."""
    u = joint_units(model)
    if np.abs(current.qd).max() > START_TOLERANCE:
        raise TrajectoryRejected("the robot is moving (its setpoint velocity is "
                                 f"{np.round(current.qd, 4).tolist()} {u['velocity']}): wait for the running "
                                 "motion's end")
    gap = float(np.abs(np.asarray(knots.q[0]) - current.q).max())
    if gap > START_TOLERANCE:
        raise TrajectoryRejected(f"the motion starts {gap:.3g} {u['position']} from the robot's setpoint (the "
                                 f"robot moved while it was planned)")
    coeffs = knots.coefficients()
    coeffs[0, 0] = current.q                      # exactly the setpoint: no jump
    plan = JointPlan(now, knots.t, coeffs)
    validate_plan(model, plan, limits=limits, abort=abort)
    return plan
