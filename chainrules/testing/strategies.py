"""Hypothesis strategies for rule tests.

Every strategy takes the dtype explicitly so that float32 and complex128
examples are drawn from the same definitions as float64 ones.

Domains (``domain=``):

* ``"real"``: finite values of moderate size, in [-2, 2];
* ``"positive"``: in [0.5, 2] (log, sqrt, fractional powers);
* ``"unit"``: in (-0.9, 0.9) (arcsin, arctanh);
* ``"gt1"``: in [1.2, 3] (arccosh);
* ``"nonzero"``: |x| in [0.5, 2] with either sign (division, abs, sign kinks);
* ``"distinct"``: values at least 0.1 apart and from zero (max, sort: no ties);
* ``"nonint"``: in [-2.5, 2.5], at least 0.15 away from every integer (floor,
  round, mod, poles of gamma);
* ``"prob"``: in [0.1, 0.9] (probabilities: logit, binary cross-entropy);
* a pair ``(lo, hi)``: uniform in that interval.

``arrays(..., avoid=(0.0,), margin=0.1)`` additionally keeps every value at
least ``margin`` away from the given points (kinks, poles), by pushing
values that fall too close outwards.

Also here: ``broadcastable_shapes`` (shape tuples that broadcast together),
``axes`` / ``axis_keepdims`` / ``reduction_kwargs`` (valid ``axis`` and
``keepdims`` for a shape), ``matrices``, ``well_conditioned_matrices`` and
``spd_matrices`` (condition number below ~10), ``scalars`` and ``pytrees``.

Example, a property test of a user rule::

    from hypothesis import given, strategies as st
    from chainrules.testing import check_rrule, strategies as crs

    @given(st.data())
    def test_softplus(data):
        x = data.draw(crs.arrays(np.float64, data.draw(crs.shapes()), "real"))
        check_rrule(softplus, x)
"""

import numpy as np
from hypothesis import strategies as st

__all__ = ["shapes", "arrays", "broadcastable_shapes", "axes", "axis_keepdims",
           "reduction_kwargs", "dtypes", "scalars", "matrices", "spd_matrices",
           "well_conditioned_matrices", "pytrees", "nested_pytrees", "DOMAINS"]

DOMAINS = {
    "real": (-2.0, 2.0),
    "positive": (0.5, 2.0),
    "unit": (-0.9, 0.9),
    "gt1": (1.2, 3.0),
    "nonzero": (0.5, 2.0),
    "distinct": (-2.0, 2.0),
    "nonint": (-2.5, 2.5),
    "prob": (0.1, 0.9),
}


def dtypes(complex_ok=False):
    """float64 or float32 (and complex128 when ``complex_ok``)."""
    opts = [np.dtype(np.float64), np.dtype(np.float32)]
    if complex_ok:
        opts.append(np.dtype(np.complex128))
    return st.sampled_from(opts)


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    """Array shapes, scalars (0-d) included when ``min_dims == 0``."""
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


@st.composite
def broadcastable_shapes(draw, n=2, min_dims=0, max_dims=3, max_side=4):
    """``n`` shapes that broadcast together (size-1 axes and missing
    leading axes included)."""
    base = draw(shapes(min_dims, max_dims, 1, max_side))
    out = []
    for _ in range(n):
        drop = draw(st.integers(0, len(base)))
        s = list(base[drop:])
        for i in range(len(s)):
            if draw(st.booleans()) and draw(st.booleans()):
                s[i] = 1
        out.append(tuple(s))
    return tuple(out)


@st.composite
def axes(draw, ndim, allow_none=True, allow_tuple=True):
    """An ``axis`` argument for an array of ``ndim`` dimensions: None, an int
    (possibly negative) or a tuple of distinct ints."""
    choices = []
    if allow_none:
        choices.append("none")
    if ndim > 0:
        choices.append("int")
        if allow_tuple:
            choices.append("tuple")
    kind = draw(st.sampled_from(choices)) if choices else "none"
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                           unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


def _push_away(v, points, margin):
    for p in points:
        d = v - p
        close = np.abs(d) < margin
        if np.any(close):
            v = np.where(close, p + np.where(d < 0, -margin, margin) + d, v)
    return v


