"""Targeted tests of rules/arithmetic.py: the documented behaviour at
non-differentiable points, powers, operators, float32, second order."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.registry import lookup
from chainrules.rule import NodeId
from chainrules.rules.arithmetic import DomainError
from chainrules.tangents import Structural


def grad_sum(f, *args, argnums=0):
    return cr.grad(lambda *a: np.sum(f(*a)), argnums=argnums)(*args)


def assert_exact(a, b):
    a = np.asarray(a)
    assert not np.any(np.isnan(a)), a
    np.testing.assert_array_equal(a, b)


# -- policy at non-differentiable points -------------------------------------------
def test_abs_at_zero_is_zero():
    x = np.array([0.0, -0.0, 1.5, -2.0])
    assert_exact(grad_sum(np.abs, x), [0, 0, 1, -1])
    assert_exact(grad_sum(abs, x), [0, 0, 1, -1])
    assert_exact(grad_sum(np.fabs, x), [0, 0, 1, -1])


def test_copysign_kink_and_sign_of_second_argument():
    x = np.array([0.0, 1.5, -2.0, 3.0])
    y = np.array([-1.0, -1.0, 2.0, 0.5])
    gx, gy = grad_sum(np.copysign, x, y, argnums=(0, 1))
    assert_exact(gx, [0, -1, -1, 1])
    assert_exact(gy, [0, 0, 0, 0])


@pytest.mark.parametrize("op,a_wins", [(np.maximum, [1, 0.5, 0]), (np.minimum, [0, 0.5, 1]),
                                       (np.fmax, [1, 0.5, 0]), (np.fmin, [0, 0.5, 1])])
def test_ties_split_equally(op, a_wins):
    x = np.array([2.0, 1.0, 0.0])
    y = np.array([1.0, 1.0, 1.0])
    gx, gy = grad_sum(op, x, y, argnums=(0, 1))
    assert_exact(gx, a_wins)
    assert_exact(gy, 1 - np.array(a_wins))


def test_relu_at_zero_is_half_and_float32_stays():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    g = grad_sum(lambda x: np.maximum(x, 0), x)
    assert g.dtype == np.float32
    assert_exact(g, [0, 0.5, 1])


def test_fmax_fmin_give_everything_to_the_non_nan_argument():
    x = np.array([np.nan, 1.0, 2.0])
    y = np.array([1.0, np.nan, 3.0])
    gx, gy = grad_sum(np.fmax, x, y, argnums=(0, 1))
    assert_exact(gx, [0, 1, 0])
    assert_exact(gy, [1, 0, 1])
    gx, gy = grad_sum(np.fmin, x, y, argnums=(0, 1))
    assert_exact(gx, [0, 1, 1])
    assert_exact(gy, [1, 0, 0])


def test_clip_inclusive_interval_and_traced_bounds():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    assert_exact(grad_sum(lambda x: np.clip(x, 0.0, 1.0), x), [0, 1, 1, 1, 0])
    gx, glo, ghi = grad_sum(np.clip, x, np.zeros(5), np.ones(5), argnums=(0, 1, 2))
    assert_exact(gx, [0, 1, 1, 1, 0])
    assert_exact(glo, [1, 0, 0, 0, 0])
    assert_exact(ghi, [0, 0, 0, 0, 1])
    # scalar traced bound: cotangents summed over the broadcast
    glo, ghi = cr.grad(lambda lo, hi: np.sum(np.clip(x, lo, hi)), argnums=(0, 1))(0.0, 1.0)
    assert float(glo) == 1.0 and float(ghi) == 1.0


def test_clip_one_sided_keywords_and_method():
    x = np.array([-1.0, 0.0, 2.0])
    assert_exact(grad_sum(lambda x: np.clip(x, None, 1.0), x), [1, 1, 0])
    assert_exact(grad_sum(lambda x: np.clip(x, min=0.0), x), [0, 1, 1])
    assert_exact(grad_sum(lambda x: x.clip(max=0.0), x), [1, 1, 0])


def test_clip_with_lower_above_upper_follows_numpy():
    # NumPy returns hi everywhere when lo > hi, and so does the derivative
    x = np.array([-1.0, 0.5, 3.0])
    gx, glo, ghi = grad_sum(np.clip, x, np.full(3, 2.0), np.full(3, 1.0), argnums=(0, 1, 2))
    assert_exact(gx, [0, 0, 0])
    assert_exact(glo, [0, 0, 0])
    assert_exact(ghi, [1, 1, 1])


def test_where_selects_without_nan_from_the_other_branch():
    c = np.array([True, False, True])
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([np.inf, -np.inf, np.nan])
    gx, gy = grad_sum(lambda x, y: np.where(c, x, y) * 2.0, x, y, argnums=(0, 1))
    assert_exact(gx, [2, 0, 2])
    assert_exact(gy, [0, 2, 0])
    # broadcasting: a scalar traced y gets the sum over unselected entries
    assert float(cr.grad(lambda y: np.sum(np.where(c, x, y)))(1.0)) == 1.0
    # the one-argument form is nonzero: no derivative, no trace
    assert cr.grad(lambda x: np.sum(x) + 0 * len(np.where(x > 1.5)[0]))(x).tolist() == [1, 1, 1]


def test_mod_remainder_fmod_second_argument():
    x = np.array([3.5, -3.5, 3.5, -3.5])
    y = np.array([2.0, 2.0, -2.0, -2.0])
    gx, gy = grad_sum(np.remainder, x, y, argnums=(0, 1))
    assert_exact(gx, [1, 1, 1, 1])
    assert_exact(gy, -np.floor(x / y))  # [-1, 2, 2, -1]
    gx, gy = grad_sum(np.fmod, x, y, argnums=(0, 1))
    assert_exact(gx, [1, 1, 1, 1])
    assert_exact(gy, -np.trunc(x / y))  # [-1, 1, 1, -1]
    assert_exact(cr.grad(lambda x: np.sum(x % 1.5))(x), [1, 1, 1, 1])
    assert_exact(cr.grad(lambda y: np.sum(7.0 % y))(y), -np.floor(7.0 / y))


def test_hypot_and_arctan2_at_origin_are_zero_to_second_order():
    z = np.zeros(2)
    for op in (np.hypot, np.arctan2):
        gx, gy = grad_sum(op, z, z, argnums=(0, 1))
        assert_exact(gx, [0, 0])
        assert_exact(gy, [0, 0])
        hv = cr.hvp(lambda p: np.sum(op(p[0], p[1])), (z, z), (np.ones(2), np.ones(2)))
        assert_exact(hv[0], [0, 0])
        assert_exact(hv[1], [0, 0])


def test_sqrt_and_cbrt_at_zero_are_inf_not_nan():
    with np.errstate(divide="ignore"):
        assert grad_sum(np.sqrt, np.array([0.0]))[0] == np.inf
        assert grad_sum(np.cbrt, np.array([0.0]))[0] == np.inf
        assert grad_sum(lambda x: x ** 0.5, np.array([0.0]))[0] == np.inf


# -- powers --------------------------------------------------------------------------
def test_x_to_the_zero_has_zero_derivative_everywhere():
    x = np.array([0.0, 1.0, -2.0, 3.5])
    assert_exact(grad_sum(lambda x: x ** 0, x), [0, 0, 0, 0])
    assert_exact(grad_sum(lambda x: np.power(x, np.zeros(4)), x), [0, 0, 0, 0])
    assert_exact(grad_sum(lambda x: np.power(x, 0.0), x), [0, 0, 0, 0])
    assert_exact(cr.hvp(lambda x: np.sum(x ** 0), x, np.ones(4)), [0, 0, 0, 0])
    assert float(cr.grad(cr.grad(lambda x: x ** 0))(0.0)) == 0.0


def test_x_to_the_one_and_two_at_zero():
    x = np.array([0.0, -1.5])
    assert_exact(grad_sum(lambda x: x ** 1, x), [1, 1])
    assert_exact(grad_sum(lambda x: np.power(x, np.ones(2)), x), [1, 1])
    assert_exact(cr.hvp(lambda x: np.sum(np.power(x, np.ones(2))), x, np.ones(2)), [0, 0])
    assert_exact(grad_sum(lambda x: x ** 2, x), [0, -3])
    assert float(cr.grad(cr.grad(lambda x: x ** 1))(0.0)) == 0.0
    assert float(cr.grad(cr.grad(lambda x: x ** 2))(0.0)) == 2.0


def test_negative_base_integer_exponent():
    x = np.array([-2.0, -0.5, 1.5])
    np.testing.assert_allclose(grad_sum(lambda x: x ** 3, x), 3 * x ** 2, rtol=1e-15)
    np.testing.assert_allclose(grad_sum(lambda x: x ** -2, x), -2 * x ** -3, rtol=1e-15)
    k = np.array([3, 2, -1])
    np.testing.assert_allclose(grad_sum(lambda x: np.power(x, k), x), k * x ** (k - 1.0),
                               rtol=1e-15)
    # a constant float exponent array, integer valued: no NaN from the exponent
    kf = k.astype(float)
    np.testing.assert_allclose(grad_sum(lambda x: np.power(x, kf), x), kf * x ** (kf - 1),
                               rtol=1e-15)
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(np.power(x, kf)), x, np.ones(3)),
                               kf * (kf - 1) * x ** (kf - 2), rtol=1e-14)
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(x ** 3), x, np.ones(3)), 6 * x,
                               rtol=1e-15)


def test_traced_exponent_with_negative_base_raises():
    with pytest.raises(DomainError, match="stop_gradient"):
        cr.grad(lambda y: np.sum(np.power(np.array([-2.0, 1.0]), y)))(np.array([2.0, 2.0]))
    with pytest.raises(DomainError):
        cr.grad(lambda x, y: np.sum(x ** y), argnums=(0, 1))(np.array([-2.0]), np.array([2.0]))
    assert issubclass(DomainError, cr.AutodiffError)
    # the exponent held constant: fine
    g = cr.grad(lambda x: np.sum(x ** np.array([2.0])))(np.array([-2.0]))
    assert_exact(g, [-4.0])


def test_power_in_the_exponent():
    x = np.array([0.5, 2.0, 0.0])
    y = np.array([1.5, -0.5, 2.0])
    gx, gy = grad_sum(np.power, x, y, argnums=(0, 1))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(gx, y * x ** (y - 1), rtol=1e-15)
    # d/dy x**y = x**y log x, and 0 at x == 0 (y > 0)
    np.testing.assert_allclose(gy, [0.5 ** 1.5 * np.log(0.5), 2 ** -0.5 * np.log(2.0), 0.0],
                               rtol=1e-15)
    g = cr.grad(lambda y: np.sum(2.5 ** y))(y)
    np.testing.assert_allclose(g, 2.5 ** y * np.log(2.5), rtol=1e-15)


def test_power_hessian_in_both_arguments():
    x, y = np.array([1.7]), np.array([0.6])

    def f(p):
        return np.sum(p[0] ** p[1])

    a, b = x[0], y[0]
    fxx = b * (b - 1) * a ** (b - 2)
    fxy = a ** (b - 1) * (1 + b * np.log(a))
    fyy = a ** b * np.log(a) ** 2
    hx, hy = cr.hvp(f, (x, y), (np.array([1.0]), np.array([0.0])))
    np.testing.assert_allclose([hx[0], hy[0]], [fxx, fxy], rtol=1e-13)
    hx, hy = cr.hvp(f, (x, y), (np.array([0.0]), np.array([1.0])))
    np.testing.assert_allclose([hx[0], hy[0]], [fxy, fyy], rtol=1e-13)
    # nested reverse over reverse agrees
    gxx = cr.grad(lambda a: cr.grad(lambda a: a ** b)(a))(a)
    gxy = cr.grad(lambda b: cr.grad(lambda a: a ** b)(a))(b)
    np.testing.assert_allclose([gxx, gxy], [fxx, fxy], rtol=1e-13)


def test_float_power_upcasts_like_numpy_and_grad_stays_float32():
    x = np.array([0.5, 2.0], np.float32)
    out, (g,) = cr.value_and_grad(lambda x: np.sum(np.float_power(x, 3)), argnums=(0,))(x)
    assert np.asarray(out).dtype == np.float64
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x.astype(float) ** 2, rtol=1e-6)


# -- operators -------------------------------------------------------------------------
@pytest.mark.parametrize("f,df", [
    (lambda x: x + 1, lambda x: np.ones_like(x)),
    (lambda x: 2 - x, lambda x: -np.ones_like(x)),
    (lambda x: 2.5 * x, lambda x: np.full_like(x, 2.5)),
    (lambda x: x / 4, lambda x: np.full_like(x, 0.25)),
    (lambda x: x ** 2, lambda x: 2 * x),
    (lambda x: 1 / x, lambda x: -1 / x ** 2),
    (lambda x: 2.0 ** x, lambda x: 2.0 ** x * np.log(2.0)),
    (lambda x: -x, lambda x: -np.ones_like(x)),
    (lambda x: +x, lambda x: np.ones_like(x)),
    (lambda x: abs(x), lambda x: np.sign(x)),
    (lambda x: x % 0.75, lambda x: np.ones_like(x)),
    (lambda x: x * x * x - x / (1 + x * x),
     lambda x: 3 * x ** 2 - (1 - x ** 2) / (1 + x ** 2) ** 2),
])
def test_operators(f, df):
    x = np.array([-1.3, 0.4, 2.2])
    np.testing.assert_allclose(grad_sum(f, x), df(x), rtol=1e-14)


def test_broadcasting_cotangents_are_summed():
    x = np.arange(6.0).reshape(2, 3) + 1.0
    b = np.array([1.0, 2.0, 3.0])
    gx, gb = grad_sum(lambda x, b: x * b + b / x, x, b, argnums=(0, 1))
    np.testing.assert_allclose(gx, b - b / x ** 2, rtol=1e-15)
    np.testing.assert_allclose(gb, np.sum(x + 1 / x, axis=0), rtol=1e-15)
    g0 = cr.grad(lambda s: np.sum(np.maximum(x, s)))(np.array(3.0))
    assert np.shape(g0) == () and float(g0) == 2.5  # ties at x == 3 split


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4), (0, 2)])
def test_cotangent_of_a_scalar_factor_is_the_sum_of_products(dtype, shape):
    """c * y with a 0-d c: its cotangent sum(g * y), which double precision
    computes in one pass (either operand order, y traced or constant, y
    not contiguous); the value is NumPy's sum of the products."""
    rng = np.random.default_rng(len(shape))
    y = rng.standard_normal(shape + (2,))[..., 0].astype(dtype)
    w = rng.standard_normal(shape).astype(dtype)
    if dtype == np.complex128:
        y = y + 1j * rng.standard_normal(shape)
    c = np.array(1.5, dtype)
    expected = np.sum(w * y)
    # the cotangent of c (a holomorphic product: sum(g * y), no conjugate)
    for f in (lambda c: c * y, lambda c: y * c):
        _, pb = cr.vjp(f, c)
        (gc,) = pb(w)
        assert np.shape(gc) == () and np.asarray(gc).dtype == dtype
        np.testing.assert_allclose(gc, expected, rtol=1e-6 if dtype == np.float32 else 1e-13)
    gc, gy = cr.grad(lambda c, y: np.sum(c * y), argnums=(0, 1))(c.real, y.real)
    np.testing.assert_allclose(gc, np.sum(y.real), rtol=1e-6 if dtype == np.float32 else 1e-13)
    np.testing.assert_array_equal(gy, np.full(shape, c.real))


