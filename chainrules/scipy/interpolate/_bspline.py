"""B-splines, ``scipy.interpolate.BSpline`` and ``make_interp_spline``,
with traced coefficients, data values and query points.

A query's knot interval is found on its value and the spline is evaluated
there by de Boor's recursion, written with differentiable arithmetic in
the query and the coefficients; intervals are ``[t[l], t[l+1])`` (the last
closed), so at a knot the derivative in the query is that of the piece
that starts there. The interpolating spline's coefficients solve a banded
collocation system whose matrix depends on ``x`` and the knots only
(``banded_coefficients``, the differentiable banded solve). Periodic
conditions, and degree 0, use the linear map of the data read off SciPy's
solver run once on the unit vectors (``n x n`` memory for ``n`` points).
"""

import numpy as np
import scipy.interpolate as _si

from chainrules.scipy.linalg import solve_banded
from chainrules.tracing import holds_traced, is_traced, untraced

from ._ppoly import _column, any_traced, constant, to_axis
from ._cubic import _coordinates, _periodic_basis, _widen

__all__ = ["BSpline", "make_interp_spline"]


def _pad(c, length):
    """Coefficients padded with zeros to ``length`` (SciPy's splder and
    splantider work on as many coefficients as knots)."""
    extra = length - np.shape(c)[0]
    if extra <= 0:
        return c
    return np.concatenate([c, np.zeros((extra,) + np.shape(c)[1:], dtype=np.result_type(c))])


def de_boor(t, c, k, xq, extrapolate):
    """Values at the (1-D) query points ``xq`` of the spline ``(t, c, k)``,
    shape ``(len(xq),) + c.shape[1:]``."""
    n = len(t) - k - 1
    rest = np.shape(c)[1:]
    nd = 1 + len(rest)
    if extrapolate == "periodic":
        xq = t[k] + (xq - t[k]) % (t[n] - t[k])
        extrapolate = False
    # the end pieces extend outwards; for k > 0 an empty interval at an end
    # (a knot repeated more than k + 1 times) holds no piece (for k = 0, as
    # in SciPy, the last coefficient holds from the last knot on)
    proper = np.flatnonzero(t[k:n] < t[k + 1:n + 1]) + k if k else [0, n - 1]
    if len(proper) == 0:
        # a base interval of width 0 (the antiderivative of a one-point
        # spline): the spline is 0
        return 0 * c[:1] + 0 * _column(xq, nd)
    lq = np.clip(np.searchsorted(t, xq, side="right") - 1, proper[0], proper[-1])
    d = c[lq[:, None] - k + np.arange(k + 1)]                  # (nq, k+1, ...)
    xc = _column(xq, 2)
    for r in range(1, k + 1):
        i = np.arange(k + 1 - r)
        left = t[lq[:, None] - k + i + r]
        right = t[lq[:, None] + 1 + i]
        alpha = (xc - left) / (right - left)
        alpha = np.reshape(alpha, np.shape(alpha) + (1,) * (nd - 1))
        d = (1 - alpha) * d[:, :-1] + alpha * d[:, 1:]
    out = d[:, 0]
    if k == 0:
        out = out + 0 * _column(xq, nd)
    if not extrapolate:
        outside = _column((xq < t[k]) | (xq > t[n]), nd)
        out = np.where(outside, np.nan, out)
    return out


def basis_matrix(t, k, x, nu=0, extrapolate=True):
    """The values at the (1-D) points ``x`` of the ``nu``-th derivatives of
    every B-spline of degree ``k`` on the knots ``t``: shape ``(len(x), n)``
    (the splines of the differentiated unit coefficients, by de Boor's
    recursion; differentiable in ``x``)."""
    n = len(t) - k - 1
    if nu > k:
        return np.zeros((np.shape(x)[0], n)) + _column(0 * x, 2)
    tt, cc, kk = derivative_tck(t, np.eye(n), k, nu) if nu else (t, np.eye(n), k)
    return de_boor(tt, cc, kk, x, extrapolate)[:, :n]


