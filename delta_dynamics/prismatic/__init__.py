"""The linear (prismatic) Delta robot of Colombo & Lentini (2020): three carriages on vertical
rails, a parallelogram pair of rods from each carriage to the translating platform.

The modules mirror the rotary robot's, with the same function names, signatures and array
conventions, so code written against one works on the other by swapping the module:

* :mod:`.model`: :class:`~.model.PrismaticDeltaModel` (immutable geometry and lumped,
  identifiable dynamic parameters), built from a ``type: prismatic`` robot file;
* :mod:`.kinematics`: inverse (eq. 6) and forward (three spheres) kinematics, the Jacobian
  J with q_dot = J X_dot (eq. 7), its derivative (eq. 8, sign corrected), singularities,
  workspace sampling;
* :mod:`.dynamics`: the Lagrangian model with multipliers (eqs. 9-14), carriage forces,
  the multipliers lambda, forward dynamics, energy, the regressor;
* :mod:`.simulate`: fixed-step and adaptive integration;
* :mod:`.identification`: the parameter set for :mod:`delta_dynamics.identification`;
* :mod:`.demo`: the paper's Figs. 4 and 5.

:mod:`delta_dynamics.kinds` picks the model class and these modules (or the rotary ones)
for any robot file.

Conventions: ``docs/conventions.md`` ("Linear Delta").
"""