# -- float32 stays float32, inside the rules ------------------------------------------
def _raw_rule(op, *args):
    """Call the registered maker directly: the rule's own cotangents, before the
    engine projects anything."""
    types = tuple(type(a) for a in args)
    ids = [NodeId(i) if isinstance(a, np.ndarray) else None for i, a in enumerate(args)]
    return lookup(op, types)(ids, *args)


F32_CASES = [
    (np.add, "xy"), (np.subtract, "xy"), (np.multiply, "xy"), (np.true_divide, "xy"),
    (np.negative, "x"), (np.positive, "x"), (np.power, "xy"), (np.power, "x2"),
    (np.power, "x3"), (np.power, "xh"), (np.reciprocal, "x"), (np.square, "x"),
    (np.sqrt, "x"), (np.cbrt, "x"), (np.absolute, "x"), (np.fabs, "x"),
    (np.maximum, "xy"), (np.minimum, "xy"), (np.fmax, "xy"), (np.fmin, "xy"),
    (np.clip, "xyz"), (np.remainder, "xy"), (np.fmod, "xy"), (np.copysign, "xy"),
    (np.hypot, "xy"), (np.arctan2, "xy"), (np.logaddexp, "xy"), (np.logaddexp2, "xy"),
    (np.maximum, "x0"),
]


