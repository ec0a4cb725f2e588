"""Linear-algebra helpers: a cache-friendly tall-skinny QR and single-threaded BLAS.

The identification problems are tall and narrow (3N x p, N up to 10^5, p <= 17). For those,
OpenBLAS's threads do not pay: on a 2-core machine with anything else running, its spinning
threads made one ``numpy.linalg.qr`` of a 180 000 x 15 matrix take 1.5 s instead of 0.13 s
single-threaded. So the heavy functions of this package run with numpy's OpenBLAS on one
thread (:func:`single_threaded_blas`, restored afterwards) and factor A block by block
(:func:`qr_r`: TSQR, 20 ms for that matrix).
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from contextlib import contextmanager

import numpy as np

_BLAS = None
_LOCK = threading.Lock()
_DEPTH = [0, None]          # nesting depth, thread count to restore


def _openblas():
    """(set, get) for numpy's bundled OpenBLAS thread count, or None if not found."""
    global _BLAS
    if _BLAS is not None:
        return _BLAS or None
    found = None
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libdir, "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", "")):
            try:
                s = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}")
                g = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}")
            except AttributeError:
                continue
            s.argtypes, s.restype, g.restype = [ctypes.c_int], None, ctypes.c_int
            found = (s, g)
            break
        if found:
            break
    _BLAS = found or False
    return found


@contextmanager
def single_threaded_blas():
    """Run the block with numpy's OpenBLAS on one thread (no-op if it cannot be found)."""
    blas = _openblas()
    if blas is None:
        yield
        return
    set_n, get_n = blas
    with _LOCK:
        if _DEPTH[0] == 0:
            _DEPTH[1] = get_n()
            set_n(1)
        _DEPTH[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                set_n(_DEPTH[1])


def blas1(fn):
    """Decorator: run ``fn`` inside :func:`single_threaded_blas`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with single_threaded_blas():
            return fn(*args, **kwargs)
    return wrapper


def qr_r(A, block: int = 8192) -> np.ndarray:
    """The triangular factor R of A = Q R (TSQR: QR of row blocks, then of the stacked Rs).

    R is unique up to the signs of its rows; shape (min(m, p), p).
    """
    A = np.asarray(A, dtype=float)
    m = len(A)
    if m <= 2 * block:
        return np.linalg.qr(A, mode="r")
    Rs = [np.linalg.qr(A[k:k + block], mode="r") for k in range(0, m, block)]
    return np.linalg.qr(np.vstack(Rs), mode="r")
