"""Specs for rules/arithmetic.py.

Every binary operation is sampled three ways: two arrays of broadcastable
shapes (0-d, size-1 axes and missing leading axes included), and a Python
scalar constant on the left and on the right, through the Python operator
where there is one. Domains keep the inputs away from the kinks, ties and
jumps; the behaviour at those points is tested in tests/rules/test_arithmetic.py.
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

R = ("float64", "float32")
C = ("float64", "float32", "complex128")


def unary(domain="real"):
    def sample(draw, dtype):
        return (draw(crs.arrays(dtype, draw(crs.shapes()), domain)),), {}
    return sample


def binary(dx="real", dy="real"):
    def sample(draw, dtype):
        sx, sy = draw(crs.broadcastable_shapes())
        return (draw(crs.arrays(dtype, sx, dx)), draw(crs.arrays(dtype, sy, dy))), {}
    return sample


def _grid(draw, dtype, shape, offset):
    """Values ``0.6 k + offset`` (+-0.03): arrays drawn with different offsets
    (0, 0.2, 0.4) differ by at least 0.14 everywhere, so no ties."""
    base = draw(crs.arrays("float64", shape, "real"))
    jitter = draw(crs.arrays("float64", shape, "unit")) * 0.03
    v = np.round(base / 0.6) * 0.6 + offset + jitter
    if np.dtype(dtype).kind == "c":
        v = v + 1j * draw(crs.arrays("float64", shape, "real"))
    return np.asarray(v).astype(dtype)


def separated(n=2):
    def sample(draw, dtype):
        shapes = draw(crs.broadcastable_shapes(n=n))
        return tuple(_grid(draw, dtype, s, 0.2 * i) for i, s in enumerate(shapes)), {}
    return sample


def grid(draw, dtype):
    return (_grid(draw, dtype, draw(crs.shapes()), 0.0),), {}


def _quotient_pair(draw, dtype):
    """``(x, y)`` with ``x / y`` at least 0.14 away from an integer (no jump
    of mod/fmod within the finite-difference stencil); ``y`` broadcasts."""
    sx, sy = draw(crs.broadcastable_shapes())
    shape = np.broadcast_shapes(sx, sy)
    y = draw(crs.arrays(dtype, sy, "nonzero"))
    q = np.round(draw(crs.arrays("float64", shape, "real")))
    f = 0.5 + 0.4 * draw(crs.arrays("float64", shape, "unit"))
    return ((y * (q + f)).astype(dtype), y), {}


def _mod_scalar_right(draw, dtype):
    shape = draw(crs.shapes())
    q = np.round(draw(crs.arrays("float64", shape, "real")))
    f = 0.5 + 0.4 * draw(crs.arrays("float64", shape, "unit"))
    return (np.asarray(1.5 * (q + f)).astype(dtype),), {}


def _mod_scalar_left(draw, dtype):
    # 2.5 % y with 2.5 / y in (q + 0.14, q + 0.86), q in {1, 2}, y of both signs
    shape = draw(crs.shapes())
    q = 1 + (draw(crs.arrays("float64", shape, "positive")) > 1.25)
    f = 0.5 + 0.4 * draw(crs.arrays("float64", shape, "unit"))
    sign = np.sign(draw(crs.arrays("float64", shape, "nonzero")))
    return (np.asarray(sign * 2.5 / (q + f)).astype(dtype),), {}


def _int_exponent(draw, dtype):
    """Negative bases with a constant integer exponent array."""
    sx, sy = draw(crs.broadcastable_shapes())
    x = draw(crs.arrays(dtype, sx, "nonzero"))
    k = np.round(draw(crs.arrays("float64", sy, "real")) * 1.5).astype(np.int64)
    return (x, k), {}


def _where(draw, dtype):
    sc, sx, sy = draw(crs.broadcastable_shapes(n=3))
    cond = draw(crs.arrays("float64", sc, "real")) > 0
    return (cond, draw(crs.arrays(dtype, sx)), draw(crs.arrays(dtype, sy))), {}


def _where_one(draw, dtype):
    sc, sx = draw(crs.broadcastable_shapes())
    cond = draw(crs.arrays("float64", sc, "real")) > 0
    return (cond, draw(crs.arrays(dtype, sx))), {}


def _where_small_x(draw, dtype):
    """``(cond, x, y)`` with ``y`` of the full output shape and ``cond``,
    ``x`` broadcast against it: with ``y`` held constant, the tangent of ``x``
    is broadcast up to the output."""
    sc, sx, sy = draw(crs.broadcastable_shapes(n=3))
    sy = np.broadcast_shapes(sc, sx, sy)
    cond = draw(crs.arrays("float64", sc, "real")) > 0
    return (cond, draw(crs.arrays(dtype, sx)), draw(crs.arrays(dtype, sy))), {}


def _clip_kwargs(draw, dtype):
    (x,), _ = grid(draw, dtype)
    kw = draw(st.sampled_from([{"min": -0.5, "max": 0.7}, {"min": -0.5}, {"max": 0.7},
                               {"a_min": None, "a_max": 0.7}]))
    return (x,), kw


def _named(op, sample, dtypes, call, name):
    return RuleSpec(op, sample, dtypes, call=call, name=name)


SPECS = [
    # add / subtract / multiply / divide, operators on either side
    RuleSpec(np.add, binary(), C),
    _named(np.add, unary(), C, lambda x: 2.5 + x, "np.add-scalar-left"),
    _named(np.add, unary(), C, lambda x: x + 1, "np.add-scalar-right"),
    RuleSpec(np.subtract, binary(), C),
    _named(np.subtract, unary(), C, lambda x: 2 - x, "np.subtract-scalar-left"),
    _named(np.subtract, unary(), C, lambda x: x - 0.5, "np.subtract-scalar-right"),
    RuleSpec(np.multiply, binary(), C),
    _named(np.multiply, unary(), C, lambda x: 2.5 * x, "np.multiply-scalar-left"),
    _named(np.multiply, unary(), C, lambda x: x * -3, "np.multiply-scalar-right"),
    _named(np.multiply, unary(), C, lambda x: x * x, "np.multiply-same"),
    RuleSpec(np.true_divide, binary("real", "nonzero"), C),
    _named(np.true_divide, unary("nonzero"), C, lambda x: 1 / x, "np.true_divide-scalar-left"),
    _named(np.true_divide, unary(), C, lambda x: x / 2.5, "np.true_divide-scalar-right"),
    RuleSpec(np.negative, unary(), C),
    _named(np.negative, unary(), C, lambda x: -x, "np.negative-operator"),
    RuleSpec(np.positive, unary(), C),
    # powers
    RuleSpec(np.power, binary("positive", "real"), C),
    _named(np.power, unary(), C, lambda x: 2.5 ** x, "np.power-scalar-left"),
    _named(np.power, unary(), C, lambda x: x ** 2, "np.power-square"),
    _named(np.power, unary("nonzero"), C, lambda x: x ** 3, "np.power-cube-negative-base"),
    _named(np.power, unary("nonzero"), C, lambda x: x ** -2, "np.power-negative-int"),
    _named(np.power, unary("positive"), C, lambda x: x ** 2.5, "np.power-fractional"),
    _named(np.power, unary(), C, lambda x: x ** 0, "np.power-zero"),
    _named(np.power, unary(), C, lambda x: x ** 1, "np.power-one"),
    _named(np.power, _int_exponent, C, None, "np.power-int-array-exponent"),
    RuleSpec(np.float_power, binary("positive", "real"), C),
    _named(np.float_power, unary("nonzero"), C, lambda x: np.float_power(x, 3),
           "np.float_power-cube-negative-base"),
    _named(np.float_power, unary(), C, lambda x: np.float_power(2.5, x),
           "np.float_power-scalar-left"),
    RuleSpec(np.reciprocal, unary("nonzero"), C),
    RuleSpec(np.square, unary(), C),
    RuleSpec(np.sqrt, unary("positive"), C),
    _named(np.sqrt, unary("positive"), C, lambda x: x ** 0.5, "np.sqrt-as-power"),
    RuleSpec(np.cbrt, unary("nonzero"), R),
    RuleSpec(np.fabs, unary("nonzero"), R),
    # selections
    RuleSpec(np.maximum, separated(), C),
    _named(np.maximum, grid, C, lambda x: np.maximum(x, 0.3), "np.maximum-scalar-right"),
    _named(np.maximum, grid, C, lambda x: np.maximum(0.3, x), "np.maximum-scalar-left"),
    RuleSpec(np.minimum, separated(), C),
    _named(np.minimum, grid, C, lambda x: np.minimum(x, 0.3), "np.minimum-scalar-right"),
    _named(np.minimum, grid, C, lambda x: np.minimum(0.3, x), "np.minimum-scalar-left"),
    RuleSpec(np.fmax, separated(), C),
    _named(np.fmax, grid, C, lambda x: np.fmax(0.3, x), "np.fmax-scalar-left"),
    RuleSpec(np.fmin, separated(), C),
    _named(np.fmin, grid, C, lambda x: np.fmin(x, 0.3), "np.fmin-scalar-right"),
    RuleSpec(np.clip, separated(3), C),
    _named(np.clip, grid, C, lambda x: np.clip(x, -0.5, 0.7), "np.clip-scalar-bounds"),
    _named(np.clip, grid, R, lambda x: x.clip(-0.5), "np.clip-method-lower-only"),
    _named(np.clip, _clip_kwargs, R, None, "np.clip-keywords"),
    RuleSpec(np.where, _where, C),
    _named(np.where, _where_one, C, lambda c, x: np.where(c, x, 0.5), "np.where-scalar-right"),
    _named(np.where, _where_one, C, lambda c, x: np.where(c, -1.0, x), "np.where-scalar-left"),
    RuleSpec(np.where, _where_small_x, C, name="np.where-x-alone", wrt=(1,)),
    # mod and friends: derivative 1 in x, -quotient in y
    RuleSpec(np.remainder, _quotient_pair, R),
    _named(np.remainder, _mod_scalar_right, R, lambda x: x % 1.5, "np.remainder-scalar-right"),
    _named(np.remainder, _mod_scalar_left, R, lambda y: 2.5 % y, "np.remainder-scalar-left"),
    RuleSpec(np.fmod, _quotient_pair, R),
    _named(np.fmod, _mod_scalar_left, R, lambda y: np.fmod(2.5, y), "np.fmod-scalar-left"),
    RuleSpec(np.copysign, binary("nonzero", "nonzero"), R),
    _named(np.copysign, unary("nonzero"), R, lambda x: np.copysign(x, -1.0),
           "np.copysign-scalar-right"),
    # smooth binary functions
    RuleSpec(np.hypot, binary(), R),
    _named(np.hypot, unary(), R, lambda x: np.hypot(x, 0.5), "np.hypot-scalar-right"),
    RuleSpec(np.arctan2, binary("nonzero", "real"), R),
    _named(np.arctan2, unary(), R, lambda x: np.arctan2(1.0, x), "np.arctan2-scalar-left"),
    _named(np.arctan2, unary("nonzero"), R, lambda x: np.arctan2(x, -1.0),
           "np.arctan2-scalar-right"),
    RuleSpec(np.logaddexp, binary(), R),
    _named(np.logaddexp, unary(), R, lambda x: np.logaddexp(x, 0.0), "np.logaddexp-scalar-right"),
    RuleSpec(np.logaddexp2, binary(), R),
    _named(np.logaddexp2, unary(), R, lambda x: np.logaddexp2(1.0, x),
           "np.logaddexp2-scalar-left"),
]
