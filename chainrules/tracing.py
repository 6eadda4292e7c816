"""Traced values: how plain NumPy code reaches the registry.

``Traced`` wraps a primal value (an ndarray, a NumPy scalar, or a traced
value of an outer differentiation) together with its ``NodeId`` on a tape.
It implements NumPy's ``__array_ufunc__`` and ``__array_function__``
protocols and the Python operators, so ``np.sin(x) @ W`` on a traced ``x``
is recorded without any wrapped ``numpy`` module.

Levels: every tape has a level, newer tapes higher. An operation is recorded
on the highest-level tape among its arguments; values of lower levels are
constants there and are unwrapped by their own tape when the rule computes
with them. That is what makes ``grad(grad(f))`` and closures over outer
traced values correct, without perturbation confusion. A sub-computation
that must see such values as its own inputs (a checkpointed segment, an ODE
right-hand side) runs under a closure capture (``capture.py``), which
``dispatch`` lets convert them.

Uses that would silently drop a derivative raise ``UntraceableError``:
``np.asarray(x)``, ``float(x)``, ``x.item()``, ``out=`` (``Traced`` takes
the refused conversions from ``guards.py`` and its ndarray methods from
``array_methods.py``, as mixins).

Writes (``x[i] = v``, ``x += v``, ``x.fill(v)``, ``np.copyto(x, v)``) are
recorded out of place and rebind the object ``x`` to the result; a value
made by basic indexing remembers its base, so that writes go through views
as in NumPy (``chainrules/writes.py``, which installs ``WRITES`` and the
functions of ``SPECIAL_FUNCTIONS`` when it is imported). The arrays a
traced value holds are never written to.
"""

from __future__ import annotations

import contextvars
from typing import Any, Callable

import numpy as np

from .array_methods import ArrayMethods
from .arrays import NOT_ARRAYS
from .errors import EscapedTracerError, MissingRuleError, TruthValueError
from .guards import ConversionGuards, is_plain_subclass, refuse_subclass, untraceable
from .graph import Tape, record as _record
from .registry import (ALL, DECOMPOSITIONS, SEQUENCE_ARGS, GENERIC_MAKERS,
                       keywords_to_positions, lookup, op_name)
from .rule import NodeId
from .ufunc_methods import ufunc_method

__all__ = ["Traced", "dispatch", "getitem", "untraced", "is_traced",
           "top_tape"]


_list_tuple = (list, tuple)
_new = object.__new__
#: the closure capture running in this context (innermost), and the highest
#: level bound of the captures running in any thread (0: none): operations
#: on a tape below it leave the fast paths for dispatch, where the capture
#: converts the traced values of enclosing tapes (chainrules/capture.py)
CAPTURE = contextvars.ContextVar("chainrules_capture", default=None)
_capture_bound = 0
#: the write machinery (the module ``chainrules.writes``, installed when it
#: is imported): ``setitem``, ``in_place``, ``link_view``
WRITES = None
#: NumPy functions that ``__array_function__`` hands to a function of their
#: own before anything else (``np.zeros_like`` of a traced value is a traced
#: buffer, ``np.copyto`` into one a write, ``np.reshape``'s result an alias):
#: ``func -> handler(func, args, kwargs)``, filled by ``chainrules.writes``
SPECIAL_FUNCTIONS: dict[Any, Callable[..., Any]] = {}


def set_capture_bound(level):
    global _capture_bound
    _capture_bound = level


def _primal_type(v):
    while type(v) is Traced:
        v = v.value
    return type(v)


def top_tape(args, kwargs):
    top = None
    for a in args:
        ta = type(a)
        if ta is Traced:
            t = a.tape
            if top is None or t.level > top.level:
                top = t
        elif ta is list or ta is tuple:
            t = top_tape(a, None)  # nested lists too (np.block, array_likes)
            if t is not None and (top is None or t.level > top.level):
                top = t
    if kwargs:
        for a in kwargs.values():
            if type(a) is Traced:
                t = a.tape
                if top is None or t.level > top.level:
                    top = t
    return top


