"""Shape queries that work on plain values and on traced values alike.

``np.shape(x)`` on a traced value goes through ``__array_function__``; these
read the attribute when there is one, so they never record anything.
"""

import numpy as np

from .staging import Staged, constant_value, staged_constant

__all__ = ["computes_eagerly", "shape_of", "ndim_of", "real_dtype", "uniform_array", "uniform_value", "lazy_uniform",
           "is_array", "zeros_like_value", "ones_like_value"]


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


def uniform_array(value, shape, like=None):
    """A read-only array of ``shape`` whose every element is the scalar
    ``value``: zero strides, no memory (what ``np.broadcast_to(value, shape)``
    returns, ten times cheaper).

    ``like``: an array of another type (dask) with that shape, whose type
    and chunks the result takes; see ``lazy_uniform``."""
    if like is not None and type(like) is not _ndarray:
        if computes_eagerly(like):
            # a staged array (cr.jit): the zero-stride array, as for
            # ndarrays, staged (a plain value as a staged constant, so that
            # what is computed from it is recorded, never folded with
            # arrays the plan reads by reference)
            const = constant_value(value)
            if const is not None:
                value = const
            if type(value) in (int, float, complex) or isinstance(value, (_ndarray,
                                                                         np.generic)):
                return staged_constant(like, uniform_array(value, shape))
            return np.broadcast_to(value, shape)
        return lazy_uniform(value, like)
    base = value if type(value) is _ndarray else np.asarray(value)
    dtype = base.dtype
    if not dtype.hasobject:
        # over the value's bytes (a read-only buffer): read-only as made,
        # cheaper than setting the flag afterwards
        return _ndarray(shape, dtype, base.tobytes(), 0, (0,) * len(shape))
    a = _ndarray(shape, dtype, base, 0, (0,) * len(shape))
    a.flags.writeable = False
    return a


_UNIFORM = "_chainrules_uniform"


def lazy_uniform(value, like):
    """``value`` (a scalar or a 0-d array of ``like``'s type) broadcast to
    ``like``'s shape, type and chunks.

    The array is built as ``zeros_like(like) + value``, which a lazy backend
    materialises chunk by chunk only if a consumer reads it. It also carries
    ``value``, keyed by the array's graph name (``name``, as dask arrays
    have), so elementwise rules that accept a uniform cotangent scale by the
    scalar instead: no full-size chunk is ever made. An in-place write to
    the array changes its name, and the stale key is then ignored."""
    a = np.zeros_like(like, dtype=np.result_type(value)) + value
    key = getattr(a, "name", None)
    if isinstance(key, str):
        try:
            setattr(a, _UNIFORM, (key, value))
        except AttributeError:  # a type without instance attributes
            pass
    return a


def uniform_value(a):
    """The one value of a non-empty ndarray with all strides zero (the
    cotangent of a sum, a scaled copy of it), else ``None``. Elementwise
    rules scale such a cotangent as a scalar instead of a pass over memory.
    For other array types: the value ``lazy_uniform`` recorded, while the
    array is unchanged."""
    ta = type(a)
    if ta is _ndarray:
        if a.ndim and not any(a.strides) and a.size:
            return a.flat[0]
        return None
    if ta is Staged:  # (a staged value's uniform value is a constant of the plan)
        return None
    t = getattr(a, _UNIFORM, None)
    if t is not None and t[0] == getattr(a, "name", None):
        return t[1]
    return None


def computes_eagerly(v):
    """True for an ndarray and for array types that compute each NumPy call
    at once on values at hand (a staged value of ``cr.jit``, which records
    the call as well): a rule may use the in-place and value-dependent
    forms NumPy has (``np.add.at``) on them, as on ndarrays, where a lazy
    type (dask) has none."""
    tv = type(v)
    return tv is _ndarray or tv is Staged or getattr(tv, "_computes_eagerly", False)


#: types that implement NumPy's protocols without being arrays of data: the
#: traced value (``chainrules.tracing`` adds it)
NOT_ARRAYS = set()


def is_array(v):
    """True for an ndarray and for other array types that implement NumPy's
    protocols (dask.array, CuPy-like arrays): anything with a shape, a dtype
    and ``__array_function__`` that is not a NumPy scalar."""
    tv = type(v)
    if tv is _ndarray or tv is Staged:
        return True
    if tv in NOT_ARRAYS or isinstance(v, np.generic):
        return False
    return (hasattr(tv, "__array_function__") and hasattr(v, "dtype")
            and hasattr(v, "shape"))


def _shape_dtype(v, dtype):
    # an ndarray's or NumPy scalar's own attributes: np.shape and
    # np.result_type take microseconds, a cost every grad call would pay
    if type(v) is _ndarray or isinstance(v, np.generic):
        return v.shape, v.dtype if dtype is None else dtype
    return np.shape(v), np.result_type(v) if dtype is None else dtype


def zeros_like_value(v, dtype=None):
    """Zeros of ``v``'s shape and dtype (or ``dtype``), of ``v``'s array type:
    NumPy's fast path for ndarrays and scalars, ``np.zeros_like`` (which
    dispatches to dask and other array types) for the rest."""
    if type(v) is _ndarray or not is_array(v):
        return np.zeros(*_shape_dtype(v, dtype))
    return np.zeros_like(v, dtype=dtype)


def ones_like_value(v, dtype=None):
    """Ones of ``v``'s shape and dtype (or ``dtype``) and array type (the
    seed of a gradient: a 0-d one for a scalar output, made directly)."""
    if type(v) is _ndarray or not is_array(v):
        shape, dt = _shape_dtype(v, dtype)
        return np.array(1, dt) if shape == () else np.ones(shape, dt)
    if computes_eagerly(v) and v.ndim == 0:
        # a staged scalar's seed: a NumPy scalar, staged (see uniform_array)
        return staged_constant(v, np.dtype(v.dtype if dtype is None else dtype).type(1))
    return np.ones_like(v, dtype=dtype)
