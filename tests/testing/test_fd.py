"""Finite differences: accuracy, complex inputs, pytrees, error estimates."""

import numpy as np
import pytest

from chainrules.testing.fd import fd_jacobian, fd_jvp, upcast

CASES = [
    (np.sin, np.cos, (-2, 2)),
    (np.exp, np.exp, (-2, 2)),
    (np.log, lambda x: 1 / x, (0.5, 2)),
    (np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.9, 0.9)),
    (np.tanh, lambda x: 1 - np.tanh(x) ** 2, (-2, 2)),
]


@pytest.mark.parametrize("f, df, dom", CASES, ids=[c[0].__name__ for c in CASES])
def test_float64_accuracy_and_estimate(f, df, dom, rng):
    x = rng.uniform(*dom, size=12)
    u = rng.standard_normal(12)
    r = fd_jvp(f, (x,), (u,))
    exact = df(x) * u
    err = np.linalg.norm(r.value - exact)
    assert err <= 1e-11 * np.linalg.norm(exact)
    # the error estimate is honest (bounds the true error) and small; it is
    # the error of the half-step stencil, so it is conservative near poles
    assert err <= r.error <= 1e-8 * np.linalg.norm(exact)


def test_float32_inputs_are_upcast(rng):
    x = rng.uniform(-2, 2, 5).astype(np.float32)
    u = rng.standard_normal(5).astype(np.float32)
    r = fd_jvp(np.sin, (x,), (u,))
    assert r.value.dtype == np.float64
    exact = np.cos(x.astype(np.float64)) * u.astype(np.float64)
    assert np.allclose(r.value, exact, rtol=1e-11, atol=0)


def test_float32_output_uses_a_larger_step(rng):
    x = rng.uniform(-2, 2, 5)
    r32 = fd_jvp(lambda a: np.sin(a).astype(np.float32), (x,), (np.ones(5),))
    r64 = fd_jvp(np.sin, (x,), (np.ones(5),))
    assert r32.step > 10 * r64.step
    assert np.allclose(r32.value, np.cos(x), rtol=1e-5, atol=1e-6)


def test_step_follows_the_input_scale(rng):
    x = rng.uniform(1e4, 2e4, 4)
    u = rng.standard_normal(4)
    r = fd_jvp(np.log, (x,), (u,))
    assert np.allclose(r.value, u / x, rtol=1e-10, atol=0)
    assert r.step > 1.0


def test_complex_inputs_holomorphic_and_not(rng):
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    u = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    r = fd_jvp(np.exp, (z,), (u,))
    assert np.allclose(r.value, np.exp(z) * u, rtol=1e-11, atol=0)
    # |z| is not holomorphic: d|z| along u is Re(conj(z) u) / |z|
    r = fd_jvp(np.abs, (z,), (u,))
    assert np.allclose(r.value, np.real(np.conj(z) * u) / np.abs(z), rtol=1e-10, atol=0)


def test_pytrees_and_constant_leaves(rng):
    a, b = rng.standard_normal(3), rng.standard_normal((2, 3))

    def f(tree, k):
        return {"s": np.sin(tree["a"]) * k, "p": tree["b"] @ tree["a"], "n": k}

    r = fd_jvp(f, ({"a": a, "b": b, "i": 3}, 2.0),
               ({"a": np.ones(3), "b": np.zeros((2, 3)), "i": None}, 0.5))
    assert np.allclose(r.value["s"], np.cos(a) * 2.0 + np.sin(a) * 0.5, rtol=1e-11)
    assert np.allclose(r.value["p"], b @ np.ones(3), rtol=1e-11)
    assert np.isclose(r.value["n"], 0.5)


def test_scalar_primals_keep_their_type():
    seen = []

    def f(x):
        seen.append(type(x))
        return x * x

    r = fd_jvp(f, (np.float32(1.5),), (np.float32(1.0),))
    assert np.isclose(r.value, 3.0, rtol=1e-11)
    assert set(seen) == {np.float64}
    assert type(upcast(np.float32(1.0))) is np.float64


