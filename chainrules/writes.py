"""Writes into traced arrays, with NumPy's semantics.

``x[index] = v``, ``x += v`` (and ``-=``, ``*=``, ``/=``, ``//=``, ``%=``,
``**=``, ``@=``), ``x.fill(v)`` and ``np.copyto(x, v)`` on a traced ``x``
are recorded out of place (``index_update``, or the operation itself) and
**rebind the object** ``x`` to the result: its ``value``, ``node`` and
``tape`` become the result's. The arrays a traced value holds are never
written to, so what earlier rules saved stays what it was, and the user's
input arrays are never modified (a write into the traced argument of ``f``
rebinds that traced object only).

Views. NumPy's basic indexing returns views: ``v = y[1:]`` shares ``y``'s
memory. A traced value made by basic indexing (its array shares memory with
its base's, as NumPy decides) keeps its base, strongly, as NumPy's ``.base``
does, and its base keeps a weak reference to it. A write into a view is
written through into its base (``index_update`` of the base at the view's
index, up the chain of bases), and every live view of the written tree is
derived again from its new base (``base[index]``), so no live value is
ever stale. ``y[1:] += x`` runs as ``t = y[1:]; t += x; y[1:] = t``: the
last step, writing a live view into its own place, changes nothing.

A view made by ``reshape``, ``ravel``, ``transpose``, ``squeeze``,
``swapaxes``, ``moveaxis``, ``real`` or ``imag`` (``chainrules.writes_views``)
is linked the same way, its index a ``_View`` that reads it from the base
(``get``) and writes it back (``put``); a ``_View`` without ``put`` is
read-only (``diagonal``): writing into it raises ``ReadOnlyViewError``.
Other functions NumPy may answer with a view (``broadcast_to``, ``split``,
``flip``, ``expand_dims``, ...) make *aliases*: writing into an alias, or
into an array while an alias of it is alive, raises ``UntraceableError``
(NumPy would change the other one), naming the copy to make.

NumPy's in-place functions (``ufunc.at``, ``np.put``, ``np.putmask``,
``np.place``, ``np.fill_diagonal``) are recorded in
``chainrules.writes_buffers`` through ``_assign``; ``np.copyto`` here.

Buffers. ``np.zeros_like``, ``np.ones_like``, ``np.empty_like`` (zeros:
deterministic) and ``np.full_like`` of a traced value (with ``shape=``,
``dtype=``) are traced constants (a ``ConstantRule`` node), so writes of
traced values into them are recorded; with an integer or boolean dtype they
are plain arrays, as no derivative can live in them. A plain ndarray
cannot be intercepted: ``out[i] = x`` raises ``UntraceableError`` (or
NumPy's ``ValueError`` caused by it, for a single element) naming these
buffers.

Casting follows NumPy: ``x[i] = v`` casts ``v`` to ``x``'s dtype (a complex
value into a real array keeps its real part, with NumPy's
``ComplexWarning``); ``x += v`` keeps ``x``'s dtype and shape and refuses
what NumPy refuses, with NumPy's own error (the operation is first run by
NumPy on zero arrays of the same dtypes and shapes).

Inside a checkpointed segment or another closure capture, writing into a
traced value of an enclosing differentiation is refused: the segment is run
again later, and its writes must stay inside it.
"""

import warnings
import weakref

import numpy as np

from . import tracing
from .arrays import computes_eagerly, is_array
from .capture import current
from .errors import AutodiffError, EscapedTracerError, UntraceableError
from .numpy import index_update
from .rule import ReverseRule
from .tangents import ZERO
from .tracing import Traced, array_function, dispatch, getitem, record, untraced

__all__ = ["ConstantRule", "ReadOnlyViewError", "setitem", "in_place", "link_view"]


