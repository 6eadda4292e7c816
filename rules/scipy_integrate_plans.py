"""Staged derivatives of an ODE's right-hand side, kept across solves.

The sensitivity and adjoint integrations of rules/scipy_integrate.py call
a derivative of the user's right-hand side (its Jacobian rows, or a
``vjp``) at every solver step, with one signature: each is a ``cr.jit``
of that computation, so after two calls a step replays a plan instead of
tracing the right-hand side again. Recording that plan costs as much as
many replays, and a loss that is fitted calls the same right-hand side in
every solve, so the plans are kept across solves here, per right-hand
side: the user's function (held weakly), the structure the twin wrapped
it in, the derivative and the differentiated parameters.

A plan does not see a global rebound between two solves (it reads the
arrays it closed over by reference, and folded what it computed from
constants alone). So the first derivative a new solve asks for, at its
first point, runs the plan *and* the derivative eagerly and compares them
(``jit._close``, the purity check ``cr.jit`` makes on a second call): a
difference drops the plans and records again (the eager result is the
one used), and after ``RETRIES`` differences the right-hand side gets a
new ``cr.jit`` per solve, as if nothing were shared (a replay that
differs from eager inside one solve still runs eagerly, ``cr.jit``'s own
check). A plan is verified at one point: a rebound value the right-hand
side's derivative does not depend on there goes unseen, as after
``cr.jit``'s one check.

The shared ``cr.jit`` records through the solve that calls it (the
solve's right-hand side, with its closure conversion, is set in a
context variable around each call), so a plan recorded or recorded again
in a later solve is that solve's. Replays hold no buffers, so threads
share plans. At most ``MAX_SHARED`` derivatives are kept (least recently
used first out), and a function's plans go when the function does.
"""

import contextvars
import threading
import types
import weakref
from collections import OrderedDict

from chainrules.jit import _close, jit
from chainrules.pytree import flatten

__all__ = ["staged", "MAX_SHARED", "RETRIES", "shared_info", "clear_shared"]

#: how many staged derivatives (a right-hand side, a derivative kind, the
#: differentiated parameters) are kept across solves
MAX_SHARED = 32

#: a right-hand side whose kept plan differed from eager at the start of
#: this many solves is staged per solve from then on
RETRIES = 2

# the solve (its OdeSpec) on whose behalf the shared cr.jit is called
_SPEC = contextvars.ContextVar("chainrules_ode_spec")

_lock = threading.Lock()
_shared = OrderedDict()  # key -> _Shared, least recently used first
_owners = {}             # identity of a function -> (weak reference, keys of its entries)
_dead = []               # identities of functions that died while _lock was held


class _Shared:
    """One staged derivative shared by the solves of one right-hand side."""

    __slots__ = ("jitted", "solves", "differed", "per_solve")

    def __init__(self, make, pidx, name):
        def fun(y, s, params, x):
            return make(_SPEC.get(), pidx)(y, s, params, x)

        fun.__name__ = fun.__qualname__ = name
        self.jitted = jit(fun, warn=False)
        self.solves = 0        # solves that have called it
        self.differed = 0      # solves whose first call found the plan stale
        self.per_solve = False  # kept plans keep differing: one cr.jit per solve


def _identity(func):
    """``(identity, weak reference)`` of a right-hand side, or None when it
    cannot be referenced weakly (its plans are then not kept across solves).
    A bound method is the pair of its function and its object."""
    try:
        if type(func) is types.MethodType:
            return (id(func.__func__), id(func.__self__)), weakref.WeakMethod(func, _died_cb)
        return id(func), weakref.ref(func, _died_cb)
    except TypeError:
        return None


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


def _same_function(ref, func):
    live = ref()
    return live == func if type(func) is types.MethodType else live is func


def _lookup(spec, kind, pidx, make):
    """``(shared entry, how many solves have used it)`` for this solve's
    derivative, or None (not shared)."""
    func, detail = spec.origin
    ident = _identity(func)
    if ident is None:
        return None
    ident, ref = ident
    key = (ident, detail, spec.tfirst, kind, pidx)
    with _lock:
        while _dead:
            _drop_ref(_dead.pop())
        owner = _owners.get(ident)
        if owner is not None and not _same_function(owner[0], func):
            for k in owner[1]:  # a dead function's identity, taken by another
                _shared.pop(k, None)
            owner = None
        if owner is None:
            owner = _owners[ident] = (ref, set())
        entry = _shared.get(key)
        if entry is None:
            entry = _shared[key] = _Shared(make, pidx, f"rhs_{kind}")
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
        entry.solves += 1
        return entry, entry.solves


def staged(spec, key, make):
    """``make(spec, pidx)`` (a function ``(y, s, params, x)``) staged for
    this solve, kept in ``spec.plans[key]`` (``key``: the derivative's kind
    and ``pidx``): a ``cr.jit`` shared with the earlier solves of the same
    right-hand side, verified at this solve's first call, or one of this
    solve's own when the right-hand side is not shared."""
    fn = spec.plans.get(key)
    if fn is not None:
        return fn
    kind, pidx = key
    found = None if spec.origin is None else _lookup(spec, kind, pidx, make)
    if found is None or found[0].per_solve:
        fn = spec.plans[key] = jit(make(spec, pidx), warn=False)
        return fn
    entry, solves = found
    jitted = entry.jitted
    set_spec, reset_spec = _SPEC.set, _SPEC.reset

    def call(*args):
        token = set_spec(spec)
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


def shared_info():
    """``{"entries", "functions"}``: the staged derivatives kept across
    solves and the right-hand sides they belong to."""
    with _lock:
        return {"entries": len(_shared), "functions": len(_owners)}


def clear_shared():
    """Forget every staged derivative kept across solves."""
    with _lock:
        _shared.clear()
        _owners.clear()
        _dead.clear()
