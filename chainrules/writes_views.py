"""Writes through the views NumPy functions return, and copies with NumPy's
memory layout.

``reshape``, ``ravel``, ``transpose`` (``.T``), ``squeeze``, ``swapaxes``,
``moveaxis``, ``real`` and ``imag`` (and their method forms; ``x.real = v``
and ``x.imag = v`` too) of a traced array are followed as NumPy answers
them: when the primal arrays share memory (NumPy returned a view for these
values and this memory layout), the result is a view of its argument,
linked by a ``writes._View`` that reads it from the base (``get``) and
writes it back (``put``: the inverse reshape or transpose, a complex array
rebuilt from its parts), so writes go through both ways as for basic
indexing (``chainrules.writes``); when NumPy made a copy, the result is
independent. ``diagonal`` (``np.diag`` of a matrix) and ``imag`` of a real
array are read-only in NumPy: they follow writes into their base, and
writing into them raises ``ReadOnlyViewError`` (a ``ValueError``, as
NumPy's). The views of values staged by ``cr.jit`` stay aliases (writes
refused).

The primal layout must then be NumPy's: ``x.copy()``, ``+x``,
``copy.copy(x)`` and ``x.astype(x.dtype)`` (snapshots: the arrays are never
written) take the layout NumPy's copy has, copying the primal only when it
differs, and views written into are read again from their base
(``writes._assign``).
"""

import numpy as np

from . import tracing
from .errors import UntraceableError
from .tracing import Traced, array_function, untraced
from .writes import _add_alias, _add_view, _View

__all__ = []


def _viewing(func, args, kwargs):
    """``reshape``, ``ravel``, ``transpose``, ``squeeze``, ``swapaxes``,
    ``moveaxis``, ``diagonal``, ``real``, ``imag`` of a traced array: the
    result is linked to its argument as a view when NumPy's result is one
    (the primal arrays share memory, as NumPy decided for these values), so
    that writes go through as through basic indexing; a copy is independent."""
    out = array_function(func, args, kwargs)
    base = args[0] if args else kwargs.get("a", kwargs.get("val"))
    if type(out) is not Traced or type(base) is not Traced or out is base:
        return out
    v, b = untraced(out), untraced(base)
    if isinstance(v, np.generic) or isinstance(b, np.generic):
        return out  # NumPy's result of or for a scalar is a new array (a copy)
    if type(v) is not np.ndarray or type(b) is not np.ndarray:  # staged: not followed
        _add_alias([base], out, tracing.op_name(func))
        return out
    params = _PARAMS[func](*args, **kwargs)
    if params.get("copy"):  # reshape(..., copy=True): NumPy's copy
        return out
    if func is np.imag and b.dtype.kind != "c":  # NumPy: new read-only zeros
        _add_view(base, out, _View(np.imag, lambda t: array_function(
            np.imag, (t,), {}), None))
        return out
    # the results are new arrays or views of the argument's buffer: bounds
    # decide (np.shares_memory would too, at a higher cost)
    if not np.may_share_memory(v, b):
        return out
    link = _link(func, b, v, params)
    if link is None:  # a layout chainrules does not follow: writes refused
        _add_alias([base], out, tracing.op_name(func))
    else:
        _add_view(base, out, link)
    return out


def _call(func, *args, **kwargs):
    return array_function(func, args, kwargs)


def _link(func, b, v, params):
    """The ``_View`` of ``v = func(b, ...)`` (a view of ``b``; ``params``
    the call's arguments by name), or None."""
    if func is np.reshape or func is np.ravel:
        order = _order(b, params["order"])
        if order is None:
            return None
        shape = v.shape
        return _View(func, lambda t: _call(np.reshape, t, shape, order=order),
                     lambda t, c: _call(np.reshape, c, t.shape, order=order))
    if func is np.squeeze:
        shape = v.shape
        return _View(func, lambda t: _call(np.reshape, t, shape),
                     lambda t, c: _call(np.reshape, c, t.shape))
    if func is np.transpose:
        axes = params["axes"]
        axes = tuple(range(b.ndim))[::-1] if axes is None else tuple(
            int(a) % b.ndim for a in axes)
        back = tuple(int(i) for i in np.argsort(axes))
        return _View(func, lambda t: _call(np.transpose, t, axes),
                     lambda t, c: _call(np.transpose, c, back))
    if func is np.swapaxes:
        i, j = params["axis1"], params["axis2"]
        return _View(func, lambda t: _call(np.swapaxes, t, i, j),
                     lambda t, c: _call(np.swapaxes, c, i, j))
    if func is np.moveaxis:
        src, dst = params["source"], params["destination"]
        return _View(func, lambda t: _call(np.moveaxis, t, src, dst),
                     lambda t, c: _call(np.moveaxis, c, dst, src))
    if func is np.diagonal or func is np.diag:
        k = params.get("offset", params.get("k", 0))
        a1, a2 = params.get("axis1", 0), params.get("axis2", 1)
        return _View(func, lambda t: _call(np.diagonal, t, k, a1, a2), None)
    if func is np.real:
        if b.dtype.kind != "c":  # the array itself
            return _View(func, lambda t: _call(np.real, t), lambda t, c: c)
        return _View(func, lambda t: _call(np.real, t), _with_real)
    if func is np.imag:
        return _View(func, lambda t: _call(np.imag, t), _with_imag)
    return None


