"""Specs for the compositions in rules/composites.py, composites_stats.py and
array_api.py (operations run as NumPy calls on traced values; every step is
a registered rule, and the checkers test the whole composition).

Order statistics and ``unique`` are sampled with distinct values (at ties
the selection is a subgradient; finite differences cannot check it, so the
tie policy is tested in tests/rules/test_composites.py).
"""

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

F = ("float64", "float32")
C = ("float64", "float32", "complex128")


def _arr(draw, dtype, shape, domain="real"):
    return draw(crs.arrays(dtype, shape, domain))


def _shape(draw, min_dims=1, max_dims=3, min_side=1):
    return draw(crs.shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side))


def _endpoints(domain="real"):
    def sample(draw, dtype):
        shape = draw(st.sampled_from([(), (2,), (2, 3)]))
        kw = {"num": draw(st.integers(1, 6)), "endpoint": draw(st.booleans())}
        if shape and draw(st.booleans()):
            kw["axis"] = -1
        return (_arr(draw, dtype, shape, domain), _arr(draw, dtype, shape, domain)), kw
    return sample


def _sequence(draw, dtype):
    n = draw(st.integers(2, 6))
    shape = draw(st.sampled_from([(n,), (3, n), (n, 2)]))
    axis = -1 if shape[-1] == n else 0
    return shape, axis


def _trapezoid(draw, dtype):
    shape, axis = _sequence(draw, dtype)
    y = _arr(draw, dtype, shape)
    if draw(st.booleans()):
        x = np.cumsum(_arr(draw, dtype, (shape[axis],), "positive"))
        return (y, x), {"axis": axis}
    return (y,), {"axis": axis, "dx": draw(st.sampled_from([1.0, 0.3]))}


def _gradient(draw, dtype):
    shape = draw(st.sampled_from([(4,), (3, 5), (5, 3, 3)]))
    f = _arr(draw, dtype, shape)
    kw = {"edge_order": draw(st.sampled_from([1, 2]))}
    if draw(st.booleans()):
        kw["axis"] = 0
        coords = np.cumsum(_arr(draw, "float64", (shape[0],), "positive"))
        return (f, coords), kw
    return (f,), kw


def _polyval(draw, dtype):
    p = _arr(draw, dtype, (draw(st.integers(1, 4)),))
    return (p, _arr(draw, dtype, _shape(draw, 0, 2))), {}


def _polyfit(draw, dtype):
    n = draw(st.integers(4, 7))
    x = np.linspace(-1, 1, n)
    y = _arr(draw, dtype, draw(st.sampled_from([(n,), (n, 2)])))
    return (x, y, draw(st.integers(0, 2))), {}


def _interp(draw, dtype):
    xp = np.cumsum(np.abs(_arr(draw, "float64", (draw(st.integers(2, 5)),), "positive")))
    x = _arr(draw, dtype, _shape(draw, 0, 2), (float(xp[0]) - 0.8, float(xp[-1]) + 0.8))
    # away from the kinks at xp (piecewise linear)
    x = np.where(np.min(np.abs(x[..., None] - xp), axis=-1) < 0.05, x + 0.1, x).astype(dtype)
    fp = _arr(draw, dtype, xp.shape)
    kw = {}
    if draw(st.booleans()):
        kw = {"left": -0.5, "right": 0.5}
    return (x, xp, fp), kw


def _convolution(draw, dtype):
    n, m = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    kw = {"mode": draw(st.sampled_from(["full", "same", "valid"]))}
    return (_arr(draw, dtype, (n,)), _arr(draw, dtype, (m,))), kw


def _cov(draw, dtype):
    shape = draw(st.sampled_from([(2, 5), (3, 4), (6,)]))
    kw = {"rowvar": draw(st.booleans()), "ddof": draw(st.sampled_from([None, 0]))}
    return (_arr(draw, dtype, shape),), kw


def _corrcoef(draw, dtype):
    return (_arr(draw, dtype, draw(st.sampled_from([(2, 5), (3, 6)]))),), {}


def _order_stat(q=None, nan=False):
    def sample(draw, dtype):
        shape = _shape(draw, 1, 3)
        x = _arr(draw, dtype, shape, "distinct")
        if nan and x.size > 1:
            x = x.copy()
            x.flat[draw(st.integers(0, x.size - 1))] = np.nan
        kw = {"axis": draw(st.sampled_from([None, 0, -1])),
              "keepdims": draw(st.booleans())}
        if nan and kw["axis"] is not None and shape[kw["axis"]] == 1:
            kw["axis"] = None
        args = (x,)
        if q is not None:
            qs = draw(st.sampled_from([q, [q, 0.9 * q]]))
            args = (x, np.asarray(qs))
            kw["method"] = draw(st.sampled_from(["linear", "lower", "higher", "midpoint"]))
        return args, kw
    return sample


