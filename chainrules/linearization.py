"""Linearizations and Hessian operators: record once, sweep many times.

* ``linearize(f, *primals)``: ``(f(*primals), f_jvp)``; ``f_jvp`` runs only
  the tangent sweep.
* ``linearize_grad(f, x)``: ``(grad f(x), hvp_fn)``; ``hvp_fn(v)`` runs only
  the forward-over-reverse sweeps (no re-tracing). This is
  ``linearize(grad(f), x)`` without recording the backward pass.
* ``hessian_operator(f, x)``: the same as a ``scipy.sparse.linalg.LinearOperator``
  (``matvec``/``matmat`` are HVPs), for ``cg``, ``eigsh``, ``minimize``.
* ``hessp(f)``: a ``hessp(x, p)`` callable for ``scipy.optimize.minimize``:
  its value, gradient and Hessian-vector products run as staged plans
  (``cr.jit``), recorded once for the shape and dtype of ``x`` and replayed
  at every point; where a plan cannot be used, ``f`` is recorded once per
  point ``x``, whatever the number of products asked for there.

Every sweep of ``linearize``, ``linearize_grad`` and ``hessian_operator``
is a sweep of the one recording: ``f`` is never traced again, also not for
rules without a hand-written ``pullback_with_tangents`` (their second order
is found by replay, ``chainrules.second_order``). A ``hessian_operator``
asked for many products runs those sweeps as a plan where that was
measured faster (``STAGE_AFTER``).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol

import numpy as np
from numpy.typing import ArrayLike

from . import pytree
from .anomaly import is_anomaly_enabled
from .api import _hvp_fast, value_and_grad
from .arguments import (NO_GRADIENTS, check_tangent, collect_cotangents, function_name,
                        is_inexact, scalar_output_dtype, unwrap_level, zero_like_value)
from .arrays import shape_of
from .errors import GraphFreedError, NonDifferentiableInputError, TangentShapeError
from .fp_warnings import at_user_line
from .jit import jit
from .jacobians import (Recording, batch_or_zeros, concat_batches, direction_chunks,
                        is_complex_leaf, leaf_dtype)
from .staging import Staged
from .tangents import NOTANGENT, ZERO, Structural, to_vector

__all__ = ["linearize", "linearize_grad", "hessian_operator", "hessp", "Hessp",
           "JvpFunction", "HvpFunction"]


class JvpFunction(Protocol):
    """The ``f_jvp`` that ``linearize`` returns: ``f_jvp(*tangents)`` is
    ``J @ tangents``, ``f_jvp.many(*tangents)`` the same of batches of
    them; ``f_jvp.free()`` drops the recording."""

    def __call__(self, *tangents: Any) -> Any: ...

    def many(self, *tangents: Any) -> Any: ...

    def free(self) -> None: ...


class HvpFunction(Protocol):
    """The ``hvp_fn`` that ``linearize_grad`` returns: ``hvp_fn(v)`` is
    ``H @ v``, ``hvp_fn.many(V)`` the same of a batch of directions;
    ``hvp_fn.value`` is ``f(x)``; ``hvp_fn.free()`` drops the recording."""

    value: Any

    def __call__(self, v: Any, /) -> Any: ...

    def many(self, V: Any, /) -> Any: ...

    def free(self) -> None: ...


# -- linearize -----------------------------------------------------------------
@at_user_line
def linearize(f: Callable[..., Any], *primals: Any) -> tuple[Any, JvpFunction]:
    """``out, f_jvp = linearize(f, *primals)``.

    ``f`` is traced once at ``primals``; ``f_jvp(*tangents)`` returns
    ``J @ tangents`` (structured like ``out``) by running only the tangent
    sweep over the recording, as many times as needed. Call
    ``f_jvp.free()`` to drop the recording early.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> out, f_jvp = cr.linearize(np.square, np.array([1.0, 3.0]))
    >>> f_jvp(np.array([1.0, 1.0]))
    array([2., 6.])
    """
    fname = function_name(f)
    rec = Recording(f, primals, range(len(primals)), fname, private=True)
    tape = rec.tape
    outs = [unwrap_level(o, tape) for o in rec.out_leaves]
    value = pytree.unflatten(rec.out_td, outs)

    @at_user_line
    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TangentShapeError(f"linearize of {fname}: {len(primals)} primals but "
                                    f"{len(tangents)} tangents")
        seeds = {}
        for spec, p, t in zip(rec.specs, primals, tangents):
            for nid, tv in zip(spec.ids, check_tangent(t, p, fname, entry="linearize")):
                if nid is not None and not isinstance(tv, Structural):
                    seeds[nid] = tv
        tans = tape.forward(seeds)
        res = []
        for o, v in zip(rec.out_leaves, outs):
            node = rec.node(o)
            t = None if node is None else tans[node]
            if t is None:
                t = zero_like_value(v)
            res.append(t)
        return pytree.unflatten(rec.out_td, res)

    @at_user_line
    def many(*tangents):
        if len(tangents) != len(primals):
            raise TangentShapeError(f"linearize of {fname}: {len(primals)} primals but "
                                    f"{len(tangents)} batches of tangents")
        seeds, k = {}, None
        for spec, p, t in zip(rec.specs, primals, tangents):
            leaves, kk = check_tangent(t, p, fname, entry="linearize (f_jvp.many)", batch=True)
            if kk is not None:
                if k is not None and kk != k:
                    raise TangentShapeError(f"linearize of {fname}: batches of {k} and {kk} "
                                            "directions; give every argument the same number")
                k = kk
            for nid, tv in zip(spec.ids, leaves):
                if nid is not None and not isinstance(tv, Structural):
                    seeds[nid] = tv
        if k is None:
            raise TangentShapeError(f"linearize of {fname}: f_jvp.many needs at least one "
                                    "batch of tangents as an array (its leading axis is the "
                                    "number of directions)")
        pieces = []
        for a, b in direction_chunks(k, tape, None):
            tans = tape.forward({n: t[a:b] for n, t in seeds.items()}, batch=b - a)
            res = []
            for o, v in zip(rec.out_leaves, outs):
                node = rec.node(o)
                t = None if node is None else tans[node]
                res.append(batch_or_zeros(t, b - a, shape_of(v), leaf_dtype(v)) if is_inexact(v)
                           else NOTANGENT)
            pieces.append(res)
        res = [p[0] if isinstance(p[0], Structural) else concat_batches(list(p)) for p in zip(*pieces)]
        return pytree.unflatten(rec.out_td, res)

    f_jvp.free = tape.free
    f_jvp.many = many
    return value, f_jvp


# -- plans the engine uses itself ---------------------------------------------------
class _EnginePlan:
    """``fun`` run through a ``cr.jit`` plan, recorded quietly
    (``warn=False``). ``eager`` is ``None`` while the plan answers; once it
    gives up (``fun`` impure, guards that keep failing, a recording that
    cannot be replayed) it holds why, and the caller takes its eager path
    from then on. Every answer is right either way: a plan that gave up
    answered with the eager call. ``recordings`` counts the recordings of
    ``fun`` (one per variant of a signature)."""

    __slots__ = ("jitted", "recordings", "eager", "_plain")

    def __init__(self, fun, name):
        self.recordings = 0
        self.eager = None
        self._plain = False

        def body(*args):
            if type(args[0]) is Staged:
                self.recordings += 1
            else:  # the purity check's eager call, or the plan gave up
                self._plain = True
            return fun(*args)

        body.__name__ = body.__qualname__ = name
        self.jitted = jit(body, warn=False)

    def __call__(self, *args):
        self._plain = False
        out = self.jitted(*args)
        if self._plain and self.eager is None:
            reasons = self.jitted.eager_reasons()
            if reasons:
                self.eager = reasons[0]
        return out


#: a ``hessian_operator``'s first STAGE_AFTER products run as eager sweeps
#: (timed); the next records a plan of the sweeps, the one after checks it,
#: the PROBE_CALLS after that are timed, and the plan is kept if it took at
#: most 1 / MIN_GAIN of the sweeps' median time. Recording and checking cost
#: 15 to 20 eager products on small arrays (``benchmarks/hessp_plans.py``):
#: staging after as many eager ones costs at most about twice what the sweeps
#: alone would have (none for an operator asked for 16 products or fewer),
#: and a long solve runs 3 to 6 times faster per product. On arrays of 1e5
#: elements the sweeps are NumPy's work already, and the plan is not kept.
STAGE_AFTER = 16
PROBE_CALLS = 3
MIN_GAIN = 1.25


class _StagedProducts:
    """The products ``sweeps(v)`` of one fixed recording, run eagerly or as
    a plan, whichever was measured faster (``STAGE_AFTER``): ``sweeps`` is a
    function of ``v`` only, everything else fixed."""

    __slots__ = ("sweeps", "plan", "use_plan", "plan_calls", "sweep_times", "plan_times")

    def __init__(self, sweeps):
        self.sweeps = sweeps
        self.plan = None
        self.use_plan = None  # None: still measuring
        self.plan_calls = 0
        self.sweep_times, self.plan_times = [], []

    def __call__(self, v):
        if self.use_plan is False or is_anomaly_enabled():
            return self.sweeps(v)
        plan = self.plan
        if self.use_plan:
            out = plan(v)
            if plan.eager is not None:
                self._decide(False)
            return out
        if plan is None:
            if len(self.sweep_times) < STAGE_AFTER:
                t0 = time.perf_counter()
                out = self.sweeps(v)
                self.sweep_times.append(time.perf_counter() - t0)
                return out
            plan = self.plan = _EnginePlan(self.sweeps, "hvp_sweeps")
        t0 = time.perf_counter()
        out = plan(v)
        dt = time.perf_counter() - t0
        self.plan_calls += 1
        if plan.eager is not None:
            self._decide(False)
        elif self.plan_calls > 2:  # after the recording and the check
            self.plan_times.append(dt)
            if len(self.plan_times) >= PROBE_CALLS:
                self._decide(MIN_GAIN * _median(self.plan_times) <= _median(self.sweep_times))
        return out

    def _decide(self, use_plan):
        self.use_plan = use_plan
        if not use_plan:
            self.plan = None  # it holds arrays made of the recording's


def _median(times):
    return sorted(times)[len(times) // 2]


class _HvpRecording:
    """Scalar ``f`` traced once at ``x``: value, gradient, and HVPs by sweeps."""

    __slots__ = ("f", "x", "fname", "tape", "spec", "node", "one", "value", "grad",
                 "ids", "_demand", "_closed")

    @at_user_line
    def __init__(self, f, x, fname):
        self.f, self.fname = f, fname
        self._demand = None
        self._closed = False
        rec = Recording(f, (x,), (0,), fname, private=True, second_order=True)
        self.tape = tape = rec.tape
        self.spec = rec.specs[0]
        # the private copy of x the recording was made at (what tangents are
        # checked against)
        self.x = pytree.unflatten(self.spec.treedef, self.spec.leaves)
        for leaf, nid in zip(self.spec.leaves, self.spec.ids):
            if nid is not None and is_complex_leaf(leaf):
                raise NonDifferentiableInputError(
                    f"Hessian operator of {fname}: an input has complex dtype "
                    f"{leaf_dtype(leaf)}; pass real and imaginary parts as real arguments")
        dtype = scalar_output_dtype(rec.out, tape, fname)
        self.node = rec.node(rec.out)
        self.one = np.ones(shape_of(rec.out), dtype)
        self.ids = [n for n in self.spec.ids if n is not None]
        self.value = unwrap_level(rec.out, tape)
        if self.node is None:
            self.grad = collect_cotangents(self.spec, NO_GRADIENTS)
            tape.free()
        else:
            g = tape.backward([self.node], [self.one], retain_graph=True)
            self.grad = collect_cotangents(self.spec, g)

    @at_user_line
    def hvp(self, v):
        self._check_open()
        tl = check_tangent(v, self.x, self.fname, entry="Hessian-vector product")
        if self.node is None:
            return collect_cotangents(self.spec, NO_GRADIENTS)
        seeds = {}
        for nid, tv in zip(self.spec.ids, tl):
            if nid is not None and not isinstance(tv, Structural):
                seeds[nid] = tv
        tape = self.tape
        if self._demand is None:  # the recording is fixed: what a sweep reads is too
            self._demand = (tape.tangent_demand([self.node]),
                            tape.cotangent_demand([self.node]))
        tans = tape.forward(seeds, needed=self._demand[0])
        _, hv = tape.backward_with_tangents([self.node], [self.one], [ZERO], tans,
                                            retain_graph=True, leaf_cotangents=False,
                                            need=self._demand[1])
        return collect_cotangents(self.spec, hv)

    @at_user_line
    def hvp_many(self, V):
        """``H @ v`` for a batch of directions: every leaf of ``V`` has a
        leading axis of directions; so does every leaf of the result. The
        batch runs as chunks, each one forward sweep and one reverse sweep
        carrying it."""
        self._check_open()
        tl, k = check_tangent(V, self.x, self.fname, entry="Hessian-vector products",
                              batch=True)
        if k is None:
            raise TangentShapeError(f"Hessian-vector products of {self.fname}: a batch of "
                                    "directions needs at least one array leaf (its leading "
                                    "axis is the number of directions)")
        if self.node is not None:
            seeds = {nid: tv for nid, tv in zip(self.spec.ids, tl)
                     if nid is not None and not isinstance(tv, Structural)}
            pieces = [self._sweep({n: t[a:b] for n, t in seeds.items()}, b - a)
                      for a, b in direction_chunks(k, self.tape, None)]
            cols = [concat_batches(list(p)) for p in zip(*pieces)]
            return pytree.unflatten(self.spec.treedef, cols)
        # f does not depend on x: zeros, one direction at a time
        leaves = [[ZERO if isinstance(t, Structural) else t[j] for t in tl] for j in range(k)]
        hvs = [pytree.flatten(self.hvp(pytree.unflatten(self.spec.treedef, lv)))[0]
               for lv in leaves]
        return pytree.unflatten(self.spec.treedef, [
            np.stack([np.asarray(h[i]) for h in hvs]) if not isinstance(hvs[0][i], Structural)
            else hvs[0][i] for i in range(len(tl))] if hvs else tl)

    def _sweep(self, seeds, k):
        tape = self.tape
        if self._demand is None:
            self._demand = (tape.tangent_demand([self.node]),
                            tape.cotangent_demand([self.node]))
        tans = tape.forward(seeds, needed=self._demand[0], batch=k)
        _, hv = tape.backward_with_tangents([self.node], [self.one], [ZERO], tans,
                                            retain_graph=True, leaf_cotangents=False,
                                            need=self._demand[1], batch=k)
        return [batch_or_zeros(hv.get(nid), k, shape_of(leaf), leaf_dtype(leaf))
                if nid is not None else NOTANGENT
                for leaf, nid in zip(self.spec.leaves, self.spec.ids)]

    def _check_open(self):
        if self._closed:
            raise GraphFreedError(
                f"Hessian-vector product of {self.fname}: the recording was freed "
                "(free() was called on the operator or on hvp_fn); keep the operator "
                "unfreed while you use it, or record again with "
                "chainrules.hessian_operator / linearize_grad")

    def free(self):
        self._closed = True
        self.tape.free()


def linearize_grad(f: Callable[[Any], Any], x: Any) -> tuple[Any, HvpFunction]:
    """``g, hvp_fn = linearize_grad(f, x)``: the gradient of scalar ``f`` at
    ``x`` and a function ``hvp_fn(v) = H(x) @ v``.

    ``f`` is traced once; every ``hvp_fn`` call runs only a tangent sweep
    and a reverse sweep carrying tangents over that recording (no
    re-tracing, no scipy needed). It is ``linearize(grad(f), x)`` without
    recording the backward pass. ``v`` and the result have the structure
    of ``x``. The recording is kept until ``hvp_fn`` is garbage collected
    or ``hvp_fn.free()`` is called.

    >>> import numpy as np, chainrules as cr
    >>> g, hvp_fn = cr.linearize_grad(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]))
    >>> hvp_fn(np.array([1.0, 0.0]))
    array([6., 0.])
    """
    rec = _HvpRecording(f, x, function_name(f))

    def hvp_fn(v):
        return rec.hvp(v)

    hvp_fn.free = rec.free
    hvp_fn.many = rec.hvp_many
    hvp_fn.value = rec.value
    return rec.grad, hvp_fn


# -- scipy LinearOperator ----------------------------------------------------------
_operator_class = None


def _get_operator_class():
    global _operator_class
    if _operator_class is not None:
        return _operator_class
    from scipy.sparse.linalg import LinearOperator

    class HessianOperator(LinearOperator):
        """The Hessian of a scalar function at one point as a LinearOperator.

        ``matvec``/``matmat`` run tangent sweeps over one recording of the
        function (``matvec``s, for ``x`` an array, as a plan of them once
        measured faster: ``hessian_operator``). Attributes: ``value``
        (f(x)), ``grad`` (the gradient with the structure of x),
        ``grad_vector`` (flattened), ``x``.
        """

        def __init__(self, rec, n, rebuild):
            self._rec = rec
            self._rebuild = rebuild
            x = rec.x
            self._products = None
            if type(x) is np.ndarray:  # a pytree x keeps the sweeps
                shape, dtype = x.shape, x.dtype

                def hvp_sweeps(v):
                    # (in x's dtype: a plan's check compares to its precision)
                    return np.reshape(rec.hvp(v.reshape(shape).astype(dtype, copy=False)), -1)

                self._products = _StagedProducts(hvp_sweeps)
            self.value = rec.value
            self.grad = rec.grad
            self.x = rec.x
            super().__init__(np.dtype(np.float64), (n, n))

        @property
        def grad_vector(self):
            return to_vector(self.grad)[0]

        def _matvec(self, v):
            if np.iscomplexobj(v):
                raise TangentShapeError(
                    "HessianOperator.matvec: a complex vector for the Hessian of a real "
                    "function; apply the real and imaginary parts separately")
            v = np.asarray(v, dtype=np.float64).reshape(-1)
            self._rec._check_open()
            if self._products is not None:
                return self._products(v).astype(np.float64, copy=False)
            return to_vector(self._rec.hvp(self._rebuild(v)))[0]

        _rmatvec = _matvec

        def _matmat(self, V):
            V = np.asarray(V, dtype=np.float64)
            x = self.x
            if V.shape[1] == 0:
                return np.zeros((self.shape[0], 0))
            if type(x) is np.ndarray and x.dtype == np.float64:
                # the columns as one batch of directions (chunked sweeps)
                batch = V.T.reshape((V.shape[1],) + x.shape)
                return np.reshape(self._rec.hvp_many(batch), (V.shape[1], -1)).T
            return np.stack([self._matvec(V[:, j]) for j in range(V.shape[1])], axis=1)

        def _adjoint(self):
            return self

        def free(self):
            """Drop the recording (the operator is unusable afterwards)."""
            self._products = None  # its plan holds arrays made of the recording's
            self._rec.free()

    _operator_class = HessianOperator
    return HessianOperator


def hessian_operator(f: Callable[[Any], Any], x: Any) -> Any:
    """The Hessian of scalar ``f`` at ``x`` as a
    ``scipy.sparse.linalg.LinearOperator``.

    ``f`` is traced once at ``x`` (and its gradient computed); ``matvec``
    and ``matmat`` run only the forward-over-reverse sweeps over that
    recording, so ``scipy.sparse.linalg.cg``, ``eigsh`` and
    ``scipy.optimize.minimize(..., hessp=...)`` apply directly. ``x`` may be
    a pytree of real arrays: the operator acts on the flattened vector
    (``chainrules.tangents.to_vector`` order). The operator carries
    ``value``, ``grad`` and ``grad_vector`` of ``f`` at ``x``.

    For ``x`` an array, ``matvec`` runs the sweeps as a staged plan of the
    direction alone (``cr.jit``; what the recording fixes is computed once)
    where that pays: the first ``STAGE_AFTER`` (16) products are eager
    sweeps, the next records the plan and the one after checks it against
    the sweeps, and the plan is kept if its next ``PROBE_CALLS`` (3)
    products took at most 1 / ``MIN_GAIN`` (0.8) of the sweeps' time. On
    arrays of 1e2 to 1e3 elements a replay is 4 to 6 times faster than the
    sweeps, on 1e4 about 2 times; on 1e5 the sweeps are NumPy's work
    already and keep running (``benchmarks/hessp_plans.py``). A solve
    asking for fewer than about 40 products gains nothing. ``matmat`` (a
    batch of directions in one pair of sweeps) and a pytree ``x`` always
    run the sweeps.

    >>> import numpy as np, chainrules as cr
    >>> H = cr.hessian_operator(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]))
    >>> H @ np.array([0.0, 1.0])
    array([ 0., 12.])
    """
    rec = _HvpRecording(f, x, function_name(f))
    vec, rebuild = to_vector(x)
    return _get_operator_class()(rec, vec.size, rebuild)


class Hessp:
    """A ``hessp(x, p)`` callable for ``scipy.optimize.minimize``, with
    ``value_and_grad(x)`` for ``jac=True``::

        h = chainrules.hessp(f)
        scipy.optimize.minimize(h.value_and_grad, x0, jac=True, hessp=h,
                                method="trust-krylov")

    The optimiser calls ``f``'s value and gradient once per point and asks
    for Hessian-vector products there, at a new point each iteration. Both
    run as staged plans (``cr.jit`` of ``value_and_grad(f)`` and of
    ``hvp(f, x, p)``): ``f`` is recorded once for the shape and dtype of
    ``x``, its plan checked against an eager call at its second call, then
    replayed at every point without running ``f``'s Python code (a Python
    ``if`` on a value is guarded: the other branch is recorded when taken).
    ``f`` must be a function of ``x`` alone, as ``cr.jit`` needs: a global
    or closed-over name rebound after the second call (to another number,
    or to another array) is not seen, an array changed in place is; pass
    ``staged=False`` for such an ``f`` (or make a new ``Hessp``).

    Without plans (``staged=False``; ``x`` not a real float array; anomaly
    mode; a plan that gave up, e.g. ``f`` draws random numbers, whose call
    answered eagerly) ``f`` is recorded when ``x`` changes and every
    product at that point is a pair of sweeps over the recording, which
    ``value_and_grad`` shares. ``staged`` says whether plans are in use
    (``False`` from the call on where one gave up; ``eager_reason`` says
    why). ``recordings`` counts the recordings of ``f``: one per distinct
    point without plans, one per recorded plan with them.
    """

    def __init__(self, f, staged=True):
        self.f = f
        self.fname = function_name(f)
        self.staged = bool(staged)
        self.eager_reason = None
        self._x = None
        self._rec = None
        self._points = 0  # recordings of the path without plans
        self._vg = self._hv = None

    @property
    def recordings(self) -> int:
        staged = 0 if self._vg is None else self._vg.recordings + self._hv.recordings
        return self._points + staged

    def _at(self, x):
        if self._rec is None or self._x.shape != np.shape(x) or \
                not np.array_equal(self._x, x):
            if self._rec is not None:
                self._rec.free()
            self._x = np.array(x, copy=True)
            self._rec = _HvpRecording(self.f, self._x, self.fname)
            self._points += 1
        return self._rec

    def _plans(self, x):
        """Whether the plans answer at ``x`` (a plain array)."""
        if not self.staged or x.dtype.kind != "f" or is_anomaly_enabled():
            return False
        if self._vg is None:
            f, fname = self.f, self.fname

            def hvp(x, p):
                return _hvp_fast(f, x, p, fname, False)[1]

            self._vg = _EnginePlan(value_and_grad(f), "value_and_grad")
            self._hv = _EnginePlan(hvp, "hvp")
        return True

    def _gave_up(self, plan):
        if plan.eager is not None:
            self.staged = False
            self.eager_reason = plan.eager

    def __call__(self, x: ArrayLike, p: ArrayLike) -> Any:
        if np.iscomplexobj(p):
            raise TangentShapeError(
                f"hessp of {self.fname}: a complex direction for the Hessian of a real "
                "function; apply the real and imaginary parts separately")
        xa = x if type(x) is np.ndarray else np.asarray(x)
        if type(xa) is np.ndarray and self._plans(xa):
            hv = self._hv(xa, np.asarray(p, dtype=xa.dtype).reshape(xa.shape))
            self._gave_up(self._hv)
            # (a plan gives a 0-d result as a NumPy scalar)
            return hv if type(hv) is np.ndarray else np.asarray(hv)
        return self._at(x).hvp(np.asarray(p, dtype=self._x.dtype).reshape(self._x.shape))

    def value_and_grad(self, x: ArrayLike) -> tuple[Any, Any]:
        xa = x if type(x) is np.ndarray else np.asarray(x)
        if type(xa) is np.ndarray and self._plans(xa):
            value, g = self._vg(xa)
            self._gave_up(self._vg)
            return value, g if type(g) is np.ndarray else np.asarray(g)
        rec = self._at(x)
        return rec.value, rec.grad


def hessp(f: Callable[[Any], Any], staged: bool = True) -> Hessp:
    """``hessp(f)`` returns a ``Hessp``: ``h(x, p) = H(x) @ p`` and
    ``h.value_and_grad(x)``, as staged plans recorded once for the shape
    and dtype of ``x`` (``staged=False``: ``f`` recorded once per distinct
    ``x``, the products at that point sweeps over the recording).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> h = cr.hessp(lambda x: np.sum(x ** 4))
    >>> h(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([12.,  0.])
    """
    return Hessp(f, staged)
