"""``cr.jit``: record a function once per signature, replay it as a plan.

The first call of a signature runs the function on staged values
(``chainrules.staging``), which computes the answer as an eager call does
and records every NumPy call made on them: the function's own, and those
of the rules and sweeps of any transformation inside it. The recording
becomes a ``Plan`` (``chainrules.plan``): generated straight-line code. The
second call replays the plan and also runs the function eagerly, and
compares: a difference (random draws inside the function, a global that
changed) means the function is not staged. From the third call on, the plan
alone runs. Where a guard of the plan fails (Python control flow that went
another way), another variant is recorded, up to ``max_variants``; past
that, and for a recording that cannot be replayed, the function runs
eagerly after one ``StagingWarning`` (a ``StagingError`` with
``strict=True``).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections import OrderedDict
from typing import Any, Callable, Generic, ParamSpec, Sequence, TypeVar, overload

import numpy as np

from .anomaly import anomaly_mode
from .errors import StagingError, StagingWarning
from .fp_warnings import WarningMet
from .fused_sweeps import recording
from . import elementwise_expr as ee
from . import kernels
from . import kernel_grid, kernel_scatter
from .plan import GuardFailed, Plan
from .plan_join import join_products
from .plan_batch import batch_products
from .plan_buffers import keep_buffers
from .plan_regions import absorb_stages
from .pytree import flatten, unflatten
from .staging import Recorder, Ref, Staged

__all__ = ["jit", "Jitted"]

P = ParamSpec("P")
R = TypeVar("R")

# NumPy's ufuncs are typed with overloads (scalar first, then arrays); a type
# checker that gives a ParamSpec the first overload only (mypy) would reject
# ``jit(np.sin)(x)`` for an array ``x``, so a ufunc keeps no signature here.

#: how many signatures one jitted function keeps plans for (least recently
#: used first out)
CACHE_SIZE = 64

_PY_NUMBERS = (bool, int, float, complex)

_anomaly_mode = anomaly_mode.get


def _is_region(fn):
    return fn is kernels.run


def _is_kept_region(step):
    """Whether a step runs a region's program through ``kernels.run``,
    or with its scatter or grid (``kernel_scatter.run``, ``kernel_grid.run``)
    (``plan_buffers``)."""
    if len(step) != 5 or step[3]:
        return False
    a = step[2]  # (program, values, threads[, scatter])
    if step[1] is kernels.run:
        n = 3
    elif (step[1] is kernel_scatter.run and type(a[3]) is kernel_scatter.Scatter
          or step[1] is kernel_grid.run and type(a[3]) is kernel_grid.Grid):
        n = 4
    else:
        return False
    return len(a) == n and isinstance(a[0], ee.Program) and type(a[1]) is dict


def _leaf_key(x):
    """``(kind, key)`` of an argument leaf: ``"d"`` dynamic (an ndarray, a
    NumPy scalar, a Python number), ``"s"`` static (hashable: part of the
    key), ``"e"`` a value that is not staged (a traced value of an
    enclosing transformation, a dask array, an unhashable object)."""
    t = type(x)
    if t is np.ndarray:
        return "d", ("a", x.shape, x.dtype.str)
    if t in _PY_NUMBERS:
        return "d", ("p", t)
    if isinstance(x, np.generic):
        return "d", ("n", x.dtype.str)
    if hasattr(t, "__array_function__") or hasattr(t, "__array_ufunc__") \
            or isinstance(x, np.ndarray):
        return "e", None
    try:
        hash(x)
    except TypeError:
        return "e", None
    return "s", (t, x)


_ndarray = np.ndarray
_generic = np.generic


def _quick_key(args):
    """``(signature, dynamic leaves)`` of a call whose arguments are ndarrays,
    NumPy scalars, Python floats and ints, ``None``, and tuples and lists of
    them (the common call, keyed without flattening a pytree), or ``None``.
    The leaves are in ``pytree.flatten``'s order, as a plan takes them."""
    key, leaves = [], []
    if not _quick(args, key, leaves):
        return None
    return tuple(key), leaves


