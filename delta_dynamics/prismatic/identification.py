"""The linear Delta's parameter set for the identification pipeline
(:mod:`delta_dynamics.identification`).

The pipeline (``build_problem``, ``identify``, the estimators, base parameters) only talks to
a :class:`~delta_dynamics.identification.regressors.ParameterSet`: its ``regressor``,
``nominal``, ``to_lumped``, ``kinds``/``units``/``nonnegative``. :class:`PrismaticParameterSet`
is that object for :class:`~.model.PrismaticDeltaModel`: the 14 lumped parameters of
:data:`~.model.PARAMETER_NAMES` (m_x, m_r, carriage_inertia_1..3, carriage_mass_1..3,
viscous_1..3, coulomb_1..3) with :func:`~.dynamics.regressor_joint`, plus three Stribeck
columns (static_1..3) with ``stribeck=True``. The carriage forces are linear in them
(F = Y(q, q_dot, q_ddot) pi); the rows of a rich motion give rank 14.

>>> from delta_dynamics.prismatic.model import PrismaticDeltaModel
>>> pset = parameter_set()
>>> pset.names[:3], pset.units[:2], pset.units[-1]
(('m_x', 'm_r', 'carriage_inertia_1'), ('kg', 'kg'), 'N')
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delta_dynamics.identification.regressors import STRIBECK_NAMES, ParameterSet

from .dynamics import regressor_joint
from .model import PARAMETER_KINDS, PARAMETER_NAMES, UNITS, PrismaticParameters

#: Kinds that are >= 0 for a physically consistent model (m_r, the rods' rotational
#: correction, is negative for real rods).
NONNEGATIVE_KINDS = ("mass", "viscous", "coulomb")


@dataclass(frozen=True)
class PrismaticParameterSet(ParameterSet):
    """:class:`~delta_dynamics.identification.regressors.ParameterSet` of the linear Delta."""

    @property
    def kinds(self) -> tuple:
        return tuple(PARAMETER_KINDS[n] for n in self.names)

    @property
    def units(self) -> tuple:
        return tuple(UNITS[k] for k in self.kinds)

    @property
    def nonnegative(self) -> np.ndarray:
        return np.array([k in NONNEGATIVE_KINDS for k in self.kinds])

    def regressor(self, model, q, qd, qdd) -> np.ndarray:
        """Y(q, q_dot, q_ddot) of the carriage forces, shape (N, 3, p) (or (3, p))."""
        return regressor_joint(model, q, qd, qdd, stribeck=self.stribeck)

    def nominal(self, model) -> np.ndarray:
        v = model.params.as_vector()
        if self.stribeck:
            v = np.concatenate((v, model.params.static))
        return v

    def to_lumped(self, model, values) -> PrismaticParameters:
        """The model's :class:`~.model.PrismaticParameters` for an estimate of this set
        (without Stribeck columns the break-away force equals the Coulomb force)."""
        v = np.asarray(values, dtype=float)
        p = model.params
        static = v[14:17] if self.stribeck else v[11:14]
        return PrismaticParameters.from_vector(v[:14], static=tuple(float(s) for s in static),
                                               stribeck_velocity=p.stribeck_velocity,
                                               smoothing_velocity=p.smoothing_velocity)


def parameter_set(stribeck: bool = False) -> PrismaticParameterSet:
    """The linear Delta's parameter set (key ``"prismatic"``), with Stribeck columns if asked."""
    return PrismaticParameterSet("prismatic", PARAMETER_NAMES + (STRIBECK_NAMES if stribeck else ()), stribeck)