def _nanred(draw, dtype):
    # sides of 4 or more: no slice keeps exactly two valid entries (std of two
    # numbers is piecewise linear: its Hessian is rounding noise)
    shape = tuple(draw(st.lists(st.sampled_from([4, 5]), min_size=1, max_size=2)))
    x = _arr(draw, dtype, shape, "nonzero")
    x = x.copy()
    x.flat[draw(st.integers(0, x.size - 1))] = np.nan
    return (x,), {"axis": draw(st.sampled_from([None, 0, -1]))}


def _nanvar(draw, dtype):
    args, kw = _nanred(draw, dtype)
    kw["ddof"] = draw(st.sampled_from([0, 1])) if kw["axis"] is None else 0
    kw["keepdims"] = draw(st.booleans())
    return args, kw


def _unique(draw, dtype):
    return (_arr(draw, dtype, _shape(draw, 1, 2), "distinct"),), {}


def _apply_along(draw, dtype):
    x = _arr(draw, dtype, draw(st.sampled_from([(3, 4), (2, 3, 2)])))
    return (x,), {}


def _unary_nd(domain="real", min_dims=1):
    def sample(draw, dtype):
        return (_arr(draw, dtype, _shape(draw, min_dims, 3), domain),), {}
    return sample


def _cumulative(draw, dtype):
    shape = _shape(draw, 1, 2)
    kw = {"axis": len(shape) - 1, "include_initial": draw(st.booleans())}
    return (_arr(draw, dtype, shape, "nonzero"),), kw


def _two_same(min_dims=1):
    def sample(draw, dtype):
        shape = _shape(draw, min_dims, 3)
        return (_arr(draw, dtype, shape), _arr(draw, dtype, shape)), {}
    return sample


def _matvec(draw, dtype):
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return (_arr(draw, dtype, (n, m)), _arr(draw, dtype, (m,))), {}


def _vecmat(draw, dtype):
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return (_arr(draw, dtype, (n,)), _arr(draw, dtype, (n, m))), {}


def _vector_norm(draw, dtype):
    shape = _shape(draw, 1, 3)
    x = _arr(draw, dtype, shape, "distinct")
    kw = {"ord": draw(st.sampled_from([2, 1, 3, np.inf])),
          "axis": draw(st.sampled_from([None, -1])), "keepdims": draw(st.booleans())}
    return (x,), kw


def _square(draw, dtype):
    n = draw(st.integers(2, 4))
    return (draw(crs.well_conditioned_matrices(dtype, n)),), {}


def _cross(draw, dtype):
    shape = draw(st.sampled_from([(3,), (2, 3)]))
    return (_arr(draw, dtype, shape), _arr(draw, dtype, shape)), {}


def _rollaxis(draw, dtype):
    x = _arr(draw, dtype, (2, 3, 4))
    return (x, draw(st.integers(-3, 2)), draw(st.integers(0, 3))), {}


