"""The engine under misuse: every case here once returned a plausible wrong
number; each must now be right or raise a typed error."""

import numpy as np
import pytest

import chainrules as cr

F = lambda x: np.sum(np.sin(x) ** 3)  # noqa: E731


def _fd_hvp(f, x, v, eps=1e-6):
    g = cr.grad(f)
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


# -- complex tangents of real primals ---------------------------------------------
@pytest.mark.parametrize("entry", ["hvp", "grad_and_hvp", "linearize_grad", "operator",
                                   "jvp", "linearize", "hessp"])
def test_complex_tangent_for_real_primal_raises(entry):
    f = lambda x: np.sum(np.sin(x))  # noqa: E731
    x, v = np.array([0.3, 1.0]), np.array([1j, 1j])
    with pytest.raises(cr.TangentShapeError, match="complex"):
        if entry == "hvp":
            cr.hvp(f, x, v)
        elif entry == "grad_and_hvp":
            cr.grad_and_hvp(f, x, v)
        elif entry == "linearize_grad":
            cr.linearize_grad(f, x)[1](v)
        elif entry == "operator":
            cr.hessian_operator(f, x).matvec(v)
        elif entry == "jvp":
            cr.jvp(f, (x,), (v,))
        elif entry == "linearize":
            cr.linearize(f, x)[1](v)
        else:
            cr.hessp(f)(x, v)


def test_complex_cotangent_for_real_output_raises():
    out, pb = cr.vjp(np.sin, np.array([0.3, 1.0]))
    with pytest.raises(cr.TangentShapeError, match="complex"):
        pb(np.array([1j, 1.0]))


def test_real_tangent_of_complex_primal_is_accepted():
    z = np.array([1.0 + 2.0j])
    _, t = cr.jvp(lambda z: z * z, (z,), (np.array([1.0]),))
    np.testing.assert_allclose(t, 2 * z)


# -- stop_gradient is a copy --------------------------------------------------------
def test_stop_gradient_is_a_copy_that_cannot_reach_the_caller():
    x = np.array([1.0, 2.0])

    def f(x):
        c = cr.stop_gradient(x)
        c[0] = 100.0
        return np.sum(x * c)

    g = cr.grad(f)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(g, [100.0, 2.0])
    y = np.array([3.0])
    c = cr.stop_gradient(y)
    c[0] = 0.0
    assert y[0] == 3.0
    tree = cr.stop_gradient({"a": y})
    tree["a"][0] = 5.0
    assert y[0] == 3.0


# -- recordings keep their own inputs -----------------------------------------------
def test_hessian_operator_is_unchanged_by_mutating_x():
    x = np.array([0.3, 1.0])
    f = lambda x: np.sum(x * x * x)  # noqa: E731  (the rules save x itself)
    H = cr.hessian_operator(f, x)
    expected = 6 * x * np.array([1.0, 2.0])
    x += 1
    np.testing.assert_allclose(H.matvec(np.array([1.0, 2.0])), expected)


def test_linearize_grad_and_vjp_are_unchanged_by_mutating_inputs():
    x = np.array([0.3, 1.0])
    f = lambda x: np.sum(x * x * x)  # noqa: E731
    g, hvp_fn = cr.linearize_grad(f, x)
    out, pb = cr.vjp(lambda x: x * x * x, x)
    x0 = x.copy()
    x += 1
    np.testing.assert_allclose(hvp_fn(np.ones(2)), 6 * x0)
    np.testing.assert_allclose(pb(np.ones(2))[0], 3 * x0 ** 2)
    np.testing.assert_allclose(g, 3 * x0 ** 2)


def test_no_result_aliases_a_caller_array():
    x = np.array([1.0, 2.0])
    t = np.array([0.5, 0.5])
    out, tout = cr.jvp(lambda x: x, (x,), (t,))
    out[0] = 9.0
    tout[0] = 9.0
    assert x[0] == 1.0 and t[0] == 0.5
    _, pb = cr.vjp(lambda x: x.reshape(2, 1), x)
    ct = np.ones((2, 1))
    (c,) = pb(ct)
    c[0] = 7.0
    assert ct[0, 0] == 1.0
    v, g = cr.value_and_grad(lambda x: x)(np.array(2.0))
    assert v == 2.0


# -- freed recordings raise ---------------------------------------------------------
def test_freed_hessian_operator_raises():
    H = cr.hessian_operator(F, np.array([0.3, 1.0]))
    H.matvec(np.ones(2))
    H.free()
    with pytest.raises(cr.GraphFreedError, match="freed"):
        H.matvec(np.ones(2))


def test_freed_linearize_grad_raises():
    _, hvp_fn = cr.linearize_grad(F, np.array([0.3, 1.0]))
    hvp_fn.free()
    with pytest.raises(cr.GraphFreedError):
        hvp_fn(np.ones(2))
    _, f_jvp = cr.linearize(np.sin, np.array([0.3, 1.0]))
    f_jvp.free()
    with pytest.raises(cr.GraphFreedError):
        f_jvp(np.ones(2))


def test_second_backward_without_retain_graph_raises():
    tape = cr.Tape()
    nid = tape.leaf(np.array([0.3, 1.0]))
    x = cr.Traced(np.array([0.3, 1.0]), nid, tape)
    y = np.sum(np.sin(x))
    tape.active = False
    g = tape.backward([y.node], [np.ones(())]).get(nid)
    np.testing.assert_allclose(g, np.cos([0.3, 1.0]))
    with pytest.raises(cr.GraphFreedError, match="retain_graph=True"):
        tape.backward([y.node], [np.ones(())])


