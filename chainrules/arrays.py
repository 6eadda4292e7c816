"""Shape queries that work on plain values and on traced values alike.

``np.shape(x)`` on a traced value goes through ``__array_function__``; these
read the attribute when there is one, so they never record anything.
"""

import numpy as np

__all__ = ["shape_of", "ndim_of", "real_dtype"]


def shape_of(v):
    try:
        return v.shape
    except AttributeError:
        return np.shape(v)


def ndim_of(v):
    try:
        return v.ndim
    except AttributeError:
        return np.ndim(v)


def real_dtype(dtype):
    """The real dtype of the same precision (complex128 -> float64); float64
    for non-inexact dtypes."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).dtype if dtype.kind in "fc" else np.dtype(float)
