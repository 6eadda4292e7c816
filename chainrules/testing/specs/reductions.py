"""Specs for rules/reductions.py.

Shapes include 0-d, size-1 axes and 3-d; axes come from ``crs.axes`` (None,
negative ints, tuples) with ``keepdims`` drawn as well. Inputs stay away
from the non-differentiable points (ties of max/min use the "distinct"
domain). prod and cumprod, polynomials, are exact with zeros: their
"-zeros" specs put one or two zeros in the input (the zero-safe formulas).
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


def _with_zeros(draw, x):
    """``x`` with one or two of its entries set to zero."""
    k = draw(st.integers(1, min(2, x.size)))
    flat = draw(st.lists(st.integers(0, x.size - 1), min_size=k, max_size=k, unique=True))
    x = x.copy()
    x.flat[flat] = 0
    return x


def _prod_zeros(draw, dtype):
    (x,), kw = reduce("nonzero")(draw, dtype)
    return (_with_zeros(draw, x),), kw


def _prod_initial(draw, shape, kw):
    return {"initial": float(draw(crs.arrays(np.float64, (), "nonzero")))}


def _cum_zeros(draw, dtype):
    # every side >= 2: the cumulated axis has a zero among several entries
    shape = draw(crs.shapes(min_dims=1, min_side=2, max_side=3))
    x = _with_zeros(draw, draw(crs.arrays(dtype, shape, "nonzero")))
    return (x,), {"axis": _one_axis(draw, len(shape))}


def _diff(draw, dtype):
    shape = draw(crs.shapes(min_dims=1))
    x = draw(crs.arrays(dtype, shape))
    axis = _one_axis(draw, len(shape), allow_none=False)
    kw = {"n": draw(st.integers(0, 2)), "axis": axis}
    prepend = draw(st.sampled_from(["none", "scalar", "array"]))
    if prepend == "scalar":
        kw["prepend"] = 0.5
    elif prepend == "array":  # one or two entries along the axis
        s = list(shape)
        s[axis] = draw(st.integers(1, 2))
        kw["prepend"] = draw(crs.arrays(dtype, tuple(s)))
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


def _average_weights(draw, dtype):
    """a and weights, both positional (so either can be differentiated); for
    complex128, real ``a`` with complex weights (the other mix is in
    ``_average``)."""
    shape = draw(st.lists(st.integers(2, 3), min_size=1, max_size=3).map(tuple))
    ad = np.dtype(np.float64) if dtype.kind == "c" else dtype
    a = draw(crs.arrays(ad, shape))
    kw = {"keepdims": draw(st.booleans()), "returned": draw(st.booleans())}
    if draw(st.booleans()):  # weights of a's shape
        kw["axis"] = draw(crs.axes(len(shape)))
        wshape = shape
    else:  # weights along the reduced axes only
        axis = draw(crs.axes(len(shape), allow_none=False))
        kw["axis"] = axis
        wshape = tuple(shape[i] for i in (axis if isinstance(axis, tuple) else (axis,)))
    # positive real parts (and, complex, imaginary parts): sum(w) stays away from 0
    w = draw(crs.arrays(dtype, wshape, "positive"))
    return (a, w), kw


def _average_call(a, w=None, **kw):
    return np.average(a, weights=w if w is not None else kw.pop("weights", None), **kw)


def _average_returned_composed(a, w, **kw):
    # the average used linearly, the sum of the weights through a nonlinear
    # function: in the HVP the rule's cotangent and the tangent of its
    # cotangent are both nonzero (the latter only for the sum of the weights)
    avg, total = np.average(a, weights=w, **dict(kw, returned=True))
    return avg + np.sin(total)


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


def _upcast(sample):
    """``sample`` with ``dtype=`` computing in a wider dtype: float32 input
    in float64 (the checks compare at the input precision), float64 input
    in complex128 (the cotangent of the real input is the real part)."""
    def with_dtype(draw, dtype):
        args, kw = sample(draw, dtype)
        return args, dict(kw, dtype=np.float64 if dtype == np.float32 else np.complex128)
    return with_dtype


SPECS = [
    RuleSpec(np.sum, reduce(), C),
    RuleSpec(np.sum, _upcast(reduce()), F, name="np.sum-dtype"),
    RuleSpec(np.sum, reduce(), C, call=_method("sum"), name="ndarray.sum"),
    RuleSpec(np.mean, reduce(), C),
    RuleSpec(np.mean, reduce(), C, call=_method("mean"), name="ndarray.mean"),
    RuleSpec(np.prod, reduce("nonzero"), C),
    RuleSpec(np.prod, reduce("nonzero"), C, call=_method("prod"), name="ndarray.prod"),
    RuleSpec(np.prod, reduce("nonzero", extra=_prod_initial), C, name="np.prod-initial"),
    RuleSpec(np.prod, _prod_zeros, C, name="np.prod-zeros"),
    RuleSpec(np.prod, _upcast(reduce("nonzero")), F, name="np.prod-dtype"),
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
    RuleSpec(np.var, _upcast(reduce(extra=_var_extra)), F, name="np.var-dtype"),
    RuleSpec(np.std, reduce(extra=_var_extra, shapes=_shapes_without_2), C),
    RuleSpec(np.std, _upcast(reduce(extra=_var_extra, shapes=_shapes_without_2)), F,
             name="np.std-dtype"),
    RuleSpec(np.average, _average, C, call=_average_call),
    RuleSpec(np.average, _average_weights, ("complex128",), call=_average_call,
             name="np.average-complex-weights"),
    RuleSpec(np.average, _average_weights, C, call=_average_call, wrt=(1,),
             name="np.average-wrt-weights"),
    RuleSpec(np.average, _average_weights, C, call=_average_returned_composed,
             name="np.average-returned-composed"),
    RuleSpec(np.cumsum, _cum, C),
    RuleSpec(np.cumsum, _cum, F, call=_method("cumsum"), name="ndarray.cumsum"),
    RuleSpec(np.cumsum, _upcast(_cum), F, name="np.cumsum-dtype"),
    RuleSpec(np.cumprod, _cum, C),
    RuleSpec(np.cumprod, _cum_zeros, C, name="np.cumprod-zeros"),
    RuleSpec(np.cumprod, _upcast(_cum), F, name="np.cumprod-dtype"),
    RuleSpec(np.diff, _diff, C),
    RuleSpec(np.trace, _trace, C),
    RuleSpec(np.trace, _trace, F, call=_method("trace"), name="ndarray.trace"),
    RuleSpec(np.trace, _upcast(_trace), F, name="np.trace-dtype"),
    RuleSpec(np.nansum, _nan, C),
    RuleSpec(np.nansum, _upcast(_nan), F, name="np.nansum-dtype"),
    RuleSpec(np.nanmean, _nan, C),
    RuleSpec(np.nanmean, _upcast(_nan), F, name="np.nanmean-dtype"),
]
