"""The rotary Delta robot of Asadi & Heydari (2020): three arms on motor axes around the base,
a parallelogram forearm from each elbow to the translating platform.

The modules every kind has (``docs/architecture.md``, "One robot interface, two kinds"):

* :mod:`.model`: :class:`~.model.RotaryModel` (immutable geometry and lumped, identifiable
  dynamic parameters), built from a ``type: rotary`` robot file;
* :mod:`.kinematics`: closed-form inverse (eq. 4) and forward kinematics, the Jacobian
  (eq. 9) and its derivative (eq. 12), passive angles, singularities, workspace sampling;
* :mod:`.dynamics`: the explicit model, eqs. (9)-(43): inverse and forward dynamics, M, C, G,
  energy, the regressor;
* :mod:`.simulate`: the semi-implicit (and RK4) fixed step;
* :mod:`.identification`: the parameter sets (explicit; Kim et al.'s) and an identified
  vector back into a robot file;
* :mod:`.demo`: the paper's evaluation circle and the tracking demo.

Reached through :mod:`delta_dynamics.algorithms` (never imported by other code): this
package's :data:`KIND` is registered in :data:`delta_dynamics.kinds.KINDS`. Its robot file's
schema: :mod:`delta_core.robot_file.rotary`. Conventions: ``docs/conventions.md``.
"""
from delta_dynamics.kinds import Kind

#: The rotary kind: its package, model classes and joint units.
KIND = Kind("rotary", __name__, "RotaryModel", "RotaryParameters", {
    "position": "rad", "velocity": "rad/s", "acceleration": "rad/s^2", "effort": "N m",
    "effort_column": "tau", "effort_name": "torque", "joint": "joint", "gain_p": "N m/rad",
    "gain_d": "N m s/rad"})
