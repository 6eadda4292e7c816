"""Specs for ``chainrules.scipy.interpolate`` (compositions: every step is
a registered rule, and the checkers test each interpolant as a whole).
Each spec differentiates one argument: the data values (or coefficients)
or the query points; the sample coordinates are constants.

Query points stay a margin away from the breakpoints, knots, grid lines
and the jumps of the piecewise constant kinds, where derivatives are
one-sided; Pchip's and Akima's data keep secants of one sign away from 0
or change sign clearly, so that no sample sits on a branch boundary of
their slope choices. float32 data are computed in float64, as in SciPy.
"""

import inspect

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    from chainrules.scipy import interpolate as ip
except ImportError:  # pragma: no cover - SciPy is an optional extra
    ip = None

SPECS = []
F = ("float64", "float32")
FC = ("float64", "float32", "complex128")


def _points(draw, n):
    """Increasing sample points with gaps of 0.4 to 1.0."""
    gaps = draw(crs.arrays("float64", (n,), (0.4, 1.0)))
    return np.cumsum(gaps) - 1.0


def _queries(draw, x, shape, avoid=(), outside=0.3):
    lo, hi = x[0] - outside, x[-1] + outside
    return draw(crs.arrays("float64", shape, (lo, hi), avoid=tuple(x) + tuple(avoid),
                           margin=0.05))


def _trailing(draw):
    return draw(st.sampled_from([(), (2,)]))


def _qshape(draw):
    return draw(st.sampled_from([(), (1,), (3,), (2, 2)]))


_CUBIC_BC = ("not-a-knot", "natural", "clamped", "periodic", ((1, 0.5), (2, -1.0)))


def cubic_spline(x, y, t, bc_type, extra):
    """CubicSpline(x, y, bc_type=...)(t), its derivative, antiderivative
    or integral; periodic data take their last value from the first."""
    if bc_type == "periodic":
        y = np.concatenate([y, y[:1]], axis=0)
    s = ip.CubicSpline(x, y, bc_type=bc_type)
    if extra == "derivative":
        return s.derivative()(t)
    if extra == "antiderivative":
        return s.antiderivative(2)(t)
    if extra == "integrate":
        return s.integrate(t[0], t[1])
    return s(t)


def _cubic_args(dtypes_wrt):
    def sample(draw, dtype):
        n = draw(st.integers(3, 6))
        x = _points(draw, n)
        bc = draw(st.sampled_from(_CUBIC_BC))
        rest = _trailing(draw) if not isinstance(bc, tuple) else ()
        m = n - 1 if bc == "periodic" else n
        y = draw(crs.arrays(dtype if dtypes_wrt == 0 else "float64", (m,) + rest))
        extra = draw(st.sampled_from(["call", "derivative", "antiderivative", "integrate"]))
        qdt = dtype if dtypes_wrt == 1 else "float64"
        # a periodic spline's antiderivative does not extrapolate
        out = 0.0 if bc == "periodic" and extra == "antiderivative" else 0.3
        t = _queries(draw, x, (2,) if extra == "integrate" else _qshape(draw),
                     outside=out).astype(qdt)
        return (x, y, t, bc, extra), {}
    return sample


def spline_ends(x, y, t, ends, make):
    """A cubic spline with prescribed first and second derivatives at its
    ends (``ends``, differentiated), CubicSpline's or make_interp_spline's."""
    if make == "CubicSpline":
        return ip.CubicSpline(x, y, bc_type=((1, ends[0]), (2, ends[1])))(t)
    return ip.make_interp_spline(x, y, bc_type=([(1, ends[0])], [(2, ends[1])]))(t)


def _ends_args(draw, dtype):
    n = draw(st.integers(4, 6))
    x = _points(draw, n)
    y = draw(crs.arrays("float64", (n,)))
    ends = draw(crs.arrays(dtype, (2,)))
    t = _queries(draw, x, _qshape(draw))
    return (x, y, t, ends, draw(st.sampled_from(["CubicSpline", "make_interp_spline"]))), {}


def interp_spline(x, y, t, k, bc_type, extra):
    """make_interp_spline(x, y, k, bc_type=...)(t) and its derivative,
    antiderivative and integral (a BSpline)."""
    if bc_type == "periodic":
        y = np.concatenate([y, y[:1]], axis=0)
    b = ip.make_interp_spline(x, y, k=k, bc_type=bc_type)
    if extra == "derivative":
        return b.derivative()(t)
    if extra == "antiderivative":
        return b.antiderivative()(t)
    if extra == "integrate":
        return b.integrate(t[0], t[1])
    return b(t)


