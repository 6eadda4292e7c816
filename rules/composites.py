"""NumPy functions that are compositions of differentiable operations.

Each is registered with ``chainrules.registry.decompose``: on traced
arguments it runs as NumPy calls on them, each recorded by its own rule, so
pullback, pushforward and HVP come from those rules (no maths written
twice). Everything that does not depend on the traced values (index arrays,
interpolation fractions, spacings, masks of which elements are selected)
is computed on plain values, as a constant.

Creation with traced endpoints (``linspace``, ``logspace``, ``geomspace``),
calculus (``gradient``, ``trapezoid``), polynomials (``polyval``,
``polyfit``), interpolation (``interp``), 1-D ``convolve``/``correlate``.
Statistics, order statistics and the NaN-skipping reductions are in
``composites_stats``; array-API names in ``array_api``.
"""

import numpy as np

from chainrules.arrays import ndim_of, shape_of
from chainrules.derived_common import widened
from chainrules.errors import MissingRuleError
from chainrules.registry import decompose
from chainrules.tracing import is_traced, untraced

from ._util import array_like

__all__ = []


_asarray = array_like


def _result_dtype(*vals):
    return np.result_type(*[untraced(v) for v in vals], 1.0)


# -- creation ----------------------------------------------------------------------
@decompose(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
              *, device=None):
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = _asarray(start), _asarray(stop)
    dt = _result_dtype(start, stop)
    div = (num - 1) if endpoint else num
    delta = stop - start
    nd = max(ndim_of(start), ndim_of(stop))
    k = np.arange(num, dtype=dt).reshape((-1,) + (1,) * nd)
    if div > 0:
        step = delta / div
        y = k * step + start
        if endpoint and num > 1:
            # the last sample is exactly stop, as in NumPy
            y = np.concatenate([y[:-1], np.reshape(stop + 0 * delta, (1,) + shape_of(y)[1:])])
    else:
        step = np.full(shape_of(delta), np.nan) if retstep else None  # NumPy's NaN step
        y = k * delta + start
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None:
        y = y.astype(dtype)
    return (y, step) if retstep else y


@decompose(np.logspace)
def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = np.power(base, _linspace(start, stop, num, endpoint, axis=axis))
    return y if dtype is None else y.astype(dtype)


@decompose(np.geomspace)
def _geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start, stop = _asarray(start), _asarray(stop)
    sv, ev = np.asarray(untraced(start)), np.asarray(untraced(stop))
    if np.any(sv == 0) or np.any(ev == 0):
        raise ValueError("Geometric sequence cannot include zero")
    if np.iscomplexobj(sv) or np.iscomplexobj(ev) or np.any(np.sign(sv) != np.sign(ev)):
        raise MissingRuleError(
            "numpy.geomspace with complex endpoints or endpoints of different signs has "
            "no rule; use np.exp(np.linspace(np.log(start), np.log(stop), num))")
    sign = np.sign(sv)  # constant: both endpoints share it
    y = sign * np.exp(_linspace(np.log(sign * start), np.log(sign * stop), num, endpoint))
    if num > 0:  # exact endpoints, as NumPy sets them
        first = np.reshape(start + 0 * stop, (1,) + shape_of(y)[1:])
        if endpoint and num > 1:
            last = np.reshape(stop + 0 * start, (1,) + shape_of(y)[1:])
            y = np.concatenate([first, y[1:-1], last]) if num > 2 else np.concatenate([first, last])
        else:
            y = np.concatenate([first, y[1:]])
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is None:  # NumPy computes geomspace in float64 at least
        dt = np.result_type(untraced(start), untraced(stop), np.float64)
        return y if untraced(y).dtype == dt else y.astype(dt)
    return y.astype(dtype)


# -- calculus --------------------------------------------------------------------------
@decompose(np.trapezoid)
def _trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _asarray(y)
    lo = [slice(None)] * ndim_of(y)
    hi = [slice(None)] * ndim_of(y)
    lo[axis], hi[axis] = slice(None, -1), slice(1, None)
    if x is None:
        d = dx
    else:
        x = _asarray(x)
        d = np.diff(x, axis=axis if ndim_of(x) > 1 else -1)
        if ndim_of(x) == 1 and ndim_of(y) > 1:
            shape = [1] * ndim_of(y)
            shape[axis] = shape_of(d)[0]  # as NumPy: broadcast when one length is 1
            d = np.reshape(d, shape)
    return np.sum(d * (y[tuple(hi)] + y[tuple(lo)]) / 2.0, axis=axis)