def test_backward_with_retain_graph_can_repeat():
    tape = cr.Tape()
    nid = tape.leaf(np.array([0.3, 1.0]))
    y = np.sum(np.sin(cr.Traced(np.array([0.3, 1.0]), nid, tape)))
    tape.active = False
    a = tape.backward([y.node], [np.ones(())], retain_graph=True).get(nid)
    b = tape.backward([y.node], [np.ones(())]).get(nid)
    np.testing.assert_array_equal(a, b)


# -- one validation of rule outputs in every sweep ------------------------------------
@cr.primitive
def _bad_shape(x):
    return 2.0 * x


@cr.rrule(_bad_shape)
def _(x):
    def bad_shape_pullback(g):
        return (2.0 * np.sum(g),)   # wrong: a scalar for an array input
    return 2.0 * x, bad_shape_pullback


@cr.primitive
def _no_cot(x, y):
    return x * 3.0 + 0.0 * y


@cr.rrule(_no_cot)
def _(x, y):
    def no_cot_pullback(g):
        return 3.0 * g, None        # None: no cotangent for y (a zero)
    return x * 3.0 + 0.0 * y, no_cot_pullback


@pytest.mark.parametrize("entry", ["grad", "jvp", "hvp", "jacfwd", "jacrev"])
def test_wrong_shape_cotangent_raises_in_every_mode(entry):
    x = np.array([0.5, 1.5])
    f = lambda x: np.sum(np.sin(_bad_shape(x)))  # noqa: E731
    with pytest.raises(cr.TangentShapeError, match="_bad_shape"):
        if entry == "grad":
            cr.grad(f)(x)
        elif entry == "jvp":
            cr.jvp(_bad_shape, (x,), (np.ones(2),))
        elif entry == "hvp":
            cr.hvp(f, x, np.ones(2))
        elif entry == "jacfwd":
            cr.jacobian(_bad_shape, mode="forward")(x)
        else:
            cr.jacobian(_bad_shape, mode="reverse")(x)


def test_none_cotangent_is_a_zero_in_every_mode():
    x, y = np.array([0.5, 1.5]), np.array([2.0, 1.0])
    gx, gy = cr.grad(lambda x, y: np.sum(_no_cot(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])
    _, t = cr.jvp(_no_cot, (x, y), (np.ones(2), np.ones(2)))
    np.testing.assert_array_equal(t, [3.0, 3.0])


# -- a raising pullback names its rule -----------------------------------------------
class _Boom(Exception):
    pass


@cr.primitive
def _explodes(x):
    return x + 1.0


@cr.rrule(_explodes)
def _(x):
    def explodes_pullback(g):
        raise _Boom("user bug")
    return x + 1.0, explodes_pullback


@pytest.mark.parametrize("entry", ["grad", "jvp", "hvp"])
def test_raising_pullback_propagates_unchanged_with_a_note(entry):
    x = np.array([0.5])
    with pytest.raises(_Boom, match="user bug") as info:
        if entry == "grad":
            cr.grad(lambda x: np.sum(_explodes(x)))(x)
        elif entry == "jvp":
            cr.jvp(_explodes, (x,), (x,))
        else:
            cr.hvp(lambda x: np.sum(_explodes(x) ** 2), x, x)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "_explodes" in notes and "rule" in notes


# -- entry point arguments ---------------------------------------------------------
def test_vjp_has_aux_checks_for_a_pair():
    with pytest.raises(TypeError, match="pair"):
        cr.vjp(lambda x: x, np.ones(2), has_aux=True)
    out, pb, aux = cr.vjp(lambda x: (2 * x, "aux"), np.ones(2), has_aux=True)
    assert aux == "aux"
    np.testing.assert_array_equal(pb(np.ones(2))[0], [2.0, 2.0])


@pytest.mark.parametrize("make", [
    lambda: cr.grad(lambda x, y: x * y, argnums=3)(1.0, 2.0),
    lambda: cr.value_and_grad(lambda x: x, argnums=(0, 1))(1.0),
    lambda: cr.jacobian(lambda x: x, argnums=2)(np.ones(2)),
    lambda: cr.hessian(lambda x: x, argnums=-3)(1.0),
])
def test_argnums_out_of_range_is_a_value_error_naming_the_count(make):
    with pytest.raises(ValueError, match=r"argnums .* out of range.*positional argument"):
        make()


@pytest.mark.parametrize("f", [lambda x: x ** 3, lambda x: x ** 3 + np.sin(x),
                               lambda x: np.sum(x ** 3), lambda x: 3.0 * x,
                               lambda x: 2.0])
@pytest.mark.parametrize("x, kind", [(2.0, np.float64), (np.float64(2.0), np.float64),
                                     (np.float32(2.0), np.float32),
                                     (np.array(2.0), np.ndarray),
                                     (np.array(2.0, np.float32), np.ndarray)])
def test_zero_d_gradient_type_follows_the_input_whatever_f_computes(f, x, kind):
    g = cr.grad(f)(x)
    assert type(g) is kind
    assert g.dtype == np.result_type(x)


def test_stop_gradient_of_every_kind():
    assert cr.stop_gradient(1.5) == 1.5
    assert cr.stop_gradient(np.float32(2.0)).dtype == np.float32
    assert cr.stop_gradient([1.0, np.array([2.0])])[0] == 1.0
    assert cr.stop_gradient((3, "a")) == (3, "a")
    out = cr.grad(lambda x: x * cr.stop_gradient([x, 2.0])[0])(3.0)
    assert out == 3.0