class _Alias:
    """The index of an alias: a result NumPy may share memory with its base."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<alias made by {self.name}>"


class _View:
    """The link of a view made by a NumPy function other than indexing
    (``reshape``, ``ravel``, ``transpose``, ``real``...): ``get(base)`` reads
    the view from its base, ``put(base, child)`` writes the view's elements
    back into the base (both recorded, differentiable); ``put`` is None for a
    view NumPy makes read-only (``diagonal``)."""

    __slots__ = ("func", "get", "put")

    def __init__(self, func, get, put):
        self.func = func
        self.get = get
        self.put = put

    @property
    def name(self):  # for messages only: op_name is not free
        return tracing.op_name(self.func)

    def __repr__(self):
        return f"<view made by {self.name}>"


class ReadOnlyViewError(AutodiffError, ValueError):
    """A write into a view NumPy makes read-only (``np.diagonal``'s result,
    the imaginary part of a real array): NumPy raises ``ValueError`` there,
    and so does chainrules."""


class ConstantRule(ReverseRule):
    """A node without inputs: a buffer made by ``np.zeros_like(x)`` and the
    like (constant, so every tangent and cotangent through it is zero)."""

    __slots__ = ()
    linear = True
    batched = True
    name = "chainrules.writes.constant"

    def inputs(self):
        return ()

    def pullback(self, g):
        return []

    def pushforward(self, tangents):
        return ZERO

    def pullback_with_tangents(self, g, gd, tangents):
        return []

    pullback_batched = pullback
    pushforward_batched = pushforward
    pullback_with_tangents_batched = pullback_with_tangents


_CONSTANT = ConstantRule()


def _constant(tape, value):
    """``value`` (a plain inexact array) as a constant node of ``tape``."""
    if not tape.active:
        raise EscapedTracerError(
            "a write into a traced value whose differentiation has finished (it escaped "
            "from a function being differentiated); use chainrules.stop_gradient on it "
            "before it leaves the function")
    return record(tape, _CONSTANT, value)


# -- links between a value and its views ----------------------------------------------
def _views(t):
    """The live views of ``t`` (dead references dropped)."""
    refs = getattr(t, "_views", None)
    if not refs:
        return []
    live = [r() for r in refs]
    if any(v is None for v in live):
        t._views = [r for r, v in zip(refs, live) if v is not None]
        live = [v for v in live if v is not None]
    return live


def _add_view(base, view, index):
    # a view keeps its base (writes go through it to the base's other views)
    view._base = (base, index)
    _add_ref(base, view)


def _add_alias(sources, alias, name):
    """Make ``alias`` an alias of ``sources`` and of all their bases. It
    refers to them weakly: once they are all gone, nothing can see a write
    into the alias, which is then an array of its own."""
    seen = []
    for s in sources:
        while s is not None and not any(s is t for t in seen):
            seen.append(s)
            b = _base_of(s)
            s = None if b is None or type(b[1]) is _Alias else b[0]
    alias._base = (tuple(weakref.ref(s) for s in seen), _Alias(name))
    for s in seen:
        _add_ref(s, alias)


def _add_ref(base, view):
    refs = getattr(base, "_views", None)
    if refs is None:
        base._views = [weakref.ref(view)]
        return
    refs.append(weakref.ref(view))
    n = len(refs)
    if n >= 16 and n & (n - 1) == 0:  # at powers of two: amortised pruning
        _views(base)


def link_view(base, out, index):
    """Link ``out = base[index]`` to ``base`` when NumPy's result is a view
    (basic indexing; an integer array index makes a copy): the primal
    arrays tell, since the rule computed ``out`` with NumPy's indexing."""
    v = untraced(out)
    if type(v) is np.ndarray and np.may_share_memory(v, untraced(base)):
        _add_view(base, out, index)


def _base_of(t):
    return getattr(t, "_base", None)


