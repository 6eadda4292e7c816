"""Piecewise polynomials in the power basis, ``scipy.interpolate.PPoly``,
with traced coefficients and traced query points.

The breakpoints stay constants. A query's interval is found on its value
(``np.searchsorted``, which has no derivative) and the polynomial of that
interval is evaluated with differentiable arithmetic, so the derivative in
the query is the polynomial's derivative there. Intervals are half-open as
in SciPy, ``[x[i], x[i+1])`` (the last one closed): at a breakpoint the
value and every derivative are those of the interval that starts there
(the right-sided derivative; at the last breakpoint the left-sided one).
The coefficients enter linearly, so derivatives in them are exact.
"""

import numpy as np
import scipy.interpolate as _si
from scipy.special import poch

from chainrules.errors import MissingRuleError
from chainrules.tracing import is_traced

__all__ = ["PPoly", "constant", "any_traced", "evaluate", "to_axis", "widen"]


def any_traced(*values):
    return any(is_traced(v) for v in values)


def constant(v, what, who):
    """``v`` as a plain array; a traced ``v`` raises a typed error."""
    if is_traced(v):
        raise MissingRuleError(
            f"{who}: {what} is traced, and no derivative in it is defined here; "
            f"keep {what} constant (chainrules.stop_gradient) and differentiate the "
            "data values and the query points")
    return np.asarray(v)


def widen(v):
    """SciPy computes interpolants in float64 or complex128."""
    dt = np.complex128 if np.result_type(v).kind == "c" else np.float64
    return v if np.result_type(v) == dt else v.astype(dt)


def _column(v, ndim):
    """A 1-D plain array shaped to broadcast along axis 0 of ``ndim`` axes."""
    return np.reshape(v, (-1,) + (1,) * (ndim - 1))


def to_axis(out, x_ndim, axis):
    """SciPy's placement of the query's axes at the interpolation axis: an
    output laid out as ``query shape + trailing shape`` is transposed so
    that the query's axes stand where the interpolation axis was."""
    if axis == 0:
        return out
    order = list(range(np.ndim(out)))
    order = order[x_ndim:x_ndim + axis] + order[:x_ndim] + order[x_ndim + axis:]
    return np.transpose(out, order)


def derivative_coefficients(c, nu):
    """Coefficients of the ``nu``-th derivative, ``nu >= 0``."""
    if nu == 0:
        return c
    k1 = np.shape(c)[0]
    if nu >= k1:
        return 0 * c[:1]
    factor = poch(np.arange(k1 - nu, 0, -1), nu)
    return c[:-nu] * _column(factor, np.ndim(c))


def antiderivative_coefficients(c, x):
    """Coefficients of the antiderivative that is 0 at ``x[0]`` and
    continuous at every breakpoint: the constant term of interval ``i`` is
    the integral over the intervals before it."""
    k1 = np.shape(c)[0]
    nd = np.ndim(c)
    top = c / _column(np.arange(k1, 0, -1).astype(float), nd)
    h = _column(np.diff(x), nd - 1)
    powers = [h ** (k1 - j) for j in range(k1)]
    pieces = sum(top[j] * powers[j] for j in range(k1))   # integral over each interval
    before = np.cumsum(pieces, axis=0)[:-1]
    const = np.concatenate([0 * pieces[:1], before], axis=0)
    return np.concatenate([top, const[None]], axis=0)


def interval_index(x, xq):
    """The interval of each query point: ``[x[i], x[i+1])`` for increasing
    breakpoints, ``(x[i+1], x[i]]`` for decreasing ones, the end intervals
    extended outwards."""
    m = len(x) - 1
    if x[-1] >= x[0]:
        i = np.searchsorted(x, xq, side="right") - 1
    else:
        i = np.searchsorted(-x, -xq, side="right") - 1
    return np.clip(i, 0, m - 1)


def evaluate(c, x, xq, nu=0, extrapolate=True, axis=0):
    """``PPoly(c, x, extrapolate, axis)(xq, nu)`` for traced ``c`` and
    ``xq``; ``x`` is a plain array."""
    xq = xq if is_traced(xq) else np.asarray(xq, dtype=float)
    shape = np.shape(xq)
    flat = np.reshape(xq, (-1,))
    if extrapolate == "periodic":
        flat = x[0] + (flat - x[0]) % (x[-1] - x[0])
        extrapolate = False
    c = derivative_coefficients(c, nu)
    k1 = np.shape(c)[0]
    i = interval_index(x, flat)
    rest = np.shape(c)[2:]
    dx = _column(flat - x[i], 1 + len(rest))
    cg = c[:, i]
    acc = cg[0]
    for j in range(1, k1):
        acc = acc * dx + cg[j]
    if k1 == 1:
        acc = acc + 0 * dx
    if not extrapolate:
        lo, hi = min(x[0], x[-1]), max(x[0], x[-1])
        outside = _column((flat < lo) | (flat > hi), 1 + len(rest))
        acc = np.where(outside, np.nan, acc)
    out = np.reshape(acc, shape + rest)
    return to_axis(out, len(shape), axis)


