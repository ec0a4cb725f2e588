"""Motion planning: time-optimal timing of platform paths from the dynamic model (TOPP-RA).

* :mod:`~delta_dynamics.motion.path`: paths X(s) of the platform centre: the cubic spline
  through points over their chord length, the pick-and-place door with C2 corner blends;
* :mod:`~delta_dynamics.motion.constraints`: the joint limits along a path as linear
  constraints in (s_ddot, s_dot^2), friction bounded honestly;
* :mod:`~delta_dynamics.motion.timing`: the time-optimal rest-to-rest timing (``toppra``);
* :mod:`~delta_dynamics.motion.sampled`: timings sampled at 1 ms with the joint values,
  efforts and the report of which limit is active where;
* :mod:`~delta_dynamics.motion.pick`: pick-and-place cycles.

Works for either kind of Delta (:mod:`delta_dynamics.algorithms`); no ROS. The formulation
and the friction handling: ``docs/motion.md``.

>>> from delta_dynamics.kinds import model_for
>>> m = model_for("d3s800")
>>> mo = sample([retime(m, [[-0.1, 0, -0.8], [0, 0.05, -0.78], [0.1, 0, -0.8]])])
>>> bool(mo.report.max_ratio <= 1.01), mo.header()[-1]
(True, 'tau3')
"""
from delta_dynamics.motion.path import Path, PathError, door_path, spline_path
from delta_dynamics.motion.pick import PickPlan, plan_legs, plan_pick
from delta_dynamics.motion.timing import Limits, RetimeError, Timing, retime, retime_path
from delta_dynamics.motion.sampled import Dwell, LimitReport, Motion, sample

__all__ = ["Path", "PathError", "door_path", "spline_path", "PickPlan", "plan_legs", "plan_pick",
           "Limits", "RetimeError", "Timing", "retime", "retime_path", "Dwell", "LimitReport",
           "Motion", "sample"]
