"""chainrules.scipy.interpolate against SciPy: values (to ~1e-12), the
Jacobians in the data and in the query points against central differences
of SciPy's own interpolants, second derivatives, the one-sided convention
at breakpoints, the entry points (Python floats, NumPy scalars, 0-d, empty
and size-1 queries, float32 and complex data) and the typed errors. The
generic checkers run the same functions through the registry sweep
(chainrules/testing/specs/scipy_interpolate.py)."""

import numpy as np
import pytest
import scipy.interpolate as si
import scipy.sparse.linalg as ssl

import chainrules as cr
from chainrules.errors import AutodiffError, DomainError, MissingRuleError, UntraceableError
from chainrules.scipy import interpolate as ci

RNG = np.random.default_rng(7)
X = np.sort(RNG.uniform(0.0, 3.0, 7))
Y = RNG.normal(size=7)
Y2 = RNG.normal(size=(7, 2))
T = np.array([-0.3, 0.2, 0.9, 1.4, 2.2, 2.95, 3.4])
TIN = T[(T > X[0]) & (T < X[-1])]
EPS = 1e-6


def fd(f, a):
    """Central differences of f at a: shape f(a).shape + a.shape."""
    a = np.asarray(a, dtype=float)
    cols = []
    for e in np.eye(a.size).reshape((a.size,) + a.shape):
        cols.append((np.asarray(f(a + EPS * e)) - np.asarray(f(a - EPS * e))) / (2 * EPS))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(a)) + a.shape)


def fd_close(J, Jfd, tol=2e-6):
    """A Jacobian against central differences; where the output is NaN (out
    of bounds) the differences are NaN and the derivative is 0."""
    Jfd = np.asarray(Jfd)
    scale = max(1.0, float(np.nanmax(np.abs(Jfd))) if Jfd.size else 1.0)
    np.testing.assert_allclose(J, np.where(np.isnan(Jfd), 0.0, Jfd), rtol=0,
                               atol=tol * scale)


def traced_value(f, a):
    """f evaluated on a traced a (the value of a jvp)."""
    return cr.jvp(f, (a,), (np.ones_like(a),))[0]


