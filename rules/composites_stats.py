"""Statistics as compositions of differentiable operations (see
``composites``): ``cov``, ``corrcoef``, the order statistics (``median``,
``percentile``, ``quantile`` and their NaN-skipping forms), the remaining
NaN-skipping reductions, ``unique``, ``histogram`` (no derivative) and
``apply_along_axis`` / ``apply_over_axes``.

Order statistics follow the tie policy of ``np.max``: the value selected at
a rank is the mean of the elements equal to it, so its cotangent is split
equally among them (the weights are constants computed on the plain values,
as ``max``'s are). Supported methods: ``linear`` (the default), ``lower``,
``higher``, ``nearest``, ``midpoint``.
"""

import numpy as np

from chainrules.arrays import ndim_of, shape_of
from chainrules.derived_common import widened
from chainrules.errors import MissingRuleError
from chainrules.registry import decompose
from chainrules.tracing import dispatch, is_traced, untraced

from ._util import array_like, array_value, normalize_axis, on_plain_values

__all__ = []


_asarray = array_like


# -- covariance -------------------------------------------------------------------------
@decompose(np.cov)
def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
         *, dtype=None):
    X = _asarray(m)
    dt = np.result_type(array_value(X).dtype, np.float64)  # NumPy computes in float64
    if dtype is None and array_value(X).dtype != dt:
        X = X.astype(dt)
    if ndim_of(X) > 2:
        raise ValueError("m has more than 2 dimensions")
    if ndim_of(X) < 2:
        X = np.reshape(X, (1, -1))
    if not rowvar and shape_of(X)[0] != 1:
        X = X.T
    if y is not None:
        Y = _asarray(y)
        Y = np.reshape(Y, (1, -1)) if ndim_of(Y) < 2 else Y
        if not rowvar and shape_of(Y)[0] != 1:
            Y = Y.T
        X = np.concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = shape_of(X)[1]
    w = None
    if fweights is not None:
        w = np.asarray(fweights, dtype=float)
    if aweights is not None:
        aw = np.asarray(aweights, dtype=float)
        w = aw if w is None else w * aw
    if w is None:
        avg = np.mean(X, axis=1)
        fact = n - ddof
        Xc = X - avg[:, None]
        c = Xc @ np.conjugate(Xc).T
    else:
        w_sum = np.sum(w)
        avg = np.sum(X * w, axis=1) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aw) / w_sum
        Xc = X - avg[:, None]
        c = (Xc * w) @ np.conjugate(Xc).T
    c = c / fact
    if dtype is not None:
        c = c.astype(dtype)
    return c[0, 0] if shape_of(c) == (1, 1) else c


@decompose(np.corrcoef)
def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = _cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:
        return c / c
    d = np.real(np.diagonal(c))
    s = np.sqrt(d)
    c = c / s[:, None]
    c = c / s[None, :]
    # NumPy clips the real part to [-1, 1] (rounding only)
    if np.dtype(np.result_type(untraced(c))).kind == "c":
        return np.clip(np.real(c), -1, 1) + 1j * np.imag(c)
    return np.clip(c, -1, 1)


