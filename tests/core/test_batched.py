"""Sweeps carrying many directions at once (a leading batch axis): the
Jacobians, Hessians and Hessian operators built on them give what one
direction at a time gives, for rules with batched methods and for rules
without (user rules), in every chunk size; bad batches get typed errors."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.errors import TangentShapeError
from chainrules.graph import Tape
from chainrules.sweep_batch import batched_rule
from chainrules.tangents import ZERO
from chainrules.tracing import Traced

RNG = np.random.default_rng(11)
A = RNG.standard_normal((6, 6)) / 3
B = RNG.standard_normal((7, 4)) / 2


def loss(x):
    return np.sum(np.tanh(A @ x) ** 2) + np.sum(np.log1p(x ** 2))


def residuals(th):
    return np.exp(-(B @ th)) * np.sin(np.arange(7.0)) + (B @ np.tanh(th)) ** 2 - 1.0


# a user rule with neither batched methods nor a pushforward of its own
@cr.primitive
def cube(x):
    return x ** 3


class CubeRule(cr.ReverseRule):
    def __init__(self, x_id, x):
        self.x_id, self.x = x_id, x

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, 3 * self.x ** 2 * g)]

    def pullback_with_tangents(self, g, gd, tangents):
        return [(self.x_id, 3 * self.x ** 2 * g,
                 3 * self.x ** 2 * gd + 6 * self.x * g * tangents[0])]


@cr.register(cube)
def _(ids, x):
    return cube(x), CubeRule(ids[0], x)


# and one written as an rrule closure
@cr.primitive
def softplus(x):
    return np.log1p(np.exp(x))


@cr.rrule(softplus)
def _(x):
    y = softplus(x)

    def softplus_pullback(g):
        return (g / (1 + np.exp(-x)),)
    return y, softplus_pullback


def with_user_rules(x):
    return np.sum(cube(A @ x) * softplus(x)) + np.sum(np.sin(x) * x[::-1])


def exact_jacobian(f, x):
    """Column by column, one forward sweep per direction (chunk_size=1)."""
    return cr.jacobian(f, mode="forward", chunk_size=1)(x)


@pytest.mark.parametrize("chunk", [None, 1, 2, 5])
def test_hessian_every_chunk_size(chunk):
    x = RNG.standard_normal(6)
    H = cr.hessian(loss, chunk_size=chunk)(x)
    ref = cr.jacobian(cr.grad(loss), chunk_size=1)(x)
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_jacobian_every_mode_and_chunk_size(mode, chunk):
    th = RNG.standard_normal(4)
    J = cr.jacobian(residuals, mode=mode, chunk_size=chunk)(th)
    # by hand: d/dth of exp(-B th) s + (B tanh th)^2
    s = np.sin(np.arange(7.0))
    e = np.exp(-(B @ th))
    u = B @ np.tanh(th)
    ref = -(e * s)[:, None] * B + 2 * u[:, None] * B * (1 - np.tanh(th) ** 2)[None, :]
    np.testing.assert_allclose(J, ref, rtol=1e-12, atol=1e-13)


def test_user_rules_without_batched_methods_are_right():
    x = RNG.standard_normal(6)
    tape = Tape()
    xt = Traced(x, tape.leaf(x), tape)
    with_user_rules(xt)
    kinds = {type(r).__name__: batched_rule(r) for r in tape.rules if r is not None}
    assert kinds["CubeRule"] is False and kinds["ClosureRule"] is False
    H = cr.hessian(with_user_rules)(x)
    ref = cr.hessian(with_user_rules, chunk_size=1)(x)
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-12)
    J = cr.jacobian(cr.grad(with_user_rules))(x)
    np.testing.assert_allclose(H, J, rtol=1e-10, atol=1e-10)
    Jr = cr.jacobian(lambda x: cube(A @ x) * softplus(x), mode="reverse")(x)
    Jf = exact_jacobian(lambda x: cube(A @ x) * softplus(x), x)
    np.testing.assert_allclose(Jr, Jf, rtol=1e-12, atol=1e-12)


def test_batched_sweep_equals_one_direction_at_a_time():
    x = RNG.standard_normal(6)
    tape = Tape()
    xt = Traced(x, tape.leaf(x), tape)
    out = with_user_rules(xt)
    V = RNG.standard_normal((3, 6))
    tans = tape.forward({0: V}, batch=3)
    _, hv = tape.backward_with_tangents([out.node], [np.ones(())], [ZERO], tans,
                                        leaf_cotangents=False, batch=3)
    for j in range(3):
        t1 = tape.forward({0: V[j]})
        _, h1 = tape.backward_with_tangents([out.node], [np.ones(())], [ZERO], t1,
                                            leaf_cotangents=False)
        np.testing.assert_allclose(hv.get(0)[j], h1.get(0), rtol=1e-12, atol=1e-13)
    W = RNG.standard_normal((4,))
    g = tape.backward([out.node], [W], retain_graph=True, batch=4)
    for j in range(4):
        g1 = tape.backward([out.node], [W[j]], retain_graph=True)
        np.testing.assert_allclose(g.get(0)[j], g1.get(0), rtol=1e-12, atol=1e-13)


def test_structural_zeros_per_batch():
    # the output ignores y: its block is zeros, and x's is right
    f = lambda x, y: np.sin(x) * 2.0
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    Jx, Jy = cr.jacobian(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(Jx, np.diag(2 * np.cos(x)), rtol=1e-14)
    assert Jy.shape == (3, 2) and not Jy.any()
    H = cr.hessian(lambda x, y: np.sum(x ** 3), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(H[0][0], np.diag(6 * x), rtol=1e-14)
    assert not H[0][1].any() and not H[1][1].any()


def test_complex_jacobians_batched():
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    J = cr.jacobian(lambda z: z ** 2 * np.exp(z), holomorphic=True)(z)
    np.testing.assert_allclose(J, np.diag(2 * z * np.exp(z) + z ** 2 * np.exp(z)),
                               rtol=1e-13)
    x = RNG.standard_normal(3)
    Jr = cr.jacobian(lambda x: np.exp(1j * x) * x, mode="reverse")(x)
    np.testing.assert_allclose(Jr, np.diag(1j * np.exp(1j * x) * x + np.exp(1j * x)),
                               rtol=1e-13)


def test_float32_and_scalar_inputs():
    x = RNG.standard_normal(4).astype(np.float32)
    H = cr.hessian(lambda x: np.sum(x ** 3))(x)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, np.diag(6 * x), rtol=1e-6)
    assert cr.hessian(lambda s: s ** 4)(2.0) == pytest.approx(48.0)
    J = cr.jacobian(lambda s: np.stack([s, s ** 2]) * np.ones(2))(np.float64(3.0))
    np.testing.assert_allclose(J, [1.0, 6.0])
    assert cr.jacobian(np.sin)(np.zeros(0)).shape == (0, 0)


def test_hessian_operator_matmat_is_one_batch():
    x = RNG.uniform(0.5, 1.5, 30)

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    op = cr.hessian_operator(rosen, x)
    V = RNG.standard_normal((30, 5))
    M = op.matmat(V)
    np.testing.assert_allclose(M, np.stack([op.matvec(V[:, j]) for j in range(5)], axis=1),
                               rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(op @ V, M)
    assert op.matmat(np.zeros((30, 0))).shape == (30, 0)


def test_linearize_many_and_linearize_grad_many_with_pytrees():
    p = {"a": RNG.standard_normal(3), "b": RNG.standard_normal(2)}

    def f(p):
        return np.sum(p["a"] ** 2 * p["b"][0]) + np.sum(np.tanh(p["b"]))

    g, hvp_fn = cr.linearize_grad(f, p)
    V = {"a": RNG.standard_normal((4, 3)), "b": RNG.standard_normal((4, 2))}
    many = hvp_fn.many(V)
    for j in range(4):
        one = hvp_fn({"a": V["a"][j], "b": V["b"][j]})
        np.testing.assert_allclose(many["a"][j], one["a"], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(many["b"][j], one["b"], rtol=1e-13, atol=1e-14)
    out, f_jvp = cr.linearize(lambda x, y: np.sin(x) * y, p["a"], 2.0)
    T = RNG.standard_normal((5, 3))
    J = f_jvp.many(T, np.zeros(5))
    np.testing.assert_allclose(J, T * 2.0 * np.cos(p["a"]), rtol=1e-13)


def test_bad_batches_are_typed_errors():
    g, hvp_fn = cr.linearize_grad(loss, RNG.standard_normal(6))
    with pytest.raises(TangentShapeError, match="leading axis of directions"):
        hvp_fn.many(np.ones(6))            # one direction, no batch axis
    with pytest.raises(TangentShapeError, match="leading axis"):
        hvp_fn.many(np.ones((2, 5)))
    out, f_jvp = cr.linearize(lambda x, y: x * y, np.ones(2), np.ones(2))
    with pytest.raises(TangentShapeError, match="same number"):
        f_jvp.many(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="chunk_size"):
        cr.hessian(loss, chunk_size=0)(np.ones(6))


def test_a_wrong_rule_in_a_batch_is_named():
    @cr.primitive
    def bad(x):
        return 2 * x

    class BadRule(cr.ReverseRule):
        def __init__(self, x_id):
            self.x_id = x_id

        def inputs(self):
            return (self.x_id,)

        def pullback(self, g):
            return [(self.x_id, np.sum(g) * np.ones(1))]   # wrong shape

    @cr.register(bad)
    def _(ids, x):
        return bad(x), BadRule(ids[0])

    with pytest.raises(cr.TangentShapeError, match="BadRule|bad"):
        cr.jacobian(lambda x: bad(x) * 1.0, mode="reverse")(np.ones(3))


def test_vjp_many_is_a_batch_of_pullbacks():
    x, y = RNG.standard_normal(4), RNG.standard_normal(3)
    out, f_vjp = cr.vjp(lambda x, y: np.tanh(A[:3, :4] @ x) * y, x, y)
    W = RNG.standard_normal((5, 3))
    gx, gy = f_vjp.many(W)
    assert gx.shape == (5, 4) and gy.shape == (5, 3)
    for j in range(5):
        ex, ey = f_vjp(W[j])
        np.testing.assert_allclose(gx[j], ex, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(gy[j], ey, rtol=1e-13, atol=1e-14)
    # an argument the output does not depend on: zeros per direction
    out, f_vjp = cr.vjp(lambda x, y: np.sin(x), x, y)
    gx, gy = f_vjp.many(W[:, :1] * np.ones((5, 4)))
    assert gy.shape == (5, 3) and not gy.any()
    with pytest.raises(TangentShapeError, match="leading axis"):
        f_vjp.many(np.ones(4))


def test_batched_sweeps_inside_grad():
    # a Jacobian and a Hessian inside grad: the batches are traced values of
    # the outer tape (basic indexing's batched transpose of a traced batch)
    x0 = RNG.standard_normal(4)

    def inner(a, chunk):
        J = cr.jacobian(lambda x: np.tanh(A[:4, :4] @ (x * a)) * np.sum(x ** 2) + x[1:3].sum() * a,
                        mode="reverse", chunk_size=chunk)(x0)
        H = cr.hessian(lambda x: np.sum(a * x ** 3) + np.sum(x[1:] * x[:-1] * a[0]),
                       chunk_size=chunk)(x0)
        return np.sum(J ** 2) + np.sum(H * H)

    a0 = RNG.standard_normal(4)
    g = cr.grad(lambda a: inner(a, None))(a0)
    g1 = cr.grad(lambda a: inner(a, 1))(a0)
    np.testing.assert_allclose(g, g1, rtol=1e-12, atol=1e-12)
    h = 1e-6
    fd = np.array([(inner(a0 + h * e, None) - inner(a0 - h * e, None)) / (2 * h)
                   for e in np.eye(4)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_batches_on_dask_stay_lazy():
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.linspace(0.1, 1.0, 8), chunks=4)
    out, f_jvp = cr.linearize(lambda x: np.sin(x) * x + np.sum(x ** 2), x)
    T = da.from_array(np.eye(8)[:3], chunks=(3, 4))
    J = f_jvp.many(T)
    assert isinstance(J, da.Array)          # nothing computed while differentiating
    ref = np.stack([np.asarray(f_jvp(np.eye(8)[j])) for j in range(3)])
    np.testing.assert_allclose(np.asarray(J), ref, rtol=1e-13)
    g, hvp_fn = cr.linearize_grad(lambda x: np.sum(np.sin(x) * x), x)
    H = hvp_fn.many(T)
    assert isinstance(H, da.Array)
    xs = np.linspace(0.1, 1.0, 8)
    hdiag = 2 * np.cos(xs) - xs * np.sin(xs)   # d2/dx2 of x sin x
    np.testing.assert_allclose(np.asarray(H), np.eye(8)[:3] * hdiag, rtol=1e-12, atol=1e-14)


def test_linalg_and_join_rules_take_batches():
    # solve, slogdet, concatenate, stack and split take the batch themselves,
    # and the Hessian through them equals one direction at a time
    M = A @ A.T + 6 * np.eye(6)

    def f(x):
        y = np.linalg.solve(M + np.diag(x ** 2), np.concatenate([x[:3], np.ones(3)]))
        parts = np.split(np.stack([y, x], axis=1), 2)
        return np.sum(parts[0] ** 2) + np.linalg.slogdet(M + np.outer(x, y))[1]

    x = RNG.standard_normal(6)
    tape = Tape()
    f(Traced(x, tape.leaf(x), tape))
    kinds = {type(r).__name__: batched_rule(r) for r in tape.rules if r is not None}
    assert kinds["LinalgRule"] and kinds["JoinRule"] and kinds["SplitRule"]
    for chunk in (None, 2):
        np.testing.assert_allclose(cr.hessian(f, chunk_size=chunk)(x),
                                   cr.hessian(f, chunk_size=1)(x), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(cr.jacobian(cr.grad(f))(x), cr.hessian(f)(x), rtol=1e-9,
                               atol=1e-10)


# a rule of three arguments from its partials (derived_nary.NaryScalarRule)
@cr.primitive
def triple(a, b, x):
    return a * np.sin(b) * x ** 2


cr.scalar_rule(
    triple,
    lambda a, b, x, z: np.sin(b) * x ** 2,
    lambda a, b, x, z: a * np.cos(b) * x ** 2,
    lambda a, b, x, z: 2 * a * np.sin(b) * x,
    second=(0.0,
            lambda a, b, x, z: np.cos(b) * x ** 2,
            lambda a, b, x, z: 2 * np.sin(b) * x,
            lambda a, b, x, z: -a * np.sin(b) * x ** 2,
            lambda a, b, x, z: 2 * a * np.cos(b) * x,
            lambda a, b, x, z: 2 * a * np.sin(b)))


def test_nary_scalar_rule_takes_batches_with_broadcasting():
    # a of shape (3, 1), b of shape (), x of shape (4,): z is (3, 4)
    a, b, x = RNG.standard_normal((3, 1)), np.array(0.7), RNG.standard_normal(4)
    f = lambda a, b, x: np.sum(np.tanh(triple(a, b, x)))
    for argnums in ((0, 1, 2), (2,), (0,)):
        H = cr.hessian(f, argnums=argnums)(a, b, x)
        H1 = cr.hessian(f, argnums=argnums, chunk_size=1)(a, b, x)
        for hr, h1r in zip(H, H1):
            for h, h1 in zip(hr, h1r):
                np.testing.assert_allclose(h, h1, rtol=1e-12, atol=1e-13)
    g = lambda a, b, x: triple(a, b, x)
    for mode in ("forward", "reverse"):
        J = cr.jacobian(g, argnums=(0, 1, 2), mode=mode)(a, b, x)
        J1 = cr.jacobian(g, argnums=(0, 1, 2), mode=mode, chunk_size=1)(a, b, x)
        for j, j1 in zip(J, J1):
            np.testing.assert_allclose(j, j1, rtol=1e-12, atol=1e-13)
    # dz/dx by hand: diagonal in x's axis, broadcast over a's rows
    Jx = cr.jacobian(g, argnums=2)(a, b, x)
    ref = (2 * a * np.sin(b) * x)[:, :, None] * np.eye(4)[None, :, :]
    np.testing.assert_allclose(Jx, ref, rtol=1e-13)


@pytest.mark.parametrize("f", [
    lambda x: np.average(x, axis=0, weights=np.arange(1.0, 13.0).reshape(4, 3),
                         returned=True)[0],
    lambda x: np.average(x * x, axis=0, weights=x + 3, returned=True)[1],   # two traced
    lambda x: np.var(x, axis=1, ddof=1),
    lambda x: np.prod(x, axis=0),
    lambda x: np.cumprod(x, axis=1),
    lambda x: np.max(x, axis=1) + np.nansum(x, axis=0)[:1],                  # selections
    lambda x: np.nan_to_num(x.astype(complex) * np.array([np.nan, 1j, 1.0])),  # parts masks
])
def test_composed_and_weighted_rules_take_batches(f):
    x = np.linspace(-1.3, 1.7, 12).reshape(4, 3)
    for mode in ("forward", "reverse"):
        J = cr.jacobian(f, mode=mode)(x)
        J1 = cr.jacobian(f, mode=mode, chunk_size=1)(x)
        np.testing.assert_allclose(J, J1, rtol=1e-12, atol=1e-13)
    h = lambda x: np.sum(np.real(np.sin(f(x))))
    np.testing.assert_allclose(cr.hessian(h)(x), cr.hessian(h, chunk_size=1)(x), rtol=1e-12,
                               atol=1e-13)


def test_composed_rule_batches_inside_grad():
    # var and prod take traced batches (a Jacobian and a Hessian inside grad)
    X = np.linspace(-1.0, 1.2, 12).reshape(4, 3)

    def inner(a):
        H = cr.hessian(lambda x: np.var(x * a, axis=0).sum() + np.prod(x[:, 0] + a[0]))(X)
        J = cr.jacobian(lambda x: np.var(x * a, axis=1), mode="reverse")(X)
        return np.sum(H ** 2) + np.sum(J ** 2)

    a0 = np.array([0.7, -1.1, 0.4])
    g = cr.grad(inner)(a0)
    h = 1e-6
    fd = np.array([(inner(a0 + h * e) - inner(a0 - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