# -- writing --------------------------------------------------------------------------
def setitem(x, index, value):
    """``x[index] = value``: ``x`` rebound to ``index_update(x, index, v)``,
    ``v`` cast to ``x``'s dtype as NumPy casts it."""
    b = _base_of(value) if type(value) is Traced else None
    if b is not None and b[0] is x and _same_basic_index(b[1], index):
        _component(x)  # the checks of a write; writing a view into its place is a no-op
        return
    v = _cast_to(value, x.dtype)
    new = dispatch(index_update, (x, index, v), None)
    _assign(x, new)


def in_place(x, op, other):
    """``x op= other``: computed out of place, checked and cast as NumPy's
    in-place operation (``x``'s dtype and shape kept), ``x`` rebound."""
    _numpy_accepts(op, x, other)
    out = op(x, other)
    if type(out) is not Traced:  # no derivative (floor_divide): a constant
        out = _constant(x.tape, np.asarray(out).astype(x.dtype, copy=False))
    if out.dtype != x.dtype:
        out = out.astype(x.dtype)
    _assign(x, out)
    return x


def _numpy_accepts(op, x, other):
    """Raise NumPy's own error if NumPy refuses ``x op= other`` (casting
    under the ``same_kind`` rule, a broadcast that would change ``x``'s
    shape): the operation run on zero arrays of the same dtypes and shapes."""
    buf = np.zeros(x.shape, x.dtype)
    o = untraced(other)
    if isinstance(o, (np.ndarray, np.generic)) or is_array(o):
        o = np.zeros(o.shape, o.dtype)  # arrays of other types: never computed
    elif isinstance(o, (list, tuple)):
        a = np.asarray(o)
        o = np.zeros(a.shape, a.dtype)
    with np.errstate(all="ignore"):
        op(buf, o, out=buf)


def _cast_to(value, dtype):
    """``value`` as NumPy's ``x[i] = value`` casts it into an array of
    ``dtype`` (unsafe casting, as ndarray's assignment does)."""
    if type(value) is Traced:
        if value.dtype == dtype:
            return value
        if value.dtype.kind == "c" and dtype.kind != "c":
            warnings.warn("Casting complex values to real discards the imaginary part",
                          np.exceptions.ComplexWarning, stacklevel=4)
            value = np.real(value)
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, (list, tuple)) and tracing.holds_traced(value):
        return _cast_to(tracing.nested_array(value), dtype)
    v = np.asarray(value)
    if v.dtype == dtype:
        return v
    cast = np.empty(v.shape, dtype)
    cast[...] = value  # NumPy's own assignment: its casts, warnings and errors
    return cast


def _same_basic_index(a, b):
    """Whether two indices are the same basic index (ints, slices, None,
    Ellipsis, tuples of them); False when unsure."""
    if type(a) is not tuple:
        a = (a,)
    if type(b) is not tuple:
        b = (b,)
    if len(a) != len(b):
        return False
    for i, j in zip(a, b):
        if type(i) is not type(j) or type(i) not in tracing._BASIC_INDEX:
            return False
        if i != j:
            return False
    return True


def _component(x):
    """``(chain, tree)`` of a write into ``x``: ``chain`` is ``x`` and its
    bases up to the root, ``tree`` every live value linked to the root.
    Raises if the write cannot be followed: ``x`` or a value of the tree is
    an alias, or a value of an enclosing differentiation is written from
    inside a closure capture."""
    chain = [x]
    b = _base_of(x)
    while b is not None:
        base, index = b
        if type(index) is _Alias:
            if any(r() is not None for r in base):
                _refuse_alias(index.name, into=True)
            del x._base  # its base is gone: an array of its own from now on
            break
        if type(index) is _View and index.put is None:
            _refuse_read_only(index.name)
        chain.append(base)
        b = _base_of(base)
    tree = []
    stack = [chain[-1]]
    while stack:
        t = stack.pop()
        tree.append(t)
        for w in _views(t):
            index = w._base[1]
            if type(index) is _Alias:
                _refuse_alias(index.name, into=False)
            stack.append(w)
    cap = current()
    if cap is not None and any(t.tape.level < cap.bound for t in tree):
        raise UntraceableError(
            f"writing into a traced value of an enclosing differentiation (a value "
            f"{cap.name} closes over) would change it from inside {cap.name}, which "
            "chainrules runs again later; copy it first (y = x.copy()) and write into "
            "the copy, or pass it as an argument")
    return chain, tree