def _gradient_axis(f, h, axis, edge_order):
    n = shape_of(f)[axis]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")

    def sl(a, b):
        idx = [slice(None)] * ndim_of(f)
        idx[axis] = slice(a, b)
        return tuple(idx)

    def take(i):
        idx = [slice(None)] * ndim_of(f)
        idx[axis] = slice(i, i + 1) if i != -1 else slice(-1, None)
        return f[tuple(idx)]

    hv = np.asarray(h, dtype=float)
    if hv.ndim == 0:  # uniform spacing
        h = float(hv)
        interior = (f[sl(2, None)] - f[sl(None, -2)]) / (2.0 * h)
        if edge_order == 1:
            first = (take(1) - take(0)) / h
            last = (take(-1) - take(n - 2)) / h
        else:
            first = (-1.5 * take(0) + 2.0 * take(1) - 0.5 * take(2)) / h
            last = (0.5 * take(n - 3) - 2.0 * take(n - 2) + 1.5 * take(-1)) / h
        return np.concatenate([first, interior, last], axis=axis)
    # coordinates: NumPy's second-order non-uniform formulas (constant weights)
    dx = np.diff(hv)
    dx1, dx2 = dx[:-1], dx[1:]
    shape = [1] * ndim_of(f)
    shape[axis] = n - 2

    def w(v):
        return np.reshape(v, shape)

    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    dt = np.result_type(untraced(f).dtype, np.float32)
    a, b, c, dx = a.astype(dt), b.astype(dt), c.astype(dt), dx.astype(dt)  # float32 stays
    interior = w(a) * f[sl(None, -2)] + w(b) * f[sl(1, -1)] + w(c) * f[sl(2, None)]
    if edge_order == 1:
        first = (take(1) - take(0)) / dx[0]
        last = (take(-1) - take(n - 2)) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        a0, b0, c0 = -(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
        first = a0 * take(0) + b0 * take(1) + c0 * take(2)
        d1, d2 = dx[-2], dx[-1]
        a1, b1, c1 = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))
        last = a1 * take(n - 3) + b1 * take(n - 2) + c1 * take(-1)
    return np.concatenate([first, interior, last], axis=axis)


@decompose(np.gradient)
def _gradient(f, *varargs, axis=None, edge_order=1):
    f = _asarray(f)
    nd = ndim_of(f)
    if nd == 0:  # as NumPy: no axis to take differences along
        np.gradient(np.asarray(untraced(f)), *varargs, axis=axis, edge_order=edge_order)
    axes = tuple(range(nd)) if axis is None else (
        tuple(a % nd for a in axis) if isinstance(axis, (tuple, list)) else (axis % nd,))
    if any(is_traced(v) for v in varargs):
        raise MissingRuleError("numpy.gradient with traced spacing has no rule; the "
                               "spacing is differentiated as a constant only")
    if not varargs:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    else:
        spacing = list(varargs)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    out = [_gradient_axis(f, h, ax, edge_order) for h, ax in zip(spacing, axes)]
    return out[0] if len(out) == 1 else tuple(out)


# -- polynomials -------------------------------------------------------------------------
@decompose(np.polyval)
def _polyval(p, x):
    p, x = _asarray(p), _asarray(x)
    y = np.zeros(shape_of(x), dtype=_result_dtype(p, x))  # as NumPy's own loop
    for i in range(shape_of(p)[0]):
        y = y * x + p[i]
    return y


@decompose(np.polyfit)
def _polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    if is_traced(x):
        raise MissingRuleError("numpy.polyfit with traced sample points x has no rule; "
                               "x is differentiated as a constant only")
    if full or cov:
        raise MissingRuleError("numpy.polyfit(full=True / cov=True) has no rule; call it "
                               "with the default outputs")
    xv = np.asarray(x, dtype=float)
    y = _asarray(y)
    order = int(deg) + 1
    lhs = np.vander(xv, order)
    rhs = y
    if w is not None:
        wv = np.asarray(w, dtype=float)
        lhs = lhs * wv[:, None]
        rhs = rhs * (wv if ndim_of(y) == 1 else wv[:, None])
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    # the least-squares solution is linear in y: a constant pseudo-inverse
    pinv = np.linalg.pinv(lhs / scale, rcond=1e-15 if rcond is None else rcond)
    c = pinv @ rhs
    return (c.T / scale).T