def close(a, b, tol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    finite = np.abs(b[~np.isnan(b)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale, equal_nan=True)


# -- one-dimensional interpolants: (twin, SciPy) constructors of (x, y) --------------
def _periodic(y):
    y = np.array(y, dtype=float, copy=True)
    y[-1] = y[0]
    return y


CUBIC_BC = ["not-a-knot", "natural", "clamped", ((1, 0.5), (2, -1.0)), "periodic"]
ONE_D = (
    [(f"CubicSpline-{bc}", lambda m, bc=bc: (lambda x, y: m.CubicSpline(x, y, bc_type=bc)))
     for bc in CUBIC_BC]
    + [(f"make_interp_spline-k{k}",
        lambda m, k=k: (lambda x, y: m.make_interp_spline(x, y, k=k))) for k in (0, 1, 2, 3, 5)]
    + [("make_interp_spline-periodic",
        lambda m: (lambda x, y: m.make_interp_spline(x, y, bc_type="periodic"))),
       ("make_interp_spline-derivs",
        lambda m: (lambda x, y: m.make_interp_spline(x, y, bc_type=([(1, 0.3)], [(2, 1.0)])))),
       ("PchipInterpolator", lambda m: m.PchipInterpolator),
       ("Akima1DInterpolator", lambda m: (lambda x, y: m.Akima1DInterpolator(
           x, y, extrapolate=True))),
       ("makima", lambda m: (lambda x, y: m.Akima1DInterpolator(x, y, method="makima",
                                                                 extrapolate=True)))]
    + [(f"interp1d-{kind}", lambda m, kind=kind: (lambda x, y: m.interp1d(
        x, y, kind=kind, axis=0, bounds_error=False, fill_value="extrapolate")))
       for kind in ("linear", "nearest", "nearest-up", "zero", "slinear", "quadratic",
                    "cubic", "previous", "next")]
)


def _data(name, y):
    return _periodic(y) if "periodic" in name else y


@pytest.mark.parametrize("name,make", ONE_D, ids=[n for n, _ in ONE_D])
@pytest.mark.parametrize("y", [Y, Y2], ids=["1d", "trailing"])
def test_values_and_data_jacobian_match_scipy(name, make, y):
    if y.ndim > 1 and ("derivs" in name or "(1, 0.5)" in name):
        pytest.skip("scalar boundary derivative values go with 1-D data")
    y = _data(name, y)
    twin, ref = make(ci), make(si)
    expected = ref(X, y)(T)
    close(twin(X, y)(T), expected)                                  # plain values
    close(traced_value(lambda v: twin(X, v)(T), y), expected)       # traced data
    close(traced_value(lambda t: twin(X, y)(t), T), expected)       # traced queries
    if "periodic" in name:
        # the data's first and last values are one: differentiate along
        # directions that keep them equal
        free = y[:-1]
        J = cr.jacobian(lambda v: twin(X, np.concatenate([v, v[:1]]))(T))(free)
        Jfd = fd(lambda v: ref(X, np.concatenate([v, v[:1]]))(T), free)
    else:
        J = cr.jacobian(lambda v: twin(X, v)(T))(y)
        Jfd = fd(lambda v: ref(X, v)(T), y)
    fd_close(J, Jfd)


@pytest.mark.parametrize("name,make", ONE_D, ids=[n for n, _ in ONE_D])
def test_query_derivative_matches_scipy(name, make):
    y = _data(name, Y)
    twin, ref = make(ci), make(si)
    # away from the breakpoints and the jumps of the piecewise constant kinds
    t = np.array([0.05, 1.1, 1.75, 2.6])
    t = t[np.min(np.abs(t[:, None] - np.r_[X, (X[1:] + X[:-1]) / 2]), axis=1) > 0.02]
    J = cr.jacobian(lambda q: twin(X, y)(q))(t)
    fd_close(J, fd(lambda q: ref(X, y)(q), t))


SPLINES = [n for n in ONE_D if n[0].startswith(("CubicSpline", "make_interp_spline-k3",
                                                  "make_interp_spline-k5", "Pchip",
                                                  "Akima", "makima"))]


@pytest.mark.parametrize("name,make", SPLINES, ids=[n for n, _ in SPLINES])
def test_derivative_antiderivative_integrate_match_scipy(name, make):
    y = _data(name, Y if "(1, 0.5)" in name else Y2)
    twin, ref = make(ci), make(si)
    r = ref(X, y)
    ext = getattr(r, "extrapolate", True)
    inside = TIN if ext == "periodic" else T
    for fn, args in [(lambda s: s.derivative()(T), ()),
                     (lambda s: s.derivative(2)(T), ()),
                     (lambda s: s.antiderivative()(inside), ()),
                     (lambda s: s.antiderivative(2)(inside), ()),
                     (lambda s: s(T, 1), ()),
                     (lambda s: s.integrate(0.3, 2.5), ()),
                     (lambda s: s.integrate(2.5, -0.5), ()),
                     (lambda s: s.integrate(-0.5, 7.5, extrapolate="periodic"), ()),
                     (lambda s: s.integrate(-1.0, 2.0, extrapolate=False), ())]:
        expected = fn(r)
        close(traced_value(lambda v: fn(twin(X, v)), y), expected, 1e-11)
    # the integral's derivative in its bounds is the interpolant there
    a, b = 0.4, 2.3
    g = cr.grad(lambda ab: np.sum(twin(X, y).integrate(ab[0], ab[1])))(np.array([a, b]))
    np.testing.assert_allclose(g, [-np.sum(r(a)), np.sum(r(b))], atol=1e-12)


def test_second_derivatives():
    s = si.CubicSpline(X, Y)
    t = np.array([0.3, 1.3, 2.1])
    # in the query: the spline's second derivative (HVP, and the Hessian)
    h = cr.hvp(lambda q: np.sum(ci.CubicSpline(X, Y)(q)), t, np.ones(3))
    np.testing.assert_allclose(h, s(t, 2), atol=1e-10)
    H = cr.hessian(lambda q: np.sum(ci.CubicSpline(X, Y)(q) ** 2))(t)
    np.testing.assert_allclose(H, np.diag(2 * (s(t, 1) ** 2 + s(t) * s(t, 2))), atol=1e-10)
    # in the data: the interpolant is linear in y, so the Hessian of a
    # squared error is 2 J^T J
    J = fd(lambda v: si.CubicSpline(X, v)(t), Y)
    H = cr.hessian(lambda v: np.sum(ci.CubicSpline(X, v)(t) ** 2))(Y)
    np.testing.assert_allclose(H, 2 * J.T @ J, atol=1e-7)
    # Pchip is not linear in y: its Hessian against differences of its gradient
    loss = lambda v: np.sum(ci.PchipInterpolator(X, v)(t) ** 3)  # noqa: E731
    g = cr.grad(loss)
    ymono = np.cumsum(np.abs(Y) + 0.2)
    Hfd = fd(lambda v: g(v), ymono)
    np.testing.assert_allclose(cr.hessian(loss)(ymono), Hfd, atol=1e-5)


def test_one_sided_at_breakpoints():
    # CubicSpline: at a breakpoint the derivative in t is the right piece's
    s = si.CubicSpline(X, Y)
    d = cr.grad(lambda q: ci.CubicSpline(X, Y)(q))(X[2])
    assert d == pytest.approx(s.derivative()(X[2]), abs=1e-12)
    right = np.polyval(np.polyder(s.c[:, 2]), 0.0)
    assert d == pytest.approx(right, abs=1e-12)
    # interp1d linear (SciPy's cells (x[i-1], x[i]]): the slope on the left,
    # and at the first point the slope on the right
    f = lambda q: ci.interp1d(X, Y)(q)  # noqa: E731
    slopes = np.diff(Y) / np.diff(X)
    assert cr.grad(f)(X[3]) == pytest.approx(slopes[2], abs=1e-12)
    assert cr.grad(f)(X[0]) == pytest.approx(slopes[0], abs=1e-12)
    # the grid: the cell above the grid line
    g = np.array([0.0, 1.0, 3.0])
    v = np.array([0.0, 2.0, 0.0])
    rg = lambda q: ci.RegularGridInterpolator((g,), v)(q)  # noqa: E731
    assert cr.grad(lambda q: rg(q[None])[0])(np.array([1.0]))[0] == pytest.approx(-1.0)
    # BSpline: the piece that starts at the knot
    b = si.make_interp_spline(X, Y, k=1)
    d = cr.grad(lambda q: ci.make_interp_spline(X, Y, k=1)(q))(X[4])
    assert d == pytest.approx(slopes[4], abs=1e-12)
    assert b(X[4]) == pytest.approx(Y[4])


def test_pchip_flat_and_turning_points():
    # a local maximum at y[2]: its slope is 0 on the branch the values are on,
    # and the Jacobian of the slope there is 0; elsewhere, finite differences
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    y = np.array([0.0, 1.0, 2.0, 1.5, 1.0])
    t = np.array([1.7, 2.0, 2.4])
    J = cr.jacobian(lambda v: ci.PchipInterpolator(x, v)(t))(y)
    fd_close(J, fd(lambda v: si.PchipInterpolator(x, v)(t), y))
    slope = cr.jacobian(lambda v: ci.PchipInterpolator(x, v).derivative()(np.array([2.0])))(y)
    np.testing.assert_array_equal(slope, np.zeros((1, 5)))


def test_bspline_degree_zero_integral_counts_every_piece():
    # SciPy's antiderivative of a degree-0 spline drops its last piece (its
    # integral over the whole range is 0); the twin integrates every piece
    b = si.make_interp_spline(X, Y, k=0)
    exact = np.sum(b.c[:len(b.t) - 1] * np.diff(b.t))
    assert ci.make_interp_spline(X, Y, k=0).integrate(X[0], X[-1]) == pytest.approx(exact)
    g = cr.grad(lambda v: ci.make_interp_spline(X, v, k=0).integrate(X[0], X[-1]))(Y)
    np.testing.assert_allclose(g, np.diff(b.t)[:len(Y)], atol=1e-12)


def test_bspline_and_ppoly_direct():
    t = np.r_[[0.0] * 3, 0.5, 1.2, 2.0, [3.0] * 3]
    c = RNG.normal(size=(len(t) - 3, 2))
    q = np.array([-0.2, 0.3, 1.0, 2.9, 3.3])
    for ext in (True, False, "periodic"):
        ref = si.BSpline(t, c, 2, extrapolate=ext)
        close(traced_value(lambda v: ci.BSpline(t, v, 2, extrapolate=ext)(q), c), ref(q))
        close(traced_value(lambda v: ci.BSpline(t, c, 2, extrapolate=ext)(v), q), ref(q))
        J = cr.jacobian(lambda v: ci.BSpline(t, v, 2, extrapolate=ext)(q))(c)
        fd_close(J, fd(lambda v: si.BSpline(t, v, 2, extrapolate=ext)(q), c))
    # PPoly, increasing and decreasing breakpoints, every extrapolation mode
    cp = RNG.normal(size=(4, 3, 2))
    for x in (np.array([0.0, 1.0, 1.5, 3.0]), np.array([3.0, 1.5, 1.0, 0.0])):
        for ext in (True, False, "periodic"):
            ref = si.PPoly(cp, x, extrapolate=ext)
            close(traced_value(lambda v: ci.PPoly(v, x, extrapolate=ext)(q), cp), ref(q))
            close(traced_value(lambda v: ci.PPoly(v, x, extrapolate=ext)(q, 2), cp), ref(q, 2))
            if x[0] < x[-1]:      # SciPy refuses integrals over decreasing breakpoints
                close(traced_value(lambda v: ci.PPoly(v, x, extrapolate=ext).integrate(
                    -0.5, 2.5), cp), ref.integrate(-0.5, 2.5))
            close(traced_value(lambda v: ci.PPoly(v, x, extrapolate=ext).antiderivative()(
                q[1:-1]), cp), ref.antiderivative()(q[1:-1]))


def test_axis_and_shapes():
    y = RNG.normal(size=(3, 7, 2))
    for make in (lambda m, v: m.CubicSpline(X, v, axis=1),
                 lambda m, v: m.make_interp_spline(X, v, axis=1),
                 lambda m, v: m.PchipInterpolator(X, v, axis=1),
                 lambda m, v: m.interp1d(X, v, axis=1, kind="cubic")):
        q = np.array([[0.5, 1.0, 2.0], [1.5, 2.5, 0.7]])
        expected = make(si, y)(q)
        close(traced_value(lambda v: make(ci, v)(q), y), expected)
        close(traced_value(lambda v: make(ci, y)(v), q), expected)


@pytest.mark.parametrize("q", [1.3, np.float64(1.3), np.array(1.3), np.array([1.3]),
                               np.zeros(0), np.float32(1.3), np.array([[1.3, 0.4]])],
                         ids=["float", "np-scalar", "0-d", "size-1", "empty", "float32", "2-d"])
def test_query_entry_points(q):
    for make in (lambda m, v: m.CubicSpline(X, v), lambda m, v: m.interp1d(X, v),
                 lambda m, v: m.make_interp_spline(X, v), lambda m, v: m.Akima1DInterpolator(X, v)):
        expected = make(si, Y)(q)
        out = traced_value(lambda v: make(ci, v)(q), Y)
        assert np.shape(out) == np.shape(expected)
        close(out, expected)
        if np.size(q):
            g = cr.grad(lambda s: np.sum(make(ci, Y)(s)))(q)
            assert np.shape(g) == np.shape(q) and np.result_type(g) == np.result_type(q)
            np.testing.assert_allclose(g, np.sum(fd(lambda s: make(si, Y)(s), np.asarray(
                q, dtype=float)).reshape(np.size(q), np.size(q)), axis=0).reshape(np.shape(q)),
                atol=1e-6)


def test_float32_and_complex_data():
    y32 = Y.astype(np.float32)
    for make in (lambda m, v: m.CubicSpline(X, v), lambda m, v: m.make_interp_spline(X, v),
                 lambda m, v: m.interp1d(X, v, kind="quadratic"),
                 lambda m, v: m.PchipInterpolator(X, v)):
        expected = make(si, y32)(TIN)
        out = traced_value(lambda v: make(ci, v)(TIN), y32)
        assert out.dtype == expected.dtype
        close(out, expected, 1e-6)
        g = cr.grad(lambda v: np.sum(make(ci, v)(TIN)))(y32)
        assert g.dtype == np.float32
    yc = Y + 1j * RNG.normal(size=7)
    for make in (lambda m, v: m.CubicSpline(X, v), lambda m, v: m.make_interp_spline(X, v),
                 lambda m, v: m.interp1d(X, v)):
        expected = make(si, yc)(TIN)
        close(traced_value(lambda v: make(ci, v)(TIN), yc), expected)
        # the interpolant is linear in y: the gradient of |f|^2 is 2 J^T conj(f) (the
        # convention of the complex-numbers guide)
        g = cr.grad(lambda v: np.sum(np.abs(make(ci, v)(TIN)) ** 2))(yc)
        J = fd(lambda v: make(si, v)(TIN), Y)           # real Jacobian, linear map
        np.testing.assert_allclose(g, 2 * J.T @ np.conj(expected), atol=1e-6)


def test_interp1d_fill_and_bounds():
    y = Y2.T                                                   # axis -1
    for kw in [dict(bounds_error=False), dict(bounds_error=False, fill_value=(-1.0, 5.0)),
               dict(fill_value="extrapolate"), dict(bounds_error=False, fill_value=7.0)]:
        for kind in ("linear", "previous", "next", "cubic", "nearest"):
            expected = si.interp1d(X, y, kind=kind, **kw)(T)
            close(traced_value(lambda v: ci.interp1d(X, v, kind=kind, **kw)(T), y), expected)
            close(traced_value(lambda v: ci.interp1d(X, y, kind=kind, **kw)(v), T), expected)
    with pytest.raises(ValueError, match="below the interpolation range"):
        cr.grad(lambda v: np.sum(ci.interp1d(X, v)(T)))(Y)
    # unsorted x is sorted as SciPy does
    order = RNG.permutation(7)
    close(traced_value(lambda v: ci.interp1d(X[order], v)(TIN), Y[order]),
          si.interp1d(X, Y)(TIN))
    # NaN data in a spline kind: SciPy's all-NaN result
    yn = Y.copy()
    yn[3] = np.nan
    out = traced_value(lambda v: ci.interp1d(X, v, kind="cubic")(TIN), yn)
    assert np.isnan(out).all()
    # NaN data in the piecewise constant and linear kinds stay local, as in SciPy
    for kind in ("zero", "slinear", "linear", "nearest", "previous"):
        expected = si.interp1d(X, yn, kind=kind)(TIN)
        assert np.isfinite(expected).any()
        close(traced_value(lambda v: ci.interp1d(X, v, kind=kind)(TIN), yn), expected)


GRID = (np.sort(RNG.uniform(0, 1, 5)), np.linspace(0, 2, 4)[::-1], np.sort(RNG.uniform(-1, 1, 6)))
VALUES = RNG.normal(size=(5, 4, 6, 2))
XI = np.stack([RNG.uniform(-0.1, 1.1, 6), RNG.uniform(-0.1, 2.1, 6),
               RNG.uniform(-1, 1, 6)], -1)


@pytest.mark.parametrize("method", ["linear", "nearest", "slinear", "cubic"])
@pytest.mark.parametrize("fill", [np.nan, None], ids=["nan", "extrapolate"])
def test_regular_grid(method, fill):
    kw = dict(solver=ssl.spsolve) if method == "cubic" else {}
    ref = si.RegularGridInterpolator(GRID, VALUES, method, bounds_error=False,
                                     fill_value=fill, **kw)
    twin = lambda v: ci.RegularGridInterpolator(GRID, v, method, bounds_error=False,  # noqa
                                                fill_value=fill)
    expected = ref(XI)
    close(twin(VALUES)(XI), expected)
    close(traced_value(lambda v: twin(v)(XI), VALUES), expected)
    close(traced_value(lambda q: twin(VALUES)(q), XI), expected)
    J = cr.jacobian(lambda v: twin(v)(XI))(VALUES)
    fd_close(J, fd(lambda v: si.RegularGridInterpolator(
        GRID, v, method, bounds_error=False, fill_value=fill, **kw)(XI), VALUES))
    inside = XI[2:3] * 0 + np.array([[0.5, 1.1, 0.1]])
    Jq = cr.jacobian(lambda q: twin(VALUES)(q))(inside)
    fd_close(Jq, fd(lambda q: ref(q), inside))
    # interpn: the same, as a function; a tuple of coordinate arrays
    close(traced_value(lambda v: ci.interpn(GRID, v, XI, method, bounds_error=False,
                                            fill_value=fill), VALUES), expected)
    cols = tuple(XI[:, d] for d in range(3))
    close(traced_value(lambda v: twin(v)(cols), VALUES), ref(cols))


def test_regular_grid_errors():
    with pytest.raises(ValueError, match="out of bounds"):
        cr.grad(lambda v: np.sum(ci.RegularGridInterpolator(GRID, v)(XI)))(VALUES)
    with pytest.raises(ValueError, match="derivatives"):
        cr.grad(lambda v: np.sum(ci.RegularGridInterpolator(
            GRID, v, "linear", bounds_error=False)(XI, nu=(1, 0, 0))))(VALUES)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("rescale", [False, True])
def test_griddata(method, rescale):
    pts = RNG.uniform(0, 1, (25, 2)) * [1.0, 4.0]
    vals = RNG.normal(size=25)
    q = RNG.uniform(-0.1, 1.1, (8, 2)) * [1.0, 4.0]
    ref = lambda v, z=q: si.griddata(pts, v, z, method=method, rescale=rescale)  # noqa
    twin = lambda v, z=q: ci.griddata(pts, v, z, method=method, rescale=rescale)  # noqa
    close(traced_value(twin, vals), ref(vals))
    close(traced_value(lambda z: twin(vals, z), q), ref(vals))
    J = cr.jacobian(twin)(vals)
    fd_close(J, fd(ref, vals))
    inside = np.array([[0.5, 2.0], [0.3, 1.1]])
    Jq = cr.jacobian(lambda z: twin(vals, z))(inside)
    fd_close(Jq, fd(lambda z: ref(vals, z), inside))


def test_griddata_one_dimensional_and_cubic():
    x = np.sort(RNG.uniform(0, 1, 6))
    v = RNG.normal(size=6)
    q = np.array([0.2, 0.5, 0.8])
    for method in ("linear", "nearest", "cubic"):
        close(traced_value(lambda w: ci.griddata(x, w, q, method=method), v),
              si.griddata(x, v, q, method=method))
    pts = RNG.uniform(0, 1, (10, 2))
    with pytest.raises(MissingRuleError, match="cubic"):
        cr.grad(lambda w: np.sum(ci.griddata(pts, w, pts[:2] * 0.9, method="cubic")))(
            RNG.normal(size=10))


def test_constant_coordinates_and_untouched_inputs():
    x, y, t = X.copy(), Y.copy(), T.copy()
    with pytest.raises(MissingRuleError, match="sample points x"):
        cr.grad(lambda xx: np.sum(ci.CubicSpline(xx, y)(t)))(x)
    with pytest.raises(AutodiffError, match="knots t"):
        cr.grad(lambda tt: np.sum(ci.BSpline(tt, y, 2)(t)))(np.r_[0.0, 0, 0, x, 3, 3, 3])
    with pytest.raises(MissingRuleError, match="roots"):
        cr.grad(lambda v: np.sum(ci.CubicSpline(x, v).roots()))(y)
    for make in (ci.CubicSpline, ci.PchipInterpolator, ci.make_interp_spline, ci.interp1d):
        cr.grad(lambda v: np.sum(make(x, v)(t[(t > x[0]) & (t < x[-1])])))(y)
        cr.grad(lambda s: np.sum(make(x, y)(s)))(t[(t > x[0]) & (t < x[-1])])
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(y, Y)
    np.testing.assert_array_equal(t, T)


def test_plain_scipy_call_names_the_twin():
    for call, twin in [(lambda v: si.CubicSpline(X, v)(1.0), "interpolate.CubicSpline"),
                       (lambda v: si.interp1d(X, v)(1.0), "interpolate.interp1d"),
                       (lambda v: si.make_interp_spline(X, v)(1.0),
                        "interpolate.make_interp_spline"),
                       (lambda v: si.PchipInterpolator(X, Y)(v[0]),
                        "interpolate.PchipInterpolator")]:
        with pytest.raises(UntraceableError, match=f"chainrules.scipy.{twin} instead"):
            cr.grad(lambda v: np.sum(call(v)))(Y)


def test_spline_fit_example():
    # learn the data values of a spline so that it matches observations
    rng = np.random.default_rng(0)
    knots = np.linspace(0.0, 1.0, 8)
    t_obs = np.sort(rng.uniform(0.0, 1.0, 40))
    obs = np.sin(2 * np.pi * t_obs)

    def loss(y):
        return np.mean((ci.CubicSpline(knots, y)(t_obs) - obs) ** 2)

    y = np.zeros(8)
    value_and_grad = cr.value_and_grad(loss)
    for _ in range(300):
        value, g = value_and_grad(y)
        y = y - 2.0 * g
    assert value < 1e-3
    # the optimum solves a linear least-squares problem
    J = fd(lambda v: si.CubicSpline(knots, v)(t_obs), np.zeros(8))
    best = np.linalg.lstsq(J, obs, rcond=None)[0]
    assert np.mean((J @ best - obs) ** 2) <= value


TCK = si.splrep(X, Y)
Q = np.array([-0.4, 0.35, 1.2, 2.05, 3.1])


@pytest.mark.parametrize("ext", [0, 1, 3])
@pytest.mark.parametrize("der", [0, 1, 2])
def test_splev(ext, der):
    t, c, k = TCK
    expected = si.splev(Q, TCK, der, ext)
    close(traced_value(lambda v: ci.splev(Q, (t, v, k), der, ext), c), expected)
    close(traced_value(lambda q: ci.splev(q, TCK, der, ext), Q), expected)
    fd_close(cr.jacobian(lambda v: ci.splev(Q, (t, v, k), der, ext))(c),
             fd(lambda v: si.splev(Q, (t, v, k), der, ext), c))
    fd_close(cr.jacobian(lambda q: ci.splev(q, TCK, der, ext))(Q),
             fd(lambda q: si.splev(q, TCK, der, ext), Q))


def test_fitpack_tuple_functions():
    t, c, k = TCK
    for a, b in [(0.3, 2.0), (-1.0, 5.0), (2.5, 0.1)]:
        close(traced_value(lambda v: ci.splint(a, b, (t, v, k)), c), si.splint(a, b, TCK))
        g = cr.grad(lambda ab: ci.splint(ab[0], ab[1], TCK))(np.array([a, b]))
        inside = lambda z: si.splev(z, TCK) if X[0] <= z <= X[-1] else 0.0  # noqa: E731
        np.testing.assert_allclose(g, [-inside(a), inside(b)], atol=1e-12)
    close(traced_value(lambda v: ci.spalde(1.2, (t, v, k)), c), si.spalde(1.2, TCK))
    for got, want in zip(traced_value(lambda q: np.stack(ci.spalde(q, TCK)), np.array(
            [0.5, 2.0])), si.spalde([0.5, 2.0], TCK)):
        close(got, want)
    for n in (1, 2):
        close(traced_value(lambda v: ci.splder((t, v, k), n)[1], c), si.splder(TCK, n)[1])
        close(traced_value(lambda v: ci.splantider((t, v, k), n)[1], c),
              si.splantider(TCK, n)[1])
    # parametric coefficients: one spline per row
    cc = [c, 2 * c]
    out = ci.splev(Q, (t, cc, k))
    close(np.stack(out), np.stack(si.splev(Q, (t, cc, k))))
    with pytest.raises(MissingRuleError, match="real coefficients"):
        cr.grad(lambda v: np.sum(np.abs(ci.splev(Q, (t, v, k)))))(c + 1j)
    with pytest.raises(ValueError):
        cr.grad(lambda q: np.sum(ci.splev(q, TCK, ext=2)))(Q)


def test_fits_linear_in_the_data():
    x = np.linspace(0.0, 3.0, 15)
    y = np.cos(x) + 0.1 * RNG.normal(size=15)
    t = np.r_[[0.0] * 4, 1.0, 2.0, [3.0] * 4]
    for twin, ref in [(lambda v: ci.make_lsq_spline(x, v, t), lambda v: si.make_lsq_spline(
            x, v, t)), (lambda v: ci.make_smoothing_spline(x, v, lam=0.02),
                        lambda v: si.make_smoothing_spline(x, v, lam=0.02)),
            (lambda v: ci.make_lsq_spline(x, v, t, method="norm-eq"),
             lambda v: si.make_lsq_spline(x, v, t, method="norm-eq"))]:
        close(traced_value(lambda v: twin(v)(TIN), y), ref(y)(TIN), 1e-11)
        fd_close(cr.jacobian(lambda v: twin(v)(TIN))(y), fd(lambda v: ref(v)(TIN), y))
    with pytest.raises(MissingRuleError, match="pass lam"):
        cr.grad(lambda v: np.sum(ci.make_smoothing_spline(x, v)(TIN)))(y)
    for der in (0, 1, [0, 2]):
        want = si.pchip_interpolate(X, Y, TIN, der=der)
        got = traced_value(lambda v: np.stack(ci.pchip_interpolate(X, v, TIN, der=der)), Y)
        close(got, np.stack(want))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ppoly_axis_and_float32_coefficients(axis):
    # SciPy's layout: the order and interval axes of c stand at ``axis``
    c = np.moveaxis(RNG.normal(size=(2, 4, 3, 5)).astype(np.float32), (0, 1),
                    (axis, axis + 1))
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    q = np.array([[0.5, 1.5], [3.2, 4.4]])
    expected = si.PPoly(c, x, axis=axis)(q)
    out = traced_value(lambda v: ci.PPoly(v, x, axis=axis)(q), c)
    assert out.dtype == expected.dtype == np.float64
    close(out, expected)
    g = cr.grad(lambda v: np.sum(ci.PPoly(v, x, axis=axis)(q)))(c)
    assert g.dtype == np.float32 and g.shape == c.shape


@pytest.mark.parametrize("make", [
    lambda m, x, y: m.CubicSpline(x, y),
    lambda m, x, y: m.CubicSpline(x, y, bc_type="natural"),
    lambda m, x, y: m.make_interp_spline(x, y),
    lambda m, x, y: m.make_interp_spline(x, y, k=2),
    lambda m, x, y: m.make_interp_spline(x, y, k=5),
    lambda m, x, y: m.make_interp_spline(x, y, bc_type="clamped")],
    ids=["cubic", "cubic-natural", "bspline3", "bspline2", "bspline5", "bspline-clamped"])
def test_many_points_by_banded_solves(make):
    # 20000 points: the coefficients come from banded solves (an n x n map
    # would take 3.2 GB); the tangent of a spline linear in y is the spline
    # of the tangent, and the pullback is its transpose
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0.0, 100.0, 20000))
    y, v = np.sin(x), rng.normal(size=20000)
    t = rng.uniform(0.0, 100.0, 50)
    out, tangent = cr.jvp(lambda w: make(ci, x, w)(t), (y,), (v,))
    close(out, make(si, x, y)(t), 1e-11)
    close(tangent, make(si, x, v)(t), 1e-10)
    w = rng.normal(size=50)
    _, pull = cr.vjp(lambda z: make(ci, x, z)(t), y)
    assert np.dot(pull(w)[0], v) == pytest.approx(np.dot(w, tangent), rel=1e-10)


