"""Particle swarm identification of Kim et al. (2022), Section 3, eqs. (31)-(35).

Each particle i holds a parameter vector M_PAR_i (eq. 30, or any linear parameter set) and a
velocity M^_PAR_i (initially 0). With pbest_i the best position particle i has visited and
sbest_i the best pbest among its N_s + 1 *cyclic neighbours* i - N_s/2 .. i + N_s/2 (indices
mod N_p: the "distributed cyclic neighbourhood", eqs. 31-32 and 35), every iteration does

    M^_PAR_i <- c0 M^_PAR_i + c1 r1_i (pbest_i - M_PAR_i) + c2 r2_i (sbest_i - M_PAR_i)   (34)
    M_PAR_i  <- M_PAR_i + M^_PAR_i

with r1_i, r2_i ~ U[0, 1] drawn per particle and iteration, and keeps the best position ever
seen (eq. 33a, Step 1). The objective is eq. (33), the sum of absolute torque errors over all
samples and joints,

    F(M_PAR) = sum_k sum_zeta |tau_actual,zeta(k) - tau^_zeta(M_PAR; k)|.

The model is linear in the parameters, tau^ = Y M_PAR, so one matrix product scores the whole
swarm: F = sum_rows |[A, -b] [P, 1]^T| (A: the stacked regressor, P: N_p x p positions).
That product runs in float32 on row blocks that stay in cache, split over worker threads
with BLAS kept single-threaded (BLAS's own threads spin and lose badly on a busy 2-core
machine); the best particle's objective is re-evaluated in float64 at the end.

Defaults are the paper's: c0 = 0.72984, c1 = c2 = 1.49618, N_p = 300, N_s = 60, 1000
iterations. Positions start uniform in the search box [lower, upper] (seeded,
``np.random.default_rng(seed)``) and, with ``clamp`` (default), are kept inside it (the
velocity component that would leave the box is zeroed).
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import IdentificationError
from ._linalg import single_threaded_blas

C0, C1, C2 = 0.72984, 1.49618, 1.49618
N_PARTICLES, N_NEIGHBOURS, ITERATIONS = 300, 60, 1000


@dataclass
class PSOResult:
    """What :func:`pso` found: the best position, its cost F, the best cost per iteration, the
    iterations and seconds it took, the rows used of all."""
    values: np.ndarray          # best position M_PAR*
    score: float                # F(M_PAR*) over all rows (float64)
    history: np.ndarray         # best F per iteration (on the rows used; float32 sums)
    iterations: int
    seconds: float
    rows_used: int
    rows_total: int


# ----------------------------------------------------------------------------- objective

class SwarmObjective:
    """F of eq. (33) for a whole swarm: sum over rows of |[A, -b] [P, 1]^T|."""

    def __init__(self, A, b, dtype=np.float32, block: int = 2048, threads: int | None = None):
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float).reshape(-1)
        self.aug = np.ascontiguousarray(np.column_stack((A, -b)), dtype=dtype)
        self.dtype = dtype
        self.block = int(block)
        m = len(b)
        n = threads if threads is not None else min(2, os.cpu_count() or 1)
        n = max(1, min(int(n), m // self.block + 1))
        cuts = np.linspace(0, m, n + 1).astype(int)
        self.parts = [(int(cuts[i]), int(cuts[i + 1])) for i in range(n)]
        self.pool = ThreadPoolExecutor(n) if n > 1 else None

    def _part(self, lo, hi, PT):
        s = np.zeros(PT.shape[1])
        buf = np.empty((self.block, PT.shape[1]), self.dtype)
        for k in range(lo, hi, self.block):
            a = self.aug[k:min(k + self.block, hi)]
            r = np.matmul(a, PT, out=buf[:len(a)])
            np.abs(r, out=r)
            s += r.sum(axis=0)
        return s

    def __call__(self, P) -> np.ndarray:
        P = np.asarray(P)
        PT = np.empty((P.shape[1] + 1, P.shape[0]), self.dtype)
        PT[:-1] = P.T
        PT[-1] = 1.0
        if self.pool is None:
            return self._part(*self.parts[0], PT)
        futs = [self.pool.submit(self._part, lo, hi, PT) for lo, hi in self.parts]
        return sum(f.result() for f in futs)

    def close(self):
        """Release the objective's workers."""
        if self.pool is not None:
            self.pool.shutdown()