def _bind_traced_kwargs(op, args, kwargs):
    """Move traced keyword arguments to their positions (slow path)."""
    new_args, new_kwargs = keywords_to_positions(op, args, kwargs)
    if any(type(v) is Traced for v in new_kwargs.values()):
        raise MissingRuleError(
            f"{op_name(op)} was given a traced keyword-only argument; "
            "chainrules differentiates positional array arguments only")
    return new_args, new_kwargs


def _one_traced(op, a):
    """``op(a)`` of one traced argument and no keywords, the most common call
    (``np.sin(x)``, ``np.sum(x)``): recorded on ``a``'s tape by its maker,
    without ``dispatch``'s loops; None when that tape is not recording at
    this level (``dispatch`` then decides)."""
    tape = a.tape
    if tape.active and tape.level >= _capture_bound:
        v = a.value
        tv = type(v)
        maker = GENERIC_MAKERS.get(op) or lookup(op, (tv if tv is not Traced else _primal_type(v),))
        out, rule = maker([a.node], v)
        return _record(tape, rule, out, Traced)
    return None


def dispatch(op, args, kwargs):
    """Record ``op(*args, **kwargs)`` on the highest-level tape involved."""
    if not kwargs and len(args) == 1 and type(args[0]) is Traced:
        out = _one_traced(op, args[0])
        if out is not None:
            return out
    top = top_tape(args, kwargs)
    if top is None:
        return op(*args, **kwargs)
    if _capture_bound and CAPTURE.get() is not None:
        args, kwargs = CAPTURE.get().convert(args, kwargs)
        top = top_tape(args, kwargs)
        if top is None:  # every traced argument stood for a plain value
            return op(*args, **(kwargs or {}))
    if not top.active:
        try:
            maker = lookup(op, tuple(_primal_type(a) for a in args))
        except MissingRuleError:
            maker = None
        if getattr(maker, "_nondiff", False):  # shape queries, comparisons: harmless
            return op(*untraced(list(args)), **(kwargs or {}))
        raise EscapedTracerError(
            f"{op_name(op)} was called on a traced value whose differentiation "
            "has finished (it escaped from a function being differentiated, for "
            "example through a global or has_aux); use chainrules.stop_gradient "
            "on it before it leaves the function")
    if kwargs and any(type(v) is Traced and v.tape is top for v in kwargs.values()):
        args, kwargs = _bind_traced_kwargs(op, args, kwargs)
    if any(type(a) is list or type(a) is tuple for a in args):
        args = _sequences_as_arrays(op, args, top)
    ids = []
    vals = []
    types = []
    for a in args:
        ta = type(a)
        if ta is Traced:
            if a.tape is top:
                ids.append(a.node)
                v = a.value
                vals.append(v)
                types.append(type(v) if type(v) is not Traced else _primal_type(v))
                continue
            ids.append(None)
            # a snapshot: a later write rebinds the object, never what a rule saved
            vals.append(snapshot(a))
            types.append(_primal_type(a))
        elif (ta is list or ta is tuple) and any(
                type(b) is Traced and b.tape is top for b in a):
            sub_ids = tuple(b.node if type(b) is Traced and b.tape is top else None
                            for b in a)
            sub_vals = [b.value if type(b) is Traced and b.tape is top else
                        snapshot(b) if type(b) is Traced else b for b in a]
            ids.append(sub_ids)
            vals.append(ta(sub_vals))
            types.append(ta)
        else:
            if ta not in _PLAIN and ta not in _STRUCT:
                _unusual_operand(ta, op)
            ids.append(None)
            vals.append(a)
            types.append(ta)
    maker = lookup(op, tuple(types))
    out, rule = maker(ids, *vals, **kwargs) if kwargs else maker(ids, *vals)
    return _record(top, rule, out, Traced)


def record(tape, rule, out):
    """Append ``rule`` to ``tape`` and return its output ``out`` traced
    (``graph.record`` with ``Traced``; the tracer's hot paths call that
    directly)."""
    return _record(tape, rule, out, Traced)


def _holds_traced(seq, top):
    for b in seq:
        tb = type(b)
        if tb is Traced:
            if b.tape is top:
                return True
        elif (tb is list or tb is tuple) and _holds_traced(b, top):
            return True
    return False


