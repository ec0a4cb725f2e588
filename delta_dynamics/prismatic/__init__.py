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

:func:`delta_dynamics.kinds.model_for` builds this model for a ``type: prismatic`` robot file,
and the free functions of :mod:`delta_dynamics.algorithms` reach these modules through the
model's kind table, so the rest of the stack (control loop, drives, identification, URDF)
runs a linear Delta without knowing it (``docs/architecture.md``).

Conventions: ``docs/conventions.md`` ("Linear Delta").
"""
