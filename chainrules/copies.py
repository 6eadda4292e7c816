"""Copies of traced and plain values that outlive the call they come from:
``private_copy`` (what a recording keeps of an argument, so that a later
write into the caller's array changes nothing it computes) and
``stop_gradient`` (a user's constant copy: every level of tracing removed).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from .tracing import Traced, snapshot, untraced

__all__ = ["private_copy", "stop_gradient"]

_T = TypeVar("_T")


def private_copy(v):
    """A copy of an array that a recording (or ``stop_gradient``'s caller)
    may keep: writing to the original later changes nothing it computes.
    A traced value gets a snapshot (a new object: a later write into ``v``
    rebinds ``v`` only); NumPy scalars and non-arrays are returned as they
    are; a lazy array (dask) gets its own ``copy``, a new lazy array object."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if type(v) is Traced:
        return snapshot(v)
    if type(v) is not Traced and not isinstance(v, np.generic) and hasattr(
            v, "__array_function__"):
        copy = getattr(v, "copy", None)
        return copy() if copy is not None else np.copy(v)
    return v


def stop_gradient(x: _T) -> _T:
    """A constant copy of ``x``: every level of tracing removed, and arrays
    copied, so that writing to the result changes neither the caller's array
    nor the value being differentiated.

    Works on arrays, scalars and pytrees; Python and NumPy scalars (which are
    immutable) are returned as they are.

    >>> import numpy as np, chainrules as cr
    >>> x = np.array([1.0, 2.0])
    >>> c = cr.stop_gradient(x); c[0] = 100.0; x
    array([1., 2.])
    """
    v = untraced(x)
    if type(v) is np.ndarray:
        return v.copy()
    if isinstance(v, (list, tuple, dict)) or hasattr(v, "__dataclass_fields__"):
        from . import pytree

        return pytree.tree_map(private_copy, v)
    return private_copy(v)