def holds_traced(obj):
    """Whether ``obj`` is traced or a (nested) list/tuple holding a traced value."""
    if type(obj) is Traced:
        return True
    if type(obj) is list or type(obj) is tuple:
        return any(holds_traced(o) for o in obj)
    return False


def nested_array(obj, dtype=None):
    """``np.array(obj)`` for nested lists/tuples of traced and plain values,
    built with ``np.stack`` level by level (pieces of one level share a
    shape, as for ``np.array``); traced when any piece is. NumPy converts the
    elements of a list itself, so no protocol would see the traced ones."""
    if not holds_traced(obj):
        return np.array(obj, dtype=dtype)
    out = _stacked(obj)
    return out if dtype is None else out.astype(dtype)


def _stacked(obj):
    if type(obj) is Traced:
        return obj
    if not isinstance(obj, (list, tuple)) or not holds_traced(obj):
        return np.asarray(obj)
    return np.stack([_stacked(o) for o in obj])


def _sequences_as_arrays(op, args, top):
    """Lists and tuples holding traced values, as the op's rule takes them:
    at the positions where the rule takes a sequence of arrays
    (``SEQUENCE_ARGS``), each nested list among the pieces becomes one array;
    anywhere else the whole list is an array_like and becomes one traced
    array (what ``np.asarray`` would make of it)."""
    seq = SEQUENCE_ARGS.get(op)
    out = list(args)
    for i, a in enumerate(args):
        ta = type(a)
        if (ta is not list and ta is not tuple) or not _holds_traced(a, top):
            continue
        if seq is ALL or (seq is not None and i in seq):
            if any((type(b) is list or type(b) is tuple) and _holds_traced(b, top)
                   for b in a):
                out[i] = ta(nested_array(b) if (type(b) is list or type(b) is tuple)
                            and _holds_traced(b, top) else b for b in a)
        else:
            out[i] = nested_array(a)
    return tuple(out)


def _binary_operator(op, reflected=False):
    """The fast path of a binary operator as the method itself
    (``Traced.__add__`` is ``_binary_operator(np.add)``; ``__radd__`` the
    reflected one): one or two traced arguments of one tape, no keywords;
    anything else (mixed levels, an inactive tape) goes through dispatch. A
    method of its own per operator keeps the path to the maker one Python
    frame long."""
    def operator(self, other):
        if reflected:
            a, b = other, self
        else:
            a, b = self, other
        if type(a) is Traced:
            tape = a.tape
            va = a.value
            if type(b) is Traced:
                if b.tape is not tape:
                    return dispatch(op, (a, b), None)
                vb = b.value
                ids = [a.node, b.node]
                tb = type(vb)
                if tb is Traced:
                    tb = _primal_type(vb)
            else:
                tb = type(b)
                if tb not in _PLAIN and _unusual_operand(tb, op):
                    return NotImplemented
                if tb is list or tb is tuple:  # an array_like that may hold traced values
                    return dispatch(op, (a, b), None)
                vb = b
                ids = [a.node, None]
            ta = type(va)
            if ta is Traced:
                ta = _primal_type(va)
        else:  # b is the traced one
            ta = type(a)
            if ta not in _PLAIN and _unusual_operand(ta, op):
                return NotImplemented
            if ta is list or ta is tuple:
                return dispatch(op, (a, b), None)
            tape = b.tape
            va = a
            vb = b.value
            ids = [None, b.node]
            tb = type(vb)
            if tb is Traced:
                tb = _primal_type(vb)
        if not tape.active or tape.level < _capture_bound:
            return dispatch(op, (a, b), None)
        maker = GENERIC_MAKERS.get(op) or lookup(op, (ta, tb))
        out, rule = maker(ids, va, vb)
        return _record(tape, rule, out, Traced)

    operator.__name__ = operator.__qualname__ = (
        f"__{'r' if reflected else ''}{getattr(op, '__name__', 'op')}__")
    return operator


