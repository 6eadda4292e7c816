"""Every entry point accepts every input kind a user passes (Python float,
NumPy scalar, 0-d, size-1, empty and n-d arrays, float32, complex, pytrees)
as primal and as tangent or cotangent, and returns documented types:

* a gradient, cotangent or HVP leaf has the kind and dtype of its input leaf
  (a NumPy scalar for a Python or NumPy scalar, an array for an array,
  0-d included), whatever ``f`` computes;
* a ``jvp`` tangent has the kind and dtype of its output.
"""

import numpy as np
import pytest

import chainrules as cr


def f(x):
    return np.sum(np.sin(x) * x)


def df(x):
    return np.cos(x) * x + np.sin(x)


def d2f(x):
    return 2 * np.cos(x) - np.sin(x) * x


KINDS = {
    "python float": (0.7, np.float64),
    "float64 scalar": (np.float64(0.7), np.float64),
    "float32 scalar": (np.float32(0.7), np.float32),
    "0-d": (np.array(0.7), np.ndarray),
    "0-d float32": (np.array(0.7, np.float32), np.ndarray),
    "size-1": (np.array([0.7]), np.ndarray),
    "empty": (np.zeros((0, 3)), np.ndarray),
    "n-d": (np.linspace(-1, 1, 6).reshape(2, 3), np.ndarray),
    "n-d float32": (np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), np.ndarray),
}


def _dtype(x):
    return np.result_type(x)


def _tol(x):
    return dict(rtol=1e-5, atol=1e-6) if _dtype(x) == np.float32 else dict(rtol=1e-12)


def _check(result, x, kind, expected):
    assert type(result) is kind, (type(result), kind)
    assert result.dtype == _dtype(x)
    assert np.shape(result) == np.shape(x)
    np.testing.assert_allclose(result, expected, **_tol(x))


@pytest.mark.parametrize("name", list(KINDS))
def test_grad_and_value_and_grad(name):
    x, kind = KINDS[name]
    _check(cr.grad(f)(x), x, kind, df(np.asarray(x, np.float64)))
    v, g = cr.value_and_grad(f)(x)
    _check(g, x, kind, df(np.asarray(x, np.float64)))
    np.testing.assert_allclose(v, f(x), **_tol(x))


@pytest.mark.parametrize("name", list(KINDS))
@pytest.mark.parametrize("tkind", ["same", "python", "float64 array", "int array"])
def test_jvp_tangent_kinds(name, tkind):
    x, kind = KINDS[name]
    shape = np.shape(x)
    t = {"same": x,
         "python": 0.5 if shape == () else None,
         "float64 array": np.full(shape, 0.5),
         "int array": np.ones(shape, int)}[tkind]
    if t is None:
        pytest.skip("a Python float tangent only fits a scalar primal")
    g = lambda x: np.sin(x) * x  # noqa: E731
    out, tout = cr.jvp(g, (x,), (t,))
    assert type(tout) is type(out)
    assert tout.dtype == out.dtype == _dtype(x)
    tv = np.asarray(t, np.float64)
    np.testing.assert_allclose(tout, df(np.asarray(x, np.float64)) * tv, **_tol(x))


@pytest.mark.parametrize("name", list(KINDS))
def test_vjp_cotangent_kinds(name):
    x, kind = KINDS[name]
    g = lambda x: np.sin(x) * x  # noqa: E731
    out, pb = cr.vjp(g, x)
    ct = 0.5 if np.shape(out) == () and not isinstance(out, np.ndarray) else np.full(
        np.shape(out), 0.5)
    (c,) = pb(ct)
    _check(c, x, kind, 0.5 * df(np.asarray(x, np.float64)))


@pytest.mark.parametrize("name", list(KINDS))
def test_hvp_grad_and_hvp_linearize_grad(name):
    x, kind = KINDS[name]
    v = np.ones(np.shape(x), _dtype(x))[()] if np.shape(x) == () else np.ones(
        np.shape(x), _dtype(x))
    expected = d2f(np.asarray(x, np.float64))
    _check(cr.hvp(f, x, v), x, kind, expected)
    g, hv = cr.grad_and_hvp(f, x, v)
    _check(g, x, kind, df(np.asarray(x, np.float64)))
    _check(hv, x, kind, expected)
    g, hvp_fn = cr.linearize_grad(f, x)
    _check(hvp_fn(v), x, kind, expected)


