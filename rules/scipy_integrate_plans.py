"""Staged derivatives of the user's functions in the scipy.integrate twins,
kept across solves: an ODE's right-hand side, called at every solver step,
and a quadrature's integrand, called at every quadrature point.

The sensitivity and adjoint integrations of rules/scipy_integrate.py call
a derivative of the user's right-hand side (its Jacobian rows, or a
``vjp``) at every solver step, and the derivatives' integrals of
rules/scipy_quad.py a ``vjp`` or a ``jvp`` of the integrand at every
point SciPy's quadrature samples, each with one signature: each is a
``cr.jit`` of that computation, so after two calls a step replays a plan
instead of tracing the user's function again. Recording that plan costs
as much as many replays, and a loss that is fitted calls the same
function in every solve, so the plans are kept across solves here, per
function, the structure the twin wrapped it in, the derivative and the
differentiated parameters. A solve is what a twin's rule integrates once
(an ``OdeSpec``; a ``QuadRule``'s integral): an object with ``plans``
(its own staged derivatives, a dict) and ``origin`` (``(the user's
function, a hashable of how the twin wrapped it)``, or None: staged for
that solve alone).

A loss usually passes a new function object to every solve (a closure
over the parameters, ``lambda y, t: rhs(y, t, p)``), so a plain Python
function is keyed by its code object (held weakly: it lives as long as
its module, or as the code made at run time) and by what it closes over
and its defaults (``_cell_key``): a closed-over value being differentiated
by its kind alone (the twins pass it to the user's function as an
argument, so a plan reads it as an input); a number, a string, a NumPy
scalar or an array of at most ``VALUE_BYTES`` by type and value (shape,
dtype and bytes); a tuple and a function by the keys of what they hold;
any other object by identity, held weakly (a kept plan is used only while
the object it was recorded for lives, so that a reused identity is not
taken for it; an object that cannot be referenced weakly, a list or a
dict, makes the function its own key, as below). The functions are not
held; the keys hold the values of their numbers and arrays, and an entry
the arrays it was recorded through: a plan may read those by reference,
so they are checked to still hold the key's bytes at each solve, and a
change records anew (an entry recorded through the arrays of more than
``_MAX_READ`` solves is staged per solve from then on). The globals are
keyed by the identity of the function's globals and checked as below.
Any other callable (a callable object, ``functools.partial``, a builtin)
is its own key, held weakly; a bound method is its function and its
object. Code objects are used by identity only (a key, and ``plain_cells``'
copy of a function with other cells for the forward solve), never read.

A plan does not see a global rebound between two solves (it reads the
arrays it closed over by reference, and folded what it computed from
constants alone). So the first derivative a new solve asks for, at its
first point, runs the plan *and* the derivative eagerly and compares them
(``jit._close``, the purity check ``cr.jit`` makes on a second call): a
difference drops the plans and records again (the eager result is the
one used), and after ``RETRIES`` differences the function gets a
new ``cr.jit`` per solve, as if nothing were shared (a replay that
differs from eager inside one solve still runs eagerly, ``cr.jit``'s own
check). A plan is verified at one point: a rebound value the function's
derivative does not depend on there goes unseen, as after
``cr.jit``'s one check.

The shared ``cr.jit`` records through the solve that calls it (the
solve, whose function holds its closure conversion, is set in a
context variable around each call), so a plan recorded or recorded again
in a later solve is that solve's. Replays hold no buffers, so threads
share plans. At most ``MAX_SHARED`` derivatives are kept (least recently
used first out), at most ``MAX_PER_FUNCTION`` of one function (its own
least recently used out first), and a function's plans go when its code
(or, for other callables, the callable) does.
"""

import contextvars
import threading
import types
import weakref
from collections import OrderedDict

import numpy as np

from chainrules.jit import _close, jit
from chainrules.pytree import flatten
from chainrules.tracing import Traced

__all__ = ["staged", "plain_cells", "MAX_SHARED", "MAX_PER_FUNCTION", "RETRIES", "shared_info",
           "clear_shared"]

#: how many staged derivatives (a user's function, a derivative kind, the
#: differentiated parameters) are kept across solves
MAX_SHARED = 32