def _bspline_args(wrt):
    def sample(draw, dtype):
        k = draw(st.sampled_from([0, 1, 2, 3, 5]))
        n = draw(st.integers(k + 1, k + 4)) if k < 5 else 7
        x = _points(draw, n)
        bc = None
        if k == 3:
            bc = draw(st.sampled_from([None, "natural", "clamped", "periodic",
                                       ([(1, 0.5)], [(2, -1.0)])]))
        extra = draw(st.sampled_from(["call", "antiderivative", "integrate"]
                                     + (["derivative"] if k > 0 else [])))
        rest = _trailing(draw) if not isinstance(bc, tuple) else ()
        m = n - 1 if bc == "periodic" else n
        y = draw(crs.arrays(dtype if wrt == 1 else "float64", (m,) + rest))
        if k == 0:
            # the pieces of a k=0 spline jump halfway between the points
            mids = tuple((x[1:] + x[:-1]) / 2)
        else:
            mids = ()
        shape = (2,) if extra == "integrate" else _qshape(draw)
        t = _queries(draw, x, shape, mids).astype(dtype if wrt == 2 else "float64")
        return (x, y, t, k, bc, extra), {}
    return sample


def interp1d(x, y, t, kind, fill):
    """interp1d(x, y, kind, bounds_error=False, fill_value=...)(t) on
    unsorted x along the last axis of y."""
    return ip.interp1d(x, y, kind=kind, bounds_error=False, fill_value=fill)(t)


_KINDS = ("linear", "nearest", "nearest-up", "zero", "slinear", "quadratic", "cubic",
          "previous", "next")


def _interp1d_args(wrt):
    def sample(draw, dtype):
        kind = draw(st.sampled_from(_KINDS))
        n = draw(st.integers(4, 6))
        x = _points(draw, n)
        order = np.random.default_rng(n).permutation(n)
        fill = draw(st.sampled_from([np.nan, "extrapolate", (-1.0, 2.0)]))
        if kind in ("previous", "next") and fill == "extrapolate":
            fill = (0.5, -0.5)
        mids = tuple((x[1:] + x[:-1]) / 2) if kind in ("nearest", "nearest-up") else ()
        rest = _trailing(draw)
        y = draw(crs.arrays(dtype if wrt == 1 else "float64", rest + (n,)))
        t = _queries(draw, x, _qshape(draw), mids,
                     outside=0.3 if fill == "extrapolate" else 0.0)
        if kind == "zero":
            # make_interp_spline's k=0 knots: jumps halfway
            t = _queries(draw, x, np.shape(t), tuple((x[1:] + x[:-1]) / 2), outside=0.0)
        return (x[order], y[..., order], t.astype(dtype if wrt == 2 else "float64"), kind,
                fill), {}
    return sample


def hermite(x, y, dydx, t):
    return ip.CubicHermiteSpline(x, y, dydx)(t)


def _hermite_args(wrt):
    def sample(draw, dtype):
        n = draw(st.integers(2, 5))
        x = _points(draw, n)
        rest = _trailing(draw)
        y = draw(crs.arrays(dtype if wrt == 1 else "float64", (n,) + rest))
        dydx = draw(crs.arrays(dtype if wrt == 2 else "float64", (n,) + rest))
        t = _queries(draw, x, _qshape(draw)).astype(dtype if wrt == 3 else "float64")
        return (x, y, dydx, t), {}
    return sample


def polynomial(x, y, t, name):
    """KroghInterpolator or BarycentricInterpolator through every point.
    (SciPy's BarycentricInterpolator orders the points at random, from
    NumPy's global state unless given a seed: the seed keeps one call's
    value the next's, to the bit.)"""
    if name == "BarycentricInterpolator" and "rng" in _BARYCENTRIC_KEYWORDS:
        return ip.BarycentricInterpolator(x, y, rng=0)(t)
    return getattr(ip, name)(x, y)(t)


_BARYCENTRIC_KEYWORDS = (() if ip is None else
                         tuple(inspect.signature(ip.BarycentricInterpolator).parameters))


def _polynomial_args(wrt):
    def sample(draw, dtype):
        n = draw(st.integers(1, 6))
        x = _points(draw, n)
        y = draw(crs.arrays(dtype if wrt == 1 else "float64", (n,) + _trailing(draw)))
        t = _queries(draw, x, _qshape(draw), outside=0.2)
        name = draw(st.sampled_from(["KroghInterpolator", "BarycentricInterpolator"]))
        return (x, y, t.astype(dtype if wrt == 2 else "float64"), name), {}
    return sample


