"""np.pad with traced constant_values (mode="constant") and end_values
(mode="linear_ramp") in every form NumPy accepts: values equal to NumPy's
bit for bit (corners included), derivatives in the array and in each
constant against finite differences, HVPs, dtypes."""

import numpy as np
import pytest

import chainrules as cr

# (shape, pad_width): 0-d, 1-d, 2-d, 3-d, asymmetric and zero widths
CASES = [((), 2), ((4,), (2, 3)), ((4,), (0, 2)), ((2, 3), ((1, 2), (2, 1))),
         ((2, 3), 1), ((2, 3, 2), ((1, 0), (2, 1), (1, 2)))]


def _forms(nd, rng):
    """Every form of the constants NumPy takes, as float64 arrays."""
    out = [rng.standard_normal(()), rng.standard_normal((1,)), rng.standard_normal((2,)),
           rng.standard_normal((1, 2))]
    if nd:
        out += [rng.standard_normal((nd, 2)), rng.standard_normal((nd, 1))]
    return out


def _primal(f, *args):
    """``f(*args)`` computed with ``args`` traced (the primal of a JVP)."""
    return cr.jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]


def _fd_grad(f, args, k, eps=1e-6):
    """Central differences of scalar ``f`` in ``args[k]``."""
    a = args[k]
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        hi = list(args)
        lo = list(args)
        hi[k], lo[k] = a + e, a - e
        g[i] = (f(*hi) - f(*lo)) / (2 * eps)
    return g


def _weighted(y):
    return np.cos(np.arange(np.size(y), dtype=float)).reshape(np.shape(y))


@pytest.mark.parametrize("shape, width", CASES)
@pytest.mark.parametrize("mode, key", [("constant", "constant_values"),
                                       ("linear_ramp", "end_values")])
def test_values_match_numpy_exactly_and_gradients_match_fd(shape, width, mode, key):
    rng = np.random.default_rng(len(shape) + 7 * (mode == "constant"))
    x = rng.standard_normal(shape)
    for c in _forms(len(shape), rng):
        want = np.pad(x, width, mode=mode, **{key: c})

        def pad(x, c):
            return np.pad(x, width, mode=mode, **{key: c})

        got = _primal(pad, x, c)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)

        def loss(x, c):
            y = pad(x, c)
            return np.sum(_weighted(y) * y)

        gx, gc = cr.grad(loss, argnums=(0, 1))(x, c)
        assert gc.shape == c.shape
        np.testing.assert_allclose(gx, _fd_grad(loss, (x, c), 0), rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(gc, _fd_grad(loss, (x, c), 1), rtol=1e-7, atol=1e-8)


def test_corners_take_the_last_axis_constant():
    x = np.zeros((2, 2))
    c = np.array([[1.0, 2.0], [3.0, 4.0]])
    y = _primal(lambda x, c: np.pad(x, 1, constant_values=c), x, c)
    np.testing.assert_array_equal(y, np.pad(x, 1, constant_values=c))
    # corners: axis 1's before (3) on the left, after (4) on the right
    assert (y[0, 0], y[0, -1], y[-1, 0], y[-1, -1]) == (3.0, 4.0, 3.0, 4.0)
    assert (y[0, 1], y[-1, 1]) == (1.0, 2.0)
    # each constant's gradient counts the elements it fills
    g = cr.grad(lambda x, c: np.sum(np.pad(x, 1, constant_values=c)), argnums=(0, 1))(x, c)[1]
    np.testing.assert_array_equal(g, [[2.0, 2.0], [4.0, 4.0]])


def test_lists_and_tuples_of_traced_scalars():
    x = np.arange(6.0).reshape(2, 3)

    def f(x, c):
        forms = [(c[0], c[1]), [[c[0], 1.5], (c[2], c[1])], [c[2]], ((c[0], c[1]),)]
        return sum(np.sum(_weighted(y) * y)
                   for y in (np.pad(x, (1, 2), constant_values=v) for v in forms))

    c = np.array([0.3, -1.2, 2.5])
    gx, gc = cr.grad(f, argnums=(0, 1))(x, c)
    np.testing.assert_allclose(gc, _fd_grad(f, (x, c), 1), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gx, _fd_grad(f, (x, c), 0), rtol=1e-7, atol=1e-9)
    y = _primal(lambda x, c: np.pad(x, (1, 2), constant_values=[[c[0], 1.5], (c[2], c[1])]),
                x, c)
    np.testing.assert_array_equal(y, np.pad(x, (1, 2), constant_values=[[0.3, 1.5],
                                                                        [2.5, -1.2]]))


def test_linear_ramp_with_traced_end_values_in_lists():
    x = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    e = np.array([0.7, -0.4, 1.1])

    def pad(x, e):
        return np.pad(x, ((2, 1), (1, 3)), mode="linear_ramp",
                      end_values=[(e[0], e[1]), [e[2], 2.0]])

    y = _primal(pad, x, e)
    np.testing.assert_array_equal(
        y, np.pad(x, ((2, 1), (1, 3)), mode="linear_ramp", end_values=[[0.7, -0.4], [1.1, 2.0]]))

    def f(x, e):
        y = pad(x, e)
        return np.sum(_weighted(y) * y)

    gx, ge = cr.grad(f, argnums=(0, 1))(x, e)
    np.testing.assert_allclose(ge, _fd_grad(f, (x, e), 1), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gx, _fd_grad(f, (x, e), 0), rtol=1e-7, atol=1e-9)


def test_plain_array_with_traced_constants_raises():
    """NumPy gives np.pad to chainrules only when the array is traced; with a
    plain array it converts the traced constants itself."""
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda c: np.sum(np.pad(np.ones(3), 1, constant_values=c)))(1.0)


