"""The public API: grad, value_and_grad, vjp, jvp, hvp, grad_and_hvp."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr


def test_grad_of_grad_of_sin():
    x = np.array([0.1, 1.0, 2.5])
    g2 = cr.grad(lambda x: np.sum(cr.grad(lambda y: np.sum(np.sin(y)))(x)))(x)
    np.testing.assert_allclose(g2, -np.sin(x))
    assert cr.grad(cr.grad(np.sin))(0.7) == pytest.approx(-np.sin(0.7), rel=1e-14)


def test_third_and_fourth_order_of_polynomial():
    p = lambda x: 2 * x**4 - 3 * x**3 + x
    d3 = cr.grad(cr.grad(cr.grad(p)))
    d4 = cr.grad(d3)
    assert d3(1.5) == pytest.approx(48 * 1.5 - 18)
    assert d4(1.5) == pytest.approx(48.0)


def test_perturbation_confusion():
    # d/dx [ x * d/dy (x + y) ] = d/dx [x * 1] = 1, not 2
    f = lambda x: x * cr.grad(lambda y: x + y)(1.0)
    assert cr.grad(f)(3.0) == pytest.approx(1.0)


def test_closure_over_outer_traced_value():
    # g(x) = d/dy [x * y^2] at y = x  ->  2 x^2 ; g'(x) = 4x
    g = lambda x: cr.grad(lambda y: x * y**2)(x)
    assert cr.grad(g)(1.5) == pytest.approx(6.0)


def test_hvp_of_quadratic_is_symmetric_part():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 5))
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    hv = cr.hvp(lambda x: 0.5 * x @ A @ x, x, v)
    np.testing.assert_allclose(hv, 0.5 * (A + A.T) @ v, rtol=1e-12)


def test_grad_and_hvp_match_separate_calls():
    f = lambda x: np.sum(np.tanh(x) ** 2 * np.exp(x))
    x, v = np.array([0.2, -0.4, 1.0]), np.array([1.0, 2.0, -1.0])
    g, hv = cr.grad_and_hvp(f, x, v)
    np.testing.assert_allclose(g, cr.grad(f)(x), rtol=1e-14)
    np.testing.assert_allclose(hv, cr.jvp(cr.grad(f), (x,), (v,))[1], rtol=1e-12)


def test_hvp_falls_back_for_rules_without_second_order():
    @cr.primitive
    def sq(x):
        return x * x

    @cr.rrule(sq)
    def _(x):
        return sq(x), lambda g: (2 * g * x,)

    x, v = np.array([1.0, 3.0]), np.array([1.0, 1.0])
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(sq(x) * x), x, v), 6 * x * v)


def test_value_and_grad_argnums_and_aux():
    f = lambda a, b: (np.sum(a * b), {"prod": a * b})
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    (val, aux), (ga, gb) = cr.value_and_grad(f, argnums=(0, 1), has_aux=True)(a, b)
    assert val == 11.0
    assert not isinstance(aux["prod"], cr.Traced)
    np.testing.assert_array_equal(aux["prod"], [3.0, 8.0])
    np.testing.assert_array_equal(ga, b)
    np.testing.assert_array_equal(gb, a)
    g, aux2 = cr.grad(f, argnums=1, has_aux=True)(a, b)
    np.testing.assert_array_equal(g, a)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def test_pytrees_in_and_out():
    params = {"layers": [Layer(np.ones((2, 2)), np.zeros(2))], "scale": 2.0, "n": 3}

    def loss(p):
        layer = p["layers"][0]
        x = np.array([1.0, -1.0])
        return p["scale"] * np.sum(np.tanh(x @ layer.w + layer.b) ** 2)

    g = cr.grad(loss)(params)
    assert isinstance(g["layers"][0], Layer)
    assert g["n"] is cr.NoTangent()
    assert g["layers"][0].w.shape == (2, 2)
    assert np.isscalar(g["scale"]) or np.ndim(g["scale"]) == 0
    # against a directional finite difference
    eps = 1e-6
    bumped = {"layers": [Layer(np.ones((2, 2)) + eps, np.zeros(2))], "scale": 2.0, "n": 3}
    fd = (loss(bumped) - loss(params)) / eps
    assert np.sum(g["layers"][0].w) == pytest.approx(fd, rel=1e-4)


def test_vjp_pytree_output_and_repeated_calls():
    def f(x, y):
        return {"s": np.sum(x * y), "v": x * 2.0}

    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    out, f_vjp = cr.vjp(f, x, y)
    assert out["s"] == 13.0
    gx, gy = f_vjp({"s": np.float64(1.0), "v": np.array([1.0, 0.0])})
    np.testing.assert_array_equal(gx, y + [2.0, 0.0])
    np.testing.assert_array_equal(gy, x)
    gx2, _ = f_vjp({"s": np.float64(2.0), "v": np.zeros(2)})
    np.testing.assert_array_equal(gx2, 2 * y)


def test_jvp_matches_closed_form():
    x, t = np.array([0.1, 0.2]), np.array([1.0, -1.0])
    out, tout = cr.jvp(lambda x: np.exp(x) * np.sin(x), (x,), (t,))
    np.testing.assert_allclose(tout, (np.exp(x) * np.sin(x) + np.exp(x) * np.cos(x)) * t)


def test_gradient_of_constant_function_is_zero():
    g = cr.grad(lambda x: 3.0)(np.ones(2))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_float32_stays_float32():
    x = np.array([0.5, 1.5], np.float32)
    g = cr.grad(lambda x: np.sum(np.sin(x) * x))(x)
    assert g.dtype == np.float32
    hv = cr.hvp(lambda x: np.sum(np.sin(x) * x), x, np.ones(2, np.float32))
    assert hv.dtype == np.float32


def test_mixed_float32_constant_float64_projects_back():
    x = np.array([1.0, 2.0], np.float32)
    g = cr.grad(lambda x: np.sum(x * np.array([1.0, 2.0])))(x)  # output float64
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [1.0, 2.0])


def test_real_input_gets_real_gradient_from_complex_intermediate():
    g = cr.grad(lambda x: np.sum(x * (1 + 2j)).real)(np.array([1.0, 2.0]))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_scalar_input_gives_scalar_gradient():
    g = cr.grad(lambda x: x * x)(3.0)
    assert np.ndim(g) == 0 and g == 6.0


def test_stop_gradient():
    f = lambda x: np.sum(x * cr.stop_gradient(x))
    np.testing.assert_array_equal(cr.grad(f)(np.array([2.0, 3.0])), [2.0, 3.0])


def test_holomorphic_grad():
    z = np.complex128(0.3 + 0.4j)
    d = cr.grad(lambda z: z * z * z, holomorphic=True)(z)
    assert d == pytest.approx(3 * z**2)
    d2 = cr.grad(cr.grad(lambda z: np.sin(z), holomorphic=True), holomorphic=True)(z)
    assert d2 == pytest.approx(-np.sin(z))
    with pytest.raises(cr.NonDifferentiableInputError, match="complex"):
        cr.grad(lambda z: z * z, holomorphic=True)(1.0)


def test_gradient_of_real_loss_wrt_complex_is_conjugate_convention():
    # L = |z|^2 = z * conj(z): JAX convention gives 2 * conj(z)
    z = np.array([3.0 + 4.0j])
    g = cr.grad(lambda z: np.sum(z * np.conj(z)).real)(z)
    np.testing.assert_allclose(g, 2 * np.conj(z))


def test_hvp_skipping_leaf_cotangents_gives_the_same_result():
    rng = np.random.default_rng(3)
    X, W2 = rng.standard_normal((5, 4)), rng.standard_normal((3, 2))
    f = lambda W: np.sum(np.tanh(X @ W @ W2) ** 2)
    W, V = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    g, hv_full = cr.grad_and_hvp(f, W, V)
    hv = cr.hvp(f, W, V)
    np.testing.assert_array_equal(hv, hv_full)
    np.testing.assert_allclose(hv, cr.jvp(cr.grad(f), (W,), (V,))[1], rtol=1e-12)