def l1_objective(A, b, x) -> float:
    """F(x) of eq. (33) in float64: sum |b - A x|."""
    return float(np.abs(np.asarray(b, float).reshape(-1) - np.asarray(A, float) @ np.asarray(x, float)).sum())


def subsample_rows(A, b, max_samples: int | None, n_joints: int = 3):
    """Every s-th sample (all joints of it) so that at most ``max_samples`` samples remain."""
    n = len(b) // n_joints
    if max_samples is None or n <= max_samples:
        return A, b
    s = int(np.ceil(n / max_samples))
    A3 = np.asarray(A).reshape(n, n_joints, -1)[::s]
    return A3.reshape(-1, A3.shape[-1]), np.asarray(b).reshape(n, n_joints)[::s].reshape(-1)


# ----------------------------------------------------------------------------- the swarm

def pso(A, b, lower, upper, *, n_particles: int = N_PARTICLES, n_neighbours: int = N_NEIGHBOURS,
        iterations: int = ITERATIONS, c0: float = C0, c1: float = C1, c2: float = C2,
        seed: int | None = 0, max_samples: int | None = None, n_joints: int = 3,
        clamp: bool = True, init=None, dtype=np.float32, threads: int | None = None,
        progress=None) -> PSOResult:
    """Minimise eq. (33) over the box [lower, upper] with Kim et al.'s PSO (module docstring).

    ``max_samples``: use every s-th sample so that at most this many remain (None: all);
    ``init``: positions to seed some particles with (e.g. a least-squares answer), the rest
    are uniform in the box; ``progress(iteration, iterations, best_score)`` is called after
    every iteration.
    """
    t0 = time.perf_counter()
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    p = np.asarray(A).shape[1]
    if lower.shape != (p,) or upper.shape != (p,):
        raise IdentificationError(f"the PSO search box needs {p} lower and upper bounds")
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)) and np.all(upper > lower)):
        raise IdentificationError("the PSO search box must be finite with upper > lower")
    if n_neighbours % 2 or not 0 < n_neighbours < n_particles:
        raise IdentificationError(f"the number of neighbours N_s must be even and 0 < N_s < N_p = "
                                  f"{n_particles}, got {n_neighbours}")
    if iterations < 1:
        raise IdentificationError(f"PSO needs at least 1 iteration, got {iterations}")
    As, bs = subsample_rows(A, b, max_samples, n_joints)
    rng = np.random.default_rng(seed)
    x = rng.uniform(lower, upper, size=(n_particles, p))
    if init is not None:
        init = np.atleast_2d(np.asarray(init, dtype=float))[:n_particles]
        x[:len(init)] = np.clip(init, lower, upper) if clamp else init
    v = np.zeros_like(x)
    half = n_neighbours // 2
    neigh = (np.arange(n_particles)[:, None] + np.arange(-half, half + 1)[None, :]) % n_particles
    history = np.empty(iterations)
    with single_threaded_blas():
        f = SwarmObjective(As, bs, dtype=dtype, threads=threads)
        try:
            score = f(x)
            pbest, pscore = x.copy(), score.copy()
            for it in range(iterations):
                s_idx = neigh[np.arange(n_particles), np.argmin(pscore[neigh], axis=1)]
                sbest = pbest[s_idx]                                           # eq. (35)
                r1 = rng.random((n_particles, 1))
                r2 = rng.random((n_particles, 1))
                v = c0 * v + c1 * r1 * (pbest - x) + c2 * r2 * (sbest - x)     # eq. (34)
                x = x + v
                if clamp:
                    out = (x < lower) | (x > upper)
                    np.clip(x, lower, upper, out=x)
                    v[out] = 0.0
                score = f(x)
                better = score < pscore
                pbest[better] = x[better]
                pscore[better] = score[better]
                history[it] = pscore.min()
                if progress is not None:
                    progress(it + 1, iterations, float(history[it]))
        finally:
            f.close()
    best = pbest[int(np.argmin(pscore))].copy()
    return PSOResult(values=best, score=l1_objective(A, b, best), history=history,
                     iterations=iterations, seconds=time.perf_counter() - t0,
                     rows_used=len(bs), rows_total=len(np.asarray(b).reshape(-1)))
