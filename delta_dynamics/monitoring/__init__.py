"""Monitoring from the model: what the joint efforts say that the motion does not.

One concern per module, pure maths (no rclpy), for either kind of Delta through
:mod:`delta_dynamics.algorithms`:

* :mod:`~delta_dynamics.monitoring.observer`: the generalised-momentum observer (residual r
  per joint, N m or N) and the external platform force that explains it (F = J^T r);
* :mod:`~delta_dynamics.monitoring.collision`: per-joint thresholds on r, set from a residual
  envelope with a margin, and the detection of a collision;
* :mod:`~delta_dynamics.monitoring.payload`: the payload mass from the residual (recursive
  least squares with forgetting, with its standard deviation) and the picked / lost events.

``docs/monitoring.md`` derives the observer for our models and gives the defaults.
"""