@pytest.mark.parametrize("name", list(KINDS))
def test_jacobian_hessian_operator(name):
    x, kind = KINDS[name]
    xv = np.asarray(x, np.float64)
    n = xv.size
    J = cr.jacobian(lambda x: np.sin(x) * x)(x)
    np.testing.assert_allclose(np.reshape(J, (n, n)), np.diag(df(xv).ravel()), **_tol(x))
    H = cr.hessian(f)(x)
    np.testing.assert_allclose(np.reshape(H, (n, n)), np.diag(d2f(xv).ravel()), **_tol(x))
    if _dtype(x) == np.float64:
        op = cr.hessian_operator(f, x)
        np.testing.assert_allclose(op.matvec(np.ones(n)), d2f(xv).ravel())


COMPLEX = [np.complex128(1 + 2j), 1 + 2j, np.array(1 + 2j), np.array([1 + 2j, 0.5 - 1j]),
           np.array([1 + 2j], np.complex64)]


@pytest.mark.parametrize("z", COMPLEX, ids=lambda z: f"{type(z).__name__}-{np.shape(z)}")
def test_complex_inputs(z):
    loss = lambda z: np.sum(np.abs(z) ** 2)  # noqa: E731
    g = cr.grad(loss)(z)
    kind = np.ndarray if isinstance(z, np.ndarray) else np.complex128
    assert type(g) is kind and g.dtype == np.result_type(z)
    tol = dict(rtol=1e-6) if np.result_type(z) == np.complex64 else dict(rtol=1e-12)
    np.testing.assert_allclose(g, 2 * np.conj(z), **tol)   # conjugate Wirtinger form
    _, t = cr.jvp(loss, (z,), (1j * np.ones(np.shape(z)),))
    np.testing.assert_allclose(t, np.sum(2 * np.real(np.conj(z) * 1j)), **tol)
    hv = cr.hvp(loss, z, 1j * np.ones(np.shape(z), np.result_type(z)))
    np.testing.assert_allclose(hv, -2j * np.ones(np.shape(z)), **tol)


def test_pytrees_with_mixed_leaves():
    params = {"w": np.array([0.5, -1.0]), "b": 0.25, "meta": (np.float32(2.0), 3)}

    def loss(p):
        w, b = p["w"], p["b"]
        s, n = p["meta"]
        return np.sum(np.sin(w) * b) * s + n

    g = cr.grad(loss)(params)
    assert type(g["b"]) is np.float64 and type(g["meta"][0]) is np.float32
    assert g["meta"][1] == cr.NoTangent()
    np.testing.assert_allclose(g["w"], np.cos([0.5, -1.0]) * 0.25 * 2.0)
    np.testing.assert_allclose(g["b"], np.sum(np.sin([0.5, -1.0])) * 2.0)
    tang = {"w": np.ones(2), "b": 1.0, "meta": (np.float32(0.0), 0)}
    out, t = cr.jvp(loss, (params,), (tang,))
    np.testing.assert_allclose(t, np.sum(np.cos([0.5, -1.0])) * 0.5 + np.sum(np.sin([0.5, -1.0])) * 2)
    hv = cr.hvp(loss, params, tang)
    np.testing.assert_allclose(hv["w"], -np.sin([0.5, -1.0]) * 0.5 + np.cos([0.5, -1.0]) * 2)


def test_keyword_arguments_pass_through():
    def loss(x, scale=1.0, *, power=2):
        return np.sum((x * scale) ** power)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.grad(loss)(x, scale=2.0, power=3), 3 * 8 * x ** 2)
    v, g = cr.value_and_grad(loss, argnums=1)(x, 2.0, power=2)
    np.testing.assert_allclose(g, 2 * 2.0 * np.sum(x ** 2))


def test_one_element_output_is_accepted_by_grad():
    x = np.array([0.5, 2.0])
    g = cr.grad(lambda x: (np.sin(x[:1]) * x[1:] ** 2).reshape(1, 1))(x)
    np.testing.assert_allclose(g, [np.cos(0.5) * 4.0, 2 * 2.0 * np.sin(0.5)])
    with pytest.raises(cr.NonScalarOutputError):
        cr.grad(lambda x: x * 2)(x)
