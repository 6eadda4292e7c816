"""NumPy's in-place buffer functions on traced arrays, recorded out of place.

``ufunc.at(a, indices, b)`` (``np.add.at``, ``np.subtract.at``,
``np.multiply.at``, ``np.maximum.at``... every ufunc with a rule),
``np.put(a, ind, v, mode)`` (and ``a.put``), ``np.putmask(a, mask, values)``,
``np.place(arr, mask, vals)`` and ``np.fill_diagonal(a, val, wrap)`` with a
traced ``a`` compute the new value of ``a`` from recorded operations and
rebind ``a`` to it, as ``a[i] = v`` does (``chainrules.writes``): views of
``a`` and the base it is a view of see the write; the user's arrays are
never written.

NumPy's own semantics are kept by asking NumPy: which element of the
values lands at which position (``put``'s modes, repeated indices where
the last write wins, values repeated cyclically when there are fewer than
positions) is found by running the same function on an integer buffer with
the values' positions ``0, 1, ..., n - 1``, and its errors and warnings by
running it on zeros of the same dtypes and shapes. ``ufunc.at`` applies
repeated indices one after the other: the k-th occurrence of every position
is applied in round k, each round an ``index_update`` of distinct positions
(``np.add.at`` and ``np.subtract.at`` of values of ``a``'s dtype are one
``index_add``, which accumulates exactly as NumPy does).

The indices and masks are integers and booleans: a traced one is refused.
A plain ``a`` cannot hold a derivative: writing traced values into it is
refused, naming the traced buffers (``np.zeros_like(x)``).
"""

import warnings

import numpy as np

from . import tracing, writes
from .errors import UntraceableError
from .numpy import index_add, index_update
from .tracing import SPECIAL_FUNCTIONS, Traced, array_function, dispatch, op_name, untraced

__all__ = ["ufunc_at"]

_PLAIN_BUFFER = (
    "a plain NumPy array cannot hold a derivative: make the buffer from a traced value "
    "(out = np.zeros_like(x), np.zeros_like(x, shape=...)) so that writes into it are "
    "recorded")


def _call(func, *args, **kwargs):
    return array_function(func, args, kwargs)


def _refuse_traced_index(name, what):
    raise UntraceableError(
        f"{name} was given a traced {what}: positions and masks are integers and booleans "
        f"and carry no derivative; pass a plain array (chainrules.stop_gradient(...) of it, "
        "or a comparison such as x > 0)")


def _refuse_plain_buffer(name):
    raise UntraceableError(f"{name} writing traced values into a plain array: {_PLAIN_BUFFER}")


def _values(v):
    """The values to write as an array: traced when any piece of a nested
    list is (``[x[0], 1.0]``), so that no derivative is dropped."""
    if type(v) is Traced:
        return v
    if isinstance(v, (list, tuple)) and tracing.holds_traced(v):
        return tracing.nested_array(v)
    return np.asarray(v)


def _zeros_of(v):
    """Zeros of ``v``'s dtype and shape (for NumPy's checks)."""
    u = untraced(v)
    if isinstance(u, (np.ndarray, np.generic)):
        return np.zeros(np.shape(u), u.dtype)
    a = np.asarray(u)
    return np.zeros(a.shape, a.dtype)


def _to_dtype(r, dtype):
    """``r`` cast to ``dtype`` as NumPy casts into an array (unsafe, the
    imaginary part dropped: NumPy's check already warned)."""
    if type(r) is not Traced:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return np.asarray(r).astype(dtype)
    if r.dtype.kind == "c" and dtype.kind != "c":
        r = _call(np.real, r)
    return r if r.dtype == dtype else r.astype(dtype)


# -- put, putmask, place, fill_diagonal ---------------------------------------------------
def _scatter(name, a, values, place):
    """Write into the traced ``a`` what ``place(buffer, values)`` writes in
    NumPy: the positions and the value each receives come from ``place``
    run on an integer buffer with the values' flat positions."""
    vals = _values(values)
    with warnings.catch_warnings():  # NumPy's errors; its warnings come from the cast
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        place(np.zeros(a.shape, a.dtype), _zeros_of(vals))
    n = int(np.size(untraced(vals)))
    src = np.full(a.shape, -1, np.intp)
    place(src, np.arange(n, dtype=np.intp))
    written = src >= 0
    if not written.any():
        writes._component(a)  # the checks of a write; nothing changes
        return None
    idx = src[written]
    if type(vals) is Traced:
        got = _call(np.reshape, vals, (-1,))[idx]
        got = writes._cast_to(got, a.dtype)
    else:
        got = writes._cast_to(vals.reshape(-1)[idx], a.dtype)
    writes._assign(a, dispatch(index_update, (a, written, got), None))
    return None


def _put(func, args, kwargs):
    p = _bind(lambda a, ind, v, mode="raise": (a, ind, v, mode), args, kwargs)
    a, ind, v, mode = p
    if type(ind) is Traced:
        _refuse_traced_index("numpy.put", "index")
    if type(a) is not Traced:
        if _traced(v):
            _refuse_plain_buffer("numpy.put")
        return array_function(func, args, kwargs)
    return _scatter("numpy.put", a, v, lambda buf, vals: np.put(buf, ind, vals, mode=mode))


def _putmask(func, args, kwargs):
    a, mask, values = _bind(lambda a, mask, values: (a, mask, values), args, kwargs)
    if type(mask) is Traced:
        _refuse_traced_index("numpy.putmask", "mask")
    if type(a) is not Traced:
        if _traced(values):
            _refuse_plain_buffer("numpy.putmask")
        return array_function(func, args, kwargs)
    return _scatter("numpy.putmask", a, values,
                    lambda buf, vals: np.putmask(buf, mask, vals))