@pytest.mark.parametrize("op,kind", F32_CASES, ids=[f"{o.__name__}-{k}" for o, k in F32_CASES])
def test_float32_rules_do_not_upcast(op, kind):
    x = np.array([0.7, 1.3, 1.9], np.float32)
    y = np.array([1.1, 0.4, 1.6], np.float32)
    args = {"x": (x,), "xy": (x, y), "x2": (x, 2), "x3": (x, 3), "xh": (x, 0.5),
            "x0": (x, 0.0), "xyz": (x, y - 0.6, y)}[kind]
    out, rule = _raw_rule(op, *args)
    assert out.dtype == np.float32
    g = np.ones(out.shape, np.float32)
    for nid, c in rule.pullback(g):
        assert c.dtype == np.float32, (nid, c.dtype)
    t = tuple(np.full(3, 0.5, np.float32) for _ in rule.inputs())
    assert rule.pushforward(t).dtype == np.float32
    for nid, c, cd in rule.pullback_with_tangents(g, g, t):
        assert c.dtype == np.float32
        assert isinstance(cd, Structural) or cd.dtype == np.float32


# -- second order --------------------------------------------------------------------
def test_hvp_of_a_mixed_function_against_closed_form():
    x = np.array([0.4, 1.2, 2.0])
    v = np.array([1.0, -2.0, 0.5])

    def f(x):
        return np.sum(x ** 2.5 + np.maximum(x, 0.3) * x + np.hypot(x, 1.0) + 1 / x
                      + np.logaddexp(x, 0.5) + np.arctan2(x, 2.0))

    s = np.exp(x) / (np.exp(x) + np.exp(0.5))
    d2 = (2.5 * 1.5 * x ** 0.5 + 2.0 + 1 / (x ** 2 + 1) ** 1.5 + 2 / x ** 3
          + s * (1 - s) - 2 * x * 2.0 / (x ** 2 + 4) ** 2)
    np.testing.assert_allclose(cr.hvp(f, x, v), d2 * v, rtol=1e-13)
    g2 = cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(x)
    np.testing.assert_allclose(g2, d2 * v, rtol=1e-13)


