"""Writes into results NumPy returns as views (reshape, ravel, transpose,
squeeze, swapaxes, moveaxis, diagonal, real, imag) and NumPy's in-place
buffer functions (ufunc.at, put, putmask, place, fill_diagonal, copyto with
where=) on traced arrays (chainrules/writes.py, chainrules/writes_buffers.py).

Every program below also runs on plain arrays, where NumPy writes in place:
the traced value must equal NumPy's, the gradient finite differences and
the gradient of the same program written functionally, the HVP finite
differences of the gradient; the user's arrays are never written."""

import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp
from chainrules.writes import ReadOnlyViewError


def fd_grad(f, x, eps=1e-6):
    g = np.zeros(x.shape)
    for i in range(x.size):
        e = np.zeros(x.shape)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def check(f, x, functional=None, rtol=1e-6):
    """Value (traced vs plain NumPy), gradient (vs finite differences and
    vs ``functional``), jvp, hvp (vs finite differences of the gradient
    and the Hessian); ``x`` is not modified."""
    x0 = x.copy()
    val, g = cr.value_and_grad(f)(x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_allclose(val, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=rtol, atol=1e-7)
    if functional is not None:
        vf, gf = cr.value_and_grad(functional)(x)
        np.testing.assert_allclose(val, vf, rtol=1e-12)
        np.testing.assert_allclose(g, gf, rtol=1e-12, atol=1e-12)
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    np.testing.assert_allclose(cr.jvp(f, (x,), (v,))[1], np.sum(g * v), rtol=1e-10,
                               atol=1e-12)
    hv = cr.hvp(f, x, v)
    np.testing.assert_allclose(hv, fd_grad(lambda y: np.sum(cr.grad(f)(y) * v), x),
                               rtol=1e-5, atol=1e-6)
    h = cr.hessian(f)(x).reshape(x.size, x.size)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h @ v.ravel(), hv.ravel(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(x, x0)
    return g


X = np.array([0.3, 1.2, -0.7, 2.0, 0.9, -1.4])
W = np.arange(1.0, 7.0)


def loss(y, x):
    return np.sum(np.sin(np.ravel(y)) * np.ravel(y) * W[: np.size(y)]) + np.sum(
        x * y.ravel()[0])


# -- views made by functions ----------------------------------------------------------
VIEWS = {
    "ravel": lambda y: np.ravel(y),
    "ravel method": lambda y: y.ravel(),
    "reshape": lambda y: np.reshape(y, (3, 2)),
    "reshape F": lambda y: np.reshape(y, (3, 2), order="F"),
    "reshape method": lambda y: y.reshape(6),
    "T": lambda y: y.T,
    "transpose": lambda y: np.transpose(y, (1, 0)),
    "transpose method": lambda y: y.transpose(),
    "swapaxes": lambda y: np.swapaxes(y, 0, 1),
    "swapaxes method": lambda y: y.swapaxes(-1, -2),
    "moveaxis": lambda y: np.moveaxis(y[None], 0, -1),
    "squeeze": lambda y: np.squeeze(y[:, None]),
    "squeeze method": lambda y: y[None].squeeze(0),
    "real of real": lambda y: np.real(y),
    "real attribute": lambda y: y.real,
}


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_write_into_a_view_reaches_the_base_and_its_other_views(make):
    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        r = make(y)
        other = y[:, 1:]                # another live view of the base
        r[0] = x[3] ** 2                # into the view: y and other change
        r += x[: r.shape[-1]] if r.ndim == 1 else x[0]
        y[1] *= x[1:4]                  # into the base: r and other change
        return loss(y, x) + np.sum(np.cos(r)) + np.sum(other ** 3)

    def plain_view_of_copy(x):          # the same values without aliasing
        y = np.reshape(x * 1.0, (2, 3))
        r = make(y).copy()
        r[0] = 0.0
        return loss(y, x) + np.sum(r)

    check(f, X)
    check(plain_view_of_copy, X)


@pytest.mark.parametrize("make", [
    lambda y: np.ravel(y.T), lambda y: np.reshape(y.T, 6), lambda y: y.T.ravel(),
    lambda y: np.ravel(y[:, ::2]), lambda y: np.reshape(y, 6, copy=True)])
def test_copies_made_by_these_functions_are_independent(make):
    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        r = make(y)
        r[0] = 10.0 * x[0]              # NumPy's copy: y unchanged
        y[0, 0] = x[5]                  # and r unchanged
        return loss(y, x) + np.sum(r ** 2)

    check(f, X)


def test_real_and_imag_of_complex_are_views():
    def f(x):
        z = x * (1.0 + 0.5j)
        re, im = z.real, np.imag(z)
        re[1:] = x[:-1] ** 2            # z's real part changes; im does not
        im *= x                          # z's imaginary part changes; re does not
        z[0] = 3.0 * x[4]                # both parts change
        return np.sum(np.abs(z) ** 2 * W) + np.sum(re * W) + np.sum(im ** 3)

    check(f, X)
    re_im = lambda x: (x * (1 + 0.5j)).real  # noqa: E731
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(re_im(x) ** 2))(X), 2 * X)


