"""float32 programs that mix in float64 NumPy scalars or arrays: grad, jvp
and the HVP sweep handle every mixed form, keep float32, and agree with the
float64 program."""

import numpy as np
import pytest

import chainrules as cr

C = np.float64(0.35)
BINARY = {
    "add": lambda x: x + C, "subtract": lambda x: C - x, "multiply": lambda x: x * C,
    "divide": lambda x: C / (x + 2), "power_base": lambda x: np.float64(1.5) ** x,
    "power_exp": lambda x: (x + 2) ** C, "maximum": lambda x: np.maximum(x, C),
    "minimum": lambda x: np.minimum(x, C), "fmax": lambda x: np.fmax(x, C),
    "fmin": lambda x: np.fmin(x, C), "remainder": lambda x: np.remainder(x, C),
    "fmod": lambda x: np.fmod(x, C), "arctan2": lambda x: np.arctan2(x, C),
    "hypot": lambda x: np.hypot(x, C), "copysign": lambda x: np.copysign(x, -C),
    "logaddexp": lambda x: np.logaddexp(x, C), "logaddexp2": lambda x: np.logaddexp2(C, x),
    "where": lambda x: np.where(x > 0.5, x, C), "clip": lambda x: np.clip(x, C, 0.8),
    "float64 array": lambda x: x * np.array([0.5, 2.0, 1.5]),
    "matmul float64": lambda x: x @ np.eye(3) * 2.0,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_float32_with_float64_constants(name):
    op = BINARY[name]
    f = lambda x: np.sum(np.sin(op(x)) * x)  # noqa: E731
    x32 = np.array([0.3, 0.9, 0.6], np.float32)
    x64 = x32.astype(np.float64)
    v32 = np.array([1.0, -0.5, 0.25], np.float32)
    g = cr.grad(f)(x32)
    hv = cr.hvp(f, x32, v32)
    _, t = cr.jvp(f, (x32,), (v32,))
    g2, hv2 = cr.grad_and_hvp(f, x32, v32)
    for r in (g, hv, g2, hv2):
        assert r.dtype == np.float32
    np.testing.assert_allclose(g, cr.grad(f)(x64), rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(hv, cr.hvp(f, x64, v32.astype(np.float64)), rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(t, np.dot(cr.grad(f)(x64), v32), rtol=2e-4, atol=1e-5)


# -- float64 programs with float32 values: derivatives as precise as float64's ----------
def _narrow_forms(c):
    """The same binary operations with ``c`` as the second operand; ``c`` is
    the float32 (or complex64) value or its float64 (complex128) widening."""
    return {
        "divide": lambda x: c / (x + 2), "divide_by": lambda x: x / c,
        "power_base": lambda x: c ** x, "power_exp": lambda x: (x + 2) ** c,
        "arctan2": lambda x: np.arctan2(x, c), "arctan2_of": lambda x: np.arctan2(c, x),
        "hypot": lambda x: np.hypot(x, c), "logaddexp": lambda x: np.logaddexp(x, c),
        "logaddexp2": lambda x: np.logaddexp2(c, x), "float_power": lambda x: np.float_power(
            x + 2, c),
    }


@pytest.mark.parametrize("name", sorted(_narrow_forms(0)))
@pytest.mark.parametrize("kind", ["scalar", "0-d", "array", "traced"])
@pytest.mark.parametrize("size", [3, 70_000])  # (the second large enough to fuse)
def test_float64_with_float32_values(name, kind, size):
    """A float32 value beside float64 ones: NumPy computes in float64, and
    so must the partials (``1 / c`` in float32 carried 1e-8 relative
    errors into float64 gradients). The derivatives equal those of the same
    program given the value widened to float64 beforehand, bit for bit;
    a traced float32 argument keeps its dtype."""
    rng = np.random.default_rng(size)
    x = rng.uniform(0.2, 1.3, size)
    v = rng.uniform(-1, 1, size)
    c32 = {"scalar": np.float32(0.35), "0-d": np.array(0.35, np.float32),
           "array": rng.uniform(0.2, 0.9, size).astype(np.float32),
           "traced": rng.uniform(0.2, 0.9, size).astype(np.float32)}[kind]
    # the widened value of the same kind (a scalar, a 0-d array, an array)
    c64 = np.float64(c32) if kind == "scalar" else np.asarray(c32, np.float64)
    if kind == "traced":
        def loss(c):
            return lambda x, y: np.sum(np.sin(_narrow_forms(y)[name](x)) * x)

        g = cr.grad(loss(None), argnums=(0, 1))(x, c32)
        g64 = cr.grad(loss(None), argnums=(0, 1))(x, c64)
        assert g[1].dtype == np.float32
        np.testing.assert_array_equal(g[0], g64[0])
        np.testing.assert_array_equal(g[1], g64[1].astype(np.float32))
        hv = cr.hvp(lambda x: loss(None)(x, c32), x, v)
        np.testing.assert_array_equal(hv, cr.hvp(lambda x: loss(None)(x, c64), x, v))
        return

    def loss(c):
        op = _narrow_forms(c)[name]
        return lambda x: np.sum(np.sin(op(x)) * x)

    assert loss(c32)(x) == loss(c64)(x)  # NumPy's forward: the same float64 values
    np.testing.assert_array_equal(cr.grad(loss(c32))(x), cr.grad(loss(c64))(x))
    np.testing.assert_array_equal(cr.hvp(loss(c32), x, v), cr.hvp(loss(c64), x, v))
    np.testing.assert_array_equal(cr.jvp(loss(c32), (x,), (v,))[1],
                                  cr.jvp(loss(c64), (x,), (v,))[1])


def test_complex128_with_complex64_and_float32_values():
    z = np.array([1.0 + 1.0j, 2.0 - 0.5j, -0.3 + 0.2j])
    for c in (np.complex64(0.7 + 0.1j), np.float32(0.7)):
        wide = np.complex128(c) if np.iscomplexobj(c) else np.float64(c)
        for f in (lambda z, c: z / c, lambda z, c: c / (z + 2), lambda z, c: (z + 2) ** c):
            g = cr.grad(lambda z: np.real(np.sum(f(z, c) * np.conj(z))))(z)
            np.testing.assert_array_equal(
                g, cr.grad(lambda z: np.real(np.sum(f(z, wide) * np.conj(z))))(z))


def test_nary_rules_read_float32_values_in_float64():
    sc = pytest.importorskip("scipy.special")
    x = np.array([0.3, 0.6, 0.8])
    a, b = np.float32(1.7), np.array([2.3, 1.1, 0.7], np.float32)
    g = cr.grad(lambda x: np.sum(sc.betainc(a, b, x)))(x)
    A, B = np.float64(a), b.astype(np.float64)
    np.testing.assert_array_equal(g, cr.grad(lambda x: np.sum(sc.betainc(A, B, x)))(x))


def test_a_unary_rule_with_a_wider_output_reads_its_input_widened():
    """A registered operation whose float32 input gives a float64 output:
    its partial (here 1 / x, in float32 before) is computed in float64, and
    the cotangent comes back float32."""
    def recip(x):
        return np.float64(1.0) / np.asarray(x, np.float64)

    op = cr.primitive(recip)
    cr.scalar_rule(op, lambda x, y: -1.0 / (x * x), second=lambda x, y: 2.0 / (x * x * x))
    x32 = np.array([0.3, 0.7, 1.9], np.float32)
    x64 = x32.astype(np.float64)
    g = cr.grad(lambda x: np.sum(op(x) * np.float64(3.0)))(x32)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, (-3.0 / (x64 * x64)).astype(np.float32))
    # the float64 partial, before the cast: seen through a float64 cotangent
    _, pull = cr.vjp(op, x32)
    (c,) = pull(np.ones(3))
    np.testing.assert_array_equal(c, (-1.0 / (x64 * x64)).astype(np.float32))