def derivative_tck(t, c, k, nu):
    """Knots, coefficients and degree of the ``nu``-th derivative."""
    c = _pad(c, len(t))
    for _ in range(nu):
        dt = t[k + 1:-1] - t[1:-k - 1]
        if np.any(dt == 0):
            raise ValueError(
                f"The spline has internal repeated knots and is not differentiable {nu} times")
        c = (c[1:-1 - k] - c[:-2 - k]) * k / _column(dt, np.ndim(c))
        c = _pad(c, np.shape(c)[0] + k)
        t, k = t[1:-1], k - 1
    return t, c, k


def antiderivative_tck(t, c, k, nu):
    c = _pad(c, len(t))
    for _ in range(nu):
        dt = _column(t[k + 1:] - t[:-k - 1], np.ndim(c))
        c = np.cumsum(c[:-k - 1] * dt, axis=0) / (k + 1)
        c = np.concatenate([0 * c[:1], c] + [c[-1:]] * (k + 2), axis=0)
        t = np.r_[t[0], t, t[-1]]
        k += 1
    return t, c, k


class BSpline:
    """``scipy.interpolate.BSpline`` whose coefficients ``c`` and query
    points may be traced (the knots ``t`` are constants)."""

    def __init__(self, t, c, k, extrapolate=True, axis=0):
        t = constant(t, "the knots t", "BSpline")
        ref = _si.BSpline(t, untraced(c), k, extrapolate, axis)
        if is_traced(c):
            c = _widen(np.moveaxis(c, ref.axis, 0))
        else:
            c = ref.c
        self._set(ref.t, c, ref.k, ref.extrapolate, ref.axis)

    def _set(self, t, c, k, extrapolate, axis):
        self.t, self.c, self.k = np.asarray(t, dtype=float), c, int(k)
        self.extrapolate, self.axis = extrapolate, axis
        return self

    @classmethod
    def construct_fast(cls, t, c, k, extrapolate=True, axis=0):
        return object.__new__(cls)._set(t, c, k, extrapolate, axis)

    @property
    def tck(self):
        return self.t, self.c, self.k

    def _plain(self):
        return _si.BSpline.construct_fast(self.t, self.c, self.k, self.extrapolate, self.axis)

    def _empty_end(self):
        """Whether an end interval of the base interval is empty (a knot
        repeated more than k + 1 times, as antiderivatives make): SciPy's
        evaluation then drops the piece next to it (0 from the last knot on)."""
        t, k = self.t, self.k
        n = len(t) - k - 1
        return k > 0 and (t[k] == t[k + 1] or t[n - 1] == t[n])

    def __call__(self, x, nu=0, extrapolate=None):
        if extrapolate is None:
            extrapolate = self.extrapolate
        if not any_traced(self.c, x) and not self._empty_end():
            return self._plain()(x, nu, extrapolate)
        if nu < 0:
            raise ValueError("Order of derivative cannot be negative")
        t, c, k = derivative_tck(self.t, self.c, self.k, nu) if nu else self.tck
        if k < 0:
            t, c, k = t, 0 * c, 0
        x = x if is_traced(x) else np.asarray(x, dtype=float)
        shape = np.shape(x)
        out = de_boor(t, c, k, np.reshape(x, (-1,)), extrapolate)
        out = np.reshape(out, shape + np.shape(c)[1:])
        return to_axis(out, len(shape), self.axis)

    def derivative(self, nu=1):
        if not is_traced(self.c):
            d = self._plain().derivative(nu)
            return BSpline.construct_fast(d.t, d.c, d.k, d.extrapolate, d.axis)
        t, c, k = derivative_tck(self.t, self.c, self.k, nu)
        return BSpline.construct_fast(t, c, k, self.extrapolate, self.axis)

    def antiderivative(self, nu=1):
        extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
        if not is_traced(self.c):
            d = self._plain().antiderivative(nu)
            return BSpline.construct_fast(d.t, d.c, d.k, d.extrapolate, d.axis)
        t, c, k = antiderivative_tck(self.t, self.c, self.k, nu)
        return BSpline.construct_fast(t, c, k, extrapolate, self.axis)

    def integrate(self, a, b, extrapolate=None):
        """The definite integral over ``[a, b]``; ``a`` and ``b`` may be traced.
        Without extrapolation the bounds are clipped to the base interval, as
        in SciPy."""
        if extrapolate is None:
            extrapolate = self.extrapolate
        # computed here on plain values too: SciPy's own integral drops the
        # last piece of a spline of degree 0 and fails on complex
        # coefficients with trailing axes
        sign = 1
        if b < a:
            a, b, sign = b, a, -1
        n = len(self.t) - self.k - 1
        ts, te = self.t[self.k], self.t[n]
        if extrapolate != "periodic" and not extrapolate:
            a = np.where(a < ts, ts, a)
            b = np.where(b > te, te, b)
        t, c, k = antiderivative_tck(self.t, self.c, self.k, 1)

        def F(v, ext):
            v = v if is_traced(v) else np.asarray(v, dtype=float)
            return de_boor(t, c, k, np.reshape(v, (1,)), ext)[0]

        if extrapolate != "periodic":
            return sign * (F(b, bool(extrapolate)) - F(a, bool(extrapolate)))
        period = te - ts
        n_periods = np.floor((b - a) / period)
        left = (b - a) - n_periods * period
        total = n_periods * (F(te, False) - F(ts, False))
        a = ts + (a - ts) % period
        b = a + left
        if b <= te:
            total = total + F(b, False) - F(a, False)
        else:
            total = total + F(te, False) - F(a, False) + F(ts + b - te, False) - F(ts, False)
        return sign * total