def _with_real(t, c):
    """Complex ``t`` with its real part replaced by ``c``: ``c + 1j * imag``,
    which adds (signed) zeros to ``c``, exact while the imaginary part is
    finite (``1j * inf`` has a NaN real part)."""
    _finite(untraced(t).imag, "real", "imaginary part of the array")
    return _as(_call(np.add, c, _call(np.multiply, 1j, _call(np.imag, t))), t.dtype)


def _with_imag(t, c):
    """Complex ``t`` with its imaginary part replaced by ``c``: ``real +
    1j * c``, exact while ``c`` is finite."""
    _finite(untraced(c), "imag", "values written")
    return _as(_call(np.add, _call(np.real, t), _call(np.multiply, 1j, c)), t.dtype)


def _finite(v, part, what):
    if not np.all(np.isfinite(v)):
        raise UntraceableError(
            f"writing into the {part} part of a complex array when the {what} holds inf "
            f"or nan: chainrules rebuilds the complex array as re + 1j * im, where "
            "1j * inf is nan + inf*1j, so the other part would silently become nan; "
            "keep the parts in two real arrays and combine them at the end")


def _as(r, dtype):
    return r if r.dtype == dtype else r.astype(dtype)


def _order(b, order):
    """``order`` of a reshape or ravel that gave a view of ``b``, as 'C' or
    'F' (None for a memory order that is neither)."""
    order = "C" if order is None else order.upper()
    if order in ("C", "F"):
        return order
    if order == "A":
        return "F" if b.flags.f_contiguous and not b.flags.c_contiguous else "C"
    if b.flags.c_contiguous or b.ndim <= 1 and b.strides[0] >= 0:  # 'K'
        return "C"
    return "F" if b.flags.f_contiguous else None


_PARAMS = {
    np.reshape: lambda a, shape=None, order="C", *, copy=None, **kw: {"order": order,
                                                                        "copy": copy},
    np.ravel: lambda a, order="C": {"order": order},
    np.squeeze: lambda a, axis=None: {},
    np.transpose: lambda a, axes=None: {"axes": axes},
    np.swapaxes: lambda a, axis1, axis2: {"axis1": axis1, "axis2": axis2},
    np.moveaxis: lambda a, source, destination: {"source": source,
                                                 "destination": destination},
    np.diagonal: lambda a, offset=0, axis1=0, axis2=1: {"offset": offset, "axis1": axis1,
                                                         "axis2": axis2},
    np.diag: lambda v, k=0: {"k": k},
    np.real: lambda val: {},
    np.imag: lambda val: {},
}


def _diag(func, args, kwargs):
    """``np.diag`` of a matrix is its (read-only) diagonal view; of a
    vector, a new matrix."""
    v = args[0] if args else kwargs.get("v")
    if np.ndim(v) == 2:
        return _viewing(func, args, kwargs)
    return array_function(func, args, kwargs)


def _copy(self, order="C"):
    """``x.copy(order)``: a snapshot (the arrays are never written) whose
    primal has the memory layout of NumPy's copy, since whether a later
    ``reshape`` or ``ravel`` of it is a view depends on that layout."""
    t = tracing.snapshot(self)
    v = self.value
    if type(v) is Traced:
        t.value = _copy(v, order)
    elif type(v) is np.ndarray and not _has_layout(v, order):
        t.value = np.array(v, order=order, copy=True)
    return t


def _astype(astype):
    """``x.astype(dtype)``; of ``x``'s own dtype, a copy in order 'K' as NumPy's."""

    def method(self, dtype, copy=True):
        if copy and np.dtype(dtype) == self.dtype:
            return _copy(self, "K")
        return astype(self, dtype, copy=copy)

    method.__name__ = method.__qualname__ = "astype"
    method.__doc__ = astype.__doc__
    return method


def _copy_k(self):
    """``copy.copy(x)``, ``+x``: NumPy's copies keep the layout (order 'K')."""
    return _copy(self, "K")


def _has_layout(v, order):
    """Whether NumPy's copy of ``v`` in ``order`` has ``v``'s layout."""
    if v.flags.c_contiguous:
        return order != "F" or v.flags.f_contiguous
    if v.flags.f_contiguous:
        return order != "C"
    return False


def _set_real(self, value):
    """``x.real = value``: a write into the view ``np.real(x)``."""
    np.real(self)[...] = value


def _set_imag(self, value):
    if self.dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    np.imag(self)[...] = value


def _install():
    special = tracing.SPECIAL_FUNCTIONS
    for f in _PARAMS:
        special[f] = _viewing
    special[np.diag] = _diag
    Traced.copy = _copy
    Traced.astype = _astype(Traced.astype)
    Traced.__copy__ = Traced.__pos__ = _copy_k
    Traced.real = property(Traced.real.fget, _set_real, doc="The real part (a view).")
    Traced.imag = property(Traced.imag.fget, _set_imag, doc="The imaginary part (a view).")


_install()
