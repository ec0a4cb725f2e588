"""The mechanism of each robot kind in MuJoCo: what the MJCF of a rotary and of a linear Delta
differ in, one module per kind, registered in :data:`MECHANISMS` by the robot file's ``type``.

A mechanism (:class:`Mechanism`) writes the three chains from the base to their far ends (the
actuated joint ``joint_names[i]``, then a universal joint of two hinges carrying the
parallelogram's centre bar, ending at the site ``chain_end(k)``), gives the two hinge angles of
each chain for a pose, and two numbers the plant needs. Everything the kinds share (the
platform on three slides, the loop-closing ``connect`` constraints, the solver options, the
``home`` keyframe) is written by :func:`delta_dynamics.reference.mujoco_model.mjcf.mjcf_xml`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from delta_core.plugins import Registry


@dataclass(frozen=True)
class Mechanism:
    """The kind-specific part of a MuJoCo Delta (see the package docstring).

    * ``add_chains(world, robot, settings, joint_friction)``: writes the chains under the
      ``<worldbody>`` element ``world``;
    * ``add_platform(platform, robot)``: the platform body's inertial, visuals and the sites
      ``platform_joint_k`` (k = 1..3) where the chains close;
    * ``passive_angles(robot, kin, q, X)``: (3, 2) array, each chain's (bend, tilt) hinge
      angles with the actuated joints at ``q`` and the platform at ``X`` (rad);
    * ``bend_joint`` / ``tilt_joint`` / ``chain_end``: the names of chain k's two hinges and of
      the site at its bar's far end, as patterns of ``k`` (1..3): :meth:`name`;
    * ``driven_inertia(robot)``: a lower bound of the inertia at an actuated joint (kg m^2 or
      kg), for the plant's choice of its friction integration;
    * ``chain_length(robot)``: the length of the closing bar (m), the scale of a torn chain.
    """

    add_chains: Callable
    add_platform: Callable
    passive_angles: Callable
    bend_joint: str
    tilt_joint: str
    chain_end: str
    driven_inertia: Callable
    chain_length: Callable

    @staticmethod
    def name(pattern: str, k: int) -> str:
        """The name ``pattern`` gives chain ``k`` (1..3).

        >>> Mechanism.name("rod_{k}_end", 2)
        'rod_2_end'
        """
        return pattern.format(k=k)


#: The MuJoCo mechanism of each robot kind (``type`` of the robot file), one line each.
MECHANISMS = Registry("MuJoCo mechanism")
MECHANISMS.register("rotary", "delta_dynamics.reference.mujoco_model.kinds.rotary:MECHANISM")
MECHANISMS.register("linear", "delta_dynamics.reference.mujoco_model.kinds.linear:MECHANISM")


def mechanism(robot) -> Mechanism:
    """The :class:`Mechanism` of a loaded robot file's kind."""
    return MECHANISMS.get(robot.type)
