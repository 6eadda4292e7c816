"""Targeted tests of rules/reductions.py: the documented behaviour at
non-differentiable points (ties, zeros, NaN, constant slices), closed-form
gradients and Hessians, keyword arguments and clear errors."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_hvp, check_rrule


def hessian(f, x):
    """Dense Hessian of scalar f at x from HVPs on the basis vectors."""
    n = x.size
    cols = []
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        cols.append(np.ravel(cr.hvp(f, x, e.reshape(x.shape))))
    return np.stack(cols, axis=1)


def nested_hessian(f, x):
    """Dense Hessian from jvp of grad (differentiates the pullbacks)."""
    n = x.size
    cols = []
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        cols.append(np.ravel(cr.jvp(cr.grad(f), (x,), (e.reshape(x.shape),))[1]))
    return np.stack(cols, axis=1)


def prod_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


# -- prod with zeros ---------------------------------------------------------------
@pytest.mark.parametrize("x", [
    np.array([2.0, 3.0, 0.5, -1.5]),
    np.array([2.0, 0.0, 0.5, -1.5]),        # one zero
    np.array([0.0, 3.0, 0.0, -1.5]),        # two zeros
    np.array([0.0, 0.0, 0.0, 2.0]),         # three zeros
])
def test_prod_gradient_is_product_of_the_others(x):
    g = cr.grad(np.prod)(x)
    expected = np.array([np.prod(np.delete(x, i)) for i in range(x.size)])
    np.testing.assert_array_equal(g, expected)
    if np.sum(x == 0) == 1:
        z = int(np.flatnonzero(x == 0)[0])
        assert g[z] == np.prod(np.delete(x, z)) != 0
        assert np.all(np.delete(g, z) == 0)
    np.testing.assert_allclose(hessian(np.prod, x), prod_hessian(x), atol=1e-14)
    np.testing.assert_allclose(nested_hessian(np.prod, x), prod_hessian(x), atol=1e-14)


def test_prod_with_zeros_along_axes_and_keepdims():
    x = np.array([[[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]],
                  [[0.0, 0.0, 2.0], [1.0, 2.0, 0.5]]])
    w = np.arange(1.0, 5.0).reshape(2, 2) / 3
    # (the generic checks measure errors relative to the cotangent, so they are
    # run where the gradient is not identically zero: <= 2 zeros per slice)
    for kw in ({"axis": 1}, {"axis": -2, "keepdims": True}, {"axis": (1, 2)}):
        check_rrule(np.prod, x, **kw)
        check_hvp(np.prod, x, **kw)
    g = cr.grad(lambda x: np.sum(np.prod(x, axis=2) * w))(x)
    for i in range(2):
        for j in range(2):
            for k in range(3):
                assert g[i, j, k] == w[i, j] * np.prod(np.delete(x[i, j], k))
    # the method reaches the same rule
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(x.prod(axis=2) * w))(x), g)


def test_prod_complex_holomorphic():
    z = np.array([1 + 1j, 0.0, 2 - 0.5j])
    check_rrule(np.prod, z)
    check_hvp(np.prod, z)
    # cotangent of a holomorphic function: g * f'(z), no conjugate
    _, f_vjp = cr.vjp(np.prod, z)
    np.testing.assert_allclose(f_vjp(np.complex128(1.0))[0],
                               [0.0, (1 + 1j) * (2 - 0.5j), 0.0])


@pytest.mark.parametrize("x", [
    np.array([1.5, 0.0, 2.0, -0.5]),
    np.array([0.0, 2.0, 0.0, 3.0]),
    np.array([[1.0, 2.0, 0.0], [0.0, 0.5, 3.0]]),
])
def test_cumprod_with_zeros(x):
    check_rrule(np.cumprod, x)
    check_hvp(np.cumprod, x)
    check_rrule(np.cumprod, x, axis=-1)
    check_hvp(np.cumprod, x, axis=-1)
    # closed form: d cumprod(x)_i / d x_k = prod_{j <= i, j != k} x_j
    flat = x.ravel()
    n = flat.size
    jac = np.zeros((n, n))
    for i in range(n):
        for k in range(i + 1):
            jac[i, k] = np.prod(np.delete(flat[:i + 1], k))
    _, f_vjp = cr.vjp(np.cumprod, x)
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        np.testing.assert_allclose(np.ravel(f_vjp(e)[0]), jac[i], atol=1e-15)


# -- max / min ties ------------------------------------------------------------------
@pytest.mark.parametrize("fn", [np.prod, np.cumprod])
def test_staged_prod_takes_the_eager_branch_guarded(fn):
    # a staged plan branches on the data as eager sweeps do (zeros or none),
    # with a guard: the same values bit for bit, and no n x n product of the
    # others (504 MB a replay at n = 3000 when staged values took it always)
    import tracemalloc

    x = np.random.default_rng(0).uniform(0.99, 1.01, 3000)
    vg = cr.value_and_grad(lambda x: np.sum(fn(x)))
    staged = cr.jit(vg)
    for _ in range(3):
        got = staged(x)
    staged.plan(x).prepare()  # (every stage of the plan's passes run)
    tracemalloc.start()
    got = staged(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * x.nbytes, peak
    want = vg(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    z = x.copy()
    z[[5, 7]] = 0.0  # another branch: the guard records another variant
    got, want = staged(z), vg(z)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert staged.cache_info()["plans"] == 2


def test_max_ties_split_equally():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_array_equal(cr.grad(np.max)(x), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(cr.grad(np.amax)(x), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(cr.grad(lambda x: x.max())(x), [0, 0.5, 0.5, 0])
    # pushforward: the mean of the tied tangents (adjoint of the pullback)
    _, t = cr.jvp(np.max, (x,), (np.array([10.0, 1.0, 2.0, 5.0]),))
    assert t == 1.5
    check_rrule(np.max, x)


def test_min_ties_along_an_axis():
    x = np.array([[1.0, 1.0, 1.0], [2.0, 0.5, 4.0], [-1.0, 3.0, -1.0]])
    g = cr.grad(lambda x: np.sum(np.min(x, axis=1) * np.array([1.0, 2.0, 3.0])))(x)
    np.testing.assert_allclose(g, [[1 / 3, 1 / 3, 1 / 3], [0, 2, 0], [1.5, 0, 1.5]])
    g = cr.grad(lambda x: np.sum(np.amin(x, axis=0, keepdims=True)))(x)
    np.testing.assert_allclose(g, [[0, 0, 0], [0, 1, 0], [1, 0, 1]])
    # second derivative of a selection is zero
    np.testing.assert_array_equal(cr.hvp(lambda x: np.sum(np.min(x, axis=1) ** 1), x,
                                         np.ones_like(x)), np.zeros_like(x))


def test_max_second_order_through_square():
    x = np.array([[1.0, 3.0], [2.0, -1.0]])
    # f = max(x)**2 -> grad 2*max at the argmax, Hessian 2 there
    f = lambda x: np.max(x) ** 2  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(x), [[0, 6], [0, 0]])
    np.testing.assert_allclose(cr.hvp(f, x, np.ones_like(x)), [[0, 2], [0, 0]])


def test_ptp_ties_and_constant_slice():
    x = np.array([[1.0, 4.0, 4.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    g = cr.grad(lambda x: np.sum(np.ptp(x, axis=1)))(x)
    np.testing.assert_allclose(g, [[0, 0.5, 0.5, -1], [0, 0, 0, 0]])
    # whole array: max 4 tied twice, min 0 once
    np.testing.assert_allclose(cr.grad(lambda x: x.ptp())(x),
                               [[0, 0.5, 0.5, -1], [0, 0, 0, 0]])


def test_nanmax_ignores_nan():
    x = np.array([np.nan, 2.0, 1.0])
    np.testing.assert_array_equal(cr.grad(np.nanmax)(x), [0, 1, 0])
    np.testing.assert_array_equal(cr.grad(np.nanmin)(x), [0, 0, 1])


def test_amax_is_registered_whatever_its_identity():
    from chainrules.registry import is_registered

    for f in (np.max, np.amax, np.min, np.amin):
        assert is_registered(f)


# -- var, std, average, nan reductions ---------------------------------------------------
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_closed_form(ddof):
    x = np.array([[1.0, 2.5, -0.5], [0.3, 0.1, 2.0]])
    n = 3
    xc = x - x.mean(axis=1, keepdims=True)
    g = cr.grad(lambda x: np.sum(np.var(x, axis=1, ddof=ddof)))(x)
    np.testing.assert_allclose(g, 2 * xc / (n - ddof), rtol=1e-13)
    s = np.std(x, axis=1, ddof=ddof, keepdims=True)
    g = cr.grad(lambda x: np.sum(np.std(x, axis=1, ddof=ddof)))(x)
    np.testing.assert_allclose(g, xc / ((n - ddof) * s), rtol=1e-13)
    g = cr.grad(lambda x: np.sum(x.std(axis=-1, ddof=ddof)))(x)
    np.testing.assert_allclose(g, xc / ((n - ddof) * s), rtol=1e-13)


def test_std_of_constant_slice_is_zero_not_nan():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    g = cr.grad(lambda x: np.sum(np.std(x, axis=1)))(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(g[0], 0.0)
    hv = cr.hvp(lambda x: np.sum(np.std(x, axis=1)), x, np.ones_like(x))
    assert np.all(np.isfinite(hv))


def test_var_complex_is_real_with_conjugate_cotangent():
    z = np.array([1 + 2j, -0.5 + 0.1j, 0.3 - 1j])
    g = cr.grad(np.var)(z)
    np.testing.assert_allclose(g, 2 * np.conj(z - z.mean()) / 3)
    check_rrule(np.var, z)
    check_hvp(np.std, z)


def test_average_weights_closed_form_and_returned():
    a = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    w = np.array([1.0, 2.0, 0.5])
    ga, gw = cr.grad(lambda a, w: np.sum(np.average(a, axis=1, weights=w)),
                     argnums=(0, 1))(a, w)
    np.testing.assert_allclose(ga, np.broadcast_to(w / w.sum(), a.shape))
    avg = (a * w).sum(1, keepdims=True) / w.sum()
    np.testing.assert_allclose(gw, np.sum((a - avg) / w.sum(), axis=0))

    def f(a, w):
        avg, scl = np.average(a, axis=1, weights=w, returned=True)
        return np.sum(avg * np.array([1.0, 2.0])) + np.sum(scl ** 2)

    ga, gw = cr.grad(f, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(ga, np.array([[1.0], [2.0]]) * w / w.sum())
    expect_w = (1 * (a[0] - avg[0]) + 2 * (a[1] - avg[1])) / w.sum() + 2 * 2 * w.sum()
    np.testing.assert_allclose(gw, expect_w)
    check_rrule(lambda a, w: np.average(a, axis=1, weights=w, returned=True), a, w)
    check_hvp(lambda a, w: np.average(a, axis=1, weights=w, returned=True), a, w)


def test_average_constant_weights_and_no_weights():
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    w = np.array([[1.0, 3.0], [2.0, 2.0]])
    g = cr.grad(lambda a: np.average(a, weights=w))(a)
    np.testing.assert_allclose(g, w / w.sum())
    g = cr.grad(lambda a: np.average(a))(a)
    np.testing.assert_allclose(g, np.full(a.shape, 0.25))


def test_nansum_nanmean_nan_entries_get_zero_cotangent():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 2.0]])
    g = cr.grad(np.nansum)(x)
    np.testing.assert_array_equal(g, [[1, 0, 1], [0, 1, 1]])
    g = cr.grad(lambda x: np.sum(np.nanmean(x, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0.5, 0, 0.5], [0, 0.5, 0.5]])
    _, t = cr.jvp(np.nansum, (x,), (np.ones_like(x),))
    assert t == 4.0


# -- linear reductions: keywords, dtypes, methods ---------------------------------------
def test_sum_mean_axes_keepdims_and_methods():
    x = np.arange(24.0).reshape(2, 3, 4) / 10
    for kw in ({"axis": (0, -1)}, {"axis": -2, "keepdims": True}, {"axis": None}):
        check_rrule(np.sum, x, **kw)
        check_rrule(np.mean, x, **kw)
    g = cr.grad(lambda x: np.sum(x.mean(axis=(0, 2)) * np.array([1.0, 2.0, 3.0])))(x)
    np.testing.assert_allclose(g, np.broadcast_to(np.array([1.0, 2.0, 3.0])[:, None] / 8,
                                                  x.shape))
    # ufunc reduce reaches the same rules
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.add.reduce(x)))(x), np.ones_like(x))


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum, np.fmax,
                                   np.fmin])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_ufunc_reduce_keeps_its_dtype(ufunc, axis):
    """``ufunc.reduce(x, dtype=np.float64)`` of float32 values accumulates
    in float64 under tracing as NumPy does: the same value and dtype, and a
    float32 gradient equal to that of the float64 values."""
    # (values near 1: a product of 4096 of them stays finite)
    x = (np.arange(1, 4097) * 0.37 % 0.2 + 0.9).astype(np.float32).reshape(64, 64)
    f = lambda x: np.sum(ufunc.reduce(x, axis=axis, dtype=np.float64) ** 2)  # noqa: E731
    v, g = cr.value_and_grad(f)(x)
    expect = f(x)
    assert np.asarray(v).dtype == np.float64 and v == expect and np.isfinite(v)
    assert g.dtype == np.float32 and np.isfinite(g).all()
    np.testing.assert_allclose(g, cr.grad(f)(x.astype(np.float64)), rtol=1e-6)


def test_float32_stays_float32():
    x = np.array([[1.0, 2.0, 3.0], [0.5, 0.2, 0.1]], dtype=np.float32)
    for f in (np.sum, np.mean, np.prod, np.max, np.var, np.std, np.nansum,
              lambda x: np.sum(np.cumsum(x, axis=1)), lambda x: np.sum(np.cumprod(x)),
              lambda x: np.sum(np.diff(x)), np.trace, np.ptp):
        g = cr.grad(f)(x)
        assert g.dtype == np.float32, f
        assert np.asarray(f(x)).dtype == np.float32


def test_sum_dtype_upcast():
    x = np.array([1.0, 2.0], dtype=np.float32)
    y, t = cr.jvp(lambda x: np.sum(x, dtype=np.float64), (x,), (np.ones_like(x),))
    assert y.dtype == np.float64 and t == 2.0
    g = cr.grad(lambda x: np.sum(x, dtype=np.float64))(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [1, 1])


def test_unsupported_keywords_raise_clearly():
    x = np.array([1.0, 2.0, 3.0])
    mask = np.array([True, False, True])
    for f in (lambda x: np.sum(x, where=mask), lambda x: np.mean(x, where=mask),
              lambda x: np.prod(x, where=mask), lambda x: np.var(x, mean=np.array(2.0))):
        with pytest.raises(cr.MissingRuleError, match="np.where|initial|mean|where"):
            cr.grad(f)(x)
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda x: np.sum(x, out=np.zeros(())))(x)
    with pytest.raises(cr.MissingRuleError, match="must not be traced"):
        cr.grad(lambda x: np.sum(np.diff(x, prepend=x[:1])))(x)


def test_max_min_take_initial_and_where():
    x = np.array([1.0, 3.0, 2.0])
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(cr.grad(lambda x: np.max(x, where=mask, initial=0))(x),
                                  [0, 0, 1])
    np.testing.assert_array_equal(cr.grad(lambda x: np.max(x, initial=5.0))(x), [0, 0, 0])
    np.testing.assert_array_equal(cr.grad(lambda x: np.min(x, initial=1.5))(x), [1, 0, 0])


# -- cumsum, diff, trace ---------------------------------------------------------------
def test_cumsum_closed_form():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    g = cr.grad(lambda x: np.sum(np.cumsum(x, axis=1) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, np.broadcast_to([111.0, 110.0, 100.0], x.shape))
    g = cr.grad(lambda x: np.sum(np.cumsum(x) * np.arange(1.0, 7.0)))(x)
    np.testing.assert_array_equal(g.ravel(), np.cumsum(np.arange(6.0, 0.0, -1))[::-1])


def test_diff_prepend_append():
    x = np.array([1.0, 4.0, 9.0, 16.0])
    for kw in ({"n": 2}, {"prepend": 0.0}, {"append": np.array([1.0, 2.0])},
               {"n": 2, "prepend": [1.0, 2.0], "append": 3.0}):
        check_rrule(np.diff, x, **kw)
    # d/dx sum(w * diff(x, prepend=c)) with diff_i = x_i - x_{i-1}
    w = np.array([1.0, 2.0, 3.0, 4.0])
    g = cr.grad(lambda x: np.sum(np.diff(x, prepend=7.0) * w))(x)
    np.testing.assert_array_equal(g, [-1.0, -1.0, -1.0, 4.0])
    y = np.arange(12.0).reshape(3, 4)
    check_rrule(np.diff, y, axis=0, n=1, append=np.zeros((1, 4)))


@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "size 1"])
def test_diff_of_order_0_is_the_input(shape):
    # NumPy returns the input for n=0 before it reads the axis (0-d included)
    x = np.full(shape, 0.7)
    for kw in ({"n": 0}, {"n": 0, "axis": 0}, {"n": 0, "axis": 3, "prepend": 1.0}):
        np.testing.assert_array_equal(cr.jacobian(lambda x: np.diff(x, **kw))(x),
                                      np.reshape(1.0, shape + shape))
        h = cr.hessian(lambda x: np.sum(np.diff(x, **kw) ** 3))(x)
        np.testing.assert_allclose(h, np.reshape(6 * 0.7, shape + shape), rtol=1e-15)
        assert check_hvp(np.diff, x, **kw)


def test_trace_offset_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    g = cr.grad(lambda x: np.sum(np.trace(x, offset=1, axis1=2, axis2=0)))(x)
    # diagonal entries a[axis1 = i, axis2 = i + offset]: only x[1, :, 0] here
    expected = np.zeros_like(x)
    expected[1, :, 0] = 1.0
    np.testing.assert_array_equal(g, expected)
    g = cr.grad(lambda x: np.sum(np.trace(x, offset=-1, axis1=-1, axis2=1)))(x)
    expected = np.zeros_like(x)
    for i in range(1, 4):
        if i - 1 < 3:
            expected[:, i - 1, i] = 1.0
    np.testing.assert_array_equal(g, expected)
    g = cr.grad(lambda x: np.sum(x.trace(-1, 1, 2)))(x)
    expected = np.zeros_like(x)
    for j in range(2):
        expected[:, j + 1, j] = 1.0
    np.testing.assert_array_equal(g, expected)


# -- second order by differentiating the pullbacks (jvp of grad) ------------------------
X = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -0.75, 2.0], [0.5, 0.0, 1.0, -1.0]])
W3 = np.array([0.3, -1.2, 0.7])
W4 = np.array([1.0, 0.5, -0.5, 2.0])
NESTED = {
    "sum": lambda x: np.sum(np.sum(x, axis=0) ** 2),
    "mean": lambda x: np.sum(np.mean(x, axis=1, keepdims=True) ** 3),
    "prod": lambda x: np.sum(np.prod(x, axis=1) * W3),
    "prod-all": lambda x: np.prod(x[:2]),
    "max": lambda x: np.sum(np.max(x, axis=1) ** 2),
    "var": lambda x: np.sum(np.var(x, axis=1, ddof=1) * W3),
    "std": lambda x: np.sum(np.std(x, axis=0) * W4),
    "average": lambda x: np.sum(np.average(x[:2], axis=1, weights=x[2]) ** 2),
    "cumsum": lambda x: np.sum(np.cumsum(x, axis=1) ** 2),
    "cumprod": lambda x: np.sum(np.cumprod(x, axis=1) * X),
    "cumprod-nozero": lambda x: np.sum(np.cumprod(x[:2]) ** 2),
    "diff": lambda x: np.sum(np.diff(x, n=2, axis=1, prepend=1.0) ** 2),
    "trace": lambda x: np.trace(x, offset=1) ** 2,
    "nansum": lambda x: np.nansum(x) ** 2,
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_second_order_matches_fast_hvp(name):
    f = NESTED[name]
    h_fast = hessian(f, X)
    h_nested = nested_hessian(f, X)
    np.testing.assert_allclose(h_nested, h_fast, rtol=1e-10, atol=1e-12)
    # and both against finite differences of the gradient
    g = cr.grad(f)
    eps = 1e-6
    fd = np.stack([np.ravel((g(X + eps * e.reshape(X.shape)) - g(X - eps * e.reshape(X.shape)))
                            / (2 * eps)) for e in np.eye(X.size)], axis=1)
    np.testing.assert_allclose(h_fast, fd, rtol=1e-5, atol=1e-6)