# -- interpolation -------------------------------------------------------------------------
@decompose(np.interp)
def _interp(x, xp, fp, left=None, right=None, period=None):
    if is_traced(xp):
        raise MissingRuleError("numpy.interp with traced xp (the sample coordinates) has "
                               "no rule; differentiate x and fp, keep xp constant")
    xpv = np.asarray(xp, dtype=float)
    # NumPy interpolates in float64 (complex128): float32 values differenced
    # as they are would round the slopes, and the result, to float32
    fp = widened(_asarray(fp), np.dtype(np.complex128))
    x = _asarray(x)
    xv = np.asarray(untraced(x), dtype=float)
    if period is not None:
        period = abs(float(period))
        x = x % period
        xv = xv % period
        xpv = xpv % period
        order = np.argsort(xpv, kind="stable")
        xpv = np.concatenate([xpv[order][-1:] - period, xpv[order], xpv[order][:1] + period])
        fp = fp[order]
        fp = np.concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xpv.shape[0]
    if n == 1:
        y = np.zeros_like(xv) + fp[0] + 0 * x
    else:
        i = np.clip(np.searchsorted(xpv, xv, side="right") - 1, 0, n - 2)
        x0, x1 = xpv[i], xpv[i + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (x - x0) / (x1 - x0)
        t = np.where(x1 == x0, 0.0, t)
        y = fp[i] + t * (fp[i + 1] - fp[i])
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right
    y = np.where(xv < xpv[0], lo + 0 * y, y)
    y = np.where(xv > xpv[-1], hi + 0 * y, y)
    return y


# -- 1-D convolution ------------------------------------------------------------------------
def _full_convolve(a, v):
    n, m = shape_of(a)[0], shape_of(v)[0]
    # rows of a Toeplitz matrix gathered from zero-padded a: T[k, j] = a[k - j]
    if m > 1:
        zeros = np.zeros(m - 1, dtype=_result_dtype(a))
        a = np.concatenate([zeros, a, zeros])
    k = np.arange(n + m - 1)[:, None]
    j = np.arange(m)[None, :]
    return a[k - j + m - 1] @ v


def _mode_slice(full, n, m, mode):
    if mode == "full":
        return full
    if mode == "same":
        size = max(n, m)
        start = (n + m - 1 - size) // 2
        return full[start:start + size]
    if mode == "valid":
        size = max(n, m) - min(n, m) + 1
        start = min(n, m) - 1
        return full[start:start + size]
    raise ValueError(f"mode must be one of 'full', 'same', 'valid', not {mode!r}")


@decompose(np.convolve)
def _convolve(a, v, mode="full"):
    a, v = _asarray(a), _asarray(v)
    a = np.ravel(a) if ndim_of(a) != 1 else a
    v = np.ravel(v) if ndim_of(v) != 1 else v
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0 or m == 0:
        raise ValueError("v cannot be empty" if m == 0 else "a cannot be empty")
    full = _full_convolve(a, v) if n >= m else _full_convolve(v, a)
    return _mode_slice(full, n, m, mode)


@decompose(np.correlate)
def _correlate(a, v, mode="valid"):
    a, v = _asarray(a), _asarray(v)
    n, m = shape_of(a)[0], shape_of(v)[0]
    vr = np.conjugate(v)[::-1] if np.dtype(_result_dtype(v)).kind == "c" else v[::-1]
    if n >= m:
        return _mode_slice(_full_convolve(a, vr), n, m, mode)
    # NumPy swaps the inputs and reverses the result when v is longer
    ar = np.conjugate(a)[::-1] if np.dtype(_result_dtype(a)).kind == "c" else a[::-1]
    out = _mode_slice(_full_convolve(v, ar), n, m, mode)[::-1]
    return np.conjugate(out) if np.dtype(_result_dtype(out)).kind == "c" else out
