"""Hypothesis strategies for rule tests.

Every strategy takes the dtype explicitly so that float32 and complex128
examples are drawn from the same definitions as float64 ones.

Domains (``domain=``):

* ``"real"``: finite values of moderate size, in [-2, 2];
* ``"positive"``: in [0.5, 2] (log, sqrt, fractional powers);
* ``"unit"``: in (-0.9, 0.9) (arcsin, arctanh);
* ``"gt1"``: in [1.2, 3] (arccosh);
* ``"nonzero"``: |x| in [0.5, 2] with either sign (division, abs, sign kinks);
* ``"distinct"``: values at least 0.1 apart (max, sort: no ties).
"""

import numpy as np
from hypothesis import strategies as st

__all__ = ["shapes", "arrays", "broadcastable_shapes", "axes", "dtypes",
           "spd_matrices", "well_conditioned_matrices", "pytrees", "DOMAINS"]

DOMAINS = {
    "real": (-2.0, 2.0),
    "positive": (0.5, 2.0),
    "unit": (-0.9, 0.9),
    "gt1": (1.2, 3.0),
    "nonzero": (0.5, 2.0),
    "distinct": (-2.0, 2.0),
}


def dtypes(complex_ok=False):
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


@st.composite
def arrays(draw, dtype, shape, domain="real"):
    """An array of ``dtype`` and ``shape`` with values in ``domain``.

    Values are drawn from a seeded NumPy generator (fast, and shrinking the
    seed is enough); complex dtypes get independent real and imaginary parts.
    """
    dtype = np.dtype(dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lo, hi = DOMAINS[domain]
    shape = tuple(shape)

    def sample():
        if domain == "distinct":
            n = int(np.prod(shape, dtype=np.int64))
            vals = (rng.permutation(n) - n / 2) * 0.37 + rng.uniform(-0.05, 0.05)
            return vals.reshape(shape)
        v = rng.uniform(lo, hi, size=shape)
        if domain == "nonzero":
            v = v * rng.choice([-1.0, 1.0], size=shape)
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
