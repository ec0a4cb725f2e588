"""A platform trajectory: the samples every trajectory generator returns, every CSV reader
gives and every model and plant is driven along (kind-neutral: both robot kinds move a
platform centre in ``base_link``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Trajectory:
    """Platform samples: times ``t`` (s) and the platform centre's position ``X`` (m), velocity
    ``Xd`` (m/s) and acceleration ``Xdd`` (m/s^2) in ``base_link``.

    >>> tr = Trajectory(np.array([0.0, 0.1]), np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)))
    >>> len(tr.then(tr.shifted([0, 0, 0.1]))), tr.shifted([0, 0, 0.1]).X[0].tolist()
    (4, [0.0, 0.0, 0.1])
    """

    t: np.ndarray       # (N,) s
    X: np.ndarray       # (N, 3) m
    Xd: np.ndarray      # (N, 3) m/s
    Xdd: np.ndarray     # (N, 3) m/s^2

    def __len__(self) -> int:
        return len(self.t)

    def shifted(self, offset) -> "Trajectory":
        """The same motion translated by ``offset`` (m)."""
        return Trajectory(self.t, self.X + np.asarray(offset, dtype=float), self.Xd, self.Xdd)

    def then(self, other: "Trajectory") -> "Trajectory":
        """This trajectory followed by ``other`` (its clock continues after this one's end)."""
        dt = other.t[1] - other.t[0] if len(other) > 1 else 0.0
        t2 = other.t - other.t[0] + self.t[-1] + dt
        return Trajectory(np.concatenate((self.t, t2)), np.concatenate((self.X, other.X)),
                          np.concatenate((self.Xd, other.Xd)), np.concatenate((self.Xdd, other.Xdd)))