#: how many of them one function's (one code's) keep: a function that
#: closes over a number taking a new value at every solve (an integrand
#: inside another's, over the outer point) replaces its own, not the plans
#: of other functions
MAX_PER_FUNCTION = 8

#: a function whose kept plan differed from eager at the start of this
#: many solves is staged per solve from then on
RETRIES = 2

#: a closed-over NumPy array of at most this many bytes is compared by value
#: (a new one made in every loss call reuses the plans); a larger one by
#: identity
VALUE_BYTES = 1 << 16

# the solve on whose behalf the shared cr.jit is called, and the arrays its
# function's key compared by value
_SPEC = contextvars.ContextVar("chainrules_integrate_solve")

_lock = threading.Lock()
_shared = OrderedDict()  # key -> _Shared, least recently used first
_owners = {}             # identity of an owner -> (weak reference, keys of its entries)
_dead = []               # weak references to owners that died while _lock was held


class _Shared:
    """One staged derivative shared by the solves of one user's function."""

    __slots__ = ("jitted", "solves", "differed", "per_solve", "held", "read")

    def __init__(self, make, pidx, name, held):
        read = self.read = []  # (array, its bytes) of the solves recorded through

        def fun(*args):
            # called to record (or eagerly): the plan may read this solve's
            # arrays by reference, so later solves check they kept their bytes
            spec, arrays = _SPEC.get()
            if arrays:
                with _lock:
                    seen = {id(a) for a, _ in read}
                    read.extend(ab for ab in arrays if id(ab[0]) not in seen)
                    if len(read) > _MAX_READ:
                        # recorded (or run eagerly) through the arrays of
                        # many solves: not worth sharing, nor holding them
                        self.per_solve = True
                        read.clear()
            return make(spec, pidx)(*args)

        fun.__name__ = fun.__qualname__ = name
        self.jitted = jit(fun, warn=False)
        self.solves = 0        # solves that have called it
        self.differed = 0      # solves whose first call found the plan stale
        self.per_solve = False  # kept plans keep differing: one cr.jit per solve
        self.held = held       # weak references to the objects its key names by identity


def _identity(func):
    """``(owner's identity, weak reference to the owner, the owner,
    structure key, objects held, arrays compared by value)`` of a
    user's function, or None
    when it cannot be referenced weakly (its plans are then not kept across
    solves). A plain Python function is owned by its code object, so that a
    new function object made in every loss call (a closure, a ``lambda``)
    finds the plans of the earlier ones (``_by_code``); any other callable
    is its own owner, with no structure. A bound method is the pair of its
    function and its object."""
    keyed = _by_code(func)
    if keyed is not None and keyed[2] is not None:
        code, structure, held, arrays = keyed
        return ("code", id(code)), weakref.ref(code, _died_cb), code, structure, held, arrays
    try:
        if type(func) is types.MethodType:
            return ((id(func.__func__), id(func.__self__)),
                    weakref.WeakMethod(func, _died_cb), func, None, (), ())
        return id(func), weakref.ref(func, _died_cb), func, None, (), ()
    except TypeError:
        return None


def _by_code(func):
    """``(code, structure key, held, arrays)`` of a plain Python function
    (``held``: weak references to the objects its key names by identity,
    None when one cannot be referenced weakly), or None for any other
    callable: two functions with the same code object
    and equal keys compute the same thing from their arguments, their
    closed-over traced values (which the twins pass as trailing arguments:
    plan inputs) and their globals (verified with each solve's first point,
    as for one function). The key is made of the function's globals (by
    identity), defaults and closure cells (``_cell_key``)."""
    if type(func) is not types.FunctionType:
        return None
    held, arrays = [], []
    kw = func.__kwdefaults__
    structure = (id(func.__globals__),
                 _cell_key(func.__defaults__, held, arrays, _DEPTH),
                 None if kw is None else tuple((k, _cell_key(v, held, arrays, _DEPTH))
                                               for k, v in sorted(kw.items())),
                 tuple(_cell_key(_contents(c), held, arrays, _DEPTH)
                       for c in func.__closure__ or ()))
    try:
        refs = tuple(weakref.ref(o) for o in held)
    except TypeError:  # a list, a dict: the function is its own key
        refs = None
    return func.__code__, structure, refs, tuple(arrays)