def test_real_and_imag_setters():
    def f(x):
        z = x * (1.0 + 0.5j)
        z.real = x ** 2
        z.imag[1:] += x[:-1]
        return np.sum(np.abs(z) ** 2 * W)

    check(f, X)


def test_views_of_views_and_writes_through_the_argument():
    def f(x):
        t = np.reshape(x, (3, 2)).T     # a view of the traced argument
        u = t[1]
        u[:] = u * x[:3]
        v = np.ravel(np.swapaxes(np.reshape(x, (2, 3)), 0, 1))  # a copy
        v[0] = 7.0
        return np.sum(np.sin(x) * W) + np.sum(t ** 2) + np.sum(v)

    x = X.copy()
    check(f, x)
    np.testing.assert_array_equal(x, X)  # the user's array: never written


def test_float32_complex64_and_shapes():
    def f(x):
        y = (x * 1.0).reshape(2, 3)
        r = y.T
        r[0] = 2.0
        return y

    y = cr.jvp(f, (X.astype(np.float32),), (np.ones(6, np.float32),))[0]
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, f(X.astype(np.float32)))

    def g(x):
        z = (x * (1 + 1j)).astype(np.complex64)
        np.ravel(z)[0] = 5.0 * x[0]
        z.imag[1] = x[1] ** 2
        return np.sum(np.abs(z) ** 2)

    v, gr = cr.value_and_grad(g)(X.astype(np.float32))
    assert gr.dtype == np.float32
    np.testing.assert_allclose(v, g(X.astype(np.float32)), rtol=1e-6)
    np.testing.assert_allclose(gr, fd_grad(g, X, eps=1e-3), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("x", [np.array(1.5), np.array([1.5]), np.array([[1.5]])])
def test_zero_d_and_size_one_views(x):
    def f(x):
        y = x.copy()
        r = np.ravel(y)
        r[0] = r[0] ** 3
        np.squeeze(y)[...] += 1.0
        return np.sum(y ** 2)

    v, g = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(v, f(x.copy()))
    np.testing.assert_allclose(g, np.full(x.shape, 2 * (1.5 ** 3 + 1) * 3 * 1.5 ** 2))
    assert g.shape == x.shape


@pytest.mark.parametrize("x", [1.5, np.float64(1.5), np.array(1.5)])
def test_views_of_numpy_scalars_are_copies(x):
    def f(x):
        y = x * 1.0                      # a NumPy scalar: its ravel is a new array
        r = np.ravel(y)
        r[0] = r[0] ** 3
        return np.sum(y ** 2) + np.sum(r)

    v, g = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(v, f(np.copy(x)))
    np.testing.assert_allclose(g, 2 * 1.5 + 3 * 1.5 ** 2)


def test_empty_views():
    def f(x):
        y = x * 1.0
        r = np.reshape(y[:0], (0, 2))
        r += 1.0
        return np.sum(y ** 2)

    np.testing.assert_allclose(cr.grad(f)(X), 2 * X)


# -- read-only views ---------------------------------------------------------------------
def _ADD_AT(d):
    np.add.at(d, [0], 1.0)


@pytest.mark.parametrize("write", [
    lambda d: d.__setitem__(0, 1.0), lambda d: d.__iadd__(1.0), lambda d: d.fill(2.0),
    lambda d: d[1:].__setitem__(0, 1.0), lambda d: np.put(d, [0], 1.0), _ADD_AT])
@pytest.mark.parametrize("make", [lambda y: np.diagonal(y), lambda y: y.diagonal(1),
                                  lambda y: np.diag(y)])
def test_diagonals_are_read_only_as_in_numpy(make, write):
    if write is not _ADD_AT:  # NumPy's ufunc.at writes into read-only views
        with pytest.raises(ValueError, match="read-only"):
            write(make(np.ones((3, 3))))

    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        write(make(y))
        return np.sum(y)

    with pytest.raises(ReadOnlyViewError, match="read-only.*copy"):
        cr.grad(f)(X)
    assert issubclass(ReadOnlyViewError, (cr.AutodiffError, ValueError))


def test_a_diagonal_sees_writes_into_its_base():
    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        d = np.diagonal(y)
        y[1] = x[:3] ** 2
        c = np.diagonal(y, 1).copy()   # a copy: writable, independent
        c[0] = 5.0 * x[2]
        return np.sum(d * W[:2]) + np.sum(c ** 2) + np.sum(y)

    check(f, X)


def test_imag_of_a_real_array_is_read_only():
    with pytest.raises(ValueError):
        np.ones(2).imag[0] = 1.0
    with pytest.raises(ReadOnlyViewError):
        cr.grad(lambda x: np.imag(x).__setitem__(0, 1.0))(X)


def test_aliases_of_other_functions_stay_refused_with_what_to_do():
    def f(x):
        y = x * 1.0
        b = np.broadcast_to(y, (2, 6))
        y[0] = 1.0
        return np.sum(b)

    with pytest.raises(cr.UntraceableError, match="broadcast_to.*copy"):
        cr.grad(f)(X)


# -- ufunc.at ----------------------------------------------------------------------------
AT = {
    "add": (np.add, lambda x: x[:4] ** 2),
    "subtract": (np.subtract, lambda x: np.sin(x[:4])),
    "multiply": (np.multiply, lambda x: x[2:]),
    "divide": (np.divide, lambda x: x[2:] + 3.0),
    "maximum": (np.maximum, lambda x: x[::-1][:4]),
    "minimum": (np.minimum, lambda x: 0.5 * x[:4]),
    "power": (np.power, lambda x: x[:4] ** 2),
    "add python float": (np.add, lambda x: 2.5),
    "add float32": (np.add, lambda x: np.float32(0.25)),
}
INDICES = {"repeats": [0, 0, 4, 0], "distinct": np.array([5, 1, 2, 3]),
           "negative": [-1, -1, 1, 2]}


@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
@pytest.mark.parametrize("op,values", AT.values(), ids=AT.keys())
def test_ufunc_at(op, values, index):
    def f(x):
        y = np.abs(x) + 0.5 if op is np.power else x * 1.0
        op.at(y, index, values(x))
        return np.sum(np.sin(y) * W)

    def functional(x):                  # the repeats applied one at a time
        y = np.abs(x) + 0.5 if op is np.power else x * 1.0
        v = np.broadcast_to(values(x), (4,))
        for k, i in enumerate(index):
            y = cnp.index_update(y, i, op(y[i], v[k]))
        return np.sum(np.sin(y) * W)

    check(f, X, functional)


def test_ufunc_at_unary_two_d_slices_and_masks():
    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        np.negative.at(y, ([0, 0, 1], [1, 1, 2]))      # twice at (0, 1): unchanged
        np.add.at(y, (slice(None), [0, 0]), x[:2, None] if False else x[:2])
        np.multiply.at(y, y > 0.5, 2.0)
        np.maximum.at(y, (1, [0, 0]), x[4:])
        return np.sum(np.sin(y) * W.reshape(2, 3))

    check(f, X)


def test_ufunc_at_float32_complex_and_casts():
    def f(x):
        y = x * 1.0
        np.add.at(y, [1, 1], x[:2] ** 2)    # float64 values into float32
        np.multiply.at(y, [0, 0], np.float32(3.0))
        return y

    x32 = X.astype(np.float32)
    y = cr.jvp(f, (x32,), (np.ones(6, np.float32),))[0]
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, f(x32.copy()))

    def weak(x):                             # Python numbers: computed in float32
        y = x * 1.0
        np.multiply.at(y, [2, 2], 1.1)
        np.add.at(y, [0, 0], 0.1)
        np.subtract.at(y, [3], 1e-3)
        np.maximum.at(y, [4, 4], 0.7)
        return y

    y = cr.jvp(weak, (x32,), (np.ones(6, np.float32),))[0]
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, weak(x32.copy()))

    def g(x):
        z = x * (1.0 - 0.5j)
        np.multiply.at(z, [2, 2, 3], x[:3] * 1j)
        np.subtract.at(z, [0, 0], x[1])
        return np.sum(np.abs(z) ** 2)

    check(g, X)

    def h(x):                                # complex into real: NumPy's warning
        y = x * 1.0
        np.add.at(y, [0, 0], x[1] * (1 + 2j))
        return np.sum(y ** 2)

    with pytest.warns(np.exceptions.ComplexWarning):
        v, gr = cr.value_and_grad(h)(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_allclose(v, h(X.copy()))
        np.testing.assert_allclose(gr, fd_grad(h, X), rtol=1e-6)


def test_ufunc_at_empty_zero_d_and_size_one():
    def f(x):
        y = np.reshape(x, (-1,)) * 1.0       # size 1, one axis
        np.add.at(y, [], 5.0)
        np.add.at(y, np.array([], np.intp), y[:0])
        np.multiply.at(y, 0, y[0])
        z = np.zeros_like(x, shape=())      # a 0-d buffer
        np.add.at(z, (), np.sum(x))
        np.multiply.at(z, (), np.sum(x))
        return np.sum(y ** 2) + z

    for x in (np.array(1.5), np.array([1.5]), np.array([[1.5]]), np.float64(1.5)):
        v, g = cr.value_and_grad(f)(x)
        np.testing.assert_allclose(v, f(np.copy(x)))
        np.testing.assert_allclose(g, np.full(np.shape(x), 4 * 1.5 ** 3 + 2 * 1.5))
    np.testing.assert_allclose(cr.grad(f)(1.5), 4 * 1.5 ** 3 + 2 * 1.5)

    def empty(x):
        y = x * 1.0
        np.add.at(y, ([], []), 1.0)
        np.multiply.at(y, (slice(None), 1), x[:, 0])
        np.put(y, [], 1.0)
        return np.sum(y) + np.sum(x)

    e = np.zeros((0, 3))
    np.testing.assert_array_equal(cr.grad(empty)(e), e)


def test_ufunc_at_through_views_and_nested_grad():
    def f(x):
        y = np.reshape(x * 1.0, (2, 3))
        r = np.ravel(y)
        np.add.at(r, [0, 0, 5], x[:3] ** 2)    # through the view into y
        np.multiply.at(y[1], [1, 1], x[0])      # through a basic view
        return np.sum(np.sin(y) * W.reshape(2, 3)) + np.sum(r)

    check(f, X)
    gg = cr.grad(lambda x: np.sum(cr.grad(f)(x) ** 2))(X)
    np.testing.assert_allclose(gg, fd_grad(lambda x: np.sum(cr.grad(f)(x) ** 2), X),
                               rtol=1e-5, atol=1e-6)


# -- put, putmask, place, fill_diagonal, copyto -----------------------------------------
PUTS = {
    "put": lambda y, x: np.put(y, [0, 2], x[:2] ** 2),
    "put repeats last wins": lambda y, x: np.put(y, [1, 1, 3], x[3:] ** 2),
    "put short values repeat": lambda y, x: np.put(y, [0, 1, 2, 5], x[:2] ** 3),
    "put wrap": lambda y, x: np.put(y, [7, -8, 2], x[:3] ** 2, mode="wrap"),
    "put clip": lambda y, x: np.put(y, [9, -3, 1], x[:3] ** 2, mode="clip"),
    "put negative": lambda y, x: np.put(y, [-1], x[0] ** 2),
    "put plain values": lambda y, x: np.put(y, [0, 4], [2.0, 3.0]),
    "put method": lambda y, x: y.put([3, -1, 3], x[:3] ** 2, mode="clip"),
    "putmask": lambda y, x: np.putmask(y, X > 0.5, np.cos(x)),
    "putmask short values": lambda y, x: np.putmask(y, X > 0.5, x[:4] ** 2),
    "place": lambda y, x: np.place(y, X > 0.5, x[:4] ** 2),
    "place short values": lambda y, x: np.place(y, X < 1.0, x[:2] ** 2),
    "fill_diagonal": lambda y, x: np.fill_diagonal(y.reshape(2, 3), x[0] ** 2),
    "fill_diagonal tall wrap": lambda y, x: np.fill_diagonal(y.reshape(3, 2), x[:2] ** 2,
                                                               wrap=True),
    "fill_diagonal values": lambda y, x: np.fill_diagonal(y.reshape(2, 3), x[4:] ** 2),
    "copyto where": lambda y, x: np.copyto(y, x[::-1] ** 2, where=X > 0.5),
    "copyto where broadcast": lambda y, x: np.copyto(y, x[0] ** 2, where=X < 0.5),
    # lists holding traced values: no derivative dropped
    "put list": lambda y, x: np.put(y, [1, 1, 4], [x[2], x[3] ** 2, 1.5]),
    "putmask list": lambda y, x: np.putmask(y, X > 0.5, [x[0] ** 2, 2.0]),
    "place list": lambda y, x: np.place(y, X > 0.5, [x[5], x[4] ** 2]),
    "fill_diagonal list": lambda y, x: np.fill_diagonal(y.reshape(2, 3), [x[3], x[1] * 2]),
    "add.at list": lambda y, x: np.add.at(y, [0, 0, 2], [x[1] ** 2, 1.0, x[0]]),
    "multiply.at list": lambda y, x: np.multiply.at(y, [3, 3], [x[1], x[2]]),
    "copyto list": lambda y, x: np.copyto(y[:2], [x[3] ** 2, x[0]], where=[True, False]),
}


@pytest.mark.parametrize("write", PUTS.values(), ids=PUTS.keys())
def test_buffer_functions(write):
    def f(x):
        y = x * 1.0
        other = y[1:]                       # a live view sees the write
        assert write(y, x) is None
        return np.sum(np.sin(y) * W) + np.sum(other ** 2)

    check(f, X)


def test_put_matches_a_functional_program():
    def f(x):
        y = x * 1.0
        np.put(y, [1, 1, 3], x[3:] ** 2)
        return np.sum(np.sin(y) * W)

    def functional(x):
        y = cnp.index_update(x * 1.0, 1, x[4] ** 2)
        return np.sum(np.sin(cnp.index_update(y, 3, x[5] ** 2)) * W)

    check(f, X, functional)


def test_buffer_functions_on_buffers_float32_complex_and_sizes():
    def f(x):
        out = np.zeros_like(x, shape=(3, 3))
        np.fill_diagonal(out, x[:3])
        np.put(out, [1, 1], x[1:3] ** 2)
        np.putmask(out, np.eye(3, k=-1) > 0, x[0])
        return np.sum(out ** 2 * np.arange(9.0).reshape(3, 3))

    check(f, X)
    x32 = X.astype(np.float32)
    assert cr.grad(f)(x32).dtype == np.float32

    def g(x):
        z = np.zeros_like(x, dtype=complex)
        np.put(z, [0, 1], x[:2] * 1j)
        np.place(z, X > 1.0, x[2] * (1 + 1j))
        return np.sum(np.abs(z) ** 2 * W)

    check(g, X)

    def h(x):
        y = x * 1.0
        np.put(y, [], [])
        np.putmask(y, np.zeros(np.shape(y), bool), 1.0)
        np.put(y, 0, y.ravel()[0] ** 2)
        return np.sum(y ** 2)

    for x in (np.array(1.5), np.array([1.5]), np.array([[1.5]])):
        np.testing.assert_allclose(cr.grad(h)(x), np.full(x.shape, 4 * 1.5 ** 3))
    np.testing.assert_allclose(cr.grad(h)(np.float64(1.5)), 4 * 1.5 ** 3)
    np.testing.assert_allclose(cr.grad(h)(1.5), 4 * 1.5 ** 3)


def test_nested_grad_of_buffer_functions():
    def f(x):
        y = x * 1.0
        np.put(y, [0, 5], x[1:3] ** 2)
        np.fill_diagonal(y.reshape(2, 3), np.sin(x[3]))
        np.add.at(y, [1, 1], x[4] ** 3)
        return np.sum(y ** 3 * W)

    gg = lambda x: np.sum(cr.grad(f)(x) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(gg)(X), fd_grad(gg, X), rtol=1e-5, atol=1e-6)
    third = cr.grad(lambda x: np.sum(cr.hvp(f, x, W)))(X)
    np.testing.assert_allclose(third, fd_grad(lambda x: np.sum(cr.hvp(f, x, W)), X),
                               rtol=1e-5, atol=1e-6)


# -- what NumPy refuses, and what stays refused --------------------------------------------
def test_numpys_own_errors():
    for call, err in [(lambda y, x: np.put(y, [6], x[0]), IndexError),
                      (lambda y, x: np.add.at(y, [7], x[0]), IndexError),
                      (lambda y, x: np.add.at(y, [0, 1], x[:3]), ValueError),
                      (lambda y, x: np.place(y, X > 0, x[:0]), ValueError),
                      (lambda y, x: np.fill_diagonal(y, x[0]), ValueError),
                      (lambda y, x: np.put(y, [0], x[0], mode="nope"), ValueError)]:
        with pytest.raises(err):
            call(X.copy(), X)

        def f(x, call=call):
            y = x * 1.0
            call(y, x)
            return np.sum(y)

        with pytest.raises(err):
            cr.grad(f)(X)


def test_plain_buffers_and_traced_indices_are_refused_with_what_to_do():
    for call in (lambda x: np.add.at(np.zeros(3), [0], x[0]),
                 lambda x: np.put(np.zeros(3), [0], x[0]),
                 lambda x: np.putmask(np.zeros(6), X > 0, x),
                 lambda x: np.place(np.zeros(6), X > 0, x),
                 lambda x: np.fill_diagonal(np.zeros((2, 2)), x[0])):
        with pytest.raises(cr.UntraceableError, match="plain.*zeros_like"):
            cr.grad(lambda x, call=call: call(x) or np.sum(x))(X)
    for call in (lambda y, x: np.putmask(y, x, 1.0), lambda y, x: np.add.at(y, x, 1.0),
                 lambda y, x: np.put(y, x, 1.0)):
        with pytest.raises(cr.UntraceableError, match="traced (mask|index).*plain"):
            cr.grad(lambda x, call=call: call(x * 1.0, x) or np.sum(x))(X)
    x = X.copy()
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda x: np.add.at(np.zeros(6), [0], x[0]) or np.sum(x))(x)
    np.testing.assert_array_equal(x, X)