def _refuse_alias(name, into):
    what = ("writing into the result of " + name if into else
            "writing into an array while a result of " + name + " made from it is alive")
    raise UntraceableError(
        f"{what}: in NumPy that result may share memory with the array (a view), so the "
        "write would change both, and chainrules follows writes through basic indexing "
        "(x[1:], x[:, 0], x[..., None]) and the views of reshape, ravel, transpose, "
        "squeeze, swapaxes, moveaxis, real and imag of arrays (not of values staged by "
        "cr.jit) only; make the result a copy "
        f"(r = {name}(...).copy()) or let it go (del r) before writing, or write into "
        "the array itself through basic indexing")


def _refuse_read_only(name):
    raise ReadOnlyViewError(
        f"assignment destination is read-only: {name} returns a read-only view in NumPy, "
        f"so writing into it (or into a view of it) raises in NumPy too; write into a copy "
        f"(d = {name}(...).copy()), or into the array itself (np.fill_diagonal(a, v) for a "
        "diagonal)")


def _put(base, index, child):
    """``base`` with the elements of its view at ``index`` replaced by ``child``."""
    if type(index) is _View:
        return index.put(base, child)
    return dispatch(index_update, (base, index, child), None)


def _get(base, index):
    """The view of ``base`` at ``index``, read again."""
    if type(index) is _View:
        return index.get(base)
    return dispatch(getitem, (base, index), None)


def _rebind(t, new):
    if type(new) is not Traced:
        raise AutodiffError("a write into a traced value gave an untraced result")
    t.value = new.value
    t.node = new.node
    t.tape = new.tape


def _assign(x, new):
    """Rebind ``x`` to ``new``, write it through into its bases, and derive
    every other live view of the tree again from its new base."""
    chain, tree = _component(x)
    _rebind(x, new)
    for child, base in zip(chain, chain[1:]):
        _rebind(base, _put(base, child._base[1], child))
    # every view of the tree, the written ones included, is read again from
    # its new base: it stays a view of it, with NumPy's memory layout (what
    # later reshape and ravel calls ask about)
    stack = [chain[-1]]
    while stack:
        t = stack.pop()
        for w in _views(t):
            _rebind(w, _get(t, w._base[1]))
            stack.append(w)


# -- NumPy functions on traced values that are not operations ---------------------------
def _buffer(func, args, kwargs):
    """``np.zeros_like(x)`` and the like of a traced ``x``: a traced
    constant (``empty_like`` gives zeros); ``full_like`` with a traced fill
    value writes it into such a buffer. Anything else as before."""
    like = args[0] if args else kwargs.get("a", kwargs.get("prototype"))
    if type(like) is not Traced:
        return array_function(func, args, kwargs)
    cap = current()
    if cap is not None:
        (like,), _ = cap.convert((like,), None)
        if type(like) is not Traced:  # it stands for a plain value here
            return func(like, *args[1:], **kwargs)
    rest = list(args[1:])
    fill = None
    if func is np.full_like:
        fill = rest.pop(0) if rest else kwargs.pop("fill_value")
    plain = untraced(like)
    if func is np.ones_like:
        value = np.ones_like(plain, *rest, **kwargs)
    elif fill is None or type(fill) is Traced:  # empty_like too: zeros, deterministic
        value = np.zeros_like(plain, *rest, **kwargs)
    else:
        value = np.full_like(plain, fill, *rest, **kwargs)
    if not computes_eagerly(value) or value.dtype.kind not in "fc" \
            or not like.tape.active:
        if type(fill) is Traced:  # no derivative can live in the buffer
            return array_function(func, (plain, fill, *rest), kwargs)
        return value
    out = _constant(like.tape, value)
    if type(fill) is Traced:
        out[...] = fill
    return out