SPECS = [
    RuleSpec(np.linspace, _endpoints()),
    RuleSpec(np.logspace, _endpoints("unit")),
    RuleSpec(np.geomspace, _endpoints("positive")),
    RuleSpec(np.trapezoid, _trapezoid, wrt=(0,)),
    RuleSpec(np.gradient, _gradient, wrt=(0,)),
    RuleSpec(np.polyval, _polyval, dtypes=C),
    RuleSpec(np.polyfit, _polyfit, wrt=(1,)),
    RuleSpec(np.interp, _interp, wrt=(0, 2)),
    RuleSpec(np.convolve, _convolution, dtypes=C),
    RuleSpec(np.correlate, _convolution, dtypes=C),
    RuleSpec(np.cov, _cov, dtypes=C),
    RuleSpec(np.corrcoef, _corrcoef),
    RuleSpec(np.median, _order_stat()),
    RuleSpec(np.quantile, _order_stat(0.3), wrt=(0,)),
    RuleSpec(np.percentile, _order_stat(40.0), wrt=(0,)),
    RuleSpec(np.nanmedian, _order_stat(nan=True)),
    RuleSpec(np.nanquantile, _order_stat(0.7, nan=True), wrt=(0,)),
    RuleSpec(np.nanpercentile, _order_stat(25.0, nan=True), wrt=(0,)),
    RuleSpec(np.nanprod, _nanred),
    RuleSpec(np.nancumsum, _nanred),
    # (its HVP is checked in tests/rules/test_composites.py: the symmetry
    # check's tolerance is relative to values that vanish at the NaN entries)
    RuleSpec(np.nancumprod, _nanred, modes=frozenset({"rrule", "frule"})),
    RuleSpec(np.nanvar, _nanvar),
    RuleSpec(np.nanstd, _nanvar),
    RuleSpec(np.unique, _unique),
    RuleSpec(np.apply_along_axis, _apply_along,
             call=lambda x: np.apply_along_axis(lambda r: np.sum(r ** 2) * r[:2], -1, x),
             name="np.apply_along_axis"),
    RuleSpec(np.apply_over_axes, _apply_along,
             call=lambda x: np.apply_over_axes(np.sum, x * x, [0, 1]),
             name="np.apply_over_axes"),
    RuleSpec(np.rollaxis, _rollaxis, wrt=(0,)),
    RuleSpec(np.real_if_close, _unary_nd(), call=lambda x: np.real_if_close(x + 0j),
             name="np.real_if_close"),
    RuleSpec(np.unstack, _unary_nd(), call=lambda x: np.unstack(x, axis=-1),
             name="np.unstack"),
    RuleSpec(np.permute_dims, _unary_nd(min_dims=2),
             call=lambda x: np.permute_dims(x, tuple(range(x.ndim))[::-1]),
             name="np.permute_dims"),
    RuleSpec(np.matrix_transpose, _unary_nd(min_dims=2), dtypes=C),
    RuleSpec(np.cumulative_sum, _cumulative, dtypes=C),
    RuleSpec(np.cumulative_prod, _cumulative),
    RuleSpec(np.vecdot, _two_same(), dtypes=C),
    RuleSpec(np.matvec, _matvec, dtypes=C),
    RuleSpec(np.vecmat, _vecmat, dtypes=C),
    RuleSpec(np.linalg.vecdot, _two_same(), dtypes=C),
    RuleSpec(np.linalg.vector_norm, _vector_norm),
    RuleSpec(np.linalg.matrix_norm, _unary_nd(min_dims=2)),
    RuleSpec(np.linalg.cond, _square),
    RuleSpec(np.linalg.trace, _unary_nd(min_dims=2), dtypes=C),
    RuleSpec(np.linalg.diagonal, _unary_nd(min_dims=2), dtypes=C),
    RuleSpec(np.linalg.outer, _two_same(1), call=lambda a, b: np.linalg.outer(
        np.ravel(a), np.ravel(b)), name="np.linalg.outer"),
    RuleSpec(np.linalg.cross, _cross),
]


# -- rules/composites_more.py -----------------------------------------------------------
def _poly2(draw, dtype):
    return (_arr(draw, dtype, (draw(st.integers(1, 4)),)),
            _arr(draw, dtype, (draw(st.integers(1, 4)),))), {}


def _polydiv(draw, dtype):
    u = _arr(draw, dtype, (draw(st.integers(3, 5)),))
    v = _arr(draw, dtype, (draw(st.integers(1, 2)),), "nonzero")
    return (u, v), {}


def _poly1(draw, dtype):
    return (_arr(draw, dtype, (draw(st.integers(2, 5)),)),), {"m": draw(st.integers(1, 2))}


def _unwrap_steps(draw, dtype):
    """Steps of both kinds (below and above pi in size) but 0.3 away from
    +-pi, where unwrap jumps by 2 pi."""
    n = draw(st.integers(2, 6))
    steps = draw(crs.arrays("float64", (n - 1,), (-5.0, 5.0), avoid=(-np.pi, np.pi),
                            margin=0.3))
    x0 = draw(crs.arrays("float64", (1,)))
    return (np.concatenate([x0, x0 + np.cumsum(steps)]).astype(dtype),), {}


def _off_the_joint(draw, dtype):
    """Values away from the joint at 1.0 of the piecewise spec's pieces."""
    n = draw(st.integers(2, 6))
    return (draw(crs.arrays(dtype, (n,), "nonzero", avoid=(1.0,), margin=0.1)),), {}


def _vec(domain="real", n=(2, 6)):
    def sample(draw, dtype):
        return (_arr(draw, dtype, (draw(st.integers(*n)),), domain),), {}
    return sample


def _insert(draw, dtype):
    x = _arr(draw, dtype, (3, 4))
    if draw(st.booleans()):
        return (x, 2, _arr(draw, dtype, (4,))), {"axis": 0}
    return (x, [1, 3], _arr(draw, dtype, ())), {"axis": 1}


def _meshgrid(draw, dtype):
    return (_arr(draw, dtype, (draw(st.integers(1, 3)),)),
            _arr(draw, dtype, (draw(st.integers(1, 3)),))), {
                "indexing": draw(st.sampled_from(["xy", "ij"]))}


