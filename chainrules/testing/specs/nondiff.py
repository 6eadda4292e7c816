"""Specs for rules/nondiff.py: each op returns plain values equal to NumPy's,
and the traced inputs stay usable (checked by the registry sweep)."""

import numpy as np

import chainrules as cr
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

ND = frozenset({"nondiff"})
R = ("float64", "float32")
C = R  # the sweep's nondiff probe differentiates a real sum


def _arr(draw, dtype, shape, domain="real"):
    return draw(crs.arrays(dtype, shape, domain))


def one(domain="real", min_dims=0, max_dims=3):
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(crs.shapes(min_dims, max_dims)), domain)
        return (x,), {}
    return sample


def with_axis(domain="distinct"):
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(crs.shapes(0, 3)), domain)
        axis = draw(crs.axes(x.ndim, allow_tuple=False))
        return (x,), {"axis": axis}
    return sample


def with_reduce_axis(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    x = np.where(x > 0.5, x, 0).astype(dtype)  # some zeros
    return (x,), {"axis": draw(crs.axes(x.ndim))}


def two(draw, dtype):
    s, t = draw(crs.broadcastable_shapes(2))
    a = _arr(draw, dtype, s)
    b = _arr(draw, dtype, t)
    if draw(st.booleans()):  # some exact equalities
        b = np.broadcast_to(a, np.broadcast_shapes(s, t)).copy()
    return (a, b), {}


def _rounded(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    return (np.asarray(x * 3, dtype),), {}


def _specials(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    flat = x.reshape(-1)
    k = draw(st.integers(0, flat.size - 1))
    flat[k] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 0.0]))
    return (x,), {}


def _sorted_and_values(draw, dtype):
    edges = np.sort(_arr(draw, dtype, (draw(st.integers(1, 4)),), "distinct"))
    x = _arr(draw, dtype, draw(crs.shapes(0, 2)))
    return (edges, x), {}


def _digitize(draw, dtype):
    (edges, x), _ = _sorted_and_values(draw, dtype)
    return (x, edges), {"right": draw(st.booleans())}