def test_writes_across_levels_through_views():
    """Outer values written into an inner buffer's views, the inner
    gradient written into an outer view; second order included."""
    def outer(x):
        xb = np.reshape(x * 1.0, (2, 3))
        t = xb.T

        def inner(y):
            b = np.reshape(y * x, (3, 2))
            r = np.ravel(b)
            r[0] = x[0] * y[1]
            np.add.at(r, [1, 1], y[2] * x[3])
            np.put(b, [5], np.sin(y[0]))
            return np.sum(np.sin(b) * r.reshape(3, 2))

        g = cr.grad(inner)(x[::-1] * 1.0)
        t[0] = g[:2]
        return np.sum(xb ** 2) + np.sum(g * x)

    g = cr.grad(outer)(X)
    np.testing.assert_allclose(g, fd_grad(outer, X), rtol=1e-6, atol=1e-7)
    h = cr.hessian(outer)(X)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
    fd_h = np.array([fd_grad(lambda z, i=i: cr.grad(outer)(z)[i], X) for i in range(6)])
    np.testing.assert_allclose(h, fd_h, rtol=1e-5, atol=1e-6)


def test_overlapping_values_follow_numpy_or_are_refused():
    """NumPy reads ufunc.at's, put's, putmask's and copyto's values before
    writing (a view of the array written gives the old values); place reads
    them while writing, which chainrules refuses."""
    for call in (lambda y: np.add.at(y, [1, 2], y[0:2]),
                 lambda y: np.multiply.at(y, [1, 2, 2], y[0:3]),
                 lambda y: np.put(y, [1, 2], y[0:2]),
                 lambda y: np.putmask(y, np.array([0, 1, 1, 1], bool), y[0:3]),
                 lambda y: np.copyto(y[1:], y[:-1], where=np.array([1, 1, 0], bool)),
                 lambda y: np.fill_diagonal(y.reshape(2, 2), y[1:3]),
                 lambda y: np.place(y, np.array([0, 1, 1, 1], bool), y[0:3].copy())):
        def f(x, call=call):
            y = x * 1.0
            call(y)
            return np.sum(np.sin(y) * W[:4])

        check(f, X[:4])

    def overlapping(x):
        y = x * 1.0
        np.place(y, np.array([0, 1, 1, 1], bool), y[0:3])
        return np.sum(y)

    def disjoint(x):                    # refused too: chainrules does not look closer
        y = x * 1.0
        np.place(y, np.array([1, 1, 0, 0], bool), y[2:])
        return np.sum(y)

    for f in (overlapping, disjoint):
        with pytest.raises(cr.UntraceableError, match="place.*copy"):
            cr.grad(f)(X[:4])


