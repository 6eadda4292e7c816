"""Specs for rules/reductions.py.

Shapes include 0-d, size-1 axes and 3-d; axes come from ``crs.axes`` (None,
negative ints, tuples) with ``keepdims`` drawn as well. Inputs stay away
from the non-differentiable points (ties of max/min use the "distinct"
domain; prod and cumprod are tested with zeros in tests/rules).
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

F = ("float64", "float32")
C = ("float64", "float32", "complex128")


def _shapes_without_2(min_dims=0):
    # sides 1, 3, 4: no reduced slice has exactly two entries (std of two
    # numbers is piecewise linear, its Hessian is zero up to rounding noise)
    return st.lists(st.sampled_from([1, 3, 4]), min_size=min_dims, max_size=3).map(tuple)


def reduce(domain="real", min_dims=0, keepdims=True, extra=None, shapes=None):
    """x with an axis (None, int or tuple) and keepdims."""
    def sample(draw, dtype):
        shape = draw(shapes() if shapes else crs.shapes(min_dims=min_dims))
        x = draw(crs.arrays(dtype, shape, domain))
        kw = {"axis": draw(crs.axes(len(shape)))}
        if keepdims:
            kw["keepdims"] = draw(st.booleans())
        if extra is not None:
            kw.update(extra(draw, shape, kw))
        return (x,), kw
    return sample


def _var_extra(draw, shape, kw):
    axes = kw["axis"]
    if axes is None:
        n = int(np.prod(shape))
    else:
        axes = axes if isinstance(axes, tuple) else (axes,)
        n = int(np.prod([shape[a] for a in axes]))
    return {"ddof": draw(st.integers(0, 1)) if n > 1 else 0}


def _one_axis(draw, ndim, allow_none=True):
    return draw(crs.axes(ndim, allow_none=allow_none, allow_tuple=False))


def _cum(draw, dtype):
    shape = draw(crs.shapes())
    x = draw(crs.arrays(dtype, shape, "nonzero"))
    return (x,), {"axis": _one_axis(draw, len(shape))}


def _diff(draw, dtype):
    shape = draw(crs.shapes(min_dims=1))
    x = draw(crs.arrays(dtype, shape))
    axis = _one_axis(draw, len(shape), allow_none=False)
    kw = {"n": draw(st.integers(0, 2)), "axis": axis}
    if draw(st.booleans()):
        kw["prepend"] = 0.5
    if draw(st.booleans()):
        s = list(shape)
        s[axis] = 2
        kw["append"] = draw(crs.arrays(dtype, tuple(s)))
    return (x,), kw


def _trace(draw, dtype):
    shape = draw(crs.shapes(min_dims=2))
    x = draw(crs.arrays(dtype, shape))
    nd = len(shape)
    a1, a2 = draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2,
                           unique_by=lambda a: a % nd))
    return (x,), {"offset": draw(st.integers(-1, 1)), "axis1": a1, "axis2": a2}


def _average(draw, dtype):
    traced_w = draw(st.booleans())
    if traced_w:  # every slice has >= 2 entries (else avg == a: zero Hessian)
        shape = draw(st.lists(st.integers(2, 3), min_size=1, max_size=3).map(tuple))
    else:
        shape = draw(crs.shapes())
    a = draw(crs.arrays(dtype, shape))
    kind = draw(st.sampled_from(["none", "full", "axis"] if shape else ["none", "full"]))
    kw = {"keepdims": draw(st.booleans()), "returned": draw(st.booleans())}
    if kind == "none":
        kw["axis"] = draw(crs.axes(len(shape)))
        return (a,), kw
    wd = np.dtype(np.float64) if dtype.kind == "c" else dtype
    if kind == "full":
        w = draw(crs.arrays(wd, shape, "positive"))
        kw["axis"] = draw(crs.axes(len(shape)))
    else:
        axis = draw(crs.axes(len(shape), allow_none=False))
        ax = axis if isinstance(axis, tuple) else (axis,)
        w = draw(crs.arrays(wd, tuple(shape[i] for i in ax), "positive"))
        kw["axis"] = axis
    if not traced_w:  # weights as a constant keyword
        kw["weights"] = w
        return (a,), kw
    return (a, w), kw


def _average_call(a, w=None, **kw):
    return np.average(a, weights=w if w is not None else kw.pop("weights", None), **kw)


def _nan(draw, dtype):
    (x,), kw = reduce()(draw, dtype)
    if x.size:
        mask = draw(crs.arrays(np.float64, x.shape)) > 1.2
        x = np.where(mask, np.nan, x)
        # no slice entirely NaN (its nanmean is NaN with no derivative)
        axis = kw["axis"]
        allnan = np.all(np.isnan(x), axis=axis, keepdims=True)
        x = np.where(allnan, 1.0, x).astype(dtype)
    return (x,), kw


def _method(name):
    def call(x, **kw):
        return getattr(x, name)(**kw)
    return call


def _sum_dtype(draw, dtype):
    (x,), kw = reduce()(draw, dtype)
    if dtype == np.float32:  # upcast (the checks compare at the input precision)
        kw["dtype"] = np.float64
    return (x,), kw


SPECS = [
    RuleSpec(np.sum, reduce(), C),
    RuleSpec(np.sum, _sum_dtype, F, name="np.sum-dtype"),
    RuleSpec(np.sum, reduce(), C, call=_method("sum"), name="ndarray.sum"),
    RuleSpec(np.mean, reduce(), C),
    RuleSpec(np.mean, reduce(), C, call=_method("mean"), name="ndarray.mean"),
    RuleSpec(np.prod, reduce("nonzero"), C),
    RuleSpec(np.prod, reduce("nonzero"), C, call=_method("prod"), name="ndarray.prod"),
    RuleSpec(np.max, reduce("distinct"), F),
    RuleSpec(np.max, reduce("distinct"), F, call=_method("max"), name="ndarray.max"),
    RuleSpec(np.amax, reduce("distinct"), F),
    RuleSpec(np.min, reduce("distinct"), F),
    RuleSpec(np.min, reduce("distinct"), F, call=_method("min"), name="ndarray.min"),
    RuleSpec(np.amin, reduce("distinct"), F),
    RuleSpec(np.nanmax, reduce("distinct"), F),
    RuleSpec(np.nanmin, reduce("distinct"), F),
    RuleSpec(np.ptp, reduce("distinct"), F),
    RuleSpec(np.var, reduce(extra=_var_extra), C),
    RuleSpec(np.var, reduce(extra=_var_extra), F, call=_method("var"), name="ndarray.var"),
    RuleSpec(np.std, reduce(extra=_var_extra, shapes=_shapes_without_2), C),
    RuleSpec(np.average, _average, C, call=_average_call),
    RuleSpec(np.cumsum, _cum, C),
    RuleSpec(np.cumsum, _cum, F, call=_method("cumsum"), name="ndarray.cumsum"),
    RuleSpec(np.cumprod, _cum, C),
    RuleSpec(np.diff, _diff, C),
    RuleSpec(np.trace, _trace, C),
    RuleSpec(np.trace, _trace, F, call=_method("trace"), name="ndarray.trace"),
    RuleSpec(np.nansum, _nan, C),
    RuleSpec(np.nanmean, _nan, C),
]