def test_boundary_derivatives_differentiate():
    # prescribed end derivatives enter the right-hand side linearly
    v = np.array([0.3, -0.7])
    for twin, ref in [
            (lambda w: ci.CubicSpline(X, Y, bc_type=((1, w[0]), (2, w[1])))(T),
             lambda w: si.CubicSpline(X, Y, bc_type=((1, w[0]), (2, w[1])))(T)),
            (lambda w: ci.make_interp_spline(X, Y, bc_type=([(1, w[0])], [(2, w[1])]))(T),
             lambda w: si.make_interp_spline(X, Y, bc_type=([(1, w[0])], [(2, w[1])]))(T))]:
        close(traced_value(twin, v), ref(v))
        fd_close(cr.jacobian(twin)(v), fd(ref, v))
    # three points (SciPy's special case) keep them constant
    with pytest.raises(MissingRuleError, match="boundary derivative"):
        cr.grad(lambda w: np.sum(ci.CubicSpline(X[:3], Y[:3], bc_type=(
            (1, w[0]), (2, w[1])))(T)))(v)


@pytest.mark.parametrize("method,nu", [("pchip", None), ("cubic_legacy", None),
                                       ("slinear_legacy", None), ("cubic", (1, 0, 0)),
                                       ("cubic", (0, 2, 1)), ("slinear", (1, 1, 0)),
                                       ("cubic", (4, 0, 0))])