@pytest.mark.parametrize("layout", [
    lambda y: y.T, lambda y: y[:, ::2], lambda y: y[::-1], lambda y: np.flip(y, 1)])
@pytest.mark.parametrize("copy", [
    lambda t: t.copy(), lambda t: t.copy(order="F"), lambda t: +t, lambda t: np.copy(t),
    lambda t: t.astype(t.dtype)])
def test_copies_and_written_views_keep_numpys_layout(layout, copy):
    """Whether reshape and ravel return views depends on the memory layout:
    copies take the layout NumPy gives them, and a view written into stays
    a view of its base."""
    def f(x):
        y = np.reshape(x * 1.0, (3, 4))
        c = copy(layout(y))
        r = np.ravel(c)                 # a view exactly when NumPy's is
        r[1] = -3.0 * x[0]
        v = y[:, ::2]
        v[0] = x[1:3] ** 2              # v stays a strided view of y
        q = np.ravel(v)                 # a copy, as in NumPy
        q[0] = 9.0
        w = np.reshape(y.T, 12)         # a copy
        w[2] = 4.0 * x[3]
        return np.sum(np.sin(c) * np.arange(c.size).reshape(c.shape)) + np.sum(
            np.cos(y) * np.arange(12.0).reshape(3, 4)) + np.sum(q * w[:6])

    check(f, np.linspace(0.1, 1.2, 12))


