"""Targeted tests of rules/shape.py: mixed traced/constant joins, outputs
used partially, padding modes, second order, and the documented errors."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_hvp, check_rrule


def test_concatenate_mixed_traced_and_constant_pieces():
    a = np.array([1.0, 2.0])
    b = np.array([[3.0]])
    c = np.array([10.0, 20.0, 30.0])
    w = np.arange(1.0, 7.0)

    def f(a, b):
        return np.sum(np.concatenate([a, c, np.ravel(b)]) * w)

    ga, gb = cr.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, [1.0, 2.0])
    np.testing.assert_array_equal(gb, [[6.0]])
    # the pushforward fills the constant piece with zeros
    _, t = cr.jvp(lambda a: np.concatenate([a, c]), (a,), (np.array([1.0, -1.0]),))
    np.testing.assert_array_equal(t, [1.0, -1.0, 0.0, 0.0, 0.0])


def test_join_with_the_same_piece_twice_and_python_scalars():
    x = np.array([1.0, 2.0])
    g = cr.grad(lambda x: np.sum(np.stack([x, x, x ** 2]) ** 2))(x)
    np.testing.assert_allclose(g, 4 * x + 4 * x ** 3)
    g = cr.grad(lambda x: np.sum(np.hstack([1.0, x, 2.0]) * np.arange(4.0)))(x)
    np.testing.assert_array_equal(g, [1.0, 2.0])
    check_hvp(lambda x: np.stack([x, x ** 2]) ** 2, x)


def test_float32_piece_in_float64_join_keeps_float32_gradient():
    a = np.array([1.0, 2.0], np.float32)
    g = cr.grad(lambda a: np.sum(np.concatenate([a, np.array([3, 4])]) ** 2))(a)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_concatenate_of_one_traced_2d_array_uses_its_rows():
    x = np.arange(6.0).reshape(2, 3)
    g = cr.grad(lambda x: np.sum(np.concatenate(x) * np.arange(6.0)))(x)
    np.testing.assert_array_equal(g, np.arange(6.0).reshape(2, 3))


def test_split_outputs_used_partially_get_zero_cotangent():
    x = np.arange(6.0)
    g = cr.grad(lambda x: np.sum(np.split(x, [2, 5])[1] ** 2))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 4.0, 6.0, 8.0, 0.0])
    g = cr.grad(lambda x: np.sum(np.array_split(x, 4)[-1]))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    # the HVP fast path with some outputs unused
    np.testing.assert_array_equal(
        cr.hvp(lambda x: np.sum(np.hsplit(x, 3)[0] ** 3), x, np.ones(6)),
        [0.0, 6.0, 0.0, 0.0, 0.0, 0.0])


def test_split_second_order_through_nested_grad():
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def f(x):
        a, b = np.split(x, 2)
        return np.sum(a ** 2 * b)

    # df/da = 2 a b, df/db = a^2 ; Hessian along e0: d/dx0 of grad
    gg = cr.grad(lambda x: cr.grad(f)(x)[0])(x)
    np.testing.assert_allclose(gg, [2 * 3.0, 0.0, 2 * 1.0, 0.0])


def test_broadcast_arrays_with_constant():
    x = np.array([1.0, 2.0])
    c = np.ones((3, 1))
    g = cr.grad(lambda x: np.sum(np.broadcast_arrays(x, c)[0] * 2.0))(x)
    np.testing.assert_array_equal(g, [6.0, 6.0])
    g = cr.grad(lambda x: np.sum(np.prod(np.stack(np.broadcast_arrays(x, x[:, None])),
                                         axis=0)))(x)
    # sum_ij x_j x_i = (sum x)^2
    np.testing.assert_allclose(g, 2 * np.sum(x) * np.ones(2))


def test_atleast_several_arrays():
    x = np.array(2.0)
    y = np.array([1.0, 3.0])
    gx, gy = cr.grad(lambda x, y: np.sum(np.atleast_2d(x, y)[0] * np.atleast_2d(x, y)[1]),
                     argnums=(0, 1))(x, y)
    assert gx == pytest.approx(4.0)
    np.testing.assert_array_equal(gy, [2.0, 2.0])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad_modes_match_finite_differences(mode):
    x = np.random.default_rng(1).normal(size=(2, 3))
    kw = {"constant_values": 2.0} if mode == "constant" else {}
    check_rrule(np.pad, x, ((1, 2), (4, 0)), mode, **kw)
    check_hvp(lambda x: np.pad(x, ((1, 2), (4, 0)), mode, **kw) ** 2, x)


def test_pad_edge_accumulates_into_border():
    x = np.array([1.0, 2.0, 3.0])
    g = cr.grad(lambda x: np.sum(np.pad(x, (2, 1), mode="edge")))(x)
    np.testing.assert_array_equal(g, [3.0, 1.0, 2.0])
    g = cr.grad(lambda x: np.sum(np.pad(x, 2, mode="reflect")))(x)
    # reflect: [3, 2, | 1, 2, 3 | 2, 1]
    np.testing.assert_array_equal(g, [2.0, 3.0, 2.0])


def test_pad_constant_values_do_not_enter_the_tangent():
    x = np.array([1.0, 2.0])
    _, t = cr.jvp(lambda x: np.pad(x, 1, constant_values=5.0), (x,), (np.ones(2),))
    np.testing.assert_array_equal(t, [0.0, 1.0, 1.0, 0.0])


def test_pad_every_mode_and_unsupported_options():
    x = np.array([1.0, 3.0, 2.0])
    # maximum: the edge cells copy the maximum (3.0 at index 1): 1 + 2 pads
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(np.pad(x, 1, mode="maximum")))(x),
                                  [1, 3, 1])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.pad(x, (2, 0), mode="mean")))(x),
                               [1 + 2 / 3] * 3)
    with pytest.raises(cr.MissingRuleError, match="mode='empty'"):
        cr.grad(lambda x: np.sum(np.pad(x, 1, mode="empty")))(np.ones(3))
    with pytest.raises(cr.MissingRuleError, match="reflect_type"):
        cr.grad(lambda x: np.sum(np.pad(x, 1, mode="reflect", reflect_type="odd")))(
            np.ones(3))


def test_traced_static_arguments_raise():
    x = np.ones((2, 2))
    # a traced scalar constant_values is differentiated (12 border entries)
    np.testing.assert_array_equal(
        cr.grad(lambda x: np.sum(np.pad(x, 1, constant_values=x[0, 0])))(x),
        [[13.0, 1.0], [1.0, 1.0]])
    # a traced (before, after) pair: 6 border entries each (corners go to
    # the last axis padded, as in NumPy)
    np.testing.assert_array_equal(
        cr.grad(lambda x: np.sum(np.pad(x, 1, constant_values=x[0])))(x),
        [[7.0, 7.0], [1.0, 1.0]])
    with pytest.raises(cr.MissingRuleError, match="stop_gradient"):
        cr.grad(lambda x: np.sum(np.reshape(x, x[0])))(x)
    with pytest.raises(cr.MissingRuleError, match="first argument"):
        cr.grad(lambda x: np.sum(np.tile(x, x)))(x)


def test_ravel_order_k_follows_layout():
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    g = cr.grad(lambda x: np.sum(np.ravel(x, order="K") * np.arange(6.0)))(x)
    np.testing.assert_array_equal(g, np.reshape(np.arange(6.0), (2, 3), order="F"))
    y = np.arange(24.0).reshape(4, 6)[::2, ::3]  # neither C nor F contiguous
    with pytest.raises(cr.MissingRuleError, match="order="):
        cr.grad(lambda y: np.sum(np.ravel(y, order="K")))(y)


def test_repeat_with_array_repeats_and_tile():
    x = np.array([1.0, 2.0, 3.0])
    g = cr.grad(lambda x: np.sum(np.repeat(x, [2, 0, 3]) ** 2))(x)
    np.testing.assert_array_equal(g, [4.0, 0.0, 18.0])
    g = cr.grad(lambda x: np.sum(np.tile(x, (2, 2))))(x)
    np.testing.assert_array_equal(g, [4.0, 4.0, 4.0])


@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "size 1"])
def test_repeat_along_an_axis_of_a_0d_or_size_1_array(shape):
    # NumPy repeats a 0-d array along axis 0 or -1 as an array of one element
    x = np.full(shape, 0.7)
    for f in (lambda x: np.repeat(x, 3, axis=0), lambda x: np.repeat(x, [3], axis=-1),
              lambda x: x.repeat(3, axis=0), lambda x: np.repeat(x, 3)):
        assert np.shape(f(x)) == (3,)
        np.testing.assert_array_equal(np.reshape(cr.jacobian(f)(x), 3), np.ones(3))
        # sum of three cubes: 9 x^2, Hessian 18 x
        h = cr.hessian(lambda x, f=f: np.sum(f(x) ** 3))(x)
        np.testing.assert_allclose(h, np.reshape(18 * 0.7, shape + shape), rtol=1e-15)
    assert check_hvp(np.repeat, x, 2, axis=-1)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)], ids=["0-d", "size 1", "1 x 1"])
def test_scatter_add_of_a_broadcast_value(shape):
    # out[index] += g with g broadcast to out[index]: the cotangent of g sums
    from chainrules.rules.shape import scatter_add

    g = np.full(shape, 0.7)
    idx = (np.array([0, 2, 0, 1, 2]),)
    counts = np.array([2.0, 1.0, 2.0])
    for out_shape, want in (((3,), counts), ((3, 2), np.repeat(counts, 2))):
        if len(shape) > len(out_shape):
            continue
        f = (lambda g, s=out_shape: scatter_add(g, idx, s))
        np.testing.assert_allclose(f(g), 0.7 * np.reshape(want, out_shape))
        jac = cr.jacobian(f)(g)
        np.testing.assert_array_equal(np.reshape(jac, want.shape), want)
        h = cr.hessian(lambda g, f=f: np.sum(f(g) ** 2))(g)
        np.testing.assert_allclose(h, np.reshape(2 * np.sum(want ** 2), shape + shape))
    # a basic index writes g once per position
    jac = cr.jacobian(lambda g: scatter_add(g, (slice(1, 3),), (4,)))(g)
    np.testing.assert_array_equal(np.reshape(jac, 4), [0.0, 1.0, 1.0, 0.0])
    assert check_hvp(scatter_add, g, idx, (3, 2))


def test_diag_family_values():
    v = np.array([1.0, 2.0])
    m = np.arange(9.0).reshape(3, 3)
    g = cr.grad(lambda m: np.sum(np.diag(m, 1) * v))(m)
    np.testing.assert_array_equal(g, [[0, 1, 0], [0, 0, 2], [0, 0, 0]])
    g = cr.grad(lambda v: np.sum(np.diagflat(v, -1) * np.ones((3, 3))))(v)
    np.testing.assert_array_equal(g, [1.0, 1.0])
    g = cr.grad(lambda m: np.sum(np.triu(m, 1)))(m)
    np.testing.assert_array_equal(g, np.triu(np.ones((3, 3)), 1))
    # tril of a 1-D array broadcasts it to a square matrix
    g = cr.grad(lambda v: np.sum(np.tril(v)))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [3.0, 2.0, 1.0])


def test_shape_ops_nested_second_order():
    x = np.random.default_rng(2).normal(size=(2, 3))

    def f(x):
        y = np.concatenate([np.moveaxis(x, 0, 1), np.roll(np.flip(x.T, 0), 1, 0)], axis=1)
        z = np.pad(np.rot90(y), 1, mode="edge")
        return np.sum(np.tile(z, 2) ** 3) + np.sum(np.diagonal(np.swapaxes(z, 0, 1)) ** 2)

    check_rrule(f, x)
    v = np.random.default_rng(3).normal(size=(2, 3))
    fast = cr.hvp(f, x, v)
    # nested differentiation of the pullbacks gives the same HVP
    _, slow = cr.jvp(cr.grad(f), (x,), (v,))
    np.testing.assert_allclose(fast, slow, rtol=1e-10)


_X = np.random.default_rng(4).normal(size=(3, 4))
_C = np.arange(4)
_NESTED = {
    "concatenate-mixed": lambda x: np.concatenate([x ** 2, _C[None], x[:1] ** 3], axis=0),
    "stack-twice": lambda x: np.stack([x, x ** 2, x], axis=-1),
    "column_stack": lambda x: np.column_stack([x[0] ** 2, _C, x.T]),
    "append": lambda x: np.append(x ** 2, x[0] ** 3),
    "split-partial": lambda x: np.array_split(x ** 3, 3, axis=1)[1],
    "broadcast_arrays": lambda x: np.broadcast_arrays(x[:1] ** 2, x[:, :1] ** 3)[1],
    "atleast_3d": lambda x: np.atleast_3d(x[0] ** 2, x ** 3)[1],
    "repeat-array": lambda x: np.repeat(x ** 2, [2, 0, 1], axis=0),
    "tile": lambda x: np.tile(x ** 2, (2, 1, 2)),
    "pad-reflect": lambda x: np.pad(x ** 2, ((2, 1), (3, 3)), mode="reflect"),
    "pad-constant": lambda x: np.pad(x ** 2, 1, constant_values=2.0),
    "diag": lambda x: np.diag(np.diag(x ** 2, 1), -1),
    "diagonal": lambda x: np.diagonal(x[None] ** 2, 0, 2, 1),
    "diagflat": lambda x: np.diagflat(x[:2, :2] ** 2),
    "astype": lambda x: (x ** 2).astype(np.float32) * np.float32(2),
    "roll-flip": lambda x: np.roll(np.flip(x ** 2), (1, -1), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(_NESTED))
def test_fast_hvp_matches_nested_differentiation(name):
    fn = _NESTED[name]

    def f(x):
        return np.sum(np.sin(fn(x)))

    v = np.random.default_rng(5).normal(size=_X.shape)
    fast = cr.hvp(f, _X, v)
    _, nested = cr.jvp(cr.grad(f), (_X,), (v,))
    rtol = 1e-5 if name == "astype" else 1e-10
    np.testing.assert_allclose(fast, nested, rtol=rtol, atol=1e-12)


# -- batches of directions (Jacobians, Hessians) ------------------------------------
@pytest.mark.parametrize("f", [
    lambda x: np.concatenate([x[:2], np.ones(3), x * 2.0, x[:0]]),
    lambda x: np.concatenate(np.reshape(x, (2, 3)), axis=None),          # rows of one array
    lambda x: np.stack(np.reshape(x, (2, 3)), axis=1),
    lambda x: np.stack([x, np.cos(x), x ** 2], axis=-1),
    lambda x: np.hstack([x[0], x[1:], 3.0]),                             # a 0-d piece
    lambda x: np.vstack([x, x[::-1]]),
    lambda x: np.dstack([np.reshape(x, (2, 3)), np.ones((2, 3))]),
    lambda x: np.column_stack([x, x ** 2]),
    lambda x: np.append(x, np.ones((2,)) * x[0]),
    lambda x: np.concatenate([x.astype(np.float32), x[:2]]),            # mixed dtypes
    lambda x: np.split(x, [1, 1, 4])[1] + 0.0,                          # an empty piece
    lambda x: np.concatenate(np.array_split(x * x, 4)[::-1]),
    lambda x: np.concatenate([np.hsplit(x, 3)[2], np.vsplit(np.reshape(x, (2, 3)), 2)[0][0]]),
    lambda x: np.broadcast_arrays(x[:3], np.reshape(x[3:], (3, 1)))[1] * 2.0,
    lambda x: np.atleast_3d(x[:2], x[2])[1],
])
def test_joins_and_splits_batched_equal_one_direction(f):
    x = np.linspace(-1.0, 1.5, 6)
    for mode in ("forward", "reverse"):
        J = cr.jacobian(f, mode=mode)(x)
        J1 = cr.jacobian(f, mode=mode, chunk_size=1)(x)
        np.testing.assert_allclose(J, J1, rtol=1e-6, atol=1e-7)
    h = lambda x: np.sum(np.sin(f(x)) * np.arange(1.0, np.size(f(x)) + 1.0).reshape(np.shape(f(x))))
    np.testing.assert_allclose(cr.hessian(h)(x), cr.hessian(h, chunk_size=1)(x),
                               rtol=1e-6, atol=1e-7)


def test_concatenate_jacobian_values():
    x = np.array([1.0, 2.0, 3.0])
    J = cr.jacobian(lambda x: np.concatenate([x ** 2, np.zeros(1), x[:1]]))(x)
    ref = np.zeros((5, 3))
    ref[:3] = np.diag(2 * x)
    ref[4, 0] = 1.0
    np.testing.assert_array_equal(J, ref)
    # a stack of rows of one traced array: batched pullback stacks after the batch axis
    H = cr.hessian(lambda x: np.sum(np.stack(np.reshape(x, (3, 1)), axis=1) ** 3))(x)
    np.testing.assert_allclose(H, np.diag(6 * x), rtol=1e-14)
