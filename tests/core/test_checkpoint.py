"""checkpoint and checkpoint_sequential: same derivatives, fewer saved values."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.checkpoint import CheckpointRule
from chainrules.graph import Tape
from chainrules.tracing import Traced

W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [0.0, 0.2, 0.9]])
C = np.array([1.0, -2.0, 0.5])
X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 2.0, -1.0])
POLICIES = ["nothing", "everything", "dots"]


def block(x):
    return np.tanh(x @ W) * np.exp(-x) + np.sin(x)


def loss_plain(x):
    return np.sum(block(block(x)) * C)


def make_loss(policy):
    cb = cr.checkpoint(block, policy=policy)

    def loss(x):
        return np.sum(cb(cb(x)) * C)
    return loss


def _same(a, b, exact):
    if exact:
        np.testing.assert_array_equal(a, b)
    else:  # fused regions of the plain tape: their own rounding, a few ulps
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15 * np.max(np.abs(b)))


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("policy", POLICIES)
def test_gradients_hvps_jvps_identical(policy, fused):
    # unfused, exactly the same arithmetic in the same order
    with cr.fusion(fused):
        loss = make_loss(policy)
        v1, g1 = cr.value_and_grad(loss_plain)(X)
        v2, g2 = cr.value_and_grad(loss)(X)
        assert v1 == v2
        _same(g1, g2, not fused)
        _same(cr.hvp(loss_plain, X, V), cr.hvp(loss, X, V), not fused)
        _same(cr.jvp(loss_plain, (X,), (V,))[1], cr.jvp(loss, (X,), (V,))[1], not fused)
        _same(cr.hessian(loss_plain)(X), cr.hessian(loss)(X), not fused)


@pytest.mark.parametrize("policy", POLICIES)
def test_grad_of_grad_through_checkpoint(policy):
    loss = make_loss(policy)
    gg_plain = cr.grad(lambda x: cr.grad(loss_plain)(x)[1])(X)
    gg = cr.grad(lambda x: cr.grad(loss)(x)[1])(X)
    np.testing.assert_allclose(gg, gg_plain, rtol=1e-13, atol=1e-14)
    # third derivative of a scalar function, all levels through the checkpoint
    s = cr.checkpoint(lambda t: np.sin(t) * t ** 3, policy=policy)
    d3 = cr.grad(cr.grad(cr.grad(lambda t: s(t))))(0.7)
    x = 0.7
    expect3 = -x ** 3 * np.cos(x) - 9 * x ** 2 * np.sin(x) + 18 * x * np.cos(x) \
        + 6 * np.sin(x)
    np.testing.assert_allclose(d3, expect3, rtol=1e-12)


def test_segment_is_one_node_saving_only_its_inputs():
    tape = Tape()
    x = Traced(X, tape.leaf(X), tape)
    y = cr.checkpoint(block)(x)
    assert len(tape) == 2  # the leaf and one checkpoint node
    rule = tape.rules[y.node]
    assert isinstance(rule, CheckpointRule)
    assert rule.saved is None
    assert len(rule.leaves) == 1 and rule.leaves[0] is X
    np.testing.assert_array_equal(y.value, block(X))
    tape.active = False
    g = tape.backward([y.node], [C])
    np.testing.assert_array_equal(g.get(x.node), cr.vjp(block, X)[1](C)[0])


def test_everything_policy_records_as_usual():
    t1, t2 = Tape(), Tape()
    block(Traced(X, t1.leaf(X), t1))
    cr.checkpoint(block, policy="everything")(Traced(X, t2.leaf(X), t2))
    assert len(t1) == len(t2) > 2


def test_dots_policy_saves_and_reuses_matmul_outputs():
    tape = Tape()
    x = Traced(X, tape.leaf(X), tape)
    y = cr.checkpoint(block, policy="dots")(x)
    rule = tape.rules[y.node]
    assert [op for op, _ in rule.saved] == [np.matmul]
    np.testing.assert_array_equal(rule.saved[0][1], X @ W)
    tape.active = False
    # the recomputation takes the saved product instead of recomputing it:
    # replace it by zeros and the tanh derivative is taken at 0
    rule.saved[0] = (np.matmul, np.zeros(3))
    g = tape.backward([y.node], [np.ones(3)], retain_graph=True).get(x.node)
    expected = W @ (np.ones(3) * np.exp(-X)) - np.tanh(0.0) * np.exp(-X) + np.cos(X)
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def test_custom_policy_callable():
    seen = []

    def policy(op):
        seen.append(op)
        return op is np.exp

    tape = Tape()
    x = Traced(X, tape.leaf(X), tape)
    y = cr.checkpoint(block, policy=policy)(x)
    rule = tape.rules[y.node]
    assert [op for op, _ in rule.saved] == [np.exp]
    assert np.tanh in seen and np.matmul in seen
    g = cr.grad(lambda x: np.sum(cr.checkpoint(block, policy=policy)(x) * C))(X)
    np.testing.assert_array_equal(g, cr.grad(lambda x: np.sum(block(x) * C))(X))


def test_dots_policy_detects_nondeterministic_function():
    state = {"n": 0}

    def flaky(x):
        state["n"] += 1
        return np.tanh(x @ W) if state["n"] == 1 else np.tanh(x)

    with pytest.raises(cr.AutodiffError, match="deterministic"):
        cr.grad(lambda x: np.sum(cr.checkpoint(flaky, policy="dots")(x)))(X)


def test_pytree_inputs_kwargs_and_multiple_outputs():
    def seg(p, scale=1.0):
        a = np.sin(p["a"]) * scale
        return a * p["b"], (np.exp(p["b"]), "tag")

    def loss(p, ck):
        f = cr.checkpoint(seg) if ck else seg
        u, (v, tag) = f(p, scale=2.0)
        assert tag == "tag"
        return np.sum(u * v)

    p = {"a": np.array([0.1, 0.4]), "b": np.array([-0.3, 0.2])}
    for fused in (False, True):
        with cr.fusion(fused):
            g1 = cr.grad(loss)(p, False)
            g2 = cr.grad(loss)(p, True)
            _same(g1["a"], g2["a"], not fused)
            _same(g1["b"], g2["b"], not fused)
            _same(cr.hvp(lambda p: loss(p, False), p, p)["b"],
                  cr.hvp(lambda p: loss(p, True), p, p)["b"], not fused)
    # an unused output gets a zero cotangent
    g3 = cr.grad(lambda p: np.sum(cr.checkpoint(seg)(p)[1][0]))(p)
    np.testing.assert_array_equal(g3["a"], np.zeros(2))
    np.testing.assert_allclose(g3["b"], np.exp(p["b"]))


def test_closure_over_traced_value_is_captured():
    def loss(w):
        seg = cr.checkpoint(lambda x: np.tanh(x * w))
        return np.sum(seg(w * 2.0))

    w = np.array([0.1, 0.4, -0.3])
    # d/dw sum(tanh(2 w^2)) = 4 w (1 - tanh(2 w^2)^2)
    np.testing.assert_allclose(cr.grad(loss)(w), 4 * w * (1 - np.tanh(2 * w ** 2) ** 2),
                               rtol=1e-14)
    # without traced arguments the closed-over value is still captured
    g = cr.grad(lambda w: np.sum(cr.checkpoint(lambda x: np.tanh(x * w))(X)))(V)
    np.testing.assert_allclose(g, X * (1 - np.tanh(X * V) ** 2), rtol=1e-14)


def test_outside_differentiation_is_plain_call():
    np.testing.assert_array_equal(cr.checkpoint(block)(X), block(X))
    assert cr.checkpoint(policy="dots")(block)(X).shape == (3,)
    with pytest.raises(ValueError, match="policy"):
        cr.checkpoint(block, policy="some")


def test_hvp_fallback_inside_segment():
    @cr.primitive
    def cube(x):
        return x ** 3

    @cr.rrule(cube)
    def _(x):
        def cube_pullback(g):
            return 3 * g * x ** 2
        return x ** 3, cube_pullback

    seg = cr.checkpoint(lambda x: np.sin(cube(x)))
    f = lambda x: np.sum(seg(x))  # noqa: E731
    x = np.array([0.4, -0.9])
    h = cr.hvp(f, x, np.ones(2))
    d2 = np.cos(x ** 3) * 6 * x - np.sin(x ** 3) * 9 * x ** 4
    np.testing.assert_allclose(h, d2, rtol=1e-12)


def residual_step(x):
    return x + 0.01 * np.tanh(x)


@pytest.mark.parametrize("segments", [None, 1, 3, 7, 20])
def test_checkpoint_sequential_matches_plain_loop(segments):
    layers = [residual_step] * 20 + [np.sin, lambda x: x @ W]
    x = np.array([0.2, -1.0, 0.6])

    def plain(x):
        for layer in layers:
            x = layer(x)
        return np.sum(x * C)

    def ck(x):
        return np.sum(cr.checkpoint_sequential(layers, x, segments=segments) * C)

    assert cr.checkpoint_sequential(layers, x, segments=segments).shape == (3,)
    np.testing.assert_array_equal(cr.grad(plain)(x), cr.grad(ck)(x))
    np.testing.assert_array_equal(cr.hvp(plain, x, V), cr.hvp(ck, x, V))


def test_checkpoint_sequential_records_about_sqrt_n_nodes():
    tape = Tape()
    x = Traced(X, tape.leaf(X), tape)
    cr.checkpoint_sequential([residual_step] * 100, x)
    # 9 checkpoint nodes for 10 segments + the last segment (10 steps, 3 nodes each)
    kinds = [type(r).__name__ for r in tape.rules[1:]]
    assert kinds.count("CheckpointRule") == 9
    assert len(kinds) == 9 + 30
    assert cr.checkpoint_sequential([], X) is X
