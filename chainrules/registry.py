"""The rule registry: (operation, argument types) -> rule maker.

A *maker* is called with the ``NodeId`` of each positional argument
(``None`` for constants; a tuple of them for a list/tuple argument) followed
by the unwrapped arguments, and returns ``(output, rule)``; ``rule`` is
``None`` for an output without a derivative::

    @chainrules.register(my_op)
    def _(ids, x, y):
        out = my_op(x, y)
        return out, MyOpRule(ids[0], ids[1], x, y)

Dispatch is by multipledispatch on the primal types of the arguments (a
traced value counts as the type of the array it wraps), with the resolved
maker cached per (operation, type signature). A later registration for the
same signature replaces the earlier one, so user rules override built-ins.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import numpy as np
from multipledispatch import Dispatcher
from multipledispatch.variadic import Variadic

from .errors import MissingRuleError
from .rule import REPLAY_TYPES
from .rule import (MultiOutput, ReverseRule, dispatch_target,  # noqa: F401  (re-exported)
                   op_name)

__all__ = ["register", "rrule", "non_differentiable", "lookup", "op_name", "DISPATCHERS",
           "GENERIC_MAKERS",
           "registered_ops", "is_registered"]

DISPATCHERS: dict[Any, Dispatcher] = {}
_cache: dict[tuple[Any, tuple[type, ...]], Callable[..., Any]] = {}
# op -> maker, for ops registered only for (object, ...)
GENERIC_MAKERS: dict[Any, Callable[..., Any]] = {}

# what the registration decorators return unchanged: a maker (``register``) or
# a closure rule (``rrule``); and an operation (``non_differentiable``)
_Maker = TypeVar("_Maker", bound=Callable[..., Any])
_Op = TypeVar("_Op", bound=Callable[..., Any])


def _signature(types):
    return tuple(types) + (Variadic[object],)


class MadeByUser:
    """What a maker from outside the library (and a closure or replayed maker)
    returns, as ``(MadeByUser, None)``: the output, the rule, and, for a rule
    whose second order is found by replay, how it was made (``entry``:
    ``(rule, maker, ids, args, kwargs, out)``, else None). ``graph.record``
    unpacks it off the hot path: it marks the tape as holding user rules
    (whose results the sweeps verify) and keeps the replay entry."""

    __slots__ = ("out", "rule", "entry")

    def __init__(self, out, rule, entry):
        self.out = out
        self.rule = rule
        self.entry = entry


def user_maker(maker):
    """``maker`` returning its rules as ``MadeByUser`` (see there)."""

    def made_by_user(ids, *args, **kwargs):
        out, rule = maker(ids, *args, **kwargs)
        if rule is None:
            return out, None
        entry = (rule, maker, ids, args, kwargs, out) if type(rule) in REPLAY_TYPES else None
        return MadeByUser(out, rule, entry), None

    made_by_user.inner = maker
    made_by_user.spec = getattr(maker, "spec", None)
    return made_by_user


def register(op: Callable[..., Any], *types: Any) -> Callable[[_Maker], _Maker]:
    """Decorator: register a maker for ``op`` on leading argument ``types``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> cube = cr.primitive(lambda x: x ** 3)
    >>> class CubeRule(cr.ReverseRule):
    ...     def __init__(self, x_id, x):
    ...         self.x_id, self.x = x_id, x
    ...     def inputs(self):
    ...         return (self.x_id,)
    ...     def pullback(self, g):
    ...         return [(self.x_id, g * 3 * self.x ** 2)]
    >>> @cr.register(cube)
    ... def _(ids, x):
    ...     return x ** 3, CubeRule(ids[0], x)
    >>> cr.grad(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0]))
    array([ 3., 12.])
    """

    op = dispatch_target(op)

    def deco(maker):
        d = DISPATCHERS.get(op)
        if d is None:
            d = DISPATCHERS[op] = Dispatcher(op_name(op))
        # a maker from outside the library makes rules whose results the
        # sweeps verify, and may make rules whose second order is found by
        # replay; the library's own do neither (or say so themselves)
        library = (getattr(maker, "__module__", None) or "").startswith("chainrules.")
        d.add(_signature(types), maker if library else user_maker(maker))
        _cache.clear()
        GENERIC_MAKERS.clear()
        return maker

    return deco


#: op -> positions of arguments that the op's rule takes as sequences of
#: arrays (``concatenate``'s list of pieces), or ``ALL`` (closure rules): a
#: list holding traced values there reaches the rule as a list. Anywhere else
#: such a list is an array_like, and tracing turns it into one array first
#: (``chainrules.numpy.array``), as NumPy's own ``asarray`` would.
SEQUENCE_ARGS: dict[Any, Any] = {}
ALL = "all"


def accepts_sequences(op: Callable[..., Any], *positions: int) -> None:
    """Declare that ``op``'s rule handles lists of arrays at ``positions``
    (every position when none are given)."""
    SEQUENCE_ARGS[dispatch_target(op)] = ALL if not positions else frozenset(positions)


#: op -> a function computing it with NumPy calls that each have a rule: on
#: traced values the op runs as that composition (every step recorded and
#: differentiated by its own rule), like NumPy's own Python-level functions.
class _OpTable(dict):
    """A dict keyed by operations, each stored under its dispatch target
    (the ufunc under a wrapper of SciPy's array-API mode)."""

    def __setitem__(self, op, value):
        super().__setitem__(dispatch_target(op), value)

    def setdefault(self, op, value=None):
        return super().setdefault(dispatch_target(op), value)

    def __contains__(self, op):
        return super().__contains__(dispatch_target(op))


DECOMPOSITIONS = _OpTable()


def decompose(op):
    """Decorator: on traced arguments, ``op(*args, **kwargs)`` runs the
    decorated function instead. For operations that are compositions of
    differentiable ones (``np.linspace``, ``np.cov``, ``np.quantile``): no
    rule to write, every mode and order comes from the steps' rules."""
    def deco(fn):
        DECOMPOSITIONS[op] = fn
        return fn
    return deco


def registered_ops() -> list[Any]:
    """Every operation that has a registered rule."""
    return list(DISPATCHERS)


_builtin = None


def mark_builtins(since=None):
    """Remember the operations registered so far as the built-in library;
    with ``since`` (a ``registered_ops()`` taken earlier), add those
    registered after it: a rule family that ``import chainrules`` does not
    load (the SciPy ones that import slow SciPy subpackages) marks its own
    operations when it is imported."""
    global _builtin
    if since is None:
        _builtin = frozenset(DISPATCHERS)
    elif _builtin is not None:
        _builtin = _builtin | (frozenset(DISPATCHERS) - frozenset(since))
    # (imported while chainrules itself loads: the final snapshot has them)


def builtin_ops():
    """The operations registered by ``chainrules.rules`` (not by users)."""
    return list(_builtin if _builtin is not None else DISPATCHERS)


def is_registered(op: Callable[..., Any]) -> bool:
    return dispatch_target(op) in DISPATCHERS


def _generic_only(d):
    return len(d.funcs) == 1 and next(iter(d.funcs)) == _signature(())


def lookup(op: Callable[..., Any], types: tuple[type, ...]) -> Callable[..., Any]:
    """The maker for ``op`` applied to arguments of ``types`` (cached)."""
    m = GENERIC_MAKERS.get(op)
    if m is not None:
        return m
    key = (op, types)
    m = _cache.get(key)
    if m is not None:
        return m
    d = DISPATCHERS.get(op)
    if d is None and dispatch_target(op) is not op:
        return lookup(dispatch_target(op), types)
    m = None if d is None else d.dispatch(*types)
    if m is None:
        raise MissingRuleError(_missing_message(op, types))
    if _generic_only(d):
        GENERIC_MAKERS[op] = m
    _cache[key] = m
    return m


def _missing_message(op, types):
    name = op_name(op)
    tnames = ", ".join(t.__name__ for t in types)
    short = getattr(op, "__name__", "op")
    return (
        f"no differentiation rule for {name} with argument types ({tnames}).\n"
        f"Register one, for example:\n"
        f"    @chainrules.rrule({name})\n"
        f"    def _(*args):\n"
        f"        out = {short}(*args)\n"
        f"        def {short}_pullback(g):\n"
        f"            return (...one cotangent per argument...)\n"
        f"        return out, {short}_pullback\n"
        f"or mark it chainrules.non_differentiable({name}) if it has no derivative."
    )


# -- registration helpers -------------------------------------------------------
def _is_dispatchable(op):
    return (isinstance(op, np.ufunc) or getattr(op, "_chainrules_primitive", False)
            or hasattr(op, "_implementation") or getattr(op, "_chainrules_op", False))


def _check_dispatchable(op):
    if not _is_dispatchable(dispatch_target(op)):
        raise TypeError(
            f"{op_name(op)} is a plain Python function: calls to it on traced values "
            "run its body and never reach the registry. Decorate it with "
            "@chainrules.primitive first, then register its rule.")


def non_differentiable(op: _Op, *types: Any) -> _Op:
    """Mark ``op`` as having no derivative: it returns plain values and its
    arguments get ``NoTangent``. Returns ``op``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> bucket = cr.primitive(lambda x: np.floor(x * 4))
    >>> _ = cr.non_differentiable(bucket)
    >>> cr.grad(lambda x: np.sum(bucket(x) * x))(np.array([0.3, 0.6]))
    array([1., 2.])
    """
    _check_dispatchable(op)

    def nondiff_maker(ids, *args, **kwargs):
        return op(*args, **kwargs), None

    nondiff_maker._nondiff = True  # type: ignore[attr-defined]
    register(op, *types)(nondiff_maker)
    return op


class ClosureRule(ReverseRule):
    """A rule from a ChainRules-style closure: ``(out, pullback)``. Its
    second order (HVPs) is found by replay: the closure is run again on
    forward-traced arguments and its pullback differentiated
    (``chainrules.second_order``), not the user's whole function traced
    again."""

    __slots__ = ("op", "ids", "pb")

    def __init__(self, op, ids, pb):
        self.op = op
        self.ids = ids
        self.pb = pb

    @property
    def name(self):
        return f"rrule({op_name(self.op)})"

    def inputs(self):
        out = []
        for i in self.ids:
            if type(i) is tuple:
                out.extend(j for j in i if j is not None)
            elif i is not None:
                out.append(i)
        return tuple(out)

    def pullback(self, g):
        return self.pairs(self.pb(g))

    def pairs(self, res):
        """The pullback's result ``res`` (one cotangent per argument) as
        ``[(NodeId, cotangent), ...]`` in ``inputs()`` order, checked."""
        ids = self.ids
        if len(ids) == 1 and not isinstance(res, tuple):
            res = (res,)
        if not isinstance(res, (tuple, list)) or len(res) != len(ids):
            from .errors import RuleError

            raise RuleError(
                f"{self.name}: the pullback must return one cotangent per positional "
                f"argument ({len(ids)}), got {type(res).__name__}"
                + (f" of length {len(res)}" if isinstance(res, (tuple, list)) else ""))
        out = []
        for k, (i, c) in enumerate(zip(ids, res)):
            if type(i) is tuple:
                if not isinstance(c, (tuple, list)) and len(i) == 1:
                    c = (c,)
                if not isinstance(c, (tuple, list)) or len(c) != len(i):
                    from .errors import RuleError

                    raise RuleError(
                        f"{self.name}: argument {k} is a sequence of {len(i)} values, so "
                        "its cotangent must be a list or tuple of as many cotangents; got "
                        + (f"{len(c)}" if isinstance(c, (tuple, list)) else
                           type(c).__name__))
                out.extend((j, cj) for j, cj in zip(i, c) if j is not None)
            elif i is not None:
                out.append((i, c))
        return out


def rrule(op: Callable[..., Any], *types: Any) -> Callable[[_Maker], _Maker]:
    """Register a ChainRules-style closure rule for ``op``.

    The decorated function takes the primal arguments and returns
    ``(output, pullback)``; ``pullback(g)`` returns a tuple of one cotangent
    per positional argument (``NoTangent()`` for non-differentiable ones; a
    list of cotangents for a sequence argument; for an operation of one
    argument, the bare cotangent is accepted too)::

        @chainrules.rrule(my_op)
        def _(x, y):
            out = my_op(x, y)
            def my_op_pullback(g):
                return g * y, g * x
            return out, my_op_pullback

    Write the pullback with NumPy calls so that it can be differentiated
    again (``grad`` of ``grad``, and ``hvp``).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> logcosh = cr.primitive(lambda x: np.log(np.cosh(x)))
    >>> @cr.rrule(logcosh)
    ... def _(x):
    ...     y = np.log(np.cosh(x))
    ...     return y, lambda g: (g * np.tanh(x),)
    >>> np.round(cr.grad(lambda x: np.sum(logcosh(x)))(np.array([0.0, 1.0])), 6)
    array([0.      , 0.761594])
    """
    _check_dispatchable(op)

    def deco(fn):
        @functools.wraps(fn)
        def closure_maker(ids, *args, **kwargs):
            out, pb = fn(*args, **kwargs)
            if type(out) is tuple:  # several outputs: pullback gets a tuple
                out = MultiOutput(out)
            return out, ClosureRule(op, tuple(ids), pb)

        register(op, *types)(user_maker(closure_maker))
        accepts_sequences(op)  # the closure rule keeps lists of cotangents
        return fn

    return deco


def keywords_to_positions(op, args, kwargs):
    """``op``'s call arguments with every keyword that has a position moved
    to it (omitted positional parameters before it take their defaults);
    keyword-only arguments stay keywords. ``MissingRuleError`` when the
    call does not bind to ``op``'s signature."""
    import inspect

    try:
        sig = inspect.signature(op)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        raise MissingRuleError(
            f"{op_name(op)} was given a traced keyword argument that chainrules "
            "cannot place; pass it positionally") from None
    new_args, new_kwargs = [], {}
    for name, p in sig.parameters.items():
        if name not in bound.arguments:
            # an omitted positional parameter before a bound one: fill in its
            # default so that later arguments keep their positions
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                new_args.append(p.default)
            continue
        v = bound.arguments[name]
        if p.kind is p.VAR_POSITIONAL:
            new_args.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            new_kwargs.update(v)
        elif p.kind is p.KEYWORD_ONLY:
            new_kwargs[name] = v
        else:
            new_args.append(v)
    return tuple(new_args), new_kwargs