_EMPTY = object()  # the contents of a cell not yet assigned
_DEPTH = 3         # how deep tuples and functions in cells are keyed by structure
_MAX_READ = 64     # arrays an entry checks at each solve before it stops being shared


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _cell_key(obj, held, arrays, depth):
    """The key of one closed-over value: a traced value is a plan input (the
    twins convert it to an argument); a number, a string or a NumPy array
    of at most ``VALUE_BYTES`` its type and value (an array's shape, dtype
    and bytes: the plan may have read it by reference, so the arrays of the
    functions it was recorded with are checked to still hold those bytes,
    ``arrays``); a tuple and a function (to ``_DEPTH`` levels) their
    elements' keys; any other object its identity, the
    object listed in ``held`` (its entry is used only while the object it
    was made for lives: an identity is not reused while its object lives)."""
    t = type(obj)
    if t is Traced:
        return ("traced",)
    if obj is _EMPTY:
        return ("empty",)
    if obj is None or t in (bool, int, str, bytes):
        return (t, obj)
    if t in (float, complex):
        return (t, repr(obj))  # tells -0.0 from 0.0
    if isinstance(obj, np.generic) and obj.dtype.kind != "O":
        return ("scalar", obj.dtype.str, obj.tobytes())
    if t is np.ndarray and obj.dtype.kind != "O" and obj.nbytes <= VALUE_BYTES:
        data = obj.tobytes()
        arrays.append((obj, data))
        return ("array", obj.shape, obj.dtype.str, data)
    if depth > 0:
        if t is tuple:
            return ("tuple",) + tuple(_cell_key(o, held, arrays, depth - 1) for o in obj)
        if t is types.FunctionType:
            held.append(obj.__code__)
            kw = obj.__kwdefaults__
            return ("function", id(obj.__code__), id(obj.__globals__),
                    _cell_key(obj.__defaults__, held, arrays, depth - 1),
                    None if kw is None else tuple(
                        (k, _cell_key(v, held, arrays, depth - 1)) for k, v in sorted(kw.items())),
                    tuple(_cell_key(_contents(c), held, arrays, depth - 1)
                          for c in obj.__closure__ or ()))
    held.append(obj)
    return ("id", id(obj))


def _died_cb(ref):
    # a weak reference's callback may run while this module holds its lock
    # (an evicted plan dropping the last reference to a function): the
    # entries are then dropped at the next lookup
    if _lock.acquire(blocking=False):
        try:
            _drop_ref(ref)
        finally:
            _lock.release()
    else:
        _dead.append(ref)


def _drop_ref(ref):
    for ident, (r, keys) in list(_owners.items()):
        if r is ref:
            del _owners[ident]
            for k in keys:
                _shared.pop(k, None)


def _same_owner(ref, owner):
    live = ref()
    return live == owner if type(owner) is types.MethodType else live is owner


def _lookup(spec, kind, pidx, make):
    """``(shared entry, how many solves have used it)`` for this solve's
    derivative, or None (not shared)."""
    func, detail = spec.origin
    ident = _identity(func)
    if ident is None:
        return None
    ident, ref, target, structure, held, arrays = ident
    key = (ident, structure, detail, kind, pidx)
    with _lock:
        while _dead:
            _drop_ref(_dead.pop())
        owner = _owners.get(ident)
        if owner is not None and not _same_owner(owner[0], target):
            for k in owner[1]:  # a dead owner's identity, taken by another
                _shared.pop(k, None)
            owner = None
        if owner is None:
            owner = _owners[ident] = (ref, set())
        entry = _shared.get(key)
        if entry is not None and not all(
                r() is h() for r, h in zip(entry.held, held)):
            # an object named by identity died and its identity was reused
            del _shared[key]
            owner[1].discard(key)
            entry = None
        if entry is None:
            if len(owner[1]) >= MAX_PER_FUNCTION:
                # (its least recently used entry: the first in _shared's order)
                for k in _shared:
                    if k in owner[1]:
                        del _shared[k]
                        owner[1].discard(k)
                        break
            entry = _shared[key] = _Shared(make, pidx, kind, held)
            owner[1].add(key)
            while len(_shared) > MAX_SHARED:
                old, _ = _shared.popitem(last=False)
                o = _owners.get(old[0])
                if o is not None:
                    o[1].discard(old)
                    if not o[1]:
                        del _owners[old[0]]
        else:
            _shared.move_to_end(key)
            if any(a.tobytes() != b for a, b in entry.read):
                # an array a plan was recorded with changed in place since:
                # the plan may read it, so record anew
                entry.jitted.clear_cache()
                entry.read.clear()
        entry.solves += 1
        return entry, entry.solves, arrays