def test_kinks_show_up_in_the_truncation_estimate():
    r = fd_jvp(np.floor, (np.array([0.9999999, 1.5]),), (np.ones(2),))
    assert r.truncation > 1e-3 * np.linalg.norm(r.value)
    smooth = fd_jvp(np.sin, (np.array([0.9999999, 1.5]),), (np.ones(2),))
    assert smooth.truncation < 1e-10


def test_zero_direction_and_orders(rng):
    x = rng.standard_normal(3)
    r = fd_jvp(np.sin, (x,), (np.zeros(3),))
    assert np.all(r.value == 0) and r.error == 0
    errs = {}
    for order in (2, 4, 6, 8):
        v = fd_jvp(np.exp, (x,), (np.ones(3),), order=order, richardson=False).value
        errs[order] = np.max(np.abs(v - np.exp(x)))
    assert errs[2] > errs[4] > errs[6]
    with pytest.raises(ValueError):
        fd_jvp(np.sin, (x,), (x,), order=5)


def test_fd_jacobian(rng):
    x = rng.standard_normal(3)
    J = fd_jacobian(lambda a: np.outer(a, a), x)
    exact = np.einsum("ik,j->ijk", np.eye(3), x) + np.einsum("i,jk->ijk", x, np.eye(3))
    assert J.shape == (3, 3, 3)
    assert np.allclose(J, exact, rtol=0, atol=1e-11)


def test_a_stencil_past_the_domain_takes_a_smaller_step():
    # sqrt(3 - x) at x = 2.96 with a step of ~0.02: the default stencil
    # (+-3h) reaches x > 3, where sqrt is NaN; a smaller step stays inside
    x = np.array([0.5, 2.96])
    u = np.array([1.0, 1.0])
    with np.errstate(invalid="ignore"):
        r = fd_jvp(lambda x: np.sqrt(3.0 - x), (x,), (u,))
    exact = -0.5 / np.sqrt(3.0 - x)
    assert np.all(np.isfinite(r.value)) and np.isfinite(r.error)
    assert np.allclose(r.value, exact, rtol=1e-9, atol=0)
    assert r.step < 0.04 / 3


def test_finite_differences_that_never_get_finite_are_unreliable():
    from chainrules import pytree
    from chainrules.testing import CheckReport, FiniteDifferenceUnreliable
    from chainrules.testing.report import Context

    # sqrt at its domain's edge: finite at the point, NaN on one side at every
    # step; the checker refuses to judge rather than compare with NaN
    x, u = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    with np.errstate(invalid="ignore"):
        r = fd_jvp(np.sqrt, (x,), (u,))
    assert not np.isfinite(r.error)
    ctx = Context("sqrt(float64[2])", np.float64, None, None, CheckReport("sqrt"))
    with pytest.raises(FiniteDifferenceUnreliable, match="not finite"):
        ctx.fd_reliable(r, pytree.flatten(r.value)[0], "along u")


def test_the_error_estimate_holds_where_the_step_is_large_for_the_function():
    # cond of a 2x2 matrix whose singular values are 2.03 and 1.90: the
    # default step is large against their gap, and two raw stencils agree by
    # chance; the estimate (and the step it leads to) must still bound the
    # error. Exact value from the closed-form singular values.
    a = np.array([[1.8999046, -0.10174339], [0.13836155, 2.02485673]])
    u = np.array([[-0.5357, 0.3616], [1.304, 0.9471]])

    def cond(a):
        s2 = np.linalg.eigvalsh(a.T @ a)
        return np.sqrt(s2[-1] / s2[0])

    exact = 1.0206039390960219
    r = fd_jvp(cond, (a,), (u,))
    assert abs(float(r.value) - exact) <= max(r.error, 4e-16)
    assert abs(float(r.value) - exact) <= 1e-11
