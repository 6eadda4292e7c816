"""Targeted tests of rules/indexing.py: the documented behaviour that the
generic sweep (tests/rules/test_sweep.py) does not pin down by value."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp
from chainrules.testing import check_hvp, check_rrule
from chainrules.tracing import getitem


def test_repeated_integer_indices_accumulate():
    x = np.arange(5.0)
    g = cr.grad(lambda x: np.sum(x[[0, 0, 3, 0]] * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [7.0, 0.0, 0.0, 3.0, 0.0])


def test_repeated_indices_in_mixed_advanced_index_accumulate():
    x = np.arange(12.0).reshape(3, 4)
    # rows [0, 0, 2] paired with columns [1, 1, 3]: element (0, 1) twice
    g = cr.grad(lambda x: np.sum(x[[0, 0, 2], [1, 1, 3]]))(x)
    expected = np.zeros((3, 4))
    expected[0, 1] = 2.0
    expected[2, 3] = 1.0
    np.testing.assert_array_equal(g, expected)


def test_advanced_indices_separated_by_a_slice():
    x = np.arange(24.0).reshape(2, 3, 4)
    w = np.arange(1.0, 7.0).reshape(2, 3)  # result shape (2, 3): advanced dims first
    g = cr.grad(lambda x: np.sum(x[[0, 1], :, [3, 3]] * w))(x)
    expected = np.zeros((2, 3, 4))
    expected[0, :, 3] = w[0]
    expected[1, :, 3] = w[1]
    np.testing.assert_array_equal(g, expected)


def test_boolean_mask_gradient():
    x = np.array([[1.0, -2.0], [3.0, -4.0]])
    mask = x > 0
    g = cr.grad(lambda x: np.sum(x[mask] ** 2))(x)
    np.testing.assert_array_equal(g, [[2.0, 0.0], [6.0, 0.0]])


def test_mask_computed_from_traced_value():
    # the comparison is non-differentiable and returns a plain mask
    g = cr.grad(lambda x: np.sum(x[x > 0] * 3.0))(np.array([1.0, -1.0, 2.0]))
    np.testing.assert_array_equal(g, [3.0, 0.0, 3.0])


def test_negative_steps_and_newaxis_and_ellipsis():
    x = np.arange(12.0).reshape(3, 4)
    w = np.arange(6.0).reshape(1, 3, 2)

    def f(x):
        return np.sum(x[None, ::-1, 3:0:-2] * w)

    g = cr.grad(f)(x)
    expected = np.zeros((3, 4))
    expected[::-1, 3:0:-2] = w[0]
    np.testing.assert_array_equal(g, expected)
    g2 = cr.grad(lambda x: np.sum(x[..., -1] * np.array([1.0, 2.0, 3.0])))(x)
    np.testing.assert_array_equal(g2[:, -1], [1.0, 2.0, 3.0])
    assert np.all(g2[:, :-1] == 0)


def test_getitem_of_0d_and_full_index():
    x = np.array(2.0)
    assert cr.grad(lambda x: x[()] ** 3)(x) == pytest.approx(12.0)
    assert cr.grad(lambda x: np.sum(x[...] * 2.0))(x) == pytest.approx(2.0)


def test_getitem_second_order():
    x = np.array([1.0, 2.0, 3.0])
    # f = x0^2 x2 + x0^3 ; d/dx0 = 2 x0 x2 + 3 x0^2
    f = lambda x: x[0] ** 2 * x[2] + x[[0, 0]][1] ** 3
    grad_x0 = lambda x: cr.grad(f)(x)[0]
    np.testing.assert_allclose(cr.grad(grad_x0)(x), [2 * 3.0 + 6 * 1.0, 0.0, 2 * 1.0])
    np.testing.assert_allclose(cr.hvp(f, x, np.array([1.0, 0.0, 0.0])), [12.0, 0.0, 2.0])


def test_take_with_modes_accumulates():
    x = np.arange(4.0)
    g = cr.grad(lambda x: np.sum(np.take(x, [5, -1, 1], mode="wrap")))(x)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 1.0])
    g = cr.grad(lambda x: np.sum(np.take(x, [9, -3, 0], mode="clip")))(x)
    np.testing.assert_array_equal(g, [2.0, 0.0, 0.0, 1.0])


def test_take_along_axis_gathers_rows():
    x = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, 1.5]])
    idx = np.argmax(x, axis=1)[:, None]
    g = cr.grad(lambda x: np.sum(np.take_along_axis(x, idx, axis=1)))(x)
    np.testing.assert_array_equal(g, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def test_sort_scatters_cotangent_through_permutation():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])  # weights of sorted positions
    g = cr.grad(lambda x: np.sum(np.sort(x) * w))(x)
    # sorted = [x1, x2, x0]
    np.testing.assert_array_equal(g, [30.0, 10.0, 20.0])


def test_sort_along_axis_and_flattened():
    x = np.array([[2.0, 1.0], [0.0, 5.0]])
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    g0 = cr.grad(lambda x: np.sum(np.sort(x, axis=0) * w))(x)
    np.testing.assert_array_equal(g0, [[3.0, 2.0], [1.0, 4.0]])
    gn = cr.grad(lambda x: np.sum(np.sort(x, axis=None) * np.arange(4.0)))(x)
    # sorted flat: 0.0 (x10), 1.0 (x01), 2.0 (x00), 5.0 (x11)
    np.testing.assert_array_equal(gn, [[2.0, 1.0], [0.0, 3.0]])


def test_sort_ties_follow_stable_order():
    x = np.array([1.0, 0.0, 1.0])
    w = np.array([5.0, 6.0, 7.0])
    g = cr.grad(lambda x: np.sum(np.sort(x) * w))(x)
    # sorted: x1, then the tied x0 (first) and x2 (second)
    np.testing.assert_array_equal(g, [6.0, 5.0, 7.0])


def test_select_routes_cotangent_to_first_true_condition():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([10.0, 20.0, 30.0])
    c1 = np.array([True, False, False])
    c2 = np.array([True, True, False])

    def f(a, b, d):
        return np.sum(np.select([c1, c2], [a, b], default=d) * np.array([1.0, 2.0, 3.0]))

    ga, gb, gd = cr.grad(f, argnums=(0, 1, 2))(a, b, np.float64(0.5))
    np.testing.assert_array_equal(ga, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(gb, [0.0, 2.0, 0.0])
    assert gd == pytest.approx(3.0)


def test_choose_with_traced_and_constant_choices():
    a = np.array([1.0, 2.0, 3.0])
    idx = np.array([0, 1, 0])
    g = cr.grad(lambda a: np.sum(np.choose(idx, [a, np.zeros(3)]) * a))(a)
    np.testing.assert_array_equal(g, [2.0, 0.0, 6.0])


def test_index_update_and_index_add():
    x = np.array([1.0, 2.0, 3.0])
    v = np.array([5.0, 7.0])

    def f(x, v):
        y = cnp.index_update(x, [0, 2], v)
        return np.sum(y * np.array([1.0, 10.0, 100.0]))

    gx, gv = cr.grad(f, argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [0.0, 10.0, 0.0])
    np.testing.assert_array_equal(gv, [1.0, 100.0])

    def h(x, v):
        return np.sum(cnp.index_add(x, [1, 1], v) ** 2)

    gx, gv = cr.grad(h, argnums=(0, 1))(x, v)
    y = x.copy()
    np.add.at(y, [1, 1], v)
    np.testing.assert_array_equal(gx, 2 * y)
    np.testing.assert_array_equal(gv, [2 * y[1], 2 * y[1]])


def test_index_update_plain_values_and_promotion():
    out = cnp.index_update(np.zeros(3, int), 1, 2.5)
    np.testing.assert_array_equal(out, [0.0, 2.5, 0.0])
    np.testing.assert_array_equal(cnp.index_add(np.zeros(3), [0, 0, 2], 1.0), [2.0, 0.0, 1.0])


def test_index_update_with_repeated_indices_keeps_numpys_winner():
    # NumPy keeps the last write at a repeated position: only it gets a cotangent
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(cnp.index_update(np.zeros(3), [1, 1], np.array([4.0, 5.0])),
                                  [0.0, 5.0, 0.0])
    g = cr.grad(lambda v: np.sum(w * cnp.index_update(np.zeros(3), [1, 1], v)))(np.ones(2))
    np.testing.assert_array_equal(g, [0.0, 2.0])


def test_index_update_checks_and_second_order():
    x = np.array([0.5, -1.0, 2.0])
    check_rrule(cnp.index_update, x, (slice(None, None, 2),), np.array([3.0, 4.0]))
    check_hvp(lambda x: cnp.index_update(x ** 2, 1, x[0] * x[2]) ** 2, x)


def test_in_place_write_and_add_at_are_recorded():
    def f(x):
        x[0] = 1.0
        return np.sum(x)

    def add_at(x):
        np.add.at(x, [0, 0], x[1])  # repeated positions accumulate (tests/core/test_writes_views.py)
        return np.sum(x * x)

    np.testing.assert_array_equal(cr.grad(f)(np.ones(3)), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(cr.grad(add_at)(np.ones(3)), [6.0, 14.0, 2.0])


def test_traced_methods_route_to_rules():
    x = np.arange(1.0, 13.0).reshape(3, 4)

    def f(x):
        parts = [x.take([0, 0], axis=1), x.repeat(2, axis=0)[::3], x.diagonal(1)[:, None],
                 x[:1].squeeze()[None, :1], x.flatten()[None, :1], x.ravel()[None, 1:2],
                 x.reshape(4, 3).T[:1, :1], x.transpose()[:1, :1], x.swapaxes(0, 1)[:1, :1],
                 x.T[None, 0, :1], x.mT[:1, :1]]
        return sum(np.sum(p ** 2) for p in parts)

    check_rrule(f, x)
    check_hvp(f, x)
    order = x.argsort(axis=1)
    assert not isinstance(order, cr.Traced)


def test_getitem_rrule_at_fixed_points():
    x = np.random.default_rng(0).normal(size=(3, 4))
    for idx in [(slice(None, None, -1), None, Ellipsis, 1), ([2, 2, 0],), (x > 0,),
                (np.array([[0, 1], [1, 1]]), np.array([3, 3])), (Ellipsis, [0, 0])]:
        check_rrule(getitem, x, idx)
        check_hvp(lambda x: getitem(x, idx) ** 3, x)


_X = np.random.default_rng(4).normal(size=(3, 4))
_NESTED = {
    "getitem-repeats": lambda x: x[[0, 0, 2], 1:] ** 3,
    "getitem-mask": lambda x: x[x > 0] ** 3,
    "take": lambda x: np.take(x, [1, 1, -1], axis=1) ** 3,
    "take_along_axis": lambda x: np.take_along_axis(x, np.array([[0, 0, 3]]), 1) ** 3,
    "sort": lambda x: np.sort(x ** 3, axis=0) * np.arange(4.0),
    "partition": lambda x: np.partition(x ** 3, 1, axis=None) * np.arange(12.0),
    "delete": lambda x: np.delete(x, [0, 0, 2], axis=1) ** 3,
    "select": lambda x: np.select([_X > 0, _X < -1], [x ** 3, x ** 2], default=x[0]),
    "choose": lambda x: np.choose(np.array([0, 1, 1, 0]), [x ** 3, x[0] ** 2]),
    "index_update": lambda x: cnp.index_update(x ** 2, (0, [1, 3]), x[1, :2] ** 3),
    "index_add": lambda x: cnp.index_add(x ** 2, ([0, 0], [1, 1]), x[2, :2] ** 3),
    "cnp.array": lambda x: cnp.array([[x[0, 0] ** 3, 1.0], [x[1, 1] * x[0, 0], x[2, 3]]]),
}


@pytest.mark.parametrize("name", sorted(_NESTED))
def test_fast_hvp_matches_nested_differentiation(name):
    fn = _NESTED[name]

    def f(x):
        return np.sum(np.sin(fn(x)))

    v = np.random.default_rng(5).normal(size=_X.shape)
    fast = cr.hvp(f, _X, v)
    _, nested = cr.jvp(cr.grad(f), (_X,), (v,))
    np.testing.assert_allclose(fast, nested, rtol=1e-10, atol=1e-12)
    check_hvp(f, _X)


@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "size 1"])
def test_take_along_an_axis_of_a_0d_or_size_1_array(shape):
    # NumPy takes from a 0-d array along axis 0 or -1 as from an array of one
    # element: every index (in range, wrapped or clipped) picks x
    x = np.full(shape, 0.7)
    for f in (lambda x: np.take(x, [0, 0, -1], axis=0),
              lambda x: np.take(x, [[3, -2, 0]], axis=-1, mode="clip"),
              lambda x: np.take(x, [5, 1, 0], axis=0, mode="wrap"),
              lambda x: x.take([0, 0, 0], axis=0)):
        np.testing.assert_array_equal(np.reshape(f(x), 3), np.full(3, 0.7))
        np.testing.assert_array_equal(np.reshape(cr.jacobian(f)(x), 3), np.ones(3))
        # sum of three cubes: Hessian 18 x
        h = cr.hessian(lambda x, f=f: np.sum(f(x) ** 3))(x)
        np.testing.assert_allclose(h, np.reshape(18 * 0.7, shape + shape), rtol=1e-15)
    # a scalar index gives x itself
    np.testing.assert_array_equal(cr.grad(lambda x: np.take(x, 0, axis=0))(x), np.ones(shape))
    assert check_hvp(np.take, x, np.array([0, 0]), 0, mode="clip")
