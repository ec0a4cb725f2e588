"""Elshami et al.'s multibody model of the rotary Delta robot: every body with its position
and Euler parameters, revolute and universal joints, the augmented system of eq. (6),
projection onto the constraint manifold, joint reaction forces from the Lagrange multipliers
(``docs/multibody.md``)."""
