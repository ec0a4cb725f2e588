"""Motion: platform trajectories and their time-optimal timing from the dynamic model.

* :mod:`~delta_dynamics.motion.trajectories`: the reference trajectories (Asadi & Heydari's
  circle, Colombo & Lentini's Lissajous path, the standard pick-and-place cycle, Staicu's
  ellipse) for the models, the plants and the robot;
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

The timing names are imported on first use (``from delta_dynamics.motion import retime``):
scipy's interpolation and ``toppra`` are not loaded by a user of the trajectories alone.

>>> from delta_dynamics.kinds import model_for
>>> from delta_dynamics.motion import retime, sample
>>> m = model_for("d3s800")
>>> mo = sample([retime(m, [[-0.1, 0, -0.8], [0, 0.05, -0.78], [0.1, 0, -0.8]])])
>>> bool(mo.report.max_ratio <= 1.01), mo.header()[-1]
(True, 'tau3')
"""
import importlib

#: Public name -> the submodule that defines it (imported on first use, PEP 562).
_EXPORTS = {
    "MAX_POINTS": "path", "Path": "path", "PathError": "path", "door_path": "path", "spline_path": "path",
    "PickPlan": "pick", "plan_legs": "pick", "plan_pick": "pick",
    "Limits": "timing", "RetimeError": "timing", "Timing": "timing", "retime": "timing",
    "retime_path": "timing",
    "Dwell": "sampled", "LimitReport": "sampled", "Motion": "sampled", "sample": "sampled",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    """The timing names, imported from their submodule on first use (heavy: scipy, toppra)."""
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    """The module's names and the lazily imported ones."""
    return sorted(set(globals()) | set(_EXPORTS))
