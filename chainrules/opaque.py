"""Opaque steps of a staged recording: a function a plan cannot look
into (SciPy's LAPACK wrappers, which convert their arguments with
``np.asarray``; a fused region's program) called on the plain values and
recorded as one step, which a replay calls again with its own arrays."""

import functools

from .staging import Ref, Staged

__all__ = ["OpaqueNamespace", "WrappedNamespace", "opaque", "opaque_as"]


def _recorder_of(obj):
    t = type(obj)
    if t is Staged:
        return obj.rec
    if t is tuple or t is list:
        for o in obj:
            r = _recorder_of(o)
            if r is not None:
                return r
    elif t is dict:
        for o in obj.values():
            r = _recorder_of(o)
            if r is not None:
                return r
    return None


class WrappedNamespace:
    """A module whose functions are called through ``wrap(function)`` (made
    once per name); classes (exceptions) and other attributes are the
    module's own."""

    def __init__(self, module, wrap):
        self._module = module
        self._wrap = wrap
        self._wrapped = {}

    def __getattr__(self, name):
        w = self._wrapped.get(name)
        if w is not None:
            return w
        obj = getattr(self._module, name)
        if callable(obj) and not isinstance(obj, type):
            w = self._wrapped[name] = self._wrap(obj)
            return w
        return obj


def _as_opaque(fn):
    # named as the module's function (error messages name the op)
    @functools.wraps(fn)
    def w(*args, **kwargs):
        return opaque(fn, *args, **kwargs)

    return w


class OpaqueNamespace(WrappedNamespace):
    """A module's functions, each called through ``opaque``: the rule
    library reaches SciPy's LAPACK wrappers (which convert their arguments
    with ``np.asarray``) through one, so that a staged plan records each
    call as one step."""

    def __init__(self, module):
        super().__init__(module, _as_opaque)


def opaque(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, where staged values may be among the
    arguments (also inside tuples, lists and dicts): computed on their
    concrete values and recorded as one step, so that a plan calls ``fn``
    again with the replay's arrays. For the library's own pure functions of
    arrays whose NumPy calls need not be recorded one by one (a fused
    region's program; a LAPACK call through SciPy). Without staged values,
    plainly ``fn(*args, **kwargs)``."""
    return _opaque(fn, fn, args, kwargs)


def opaque_as(replay, now, *args, **kwargs):
    """``opaque``, computing the value with ``now`` and recording ``replay``
    (the same function of the same arguments, which may choose another way
    to compute it on replay: ``kernels.run`` for a fused region)."""
    return _opaque(replay, now, args, kwargs)


def _opaque(fn, now, args, kwargs):
    rec = _recorder_of(args) or _recorder_of(kwargs)
    if rec is None:
        return now(*args, **kwargs)
    if rec.tainted is not None:
        return now(*rec.template(args)[1], **rec.template(kwargs)[1])
    atpl, acon = rec.template(args)
    ktpl, kcon = rec.template(kwargs)
    value = now(*acon, **kcon)
    # Python numbers among the results (a flag, a rank) stay numbers, guarded
    guards = []
    out, otpl = rec.wrap(value, fn, guards)
    rec.steps.append(("call", fn, atpl, ktpl, otpl))
    for ref, v in guards:
        rec.guard("value", ref, v)
    if otpl is None:  # a result that is not an array: guarded as it is
        ref = Ref(rec.n)
        rec.n += 1
        rec.steps[-1] = ("call", fn, atpl, ktpl, ref)
        rec.guard("value", ref, value)
    return out