def test_ufunc_at_without_a_derivative_and_without_a_loop():
    def f(x):
        y = x * 3.0
        np.floor_divide.at(y, [0, 0], 0.5)      # constant where written
        np.copysign.at(y, [1], -1.0)
        return np.sum(y * x)

    v, g = cr.value_and_grad(f)(X)
    np.testing.assert_allclose(v, f(X.copy()))
    y0 = np.floor(np.floor(3 * X[0] / 0.5) / 0.5)
    np.testing.assert_allclose(g, [y0, -6 * abs(X[1]), 6 * X[2], 6 * X[3], 6 * X[4],
                                   6 * X[5]])
    with pytest.raises(TypeError):              # NumPy's own error, before any write
        cr.grad(lambda x: np.gcd.at(x * 1.0, [0], x[1]) or np.sum(x))(X)


# -- random writes against NumPy ----------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

_AT_OPS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum]


@st.composite
def _programs(draw):
    shape = draw(st.sampled_from([(5,), (2, 3), (3, 1, 2), (1,)]))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.complex128]))
    size = int(np.prod(shape))
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["at", "put", "putmask", "view"]))
        n = draw(st.integers(0, 6))
        pos = draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n))
        op = draw(st.sampled_from(_AT_OPS if dtype is not np.complex128 else _AT_OPS[:3]))
        mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
        steps.append((kind, pos, op, mode, draw(st.integers(0, 2 ** 16))))
    return shape, dtype, steps