def _copyto(func, args, kwargs):
    """``np.copyto(dst, src)`` into a traced ``dst``: ``dst[...] = src``
    (with ``where=``: ``np.where(where, src, dst)``)."""
    params = _copyto_params(*args, **kwargs)
    dst = params["dst"]
    if type(dst) is not Traced:
        return array_function(func, args, kwargs)
    src, where = params["src"], params["where"]
    if params["casting"] not in ("unsafe", "same_kind", "equiv", "no", "safe"):
        raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', or "
                         f"'unsafe' (got {params['casting']!r})")
    proxy = np.zeros(dst.shape, dst.dtype)  # NumPy's casting and shape checks
    np.copyto(proxy, _zeros_of(src), casting=params["casting"], where=_zeros_of(where)
              if type(where) is Traced else where)
    if where is not True:
        src = np.where(where, src, dst)
    dst[...] = src


def _copyto_params(dst, src, casting="same_kind", where=True):
    return {"dst": dst, "src": src, "casting": casting, "where": where}


def _zeros_of(v):
    u = untraced(v)
    if isinstance(u, (np.ndarray, np.generic)):
        return np.zeros(np.shape(u), u.dtype)
    return u


def _aliasing(func, args, kwargs):
    """A function NumPy may answer with a view of its argument: its traced
    results are aliases of its traced arguments (writes refused)."""
    out = array_function(func, args, kwargs)
    if func is np.diag and np.ndim(args[0]) != 2:  # a new matrix from a vector
        return out
    sources = [a for a in _flat(args) if type(a) is Traced]
    name = tracing.op_name(func)
    for r in _flat(out if isinstance(out, (list, tuple)) else (out,)):
        if type(r) is Traced and not any(r is s for s in sources):
            _add_alias(sources, r, name)
    return out


def _flat(seq):
    for a in seq:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


#: the functions NumPy answers with views of their argument (found by
#: asking NumPy: np.shares_memory of argument and result)
_ALIASING = (
    "transpose", "swapaxes", "moveaxis", "rollaxis", "permute_dims", "matrix_transpose",
    "reshape", "ravel", "squeeze", "expand_dims", "diagonal", "diag", "real", "imag",
    "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "split",
    "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr", "flipud", "rot90",
    "unstack", "trim_zeros", "real_if_close", "ascontiguousarray", "asfortranarray",
    "require", "asarray", "asanyarray")


def _install():
    special = tracing.SPECIAL_FUNCTIONS
    for name in _ALIASING:
        f = getattr(np, name, None)
        if f is not None:
            special[f] = _aliasing
    special[np.lib.stride_tricks.sliding_window_view] = _aliasing
    special[np.lib.stride_tricks.as_strided] = _aliasing
    for f in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
        special[f] = _buffer
    special[np.copyto] = _copyto
    for name, op in (("__iadd__", np.add), ("__isub__", np.subtract),
                     ("__imul__", np.multiply), ("__itruediv__", np.true_divide),
                     ("__ifloordiv__", np.floor_divide), ("__imod__", np.remainder),
                     ("__ipow__", np.power), ("__imatmul__", np.matmul)):
        setattr(Traced, name, _in_place_operator(op, name))
    tracing.WRITES = _Writes


def _in_place_operator(op, name):
    """``x op= other`` as a method of ``Traced``: ``in_place``."""

    def method(self, other):
        return in_place(self, op, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = "An in-place operator: computed out of place, the object rebound."
    return method


class _Writes:
    """What ``Traced`` calls (``tracing.WRITES``)."""

    setitem = staticmethod(setitem)
    in_place = staticmethod(in_place)
    link_view = staticmethod(link_view)


_install()