def test_regular_grid_pchip_legacy_and_derivatives(method, nu):
    inside = np.stack([np.clip(XI[:, d], min(g[0], g[-1]) + 0.01, max(g[0], g[-1]) - 0.01)
                       for d, g in enumerate(GRID)], -1)
    kw = dict(solver=ssl.spsolve) if method == "cubic" else {}

    def ref(v, q=inside):
        interp = si.RegularGridInterpolator(GRID, v, method, **kw)
        return interp(q, nu=nu) if nu else interp(q)

    twin = lambda v, q=inside: ci.RegularGridInterpolator(GRID, v, method)(q, nu=nu)  # noqa
    close(traced_value(twin, VALUES), ref(VALUES), 1e-11)
    close(traced_value(lambda q: twin(VALUES, q), inside), ref(VALUES), 1e-11)
    fd_close(cr.jacobian(twin)(VALUES), fd(ref, VALUES))
    fd_close(cr.jacobian(lambda q: twin(VALUES, q))(inside), fd(lambda q: ref(VALUES, q),
                                                                inside), 1e-5)


def test_cubic_hermite_spline():
    dydx = RNG.normal(size=(7, 2))
    expected = si.CubicHermiteSpline(X, Y2, dydx)(T)
    close(traced_value(lambda v: ci.CubicHermiteSpline(X, v, dydx)(T), Y2), expected)
    close(traced_value(lambda d: ci.CubicHermiteSpline(X, Y2, d)(T), dydx), expected)
    fd_close(cr.jacobian(lambda d: ci.CubicHermiteSpline(X, Y2, d)(T))(dydx),
             fd(lambda d: si.CubicHermiteSpline(X, Y2, d)(T), dydx))
    close(traced_value(lambda d: ci.CubicHermiteSpline(X, Y2, d).integrate(0.1, 2.0), dydx),
          si.CubicHermiteSpline(X, Y2, dydx).integrate(0.1, 2.0))


