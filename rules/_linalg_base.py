"""The smallest helpers of the linear-algebra rules, shared by the generic
rule (``_linalg_util``) and its batches of directions (``_linalg_batch``):
zeros, dtype tests and projections of cotangents. They import nothing of
the family, so both modules build on them without importing each other in
a circle."""

import numpy as np

from chainrules.tangents import is_zero

__all__ = ["all_zero", "zeros_of", "is_inexact", "project_cotangent", "cotangent_pairs"]


def all_zero(g):
    """Whether a cotangent (one, or a tuple of several outputs') is all zero."""
    if isinstance(g, tuple):
        return all(is_zero(t) for t in g)
    return is_zero(g)


def zeros_of(x):
    """Zeros of ``x``'s shape and dtype (a plain ndarray)."""
    return np.zeros(x.shape, x.dtype)


def is_inexact(x):
    """Whether ``x`` is an array of a float or complex dtype (differentiable)."""
    return hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.kind in "fc"


def project_cotangent(c, x):
    """The cotangent in its primal's dtype: the real part for a real primal
    (the pairing is Re(sum(c * t))), the primal's precision."""
    if c.dtype == x.dtype:
        return c
    if c.dtype.kind == "c" and x.dtype.kind != "c":
        c = np.real(c)
    return c if c.dtype == x.dtype else c.astype(x.dtype)


def cotangent_pairs(g, t):
    """``(cotangent, tangent)`` pairs of the outputs (one pair for one output)."""
    if isinstance(g, tuple):
        return zip(g, t)
    return ((g, t),)