def _place(func, args, kwargs):
    arr, mask, vals = _bind(lambda arr, mask, vals: (arr, mask, vals), args, kwargs)
    if type(mask) is Traced:
        _refuse_traced_index("numpy.place", "mask")
    if type(arr) is not Traced:
        if _traced(vals):
            _refuse_plain_buffer("numpy.place")
        return array_function(func, args, kwargs)
    if type(vals) is Traced and _root(vals) is _root(arr) and np.may_share_memory(
            untraced(vals), untraced(arr)):
        raise UntraceableError(
            "numpy.place with values that are a view of the array written: NumPy reads "
            "them while it writes, so earlier writes change later values; pass a copy "
            "(np.place(a, mask, v.copy())) or use np.putmask / a[mask] = v, which read "
            "the values first")
    return _scatter("numpy.place", arr, vals, lambda buf, v: np.place(buf, mask, v))


def _root(t):
    """The array a chain of views of ``t`` starts from (aliases not followed)."""
    b = writes._base_of(t)
    while b is not None and type(b[1]) is not writes._Alias:
        t = b[0]
        b = writes._base_of(t)
    return t


def _fill_diagonal(func, args, kwargs):
    a, val, wrap = _bind(lambda a, val, wrap=False: (a, val, wrap), args, kwargs)
    if type(a) is not Traced:
        if _traced(val):
            _refuse_plain_buffer("numpy.fill_diagonal")
        return array_function(func, args, kwargs)
    return _scatter("numpy.fill_diagonal", a, val,
                    lambda buf, v: np.fill_diagonal(buf, v, wrap=wrap))


def _traced(v):
    return type(v) is Traced or isinstance(v, (list, tuple)) and tracing.holds_traced(v)


def _bind(params, args, kwargs):
    return params(*args, **kwargs)


# -- ufunc.at -------------------------------------------------------------------------------
def ufunc_at(ufunc, inputs, kwargs):
    """``ufunc.at(a, indices[, b])`` with traced arguments: ``a`` rebound
    to the result computed out of place (repeated indices applied one
    after the other, as NumPy applies them)."""
    name = f"{op_name(ufunc)}.at"
    if kwargs or len(inputs) not in (2, 3):
        raise TypeError(f"{name} takes (a, indices[, b]) and no keywords")
    a, indices = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) == 3 else None
    weak = type(b) in (int, float, complex)  # a Python number: NumPy's weak promotion
    if b is not None and not weak:
        b = _values(b)
    if type(indices) is Traced or isinstance(indices, tuple) and any(
            type(i) is Traced for i in indices):
        _refuse_traced_index(name, "index")
    if type(a) is not Traced:
        _refuse_plain_buffer(name)
    # NumPy's errors and warnings (casting, shapes, bounds, arity): the same
    # call on zeros of the same dtypes and shapes
    with np.errstate(all="ignore"):
        if b is None:
            ufunc.at(np.zeros(a.shape, a.dtype), indices)
        else:
            ufunc.at(np.zeros(a.shape, a.dtype), indices, b if weak else _zeros_of(b))
    pos = np.arange(a.size, dtype=np.intp).reshape(a.shape)[indices]
    if b is not None and ufunc in (np.add, np.subtract):
        bt = b if type(b) is Traced or weak else np.asarray(b)
        if np.result_type(a.dtype, bt if weak else bt.dtype) == a.dtype:  # NumPy's sums
            if ufunc is np.subtract:
                bt = -bt
            writes._assign(a, dispatch(index_add, (a, indices, bt), None))
            return None
    pos = pos.reshape(-1)
    if b is not None and not weak:
        if type(b) is Traced:
            b = _call(np.reshape, _call(np.broadcast_to, b, _shape(a, indices)), (-1,))
        else:
            b = np.broadcast_to(np.asarray(b), _shape(a, indices)).reshape(-1)
    cur = _call(np.reshape, a, (-1,))
    for sel in _rounds(pos):
        p = pos[sel]
        old = cur[p]
        r = ufunc(old) if b is None else ufunc(old, b if weak else b[sel])
        cur = dispatch(index_update, (cur, p, _to_dtype(r, a.dtype)), None)
    writes._assign(a, _call(np.reshape, cur, a.shape))
    return None


def _shape(a, indices):
    """The shape of ``a[indices]`` (what ``b`` broadcasts to)."""
    return np.zeros(a.shape, np.bool_)[indices].shape


def _rounds(pos):
    """Masks of ``pos``: the first occurrence of every position, then the
    second..., so that each round writes distinct positions."""
    if pos.size == 0:
        return []
    order = np.argsort(pos, kind="stable")
    s = pos[order]
    first = np.ones(s.size, np.bool_)
    first[1:] = s[1:] != s[:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(s.size), 0))
    occ = np.empty(s.size, np.intp)
    occ[order] = np.arange(s.size) - starts
    return [occ == k for k in range(int(occ.max()) + 1)]


def _install():
    SPECIAL_FUNCTIONS[np.put] = _put
    SPECIAL_FUNCTIONS[np.putmask] = _putmask
    SPECIAL_FUNCTIONS[np.place] = _place
    SPECIAL_FUNCTIONS[np.fill_diagonal] = _fill_diagonal
    writes._Writes.ufunc_at = staticmethod(ufunc_at)
    Traced.put = _put_method


def _put_method(self, indices, values, mode="raise"):
    """``x.put(indices, values, mode)``: ``np.put(x, ...)``, recorded."""
    np.put(self, indices, values, mode=mode)


_install()
