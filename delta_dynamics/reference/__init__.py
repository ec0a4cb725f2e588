"""Reference models of the rotary Delta: models of another structure than the kind's own
explicit model, each usable by a plant (:data:`delta_dynamics.plant.PLANTS`) or by
``compare`` (:data:`delta_dynamics.compare.MODELS`), registered there with one line each
(``docs/architecture.md``, "Adding a reference model or a plant"):

* :mod:`.staicu`: Staicu & Carp-Ciocardia's recursive virtual-power model, every body with its
  own tensor (``compare``);
* :mod:`.kim`: Kim et al.'s joint-space model and its 11 identifiable parameters (the rotary
  kind's ``kim`` parameter set);
* :mod:`.multibody`: Elshami et al.'s multibody model (``compare``, a plant, joint reactions);
* :mod:`.mujoco_model`: MuJoCo's closed chain (``compare``, a plant; optional ``mujoco``);
* :mod:`.bodies`: the rigid bodies they share, from the robot file.

They model rotary Delta robots and refuse another kind's robot file by name
(:func:`.bodies.require_rotary`).
"""