def _round(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    return (np.asarray(x * 10, dtype), draw(st.integers(0, 2))), {}


def _floor_divide(draw, dtype):
    s, t = draw(crs.broadcastable_shapes(2))
    return (np.asarray(_arr(draw, dtype, s) * 5, dtype), _arr(draw, dtype, t, "nonzero")), {}


def _full_like(draw, dtype):
    return (_arr(draw, dtype, draw(crs.shapes(0, 3))),), {"fill_value": 2.5}


def _empty_like_call(x):
    y = np.empty_like(x)
    return y.shape, y.dtype.str


def _buffer_call(make):
    """``make(x, **kw)`` (``np.zeros_like`` and the like) as plain values:
    of a traced ``x`` it is a traced constant (a buffer that writes of traced
    values can go into), whose value, shape and dtype are the plain call's."""

    def call(x, **kwargs):
        y = make(x, **kwargs)
        return y.shape, y.dtype.str, cr.stop_gradient(y)

    call.__name__ = make.__name__
    return call


def _logical_two(op):
    def call(a, b):
        return op(a > 0, b < 0.5)
    call.__name__ = f"{op.__name__}_of_comparisons"
    return call


SPECS = [
    RuleSpec(np.argmax, with_axis(), R, modes=ND),
    RuleSpec(np.argmin, with_axis(), R, modes=ND),
    RuleSpec(np.argmax, with_axis(), R, modes=ND, call=lambda x, axis: x.argmax(axis),
             name="Traced.argmax"),
    RuleSpec(np.argsort, with_axis(), R, modes=ND),
    RuleSpec(np.argpartition, lambda draw, dtype: ((_arr(draw, dtype, (4,), "distinct"), 1),
                                                   {}), R, modes=ND),
    RuleSpec(np.argwhere, one(), C, modes=ND, call=lambda x: np.argwhere(np.real(x) > 0)),
    RuleSpec(np.argwhere, one(min_dims=1), C, modes=ND),
    RuleSpec(np.nonzero, one(min_dims=1), C, modes=ND),
    RuleSpec(np.flatnonzero, one(), C, modes=ND),
    RuleSpec(np.count_nonzero, with_reduce_axis, C, modes=ND),
    RuleSpec(np.searchsorted, _sorted_and_values, R, modes=ND),
    RuleSpec(np.digitize, _digitize, R, modes=ND),
    RuleSpec(np.floor, _rounded, R, modes=ND),
    RuleSpec(np.ceil, _rounded, R, modes=ND),
    RuleSpec(np.round, _round, C, modes=ND),
    RuleSpec(np.round, _round, C, modes=ND, call=lambda x, d: x.round(d), name="Traced.round"),
    RuleSpec(np.around, _round, C, modes=ND),
    RuleSpec(np.rint, _rounded, C, modes=ND),
    RuleSpec(np.trunc, _rounded, R, modes=ND),
    RuleSpec(np.fix, _rounded, R, modes=ND),
    RuleSpec(np.sign, _rounded, C, modes=ND),
    RuleSpec(np.floor_divide, _floor_divide, R, modes=ND),
    RuleSpec(np.floor_divide, _floor_divide, R, modes=ND, call=lambda a, b: a // b,
             name="Traced.__floordiv__"),
    RuleSpec(np.equal, two, C, modes=ND),
    RuleSpec(np.not_equal, two, C, modes=ND),
    RuleSpec(np.less, two, R, modes=ND),
    RuleSpec(np.less_equal, two, R, modes=ND),
    RuleSpec(np.greater, two, R, modes=ND),
    RuleSpec(np.greater_equal, two, R, modes=ND),
    RuleSpec(np.less, two, R, modes=ND, call=lambda a, b: (a < b, a <= b, a > b, a >= b,
                                                       a == b, a != b),
             name="Traced.comparison-operators"),
    RuleSpec(np.logical_and, two, R, modes=ND),
    RuleSpec(np.logical_or, two, R, modes=ND),
    RuleSpec(np.logical_xor, two, R, modes=ND),
    RuleSpec(np.logical_and, two, R, modes=ND, call=_logical_two(np.logical_and),
             name="np.logical_and-of-comparisons"),
    RuleSpec(np.logical_not, one(), R, modes=ND),
    RuleSpec(np.isnan, _specials, C, modes=ND),
    RuleSpec(np.isinf, _specials, C, modes=ND),
    RuleSpec(np.isfinite, _specials, C, modes=ND),
    RuleSpec(np.isposinf, _specials, R, modes=ND),
    RuleSpec(np.isneginf, _specials, R, modes=ND),
    RuleSpec(np.signbit, _rounded, R, modes=ND),
    RuleSpec(np.isclose, two, C, modes=ND),
    RuleSpec(np.allclose, two, C, modes=ND),
    RuleSpec(np.array_equal, two, C, modes=ND),
    RuleSpec(np.array_equiv, two, C, modes=ND),
    RuleSpec(np.any, with_reduce_axis, C, modes=ND),
    RuleSpec(np.all, with_reduce_axis, C, modes=ND),
    RuleSpec(np.any, with_reduce_axis, C, modes=ND, call=lambda x, axis: x.any(axis),
             name="Traced.any"),
    RuleSpec(np.shape, one(), C, modes=ND),
    RuleSpec(np.ndim, one(), C, modes=ND),
    RuleSpec(np.size, one(), C, modes=ND),
    RuleSpec(np.result_type, one(), C, modes=ND),
    RuleSpec(np.iscomplexobj, one(), C, modes=ND),
    RuleSpec(np.isrealobj, one(), C, modes=ND),
    RuleSpec(np.common_type, one(), C, modes=ND),
    RuleSpec(np.min_scalar_type, one(), C, modes=ND),
    RuleSpec(np.can_cast, one(), C, modes=ND, call=lambda x: np.can_cast(x, np.float64),
             name="np.can_cast"),
    RuleSpec(np.zeros_like, one(), C, modes=ND, call=_buffer_call(np.zeros_like)),
    RuleSpec(np.ones_like, one(), C, modes=ND, call=_buffer_call(np.ones_like)),
    RuleSpec(np.full_like, _full_like, C, modes=ND, call=_buffer_call(np.full_like)),
    RuleSpec(np.empty_like, one(), C, modes=ND, call=_empty_like_call),
]
