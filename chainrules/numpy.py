"""Array creation and updates that NumPy's protocols cannot intercept.

``np.array([t1, t2])`` and ``np.asarray([[t, 1.0]])`` on traced values never
reach chainrules: NumPy converts each element itself. Rather than silently
dropping the derivative, every such call raises ``UntraceableError`` (from
``Traced.__array__``) naming the alternatives:

* ``np.stack([t1, t2])`` / ``np.concatenate`` for arrays of equal shape;
* ``chainrules.numpy.array(obj)`` for nested lists mixing traced and plain
  values (it builds the array with ``np.stack``, level by level).

In-place writes (``x[i] = v``, ``np.add.at(x, i, v)``) also raise on traced
values; their differentiable, out-of-place forms are ``index_update`` and
``index_add``::

    import chainrules.numpy as cnp

    def f(x):
        m = cnp.array([[x[0], 1.0], [0.0, x[1]]])   # differentiable
        m = cnp.index_update(m, (0, 1), x[0] * x[1])
        return np.sum(cnp.index_add(m, [0, 0], 1.0))

Without traced values these functions behave like ``np.array``,
``x.copy(); x[index] = values`` and ``x.copy(); np.add.at(x, index, values)``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .arrays import computes_eagerly
from .primitives import primitive
from .tracing import Traced, holds_traced, nested_array

__all__ = ["array", "asarray", "full", "full_like", "r_", "c_", "index_update",
           "index_add"]

# The results are arrays: ndarrays, or traced values (which stand for
# arrays) when any input is traced; they are typed ``Any``, as NumPy's own
# functions are typed ``ndarray`` and would not describe a traced result.


def array(obj: ArrayLike, dtype: DTypeLike | None = None) -> Any:
    """``np.array(obj)`` for nested lists/tuples of traced and plain values.

    Pieces at each nesting level must have the same shape (as for
    ``np.array``); the result is traced when any piece is. ``dtype`` may be
    an inexact dtype for traced results (cast with ``astype``).

    >>> import chainrules as cr
    >>> float(cr.grad(lambda x: np.sum(array([[x, 2.0], [1.0, x]]) ** 2))(3.0))
    12.0
    """
    return nested_array(obj, dtype)


def asarray(obj: ArrayLike, dtype: DTypeLike | None = None) -> Any:
    """Like ``array``; a traced value is returned as is."""
    if type(obj) is Traced and (dtype is None or np.dtype(dtype) == obj.dtype):
        return obj
    if not holds_traced(obj):
        return np.asarray(obj, dtype=dtype)
    return nested_array(obj, dtype)


def full(shape: int | Sequence[int], fill_value: ArrayLike,
         dtype: DTypeLike | None = None) -> Any:
    """``np.full`` whose fill value may be traced (NumPy converts the fill
    value with ``copyto`` before any protocol sees it)."""
    if type(fill_value) is not Traced:
        return np.full(shape, fill_value, dtype=dtype)
    out = np.zeros(shape, dtype=dtype or fill_value.dtype) + fill_value
    return out if dtype is None else out.astype(dtype)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike | None = None,
              shape: int | Sequence[int] | None = None) -> Any:
    """``np.full_like`` whose fill value may be traced."""
    from .tracing import untraced

    like = untraced(a)
    shp = np.shape(like) if shape is None else shape
    dt = dtype or (np.result_type(like) if type(fill_value) is not Traced
                   else np.result_type(like, fill_value.dtype))
    if type(fill_value) is not Traced:
        return np.full_like(like, fill_value, dtype=dtype, shape=shape)
    return np.zeros(shp, dtype=dt) + fill_value


class _Concatenator:
    """``r_`` and ``c_`` for traced pieces: numbers and arrays (traced or not)
    and slices (``start:stop:step``, or ``start:stop:num*1j`` for linspace)."""

    def __init__(self, columns: bool) -> None:
        self.columns = columns

    def _piece(self, item):
        if isinstance(item, slice):
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, complex):
                return np.linspace(start, item.stop, int(abs(step)))
            return np.arange(start, item.stop, step)
        if isinstance(item, str):
            raise TypeError("chainrules.numpy.r_/c_ take no string directives; "
                            "use np.concatenate / np.stack with an axis")
        if type(item) is Traced:
            return item if item.ndim else np.reshape(item, (1,))
        return np.atleast_1d(np.asarray(item))

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        pieces = [self._piece(i) for i in items]
        if not self.columns:
            return np.concatenate(pieces, axis=0)
        cols = [np.reshape(p, (-1, 1)) if np.ndim(p) == 1 else p for p in pieces]
        return np.concatenate(cols, axis=-1)


r_ = _Concatenator(columns=False)
c_ = _Concatenator(columns=True)


# -- out-of-place updates (their rules: chainrules.rules.indexing) ---------------------
def _promoted_copy(x, values):
    # a staged value keeps its type: astype is recorded, np.asarray would
    # convert it
    if type(x) is not np.ndarray and computes_eagerly(x):
        return x.astype(np.result_type(x, values), copy=True)
    x = np.asarray(x)
    return np.array(x, dtype=np.result_type(x, values), copy=True)


@primitive
def index_update(x: ArrayLike, index: Any, values: ArrayLike) -> Any:
    """``x`` with ``x[index] = values`` applied out of place (differentiable).

    The result has ``np.result_type(x, values)``. Repeated positions in an
    advanced ``index`` are ambiguous (which write wins) and raise when
    differentiated; use ``index_add`` for accumulation.

    >>> index_update(np.zeros(3), 1, 5.0)
    array([0., 5., 0.])
    """
    out = _promoted_copy(x, values)
    out[index] = values
    return out


@primitive
def index_add(x: ArrayLike, index: Any, values: ArrayLike) -> Any:
    """``x`` with ``values`` added at ``index`` out of place, repeated indices
    accumulating (like ``np.add.at``); differentiable in ``x`` and ``values``.

    >>> index_add(np.zeros(3), [0, 0, 2], 1.0)
    array([2., 0., 1.])
    """
    out = _promoted_copy(x, values)
    np.add.at(out, index, values)
    return out