@pytest.mark.parametrize("name", ["KroghInterpolator", "BarycentricInterpolator"])
@pytest.mark.parametrize("axis", [0, 1])
def test_polynomial_interpolants(name, axis):
    xi = np.array([0.0, 0.4, 1.1, 1.5, 2.3, 3.0])
    yi = RNG.normal(size=(6, 2)) if axis == 0 else RNG.normal(size=(2, 6))
    q = np.array([[0.2, 0.4], [1.7, 3.2]])
    twin = lambda v, z=q: getattr(ci, name)(xi, v, axis=axis)(z)  # noqa: E731
    ref = lambda v, z=q: getattr(si, name)(xi, v, axis=axis)(z)  # noqa: E731
    close(traced_value(twin, yi), ref(yi))
    close(traced_value(lambda z: twin(yi, z), q), ref(yi))
    fd_close(cr.jacobian(twin)(yi), fd(ref, yi))
    fd_close(cr.jacobian(lambda z: twin(yi, z))(q), fd(lambda z: ref(yi, z), q))
    # at a node (0.4): the first and second derivatives in the query are the
    # polynomial's, with no division by x - x_j
    f = lambda z: getattr(ci, name)(xi, yi[:, 0] if axis == 0 else yi[0])(z)  # noqa: E731
    p = getattr(si, name)(xi, yi[:, 0] if axis == 0 else yi[0])
    assert cr.grad(f)(0.4) == pytest.approx(p.derivative(0.4), rel=1e-10)
    assert cr.hvp(f, np.array(0.4), np.array(1.0)) == pytest.approx(p.derivative(0.4, 2),
                                                                     rel=1e-8)
    with pytest.raises(MissingRuleError, match="derivative"):
        cr.grad(lambda z: np.sum(getattr(ci, name)(xi, yi, axis=axis).derivative(z)))(q)