def test_second_derivatives_of_binary_ops():
    a, b = 1.3, -0.7
    cases = {
        np.true_divide: (0.0, -1 / b ** 2, 2 * a / b ** 3),
        np.hypot: (b ** 2 / np.hypot(a, b) ** 3, -a * b / np.hypot(a, b) ** 3,
                   a ** 2 / np.hypot(a, b) ** 3),
        np.arctan2: (-2 * a * b / (a * a + b * b) ** 2, (a * a - b * b) / (a * a + b * b) ** 2,
                     2 * a * b / (a * a + b * b) ** 2),
        np.multiply: (0.0, 1.0, 0.0),
        np.logaddexp2: tuple(np.log(2) * 2 ** (a + b) / (2 ** a + 2 ** b) ** 2 * s
                             for s in (1, -1, 1)),
    }
    for op, (fxx, fxy, fyy) in cases.items():
        def f(p):
            return op(p[0], p[1])
        hx = cr.hvp(f, (np.float64(a), np.float64(b)), (np.float64(1.0), np.float64(0.0)))
        hy = cr.hvp(f, (np.float64(a), np.float64(b)), (np.float64(0.0), np.float64(1.0)))
        np.testing.assert_allclose([hx[0], hx[1], hy[1]], [fxx, fxy, fyy], rtol=1e-13,
                                   atol=1e-15, err_msg=op.__name__)


