"""Linearizations and Hessian operators: record once, sweep many times.

* ``linearize(f, *primals)``: ``(f(*primals), f_jvp)``; ``f_jvp`` runs only
  the tangent sweep.
* ``linearize_grad(f, x)``: ``(grad f(x), hvp_fn)``; ``hvp_fn(v)`` runs only
  the forward-over-reverse sweeps (no re-tracing). This is
  ``linearize(grad(f), x)`` without recording the backward pass.
* ``hessian_operator(f, x)``: the same as a ``scipy.sparse.linalg.LinearOperator``
  (``matvec``/``matmat`` are HVPs), for ``cg``, ``eigsh``, ``minimize``.
* ``hessp(f)``: a ``hessp(x, p)`` callable for ``scipy.optimize.minimize``
  that records ``f`` once per point ``x``, whatever the number of
  Hessian-vector products the optimiser asks for there.

Every sweep here is a sweep of the one recording: ``f`` is never traced
again, also not for rules without a hand-written ``pullback_with_tangents``
(their second order is found by replay, ``chainrules.second_order``).
"""

import numpy as np

from . import pytree
from .arguments import (NO_GRADIENTS, check_tangent, collect_cotangents, function_name,
                        is_inexact, scalar_output_dtype, unwrap_level, zero_like_value)
from .arrays import shape_of
from .errors import GraphFreedError, NonDifferentiableInputError, TangentShapeError
from .fp_warnings import at_user_line
from .jacobians import (Recording, batch_or_zeros, concat_batches, direction_chunks,
                        is_complex_leaf, leaf_dtype)
from .tangents import NOTANGENT, ZERO, Structural, to_vector

__all__ = ["linearize", "linearize_grad", "hessian_operator", "hessp", "Hessp"]


# -- linearize -----------------------------------------------------------------
@at_user_line
def linearize(f, *primals):
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


def linearize_grad(f, x):
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
        function. Attributes: ``value`` (f(x)), ``grad`` (the gradient with
        the structure of x), ``grad_vector`` (flattened), ``x``.
        """

        def __init__(self, rec, n, rebuild):
            self._rec = rec
            self._rebuild = rebuild
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
            x = self.x
            if type(x) is np.ndarray and x.dtype == np.float64:  # no copies
                return np.reshape(self._rec.hvp(v.reshape(x.shape)), -1)
            hv = self._rec.hvp(self._rebuild(v))
            return to_vector(hv)[0]

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
            self._rec.free()

    _operator_class = HessianOperator
    return HessianOperator


def hessian_operator(f, x):
    """The Hessian of scalar ``f`` at ``x`` as a
    ``scipy.sparse.linalg.LinearOperator``.

    ``f`` is traced once at ``x`` (and its gradient computed); ``matvec``
    and ``matmat`` run only the forward-over-reverse sweeps over that
    recording, so ``scipy.sparse.linalg.cg``, ``eigsh`` and
    ``scipy.optimize.minimize(..., hessp=...)`` apply directly. ``x`` may be
    a pytree of real arrays: the operator acts on the flattened vector
    (``chainrules.tangents.to_vector`` order). The operator carries
    ``value``, ``grad`` and ``grad_vector`` of ``f`` at ``x``.

    >>> import numpy as np, chainrules as cr
    >>> H = cr.hessian_operator(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]))
    >>> H @ np.array([0.0, 1.0])
    array([ 0., 12.])
    """
    rec = _HvpRecording(f, x, function_name(f))
    vec, rebuild = to_vector(x)
    return _get_operator_class()(rec, vec.size, rebuild)


class Hessp:
    """A ``hessp(x, p)`` callable for ``scipy.optimize.minimize`` that traces
    ``f`` once per point.

    Newton-CG and trust-krylov ask for many Hessian-vector products at the
    same ``x``; ``Hessp`` records ``f`` when ``x`` changes and answers every
    product at that point with sweeps only. ``value_and_grad(x)`` shares
    the recording (pass it with ``jac=True``)::

        h = chainrules.hessp(f)
        scipy.optimize.minimize(h.value_and_grad, x0, jac=True, hessp=h,
                                method="trust-krylov")
    """

    def __init__(self, f):
        self.f = f
        self.fname = function_name(f)
        self._x = None
        self._rec = None
        self.recordings = 0

    def _at(self, x):
        if self._rec is None or self._x.shape != np.shape(x) or \
                not np.array_equal(self._x, x):
            if self._rec is not None:
                self._rec.free()
            self._x = np.array(x, copy=True)
            self._rec = _HvpRecording(self.f, self._x, self.fname)
            self.recordings += 1
        return self._rec

    def __call__(self, x, p):
        if np.iscomplexobj(p):
            raise TangentShapeError(
                f"hessp of {self.fname}: a complex direction for the Hessian of a real "
                "function; apply the real and imaginary parts separately")
        return self._at(x).hvp(np.asarray(p, dtype=self._x.dtype).reshape(self._x.shape))

    def value_and_grad(self, x):
        rec = self._at(x)
        return rec.value, rec.grad


def hessp(f):
    """``hessp(f)`` returns a ``Hessp``: ``h(x, p) = H(x) @ p`` recording
    ``f`` once per distinct ``x``; ``h.value_and_grad`` shares it.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> h = cr.hessp(lambda x: np.sum(x ** 4))
    >>> h(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([12.,  0.])
    """
    return Hessp(f)
