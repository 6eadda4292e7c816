"""Differentiable versions of SciPy's Rosenbrock test functions
(``scipy.optimize.rosen``, ``rosen_der``, ``rosen_hess``,
``rosen_hess_prod``), with SciPy's signatures and values.

SciPy's versions call ``np.asarray``, so a traced value cannot pass through
them; these are written with NumPy operations only, so every level of
derivative works (``cr.grad(rosen)`` is ``rosen_der``, ``cr.hvp(rosen, x,
p)`` is ``rosen_hess_prod(x, p)``). As in SciPy, axis 0 holds the
variables: an ``(N, ...)`` array is ``...``-many ``N``-dimensional points.
They need no SciPy. ``minimize(rosen, x0, jac=rosen_der,
hessp=rosen_hess_prod)`` works as with SciPy's.
"""

import numpy as np

__all__ = ["rosen", "rosen_der", "rosen_hess", "rosen_hess_prod"]


def _points(x):
    x = x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x, dtype=float)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    if x.ndim == 0 or x.shape[0] < 2:
        raise ValueError("the Rosenbrock function needs at least 2 variables (axis 0)")
    return x


def rosen(x):
    """sum over i of ``100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2`` (axis 0)."""
    x = _points(x)
    a, b = x[:-1], x[1:]
    r = b - a * a
    return np.sum(100.0 * (r * r) + (1.0 - a) ** 2, axis=0)


def rosen_der(x):
    """The gradient of ``rosen``."""
    x = _points(x)
    a, b = x[:-1], x[1:]
    r = b - a * a
    # d/da of each term, at the first variable of the pair; d/db at the second
    head = -400.0 * a * r - 2.0 * (1.0 - a)
    tail = 200.0 * r
    zero = np.zeros_like(x[:1])
    return np.concatenate([head, zero], axis=0) + np.concatenate([zero, tail], axis=0)


def rosen_hess_prod(x, p):
    """The Hessian of ``rosen`` at ``x`` times the vector ``p``."""
    x = _points(x)
    if np.shape(p) != x.shape:
        raise ValueError(f"p has shape {np.shape(p)}, x has shape {x.shape}")
    a, b = x[:-1], x[1:]
    pa, pb = p[:-1], p[1:]
    # each term's Hessian in (a, b): [[1200 a^2 - 400 b + 2, -400 a], [-400 a, 200]]
    head = (1200.0 * a * a - 400.0 * b + 2.0) * pa - 400.0 * a * pb
    tail = 200.0 * pb - 400.0 * a * pa
    zero = np.zeros_like(x[:1] * p[:1])
    return np.concatenate([head, zero], axis=0) + np.concatenate([zero, tail], axis=0)


def rosen_hess(x):
    """The Hessian of ``rosen`` at a 1-D ``x`` (an ``N x N`` array)."""
    x = _points(x)
    if x.ndim != 1:
        raise ValueError("rosen_hess takes a 1-D x (use rosen_hess_prod for batches)")
    a, b = x[:-1], x[1:]
    zero = np.zeros_like(x[:1])
    diag = (np.concatenate([1200.0 * a * a - 400.0 * b + 2.0, zero])
            + np.concatenate([zero, 200.0 + 0.0 * b]))
    off = -400.0 * a
    return np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