# -- order statistics ------------------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile(a, q, axis, keepdims, method, skip_nan, name, dtype=None):
    if method not in _METHODS:
        raise MissingRuleError(
            f"numpy.{name} with method={method!r} has no rule; use one of {_METHODS}")
    a = _asarray(a)
    xv = np.asarray(array_value(a))
    # the ranks in q's dtype when it is a float one, as NumPy computes them
    # (np.float32(0.4) * 5 is 2.0 in float32, 2.0000000298 in float64)
    qv = np.asarray(q)
    if qv.dtype.kind != "f":
        qv = qv.astype(float)
    nd = ndim_of(a)
    if nd == 0 and axis is not None:  # as NumPy: no axis to take quantiles along
        raise np.exceptions.AxisError(axis if isinstance(axis, int) else axis[0], 0)
    axes = normalize_axis(axis, nd)
    kd = tuple(1 if i in axes else s for i, s in enumerate(shape_of(a)))
    # the rank of every quantile in every slice (the count skips NaNs for nan*)
    valid = ~np.isnan(xv) if skip_nan else np.ones(xv.shape, bool)
    n = np.sum(valid, axis=axes, keepdims=True)  # shape kd
    qq = np.reshape(qv, qv.shape + (1,) * nd)
    pos = qq * (n - 1).astype(qq.dtype)
    lo = np.floor(pos)
    frac = pos - lo
    if method == "lower":
        frac = np.zeros_like(frac)
    elif method == "higher":
        lo, frac = np.ceil(pos), np.zeros_like(frac)
    elif method == "nearest":
        lo, frac = np.round(pos), np.zeros_like(frac)  # NumPy rounds half to even
    elif method == "midpoint":
        frac = np.where(pos > lo, 0.5, 0.0)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    # the values at ranks lo and hi (plain), then constant selection weights
    moved = np.moveaxis(xv, axes, tuple(range(nd - len(axes), nd)))
    flat = moved.reshape(moved.shape[:nd - len(axes)] + (-1,))
    srt = np.sort(flat, axis=-1)  # NaNs sort last

    def at(rank):
        r = np.broadcast_to(rank, qv.shape + kd)
        r = np.moveaxis(r, tuple(qv.ndim + i for i in axes),
                        tuple(range(qv.ndim + nd - len(axes), qv.ndim + nd)))
        r = r.reshape(r.shape[:qv.ndim + nd - len(axes)] + (1,))
        s = np.broadcast_to(srt, r.shape[:-1] + srt.shape[-1:])
        v = np.take_along_axis(s, np.clip(r, 0, None).astype(np.intp), axis=-1)[..., 0]
        v = v.reshape(v.shape + (1,) * len(axes))
        return np.moveaxis(v, tuple(range(qv.ndim + nd - len(axes), qv.ndim + nd)),
                           tuple(qv.ndim + i for i in axes))

    a0 = np.where(np.isnan(xv), 0, a) if skip_nan else a  # NaN * 0 would be NaN

    def pick(value):
        eq = (xv == value)  # NaN equals nothing
        cnt = np.sum(eq, axis=tuple(qv.ndim + i for i in axes), keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = eq / cnt
        w = np.where(cnt > 0, w, 0.0).astype(np.result_type(xv.dtype, np.float32))
        ax = tuple(qv.ndim + i for i in axes)
        return np.sum(a0 * w, axis=ax, keepdims=True)

    v_lo, v_hi = at(lo), at(hi)
    y = pick(v_lo)
    if np.any(frac != 0):
        # as NumPy, in the dtype of its result (float32 values with an
        # array of q interpolate in float64): the mean of the middle two
        # for a median, else its lerp, a + (b - a) t below t = 0.5 and
        # b - (b - a) (1 - t) from there
        y_hi = pick(v_hi)
        if name in ("median", "nanmedian"):  # (an odd count in a slice: its middle one)
            y = np.where(frac != 0, (y + y_hi) / 2, y)
        else:
            rdt = array_value(y).dtype if dtype is None else dtype
            d = y_hi - y  # (in the values' dtype, as NumPy)
            y = np.where(frac >= 0.5, widened(y_hi, rdt) - d * (1.0 - frac).astype(rdt),
                         widened(y, rdt) + d * frac.astype(rdt))
    if skip_nan:  # all-NaN slices give NaN, as NumPy
        y = np.where(n > 0, y, np.nan)
    if not keepdims:
        y = np.reshape(y, qv.shape + tuple(s for i, s in enumerate(shape_of(a))
                                           if i not in axes))
    return y


def _qdecomp(op, name, scale, skip_nan):
    def qfun(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
        if out is not None:
            raise MissingRuleError(f"numpy.{name}(..., out=...) on traced values; assign "
                                   "the result instead")
        if weights is not None:
            raise MissingRuleError(f"numpy.{name} with weights= has no rule")
        if interpolation is not None:
            method = interpolation
        if is_traced(q):
            raise MissingRuleError(f"numpy.{name}: q is a constant (the derivative with "
                                   "respect to the probability is not implemented)")
        # the dtype NumPy gives (it depends on q's kind and the method)
        out_dt = op(np.zeros((1,), array_value(_asarray(a)).dtype), q, method=method).dtype
        # (q / 100 in q's own dtype, as NumPy: np.float32(40) is 0.4 in float32)
        y = _quantile(a, np.true_divide(q, scale) if scale != 1 else q, axis, bool(keepdims),
                      method, skip_nan, name, out_dt)
        return y if array_value(y).dtype == out_dt else y.astype(out_dt)
    decompose(op)(qfun)
    return qfun


_qdecomp(np.quantile, "quantile", 1.0, False)
_qdecomp(np.nanquantile, "nanquantile", 1.0, True)
_qdecomp(np.percentile, "percentile", 100.0, False)
_qdecomp(np.nanpercentile, "nanpercentile", 100.0, True)


@decompose(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise MissingRuleError("numpy.median(..., out=...) on traced values")
    return _quantile(a, np.asarray(0.5), axis, keepdims, "linear", False, "median")


@decompose(np.nanmedian)
def _nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise MissingRuleError("numpy.nanmedian(..., out=...) on traced values")
    return _quantile(a, np.asarray(0.5), axis, keepdims, "linear", True, "nanmedian")


# -- NaN-skipping reductions ---------------------------------------------------------------
def _nan_mask(a):
    return np.isnan(array_value(a))


@decompose(np.nanprod)
def _nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
             where=np._NoValue):
    a = _asarray(a)
    kw = {} if initial is np._NoValue else {"initial": initial}
    return np.prod(np.where(_nan_mask(a), 1, a), axis=axis, dtype=dtype, keepdims=keepdims,
                   **kw)


@decompose(np.nancumsum)
def _nancumsum(a, axis=None, dtype=None, out=None):
    a = _asarray(a)
    return np.cumsum(np.where(_nan_mask(a), 0, a), axis=axis, dtype=dtype)


@decompose(np.nancumprod)
def _nancumprod(a, axis=None, dtype=None, out=None):
    a = _asarray(a)
    return np.cumprod(np.where(_nan_mask(a), 1, a), axis=axis, dtype=dtype)


@decompose(np.nanvar)
def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
            mean=np._NoValue, correction=np._NoValue):
    if correction is not np._NoValue:
        ddof = correction
    a = _asarray(a)
    nan = _nan_mask(a)
    # counts in the real dtype of the input (a complex input's variance is real)
    real = np.empty(0, array_value(a).dtype).real.dtype
    keep = (~nan).astype(np.result_type(real, np.float32))
    n = np.sum(keep, axis=axis, keepdims=True)
    x0 = np.where(nan, 0, a)
    m = np.sum(x0, axis=axis, keepdims=True) / np.where(n > 0, n, 1)
    d = np.where(nan, 0, a - m)
    sq = np.real(d * np.conjugate(d)) if np.iscomplexobj(array_value(a)) else d * d
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.sum(sq, axis=axis, keepdims=True) / (n - ddof)
    v = np.where(n - ddof > 0, v, np.nan)
    if not keepdims:
        v = np.squeeze(v, axis=axis) if axis is not None else np.reshape(v, ())
    return v if dtype is None else v.astype(dtype)


@decompose(np.nanstd)
def _nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
            mean=np._NoValue, correction=np._NoValue):
    v = _nanvar(a, axis, dtype, out, ddof, keepdims, correction=correction)
    # as np.std's rule: derivative 0 where the deviation is 0 (a single value
    # or equal values), not 0 * inf
    zero = array_value(v) == 0
    return np.where(zero, 0, np.sqrt(np.where(zero, 1, v)))


