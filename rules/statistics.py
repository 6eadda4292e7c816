"""Nonlinear reductions: prod, cumprod, var, std, average.

The axis handling, argument checks and helpers are those of
rules/reductions.py (shared in rules/_reduce.py): every ``axis`` form NumPy
accepts works (None, an int, a tuple, negative axes), with ``keepdims``; the
ndarray methods (``x.prod()``, ``x.std(0)``) call the same functions. Each rule is a
``ComposedRule``: a pullback written with differentiable NumPy calls (so
second derivatives are exact) and its pushforward.

Policies at non-differentiable points
-------------------------------------
* **std** of a constant slice (``std == 0``, where the derivative does not
  exist): zero cotangent (a subgradient; no NaN).
* **prod / cumprod with zeros**: exact. No zero: ``g * y / x``. Zeros: the
  product of the *other* entries, computed without division, so that a
  single zero gets the product of the rest and every other entry gets zero;
  the formulas are exact identities near the point, so second derivatives
  (HVP, ``grad`` of ``grad``) are exact too. Slices with two or more zeros
  (and ``cumprod`` with any zero) use an ``O(n**2)``-memory formula along
  the reduced axis.

Complex inputs (prod, cumprod, average) follow the JAX convention:
holomorphic, no conjugate. ``var`` and ``std`` of complex input are real and
get ``g * conj(dy/dx)``.

Unsupported arguments raise ``MissingRuleError`` / ``UntraceableError``
naming the way out: ``where=`` (use ``np.where`` first), ``out=``,
``mean=`` on var/std.
"""

import numpy as np

from chainrules.arrays import computes_eagerly, real_dtype
from chainrules.derived import unbroadcast
from chainrules.errors import MissingRuleError
from chainrules.registry import op_name, register
from chainrules.rule import ReverseRule
from chainrules.sweep_batch import slice_of
from chainrules.tangents import ZERO, Structural, is_zero
from chainrules.tracing import untraced

from ._linalg_batch import batch_count, jvp_batched
from ._reduce import (check_static, cum_params, dtype_of, expand_cotangent, flip_axis,
                      is_given, keepdims_flag, keepdims_shape, reduced_size, reject_kwargs,
                      sum_params, with_reduced_axes)
from ._util import array_value, conj, normalize_axis, shape_of