def staged(spec, key, make):
    """``make(spec, pidx)`` (the derivative of the user's function that a
    solver calls at each of its points, a function of plain values) staged
    for this solve ``spec``, kept in ``spec.plans[key]`` (``key``: the
    derivative's kind and ``pidx``, a hashable that describes it in the
    solve's ``origin``): a ``cr.jit`` shared with the earlier solves of
    the same function, verified at this solve's first call, or one of this
    solve's own when the function is not shared."""
    fn = spec.plans.get(key)
    if fn is not None:
        return fn
    kind, pidx = key
    found = None if spec.origin is None else _lookup(spec, kind, pidx, make)
    if found is None or found[0].per_solve:
        fn = spec.plans[key] = jit(make(spec, pidx), warn=False)
        return fn
    entry, solves, arrays = found
    jitted = entry.jitted
    set_spec, reset_spec = _SPEC.set, _SPEC.reset
    current = (spec, arrays)

    def call(*args):
        token = set_spec(current)
        try:
            return jitted(*args)
        finally:
            reset_spec(token)

    if solves == 1:
        spec.plans[key] = call
        return call

    def first_call(*args):
        # this solve's first point: the kept plan against an eager evaluation
        out = call(*args)
        eager = make(spec, pidx)(*args)
        la, ta = flatten(out)
        lb, tb = flatten(eager)
        if ta == tb and len(la) == len(lb) and all(_close(a, b) for a, b in zip(la, lb)):
            spec.plans[key] = call
            return out
        jitted.clear_cache()
        with _lock:
            entry.differed += 1
            if entry.differed >= RETRIES:
                entry.per_solve = True
        spec.plans[key] = jit(make(spec, pidx), warn=False) if entry.per_solve else call
        return eager

    spec.plans[key] = first_call
    return first_call


def plain_cells(func, captured):
    """For a twin's solve on plain values (an ODE's forward solve, the
    twins' ``OdeSpec.plain``; a quadrature's value): a function ``(*args,
    *values)`` that runs a copy of ``func`` on ``args`` whose closure cells
    holding the ``captured`` traced values hold ``values`` instead (cheaper
    than the closure conversion's capture at every step), or None when
    ``func`` is not a plain function or a captured value is not in one of
    its cells (a global, an element of a list): the conversion is then
    used. A result still traced (a traced value it did not use at the
    initial point) makes the solve fall back to the conversion, which
    names it."""
    cells = getattr(func, "__closure__", None)
    if type(func) is not types.FunctionType or not cells:
        return None
    where = []
    for c in captured:
        hits = []
        for i, cell in enumerate(cells):
            try:
                if cell.cell_contents is c:
                    hits.append(i)
            except ValueError:  # a cell not yet assigned
                pass
        if not hits:
            return None
        where.append(hits)
    n = len(captured)
    code, glob, name, defaults, kw = (func.__code__, func.__globals__, func.__name__,
                                      func.__defaults__, func.__kwdefaults__)
    last = [None, None]  # the values of the last call and the copy made for them

    def plain(*args):
        values = args[len(args) - n:]
        if last[0] is None or any(v is not w for v, w in zip(values, last[0])):
            new = list(cells)
            for hits, v in zip(where, values):
                cell = types.CellType(v)
                for i in hits:
                    new[i] = cell
            copy = types.FunctionType(code, glob, name, defaults, tuple(new))
            copy.__kwdefaults__ = kw
            last[:] = [values, copy]
        return last[1](*args[:len(args) - n])

    return plain


def shared_info():
    """``{"entries", "functions"}``: the staged derivatives kept across
    solves and the user's functions they belong to."""
    with _lock:
        return {"entries": len(_shared), "functions": len(_owners)}


def clear_shared():
    """Forget every staged derivative kept across solves."""
    with _lock:
        _shared.clear()
        _owners.clear()
        _dead.clear()