def _homogeneous_ends(bc_type, rest):
    """``bc_type`` with zero derivative values, and whether any given value
    is nonzero (the coefficients are then affine in the data)."""
    if bc_type is None or isinstance(bc_type, str):
        return bc_type, False
    ends, affine = [], False
    for end in bc_type:
        if end is None or isinstance(end, str):
            ends.append(end)
            continue
        conds = []
        for order, value in end:
            constant(value, "a boundary derivative value", "make_interp_spline")
            affine = affine or bool(np.any(np.asarray(value) != 0))
            conds.append((order, np.zeros(rest)))
        ends.append(conds)
    return tuple(ends), affine


def _conditions(bc_type):
    """The derivative conditions at the two ends, each a list of
    ``(order, value)``; ``None`` and "not-a-knot" prescribe none."""
    def one(end):
        if end is None or (isinstance(end, str) and end == "not-a-knot"):
            return []
        if isinstance(end, str):
            return [{"clamped": (1, 0.0), "natural": (2, 0.0)}[end]]
        return [(order, value) for order, value in end]
    if bc_type is None or isinstance(bc_type, str):
        return one(bc_type), one(bc_type)
    return one(bc_type[0]), one(bc_type[1])


def _basis_row(t, k, x0, nu):
    """The values at ``x0`` of the ``nu``-th derivatives of every B-spline
    (a dense row), computed by SciPy on the functions whose support holds
    ``x0``."""
    n = len(t) - k - 1
    js = np.flatnonzero((t[:n] <= x0) & (t[k + 1:k + 1 + n] >= x0))
    local = np.zeros((n, len(js)))
    local[js, np.arange(len(js))] = 1.0
    row = np.zeros(n)
    row[js] = _si.BSpline(t, local, k)(x0, nu)
    return row