# -- nonlinear reductions: rules from a differentiable pullback ---------------------
class ComposedRule(ReverseRule):
    """A rule given by ``pb(g, *vals) -> cotangents`` and ``pf(tangents, *vals)``.

    ``vals`` are the values of the differentiable arguments (traced or not),
    ``which`` the positions of the traced ones (aligned with ``ids``). ``pb``
    is written with NumPy calls, so it can be differentiated again; the
    second-order term of ``pullback_with_tangents`` is the forward derivative
    of ``pb`` along the input tangents (computed with ``chainrules.jvp``).
    """

    __slots__ = ("ids", "which", "vals", "pb", "pf", "op")

    def __init__(self, ids, which, vals, pb, pf, op):
        self.ids = ids
        self.which = which
        self.vals = vals
        self.pb = pb
        self.pf = pf
        self.op = op

    def inputs(self):
        return self.ids

    def _cots(self, g, vals):
        cs = self.pb(g, *vals)
        return tuple(cs[k] for k in self.which)

    def pullback(self, g):
        # the reverse sweep pulls back only a nonzero cotangent (for several
        # outputs: a tuple with at least one nonzero entry), and
        # pullback_with_tangents below handles zero cotangents itself
        return list(zip(self.ids, self._cots(g, self.vals)))

    def pushforward(self, tangents):
        # Tape.forward calls it only when some input tangent is nonzero: a
        # rule of one traced input always gets an array, never ZeroTangent()
        full = [ZERO] * len(self.vals)
        for k, t in zip(self.which, tangents):
            full[k] = t
        return self.pf(full, *self.vals)

    def pullback_with_tangents(self, g, gd, tangents):
        from chainrules.api import jvp

        c = ZERO if _zero_cot(g) else self._cots(g, self.vals)
        cd = None if _zero_cot(gd) else list(self._cots(gd, self.vals))
        if not _zero_cot(g) and not all(is_zero(t) for t in tangents):
            vals, which = self.vals, self.which

            def pullback_at(*q):
                full = list(vals)
                for k, v in zip(which, q):
                    full[k] = v
                return self._cots(g, full)

            _, dd = jvp(pullback_at, tuple(vals[k] for k in which), tuple(tangents))
            dd = [ZERO if isinstance(d, Structural) else d for d in dd]
            cd = dd if cd is None else [_add(a, b) for a, b in zip(cd, dd)]
        out = []
        for i, nid in enumerate(self.ids):
            out.append((nid, ZERO if c is ZERO else c[i], ZERO if cd is None else cd[i]))
        return out

    # -- batches of directions: pb and pf are linear in the cotangent and the
    # tangents, so a batch of them is their forward derivative along the
    # batch: each function traced once and swept forward with the batch
    batched = True

    def pullback_batched(self, G):
        return list(zip(self.ids, self._cots_batched(G, batch_count(G))))

    def _cots_batched(self, G, k):
        """One batched cotangent per traced input, from a batch ``G``."""
        res = jvp_batched(lambda g: self._cots(g, self.vals), (slice_of(G, 0),), (G,), k,
                          op_name(self.op))
        return [t for _, t in res]

    def pushforward_batched(self, tangents):
        def pf(*ts):
            full = [ZERO] * len(self.vals)
            for m, t in zip(self.which, ts):
                full[m] = t
            out = self.pf(full, *self.vals)
            return out if type(out) is tuple else (out,)

        first = tuple(slice_of(t, 0) for t in tangents)
        res = [t for _, t in jvp_batched(pf, first, tuple(tangents), batch_count(tangents),
                                         op_name(self.op))]
        return tuple(res) if len(res) > 1 else res[0]

    def pullback_with_tangents_batched(self, g, GD, tangents):
        k = batch_count(GD, tangents)
        c = ZERO if _zero_cot(g) else self._cots(g, self.vals)
        cd = None if _zero_cot(GD) else self._cots_batched(GD, k)
        if not _zero_cot(g) and not all(is_zero(t) for t in tangents):
            vals, which = self.vals, self.which

            def pullback_at(*q):
                full = list(vals)
                for m, v in zip(which, q):
                    full[m] = v
                return self._cots(g, full)

            dd = [t for _, t in jvp_batched(pullback_at, tuple(vals[m] for m in which),
                                            tuple(tangents), k, op_name(self.op))]
            cd = dd if cd is None else [_add(a, b) for a, b in zip(cd, dd)]
        return [(nid, ZERO if c is ZERO else c[i], ZERO if cd is None else cd[i])
                for i, nid in enumerate(self.ids)]


def _add(a, b):
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return a + b


def _zero_cot(g):
    if type(g) is tuple:
        return all(is_zero(t) for t in g)
    return is_zero(g)


def _cast_to(c, in_dtype):
    """The cotangent ``c`` in the input's dtype (the real part for a real
    input), for rules whose ``dtype=`` computes in another dtype."""
    if c.dtype.kind == "c" and in_dtype.kind != "c":
        c = np.real(c)
    return c if c.dtype == in_dtype else c.astype(in_dtype)


def _to_last(x, axes):
    """Move ``axes`` to the end and flatten them into one; returns the array
    and a function mapping such an array back."""
    nd = x.ndim
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    xt = np.transpose(x, perm) if perm != list(range(nd)) else x
    tshape = xt.shape
    lead = tshape[:len(keep)]
    n = reduced_size(x.shape, axes)
    xf = np.reshape(xt, lead + (n,))
    inv = list(np.argsort(perm))

    def back(v):
        v = np.reshape(v, tshape)
        return np.transpose(v, inv) if perm != list(range(nd)) else v

    return xf, back


def _others_last(xf):
    """Product of the other entries along the last axis, exact with zeros."""
    xv = array_value(xf)
    if xv.shape[-1] == 1:  # a single entry: the empty product
        return np.ones_like(xv)
    zero = xv == 0
    # branch on the data only where it is at hand: an array, or a staged
    # value (cr.jit), whose plan then guards the branch taken (the n x n
    # form costs n times the memory)
    host = computes_eagerly(xv)
    if host and not zero.any():
        return np.prod(xf, axis=-1, keepdims=True) / xf
    counts = np.sum(zero, axis=-1, keepdims=True)
    dt = xv.dtype
    # a lazy array is not inspected: it takes the exact n x n form below
    if host and counts.max() <= 1:
        zf = zero.astype(dt)
        nz = 1 - zf
        safe = xf * nz + zf  # zeros replaced by a constant 1
        p = np.prod(safe, axis=-1, keepdims=True)
        # the zero entry (kept traced, for the second derivative) of one-zero
        # slices, 1 in zero-free slices: others_i = P * x_z / x_i off the zero
        w = np.sum(xf * zf, axis=-1, keepdims=True) + (counts == 0).astype(dt)
        return p * (zf + nz * w / safe)
    n = xv.shape[-1]
    eye = np.eye(n, dtype=dt)
    rows = np.reshape(xf, xv.shape[:-1] + (1, n)) * (1 - eye) + eye
    return np.prod(rows, axis=-1)  # row k: every entry but x_k