def pchip(x, y, t):
    return ip.PchipInterpolator(x, y)(t)


def akima(x, y, t, method):
    return ip.Akima1DInterpolator(x, y, method=method, extrapolate=True)(t)


def _shaped_data(draw, n, dtype):
    """Data whose secants are at least 0.3 in size, with a sign pattern
    drawn (monotone or changing sign)."""
    steps = draw(crs.arrays("float64", (n - 1,), (0.3, 1.5)))
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n - 1,
                                   max_size=n - 1)))
    return np.concatenate([[0.2], 0.2 + np.cumsum(steps * signs)]).astype(dtype)


def _pchip_args(wrt):
    def sample(draw, dtype):
        n = draw(st.integers(2, 6))
        x = _points(draw, n)
        y = _shaped_data(draw, n, dtype if wrt == 1 else "float64")
        t = _queries(draw, x, _qshape(draw)).astype(dtype if wrt == 2 else "float64")
        return (x, y, t), {}
    return sample


def _akima_args(wrt):
    from chainrules.scipy.interpolate._cubic import _two_point_akima_is_curved

    # (through two points SciPy before 1.16 builds a curved piece, which the
    # twin refuses to differentiate in the data)
    least = 3 if wrt == 1 and _two_point_akima_is_curved() else 2

    def sample(draw, dtype):
        n = draw(st.integers(least, 6))
        x = _points(draw, n)
        y = draw(crs.arrays(dtype if wrt == 1 else "float64", (n,)))
        t = _queries(draw, x, _qshape(draw)).astype(dtype if wrt == 2 else "float64")
        method = draw(st.sampled_from(["akima", "makima"]))
        return (x, y, t, method), {}
    return sample


def grid_interpolator(points, values, xi, method, fill, nu=None):
    return ip.RegularGridInterpolator(points, values, method=method, bounds_error=False,
                                      fill_value=fill)(xi, nu=nu)


def _rgi_args(wrt):
    def sample(draw, dtype):
        methods = ["linear", "nearest", "slinear", "cubic", "pchip", "cubic_legacy"]
        if wrt == 1 and np.dtype(dtype).kind == "c":
            methods.remove("pchip")  # SciPy's pchip takes real values only
        method = draw(st.sampled_from(methods))
        nd = draw(st.integers(1, 2))
        least = 4 if method in ("cubic", "pchip", "cubic_legacy") else 2
        points = tuple(_points(draw, draw(st.integers(least, least + 2))) for _ in range(nd))
        if draw(st.booleans()):
            points = (points[0][::-1],) + points[1:]          # a descending axis
        rest = _trailing(draw)
        values = draw(crs.arrays(dtype if wrt == 1 else "float64",
                                 tuple(len(p) for p in points) + rest))
        nq = draw(st.integers(1, 3))
        fill = draw(st.sampled_from([None, np.nan])) if method != "nearest" else None
        cols = []
        for p in points:
            g = np.sort(p)
            avoid = tuple((g[1:] + g[:-1]) / 2) if method == "nearest" else ()
            cols.append(_queries(draw, g, (nq,), avoid, outside=0.2 if fill is None else 0.0))
        xi = np.stack(cols, axis=-1).astype(dtype if wrt == 2 else "float64")
        nu = None
        if method in ("slinear", "cubic") and draw(st.booleans()):
            nu = tuple(draw(st.integers(0, 1 if method == "slinear" else 2))
                       for _ in range(nd))
        return (points, values, xi, method, fill, nu), {}
    return sample


def scattered(points, values, xi, method, rescale):
    return ip.griddata(points, values, xi, method=method, rescale=rescale)


def _griddata_args(wrt):
    def sample(draw, dtype):
        method = draw(st.sampled_from(["linear", "nearest"]))
        points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.45, 0.55],
                           [0.8, 0.3]]) * np.array([1.0, draw(st.sampled_from([1.0, 3.0]))])
        values = draw(crs.arrays(dtype if wrt == 1 else "float64", (6,)))
        # linear: queries inside triangles, near their centroids, away from the
        # Delaunay edges; nearest: queries near the points, away from the
        # Voronoi boundaries
        from scipy.spatial import Delaunay

        tri = Delaunay(points)
        if method == "linear":
            cells = draw(st.lists(st.integers(0, len(tri.simplices) - 1), min_size=1,
                                  max_size=3))
            centre = points[tri.simplices[cells]].mean(axis=1)
        else:
            near = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
            centre = points[near]
        jitter = draw(crs.arrays("float64", centre.shape, (-0.02, 0.02)))
        xi = (centre + jitter).astype(dtype if wrt == 2 else "float64")
        return (points, values, xi, method, draw(st.booleans())), {}
    return sample


