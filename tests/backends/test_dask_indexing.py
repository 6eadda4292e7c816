"""The cotangent of ``x[index]`` on a dask array, for basic indices with new
axes (``None``), which dask's item assignment does not take: equal to the
NumPy gradient, lazy, and with the dask array's chunks."""

import numpy as np
import pytest

import chainrules as cr

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

X = np.arange(24.0).reshape(2, 3, 4) / 7.0
INDICES = [
    (None,),
    (0, None, Ellipsis, 1),
    (None, slice(None, None, -1), None, 1, Ellipsis, None),
    (Ellipsis, None),
    (1, Ellipsis, None, slice(1, 3)),
    (slice(None), None, 2),
]


class _NoCompute(dask.callbacks.Callback):
    def _start(self, dsk):
        raise AssertionError("dask computed while differentiating")


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_new_axes_in_a_basic_index(index):
    w = np.cos(np.arange(X[index].size)).reshape(X[index].shape)

    def loss(x):
        return np.sum(np.sin(x[index]) * w)

    x = da.from_array(X, chunks=2)
    with _NoCompute():
        g = cr.grad(loss)(x)
    assert isinstance(g, da.Array) and g.chunks == x.chunks
    np.testing.assert_allclose(g.compute(), cr.grad(loss)(X), rtol=1e-15, atol=0)
    expect = np.zeros_like(X)
    expect[index] = np.cos(X[index]) * w      # basic indices select each entry once
    np.testing.assert_allclose(g.compute(), expect, rtol=1e-15, atol=0)
