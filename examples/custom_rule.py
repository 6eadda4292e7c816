"""Registering rules for your own operations, in both styles.

Run: python examples/custom_rule.py
"""

import numpy as np

import chainrules as cr


# -- closure style ----------------------------------------------------------------
# `primitive` makes the function one operation: calls on traced values go to
# its rule instead of tracing through its body.
@cr.primitive
def softplus(x):
    return np.log1p(np.exp(x))


@cr.rrule(softplus)
def _(x):
    y = softplus(x)
    s = 1 / (1 + np.exp(-x))          # the derivative: the logistic sigmoid

    def softplus_pullback(g):
        return g * s                    # written with NumPy calls: differentiable again
    return y, softplus_pullback


# -- class style ---------------------------------------------------------------------
# A rule object: inputs(), pullback(), and (for fast HVPs) pushforward and
# pullback_with_tangents. `register` takes a maker returning (output, rule).
@cr.primitive
def cube(x):
    return x * x * x


class CubeRule(cr.ReverseRule):
    __slots__ = ("x_id", "x")

    def __init__(self, x_id, x):
        self.x_id, self.x = x_id, x

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, 3 * self.x**2 * g)]

    def pushforward(self, tangents):
        return 3 * self.x**2 * tangents[0]

    def pullback_with_tangents(self, g, g_dot, tangents):
        # d/dt [3 x^2 g] = 3 x^2 g_dot + 6 x x_dot g
        (x_dot,) = tangents
        return [(self.x_id, 3 * self.x**2 * g, 3 * self.x**2 * g_dot + 6 * self.x * x_dot * g)]


@cr.register(cube)
def _(ids, x):
    return cube(x), CubeRule(ids[0], x)


x = np.array([-1.0, 0.5, 2.0])
v = np.array([1.0, 0.0, -1.0])

g = cr.grad(lambda x: np.sum(softplus(x)))(x)
print("grad of sum(softplus):", g, " expected:", 1 / (1 + np.exp(-x)))
assert np.allclose(g, 1 / (1 + np.exp(-x)))

sig = 1 / (1 + np.exp(-x))
hv = cr.hvp(lambda x: np.sum(softplus(x)), x, v)   # derived by differentiating the pullback
print("hvp of sum(softplus):", hv, " expected:", sig * (1 - sig) * v)
assert np.allclose(hv, sig * (1 - sig) * v)

g = cr.grad(lambda x: np.sum(cube(x)))(x)
hv = cr.hvp(lambda x: np.sum(cube(x)), x, v)       # the hand-written fast path
print("grad of sum(cube):", g, " hvp:", hv)
assert np.allclose(g, 3 * x**2) and np.allclose(hv, 6 * x * v)
print("third derivative of cube at 2:", cr.grad(cr.grad(cr.grad(lambda t: cube(t))))(2.0))