def ppoly(c, x, t):
    return ip.PPoly(c, x)(t)


def _ppoly_args(wrt):
    def sample(draw, dtype):
        k, m = draw(st.integers(0, 3)), draw(st.integers(1, 4))
        x = _points(draw, m + 1)
        if draw(st.booleans()):
            x = x[::-1]
        c = draw(crs.arrays(dtype if wrt == 0 else "float64", (k + 1, m) + _trailing(draw)))
        t = _queries(draw, np.sort(x), _qshape(draw)).astype(dtype if wrt == 2 else "float64")
        return (c, x, t), {}
    return sample


def bspline(t, c, k, x):
    return ip.BSpline(t, c, k)(x)


def _bspline_direct_args(wrt):
    def sample(draw, dtype):
        k = draw(st.integers(0, 3))
        inner = _points(draw, draw(st.integers(2, 4)))
        t = np.r_[[inner[0]] * k, inner, [inner[-1]] * k]
        n = len(t) - k - 1
        c = draw(crs.arrays(dtype if wrt == 1 else "float64", (n,) + _trailing(draw)))
        x = _queries(draw, inner, _qshape(draw)).astype(dtype if wrt == 3 else "float64")
        return (t, c, k, x), {}
    return sample


def fitpack(t, c, k, x, what, der, ext):
    """The FITPACK-style functions on a ``(t, c, k)`` tuple: splev (with
    ``der`` and ``ext``), splint over ``x[0], x[1]``, spalde at ``x[0]``,
    the coefficients of splder, splantider and of insert at ``x[0]``."""
    tck = (t, c, k)
    if what == "splev":
        return ip.splev(x, tck, der, ext)
    if what == "splint":
        return ip.splint(x[0], x[1], tck)
    if what == "spalde":
        return ip.spalde(x[0], tck)
    if what == "splder":
        return ip.splder(tck, der)[1]
    if what == "insert":
        t2, c2, _ = ip.insert(x[0], tck, m=der + 1)
        return c2[:len(t2) - k - 1]
    return ip.splantider(tck, der + 1)[1]


def _fitpack_args(wrt):
    def sample(draw, dtype):
        from scipy.interpolate import splrep

        k = draw(st.sampled_from([1, 2, 3]))
        x = _points(draw, draw(st.integers(k + 2, k + 5)))
        t, c, _ = splrep(x, draw(crs.arrays("float64", (len(x),))), k=k)
        c = draw(crs.arrays(dtype if wrt == 1 else "float64", np.shape(c)))
        what = draw(st.sampled_from(["splev", "splint", "spalde"] + (
            ["splder", "splantider", "insert"] if wrt == 1 else [])))
        der = draw(st.integers(0, k - 1 if what == "splder" else k))
        if what == "splder":
            der = max(der, 1)
        ext = draw(st.sampled_from([0, 1, 3]))
        shape = (2,) if what in ("splint", "spalde", "insert") else _qshape(draw)
        q = _queries(draw, x, shape, tuple(t), outside=0.3 if what == "splev" else 0.0)
        return (t, c, k, q.astype(dtype if wrt == 3 else "float64"), what, der, ext), {}
    return sample


def bispline(tx, ty, c, kx, ky, x, y, dx, dy):
    """bisplev on the grid of x and y: a tensor-product spline."""
    return ip.bisplev(x, y, (tx, ty, c, kx, ky), dx, dy)


def _bispline_args(wrt):
    def sample(draw, dtype):
        kx, ky = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        ix, iy = _points(draw, draw(st.integers(2, 4))), _points(draw, draw(st.integers(2, 4)))
        tx = np.r_[[ix[0]] * kx, ix, [ix[-1]] * kx]
        ty = np.r_[[iy[0]] * ky, iy, [iy[-1]] * ky]
        n = (len(tx) - kx - 1) * (len(ty) - ky - 1)
        c = draw(crs.arrays(dtype if wrt == 2 else "float64", (n,)))
        # increasing points inside the base interval, away from the knots and
        # 0.1 apart (FITPACK refuses points out of order)
        def increasing(inner):
            v = np.sort(_queries(draw, inner, (draw(st.integers(1, 3)),), outside=0.0))
            return v[np.r_[True, np.diff(v) > 0.1]]

        x, y = increasing(ix), increasing(iy)
        dx, dy = draw(st.integers(0, kx - 1)), draw(st.integers(0, ky - 1))
        return (tx, ty, c, kx, ky, x.astype(dtype if wrt == 5 else "float64"),
                y.astype(dtype if wrt == 6 else "float64"), dx, dy), {}
    return sample