# -- unique, histogram ------------------------------------------------------------------------
@decompose(np.unique)
def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
            *, equal_nan=True, sorted=True):
    """Values differentiable (each unique value's cotangent goes to its first
    occurrence, a valid subgradient); indices and counts are plain."""
    if axis is not None:
        np.unique(np.asarray(array_value(ar)), axis=axis)  # NumPy's own errors first
        raise MissingRuleError("numpy.unique(axis=...) on traced values has no rule; "
                               "flatten first or pass the plain values")
    a = _asarray(ar)
    xv = np.asarray(array_value(a))
    u, first, inverse, counts = np.unique(xv, return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=equal_nan)
    values = np.ravel(a)[first]
    out = [values]
    if return_index:
        out.append(first)
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


for _op in (np.histogram, np.histogram_bin_edges, np.histogram2d, np.histogramdd):
    decompose(_op)(on_plain_values(_op))  # counts and bin edges: no derivative


# -- apply along / over axes --------------------------------------------------------------------
@decompose(np.apply_along_axis)
def _apply_along_axis(func1d, axis, arr, *args, **kwargs):
    arr = _asarray(arr)
    nd = ndim_of(arr)
    axis = axis % nd
    moved = np.moveaxis(arr, axis, -1)
    outer = shape_of(moved)[:-1]
    results = [func1d(moved[idx], *args, **kwargs) for idx in np.ndindex(*outer)]
    if not results:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    res = np.stack([_asarray(r) for r in results])
    rshape = shape_of(res)[1:]
    res = np.reshape(res, tuple(outer) + tuple(rshape))
    # the function's output axes go where the input axis was
    k = len(rshape)
    src = tuple(range(len(outer), len(outer) + k))
    dst = tuple(range(axis, axis + k))
    return np.moveaxis(res, src, dst) if k else res


@decompose(np.apply_over_axes)
def _apply_over_axes(func, a, axes):
    val = _asarray(a)
    nd = ndim_of(val)
    for ax in (axes if isinstance(axes, (list, tuple, np.ndarray)) else [axes]):
        ax = int(ax) % nd
        res = func(val, ax)
        if ndim_of(res) == nd:
            val = res
        elif ndim_of(res) == nd - 1:
            val = np.expand_dims(res, ax)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return val


# -- max / min with initial= and where= -------------------------------------------------------
def _extreme(op, fill, combine):
    def extreme(a, axis=None, out=None, keepdims=False, initial=np._NoValue,
                where=np._NoValue):
        if initial is np._NoValue and where is np._NoValue:
            kw = {"axis": axis, "keepdims": keepdims}
            return dispatch(op, (a,), kw if out is None else dict(kw, out=out))
        if out is not None:
            raise MissingRuleError(f"numpy.{op.__name__}(..., out=...) on traced values")
        a = _asarray(a)
        if where is not np._NoValue:
            w = np.asarray(array_value(where), bool)
            if initial is np._NoValue and not np.all(np.any(
                    np.broadcast_to(w, shape_of(a)), axis=axis)):
                raise ValueError(f"zero-size reduction in numpy.{op.__name__} with "
                                 "where= needs an initial value")
            a = np.where(w, a, fill)
        y = op(a, axis=axis, keepdims=keepdims)
        return y if initial is np._NoValue else combine(y, initial)
    return extreme


for _op, _fill, _comb in ((np.max, -np.inf, np.maximum), (np.amax, -np.inf, np.maximum),
                          (np.min, np.inf, np.minimum), (np.amin, np.inf, np.minimum)):
    decompose(_op)(_extreme(_op, _fill, _comb))