def _binary(op, a, b):
    """``dispatch(op, (a, b), None)`` for a call of two arguments, one or both
    traced: the operators' fast path (one tape, active, constants of types
    in ``_PLAIN``) without dispatch's loops; anything else goes through
    dispatch."""
    ta = type(a)
    tb = type(b)
    if ta is Traced:
        tape = a.tape
        va = a.value
        if tb is Traced:
            if b.tape is not tape:
                return dispatch(op, (a, b), None)
            vb = b.value
            ids = [a.node, b.node]
            tb = type(vb)
            if tb is Traced:
                tb = _primal_type(vb)
        elif tb in _PLAIN and tb is not list and tb is not tuple:  # (lists: array_likes)
            vb = b
            ids = [a.node, None]
        else:
            return dispatch(op, (a, b), None)
        ta = type(va)
        if ta is Traced:
            ta = _primal_type(va)
    elif tb is Traced and ta in _PLAIN and ta is not list and ta is not tuple:
        tape = b.tape
        va = a
        vb = b.value
        ids = [None, b.node]
        tb = type(vb)
        if tb is Traced:
            tb = _primal_type(vb)
    else:
        return dispatch(op, (a, b), None)
    if not tape.active or tape.level < _capture_bound:
        return dispatch(op, (a, b), None)
    maker = GENERIC_MAKERS.get(op) or lookup(op, (ta, tb))
    out, rule = maker(ids, va, vb)
    return _record(tape, rule, out, Traced)


# filled below: structural tangent types defer to their own operators
_STRUCT: set[type] = set()
# types of constant operands met and found plain (not structural, not a
# refused ndarray subclass): the fast paths test membership only
_PLAIN = {float, int, complex, bool, np.ndarray, np.float64, np.float32, np.int64,
          np.complex128, np.complex64}


#: base class -> ``check(t, op)``: constant operands that the rule library
#: takes in some operations only (SciPy's sparse matrices, in ``x @ A``);
#: ``check`` raises for the others. Such a type is never remembered as plain.
OPERAND_CHECKS: dict[type, Callable[[type, Any], None]] = {}


def _unusual_operand(t, op):
    """For a constant operand's type not yet in ``_PLAIN``: True for a
    structural tangent (the operator defers to it), raise for an ndarray
    subclass chainrules does not follow, else remember the type as plain."""
    if t in _STRUCT:
        return True
    for base, check in OPERAND_CHECKS.items():
        if issubclass(t, base):
            check(t, op)
            return False
    if issubclass(t, np.ndarray) and not is_plain_subclass(t):
        refuse_subclass(t, op_name(op))
    _PLAIN.add(t)
    return False
_BASIC_INDEX = frozenset((int, slice, type(None), type(Ellipsis)))


def getitem(x, index):
    """``x[index]`` as a registered operation."""
    return x[index]


getitem._chainrules_op = True  # type: ignore[attr-defined]
_getitem = _binary_operator(getitem)  # x[basic index] takes the operators' fast path


#: what to do instead of out= (``out += x`` on a plain ``out`` is such a call)
_OUT_ALTERNATIVE = (
    "assign the result to a new name instead (y = f(x)), or write it into a traced "
    "array (y[...] = f(x)); a plain NumPy array cannot hold a derivative (out += x "
    "with a plain out is such a call): make the buffer from a traced value, "
    "out = np.zeros_like(x, shape=...)")



