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