def _quick(seq, key, leaves):
    for a in seq:
        t = type(a)
        if t is _ndarray:
            key.append((a.shape, a.dtype))
            leaves.append(a)
        elif t is float or t is int:
            key.append(t)
            leaves.append(a)
        elif isinstance(a, _generic):  # a NumPy scalar (a solver's time, a parameter)
            key.append(("n", a.dtype))
            leaves.append(a)
        elif a is None:
            key.append(None)
        elif t is tuple or t is list:
            key.append((t, len(a)))
            if not _quick(a, key, leaves):
                return False
        else:
            return False
    return True


#: NumPy scalar types whose dtype the type fixes
_SCALAR_TYPES = frozenset((np.float64, np.float32, np.float16, np.longdouble, np.complex128,
                           np.complex64, np.clongdouble, np.int64, np.int32, np.int16, np.int8,
                           np.uint64, np.uint32, np.uint16, np.uint8, np.bool_))


def _refill(args):
    """``rebuild`` (``Jitted._split``) of a call ``_quick_key`` keys: the
    arguments with their leaves, in ``_quick``'s order, replaced by the
    values given."""

    def rebuild(values):
        it = iter(values)
        return _refilled(args, it), {}

    return rebuild


def _refilled(seq, it):
    out = []
    for a in seq:
        t = type(a)
        if t is tuple or t is list:
            out.append(t(_refilled(a, it)) if t is list else _refilled(a, it))
        elif a is None:
            out.append(None)
        else:
            out.append(next(it))
    return tuple(out)


def _hot_kinds(args):
    """Per positional argument, what a call must pass for the plan of this
    one to serve it without a key: an array's ``(shape, dtype)``, a number's
    type (a Python float or int, a NumPy scalar of a fixed dtype); ``None``
    for other arguments (containers, ``None``, ...)."""
    kinds = []
    for a in args:
        t = type(a)
        if t is _ndarray:
            kinds.append((a.shape, a.dtype))
        elif t is float or t is int or t in _SCALAR_TYPES:
            kinds.append(t)
        else:
            return None
    return tuple(kinds)