def test_polynomial_functions_and_hermite_nodes():
    xi = np.array([0.0, 0.4, 1.1, 1.5, 2.3, 3.0])
    yi = RNG.normal(size=6)
    for twin, ref in [(ci.krogh_interpolate, si.krogh_interpolate),
                      (ci.barycentric_interpolate, si.barycentric_interpolate)]:
        close(traced_value(lambda v: twin(xi, v, TIN), yi), ref(xi, yi, TIN))
    # repeated Krogh nodes prescribe derivatives
    xk, yk = np.array([0.0, 0.0, 1.0, 2.0]), np.array([1.0, 0.5, 2.0, 0.0])
    close(traced_value(lambda v: ci.KroghInterpolator(xk, v)(TIN), yk),
          si.KroghInterpolator(xk, yk)(TIN))
    fd_close(cr.jacobian(lambda v: ci.KroghInterpolator(xk, v)(TIN))(yk),
             fd(lambda v: si.KroghInterpolator(xk, v)(TIN), yk))


@pytest.mark.parametrize("dx,dy", [(0, 0), (1, 0), (0, 2), (1, 1)])
def test_bisplev(dx, dy):
    gx, gy = np.meshgrid(np.linspace(0, 1, 9), np.linspace(0, 2, 8), indexing="ij")
    tck = si.bisplrep(gx.ravel(), gy.ravel(), (np.sin(3 * gx) * np.cos(gy)).ravel(), s=0.01)
    tx, ty, c, kx, ky = tck
    x = np.array([-0.1, 0.2, 0.55, 0.9, 1.2])        # outside: FITPACK's edge values
    y = np.array([0.1, 1.0, 1.9, 2.3])
    expected = si.bisplev(x, y, tck, dx, dy)
    close(traced_value(lambda v: ci.bisplev(x, y, (tx, ty, v, kx, ky), dx, dy), c), expected)
    close(traced_value(lambda q: ci.bisplev(q, y, tck, dx, dy), x), expected)
    fd_close(cr.jacobian(lambda v: ci.bisplev(x, y, (tx, ty, v, kx, ky), dx, dy))(c),
             fd(lambda v: si.bisplev(x, y, (tx, ty, v, kx, ky), dx, dy), c))
    fd_close(cr.jacobian(lambda q: ci.bisplev(q, y, tck, dx, dy))(x),
             fd(lambda q: si.bisplev(q, y, tck, dx, dy), x))
    # SciPy's squeezing of scalar points
    for xx, yy in [(0.3, 1.0), (x, 1.0), (0.3, y)]:
        out = traced_value(lambda v: ci.bisplev(xx, yy, (tx, ty, v, kx, ky), dx, dy), c)
        want = si.bisplev(xx, yy, tck, dx, dy)
        assert np.shape(out) == np.shape(want)
        close(out, want)


