"""A user module that registers its own rules, to check with the command line:

    python -m chainrules.testing examples/my_rules.py

Three operations, in the three styles chainrules supports:

* ``softplus``: a primitive with a ChainRules-style closure rule
  (``chainrules.rrule``); the CLI samples it with its default sampler
  (float arrays in [0.5, 2]);
* ``cube``: a class-style ``ReverseRule`` registered with
  ``chainrules.register``, with a hand-written ``pullback_with_tangents``
  (the fast HVP path);
* ``weighted_sum(x, w, axis)``: a closure rule with broadcasting and an
  integer axis, sampled by the ``RuleSpec`` in ``SPECS`` below.
"""

import numpy as np

import chainrules as cr
from chainrules.testing import RuleSpec
from chainrules.testing import strategies as crs


# -- closure style ----------------------------------------------------------------
@cr.primitive
def softplus(x):
    """log(1 + exp(x)), computed stably."""
    return np.logaddexp(0.0, x)


@cr.rrule(softplus)
def _softplus_rule(x):
    y = softplus(x)

    def softplus_pullback(g):
        return (g / (1 + np.exp(-x)),)   # g * sigmoid(x)

    return y, softplus_pullback


# -- class style, with the fast HVP path ---------------------------------------------
@cr.primitive
def cube(x):
    return x * x * x


class CubeRule(cr.ReverseRule):
    __slots__ = ("x_id", "x")

    def __init__(self, x_id, x):
        self.x_id = x_id
        self.x = x

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        if isinstance(g, cr.ZeroTangent):
            return [(self.x_id, g)]
        return [(self.x_id, g * 3 * self.x ** 2)]

    def pushforward(self, tangents):
        return tangents[0] * 3 * self.x ** 2

    def pullback_with_tangents(self, g, g_dot, tangents):
        # d/dt [g * 3 x^2] = g_dot * 3 x^2 + g * 6 x * x_dot
        x, x_dot = self.x, tangents[0]
        cot = g * 3 * x ** 2
        cot_dot = g_dot * 3 * x ** 2 + g * 6 * x * x_dot
        return [(self.x_id, cot, cot_dot)]


@cr.register(cube)
def _cube_maker(ids, x):
    return cube(x), CubeRule(ids[0], x)


# -- closure with broadcasting and a static argument ------------------------------------
@cr.primitive
def weighted_sum(x, w, axis):
    return np.sum(x * w, axis=axis)


@cr.rrule(weighted_sum)
def _weighted_sum_rule(x, w, axis):
    out = weighted_sum(x, w, axis)

    def weighted_sum_pullback(g):
        if np.ndim(x):   # NumPy sums a 0-d x over axis 0 or -1 to itself
            g = np.expand_dims(g, axis)
        return (np.broadcast_to(g * w, x.shape), cr.unbroadcast(g * x, w.shape),
                cr.NoTangent())

    return out, weighted_sum_pullback


def _weighted_sum_args(draw, dtype):
    x = draw(crs.arrays(dtype, draw(crs.shapes(2, 2, 1, 3)), "real"))
    w = draw(crs.arrays(dtype, x.shape[-1:], "real"))       # broadcast over rows
    return (x, w, draw(crs.axes(2, allow_none=False, allow_tuple=False))), {}


SPECS = [RuleSpec(weighted_sum, _weighted_sum_args, ("float64", "float32"))]
