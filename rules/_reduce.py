"""Shared helpers of the reduction rules (rules/reductions.py and
rules/statistics.py): NumPy's reduction signatures, the checks of their
arguments, and the shapes of a reduction's cotangent.

This module registers no rule."""

import numpy as np

from chainrules.arrays import ndim_of, uniform_array
from chainrules.errors import MissingRuleError, UntraceableError
from chainrules.registry import op_name

#: NumPy's marker of an argument the caller did not pass (``np._NoValue``)
NO_VALUE = getattr(np, "_NoValue", None)

__all__ = ["NO_VALUE", "is_given", "keepdims_flag", "reject_kwargs", "check_static",
           "reduced_size", "keepdims_shape", "expand_cotangent", "with_reduced_axes",
           "dtype_of", "flip_axis", "sum_params", "cum_params"]


def is_given(v):
    """Whether an optional argument was passed (neither None nor ``NO_VALUE``)."""
    return v is not None and v is not NO_VALUE


def keepdims_flag(v):
    """The ``keepdims=`` argument as a bool (``NO_VALUE``: False)."""
    return bool(v) if v is not NO_VALUE else False


def reject_kwargs(op, p, names, hint):
    """Raise for keyword arguments the rule cannot differentiate."""
    for name in names:
        if is_given(p.get(name)):
            if name == "out":
                raise UntraceableError(
                    f"{op_name(op)}(..., out=...) on a traced value would drop its "
                    "derivative; assign the result to a new name instead")
            raise MissingRuleError(
                f"{op_name(op)} with {name}= is not differentiable by chainrules "
                f"(argument types: {type(p['a']).__name__}); {hint}")


def check_static(op, ids, names):
    """Raise ``MissingRuleError`` if a non-array argument (``names``) is traced."""
    for i, name in zip(ids[1:], names):
        if i is not None:
            raise MissingRuleError(
                f"{op_name(op)} is differentiated in its array argument only; its "
                f"argument {name!r} must not be traced (use it as a constant, or "
                "build the computation from differentiable pieces)")


def reduced_size(shape, axes):
    """The number of elements reduced into each output element."""
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def keepdims_shape(shape, axes):
    """``shape`` with the reduced ``axes`` as size-1 axes."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


_SCALAR_TYPES = (float, complex, np.float64, np.float32, np.complex128, np.complex64)


def expand_cotangent(g, shape, axes, keepdims, like=None):
    """The cotangent of a reduction over ``axes`` broadcast back to ``shape``.

    ``like``: the reduced input when it is a lazy (dask) array: the
    cotangent is then built as zeros of its type and chunks plus ``g``, so
    each chunk is made where it is used (a broadcast would be one chunk of
    the full size, which defeats out-of-core evaluation); for a full
    reduction it also carries the scalar ``g`` (``lazy_uniform``)."""
    if type(g) is np.ndarray and g.ndim == 0 or type(g) in _SCALAR_TYPES or (
            like is not None and ndim_of(g) == 0):
        return uniform_array(g, shape, like)  # a full reduction: no memory
    if not keepdims:
        g = np.reshape(g, keepdims_shape(shape, axes))
    if like is not None:
        return np.zeros_like(like, dtype=np.result_type(g)) + g
    return np.broadcast_to(g, shape)


def with_reduced_axes(g, shape, axes, keepdims):
    """``g`` with the reduced axes as size-1 axes (no broadcast)."""
    if keepdims:
        return g
    return np.reshape(g, keepdims_shape(shape, axes))


def dtype_of(x):
    """The dtype of an array or a Python/NumPy scalar."""
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)


def flip_axis(g, axis):
    """``g`` reversed along ``axis``."""
    idx = tuple(slice(None, None, -1) if i == axis else slice(None) for i in range(g.ndim))
    return g[idx]


def sum_params(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
    """The arguments of ``np.sum`` (and ``prod``, ``nansum``) by name."""
    return locals()


def cum_params(a, axis=None, dtype=None, out=None):
    """The arguments of ``np.cumsum`` and ``np.cumprod`` by name."""
    return locals()
