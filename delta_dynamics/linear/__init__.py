"""The linear Delta robot of Colombo & Lentini (2020): three carriages on vertical rails, a
parallelogram pair of rods from each carriage to the translating platform.

The modules every kind has, with the same function names, signatures and array conventions
as the rotary robot's (``docs/architecture.md``, "One robot interface, two kinds"):

* :mod:`.model`: :class:`~.model.LinearModel` (immutable geometry and lumped, identifiable
  dynamic parameters), built from a ``type: linear`` robot file;
* :mod:`.kinematics`: inverse (eq. 6) and forward (three spheres) kinematics, the Jacobian
  J with q_dot = J X_dot (eq. 7), its derivative (eq. 8, sign corrected), singularities,
  workspace sampling;
* :mod:`.dynamics`: the Lagrangian model with multipliers (eqs. 9-14), carriage forces,
  the multipliers lambda, forward dynamics, energy, the regressor;
* :mod:`.simulate`: the semi-implicit (and RK4) fixed step;
* :mod:`.identification`: the parameter set for :mod:`delta_dynamics.identification`;
* :mod:`.demo`: the paper's Figs. 4 and 5.

Reached through :mod:`delta_dynamics.algorithms` (never imported by other code): this
package's :data:`KIND` is registered in :data:`delta_dynamics.kinds.KINDS`, so the rest of the
stack (control loop, drives, identification, URDF) runs a linear Delta without knowing it.
Its robot file's schema: :mod:`delta_core.robot_file.linear`. Conventions:
``docs/conventions.md`` ("Linear Delta").
"""
from delta_dynamics.kinds import Kind

#: The linear kind: its package, model classes and joint units.
KIND = Kind("linear", __name__, "LinearModel", "LinearParameters", {
    "position": "m", "velocity": "m/s", "acceleration": "m/s^2", "effort": "N",
    "effort_column": "f", "effort_name": "force", "joint": "carriage", "gain_p": "N/m",
    "gain_d": "N s/m"})
