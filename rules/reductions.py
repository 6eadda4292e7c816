"""Reductions: sum, mean, max/min, ptp, cumsum, diff, trace, nansum, nanmean,
nanmax, nanmin (the linear and piecewise-linear ones; prod, cumprod, var, std
and average are in rules/statistics.py; the helpers both use are in
rules/_reduce.py).

Every ``axis`` form NumPy accepts works (None, an int, a tuple, negative
axes), with ``keepdims``; the ndarray methods (``x.sum()``, ``x.max(0)``)
call the same functions.

Policies at non-differentiable points
-------------------------------------
* **max / min / amax / amin / nanmax / nanmin, ties**: the cotangent is
  split equally among the tied extreme elements (each of ``k`` tied elements
  gets ``g / k``); the pushforward is the mean of the tangents of the tied
  elements, so pullback and pushforward stay adjoint. Away from ties this is
  the ordinary derivative. The second derivative is zero (piecewise linear).
* **ptp**: the max and min policies combined (``w_max - w_min``); a constant
  slice gets a zero cotangent.
* **nansum / nanmean**: NaN entries get a zero cotangent.

Complex inputs (sum, mean, cumsum, trace, diff, nansum, nanmean) follow the
JAX convention: holomorphic, no conjugate.

Unsupported arguments raise ``MissingRuleError`` / ``UntraceableError``
naming the way out: ``where=`` (use ``np.where`` first), ``out=``,
``initial=`` on max/min, traced ``prepend=``/``append=`` on diff (use
``np.concatenate``).
"""

import functools

import numpy as np

from chainrules.arguments import _SEEDS
from chainrules.arrays import computes_eagerly, is_array, real_dtype, uniform_array
from chainrules.tangents import ZERO, is_zero

from chainrules.derived import LinearRule
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.staging import is_staged, plain_array

from ._reduce import (NO_VALUE, check_static, cum_params, dtype_of, expand_cotangent,
                      flip_axis, is_given, keepdims_flag, keepdims_shape, reduced_size,
                      reject_kwargs, sum_params, with_reduced_axes)
from ._util import array_value, conj, normalize_axis, shape_of


