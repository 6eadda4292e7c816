"""Targeted tests of rules/complex.py and complex inputs elsewhere: the JAX
convention (grad of a real loss is d/dx - i d/dy), non-holomorphic
functions, behaviour at 0, second order."""

import numpy as np
import pytest

import chainrules as cr

Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.2 - 1.5j])
V = np.array([0.3 - 1.0j, 2.0 + 0.5j, -1.0 - 1.0j])


def wirtinger_grad(f, z, h=1e-6):
    """d f/dx - i d f/dy by central differences (the convention's gradient)."""
    out = np.zeros_like(z)
    for k in range(z.size):
        e = np.zeros_like(z)
        e[k] = 1
        dx = (f(z + h * e) - f(z - h * e)) / (2 * h)
        dy = (f(z + 1j * h * e) - f(z - 1j * h * e)) / (2 * h)
        out[k] = dx - 1j * dy
    return out


def test_grad_of_abs_squared_is_two_conj():
    np.testing.assert_allclose(cr.grad(lambda z: np.sum(np.abs(z) ** 2))(Z), 2 * np.conj(Z),
                               rtol=1e-15)
    np.testing.assert_allclose(cr.grad(lambda z: np.sum(np.real(z * np.conj(z))))(Z),
                               2 * np.conj(Z), rtol=1e-15)
    np.testing.assert_allclose(cr.grad(lambda z: np.sum(abs(z) ** 2))(Z), 2 * np.conj(Z),
                               rtol=1e-15)


@pytest.mark.parametrize("f,expected", [
    (lambda z: np.real(z), lambda z: np.ones_like(z)),
    (lambda z: z.real, lambda z: np.ones_like(z)),
    (lambda z: np.imag(z), lambda z: -1j * np.ones_like(z)),
    (lambda z: z.imag, lambda z: -1j * np.ones_like(z)),
    (lambda z: np.real(np.conj(z) * (2 + 1j)), lambda z: np.full_like(z, 2 - 1j)),
    (lambda z: np.real(z.conj() * (2 + 1j)), lambda z: np.full_like(z, 2 - 1j)),
    (lambda z: np.abs(z), lambda z: np.conj(z) / np.abs(z)),
    (lambda z: np.angle(z), lambda z: -1j / z),
    (lambda z: np.angle(z, deg=True), lambda z: -1j / z * 180 / np.pi),
    (lambda z: np.real(np.exp(z)), np.exp),  # holomorphic: g * f'(z), no conjugate
    (lambda z: np.imag(np.log(z)), lambda z: -1j / z),
    (lambda z: np.abs(np.sqrt(z)) ** 2, lambda z: np.conj(z) / np.abs(z)),
])
def test_convention_against_finite_differences(f, expected):
    g = cr.grad(lambda z: np.sum(f(z)))(Z)
    np.testing.assert_allclose(g, expected(Z), rtol=1e-14)
    np.testing.assert_allclose(g, wirtinger_grad(lambda z: np.sum(f(z)), Z), rtol=1e-8,
                               atol=1e-9)


def test_abs_and_angle_at_zero_are_zero():
    z = np.array([0j, 1 + 1j])
    g = cr.grad(lambda z: np.sum(np.abs(z)))(z)
    np.testing.assert_allclose(g, [0, (1 - 1j) / np.sqrt(2)], rtol=1e-15)
    assert not np.any(np.isnan(g))
    g = cr.grad(lambda z: np.sum(np.angle(z)))(z)
    np.testing.assert_allclose(g, [0, -1j / (1 + 1j)], rtol=1e-15)
    for f in (np.abs, np.angle):
        hv = cr.hvp(lambda z: np.sum(f(z)), z, np.array([1 + 1j, 0j]))
        assert hv[0] == 0 and not np.any(np.isnan(hv))


def test_hvp_of_abs_and_abs_squared():
    # H v of |z|^2 is 2 conj(v); of |z| it is the tangent of conj(z)/|z|
    np.testing.assert_allclose(cr.hvp(lambda z: np.sum(np.abs(z) ** 2), Z, V), 2 * np.conj(V),
                               rtol=1e-14)
    r = np.abs(Z)
    expected = np.conj(V) / r - np.conj(Z) * np.real(np.conj(Z) * V) / r ** 3
    np.testing.assert_allclose(cr.hvp(lambda z: np.sum(np.abs(z)), Z, V), expected, rtol=1e-14)
    # reverse over reverse agrees: d/dt grad(z + t v)
    w = np.array([1.0, -2.0, 0.5])
    nested = cr.jvp(cr.grad(lambda z: np.sum(w * np.abs(z))), (Z,), (V,))[1]
    np.testing.assert_allclose(cr.hvp(lambda z: np.sum(w * np.abs(z)), Z, V), nested,
                               rtol=1e-14)


def test_hvp_of_angle():
    # grad = -i/z (holomorphic in z), so H v = i v / z^2
    np.testing.assert_allclose(cr.hvp(lambda z: np.sum(np.angle(z)), Z, V), 1j * V / Z ** 2,
                               rtol=1e-14)
    nested = cr.jvp(cr.grad(lambda z: np.sum(np.angle(z))), (Z,), (V,))[1]
    np.testing.assert_allclose(nested, 1j * V / Z ** 2, rtol=1e-14)
    # reverse over reverse: grad of <grad f(z), v> (real pairing) is H^T v = H v here
    rr = cr.grad(lambda z: np.sum(np.real(cr.grad(lambda z: np.sum(np.angle(z)))(z) * V)))(Z)
    np.testing.assert_allclose(rr, 1j * V / Z ** 2, rtol=1e-14)


def test_real_inputs_to_complex_functions():
    x = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.imag(x)))(x), [0, 0, 0])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.real(x)))(x), [1, 1, 1])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.conj(x) * 2))(x), [2, 2, 2])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.angle(x)))(x), [0, 0, 0])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.abs(x)))(x), [-1, 0, 1])


def test_complex64_stays_complex64():
    z = Z.astype(np.complex64)
    for f in (np.abs, np.angle, np.real, np.imag, lambda z: np.abs(np.exp(z) * z ** 2)):
        g = cr.grad(lambda z: np.sum(f(z)))(z)
        assert g.dtype == np.complex64
    assert np.abs(z).dtype == np.float32


@pytest.mark.parametrize("op", [np.sqrt, np.log, np.exp, np.sin, np.tanh, np.arcsin,
                                np.arctanh, np.reciprocal, np.square, np.sinc, np.expm1,
                                np.log1p, np.arccos, np.arcsinh])
def test_holomorphic_functions_follow_the_convention(op):
    # real loss Re(sum(w * f(z))): gradient w * f'(z), checked by finite differences
    w = np.array([1.0 - 0.5j, 0.3 + 2.0j, -1.0 + 0.2j])
    z = Z * 0.4
    g = cr.grad(lambda z: np.sum(np.real(w * op(z))))(z)
    fd = wirtinger_grad(lambda z: np.sum(np.real(w * op(z))), z)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-8)


def test_power_with_complex_base_and_exponent():
    x = np.array([-2.0 + 0.5j, 1.5 - 0.3j])
    y = np.array([0.7 + 0.2j, -1.1 + 0.0j])
    gx, gy = cr.grad(lambda x, y: np.sum(np.real(x ** y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, y * x ** (y - 1), rtol=1e-14)
    np.testing.assert_allclose(gy, x ** y * np.log(x), rtol=1e-14)
    # a negative real part is fine for a complex base with a traced exponent
    np.testing.assert_allclose(
        wirtinger_grad(lambda y: np.sum(np.real(x ** y)), y), gy, rtol=1e-7)