class Traced(ConversionGuards, ArrayMethods):
    """An array being differentiated. Use it as you would an ndarray.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> def f(x):
    ...     print(type(x).__name__)
    ...     return np.sum(x)
    >>> _ = cr.grad(f)(np.ones(2))
    Traced
    """

    # _base: (base, index) for a view made by basic indexing, or (weak
    # references to its sources, an alias marker) for a result NumPy may
    # share memory with (writes refused); _views: weak references to the
    # views and aliases of this value. Both are set only when used
    # (chainrules/writes.py); the recording paths leave them unset
    __slots__ = ("value", "node", "tape", "_base", "_views", "__weakref__")
    __array_priority__ = 1000.0
    #: the array it stands for (an ndarray, or another array type's value)
    value: Any
    #: its node on ``tape``
    node: NodeId
    #: the recording it belongs to
    tape: Tape

    def __init__(self, value: Any, node: NodeId, tape: Tape) -> None:
        self.value = value
        self.node = node
        self.tape = tape

    def __abs__(self):  # np.absolute(self) as __array_ufunc__ runs it, without NumPy's call
        out = None if DECOMPOSITIONS.get(np.absolute) else _one_traced(np.absolute, self)
        return np.absolute(self) if out is None else out

    # -- NumPy protocols ---------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not kwargs and method == "__call__" and DECOMPOSITIONS.get(ufunc) is None:
            n = len(inputs)
            if n == 1 and type(x := inputs[0]) is Traced:
                # the unary fast path first: one traced argument, no keywords
                out = _one_traced(ufunc, x)
                return dispatch(ufunc, inputs, None) if out is None else out
            if n == 2 and ufunc is not np.divmod:  # np.maximum(x, 0.0), x >= y
                return _binary(ufunc, inputs[0], inputs[1])
        if "out" in kwargs:
            untraceable(f"{op_name(ufunc)}(..., out=...)", _OUT_ALTERNATIVE)
        if method == "__call__":
            if "where" in kwargs:
                raise MissingRuleError(
                    f"{op_name(ufunc)} with where= on traced values leaves entries "
                    "uninitialised; use np.where(cond, f(x), other) instead")
            d = DECOMPOSITIONS.get(ufunc)
            if d is not None:
                return not_an_input(d(*inputs, **kwargs), inputs)
            if ufunc is np.divmod:
                # two recorded operations: the quotient has no derivative
                # (floor_divide), the remainder is np.remainder's
                return (np.floor_divide(*inputs, **kwargs), np.remainder(*inputs, **kwargs))
            return dispatch(ufunc, inputs, kwargs)
        return ufunc_method(ufunc, method, inputs, kwargs, WRITES)

    def __array_function__(self, func, types, args, kwargs):
        if kwargs:
            if kwargs.get("out") is not None:
                untraceable(f"{op_name(func)}(..., out=...)", _OUT_ALTERNATIVE)
        special = SPECIAL_FUNCTIONS.get(func)
        if special is not None:
            return special(func, args, kwargs)
        if not kwargs and DECOMPOSITIONS.get(func) is None:  # array_function, without a call
            if len(args) == 1 and type(a := args[0]) is Traced:
                # one traced argument (np.sum(x)): dispatch's fast path
                out = _one_traced(func, a)
                if out is not None:
                    return out
            return dispatch(func, args, kwargs)
        return array_function(func, args, kwargs)

    def __bool__(self):
        # Python control flow on a traced value follows its current value (the
        # branch taken is not differentiated, as in NumPy)
        v = untraced(self)
        if np.size(v) != 1:
            raise TruthValueError(
                f"the truth value of a traced array of shape {np.shape(v)} is "
                "ambiguous; use np.any(x) / np.all(x), or np.where(cond, a, b) to "
                "select values differentiably")
        return bool(v)

    # print debugging shows the value, as for an ndarray (printing does not
    # convert it, so nothing is refused)
    def __repr__(self):
        return f"Traced({untraced(self)!r})"

    def __str__(self):
        return str(untraced(self))

    def __format__(self, spec):
        return format(untraced(self), spec)

    def __copy__(self):
        return snapshot(self)

    __hash__ = None

    # -- attributes ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def ndim(self) -> int:
        return self.value.ndim

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.value.dtype

    @property
    def size(self) -> int:
        return self.value.size

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        for i in range(len(self.value)):
            yield self[i]

    def __getitem__(self, index):
        # a basic index (ints, slices, None, Ellipsis), the common x[1:],
        # z[:, :h], takes the operators' fast path: no traced index to look
        # for, nothing to convert; anything else goes through dispatch. An
        # array result that shares memory with x in NumPy (a view) is linked
        # to x, so that writes into either reach the other
        ti = type(index)
        if ti in _BASIC_INDEX or ti is tuple and all(type(i) in _BASIC_INDEX for i in index):
            out = _getitem(self, index)
        else:
            out = dispatch(getitem, (self, index), None)
        if type(out) is Traced and WRITES is not None and type(out.value) in _MAY_BE_VIEWS:
            WRITES.link_view(self, out, index)  # (a NumPy scalar, x[0] of a vector, is no view)
        return out

    def __setitem__(self, index, value):
        WRITES.setitem(self, index, value)

    def fill(self, value):
        WRITES.setitem(self, Ellipsis, value)

    def copy(self, order="K"):
        return snapshot(self)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            return untraced(self).astype(dtype)
        if dtype == self.dtype:
            return snapshot(self) if copy else self
        return dispatch(astype, (self, dtype), None)

    # -- operators -----------------------------------------------------------------
    __add__ = _binary_operator(np.add)

    __radd__ = _binary_operator(np.add, reflected=True)

    __sub__ = _binary_operator(np.subtract)

    __rsub__ = _binary_operator(np.subtract, reflected=True)

    __mul__ = _binary_operator(np.multiply)

    __rmul__ = _binary_operator(np.multiply, reflected=True)

    __truediv__ = _binary_operator(np.true_divide)

    __rtruediv__ = _binary_operator(np.true_divide, reflected=True)

    def __round__(self, ndigits=None):
        # as ndarray: round(x) of a 0-d value is a Python int (no derivative),
        # round(x, n) an array of the same dtype, piecewise constant
        if ndigits is None:
            return round(untraced(self))
        return np.round(self, ndigits)

    __pow__ = _binary_operator(np.power)

    __rpow__ = _binary_operator(np.power, reflected=True)

    def __matmul__(self, other):
        if type(other) in _STRUCT:
            return NotImplemented
        return dispatch(np.matmul, (self, other), None)

    def __rmatmul__(self, other):
        if type(other) in _STRUCT:
            return NotImplemented
        return dispatch(np.matmul, (other, self), None)

    def __pos__(self):
        return snapshot(self)  # a new array, as NumPy's +x



