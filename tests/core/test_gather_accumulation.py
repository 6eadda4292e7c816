"""Basic-index gathers (``x[1:]``, ``x[i]``, ``x[..., None]``) add their
cotangents straight into the input's buffer (``ReverseRule.gather_index``).
Each result is compared with the same function written with integer-array
indices, which go through the materialised ``scatter_add`` pullback."""

import numpy as np
import pytest

import chainrules as cr

rng = np.random.default_rng(7)
X = rng.standard_normal((4, 5))
V = rng.standard_normal((4, 5))


def _as_array_index(index, shape):
    """The integer-array index selecting the same elements as a basic index."""
    grid = np.indices(shape)
    return tuple(g[index] for g in grid)


INDEXES = [
    (slice(1, None),), (slice(None, -1),), (1,), (1, 2), (-1, slice(None, None, -2)),
    (Ellipsis, 3), (slice(None), None, slice(1, 4)), (slice(3, 0, -1), slice(None, None, 2)),
]


def _fan_out(x, take):
    # overlapping gathers of one input, non-linear use, a uniform cotangent
    parts = [take(x, idx) for idx in INDEXES]
    total = 0.0
    for k, p in enumerate(parts):
        total = total + np.sum(np.sin(p) * (k + 1)) + np.sum(p ** 2) * 0.5
    return total + np.sum(x[:, :2]) if take is _basic else total + np.sum(
        x[_as_array_index((slice(None), slice(None, 2)), x.shape)])


def _basic(x, idx):
    return x[idx]


def _advanced(x, idx):
    return x[_as_array_index(idx, np.shape(x))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gather_grad_and_hvp_match_the_materialised_pullback(dtype):
    x, v = X.astype(dtype), V.astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    f = lambda x: _fan_out(x, _basic)  # noqa: E731
    ref = lambda x: _fan_out(x, _advanced)  # noqa: E731
    g = cr.grad(f)(x)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, cr.grad(ref)(x), rtol=tol, atol=tol)
    g2, hv = cr.grad_and_hvp(f, x, v)
    np.testing.assert_allclose(g2, g, rtol=tol, atol=tol)
    np.testing.assert_allclose(hv, cr.hvp(ref, x, v), rtol=tol, atol=tol)
    np.testing.assert_allclose(cr.hvp(f, x, v), hv, rtol=tol, atol=tol)
    np.testing.assert_allclose(cr.hessian(f)(x.astype(np.float64)),
                               cr.hessian(ref)(x.astype(np.float64)), rtol=1e-12, atol=1e-12)


def test_gather_of_every_element_in_a_loop():
    x = np.linspace(0.1, 1.0, 50)
    f = lambda x: sum(x[i] * x[i - 1] for i in range(1, 50))  # noqa: E731
    expected = np.zeros(50)
    expected[1:] += x[:-1]
    expected[:-1] += x[1:]
    np.testing.assert_allclose(cr.grad(f)(x), expected, rtol=1e-14)
    v = np.ones(50)
    hv = np.zeros(50)
    hv[1:] += v[:-1]
    hv[:-1] += v[1:]
    np.testing.assert_allclose(cr.hvp(f, x, v), hv, rtol=1e-14)


def test_complex_input_and_nested_gradients():
    z = X[0] + 1j * X[1]
    f = lambda z: np.sum(np.abs(z[1:] * z[:-1]) ** 2)  # noqa: E731
    ref = lambda z: np.sum(np.abs(z[np.arange(1, 5)] * z[np.arange(4)]) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(z), cr.grad(ref)(z), rtol=1e-13)
    # second order through nested tracing: cotangents are traced values there
    x = X[2]
    h = lambda x: np.sum(np.exp(x[1:]) * x[:-1] ** 3)  # noqa: E731
    gg = cr.grad(lambda x: np.sum(cr.grad(h)(x) * V[0]))(x)
    np.testing.assert_allclose(gg, cr.hvp(h, x, V[0]), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_anomaly_mode_sees_gather_cotangents():
    x = np.array([1.0, 0.0, 2.0])
    with cr.detect_anomaly():
        with pytest.raises(cr.NumericalInstabilityError):
            cr.grad(lambda x: np.sum(np.sqrt(x[1:])))(x)


def test_basic_gathers_never_materialise_zeros_of_the_input(monkeypatch):
    import chainrules.rules.indexing as indexing

    def refuse(*args, **kwargs):
        raise AssertionError("scatter_add called for a basic index")

    monkeypatch.setattr(indexing, "scatter_add", refuse)
    f = lambda x: _fan_out(x, _basic)  # noqa: E731
    g = cr.grad(f)(X)
    hv = cr.hvp(f, X, V)
    monkeypatch.undo()
    np.testing.assert_allclose(g, cr.grad(f)(X), rtol=1e-14)
    np.testing.assert_allclose(hv, cr.hvp(f, X, V), rtol=1e-14)
    with pytest.raises(AssertionError, match="scatter_add"):
        monkeypatch.setattr(indexing, "scatter_add", refuse)
        cr.grad(lambda x: _fan_out(x, _advanced))(X)


@pytest.mark.parametrize("index", [
    np.int64(2), (np.int64(1), slice(None)), [0, 2, 2], (slice(None), [1, 1]),
    (np.array([0, 3]), 4), np.array([True, False, True, False]), True,
    (Ellipsis, None), (slice(1, 3), Ellipsis, None),
], ids=repr)
def test_every_index_kind_matches_its_numpy_adjoint(index):
    # plain ints, slices, None and Ellipsis take the tracer's fast path; the
    # rest (NumPy ints, lists, arrays, booleans) the general one: both must
    # give the adjoint of NumPy's own indexing
    w = rng.standard_normal(np.shape(X[index]))
    g = cr.grad(lambda x: np.sum(w * x[index]))(X)
    expect = np.zeros_like(X)
    np.add.at(expect, index, w)
    np.testing.assert_array_equal(g, expect)
    assert np.shares_memory(g, X) is False