def _run(x, shape, dtype, steps):
    """The program on ``x`` (traced or plain): writes into a buffer and its views."""
    y = np.reshape(x * 1.0, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        y = y * (1 - 0.5j)
    flat = np.ravel(y)                  # a view: every write below reaches it
    for kind, pos, op, mode, seed in steps:
        w = np.random.default_rng(seed).integers(0, x.size, max(len(pos), 1))
        vals = (np.sin(x[w]) * 2.0).astype(dtype)  # putmask casts safely only
        if kind == "at":
            idx = np.unravel_index(np.mod(pos, y.size), shape) if pos else ([],) * y.ndim
            op.at(y, idx, vals[: len(pos)])
        elif kind == "put":
            np.put(y, pos, vals, mode=mode)
        elif kind == "putmask":
            np.putmask(y, np.arange(y.size).reshape(shape) % 2 == seed % 2, vals)
        else:
            flat[pos] = vals[: len(pos)]
    return np.sum(np.abs(y) ** 2 * np.arange(1, y.size + 1).reshape(shape)) + np.sum(
        np.real(flat) ** 3)


@settings(max_examples=40, deadline=None)
@given(_programs())
def test_random_writes_agree_with_numpy(program):
    shape, dtype, steps = program
    x = np.linspace(-1.3, 1.7, int(np.prod(shape)))
    f = lambda x: _run(x, shape, dtype, steps)  # noqa: E731
    tol = 1e-4 if dtype is np.float32 else 1e-9
    v, g = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(v, f(x.copy()), rtol=tol)
    np.testing.assert_allclose(g, fd_grad(f, x, 1e-3 if dtype is np.float32 else 1e-6),
                               rtol=1e-2 if dtype is np.float32 else 1e-5, atol=1e-2 if
                               dtype is np.float32 else 1e-6)


def test_complex_parts_with_infinities():
    def z_of(x):
        z = x * (1.0 + 0.5j)
        z.real[0] = np.inf                  # an infinite real part: kept as NumPy keeps it
        z.imag[1] = x[0]
        return z

    z = cr.jvp(z_of, (X,), (np.ones(6),))[0]
    np.testing.assert_array_equal(z, z_of(X.copy()))
    assert z[0] == complex(np.inf, 0.5 * X[0])
    f = lambda x: np.sum(np.abs(z_of(x)[1:]) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(X), fd_grad(f, X), rtol=1e-6)

    def real_part(x):                       # the imaginary part is infinite
        z = x * (1.0 + 0.5j)
        z[1] = complex(0.0, np.inf)
        z.real[1] = x[0]
        return np.sum(np.abs(z[2:]))

    def imag_part(x):                       # an infinite imaginary part written
        z = x * (1.0 + 0.5j)
        z.imag[1] = np.inf
        return np.sum(np.abs(z[2:]))

    for h in (real_part, imag_part):
        with pytest.raises(cr.UntraceableError, match="inf or nan.*two real arrays"):
            cr.grad(h)(X)


# -- every layout: NumPy decides view or copy ----------------------------------------------
_BASES = {
    "C": lambda x: np.reshape(x * 1.0, (4, 6)),
    "T": lambda x: np.reshape(x * 1.0, (4, 6)).T,
    "cols": lambda x: np.reshape(x * 1.0, (4, 6))[:, ::2],
    "rev": lambda x: np.reshape(x * 1.0, (4, 6))[::-1],
    "1d step": lambda x: (x * 1.0)[::3],
    "1d rev": lambda x: (x * 1.0)[::-1],
    "3d": lambda x: np.reshape(x * 1.0, (2, 3, 4)),
    "3d T": lambda x: np.reshape(x * 1.0, (2, 3, 4)).transpose(2, 0, 1),
}
_FUNCS = {
    "ravel": lambda y: np.ravel(y), "ravel F": lambda y: np.ravel(y, "F"),
    "ravel K": lambda y: np.ravel(y, "K"), "ravel A": lambda y: np.ravel(y, "A"),
    "reshape": lambda y: np.reshape(y, -1),
    "reshape F": lambda y: np.reshape(y, (-1,), order="F"),
    "reshape A": lambda y: np.reshape(y, (-1,), order="A"),
    "T": lambda y: y.T, "transpose": lambda y: np.transpose(y, tuple(range(y.ndim))[::-1]),
    "swapaxes": lambda y: np.swapaxes(y, 0, -1), "moveaxis": lambda y: np.moveaxis(y, 0, -1),
    "squeeze": lambda y: np.squeeze(y[None]), "real": lambda y: np.real(y),
}


@pytest.mark.parametrize("make", _FUNCS.values(), ids=_FUNCS.keys())
@pytest.mark.parametrize("base", _BASES.values(), ids=_BASES.keys())
def test_every_layout_follows_numpy(base, make):
    def f(x):
        y = base(x)
        r = make(y)
        r[(0,) * r.ndim] = -5.0 * x[0]
        r *= 1.5
        y[(1,) * y.ndim] = x[2] ** 2
        return np.sum(np.sin(np.ravel(y)) * np.arange(y.size)) + np.sum(
            np.cos(np.ravel(r)) * np.arange(r.size))

    x = np.linspace(0.1, 2.4, 24)
    plain = base(x.copy())
    if make is _FUNCS["ravel K"] and not (plain.flags.c_contiguous or
                                          plain.flags.f_contiguous):
        with pytest.raises(cr.MissingRuleError, match="order='K'"):  # the rule's refusal
            cr.grad(f)(x)
        return
    v, g = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(v, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", [lambda a: np.sort(a, 0), lambda a: np.partition(a, 1, axis=1)],
                         ids=["sort", "partition"])
def test_sorted_column_major_arrays_keep_numpys_layout(op):
    # NumPy sorts a copy in the input's layout: ravel of the result is then
    # a copy, and a write into it must not reach the sorted array
    y = np.asfortranarray(np.random.default_rng(0).normal(size=(3, 4)))
    w = np.arange(12.0).reshape(3, 4)

    def f(a):
        s = op(a)
        r = np.ravel(s)
        r[0] = 100.0
        return np.sum(s * w)

    assert f(cr.stop_gradient(y)) == f(y.copy())
    g = cr.grad(f)(y)
    eps = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 3)]:
        e = np.zeros_like(y)
        e[i, j] = eps
        assert g[i, j] == pytest.approx((f(y + e) - f(y - e)) / (2 * eps), rel=1e-6, abs=1e-6)