def _prod_others(x, axes):
    xf, back = _to_last(x, axes)
    return back(_others_last(xf))


@register(np.prod)
def _prod_maker(ids, *args, **kwargs):
    check_static(np.prod, ids, ("axis", "dtype"))
    p = sum_params(*args, **kwargs)
    reject_kwargs(np.prod, p, ("out", "where"), "mask first: np.prod(np.where(mask, x, 1))")
    x = p["a"]
    keepdims = keepdims_flag(p["keepdims"])
    y = np.prod(*args, **kwargs)
    shape = shape_of(x)
    axes = normalize_axis(p["axis"], len(shape))
    dtype = p["dtype"]
    init = p["initial"] if is_given(p["initial"]) else None

    def prod_pullback(g, xv):
        c = with_reduced_axes(g, shape, axes, keepdims) * _prod_others(xv, axes)
        if init is not None:
            c = c * init
        return (c if dtype is None else _cast_to(c, dtype_of(x)),)

    def prod_pushforward(ts, xv):
        t = ts[0]
        d = np.sum(t * _prod_others(xv, axes), axis=axes, keepdims=keepdims)
        if init is not None:
            d = d * init
        return d if dtype is None else d.astype(dtype)

    return y, ComposedRule((ids[0],), (0,), (x,), prod_pullback, prod_pushforward, np.prod)


def _cumprod_parts(xf):
    """For the last axis: ('fast', None) without zeros, else the matrix
    M[..., k, i] = prod_{j <= i, j != k} x_j and the mask i >= k."""
    xv = array_value(xf)
    if computes_eagerly(xv) and not (xv == 0).any():  # (staged: guarded)
        return None, None
    n = xv.shape[-1]
    eye = np.eye(n, dtype=xv.dtype)
    rows = np.reshape(xf, xv.shape[:-1] + (1, n)) * (1 - eye) + eye
    m = np.cumprod(rows, axis=-1)
    upper = np.triu(np.ones((n, n), dtype=real_dtype(xv.dtype)))
    return m, upper


@register(np.cumprod)
def _cumprod_maker(ids, *args, **kwargs):
    check_static(np.cumprod, ids, ("axis", "dtype"))
    p = cum_params(*args, **kwargs)
    reject_kwargs(np.cumprod, p, ("out",), "")
    x = p["a"]
    axis = p["axis"]
    dtype = p["dtype"]
    y = np.cumprod(x, axis=axis) if dtype is None else np.cumprod(x, axis=axis, dtype=dtype)
    shape = shape_of(x)
    # flattened: axis None, or a 0-d input (whose axis 0 gives shape (1,) too)
    flat = axis is None or not shape

    def to_last(v):
        if flat:
            return np.reshape(v, (-1,)), lambda c: np.reshape(c, shape)
        return _to_last(v, normalize_axis(axis, len(shape)))

    def out_to_last(v):  # the output of cumprod has the layout of x (or 1-D)
        return v if flat else to_last(v)[0]

    def cumprod_pullback(g, xv):
        xf, back = to_last(xv)
        gf = out_to_last(g)
        c = back(cumprod_cot(gf, xf))
        return (c if dtype is None else _cast_to(c, dtype_of(x)),)

    def cumprod_cot(gf, xf):  # along the last axis
        if shape_of(xf)[-1] == 1:
            return gf
        m, upper = _cumprod_parts(xf)
        if m is None:
            yf = np.cumprod(xf, axis=-1)
            last = -1 % yf.ndim
            return flip_axis(np.cumsum(flip_axis(gf * yf, last), axis=-1), last) / xf
        gk = np.reshape(gf, gf.shape[:-1] + (1, gf.shape[-1]))
        return np.sum(gk * m * upper, axis=-1)

    def cumprod_pushforward(ts, xv):
        t = ts[0]
        xf, back = to_last(xv)
        tf = to_last(t)[0]
        if shape_of(xf)[-1] == 1:
            d = tf
        else:
            m, upper = _cumprod_parts(xf)
            if m is None:
                d = np.cumprod(xf, axis=-1) * np.cumsum(tf / xf, axis=-1)
            else:
                tk = np.reshape(tf, tf.shape + (1,))
                d = np.sum(tk * m * upper, axis=-2)
        d = d if flat else back(d)
        return d if dtype is None else d.astype(dtype)

    return y, ComposedRule((ids[0],), (0,), (x,), cumprod_pullback, cumprod_pushforward,
                           np.cumprod)