# -- linear reductions ---------------------------------------------------------------
def _mean_params(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    return locals()


def _sum_transpose(g, shape, axis=None, dtype=None, keepdims=False, like=None):
    if axis is None and like is None and type(g) is np.ndarray and g.ndim == 0:
        return uniform_array(g, shape)  # a full sum: what expand_cotangent makes of it
    return expand_cotangent(g, shape, normalize_axis(axis, len(shape)), keepdims, like)


def _mean_transpose(g, shape, axis=None, dtype=None, keepdims=False, like=None):
    axes = normalize_axis(axis, len(shape))
    return expand_cotangent(g / reduced_size(shape, axes), shape, axes, keepdims, like)


def _cast_transpose(transpose, in_dtype, g, shape, **kw):
    c = transpose(g, shape, **kw)
    if c.dtype.kind == "c" and in_dtype.kind != "c":
        c = np.real(c)
    return c.astype(in_dtype)


def _cast_for(transpose, x, dtype):
    """``transpose``, or, when ``dtype=`` computes in another dtype than x's,
    ``transpose`` followed by the cast of the cotangent back to x's dtype."""
    xd = dtype_of(x)
    if dtype is None or np.dtype(dtype) == xd:
        return transpose
    return functools.partial(_cast_transpose, transpose, xd)


def _batch_axes(axis, ndim):
    """The axes of a reduction of one direction, in a batch (axis 0)."""
    return tuple(a + 1 for a in normalize_axis(axis, ndim))


def _batched_forms(op, transpose_one):
    """``(op_b, transpose_b)`` of a linear reduction on batches of directions:
    the same reduction over the shifted axes, and the cotangent of each
    direction broadcast back (mean divides by the count of one direction)."""
    scale = op is np.mean

    def op_b(t, axis=None, keepdims=False, dtype=None):
        return op(t, axis=_batch_axes(axis, t.ndim - 1), keepdims=keepdims, dtype=dtype)

    def transpose_b(g, shape, axis=None, keepdims=False, dtype=None):
        axes = normalize_axis(axis, len(shape))
        if scale:
            g = g / reduced_size(shape, axes)
        if not keepdims:
            g = np.reshape(g, g.shape[:1] + keepdims_shape(shape, axes))
        return np.broadcast_to(g, g.shape[:1] + tuple(shape))

    return op_b, transpose_b


#: shape -> (a gradient's seed, the seed at every entry of that shape)
#: (``WholeSumRule``; the last seed met, of any dtype); emptied when it
#: reaches ``_MAX_SEED_UNIFORMS``
_SEED_UNIFORMS: dict = {}
_MAX_SEED_UNIFORMS = 256
_ndarray = np.ndarray
_new = object.__new__
_add_reduce = np.add.reduce


class WholeSumRule(LinearRule):
    """The rule of ``np.sum(x)`` of an ndarray over all its entries, the
    common call (the maker's first case): the ``LinearRule`` of the general
    case, whose pullback of a 0-d cotangent makes what ``_sum_transpose``
    makes of it (the value at every entry, a zero-stride read-only array),
    without the keyword call. A gradient's seed (one read-only 0-d array per
    dtype, ``arguments.gradient_seed``) gives one array per shape, made once
    and kept: its memory is a bytes object, which nobody can write to.

    The fields every such rule has alike are the class's (read, never
    written): a rule sets only its input and shape."""

    __slots__ = ()
    op = staticmethod(np.sum)
    transpose = staticmethod(_sum_transpose)
    args = ()
    kwargs = {"axis": None, "keepdims": False}
    forms = None  # np.sum's maker's (_reduction_maker)

    def pullback(self, g):
        if type(g) is _ndarray:
            shape = self.shape
            kept = _SEED_UNIFORMS.get(shape)
            if kept is not None and kept[0] is g:  # the seed of a gradient
                return [(self.x_id, kept[1])]
            if g is _SEEDS.get(g.dtype):  # (a 0-d array)
                if len(_SEED_UNIFORMS) >= _MAX_SEED_UNIFORMS:
                    _SEED_UNIFORMS.clear()
                c = uniform_array(g, shape)
                _SEED_UNIFORMS[shape] = (g, c)
                return [(self.x_id, c)]
            if g.ndim == 0:
                return [(self.x_id, uniform_array(g, self.shape))]
        return LinearRule.pullback(self, g)


def _reduction_maker(op, params, transpose):
    forms = _batched_forms(op, transpose)
    whole_sum = op is np.sum and transpose is _sum_transpose
    if whole_sum:
        WholeSumRule.forms = forms

    def reduction_maker(ids, *args, **kwargs):
        if whole_sum and not kwargs and len(args) == 1 and type(args[0]) is np.ndarray:
            # np.sum(x) of an ndarray, the common call: the reduction np.sum
            # itself makes of it, and the rule the general path below makes
            # (its own fields set without the class's call)
            x = args[0]
            rule = _new(WholeSumRule)
            rule.x_id = ids[0]
            rule.shape = x.shape
            return _add_reduce(x, None), rule
        check_static(op, ids, ("axis", "dtype"))
        p = params(*args, **kwargs)
        reject_kwargs(op, p, ("out", "where"),
                "mask first: np.sum(np.where(mask, x, 0)) (or divide by the count "
                "for a mean)")
        x = p["a"]
        kw = {"axis": p["axis"], "keepdims": keepdims_flag(p["keepdims"])}
        if p["dtype"] is not None:
            kw["dtype"] = p["dtype"]
        y = op(*args, **kwargs)  # the primal exactly as called (initial= included)
        tr = transpose
        if is_array(x) and not computes_eagerly(x) or is_staged(x) and np.ndim(y) == 0:
            # lazy: keep x's chunks. Staged (cr.jit) and reduced to a scalar:
            # the cotangent is a zero-stride array as an ndarray's, made by
            # uniform_array as a constant of the plan where the cotangent is
            # one (a gradient's seed); an axis reduction's is broadcast, as
            # an ndarray's
            tr = functools.partial(transpose, like=x)
        cast = p["dtype"] is not None and np.dtype(p["dtype"]) != x.dtype
        if cast:
            # sum(x, dtype=...) computes in another dtype: cast the cotangent back
            tr = functools.partial(_cast_transpose, transpose, x.dtype)
        # batches: plain arrays (and staged values of them: the plan sweeps
        # a batch as eager code does) summed in their own dtype
        batched = forms if not cast and plain_array(x) else None
        return y, LinearRule(ids[0], op, tr, shape_of(x), (), kw, batched)

    return reduction_maker


register(np.sum)(_reduction_maker(np.sum, sum_params, _sum_transpose))
register(np.mean)(_reduction_maker(np.mean, _mean_params, _mean_transpose))


def _cumsum_transpose(g, shape, axis=None, dtype=None):
    if axis is None or not shape:  # flattened (a 0-d input's axis 0 too): shape (n,)
        return np.reshape(flip_axis(np.cumsum(flip_axis(g, 0), axis=0), 0), shape)
    ax = axis % len(shape)
    return flip_axis(np.cumsum(flip_axis(g, ax), axis=ax), ax)


@register(np.cumsum)
def _cumsum_maker(ids, *args, **kwargs):
    check_static(np.cumsum, ids, ("axis", "dtype"))
    p = cum_params(*args, **kwargs)
    reject_kwargs(np.cumsum, p, ("out",), "")
    kw = {"axis": p["axis"]}
    if p["dtype"] is not None:
        kw["dtype"] = p["dtype"]
    y = np.cumsum(p["a"], **kw)
    tr = _cast_for(_cumsum_transpose, p["a"], p["dtype"])
    return y, LinearRule(ids[0], np.cumsum, tr, shape_of(p["a"]), (), kw)


def _diff_params(a, n=1, axis=-1, prepend=NO_VALUE, append=NO_VALUE):
    return locals()


def _extra_len(v, ndim, axis):
    if not is_given(v):
        return 0
    if np.ndim(v) == 0:
        return 1
    return np.shape(v)[axis]


def _diff_transpose(g, shape, n=1, axis=-1, prepend=NO_VALUE, append=NO_VALUE):
    if n == 0:  # NumPy returns the input itself (whatever the axis; 0-d included)
        return g
    ax = axis % len(shape)
    c = g
    for _ in range(n):
        z = np.zeros((), c.dtype)  # a Python 0 would promote float32 to float64
        c = -np.diff(c, axis=ax, prepend=z, append=z)
    p = _extra_len(prepend, len(shape), ax)
    if c.shape[ax] != shape[ax]:
        idx = tuple(slice(p, p + shape[ax]) if i == ax else slice(None)
                    for i in range(len(shape)))
        c = c[idx]
    return c


@register(np.diff)
def _diff_maker(ids, *args, **kwargs):
    check_static(np.diff, ids, ("n", "axis", "prepend", "append"))
    p = _diff_params(*args, **kwargs)
    kw = {"n": p["n"], "axis": p["axis"]}
    y = np.diff(*args, **kwargs)
    for k in ("prepend", "append"):
        if is_given(p[k]):  # constants: their tangent is zero
            kw[k] = np.zeros(np.shape(p[k]), array_value(p[k]).dtype)
    tr = _diff_transpose
    xd = p["a"].dtype if hasattr(p["a"], "dtype") else np.result_type(p["a"])
    if y.dtype != xd:  # a float64 prepend/append promotes: cast the cotangent back
        tr = functools.partial(_cast_transpose, _diff_transpose, xd)
    return y, LinearRule(ids[0], np.diff, tr, shape_of(p["a"]), (), kw)


def _trace_params(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return locals()


def _trace_transpose(g, shape, offset=0, axis1=0, axis2=1, dtype=None):
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    kd = tuple(1 if i in (a1, a2) else s for i, s in enumerate(shape))
    eye = np.eye(shape[a1], shape[a2], k=offset, dtype=g.dtype)
    if a1 > a2:
        eye = eye.T
    eshape = tuple(s if i in (a1, a2) else 1 for i, s in enumerate(shape))
    return np.reshape(g, kd) * np.reshape(eye, eshape)


@register(np.trace)
def _trace_maker(ids, *args, **kwargs):
    check_static(np.trace, ids, ("offset", "axis1", "axis2", "dtype"))
    p = _trace_params(*args, **kwargs)
    reject_kwargs(np.trace, p, ("out",), "")
    kw = {"offset": p["offset"], "axis1": p["axis1"], "axis2": p["axis2"]}
    if p["dtype"] is not None:
        kw["dtype"] = p["dtype"]
    y = np.trace(p["a"], **kw)
    tr = _cast_for(_trace_transpose, p["a"], p["dtype"])
    return y, LinearRule(ids[0], np.trace, tr, shape_of(p["a"]), (), kw)


# -- selections: max/min/ptp, nansum/nanmean ----------------------------------------
class WeightedReduceRule(ReverseRule):
    """y = sum(w * x, axes) with constant weights ``w`` fixed at the point:
    max/min (tie-split selection), ptp, nansum and nanmean.

    ``w`` may be given as ``select=(x, y)`` instead, the plain input and the
    reduced value: the selection weights are then computed when a sweep
    first needs them (a recording that is never differentiated, or whose
    branch is pruned, never pays for them).

    ``dtypes=(x dtype, y dtype)`` when they differ (``dtype=`` of nansum):
    cotangents are cast to x's dtype (the real part for a real x), tangents
    to y's."""

    __slots__ = ("x_id", "w", "axes", "keepdims", "shape", "op", "select", "dtypes")
    linear = True  # piecewise linear: the weights are constant near the point

    def __init__(self, x_id, w, axes, keepdims, shape, op, select=None, dtypes=None):
        self.x_id = x_id
        self.w = w
        self.axes = axes
        self.keepdims = keepdims
        self.shape = shape
        self.op = op
        self.select = select
        self.dtypes = dtypes

    def _weights(self):
        w = self.w
        if w is None:
            xv, yv = self.select
            w = self.w = _select_weights(xv, yv, self.axes)
            self.select = None
        return w

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        if is_zero(g):
            return []
        c = with_reduced_axes(g, self.shape, self.axes, self.keepdims) * self._weights()
        if self.dtypes is not None:
            xd = self.dtypes[0]
            c = (np.real(c) if c.dtype.kind == "c" and xd.kind != "c" else c).astype(xd)
        return [(self.x_id, c)]

    def pushforward(self, tangents):
        # one input: Tape.forward calls a pushforward only when some input
        # tangent is nonzero, so ``t`` is an array here
        t = tangents[0]
        # where w == 0 (NaN entries of nansum) the tangent must not leak a NaN
        d = np.sum(t * self._weights(), axis=self.axes, keepdims=self.keepdims)
        return d if self.dtypes is None else d.astype(self.dtypes[1])

    # batches of directions: the same maps behind a leading batch axis
    batched = True

    def pullback_batched(self, G):
        if is_zero(G):
            return []
        g = G if self.keepdims else np.reshape(
            G, G.shape[:1] + keepdims_shape(self.shape, self.axes))
        c = g * self._weights()
        if self.dtypes is not None:
            xd = self.dtypes[0]
            c = (np.real(c) if c.dtype.kind == "c" and xd.kind != "c" else c).astype(xd)
        return [(self.x_id, c)]

    def pushforward_batched(self, tangents):
        axes = tuple(a + 1 for a in self.axes)
        d = np.sum(tangents[0] * self._weights(), axis=axes, keepdims=self.keepdims)
        return d if self.dtypes is None else d.astype(self.dtypes[1])

    def pullback_with_tangents_batched(self, g, GD, tangents):
        c = self.pullback(g)
        cd = self.pullback_batched(GD)
        return [(self.x_id, c[0][1] if c else ZERO, cd[0][1] if cd else ZERO)]


def _max_params(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return locals()


def _ptp_params(a, axis=None, out=None, keepdims=False):
    return locals()


def _select_weights(xv, yv, axes):
    """Equal split among the elements equal to the reduced value ``yv``."""
    yk = np.reshape(yv, keepdims_shape(xv.shape, axes))
    mask = (xv == yk)
    cnt = np.sum(mask, axis=axes, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = mask / cnt  # a NaN result (count 0) gives a NaN cotangent, honestly
    return w.astype(real_dtype(xv.dtype), copy=False)  # (w is this function's own array)


def _select_maker(op):
    def select_maker(ids, *args, **kwargs):
        check_static(op, ids, ("axis",))
        p = _max_params(*args, **kwargs)
        reject_kwargs(op, p, ("out", "where", "initial"),
                "reduce first and combine: np.maximum(np.max(x), initial), or "
                "np.max(np.where(mask, x, -np.inf))")
        x = p["a"]
        keepdims = keepdims_flag(p["keepdims"])
        y = op(x, axis=p["axis"], keepdims=keepdims)
        xv = array_value(x)
        axes = normalize_axis(p["axis"], xv.ndim)
        # the weights select the elements equal to y: from y itself, when needed
        return y, WeightedReduceRule(ids[0], None, axes, keepdims, xv.shape, op,
                                     select=(xv, array_value(y)))

    return select_maker


for _op in (np.max, np.amax, np.min, np.amin, np.nanmax, np.nanmin):
    register(_op)(_select_maker(_op))


@register(np.ptp)
def _ptp_maker(ids, *args, **kwargs):
    check_static(np.ptp, ids, ("axis",))
    p = _ptp_params(*args, **kwargs)
    reject_kwargs(np.ptp, p, ("out",), "")
    x = p["a"]
    keepdims = keepdims_flag(p["keepdims"])
    y = np.ptp(x, axis=p["axis"], keepdims=keepdims)
    xv = array_value(x)
    axes = normalize_axis(p["axis"], xv.ndim)
    w = (_select_weights(xv, np.max(xv, axis=axes, keepdims=True), axes)
         - _select_weights(xv, np.min(xv, axis=axes, keepdims=True), axes))
    return y, WeightedReduceRule(ids[0], w, axes, keepdims, xv.shape, np.ptp)


def _nan_maker(op, mean):
    def nan_maker(ids, *args, **kwargs):
        check_static(op, ids, ("axis", "dtype"))
        p = (_mean_params if mean else sum_params)(*args, **kwargs)
        reject_kwargs(op, p, ("out", "where"), "mask first with np.where")
        x = p["a"]
        keepdims = keepdims_flag(p["keepdims"])
        kw = {"axis": p["axis"], "keepdims": keepdims}
        if p["dtype"] is not None:
            kw["dtype"] = p["dtype"]
        y = op(*args, **kwargs)
        xv = array_value(x)
        axes = normalize_axis(p["axis"], xv.ndim)
        w = (~np.isnan(xv)).astype(real_dtype(xv.dtype))
        if mean:
            with np.errstate(invalid="ignore", divide="ignore"):
                w = (w / np.sum(w, axis=axes, keepdims=True)).astype(w.dtype)
        yd = dtype_of(y)
        dtypes = None if yd == xv.dtype else (xv.dtype, yd)  # dtype= computes in another
        return y, WeightedReduceRule(ids[0], w, axes, keepdims, xv.shape, op, dtypes=dtypes)

    return nan_maker


register(np.nansum)(_nan_maker(np.nansum, False))
register(np.nanmean)(_nan_maker(np.nanmean, True))