SPECS += [
    RuleSpec(np.polyadd, _poly2), RuleSpec(np.polysub, _poly2),
    RuleSpec(np.polymul, _poly2, dtypes=C),
    # float64 only where the composition's dtype does not yet follow NumPy's
    # float32 promotion (polydiv, poly, meshgrid, sort_complex, bincount)
    RuleSpec(np.polydiv, _polydiv, dtypes=("float64",)),
    RuleSpec(np.polyder, _poly1), RuleSpec(np.polyint, _poly1),
    RuleSpec(np.poly, _vec("distinct", (1, 4)), dtypes=("float64",)),
    RuleSpec(np.vander, _vec()),
    RuleSpec(np.insert, _insert, wrt=(0, 2)),
    RuleSpec(np.piecewise, _off_the_joint,
             call=lambda x: np.piecewise(x, [x < 1.0], [lambda v: v ** 2, lambda v: 2 * v]),
             name="np.piecewise"),
    RuleSpec(np.ediff1d, _vec(), call=lambda x: np.ediff1d(x, to_begin=x[:1] * 2),
             name="np.ediff1d"),
    RuleSpec(np.compress, _vec(n=(3, 5)),
             call=lambda x: np.compress([True, False, True], x), name="np.compress"),
    RuleSpec(np.resize, _vec(), call=lambda x: np.resize(x, (3, 3)), name="np.resize"),
    RuleSpec(np.meshgrid, _meshgrid, dtypes=("float64",)),
    RuleSpec(np.unwrap, _unwrap_steps),
    RuleSpec(np.sort_complex, _vec("distinct"), dtypes=("float64",)),
    RuleSpec(np.bincount, _vec(n=(4, 4)),
             call=lambda w: np.bincount(np.array([0, 2, 2, 1]), w), name="np.bincount",
             dtypes=("float64",)),
    RuleSpec(np.ldexp, _vec(), call=lambda x: np.ldexp(x, 3), name="np.ldexp"),
    RuleSpec(np.frexp, _vec("nonzero")), RuleSpec(np.modf, _vec("nonint")),
    RuleSpec(np.fft.hfft, _vec(), dtypes=C), RuleSpec(np.fft.ihfft, _vec()),
]


def _extreme_kw(draw, dtype):
    shape = _shape(draw, 1, 2, min_side=2)
    x = _arr(draw, dtype, shape, "distinct")
    kw = {"axis": draw(st.sampled_from([None, -1]))}
    if draw(st.booleans()):
        kw["initial"] = draw(st.sampled_from([-3.0, 0.0, 3.0]))
        if draw(st.booleans()):
            w = np.ones(shape, bool)
            w.flat[draw(st.integers(0, w.size - 1))] = False
            kw["where"] = w
    else:
        kw["initial"] = 0.5
    return (x,), kw


SPECS += [RuleSpec(np.max, _extreme_kw, name="np.max-initial-where"),
          RuleSpec(np.min, _extreme_kw, name="np.min-initial-where")]


def _pad_mode(mode):
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(st.sampled_from([(3,), (2, 3)])), "distinct")
        kw = {"mode": mode}
        if mode == "linear_ramp" and draw(st.booleans()):
            kw["end_values"] = (0.5, -1.0)
        if mode in ("maximum", "minimum", "mean") and draw(st.booleans()):
            kw["stat_length"] = 2
        if mode == "median" and x.ndim == 2:
            # a corner is the median of the padded row: the column medians (of
            # two: means) must not tie, where the median has no derivative
            means = np.sort(np.mean(x, axis=0))
            assume(np.min(np.diff(means)) > 0.1)
        return (x, draw(st.sampled_from([1, (1, 2)]))), kw
    return sample


SPECS += [RuleSpec(np.pad, _pad_mode(m), wrt=(0,), name=f"np.pad-{m}")
          for m in ("linear_ramp", "maximum", "minimum", "mean")]
# the median of a padded slice is checked in float64 only (float32 finite
# differences of a median over the padded rows exceed the float32 tolerance)
SPECS += [RuleSpec(np.pad, _pad_mode("median"), ("float64",), wrt=(0,), name="np.pad-median")]


def _pad_traced_constant(draw, dtype):
    """x and traced constant_values or end_values (through ``call``) in one of
    NumPy's forms: a scalar, ``(c,)``, ``(before, after)``, one pair per axis."""
    x = _arr(draw, dtype, draw(st.sampled_from([(3,), (2, 3)])), "real")
    c = _arr(draw, dtype, draw(st.sampled_from([(), (1,), (2,), (x.ndim, 2)])), "real")
    return (x, c, draw(st.sampled_from([1, (1, 2), ((1, 2),)]))), {}


SPECS += [RuleSpec(np.pad, _pad_traced_constant, ("float64", "float32"), wrt=(0, 1),
                   call=lambda x, c, w: np.pad(x, w, constant_values=c),
                   name="np.pad-traced-constant"),
          RuleSpec(np.pad, _pad_traced_constant, ("float64", "float32"), wrt=(0, 1),
                   call=lambda x, c, w: np.pad(x, w, mode="linear_ramp", end_values=c),
                   name="np.pad-traced-end-values")]