def _close(a, b):
    """Whether an eager and a staged result agree: the same structure, and
    values equal up to the rounding of another order of operations."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is _ndarray and a.shape == b.shape and a.dtype == b.dtype
                     or ta in _SCALAR_TYPES) and (a == b).all():
        return True  # the usual answer, at once: equal, with no NaN
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind not in "fc":
            return np.array_equal(a, b)
        if (a == b).all():  # the usual answer: equal, with no NaN
            return True
        eps = np.finfo(a.dtype).eps
        scale = np.max(np.abs(b), initial=0.0) if b.size else 0.0
        with np.errstate(invalid="ignore"):
            return bool(np.allclose(a, b, rtol=256 * eps, atol=256 * eps * scale,
                                    equal_nan=True))
    if ta is not tb and not (ta in _PY_NUMBERS and tb in _PY_NUMBERS):
        return False
    if ta in (float, complex):
        return _close(np.asarray(a), np.asarray(b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare
        return a is b


class _Entry:
    __slots__ = ("variants", "eager")

    def __init__(self):
        self.variants = []
        self.eager = None  # the reason the signature runs eagerly


class Jitted(Generic[P, R]):
    """A function staged by ``cr.jit``: call it as the function (the same
    parameters and result type as the function it stages)."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), strict=False,
                 max_variants=8, cache_size=CACHE_SIZE, warn=True):
        if not callable(fun):
            raise TypeError(f"cr.jit needs a callable, not {type(fun).__name__}")
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        self.fun = fun
        self.static_argnums = frozenset(static_argnums)
        self.static_argnames = frozenset(static_argnames)
        self.strict = strict
        self.warn = warn  # False: the library's own plans fall back quietly
        self.max_variants = max_variants
        self.cache_size = cache_size
        self._cache = OrderedDict()
        self._recent = None  # the entry the last replay moved to the LRU's end
        self._hot = None  # (plan, argument kinds) of the last replay (_hot_kinds)
        self._lock = threading.Lock()
        self._warned = set()
        functools.update_wrapper(self, fun)

    # -- the signature -----------------------------------------------------------
    def _split(self, args, kwargs):
        """``(key, dynamic values, rebuild)`` or ``None`` when the call is not
        staged (``rebuild(values)`` gives back ``(args, kwargs)`` with the
        dynamic leaves replaced)."""
        n = len(args)
        static = [None] * n
        dyn_args = list(args)
        for i in self.static_argnums:
            j = i if i >= 0 else n + i
            if 0 <= j < n:
                static[j] = args[j]
                dyn_args[j] = None
        static_kw = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        try:
            skey = (tuple(static), tuple(sorted(static_kw.items())))
            hash(skey)
        except TypeError:
            raise TypeError("cr.jit: a static argument must be hashable "
                            "(static_argnums / static_argnames)") from None
        quick = None if kwargs or self.static_argnums else _quick_key(args)
        leaves, tree = flatten((dyn_args, dyn_kw))
        keys = []
        dyn_pos = []
        for i, x in enumerate(leaves):
            kind, k = _leaf_key(x)
            if kind == "e":
                return None
            keys.append(k)
            if kind == "d":
                dyn_pos.append(i)
        key = (tree, tuple(keys), skey) if quick is None else quick[0]

        def rebuild(values):
            lv = list(leaves)
            for i, v in zip(dyn_pos, values):
                lv[i] = v
            a, kw = unflatten(tree, lv)
            for j, s in enumerate(static):
                if s is not None or j in self.static_argnums or (j - n) in self.static_argnums:
                    a[j] = args[j]
            kw.update(static_kw)
            return tuple(a), kw

        return key, [leaves[i] for i in dyn_pos], rebuild

    # -- calls ---------------------------------------------------------------------
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if _anomaly_mode():
            # anomaly mode checks each operation as it runs, naming the op
            # and the user's line: eager calls do that
            return self.fun(*args, **kwargs)
        hot = self._hot
        if hot is not None and not kwargs and len(args) == len(hot[1]):
            # the plan the last call replayed, for arguments of the same
            # kinds (arrays of its shapes and dtypes, numbers of its types):
            # compared, not hashed
            for a, k in zip(args, hot[1]):
                if type(a) is _ndarray:
                    if type(k) is not tuple or a.dtype is not k[1] or a.shape != k[0]:
                        break
                elif type(a) is not k:
                    break
            else:
                try:
                    return hot[0].run(*args)
                except GuardFailed:
                    pass
                except WarningMet:
                    return self.fun(*args, **kwargs)
        if not kwargs and not self.static_argnums:
            quick = _quick_key(args)
            if quick is not None:
                # the common call (arrays, numbers, None, in tuples and lists,
                # positionally) of a checked plan: its first variant runs
                # directly
                key, leaves = quick
                entry = self._cache.get(key)
                if entry is not None and entry.variants:
                    plan = entry.variants[0]
                    if plan.checked:
                        try:
                            out = plan.run(*leaves)
                        except GuardFailed:
                            pass
                        except WarningMet:
                            return self.fun(*args, **kwargs)
                        else:
                            if entry is not self._recent:  # (the LRU order)
                                self._recent = entry
                                try:
                                    self._cache.move_to_end(key)
                                except KeyError:  # evicted by another thread meanwhile
                                    pass
                            kinds = _hot_kinds(args)
                            self._hot = None if kinds is None else (plan, kinds)
                            return out
            if quick is not None:  # (a new signature, or a plan not checked yet)
                return self._planned(quick[0], quick[1], _refill(args), args, kwargs)
        split = self._split(args, kwargs)
        if split is None:
            return self.fun(*args, **kwargs)
        key, values, rebuild = split
        return self._planned(key, values, rebuild, args, kwargs)

    def _planned(self, key, values, rebuild, args, kwargs):
        """The call of a signature whose first variant is not checked (or
        that has none, or that runs eagerly)."""
        with self._lock:
            self._recent = self._hot = None
            entry = self._cache.get(key)
            if entry is None:
                entry = self._cache[key] = _Entry()
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
        if entry.eager is not None:
            return self.fun(*args, **kwargs)
        failed = None
        for plan in list(entry.variants):
            try:
                out = plan(*values)
            except GuardFailed as e:
                failed = e
                continue
            except WarningMet:
                return self.fun(*args, **kwargs)
            if not plan.checked:
                return self._check(entry, plan, out, args, kwargs)
            return out
        if len(entry.variants) >= self.max_variants:
            return self._give_up(entry, f"its guards keep failing (the guard at "
                                        f"{failed.line} took another value in "
                                        f"{self.max_variants} recorded variants)",
                                 args, kwargs)
        return self._record(entry, values, rebuild, args, kwargs)

    def _record(self, entry, values, rebuild, args, kwargs):
        rec = Recorder()
        staged = [rec.new(v, is_input=True) for v in values]
        a, kw = rebuild(staged)
        try:
            with recording():
                out = self.fun(*a, **kw)
        except Exception as e:  # noqa: BLE001 - decided by the eager call below
            # an error of the eager call is the user's: it is raised as it
            # is; one that only the recording meets makes the signature eager
            result = self.fun(*args, **kwargs)
            self._give_up(entry, f"recording it raised {type(e).__name__}: {e}", None, None)
            return result
        leaves, tree = flatten(out)
        tpl = []
        concrete = []
        for x in leaves:
            if type(x) is Staged:
                if x.rec is not rec:
                    rec.taint("a result is a staged value of another recording")
                tpl.append(Ref(x.i))
                concrete.append(x.value)
            elif isinstance(x, np.ndarray):
                if type(x) is not np.ndarray:
                    rec.taint(f"a result is of type {type(x).__name__}")
                tpl.append(x)
                concrete.append(x.copy())
            else:
                if hasattr(type(x), "__array_function__") and not isinstance(x, np.generic):
                    rec.taint(f"a result is of type {type(x).__name__}")
                tpl.append(x)
                concrete.append(x)
        result = unflatten(tree, concrete)
        if rec.tainted is not None:
            self._give_up(entry, rec.tainted, None, None)
            return result
        meta = rec.meta

        # the regions' passes, a stage each (run over the plan's replays):
        # sums of matrix products become one product (plan_join), and
        # products sharing a right operand one product (plan_batch);
        # fused regions take in the elementwise calls that feed them alone
        def products(steps, outputs):
            return batch_products(join_products(steps, outputs, meta), outputs, meta)

        def kept(steps, inputs, outputs):
            # large values no result reaches are computed into arrays the
            # plan keeps between its replays (plan_buffers)
            return keep_buffers(steps, inputs, outputs, meta, _is_kept_region)

        plan = Plan(rec.steps, [s.i for s in staged], tpl, tree, name=_plan_name(self.fun),
                    scalars=rec.scalars, prepare=lambda: (products, *absorb_stages(meta, _is_region)),
                    finish=kept)
        with self._lock:
            entry.variants.insert(0, plan)
        return result

    def _check(self, entry, plan, staged_out, args, kwargs):
        eager_out = self.fun(*args, **kwargs)
        la, ta = flatten(staged_out)
        lb, tb = flatten(eager_out)
        same = ta == tb and len(la) == len(lb) and all(_close(x, y) for x, y in zip(la, lb))
        if not same:
            with self._lock:
                if plan in entry.variants:
                    entry.variants.remove(plan)
            self._give_up(entry, "its replay differed from an eager call (random numbers "
                                 "drawn inside the function, a global or closed-over value "
                                 "that was rebound or computed from outside its arguments, "
                                 "the time, ...)", None, None)
            return eager_out
        plan.checked = True
        return staged_out

    def _give_up(self, entry, reason, args, kwargs):
        msg = (f"cr.jit: {_plan_name(self.fun)} is not staged: {reason}; it runs eagerly "
               "(each call traces it again)")
        if self.strict:
            raise StagingError(msg)
        self._hot = None
        entry.eager = reason
        if self.warn and reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(msg, StagingWarning, stacklevel=5)
        if args is None:
            return None
        return self.fun(*args, **kwargs)

    # -- looking at plans ------------------------------------------------------------
    def plan(self, *args: P.args, **kwargs: P.kwargs) -> Plan | None:
        """The plan of this signature (recorded now if there is none yet):
        ``print(f.plan(x))`` shows its generated code; ``None`` when the
        signature runs eagerly."""
        split = self._split(args, kwargs)
        if split is None:
            return None
        key, values, rebuild = split
        with self._lock:
            entry = self._cache.get(key)
        if entry is None or not entry.variants and entry.eager is None:
            self(*args, **kwargs)
            with self._lock:
                entry = self._cache.get(key)
        if entry is None or entry.eager is not None or not entry.variants:
            return None
        return entry.variants[0]

    def cache_info(self) -> dict[str, int]:
        """``{"signatures", "plans", "eager"}``: how many signatures are
        cached, how many plans (variants) they hold, how many run eagerly."""
        with self._lock:
            entries = list(self._cache.values())
        return {"signatures": len(entries),
                "plans": sum(len(e.variants) for e in entries),
                "eager": sum(e.eager is not None for e in entries)}

    def eager_reasons(self) -> list[str]:
        """Why the signatures that run eagerly do (one string each)."""
        with self._lock:
            return [e.eager for e in self._cache.values() if e.eager is not None]

    def clear_cache(self) -> None:
        with self._lock:
            self._recent = self._hot = None
            self._cache.clear()