def test_insert():
    t, c, k = TCK
    for m, per, tck in [(1, 0, TCK), (2, 0, TCK),
                        (1, 1, si.splrep(X, np.cos(2 * np.pi * (X - X[0]) / (X[-1] - X[0])),
                                         per=1))]:
        tt, cc, kk = tck
        ref_t, ref_c, _ = si.insert(1.3, tck, m=m, per=per)
        used = len(ref_t) - kk - 1           # FITPACK leaves the rest unset
        out_t, out_c, _ = ci.insert(1.3, (tt, cr.stop_gradient(cc), kk), m, per)
        np.testing.assert_array_equal(out_t, ref_t)
        got = traced_value(lambda v: ci.insert(1.3, (tt, v, kk), m, per)[1], cc)
        close(got[:used], ref_c[:used])
        np.testing.assert_array_equal(got[used:], 0.0)
        fd_close(cr.jacobian(lambda v: ci.insert(1.3, (tt, v, kk), m, per)[1][:used])(cc),
                 fd(lambda v: si.insert(1.3, (tt, v, kk), m, per)[1][:used], cc))
        if not per:
            # the spline is unchanged, so is its derivative in the coefficients (a
            # periodic spline's repeated coefficients are one: FITPACK reads one copy)
            fd_close(cr.jacobian(lambda v: ci.splev(TIN, ci.insert(1.3, (tt, v, kk), m)))(cc),
                     fd(lambda v: si.splev(TIN, (tt, v, kk)), cc))
    b = ci.BSpline(t, np.stack([c, 2 * c], 1), k)
    ref = si.insert(1.3, si.BSpline(t, np.stack([c, 2 * c], 1), k))
    used = len(ref.t) - k - 1
    close(traced_value(lambda v: ci.insert(1.3, ci.BSpline(t, v, k)).c, b.c)[:used],
          ref.c[:used])
    for short in (c[0], c[:1]):   # SciPy would read past the end of c
        with pytest.raises(DomainError, match="insert: the knots"):
            cr.jacobian(lambda v: ci.insert(1.3, (t, v, k))[1])(short)


def test_two_point_akima_in_the_data():
    # SciPy 1.16 on: the straight line through the points; before: a curved
    # piece, which the twin refuses rather than differentiate another curve
    from chainrules.scipy.interpolate._cubic import _two_point_akima_is_curved

    x, y = np.array([0.0, 1.0]), np.array([1.0, 3.0])

    def f(v):
        return np.sum(ci.Akima1DInterpolator(x, v)(0.25))

    if _two_point_akima_is_curved():
        with pytest.raises(MissingRuleError, match="two points"):
            cr.grad(f)(y)
    else:
        np.testing.assert_allclose(cr.grad(f)(y), [0.75, 0.25], rtol=1e-14)
        assert f(y) == pytest.approx(1.5)