def snapshot(x):
    """A new traced object holding what ``x`` holds now (no view links): a
    copy as NumPy makes one, free here since the arrays are never written."""
    t = _new(Traced)
    t.value = x.value
    t.node = x.node
    t.tape = x.tape
    return t


def not_an_input(out, args):
    """``out``, or a snapshot of it if it is one of the traced ``args``
    (a composition that returned its argument): NumPy's result is a new
    array, and a write into it must not reach the argument."""
    if type(out) is Traced:
        for a in args:
            if a is out:
                return snapshot(out)
    return out


def array_function(func, args, kwargs):
    """``func(*args, **kwargs)`` on traced arguments, as NumPy's
    ``__array_function__`` protocol reaches it (after the special functions)."""
    d = DECOMPOSITIONS.get(func)
    if d is not None and top_tape(args, kwargs) is not None:
        # compositions handle their own where=
        return not_an_input(d(*args, **kwargs), args)
    if kwargs:
        where = kwargs.get("where", True)
        if where is not True:
            raise MissingRuleError(
                f"{op_name(func)} with where= is not differentiable by chainrules; "
                "mask the input instead, e.g. np.sum(np.where(mask, x, 0))")
    return dispatch(func, args, kwargs)


def astype(x, dtype):
    """``x.astype(dtype)`` between inexact dtypes, as a registered operation."""
    return x.astype(dtype)


astype._chainrules_op = True  # type: ignore[attr-defined]


def _init_struct():
    from .tangents import NoTangent, ZeroTangent

    _STRUCT.update((ZeroTangent, NoTangent))


_init_struct()
NOT_ARRAYS.add(Traced)  # it has NumPy's protocols, but its data is its value's
#: the primal types of an indexing result that may be a view (``writes.link_view``
#: links ndarrays only, through every level of tracing)
_MAY_BE_VIEWS = frozenset((np.ndarray, Traced))


def is_traced(x):
    return type(x) is Traced


def untraced(x):
    """The value of ``x`` with every level of tracing removed, without a copy
    (the library's own use: the result may be the primal array itself, which
    must not be written to). Users call ``stop_gradient``.

    Works on arrays, scalars and pytrees; plain values are returned as is.
    """
    if type(x) is Traced:
        while type(x) is Traced:
            x = x.value
        return x
    if isinstance(x, (list, tuple, dict)) or hasattr(x, "__dataclass_fields__"):
        from . import pytree

        return pytree.tree_map(untraced, x)
    return x