@st.composite
def arrays(draw, dtype, shape, domain="real", avoid=(), margin=0.1):
    """An array of ``dtype`` and ``shape`` with values in ``domain`` (a name
    from ``DOMAINS`` or a pair ``(lo, hi)``), at least ``margin`` away from
    every point of ``avoid``.

    Values are drawn from a seeded NumPy generator (fast, and shrinking the
    seed is enough); complex dtypes get independent real and imaginary parts.
    """
    dtype = np.dtype(dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lo, hi = DOMAINS[domain] if isinstance(domain, str) else map(float, domain)
    shape = tuple(shape)

    def sample():
        if domain == "distinct":
            n = int(np.prod(shape, dtype=np.int64))
            # a grid of step 0.37 offset by 0.1 to 0.27: every value is at least
            # 0.1 from the others and from zero (|x|**p kinks there)
            vals = (rng.permutation(n) - n // 2) * 0.37 + rng.uniform(0.1, 0.27)
            return vals.reshape(shape)
        v = rng.uniform(lo, hi, size=shape)
        if domain == "nonzero":
            v = v * rng.choice([-1.0, 1.0], size=shape)
        if domain == "nonint":
            frac = v - np.floor(v)
            v = np.floor(v) + 0.15 + frac * 0.7
        if avoid:
            v = _push_away(v, tuple(avoid), margin)
        return v

    if dtype.kind == "c":
        scale = 1.0 / np.sqrt(2.0)
        out = (sample() * scale + 1j * sample() * scale).astype(dtype)
    else:
        out = np.asarray(sample()).astype(dtype)
    return out


@st.composite
def well_conditioned_matrices(draw, dtype, n, batch=()):
    """Square matrices with condition number below ~10."""
    a = draw(arrays(dtype, tuple(batch) + (n, n), "real"))
    return (a * 0.2 + np.eye(n, dtype=dtype) * 2.0).astype(dtype)


@st.composite
def spd_matrices(draw, dtype, n, batch=()):
    """Symmetric (Hermitian) positive definite matrices, well conditioned."""
    a = draw(arrays(dtype, tuple(batch) + (n, n), "real"))
    s = a @ np.swapaxes(a.conj(), -1, -2) / n + np.eye(n, dtype=dtype)
    return s.astype(dtype)


@st.composite
def pytrees(draw, dtype=np.float64, max_leaves=4):
    """A tuple/list/dict pytree of small arrays."""
    n = draw(st.integers(1, max_leaves))
    leaves = [draw(arrays(dtype, draw(shapes(0, 2)), "real")) for _ in range(n)]
    kind = draw(st.sampled_from(["tuple", "list", "dict"]))
    if kind == "tuple":
        return tuple(leaves)
    if kind == "list":
        return leaves
    return {f"k{i}": leaf for i, leaf in enumerate(leaves)}


@st.composite
def axis_keepdims(draw, ndim, allow_none=True, allow_tuple=True):
    """``(axis, keepdims)`` for a reduction over an array of ``ndim`` dims."""
    return (draw(axes(ndim, allow_none, allow_tuple)), draw(st.booleans()))


@st.composite
def reduction_kwargs(draw, ndim, allow_none=True, allow_tuple=True):
    """``{"axis": ..., "keepdims": ...}`` for ``np.sum``-like reductions."""
    axis, keepdims = draw(axis_keepdims(ndim, allow_none, allow_tuple))
    return {"axis": axis, "keepdims": keepdims}


@st.composite
def scalars(draw, dtype=np.float64, domain="real"):
    """A NumPy scalar of ``dtype`` in ``domain``."""
    return draw(arrays(dtype, (), domain))[()]


@st.composite
def matrices(draw, dtype, n, m=None, batch=(), domain="real"):
    """Matrices of shape ``batch + (n, m)`` (square when ``m`` is None)."""
    return draw(arrays(dtype, tuple(batch) + (n, n if m is None else m), domain))


@st.composite
def nested_pytrees(draw, dtype=np.float64, max_leaves=4, max_depth=2):
    """Pytrees of small arrays nested up to ``max_depth`` levels
    (tuples, lists and dicts of arrays and of such containers)."""
    if max_depth <= 0 or draw(st.booleans()):
        return draw(pytrees(dtype, max_leaves))
    n = draw(st.integers(1, 3))
    kids = [draw(nested_pytrees(dtype, max_leaves, max_depth - 1)) for _ in range(n)]
    kind = draw(st.sampled_from(["tuple", "list", "dict"]))
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return kids
    return {f"n{i}": kid for i, kid in enumerate(kids)}