class PPoly:
    """``scipy.interpolate.PPoly`` whose coefficients ``c`` and query
    points may be traced (the breakpoints ``x`` are constants)."""

    def __init__(self, c, x, extrapolate=None, axis=0):
        x = constant(x, "the breakpoints x", "PPoly")
        if is_traced(c):
            # SciPy's checks, on the values
            ref = _si.PPoly(np.zeros(np.shape(c)), x, extrapolate, axis)
            if axis != 0:
                # SciPy's layout: the order and interval axes stand at ``axis``
                c = np.moveaxis(np.moveaxis(c, axis + 1, 0), axis + 1, 0)
            c = widen(c)
        else:
            ref = _si.PPoly(c, x, extrapolate, axis)
            c = ref.c
        self._set(c, ref.x, ref.extrapolate, ref.axis)

    def _set(self, c, x, extrapolate, axis):
        self.c, self.x, self.extrapolate, self.axis = c, np.asarray(x, dtype=float), \
            extrapolate, axis
        return self

    @classmethod
    def construct_fast(cls, c, x, extrapolate=None, axis=0):
        self = object.__new__(cls)
        return self._set(c, x, True if extrapolate is None else extrapolate, axis)

    def _plain(self):
        return _si.PPoly.construct_fast(self.c, self.x, self.extrapolate, self.axis)

    def __call__(self, x, nu=0, extrapolate=None):
        if extrapolate is None:
            extrapolate = self.extrapolate
        if nu < 0:
            raise ValueError("Order of derivative cannot be negative")
        if not any_traced(self.c, x):
            return self._plain()(x, nu, extrapolate)
        return evaluate(self.c, self.x, x, nu, extrapolate, self.axis)

    def derivative(self, nu=1):
        if nu < 0:
            return self.antiderivative(-nu)
        return PPoly.construct_fast(derivative_coefficients(self.c, nu), self.x,
                                    self.extrapolate, self.axis)

    def antiderivative(self, nu=1):
        if nu <= 0:
            return self.derivative(-nu)
        c = self.c
        for _ in range(nu):
            c = antiderivative_coefficients(c, self.x)
        extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
        return PPoly.construct_fast(c, self.x, extrapolate, self.axis)

    def integrate(self, a, b, extrapolate=None):
        """The definite integral over ``[a, b]``; ``a`` and ``b`` may be traced."""
        if extrapolate is None:
            extrapolate = self.extrapolate
        if not any_traced(self.c, a, b):
            return self._plain().integrate(a, b, extrapolate)
        sign = 1
        if b < a:
            a, b, sign = b, a, -1
        anti = self.antiderivative()
        # the integral as an antiderivative difference: at scalar bounds the
        # axis placement is the identity
        F = lambda t, ext: evaluate(anti.c, self.x, t, 0, ext, 0)  # noqa: E731
        if extrapolate != "periodic":
            return sign * (F(b, bool(extrapolate)) - F(a, bool(extrapolate)))
        xs, xe = self.x[0], self.x[-1]
        period = xe - xs
        n_periods = np.floor((b - a) / period)
        left = (b - a) - n_periods * period
        whole = F(xe, False) - F(xs, False)
        a = xs + (a - xs) % period
        b = a + left
        if b <= xe:
            part = F(b, False) - F(a, False)
        else:
            part = F(xe, False) - F(a, False) + F(xs + left + a - xe, False) - F(xs, False)
        return sign * (n_periods * whole + part)

    def roots(self, discontinuity=True, extrapolate=None):
        return self.solve(0.0, discontinuity, extrapolate)

    def solve(self, y=0.0, discontinuity=True, extrapolate=None):
        if any_traced(self.c, y):
            raise MissingRuleError(
                f"{type(self).__name__}.solve/roots with traced coefficients has no "
                "rule; find the roots on chainrules.stop_gradient values, or "
                "differentiate them by the implicit function theorem yourself")
        return self._plain().solve(y, discontinuity, extrapolate)
