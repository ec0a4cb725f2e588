"""Dynamic parameter identification for Delta robots of either kind (pure numpy/scipy, no rclpy).

The inverse dynamics is linear in the lumped parameters, tau = Y(q, q_dot, q_ddot) pi
(Kim et al. 2022 eq. 26 with eq. 30; the explicit model of :mod:`delta_dynamics.rotary.dynamics`;
for a linear Delta the carriage forces of :mod:`delta_dynamics.linear.dynamics`, eq. 14),
so identification is a regression on the stacked system A pi = b, A = [Y(k)]_k, b = [tau(k)]_k.
The parameter set, the regressor and the robot file update are the model's kind's
(:func:`delta_dynamics.algorithms.parameter_set`); everything else is shared:

* :mod:`.preprocess`: time-base checks, resampling, segmentation, differentiation and
  zero-phase filtering of joint data (read from CSV files and rosbag2 bags by
  :mod:`delta_dynamics.data_files`);
* :mod:`.regressors`: the two parameter sets (the explicit model's 14 lumped parameters and
  Kim et al.'s 11-parameter vector, eq. 30) and the numerical base-parameter analysis;
* :mod:`.estimators`: OLS, WLS, bounded LS, truncated SVD, damped LS, recursive LS;
* :mod:`.pso`: the particle swarm of Kim et al. (distributed cyclic neighbourhood, eqs. 31-35);
* :mod:`.excitation`: optimised finite-Fourier-series excitation trajectories;
* :mod:`.metrics`: model fitness (eq. 41), RMS / max error, standard deviations, condition;
* :mod:`.robot_update`: an estimate back into a robot file (and a model from such a file);
* :mod:`.report`: PNG plots and a markdown summary; :mod:`.cli`: ``delta-identify``.

Every bad input raises :class:`IdentificationError` with a message that names the file,
topic, joint or sample; a data file that cannot be read raises
:class:`~delta_dynamics.data_files.csv_io.DataFileError` (a ``CsvError`` naming the file, line
and column, or a ``BagError`` naming the bag, topic and message), a ``ValueError`` too, which
``delta-identify`` reports the same way (one line, exit status 2).
"""


class IdentificationError(ValueError):
    """Bad identification input (file, topic, joint names, samples, excitation)."""


__all__ = ["IdentificationError"]
