"""Compositions (np.median, np.cov, np.linspace, ...): tie policies, NaN
handling, errors that name the way out, and values against NumPy; the
registry sweep checks every derivative against finite differences."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp
from chainrules.testing import check_rule


def test_order_statistics_split_ties_like_max():
    t = np.array([1.0, 2.0, 2.0, 3.0])
    np.testing.assert_array_equal(cr.grad(np.median)(t), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(cr.grad(np.max)(np.array([2.0, 2.0, 1.0])), [0.5, 0.5, 0])
    g = cr.grad(lambda x: np.quantile(x, 0.25))(np.array([1.0, 1.0, 5.0, 7.0, 9.0]))
    np.testing.assert_array_equal(g, [0.5, 0.5, 0, 0, 0])  # rank 1 is a tie of two


def test_nan_order_statistics_skip_nans():
    x = np.array([[np.nan, 1.0, 4.0], [2.0, np.nan, np.nan]])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.nanmedian(x, axis=1)))(x),
                               [[0, 0.5, 0.5], [1.0, 0, 0]])
    with np.errstate(invalid="ignore"):
        y = cr.jvp(lambda x: np.nanmedian(x, axis=0), (x,), (np.ones_like(x),))[0]
    np.testing.assert_allclose(y, np.nanmedian(x, axis=0))


def test_nancumprod_hvp_matches_finite_differences():
    x = np.array([0.5, np.nan, 1.5, -0.7])
    f = lambda x: np.sum(np.nancumprod(x) ** 2)  # noqa: E731
    v = np.array([1.0, 0.0, -0.5, 0.25])
    eps = 1e-6
    fd = (cr.grad(f)(x + eps * v) - cr.grad(f)(x - eps * v)) / (2 * eps)
    hv = cr.hvp(f, x, v)
    np.testing.assert_allclose(hv[[0, 2, 3]], fd[[0, 2, 3]], rtol=1e-6)
    assert hv[1] == 0


def test_unique_values_take_the_first_occurrence():
    x = np.array([3.0, 1.0, 3.0, 2.0])
    u, counts = cr.stop_gradient(np.unique(x, return_counts=True))
    g = cr.grad(lambda x: np.sum(np.unique(x) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [100.0, 1.0, 0.0, 10.0])
    vals, idx, cnt = cr.jvp(lambda x: np.unique(x, return_index=True, return_counts=True),
                            (x,), (np.ones(4),))[0]
    np.testing.assert_array_equal(cnt, [1, 1, 2])


def test_histogram_is_plain():
    x = np.array([0.1, 0.4, 0.9])
    counts, edges = cr.jvp(lambda x: np.histogram(x, bins=2), (x,), (np.ones(3),))[0]
    np.testing.assert_array_equal(counts, [2, 1])
    assert cr.grad(lambda x: np.sum(x) + np.sum(np.histogram(x, bins=2)[0]))(x).tolist() == [1, 1, 1]


def test_fill_values_numpy_converts_early_name_the_replacement():
    with pytest.raises(cr.UntraceableError, match=r"chainrules\.numpy\.full_like"):
        cr.grad(lambda v: np.sum(np.full_like(np.ones(3), v)))(2.0)
    with pytest.raises(cr.UntraceableError, match=r"chainrules\.numpy\.full"):
        cr.grad(lambda v: np.sum(np.full(3, v)))(2.0)
    assert cr.grad(lambda v: np.sum(cnp.full((2, 3), v) ** 2))(1.5) == 18.0
    assert cr.grad(lambda v: np.sum(cnp.full_like(np.ones((2, 2)), v)))(2.0) == 4.0


def test_r_and_c_with_traced_pieces():
    v = np.array([1.0, 2.0])
    out = cr.jvp(lambda v: cnp.r_[v, 1.0, 2 * v, 0:3], (v,), (v,))[0]
    np.testing.assert_array_equal(out, np.r_[v, 1.0, 2 * v, 0:3])
    np.testing.assert_array_equal(cr.grad(lambda v: np.sum(cnp.r_[v, 1.0, v * 2] ** 2))(v),
                                  2 * v + 8 * v)
    np.testing.assert_array_equal(cr.jvp(lambda v: cnp.c_[v, 3 * v], (v,), (v,))[0],
                                  np.c_[v, 3 * v])
    np.testing.assert_array_equal(cnp.r_[0:1:3j], np.r_[0:1:3j])


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_interp_of_narrow_samples_is_computed_in_double(dtype):
    """np.interp works in float64 (complex128) whatever its inputs: with
    float32 or complex64 samples the traced value is NumPy's, bit for bit,
    the derivatives those of the widened samples, and a traced fp keeps its
    dtype."""
    x = np.array([0.15, 0.55, 0.85, -0.2, 1.3])
    xp = np.array([0.0, 0.3, 0.7, 1.0], np.float32)
    fp = np.array([1.0, 2.3, 0.7, 1.9], np.float32) + (0.3j if dtype == np.complex64 else 0)
    fp = fp.astype(dtype)
    wide = fp.astype(np.complex128 if dtype == np.complex64 else np.float64)
    w = np.linspace(0.5, 1.5, 5)

    def loss(x, fp):
        return np.real(np.sum(np.interp(x, xp, fp) * w))

    value, g = cr.value_and_grad(loss)(x, fp)
    assert value == loss(x, fp)
    np.testing.assert_array_equal(g, cr.grad(loss)(x, wide))
    gf = cr.grad(loss, argnums=1)(x, fp)
    assert gf.dtype == dtype
    np.testing.assert_array_equal(gf, cr.grad(loss, argnums=1)(x, wide).astype(dtype))


def test_traced_xp_and_spacing_raise_clear_errors():
    with pytest.raises(cr.MissingRuleError, match="xp"):
        cr.grad(lambda xp: np.sum(np.interp(0.5, xp, np.array([0.0, 1.0]))))(np.array([0., 1.]))
    with pytest.raises(cr.MissingRuleError, match="weights"):
        cr.grad(lambda x: np.quantile(x, 0.5, weights=np.ones(3), method="inverted_cdf"))(
            np.ones(3))


def test_values_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6))
    for f in [lambda x: np.linspace(x[0, 0], x[1, 1], 7), lambda x: np.cov(x),
              lambda x: np.corrcoef(x), lambda x: np.percentile(x, [10, 90], axis=1),
              lambda x: np.gradient(x, 0.5, axis=1, edge_order=2),
              lambda x: np.convolve(x[0], x[1], "same"), lambda x: np.trapezoid(x, axis=0),
              lambda x: np.polyval(x[0], x[1]), lambda x: np.linalg.cond(x[:, :4]),
              lambda x: np.linalg.vector_norm(x, ord=3, axis=1),
              lambda x: np.cumulative_sum(x, axis=0, include_initial=True)]:
        np.testing.assert_allclose(cr.jvp(f, (x,), (x,))[0], f(x), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_polyder_past_the_degree_matches_numpy(dtype):
    # differentiating a constant gives NumPy's empty polynomial, not [0.]
    for n in range(4):
        p = (np.arange(1.0, n + 1) * 1.3).astype(dtype)
        for m in range(5):
            ref = np.polyder(p, m)
            out, tan = cr.jvp(lambda p: np.polyder(p, m), (p,), (np.ones_like(p),))
            assert out.shape == ref.shape and out.dtype == ref.dtype
            np.testing.assert_array_equal(out, ref)
            assert tan.shape == ref.shape
            (ct,) = cr.vjp(lambda p: np.polyder(p, m), p)[1](np.ones_like(ref))
            assert ct.shape == p.shape
            if ref.size:
                check_rule(np.polyder, p, m)
            else:  # nothing depends on p
                np.testing.assert_array_equal(ct, np.zeros_like(p))


def test_trim_zeros_follows_numpy_on_every_axis_form():
    """The bounding box of the nonzeros along the trimmed axes, as NumPy
    (N-d inputs and axis= where the installed NumPy takes them)."""
    import inspect

    takes_axis = "axis" in inspect.signature(np.trim_zeros).parameters
    rng = np.random.default_rng(0)
    for _ in range(60):
        shape = tuple(rng.integers(1, 4, size=rng.integers(1, 4 if takes_axis else 2)))
        v = rng.standard_normal(shape) * (rng.random(shape) < 0.4)
        axes = [None] + (list(range(-len(shape), len(shape))) if takes_axis else [])
        for trim in ("fb", "f", "b"):
            for axis in axes:
                kw = {} if axis is None else {"axis": axis}
                ref = np.trim_zeros(v, trim, **kw)
                out, t = cr.jvp(lambda x: np.trim_zeros(x, trim, **kw), (v,), (2 * v,))
                np.testing.assert_array_equal(out, ref)
                np.testing.assert_array_equal(t, 2 * ref)


_Q_FORMS = {"percentile": [30, 37.5, [10, 60], np.array([25.0, 50, 75]), np.float32(40)],
            "quantile": [0.3, [0.1, 0.55], np.array(0.9), np.float32(0.4)]}


@pytest.mark.parametrize("name", ["percentile", "quantile", "nanpercentile", "nanquantile",
                                  "median", "nanmedian"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quantiles_take_numpys_values_bit_for_bit(name, dtype):
    """The traced quantiles are NumPy's own values and dtypes: the ranks in
    q's dtype (np.float32(40) / 100 is rounded to float32 first), the
    difference of the neighbours in the values' dtype, then NumPy's lerp in
    its result's dtype, and a median as the mean of its middle two. Slices
    of odd and even counts, with NaNs for the nan* functions. Bit for bit
    from NumPy 2.4, which interpolates with a Python q in the values' dtype;
    before it, NumPy took some of these steps in float64, and the values
    agree to float32's rounding (a rank off by an ulp of q moves the value
    by about 1e-8 of its size)."""
    exact = np.lib.NumpyVersion(np.__version__) >= "2.4.0"
    rng = np.random.default_rng(5)
    op = getattr(np, name)
    base = name.replace("nan", "")
    for shape, axis in (((7,), None), ((8,), None), ((4, 6), 1), ((5, 4), 0),
                        ((3, 4, 2), (0, 2))):
        x = rng.standard_normal(shape).astype(dtype)
        if name.startswith("nan"):
            x.flat[::5] = np.nan  # slices of several counts
        calls = ([{}] if base == "median" else
                 [{"q": q, "method": m} for q in _Q_FORMS[base]
                  for m in ("linear", "midpoint", "lower", "nearest")])
        for kw in calls:
            kw = dict(kw)
            q = kw.pop("q", None)

            def f(x):
                return op(x, axis=axis, **kw) if q is None else op(x, q, axis=axis, **kw)

            expect = f(x)
            got = cr.jvp(f, (x,), (np.ones_like(x),))[0]
            assert np.asarray(got).dtype == np.asarray(expect).dtype, (shape, q, kw)
            if exact:
                np.testing.assert_array_equal(got, expect, err_msg=f"{shape} {q} {kw}")
            else:
                np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-7,
                                           err_msg=f"{shape} {q} {kw}")


# -- 0-d and size-1 inputs --------------------------------------------------------------
_SMALL = pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "size 1"])


@_SMALL
def test_polynomial_arithmetic_with_a_constant_polynomial(shape):
    # NumPy reads a 0-d coefficient array as the polynomial [a] (np.atleast_1d)
    a, b = np.full(shape, 0.7), np.full(shape, -1.3)
    v = np.array([0.5, 2.0, -1.0])
    cases = [(lambda a: np.polyadd(a, v), [0.0, 0.0, 1.0]),
             (lambda a: np.polyadd(v, a), [0.0, 0.0, 1.0]),
             (lambda a: np.polysub(v, a), [0.0, 0.0, -1.0]),
             (lambda a: np.polymul(a, v), v),
             (lambda a: np.polydiv(v, a)[0], -v / 0.49)]
    for f, want in cases:
        np.testing.assert_allclose(f(a), f(a * 1.0))   # the primal is NumPy's
        jac = cr.jacobian(f)(a)
        assert np.shape(jac) == (3,) + shape
        np.testing.assert_allclose(np.reshape(jac, 3), want, rtol=1e-14)
    # both constant: [a + b], [a - b], [a b], [a / b] with remainder [0]
    assert np.polyadd(a, b).shape == (1,)
    np.testing.assert_allclose(cr.grad(lambda a: np.polysub(a, b)[0])(a), np.ones(shape))
    np.testing.assert_allclose(cr.grad(lambda b: np.polymul(a, b)[0])(b), np.full(shape, 0.7))
    # the batched sweeps: Hessians of (2a)^3, a^2 b and v / a
    for f, want in [(lambda a: np.sum(np.polyadd(a, a) ** 3), 48 * 0.7),
                    (lambda a: np.sum(np.polymul(a, a * b)), -2 * 1.3),
                    (lambda a: np.sum(np.polydiv(v, a)[0]), 2 * np.sum(v) / 0.7 ** 3)]:
        h = cr.hessian(f)(a)
        assert np.shape(h) == shape + shape
        np.testing.assert_allclose(np.reshape(h, ()), want, rtol=1e-13)
        assert check_rule(f, a).worst < 1e-9


@pytest.mark.parametrize("ny", [1, 3])
def test_trapezoid_broadcasts_a_size_1_spacing_as_numpy_does(ny):
    # x of 2 points has one spacing d: NumPy broadcasts it over y's n - 1
    # pairs (none for n = 1); the traced call follows it
    x, y = np.array([0.2, 0.9]), np.linspace(0.5, 1.5, ny)[None, :]
    d = 0.7
    w = np.r_[0.5, np.ones(max(ny - 2, 0)), 0.5][:ny] * d if ny > 1 else np.zeros(1)
    assert np.trapezoid(y, x, axis=-1) == pytest.approx(np.sum(w * y[0]))
    jac = cr.jacobian(lambda y: np.trapezoid(y, x, axis=-1))(y)
    np.testing.assert_allclose(np.reshape(jac, ny), w, rtol=1e-14)
    h = cr.hessian(lambda y: np.trapezoid(y, x, axis=-1)[0] ** 2)(y)
    np.testing.assert_allclose(np.reshape(h, (ny, ny)), 2 * np.outer(w, w), rtol=1e-14)
    s = np.sum(y[0, 1:] + y[0, :-1]) / 2   # d/dx of d * s: (-s, s)
    np.testing.assert_allclose(cr.jacobian(lambda x: np.trapezoid(y, x, axis=-1))(x),
                               [[-s, s]], rtol=1e-14, atol=0)
    assert check_rule(np.trapezoid, y, x, axis=-1).worst < 1e-9