def _var_params(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
                mean=None, correction=None):
    return locals()


def _var_maker(op, is_std):
    def var_maker(ids, *args, **kwargs):
        check_static(op, ids, ("axis", "dtype", "out", "ddof"))
        p = _var_params(*args, **kwargs)
        reject_kwargs(op, p, ("out", "where", "mean"),
                "compute it from differentiable pieces, e.g. "
                "np.mean(np.abs(x - m) ** 2)")
        x = p["a"]
        keepdims = keepdims_flag(p["keepdims"])
        ddof = p["correction"] if is_given(p["correction"]) else p["ddof"]
        kw = {"axis": p["axis"], "ddof": ddof, "keepdims": keepdims}
        if p["dtype"] is not None:
            kw["dtype"] = p["dtype"]
        y = op(x, **kw)
        shape = shape_of(x)
        axes = normalize_axis(p["axis"], len(shape))
        neff = reduced_size(shape, axes) - ddof

        def centred(xv):
            return xv - np.mean(xv, axis=axes, keepdims=True)

        def safe_std(xv):
            s = np.std(xv, axis=axes, ddof=ddof, keepdims=True)
            return s + (array_value(s) == 0).astype(real_dtype(x.dtype))

        def var_pullback(g, xv):
            c = with_reduced_axes(g, shape, axes, keepdims) * conj(centred(xv))
            c = c / (neff * safe_std(xv)) if is_std else c * (2.0 / neff)
            return (c if p["dtype"] is None else _cast_to(c, dtype_of(x)),)

        def var_pushforward(ts, xv):
            t = ts[0]
            prod = conj(centred(xv)) * t
            if prod.dtype.kind == "c":
                prod = np.real(prod)
            d = np.sum(prod, axis=axes, keepdims=True)
            d = d / (neff * safe_std(xv)) if is_std else d * (2.0 / neff)
            if not keepdims:
                d = np.reshape(d, shape_of(y))
            return d if p["dtype"] is None else d.astype(p["dtype"])

        return y, ComposedRule((ids[0],), (0,), (x,), var_pullback, var_pushforward, op)

    return var_maker


register(np.var)(_var_maker(np.var, False))
register(np.std)(_var_maker(np.std, True))


def _average_params(a, axis=None, weights=None, returned=False, keepdims=False):
    return locals()


@register(np.average)
def _average_maker(ids, *args, **kwargs):
    p = _average_params(*args, **kwargs)
    a, w = p["a"], p["weights"]
    names = ("a", "axis", "weights", "returned", "keepdims")
    for i, name in zip(ids[1:], names[1:]):
        if i is not None and name != "weights":
            raise MissingRuleError(f"numpy.average: argument {name!r} must not be traced")
    w_id = ids[2] if len(ids) > 2 else None
    keepdims = keepdims_flag(p["keepdims"])
    returned = bool(p["returned"])
    out = np.average(*args, **kwargs)
    shape = shape_of(a)
    axes = normalize_axis(p["axis"], len(shape))
    if w is None:
        rule = _unweighted_average_rule(ids[0], a, p["axis"], shape, axes, keepdims, returned)
    else:
        layout = _weights_layout(shape, shape_of(w), p["axis"])
        out_shape = shape_of(out[0] if returned else out)
        pb = _weighted_average_pullback(shape, axes, keepdims, returned, layout)
        pf = _weighted_average_pushforward(shape, axes, returned, layout, out_shape)
        which = tuple(k for k, i in ((0, ids[0]), (1, w_id)) if i is not None)
        rids = tuple(i for i in (ids[0], w_id) if i is not None)
        rule = ComposedRule(rids, which, (a, w), pb, pf, np.average)
    if returned:
        from chainrules.rule import MultiOutput

        return MultiOutput(tuple(out)), rule
    return out, rule


