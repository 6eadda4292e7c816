"""Hypothesis strategies: domains, shapes, axes, matrices, pytrees."""

import numpy as np
from hypothesis import given, strategies as st

import chainrules as cr
from chainrules.testing import strategies as crs


@given(st.data())
def test_arrays_respect_domain_dtype_and_shape(data):
    shape = data.draw(crs.shapes(0, 3))
    dtype = data.draw(crs.dtypes(complex_ok=True))
    for domain, (lo, hi) in crs.DOMAINS.items():
        a = data.draw(crs.arrays(dtype, shape, domain))
        assert a.shape == shape and a.dtype == dtype
        vals = np.concatenate([a.real.ravel(), a.imag.ravel()]) if dtype.kind == "c" \
            else a.ravel()
        if domain == "nonzero":
            assert np.all(np.abs(a.real) >= 0.5 / np.sqrt(2) - 1e-6) or dtype.kind == "c"
        elif domain == "nonint":
            assert np.all(np.abs(vals - np.round(vals)) >= 0.15 - 1e-6) or dtype.kind == "c"
        elif domain != "distinct" and dtype.kind != "c":
            assert np.all((vals >= lo - 1e-6) & (vals <= hi + 1e-6))
    d = data.draw(crs.arrays(np.float64, (5,), "distinct"))
    assert np.min(np.diff(np.sort(d))) >= 0.1
    b = data.draw(crs.arrays(np.float64, (20,), (-1, 1), avoid=(0.0,), margin=0.2))
    assert np.all(np.abs(b) >= 0.2 - 1e-12)


@given(crs.broadcastable_shapes(3))
def test_broadcastable_shapes_broadcast(shapes):
    assert len(shapes) == 3
    np.broadcast_shapes(*shapes)


@given(st.data())
def test_axes_and_keepdims_are_valid(data):
    x = np.zeros(data.draw(crs.shapes(0, 3)))
    kw = data.draw(crs.reduction_kwargs(x.ndim))
    out = np.sum(x, **kw)
    if kw["keepdims"]:
        assert out.ndim == x.ndim


@given(st.data())
def test_matrices_are_well_conditioned_and_spd(data):
    dtype = data.draw(crs.dtypes(complex_ok=True))
    n = data.draw(st.integers(1, 4))
    a = data.draw(crs.well_conditioned_matrices(dtype, n))
    assert a.dtype == dtype and np.linalg.cond(a) < 20
    s = data.draw(crs.spd_matrices(dtype, n, batch=(2,)))
    assert s.shape == (2, n, n)
    assert np.allclose(s, np.swapaxes(s.conj(), -1, -2), atol=1e-6)
    w = np.linalg.eigvalsh(s)
    assert np.all(w > 0.5) and np.all(w.max(-1) / w.min(-1) < 20)


@given(crs.nested_pytrees())
def test_pytrees_flatten_to_float_arrays(tree):
    leaves, _ = cr.pytree.flatten(tree)
    assert leaves and all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in leaves)


@given(crs.scalars(np.float32, "positive"))
def test_scalars(s):
    assert isinstance(s, np.float32) and 0.5 <= s <= 2
