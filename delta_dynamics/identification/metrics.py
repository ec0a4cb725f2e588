"""Fit quality: model fitness (Kim et al. eq. 41), torque errors, parameter uncertainty.

Model fitness of joint i (Kim et al. 2022, eq. 41; a normalised RMS error, 1 is perfect)::

    fitness_i = 1 - sqrt( sum_k (tau*_i(k) - tau_actual,i(k))^2 / N_k ) / (tau*_i,max - tau*_i,min)

where tau* is the torque the identified model computes and the range is that of tau*
(as in the paper). The paper's Table 2 reports 0.80-0.92 on real data.
"""
from __future__ import annotations

import numpy as np

from ._linalg import qr_r, single_threaded_blas


def fitness(predicted, measured) -> np.ndarray:
    """Eq. (41) per joint, shape (3,) (NaN for a joint whose predicted torque is constant)."""
    p = np.asarray(predicted, dtype=float).reshape(-1, 3)
    m = np.asarray(measured, dtype=float).reshape(-1, 3)
    rms = np.sqrt(np.mean((p - m) ** 2, axis=0))
    rng = p.max(axis=0) - p.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rng > 0, 1.0 - rms / rng, np.nan)


def rms_error(predicted, measured) -> np.ndarray:
    """RMS of ``tau_pred - tau`` per joint (N m or N), shape (3,)."""
    d = np.asarray(predicted, float).reshape(-1, 3) - np.asarray(measured, float).reshape(-1, 3)
    return np.sqrt(np.mean(d * d, axis=0))


def max_error(predicted, measured) -> np.ndarray:
    """Largest ``|tau_pred - tau|`` per joint (N m or N), shape (3,)."""
    d = np.asarray(predicted, float).reshape(-1, 3) - np.asarray(measured, float).reshape(-1, 3)
    return np.abs(d).max(axis=0)


def torque_metrics(predicted, measured) -> dict:
    """fitness (eq. 41), RMS and max error (N m) and RMS of the measured torque, per joint."""
    m = np.asarray(measured, float).reshape(-1, 3)
    return {"fitness": fitness(predicted, measured), "rms_error": rms_error(predicted, measured),
            "max_error": max_error(predicted, measured), "rms_torque": np.sqrt(np.mean(m * m, axis=0)),
            "samples": int(len(m))}


def relative_std(values, std) -> np.ndarray:
    """sigma_i / |pi_i| (inf where the value is 0): the usual identifiability indicator."""
    v = np.abs(np.asarray(values, float))
    s = np.asarray(std, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, s / v, np.inf)


def condition_number(A, normalise: bool = True) -> float:
    """cond(A) of a stacked regressor; with ``normalise`` of its unit-norm columns (unit free)."""
    A = np.asarray(A, dtype=float)
    if normalise:
        n = np.linalg.norm(A, axis=0)
        A = A / np.where(n > 0, n, 1.0)
    with single_threaded_blas():
        R = qr_r(A)
    s = np.linalg.svd(R, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