def _plan_name(fun):
    name = getattr(fun, "__name__", None) or type(fun).__name__
    return name if name.isidentifier() else "plan"


@overload
def jit(fun: np.ufunc, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), strict: bool = False,
        max_variants: int = 8, cache_size: int = CACHE_SIZE, warn: bool = True
        ) -> Jitted[..., Any]: ...


@overload
def jit(fun: Callable[P, R], *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), strict: bool = False,
        max_variants: int = 8, cache_size: int = CACHE_SIZE, warn: bool = True
        ) -> Jitted[P, R]: ...


@overload
def jit(fun: None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), strict: bool = False,
        max_variants: int = 8, cache_size: int = CACHE_SIZE, warn: bool = True
        ) -> Callable[[Callable[P, R]], Jitted[P, R]]: ...


def jit(fun: Callable[P, R] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), strict: bool = False,
        max_variants: int = 8, cache_size: int = CACHE_SIZE, warn: bool = True) -> Any:
    """Stage ``fun``: record it once per signature, replay the recording.

    ``fun`` is any function of arrays, NumPy scalars, Python numbers and
    pytrees of them, including a transformation (``cr.jit(cr.value_and_grad(
    loss))``, ``cr.jit(lambda x, v: cr.hvp(f, x, v))``). The signature of a
    call is its arguments' structure, shapes and dtypes, and the values of
    its static arguments (``static_argnums``, ``static_argnames``:
    hashable, baked into the plan).

    * The first call of a signature runs ``fun`` and records a plan; the
      second replays the plan and also runs ``fun`` eagerly to check that
      the two agree; later calls replay the plan only, running none of
      ``fun``'s Python code.
    * Python control flow on values (``if x.sum() > 0``, ``int(n)``,
      ``.item()``) is kept right by guards: a replay whose guard sees
      another value records another variant (at most ``max_variants``).
    * Arrays ``fun`` reads from outside its arguments (closed over, global)
      are read by reference at replay: an in-place change is seen.
    * What cannot be staged (a conversion of a value to a plain array, a
      write into an argument, an impure function, guards that keep failing)
      runs eagerly after one ``StagingWarning`` (none with ``warn=False``),
      or raises ``StagingError`` with ``strict=True``.

    Used as ``@cr.jit`` or ``@cr.jit(static_argnums=...)`` too. The jitted
    function's ``plan(*args)`` returns the plan of a signature (print it to
    see the generated code), ``cache_info()`` the cache's counts,
    ``eager_reasons()`` why signatures run eagerly, ``clear_cache()``
    forgets every plan. Each jitted function keeps the plans of at most
    ``cache_size`` signatures (least recently used out), each with at most
    ``max_variants`` variants.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> loss = lambda x: np.sum(np.tanh(x) ** 2)
    >>> step = cr.jit(cr.value_and_grad(loss))
    >>> x = np.array([0.5, -1.0])
    >>> for _ in range(3):              # record, check, replay
    ...     value, g = step(x)
    >>> bool(np.allclose(g, cr.grad(loss)(x)))
    True
    >>> step.cache_info()
    {'signatures': 1, 'plans': 1, 'eager': 0}
    >>> print(step.plan(x).source.splitlines()[0])
    def plan(v0):
    """
    if fun is None:
        return lambda f: Jitted(f, static_argnums, static_argnames, strict, max_variants,
                                cache_size, warn)
    return Jitted(fun, static_argnums, static_argnames, strict, max_variants, cache_size,
                  warn)
