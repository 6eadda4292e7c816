"""Writes into traced arrays (chainrules/writes.py): assignment, augmented
assignment, preallocated buffers and views, each against what NumPy
computes on plain arrays and against finite differences."""

import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp


def fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def check(f, x, rtol=1e-6):
    """f's value (traced and plain NumPy), gradient (against finite
    differences), jvp and hvp; the input is not modified."""
    x0 = x.copy()
    val, g = cr.value_and_grad(f)(x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_allclose(val, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=rtol, atol=1e-8)
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    np.testing.assert_allclose(cr.jvp(f, (x,), (v,))[1], np.sum(g * v), rtol=1e-10, atol=1e-12)
    hv = cr.hvp(f, x, v)
    np.testing.assert_allclose(hv, fd_grad(lambda y: np.sum(cr.grad(f)(y) * v), x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(cr.hessian(f)(x).reshape(x.size, x.size) @ v.ravel(),
                               hv.ravel(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(x, x0)
    return g


X = np.array([0.3, 1.2, -0.7, 2.0, 0.9])


# -- the patterns scientists write ---------------------------------------------------
def fill_loop(x):
    out = np.zeros_like(x)
    out[0] = x[0] ** 2
    for i in range(1, len(x)):
        out[i] = out[i - 1] * np.sin(x[i])
    return out.sum()


def updates(x):
    y = 2 * x
    y[0] = 5
    y[1:] += x[:-1]
    y *= x
    return y.sum()


def test_preallocate_and_fill():
    check(fill_loop, X)


def test_in_place_updates_of_intermediates():
    g = check(updates, X)
    # d/dx of 5 x0 + sum_{i>0} (2 x_i + x_{i-1}) x_i
    expect = np.r_[5.0, 4 * X[1:]] + np.r_[X[1:], 0.0]
    expect[1:] += X[:-1]
    np.testing.assert_allclose(g, expect)


def test_augmented_assignment_updates_the_object_itself():
    def h(x):
        y = 2 * x
        z = y
        y *= x
        return np.sum(z)

    np.testing.assert_array_equal(cr.grad(h)(np.full(3, 3.0)), [12.0, 12.0, 12.0])
    check(h, X)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**=", "//=", "%="])
def test_every_augmented_operator(op):
    def f(x):
        y = x * 1.5 + 2.0
        z = y
        exec(f"y {op} (x * 0.3 + 1.1)", {}, {"y": y, "x": x})
        return np.sum(z * z)

    x = np.array([0.3, 1.7, 2.2])
    if op in ("//=", "%="):  # piecewise: derivative of the smooth pieces only
        np.testing.assert_allclose(cr.value_and_grad(f)(x)[0], f(x.copy()))
        return
    check(f, x)


def test_matmul_in_place():
    A = np.array([[1.0, 2.0], [0.5, -1.0]])

    def f(x):
        m = np.reshape(x[:4], (2, 2)) * 1.0
        alias = m
        m @= A
        m @= m.copy()
        return np.sum(alias ** 2)

    check(f, np.array([0.3, -0.2, 1.1, 0.7]))

    def bad(x):
        v = x * 1.0
        v @= np.ones((2, 3))
        return v

    with pytest.raises(ValueError, match="mismatch"):
        cr.grad(lambda x: np.sum(bad(x)))(np.ones(2))


# -- views --------------------------------------------------------------------------
def test_write_into_a_view_changes_its_base():
    def f(x):
        y = x * 1.0
        v = y[1:]
        v[0] = x[0] * 7
        v[1:] *= x[2:]
        return np.sum(y ** 2)

    check(f, X)


def test_write_into_a_base_changes_its_live_views():
    def f(x):
        y = x * 1.0
        v = y[1:]
        w = y[::-2]
        y[1] = x[0] * 7
        y[-1] = x[3] ** 2
        return np.sum(v * v) + np.sum(w ** 3)

    check(f, X)


def test_chained_views_and_views_of_views():
    def f(x):
        y = np.stack([x, x ** 2])       # (2, 5)
        y[1:][0] = np.sin(x)            # chained: writes into y
        row = y[0]
        col = row[1:4]
        col[::2] = x[:2] * 3            # view of a view
        y[0, 2] += x[4]                 # the base: row and col follow
        return np.sum(y * np.arange(10.0).reshape(2, 5)) + np.sum(col ** 2) + np.sum(row)

    check(f, X)


def test_slice_augmented_assignment_adds_once():
    def f(x):
        y = x * 1.0
        y[1:] += x[:-1]
        return y

    np.testing.assert_allclose(cr.jvp(f, (X,), (np.ones(5),))[0], f(X.copy()))


@pytest.mark.parametrize("index", [
    0, -1, slice(None, None, -1), slice(3, 0, -2), Ellipsis, (Ellipsis, 1), (None, 1),
    (slice(None), None), np.int64(1), slice(1, 1)])
def test_basic_index_writes_match_numpy(index):
    def f(x):
        y = np.reshape(x * 1.0, (2, 3)).copy()
        y[index] = x[0] * 3.0
        return np.sum(y * np.arange(1.0, 7.0).reshape(2, 3) * y)

    check(f, np.array([0.3, 1.2, -0.7, 2.0, 0.9, 1.4]))


def test_advanced_index_writes_and_copies():
    def f(x):
        y = x * 1.0
        y[[0, 2]] += 1.0
        y[x > 1.0] = 0.5 * x[x > 1.0] ** 2
        t = y[[0, 2]]                   # a copy: writing into it leaves y alone
        t[0] = 100.0
        t2 = y[np.array([1, 3])]
        y[1] = 9.0                      # and a write into y leaves the copies alone
        return np.sum(y ** 2) + np.sum(t) + np.sum(t2 ** 2)

    check(f, X)


def test_repeated_indices_follow_numpys_buffered_semantics():
    def f(x):
        y = x * 1.0
        y[[0, 0]] += 1.0
        y[[1, 1, 2]] = x[2:] ** 2       # the last write at position 1 wins
        return y

    x = X.copy()
    plain = x.copy()
    plain[[0, 0]] += 1.0
    plain[[1, 1, 2]] = x[2:] ** 2
    np.testing.assert_array_equal(cr.jvp(f, (x,), (np.ones(5),))[0], plain)
    check(lambda x: np.sum(f(x) ** 2), x)


# -- buffers, dtypes, shapes ------------------------------------------------------------
def _ones(buf):
    buf[...] = 1.0
    return buf


@pytest.mark.parametrize("make", [
    lambda x: np.zeros_like(x), lambda x: np.ones_like(x), lambda x: _ones(np.empty_like(x)),
    lambda x: np.full_like(x, 2.5), lambda x: x.copy(), lambda x: np.copy(x),
    lambda x: np.zeros_like(x, shape=(3, 5)), lambda x: np.full_like(x, x[1], shape=(3, 5))])
def test_buffers_record_writes(make):
    def f(x):
        out = make(x)
        if out.ndim == 2:
            out[1] = x * x[0]
            out[2, 1:] += np.sin(x[:-1])
        else:
            out[1:3] = x[:2] ** 3
        return np.sum(out * out)

    check(f, X)


def test_empty_like_is_zeros_and_buffers_of_integer_dtype_are_plain():
    seen = {}

    def f(x):
        seen["empty"] = cr.stop_gradient(np.empty_like(x))
        b = np.zeros_like(x, dtype=int)
        b[0] = 3
        seen["int"] = b
        return np.sum(x)

    cr.grad(f)(X)
    np.testing.assert_array_equal(seen["empty"], np.zeros(5))
    assert type(seen["int"]) is np.ndarray and seen["int"].dtype.kind == "i"


def test_float32_stays_float32():
    def f(x):
        y = np.zeros_like(x)
        y[0] = x[1].astype(np.float64) * 2.0    # cast to the buffer's dtype
        y += np.float64(1.0) * x
        assert y.dtype == np.float32
        return np.sum(y ** 2)

    x = X.astype(np.float32)
    g = cr.grad(f)(x)
    assert g.dtype == np.float32
    y0 = 2 * x[1] + x[0]
    np.testing.assert_allclose(g, np.r_[2 * y0, 4 * y0 + 2 * x[1], 2 * x[2:]], rtol=1e-6)


def test_complex_buffers_and_casting_rules():
    def f(x):
        z = np.zeros_like(x, dtype=complex)
        z[0] = x[0] * 1j
        z[1:] += x[:-1] ** 2
        return np.sum(np.abs(z) ** 2)

    check(f, X)

    def into_real(x):
        y = x * 1.0
        y += 1j
        return np.sum(y)

    plain = X.copy()
    with pytest.raises(np.exceptions.DTypePromotionError.__base__) as plain_err:
        plain += 1j
    with pytest.raises(type(plain_err.value), match="same_kind"):
        cr.grad(into_real)(X)

    def real_part(x):
        y = x * 1.0
        y[0] = x[1] * (1.0 + 2.0j)      # NumPy keeps the real part and warns
        return np.sum(y)

    with pytest.warns(np.exceptions.ComplexWarning):
        np.testing.assert_allclose(cr.grad(real_part)(X), [0.0, 2.0, 1.0, 1.0, 1.0])


def test_shape_changing_broadcast_raises_like_numpy():
    def f(x):
        y = x * 1.0
        y += np.ones((2, 5))
        return np.sum(y)

    with pytest.raises(ValueError, match="non-broadcastable output"):
        cr.grad(f)(X)


@pytest.mark.parametrize("x", [np.array(1.5), np.array([1.5]), np.zeros(0)])
def test_zero_d_size_one_and_empty(x):
    def f(x):
        y = x * 2.0
        y[...] = x ** 2
        y += x
        y.fill(3.0)
        y[...] *= x
        return np.sum(y)

    g = cr.grad(f)(x)
    np.testing.assert_allclose(g, np.full(x.shape, 3.0))


def test_fill_and_copyto():
    def f(x):
        y = np.empty_like(x)
        y.fill(x[0])
        np.copyto(y[2:], x[:3] ** 2)
        np.copyto(y, 0.0, where=np.arange(5) == 1)
        return np.sum(y * np.arange(1.0, 6.0))

    check(f, X)


def test_writes_into_the_argument_rebind_the_traced_value_only():
    x = X.copy()

    def f(x):
        x[0] = 10.0
        x += 1.0
        return np.sum(x ** 2)

    g = cr.grad(f)(x)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_allclose(g, np.r_[0.0, 2 * (X[1:] + 1)])


def test_copies_are_independent():
    def f(x):
        y = x * 1.0
        c = y.copy()
        d = +y
        e = y.astype(y.dtype)
        y[0] = 100.0
        c[1] = -1.0
        return np.sum(y) + 10 * np.sum(c) + 100 * np.sum(d) + 1000 * np.sum(e)

    np.testing.assert_allclose(cr.grad(f)(X), [1110.0, 1101.0, 1111.0, 1111.0, 1111.0])


# -- what is refused ---------------------------------------------------------------------
def test_writing_into_a_plain_buffer_names_the_traced_buffer():
    def scalar(x):
        out = np.zeros(3)
        out[0] = x[0]
        return np.sum(out)

    def piece(x):
        out = np.zeros(3)
        out[1:] = x[1:]
        return np.sum(out)

    def augmented(x):
        out = np.zeros(3)
        out += x
        return np.sum(out)

    with pytest.raises(cr.UntraceableError, match=r"plain NumPy array.*np\.zeros_like"):
        cr.grad(piece)(np.ones(3))
    with pytest.raises(cr.UntraceableError, match=r"np\.zeros_like"):
        cr.grad(augmented)(np.ones(3))
    # one element: NumPy raises a ValueError of its own from our refusal; every
    # entry point raises the refusal itself
    entries = [cr.grad, lambda f: cr.value_and_grad(f, argnums=(0,)), cr.hessian,
               cr.jacobian, lambda f: (lambda x: cr.hvp(f, x, x)),
               lambda f: (lambda x: cr.jvp(f, (x,), (x,))), lambda f: cr.jit(cr.grad(f))]
    for entry in entries:
        with pytest.raises(cr.UntraceableError, match=r"np\.zeros_like\(x, shape="):
            entry(scalar)(np.ones(3))


def test_a_conversion_the_function_recovers_from_is_not_raised():
    # code that tries float() and falls back to the array keeps working; only a
    # refusal that NumPy turned into its own error is raised in its place
    def f(x):
        try:
            v = float(x[0])
        except TypeError:
            v = x[0]
        return v * x[1]

    np.testing.assert_array_equal(cr.grad(f)(np.array([1.0, 2.0])), [2.0, 1.0])
    # called while another such error is being handled, it is still not raised
    try:
        try:
            raise cr.UntraceableError("an earlier refusal")
        except cr.UntraceableError as earlier:
            raise ValueError("NumPy's error") from earlier
    except ValueError:
        np.testing.assert_array_equal(cr.grad(f)(np.array([1.0, 2.0])), [2.0, 1.0])


# reshape, ravel, transpose, squeeze, swapaxes, moveaxis, diagonal, real and imag
# follow NumPy's views: tests/core/test_writes_views.py
@pytest.mark.parametrize("make", [
    lambda y: np.broadcast_to(y, (2, 2, 3)), lambda y: np.split(y, 3, axis=1)[0],
    lambda y: np.flip(y, 0), lambda y: np.expand_dims(y, 0)])
def test_writes_through_other_views_are_refused(make):
    def into_alias(x):
        y = np.reshape(x * 1.0, (2, 3))  # an alias of a temporary: an array of its own
        r = make(y)
        r[0] = 1.0
        return np.sum(y)

    def into_base(x):
        y = np.reshape(x * 1.0, (2, 3))
        r = make(y)
        y[0] = 1.0
        return np.sum(y) + np.sum(r)

    def after_copy(x):
        y = np.reshape(x * 1.0, (2, 3))
        r = make(y).copy()
        y[0] = 1.0
        r[0] = 2.0
        return np.sum(y) + np.sum(r)

    x = np.arange(1.0, 7.0)
    for f in (into_alias, into_base):
        with pytest.raises(cr.UntraceableError, match="share memory.*copy"):
            cr.grad(f)(x)
    plain = after_copy(x.copy())
    np.testing.assert_allclose(cr.value_and_grad(after_copy)(x)[0], plain)


def test_unsupported_in_place_forms_stay_refused():
    with pytest.raises(cr.UntraceableError, match="out="):
        cr.grad(lambda x: np.sum(np.sin(x, out=x)))(X)
    with pytest.raises(cr.UntraceableError, match="in-place method"):
        cr.grad(lambda x: x.sort())(X)


# -- levels, checkpoints ---------------------------------------------------------------
def test_writes_of_inner_values_into_outer_buffers():
    def outer(y):
        buf = np.zeros_like(y)

        def inner(x):
            buf[0] = x * y[1]            # an inner value: buf becomes inner too
            return np.sum(buf ** 2)

        return cr.grad(inner)(y[0] * 1.0) * y[2]

    y = np.array([0.5, 1.5, 2.0])
    g = cr.grad(outer)(y)
    # inner grad: 2 x y1^2 with x = y0; outer: 2 y0 y1^2 y2
    np.testing.assert_allclose(g, [2 * y[1] ** 2 * y[2], 4 * y[0] * y[1] * y[2],
                                   2 * y[0] * y[1] ** 2])


def test_hvp_and_jacobian_of_functions_with_writes():
    def vec(x):
        out = np.zeros_like(x, shape=(2, x.size))
        out[0] = np.cumsum(x)
        out[1, 1:] = out[0, :-1] * x[1:]
        out[1] **= 2
        return out

    J = cr.jacobian(vec)(X)
    Jf = cr.jacobian(vec, mode="forward")(X)
    np.testing.assert_allclose(J, Jf, rtol=1e-12)
    for k in range(2):
        for j in range(5):
            np.testing.assert_allclose(
                J[k, j], fd_grad(lambda x: vec(x)[k, j], X), rtol=1e-6, atol=1e-8)
    check(lambda x: np.sum(np.sin(vec(x))), X)


def test_checkpoint_with_writes_inside():
    W = np.array([[0.5, -1.0], [2.0, 0.3]])

    def layer(h):
        out = np.zeros_like(h)
        out[0] = np.tanh(W[0] @ h)
        out[1] = out[0] * h[1]
        out += h
        return out

    def f(x, ckpt):
        h = x * 1.0
        for _ in range(3):
            h = cr.checkpoint(layer)(h) if ckpt else layer(h)
        return np.sum(h ** 2)

    x = np.array([0.4, -0.8])
    np.testing.assert_allclose(cr.grad(f)(x, True), cr.grad(f)(x, False), rtol=1e-13)
    np.testing.assert_allclose(cr.hvp(lambda x: f(x, True), x, np.ones(2)),
                               cr.hvp(lambda x: f(x, False), x, np.ones(2)), rtol=1e-12)


def test_checkpoint_refuses_writes_into_closed_over_values():
    def f(x):
        y = x * 2.0

        def seg(z):
            y[0] = z[0]
            return z * y

        return np.sum(cr.checkpoint(seg)(x))

    with pytest.raises(cr.UntraceableError, match="enclosing"):
        cr.grad(f)(X)


def test_index_update_and_writes_agree():
    def a(x):
        y = x * 1.0
        y[1:3] = x[:2] * x[3:]
        return np.sum(y ** 2)

    def b(x):
        return np.sum(cnp.index_update(x * 1.0, slice(1, 3), x[:2] * x[3:]) ** 2)

    np.testing.assert_allclose(cr.grad(a)(X), cr.grad(b)(X), rtol=1e-14)


def test_views_keep_their_base_alive_and_dead_views_are_dropped():
    def f(x):
        y = x * 1.0
        for i in range(40):               # views made and dropped
            _ = y[i % 5:]
        v = y[2:]
        del y                              # v keeps its base, as NumPy's .base
        v[0] = x[0]
        w = v[1:]
        v[1] = x[1] ** 2
        return np.sum(w)

    np.testing.assert_allclose(cr.grad(f)(X), [0.0, 2 * X[1], 0.0, 0.0, 1.0])


def test_no_warning_for_plain_casts():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cr.grad(lambda x: np.sum(np.ones_like(x) * x))(X)


def test_ode_right_hand_side_filling_a_buffer():
    from chainrules.scipy.integrate import odeint

    def rhs(y, t, k):
        d = np.zeros_like(y)
        d[0] = -k * y[0]
        d[1] = k * y[0] - 0.5 * y[1]
        return d

    def rhs_stacked(y, t, k):
        return np.stack([-k * y[0], k * y[0] - 0.5 * y[1]])

    ts = np.linspace(0.0, 1.0, 5)

    def f(k, r):
        return np.sum(odeint(r, np.array([1.0, 0.0]), ts, args=(k,)))

    np.testing.assert_allclose(cr.value_and_grad(f)(0.7, rhs),
                               cr.value_and_grad(f)(0.7, rhs_stacked), rtol=1e-12)


def test_diag_of_a_vector_is_a_new_array():
    def f(x):
        D = np.diag(x)
        D[0, 1] = x[2] ** 2
        return np.sum(D) + np.sum(x)

    np.testing.assert_allclose(cr.grad(f)(np.array([1.0, 2.0, 3.0])), [2.0, 2.0, 8.0])
