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

import numpy as np

from .rules.indexing import index_add, index_update
from .tracing import Traced

__all__ = ["array", "asarray", "index_update", "index_add"]


def _has_traced(obj):
    if type(obj) is Traced:
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_traced(o) for o in obj)
    return False


def _build(obj):
    if type(obj) is Traced:
        return obj
    if not isinstance(obj, (list, tuple)) or not _has_traced(obj):
        return np.asarray(obj)
    return np.stack([_build(o) for o in obj])


def array(obj, dtype=None):
    """``np.array(obj)`` for nested lists/tuples of traced and plain values.

    Pieces at each nesting level must have the same shape (as for
    ``np.array``); the result is traced when any piece is. ``dtype`` may be
    an inexact dtype for traced results (cast with ``astype``).

    >>> import chainrules as cr
    >>> float(cr.grad(lambda x: np.sum(array([[x, 2.0], [1.0, x]]) ** 2))(3.0))
    12.0
    """
    if not _has_traced(obj):
        return np.array(obj, dtype=dtype)
    out = _build(obj)
    if dtype is not None:
        out = out.astype(dtype)
    return out


def asarray(obj, dtype=None):
    """Like ``array``; a traced value is returned as is."""
    if type(obj) is Traced and (dtype is None or np.dtype(dtype) == obj.dtype):
        return obj
    if not _has_traced(obj):
        return np.asarray(obj, dtype=dtype)
    return array(obj, dtype)
