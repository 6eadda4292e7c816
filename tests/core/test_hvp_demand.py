"""The forward-over-reverse sweep computes only what the second-order terms
read (``Tape.tangent_demand`` / ``cotangent_demand``), and the pruning never
changes a Hessian-vector product."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.arguments import trace_args
from chainrules.graph import Tape


def rosen(x):
    a = x[:-1]
    return np.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)


def mixed(x):
    # linear and non-linear ops, fan-out, broadcasting, a constant partial,
    # a multi-output rule (eigh) and a reduction
    m = np.reshape(x[:9], (3, 3))
    s = m + m.T
    w, q = np.linalg.eigh(s)
    y = np.tanh(x) * 2.0 - x[::-1] + np.exp(-x) / 3.0
    z = np.sum(y[:4] ** 3) + np.sum(w * np.arange(3.0)) + np.sum(q[:, 0] ** 2 * w)
    return z + 0.5 * np.dot(x, x) - np.sum(np.sin(x) - x)


def casts(x):
    # float32 input promoted to float64 by a mixed-dtype power
    return np.sum(np.float_power(x, 3) + x * np.cos(x))


def with_checkpoint(x):
    inner = cr.checkpoint(lambda u: np.sin(u) * u + u)
    return np.sum(inner(x) ** 2) - np.sum(x)


def _nested(f, x, v):
    return cr.jvp(cr.grad(f), (x,), (v,))[1]


@pytest.mark.parametrize("f, n", [(rosen, 7), (mixed, 12), (casts, 5), (with_checkpoint, 6)])
def test_pruned_hvp_matches_nested_differentiation(f, n):
    rng = np.random.default_rng(3)
    x = 1.0 + 0.3 * rng.standard_normal(n)
    v = rng.standard_normal(n)
    hv = cr.hvp(f, x, v)
    np.testing.assert_allclose(hv, _nested(f, x, v), rtol=1e-10, atol=1e-12)
    g, hv2 = cr.grad_and_hvp(f, x, v)
    np.testing.assert_allclose(g, cr.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(hv2, hv, rtol=1e-12)


def _record(f, x):
    tape = Tape()
    (tx,), (spec,) = trace_args(tape, (x,), (0,), "f")
    out = f(tx)
    tape.active = False
    return tape, spec.ids[0], out.node


def test_rosenbrock_demand_skips_the_linear_tail_and_the_leaf_cotangents():
    tape, leaf, out = _record(rosen, np.linspace(0.5, 1.5, 6))
    names = [None if r is None else r.name.rsplit(".")[-1] for r in tape.rules]
    # x, x[:-1], x[1:], a**2, b - a2, c**2, 100*c2, 1 - a, e**2, d + e2, sum
    assert names == [None, "getitem", "getitem", "power", "subtract", "power",
                     "multiply", "subtract", "power", "add", "sum"]
    t = tape.tangent_demand([out])
    # read by the powers (a, c, e) and to push forward to them (x, x[1:], a**2)
    assert [i for i in range(len(t)) if t[i]] == [0, 1, 2, 3, 4, 7]
    g = tape.cotangent_demand([out])
    # the powers read their own cotangents, which are pulled back from
    # 100 * c2 and d + e2 and sum; a**2's reads b - a2's
    assert [i for i in range(len(g)) if g[i]] == [3, 4, 5, 6, 8, 9, 10]
    assert tape.cotangent_demand([out], leaf_cotangents=True)[leaf] == 1
    assert tape.cotangent_demand([out], keep=[1])[1] == 1


def test_forward_with_demand_leaves_unread_tangents_out():
    x = np.linspace(0.5, 1.5, 6)
    tape, leaf, out = _record(rosen, x)
    need = tape.tangent_demand([out])
    tans = tape.forward({leaf: np.ones_like(x)}, needed=need)
    assert all((tans[i] is not None) == bool(need[i]) for i in range(1, len(tans)))
    full = tape.forward({leaf: np.ones_like(x)})
    assert all(t is not None for t in full)


def test_rules_that_cannot_skip_have_their_cotangents_dropped():
    # a user rule without skip=: its first-order cotangent of the leaf is
    # computed but must not change the HVP
    class Cube(cr.ReverseRule):
        def __init__(self, x_id, x):
            self.x_id, self.x = x_id, x

        def inputs(self):
            return (self.x_id,)

        def pullback(self, g):
            return [(self.x_id, 3 * self.x ** 2 * g)]

        def pushforward(self, tangents):
            return 3 * self.x ** 2 * tangents[0]

        def pullback_with_tangents(self, g, gd, tangents):
            return [(self.x_id, 3 * self.x ** 2 * g,
                     3 * self.x ** 2 * gd + 6 * self.x * g * tangents[0])]

    @cr.primitive
    def cube(x):
        return x ** 3

    @cr.register(cube)
    def _(ids, x):
        return x ** 3, Cube(ids[0], x)

    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 2.0, -1.0])
    f = lambda x: np.sum(cube(x) * 2.0 + x)  # noqa: E731
    np.testing.assert_allclose(cr.hvp(f, x, v), 12 * x * v, rtol=1e-14)
    # the sweep itself: Cube's first-order cotangent of the leaf is dropped
    tape, leaf, out = _record(f, x)
    assert type(tape.rules[1]) is Cube
    tans = tape.forward({leaf: v}, needed=tape.tangent_demand([out]))
    g, hv = tape.backward_with_tangents([out], [np.ones(())], [cr.ZeroTangent()], tans,
                                        leaf_cotangents=False)
    assert isinstance(g.get(leaf), cr.ZeroTangent)
    np.testing.assert_allclose(hv.get(leaf), 12 * x * v, rtol=1e-14)
    g, _ = tape.backward_with_tangents([out], [np.ones(())], [cr.ZeroTangent()], tans)
    np.testing.assert_allclose(g.get(leaf), 6 * x ** 2 + 1, rtol=1e-14)
    g, hv = cr.grad_and_hvp(f, x, v)
    np.testing.assert_allclose(g, 6 * x ** 2 + 1, rtol=1e-14)
    np.testing.assert_allclose(hv, 12 * x * v, rtol=1e-14)


# -- uniform cotangents (zero-stride: the cotangent of a sum) ----------------------
def test_uniform_helpers():
    from chainrules.arrays import uniform_array, uniform_value

    u = uniform_array(np.float32(2.5), (3, 4))
    assert u.shape == (3, 4) and u.dtype == np.float32 and u.strides == (0, 0)
    assert not u.flags.writeable
    np.testing.assert_array_equal(u, np.full((3, 4), 2.5, np.float32))
    assert uniform_value(u) == 2.5
    assert uniform_value(np.broadcast_to(1.0, (5,))) == 1.0
    assert uniform_value(np.ones(3)) is None                 # real memory
    assert uniform_value(np.broadcast_to(np.arange(2.0), (3, 2))) is None  # not one value
    assert uniform_value(np.zeros((0,))) is None
    assert uniform_value(np.float64(1.0)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_cotangents_keep_values_and_dtypes(dtype):
    def f(x):
        y = 100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2
        return np.sum(-y * np.float32(0.5)) + np.sum(3 * np.tanh(x) - x) + np.mean(x ** 2)

    rng = np.random.default_rng(1)
    x = (1.0 + 0.3 * rng.standard_normal(6)).astype(dtype)
    v = rng.standard_normal(6).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    g, hv = cr.grad_and_hvp(f, x, v)
    assert g.dtype == dtype and hv.dtype == dtype
    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    np.testing.assert_allclose(g, cr.grad(f)(x64), rtol=tol)
    np.testing.assert_allclose(hv, _nested(f, x64, v64), rtol=tol, atol=tol)
    np.testing.assert_allclose(cr.hvp(f, x, v), hv, rtol=1e-6)


def test_gradients_of_sums_are_ordinary_writeable_arrays():
    g = cr.grad(lambda x: np.sum(x))(np.ones(4))
    assert g.flags.writeable and g.strides == (8,)
    g[0] = 5.0  # the user may write to it
    g2 = cr.grad(lambda x: np.sum(2.0 * x))(np.ones(4))
    np.testing.assert_array_equal(g2, np.full(4, 2.0))
    assert g2.flags.writeable