@pytest.mark.parametrize("op", [np.add, np.subtract, np.multiply, np.true_divide, np.power,
                                np.maximum, np.where])
def test_mixed_dtypes_give_cotangents_of_each_primal_kind(op):
    x32 = np.array([0.5, 1.5], np.float32)
    c64 = np.array([1.25, 0.75])
    z = np.array([1.0 + 0.5j, -0.25 + 2.0j])
    cases = [((x32, c64), np.float32), ((np.array([0.5, 1.5]), z), np.float64)]
    for (a, b), want in cases:
        if op is np.where:
            args, ids = (np.array([True, False]), a, b), [None, NodeId(0), None]
        else:
            args, ids = (a, b), [NodeId(0), None]
        out, rule = lookup(op, tuple(type(v) for v in args))(ids, *args)
        (nid, c), = rule.pullback(np.ones(out.shape, out.dtype))
        assert c.dtype == want, (op, c.dtype)
        t = rule.pushforward((np.ones(2, a.dtype),))
        assert t.dtype == out.dtype
    # and through the API: d/dx Re(sum(x * z)) for real x is Re(z)
    g = cr.grad(lambda x: np.sum(np.real(x * z)))(np.array([0.5, 1.5]))
    np.testing.assert_array_equal(g, z.real)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("wrt", [0, 1])
def test_the_cotangent_of_a_0d_factor_keeps_the_sign_of_zero(wrt, dtype):
    # the cotangent of a 0-d factor is the product itself (a sum of one
    # product from +0.0 would give +0.0 where the product is -0.0), eagerly
    # and staged alike
    x = np.array(0.3, dtype)
    w = np.array(-0.0, dtype)
    args = (x, w) if wrt == 0 else (w, x)

    def f(a, b):
        return np.sin(a) * b if wrt == 0 else a * np.sin(b)

    g = cr.grad(f, argnums=wrt)
    staged = cr.jit(g)
    for _ in range(4):
        for got in (g(*args), staged(*args)):
            assert type(got) is np.ndarray and got.shape == () and got.dtype == dtype
            assert got == 0 and np.signbit(got), repr(got)