def fit(x, y, kind, q):
    """pchip_interpolate, make_lsq_spline (knots inside x) and
    make_smoothing_spline (a given lam) at the queries ``q``."""
    if kind == "pchip_interpolate":
        return ip.pchip_interpolate(x, y, q, der=1)
    if kind == "lsq":
        t = np.r_[[x[0]] * 4, (x[0] + x[-1]) / 2, [x[-1]] * 4]
        return ip.make_lsq_spline(x, y, t, k=3)(q)
    return ip.make_smoothing_spline(x, y, lam=0.05)(q)


def _fit_args(wrt):
    def sample(draw, dtype):
        kind = draw(st.sampled_from(["pchip_interpolate", "lsq", "smoothing"]))
        n = draw(st.integers(6, 9))
        x = _points(draw, n)
        if kind == "pchip_interpolate":
            y = _shaped_data(draw, n, dtype if wrt == 1 else "float64")
        else:
            y = draw(crs.arrays(dtype if wrt == 1 else "float64", (n,)))
        q = _queries(draw, x, _qshape(draw), outside=0.0)
        return (x, y, kind, q.astype(dtype if wrt == 3 else "float64")), {}
    return sample


if ip is not None:
    def _pair(fn, sampler, name, data_pos, query_pos, data_dtypes=FC, query_dtypes=F,
              query_atol=None):
        return [RuleSpec(fn, sampler(data_pos), data_dtypes, wrt=(data_pos,),
                         name=f"scipy.interpolate.{name}[data]"),
                RuleSpec(fn, sampler(query_pos), query_dtypes, wrt=(query_pos,),
                         name=f"scipy.interpolate.{name}[query]", atol=query_atol)]

    SPECS += _pair(cubic_spline, lambda w: _cubic_args(0 if w == 1 else 1),
                   "CubicSpline", 1, 2)
    SPECS += _pair(interp_spline, _bspline_args, "make_interp_spline", 1, 2)
    SPECS += _pair(interp1d, _interp1d_args, "interp1d", 1, 2)
    SPECS += _pair(pchip, _pchip_args, "PchipInterpolator", 1, 2, data_dtypes=F)
    SPECS += _pair(akima, _akima_args, "Akima1DInterpolator", 1, 2, data_dtypes=F)
    SPECS += _pair(grid_interpolator, _rgi_args, "RegularGridInterpolator", 1, 2)
    SPECS += _pair(scattered, _griddata_args, "griddata", 1, 2)
    SPECS += _pair(ppoly, _ppoly_args, "PPoly", 0, 2)
    SPECS += _pair(bspline, _bspline_direct_args, "BSpline", 1, 3)
    SPECS += _pair(fitpack, _fitpack_args, "splev-splint-spalde-splder", 1, 3, data_dtypes=F)
    SPECS += _pair(fit, _fit_args, "pchip_interpolate-make_lsq_spline-smoothing", 1, 3,
                   data_dtypes=F)
    SPECS.append(RuleSpec(spline_ends, _ends_args, F, wrt=(3,),
                          name="scipy.interpolate.CubicSpline[boundary derivatives]"))
    SPECS += _pair(hermite, _hermite_args, "CubicHermiteSpline", 1, 3)
    SPECS.append(RuleSpec(hermite, _hermite_args(2), FC, wrt=(2,),
                          name="scipy.interpolate.CubicHermiteSpline[slopes]"))
    # (through two points the interpolant is linear: its second derivative in
    # the query is 0, which a batch of directions computes to rounding, 1e-17)
    SPECS += _pair(polynomial, _polynomial_args, "Krogh-BarycentricInterpolator", 1, 2,
                   query_atol=1e-12)
    SPECS += _pair(bispline, _bispline_args, "bisplev", 2, 5, data_dtypes=F)
    SPECS.append(RuleSpec(bispline, _bispline_args(6), F, wrt=(6,),
                          name="scipy.interpolate.bisplev[query y]"))
