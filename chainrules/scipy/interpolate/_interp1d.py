"""``scipy.interpolate.interp1d`` with traced data values and query points,
for every ``kind``.

SciPy's own object is built on the values first: it checks the arguments,
sorts ``x``, settles ``bounds_error`` and the fill values, and its call on
the query's values raises SciPy's errors for points out of bounds and
gives the result's dtype. The result is then computed from the traced
values: ``linear`` on the interval found as SciPy finds it (``[x[i-1],
x[i]]`` for ``x[i-1] < q <= x[i]``, so at a sample point the derivative in
the query is the slope on its left, at the first point the slope on its
right); ``nearest``, ``nearest-up``, ``previous`` and ``next`` gather the
data (derivative 0 in the query); the spline kinds (``zero``, ``slinear``,
``quadratic``, ``cubic``, an integer order) are ``make_interp_spline``'s.
Points out of bounds take the fill values, or extrapolate.
"""

import numpy as np
import scipy.interpolate as _si

from chainrules.tracing import is_traced, untraced

from ._bspline import make_interp_spline
from ._ppoly import _column, any_traced, constant, to_axis

__all__ = ["interp1d"]

_SPLINE_ORDERS = {"zero": 0, "slinear": 1, "quadratic": 2, "cubic": 3}


def _extrapolates(fill_value):
    return isinstance(fill_value, str) and fill_value == "extrapolate"


class interp1d:
    """``scipy.interpolate.interp1d``: ``y`` and the query points may be
    traced (``x`` and the fill values are constants)."""

    def __init__(self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                 fill_value=np.nan, assume_sorted=False):
        x = constant(x, "the sample points x", "interp1d")
        if not _extrapolates(fill_value):
            constant(fill_value, "fill_value", "interp1d")
        ref = _si.interp1d(x, untraced(y), kind, axis, copy, bounds_error, fill_value,
                           assume_sorted)
        self._ref = ref
        self.x, self.axis, self.bounds_error = ref.x, ref.axis, ref.bounds_error
        self.fill_value = ref.fill_value
        self._kind = ref._kind
        if is_traced(y):
            if not assume_sorted:
                y = np.take(y, np.argsort(x, kind="mergesort"), axis=axis)
            if np.result_type(y).kind not in "fc":
                y = y.astype(np.float64)
            self.y = y
            yt = np.moveaxis(y, ref.axis, 0)
        else:
            self.y = ref.y
            yt = np.moveaxis(ref.y, ref.axis, 0)
        self._yt = yt
        below, above = getattr(ref, "_fill_value_below", None), \
            getattr(ref, "_fill_value_above", None)
        if _extrapolates(fill_value) and kind == "previous":
            below, above = np.nan, yt[-1]
        elif _extrapolates(fill_value) and kind == "next":
            below, above = yt[0], np.nan
        self._fills = below, above
        if self._kind == "spline":
            order = _SPLINE_ORDERS.get(kind, kind)
            nan_data = bool(np.isnan(ref.x).any() or np.isnan(untraced(yt)).any())
            self._spline = None if nan_data and order > 1 else make_interp_spline(
                ref.x, yt, k=order, check_finite=False)

    def __call__(self, x):
        expected = self._ref(untraced(x))       # SciPy's bounds errors and dtype
        if not any_traced(self._yt, x):
            return expected
        x = x if is_traced(x) else np.asarray(x, dtype=float)
        shape = np.shape(x)
        flat = np.reshape(x, (-1,))
        out = self._evaluate(flat)
        nd = np.ndim(out)
        if not getattr(self._ref, "_extrapolate", False):
            below, above = self._fills
            out = np.where(_column(flat < self.x[0], nd), below, out)
            out = np.where(_column(flat > self.x[-1], nd), above, out)
        out = np.reshape(out, shape + np.shape(self._yt)[1:])
        out = to_axis(out, len(shape), self.axis)
        if np.result_type(out) != expected.dtype:
            out = out.astype(expected.dtype)
        return out

    def _evaluate(self, q):
        x, y, n = self.x, self._yt, len(self.x)
        nd = np.ndim(y)
        kind = self._kind
        if kind == "linear":
            hi = np.clip(np.searchsorted(x, q), 1, n - 1)
            lo = hi - 1
            slope = (y[hi] - y[lo]) / _column(x[hi] - x[lo], nd)
            return slope * _column(q - x[lo], nd) + y[lo]
        if kind in ("nearest", "nearest-up"):
            bounds = x / 2.0
            bounds = bounds[1:] + bounds[:-1]
            side = "left" if kind == "nearest" else "right"
            i = np.clip(np.searchsorted(bounds, q, side=side), 0, n - 1)
            return y[i] + 0 * _column(q, nd)
        if kind in ("previous", "next"):
            shift = 0 if kind == "previous" else 1
            edges = np.nextafter(x, -np.inf if shift == 0 else np.inf)
            side = "left" if shift == 0 else "right"
            i = np.clip(np.searchsorted(edges, q, side=side), 1 - shift, n - shift)
            return y[i + shift - 1] + 0 * _column(q, nd)
        if self._spline is None:                 # NaN in the data: SciPy's all-NaN
            return np.nan * (0 * _column(q, nd) + 0 * y[0])
        return self._spline(q)