def banded_coefficients(x, yt, t, k, bc_type):
    """The coefficients of the interpolating spline of degree ``k`` on the
    knots ``t`` from its banded collocation system: the left end's
    derivative conditions, one row per data point (the B-splines' values
    there, SciPy's sparse design matrix), the right end's conditions. The
    matrix depends on ``x`` and ``t`` only; the right-hand side stacks the
    prescribed derivatives and the data, and the solve is the
    differentiable banded solve."""
    left, right = _conditions(bc_type)
    n = len(t) - k - 1
    design = _si.BSpline.design_matrix(x, t, k).tocoo()
    rs, cs, vs = [design.row + len(left)], [design.col], [design.data]
    ends = [(i, x[0], nu) for i, (nu, _) in enumerate(left)]
    ends += [(len(left) + len(x) + i, x[-1], nu) for i, (nu, _) in enumerate(right)]
    for i, x0, nu in ends:
        row = _basis_row(t, k, x0, nu)
        cols = np.flatnonzero(row)
        rs.append(np.full(len(cols), i)), cs.append(cols), vs.append(row[cols])
    r, c, v = np.concatenate(rs), np.concatenate(cs), np.concatenate(vs)
    keep = v != 0
    r, c, v = r[keep], c[keep], v[keep]
    lower, upper = int(max(0, np.max(r - c))), int(max(0, np.max(c - r)))
    ab = np.zeros((lower + upper + 1, n))
    ab[upper + r - c, c] = v
    rest = np.shape(yt)[1:]

    def prescribed(conds):
        return [(val if is_traced(val) else np.asarray(val, dtype=float)) + 0 * yt[0]
                for _, val in conds]

    b = np.concatenate([np.stack(p) for p in (prescribed(left),) if p] + [yt]
                       + [np.stack(p) for p in (prescribed(right),) if p], axis=0)
    coef = solve_banded((lower, upper), ab, np.reshape(b, (n, -1)))
    return np.reshape(coef, (n,) + rest)


def make_interp_spline(x, y, k=3, t=None, bc_type=None, axis=0, check_finite=True):
    """``scipy.interpolate.make_interp_spline`` with traced ``y`` (and,
    not periodic, traced prescribed boundary derivatives): returns the
    ``BSpline`` twin."""
    x = constant(x, "the sample points x", "make_interp_spline")
    t = None if t is None else constant(t, "the knots t", "make_interp_spline")
    ref = _si.make_interp_spline(x, untraced(y), k, t, untraced(bc_type), axis, check_finite)
    if not (is_traced(y) or holds_traced(bc_type)):
        return BSpline.construct_fast(ref.t, ref.c, ref.k, ref.extrapolate, ref.axis)
    if np.ndim(y) == 0:
        y = np.reshape(y, (1,))          # SciPy reads a 0-d y as one value
    yt = _widen(np.moveaxis(y, axis % np.ndim(y), 0))
    n, rest = np.shape(yt)[0], np.shape(yt)[1:]
    periodic = isinstance(bc_type, str) and bc_type == "periodic"
    if k <= 1 and t is None:
        # degree 0 and 1 interpolate by their coefficients: c is y
        return BSpline.construct_fast(ref.t, yt, ref.k, ref.extrapolate, ref.axis)
    if not periodic and 0 not in rest and np.all(np.isfinite(untraced(yt))):
        c = banded_coefficients(x, yt, ref.t, k, bc_type)
        return BSpline.construct_fast(ref.t, c, ref.k, ref.extrapolate, ref.axis)
    basis = _periodic_basis(n, periodic)
    hom, affine = _homogeneous_ends(bc_type, (basis.shape[1],))
    cmap = _si.make_interp_spline(x, basis, k, t, hom, 0, check_finite).c
    c = np.tensordot(cmap, _coordinates(yt, periodic), axes=([1], [0]))
    if affine:
        c = c + _si.make_interp_spline(x, np.zeros((n,) + rest), k, t, bc_type, 0,
                                       check_finite).c
    return BSpline.construct_fast(ref.t, c, ref.k, ref.extrapolate, ref.axis)
