"""Shape queries that work on plain values and on traced values alike.

``np.shape(x)`` on a traced value goes through ``__array_function__``; these
read the attribute when there is one, so they never record anything.
"""

import numpy as np

__all__ = ["shape_of", "ndim_of", "real_dtype", "uniform_array", "uniform_value"]


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


_ndarray = np.ndarray


def uniform_array(value, shape):
    """A read-only array of ``shape`` whose every element is the scalar
    ``value``: zero strides, no memory (what ``np.broadcast_to(value, shape)``
    returns, ten times cheaper)."""
    base = np.asarray(value)
    a = _ndarray(shape, base.dtype, base, 0, (0,) * len(shape))
    a.flags.writeable = False
    return a


def uniform_value(a):
    """The one value of a non-empty ndarray with all strides zero (the
    cotangent of a sum, a scaled copy of it), else ``None``. Elementwise
    rules scale such a cotangent as a scalar instead of a pass over memory."""
    if type(a) is _ndarray and a.ndim and not any(a.strides) and a.size:
        return a.flat[0]
    return None
