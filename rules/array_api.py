"""NumPy 2's array-API names and small helpers, as compositions of the
rules they stand for (see ``composites``): ``concat``, ``permute_dims``,
``matrix_transpose``, ``unstack``, ``cumulative_sum``/``cumulative_prod``,
``vecdot``/``matvec``/``vecmat`` (ufuncs), ``rollaxis``, ``real_if_close``,
and ``numpy.linalg``'s ``vector_norm``, ``matrix_norm``, ``cond``, ``trace``,
``cross``, ``vecdot``, ``diagonal``, ``outer``, ``tensordot``, ``matmul``.
"""

import numpy as np

from chainrules.arrays import ndim_of, shape_of
from chainrules.errors import UntraceableError
from chainrules.registry import DECOMPOSITIONS, decompose, is_registered
from chainrules.tracing import untraced

from ._util import array_like, array_value

__all__ = []


_asarray = array_like


def _opt(name, fn):
    """Register ``fn`` for ``numpy.<name>`` (or ``numpy.linalg.<name>``) when
    the installed NumPy has it."""
    mod, _, attr = name.rpartition(".")
    owner = np.linalg if mod == "linalg" else np
    op = getattr(owner, attr, None)
    # some names are aliases of functions that already have a rule
    # (np.concat is np.concatenate, np.linalg.matmul may be np.matmul)
    if op is not None and not is_registered(op) and op not in DECOMPOSITIONS:
        decompose(op)(fn)


_opt("concat", lambda arrays, /, *, axis=0: np.concatenate(list(arrays), axis=axis))
_opt("permute_dims", lambda a, /, axes=None: np.transpose(a, axes))
_opt("matrix_transpose", lambda x, /: np.swapaxes(x, -1, -2))
_opt("linalg.matrix_transpose", lambda x, /: np.swapaxes(x, -1, -2))
_opt("linalg.trace", lambda x, /, *, offset=0, dtype=None:
     np.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype))
_opt("linalg.diagonal", lambda x, /, *, offset=0: np.diagonal(x, offset, -2, -1))
_opt("linalg.outer", lambda x1, x2, /: np.outer(x1, x2))
_opt("linalg.tensordot", lambda x1, x2, /, *, axes=2: np.tensordot(x1, x2, axes=axes))
_opt("linalg.matmul", lambda x1, x2, /: np.matmul(x1, x2))
_opt("linalg.cross", lambda x1, x2, /, *, axis=-1: np.cross(x1, x2, axis=axis))


def _vecdot(x1, x2, /, *, axis=-1, **kwargs):
    x1, x2 = _asarray(x1), _asarray(x2)
    if np.iscomplexobj(array_value(x1)):
        x1 = np.conjugate(x1)
    return np.sum(x1 * x2, axis=axis)


_opt("vecdot", _vecdot)
_opt("linalg.vecdot", _vecdot)
_opt("matvec", lambda x1, x2, /, **kw: np.sum(x1 * np.expand_dims(x2, -2), axis=-1))
_opt("vecmat", lambda x1, x2, /, **kw: np.sum(
    np.expand_dims(np.conjugate(x1) if np.iscomplexobj(array_value(x1)) else x1, -1) * x2,
    axis=-2))


@decompose(np.unstack)
def _unstack(x, /, *, axis=0):
    x = _asarray(x)
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(shape_of(moved)[0]))


def _cumulative(op, identity):
    def cumulative(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        x = _asarray(x)
        if axis is None:
            if ndim_of(x) > 1:
                raise ValueError("axis must be specified for multi-dimensional arrays")
            axis = 0
        elif isinstance(axis, (tuple, list)) and len(axis) == 1:
            axis = axis[0]  # NumPy takes a one-axis tuple here too
        y = op(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(shape_of(y))
            shape[axis] = 1
            first = np.full(shape, identity, dtype=np.result_type(untraced(y)))
            y = np.concatenate([first, y], axis=axis)
        return y
    return cumulative


_opt("cumulative_sum", _cumulative(np.cumsum, 0))
_opt("cumulative_prod", _cumulative(np.cumprod, 1))


@decompose(np.rollaxis)
def _rollaxis(a, axis, start=0):
    a = _asarray(a)
    n = ndim_of(a)
    axis = axis % n
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"start={start} out of range for {n} dimensions")
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return np.transpose(a, order)


@decompose(np.real_if_close)
def _real_if_close(a, tol=100):
    a = _asarray(a)
    v = np.asarray(array_value(a))
    if v.dtype.kind != "c":
        return a
    t = tol * np.finfo(v.dtype).eps if tol > 1 else tol
    return np.real(a) if np.all(np.abs(v.imag) < t) else a


@decompose(np.linalg.vector_norm)
def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _asarray(x)
    if axis is None:
        y = _vector_norm(np.ravel(x), axis=0, ord=ord)
        return np.reshape(y, (1,) * ndim_of(x)) if keepdims else y
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims) if not isinstance(
        axis, tuple) or len(axis) == 1 else _vector_norm_axes(x, axis, keepdims, ord)


def _vector_norm_axes(x, axes, keepdims, ord):
    a = np.abs(x)
    if ord == 2:
        return np.sqrt(np.sum(np.real(x * np.conjugate(x)), axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return np.max(a, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(a, axis=axes, keepdims=keepdims)
    if ord == 1:
        return np.sum(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return np.sum((array_value(a) != 0).astype(float), axis=axes, keepdims=keepdims)
    return np.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


@decompose(np.linalg.matrix_norm)
def _matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return np.linalg.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@decompose(np.linalg.cond)
def _cond(x, p=None):
    x = _asarray(x)
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    return np.linalg.norm(x, ord=p, axis=(-2, -1)) * np.linalg.norm(
        np.linalg.inv(x), ord=p, axis=(-2, -1))


# -- fill values NumPy converts before any protocol sees them -------------------------------
@decompose(np.copyto)
def _copyto(dst, src, casting="same_kind", where=True):
    raise UntraceableError(
        "writing a traced value into a plain array (np.copyto, and np.full / np.full_like "
        "with a traced fill value, which call it) would drop its derivative; use "
        "chainrules.numpy.full(shape, value) or chainrules.numpy.full_like(x, value) "
        "(or np.zeros_like(x) + value)")