@pytest.mark.parametrize("mode, key", [("constant", "constant_values"),
                                       ("linear_ramp", "end_values")])
def test_hvp_matches_finite_differences_of_the_gradient(mode, key):
    rng = np.random.default_rng(5)
    x0, c0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))

    def f(z):
        x, c = z[:6].reshape(2, 3), z[6:].reshape(2, 2)
        y = np.pad(x, (1, 2), mode=mode, **{key: c})
        return np.sum(_weighted(y) * y ** 2) + np.sum(y * np.roll(y, 1))

    z, v = np.concatenate([x0.ravel(), c0.ravel()]), rng.standard_normal(10)
    hv = cr.hvp(f, z, v)
    fd = (cr.grad(f)(z + 1e-6 * v) - cr.grad(f)(z - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7)
    h = cr.hessian(f)(z)
    np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode, key", [("constant", "constant_values"),
                                       ("linear_ramp", "end_values")])
def test_float32_stays_float32(mode, key):
    x = np.array([[1.0, 2.5, -1.0], [0.5, 0.25, 3.0]], np.float32)
    for c in (np.float64(0.1), np.array([0.1, -0.3]), np.array([[0.1, 0.2], [0.3, 0.7]]),
              np.array([0.1, 0.2], np.float32)):
        want = np.pad(x, (2, 1), mode=mode, **{key: c})
        got = _primal(lambda x, c: np.pad(x, (2, 1), mode=mode, **{key: c}), x, c)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        gx, gc = cr.grad(lambda x, c: np.sum(np.pad(x, (2, 1), mode=mode, **{key: c})),
                         argnums=(0, 1))(x, c)
        assert gx.dtype == np.float32 and gc.dtype == c.dtype


@pytest.mark.parametrize("mode, key", [("constant", "constant_values"),
                                       ("linear_ramp", "end_values")])
def test_complex_values_and_adjoint_identity(mode, key):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    c = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
    want = np.pad(x, ((1, 2), (2, 0)), mode=mode, **{key: c})

    def pad(x, c):
        return np.pad(x, ((1, 2), (2, 0)), mode=mode, **{key: c})

    got = _primal(pad, x, c)
    assert got.dtype == np.complex128
    np.testing.assert_array_equal(got, want)
    # linear in (x, c): the JVP is the map itself, the VJP its adjoint
    tx = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    tc = rng.standard_normal(c.shape) + 1j * rng.standard_normal(c.shape)
    _, t = cr.jvp(pad, (x, c), (tx, tc))
    np.testing.assert_allclose(t, np.pad(tx, ((1, 2), (2, 0)), mode=mode, **{key: tc}),
                               rtol=1e-14, atol=1e-14)
    g = rng.standard_normal(want.shape) + 1j * rng.standard_normal(want.shape)
    _, pullback = cr.vjp(pad, x, c)
    gx, gc = pullback(g)
    lhs = np.vdot(g, t)
    rhs = np.vdot(gx, tx) + np.vdot(gc, tc)
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_constants_of_the_wrong_shape_raise_like_numpy():
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        np.pad(x, 1, constant_values=np.ones((3, 2)))
    with pytest.raises(ValueError):
        cr.grad(lambda x, c: np.sum(np.pad(x, 1, constant_values=c)), argnums=(0, 1))(
            x, np.ones((3, 2)))