def _unweighted_average_rule(a_id, a, axis, shape, axes, keepdims, returned):
    """The rule of ``np.average`` without weights: a mean over ``axes``."""
    n = reduced_size(shape, axes)

    def avg_pullback(g, av):
        g0 = g[0] if returned else g
        if is_zero(g0):
            return (ZERO,)
        return (expand_cotangent(g0 / n, shape, axes, keepdims),)

    def avg_pushforward(ts, av):
        t = ts[0]
        d = ZERO if is_zero(t) else np.mean(t, axis=axis, keepdims=keepdims)
        return (d, ZERO) if returned else d

    return ComposedRule((a_id,), (0,), (a,), avg_pullback, avg_pushforward, np.average)


def _weights_layout(shape, wshape, axis):
    """``(bshape, to_b, from_b)``: the weights' shape broadcastable against
    ``a`` (of ``shape``) and the maps from the weights (of ``wshape``: ``a``'s
    shape, or 1-D along ``axis`` for one axis, the reduced axes' shape for a
    tuple) to that layout and back."""
    if wshape == shape:
        return shape, _identity, _identity
    nd = len(shape)
    ax = axis if isinstance(axis, (tuple, list)) else (axis,)
    ax = [i % nd for i in ax]
    perm = [int(i) for i in np.argsort(ax)]
    bshape = tuple(s if i in ax else 1 for i, s in enumerate(shape))
    sorted_w = tuple(wshape[i] for i in perm)

    def to_b(wv):
        return np.reshape(np.transpose(wv, perm), bshape)

    def from_b(c):
        return np.transpose(np.reshape(c, sorted_w), [int(i) for i in np.argsort(perm)])

    return bshape, to_b, from_b


def _identity(v):
    return v


def _weighted_average_pullback(shape, axes, keepdims, returned, layout):
    """The pullback ``(g, av, wv) -> (ca, cw)`` of a weighted ``np.average``
    (``g`` a pair of the average's and the weights' sum's for ``returned``)."""
    bshape, to_b, from_b = layout

    def avg_pullback(g, av, wv):
        g0, g1 = (g if returned else (g, ZERO))
        wb = to_b(wv)
        s = np.sum(wb, axis=axes, keepdims=True)
        ca = cw = ZERO
        if not is_zero(g0):
            gk = with_reduced_axes(g0, shape, axes, keepdims)
            ca = np.broadcast_to(gk * wb / s, shape)
            avg = np.sum(av * wb, axis=axes, keepdims=True) / s
            cw = gk * (av - avg) / s
        if not is_zero(g1):
            cw = cw + with_reduced_axes(g1, shape, axes, keepdims)
        # g0 or g1 is nonzero (ComposedRule pulls back no zero cotangent),
        # so cw is an array
        cw = from_b(unbroadcast(np.broadcast_to(cw, shape), bshape))
        if cw.dtype.kind == "c" and wv.dtype.kind != "c":
            cw = np.real(cw)  # real weights get real cotangents
        if not is_zero(ca) and ca.dtype.kind == "c" and av.dtype.kind != "c":
            ca = np.real(ca)
        return (ca, cw)

    return avg_pullback


def _weighted_average_pushforward(shape, axes, returned, layout, out_shape):
    """The pushforward ``(ts, av, wv) -> d`` of a weighted ``np.average``
    (``(d, tangent of the weights' sum)`` for ``returned``)."""
    to_b = layout[1]

    def avg_pushforward(ts, av, wv):
        ta, tw = ts
        wb = to_b(wv)
        s = np.sum(wb, axis=axes, keepdims=True)
        d = ZERO
        if not is_zero(ta):
            d = np.sum(ta * wb, axis=axes, keepdims=True) / s
        ds = ZERO
        if not is_zero(tw):
            twb = to_b(tw)
            avg = np.sum(av * wb, axis=axes, keepdims=True) / s
            d = d + np.sum((av - avg) * twb, axis=axes, keepdims=True) / s
            ds = np.broadcast_to(np.sum(twb, axis=axes, keepdims=True),
                                 keepdims_shape(shape, axes))
        # ta or tw is nonzero (the forward sweep pushes no all-zero
        # tangents), so d is an array
        d = np.reshape(np.broadcast_to(d, keepdims_shape(shape, axes)), out_shape)
        if returned:
            if not is_zero(ds):
                ds = np.reshape(ds, out_shape)
            return (d, ds)
        return d

    return avg_pushforward
