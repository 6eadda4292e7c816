"""The cotangent of a full reduction of a dask array (a uniform array) stays
a scalar: elementwise rules scale by it instead of reading a materialised
broadcast, so no full-size chunk of the cotangent is built. Its scalar is
keyed by the dask graph name, so an in-place write to the array (which
renames it) drops the shortcut."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.arrays import lazy_uniform, uniform_value

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


class _NoCompute(dask.callbacks.Callback):
    def _start(self, dsk):
        raise AssertionError("dask computed while differentiating")


def _loss(x):
    d = x - 0.5
    return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2) + np.mean(np.exp(x))


def _layers(a):
    return [name.split("-")[0] for name in a.__dask_graph__().layers]


XN = np.linspace(-1.0, 2.0, 60)
VN = np.cos(np.arange(60.0))


def test_uniform_value_of_a_lazy_uniform():
    x = da.from_array(XN, chunks=7)
    g = lazy_uniform(np.sum(x), x)
    assert isinstance(g, da.Array) and g.chunks == x.chunks
    u = uniform_value(g)
    assert u is not None and float(u.compute()) == pytest.approx(XN.sum())
    np.testing.assert_allclose(g.compute(), np.full(60, XN.sum()))
    # an ordinary dask array, and an ndarray that is not zero-strided, carry none
    assert uniform_value(x) is None
    assert uniform_value(XN) is None


def test_an_in_place_write_drops_the_scalar():
    x = da.from_array(XN, chunks=7)
    g = lazy_uniform(2.0, x)
    assert uniform_value(g) == 2.0
    g[3] = 5.0
    assert uniform_value(g) is None
    # used as a cotangent, the written value counts
    expect = np.cos(XN) * np.where(np.arange(60) == 3, 5.0, 2.0)
    (ct,) = cr.vjp(np.sin, x)[1](g)
    np.testing.assert_allclose(ct.compute(), expect, rtol=1e-14)


def test_gradient_of_a_sum_returned_to_the_user_can_be_written():
    x = da.from_array(XN, chunks=7)
    g = cr.grad(lambda x: np.sum(x) * 3.0)(x)
    g[0] = -1.0
    (ct,) = cr.vjp(np.exp, x)[1](g)
    expect = np.exp(XN) * np.where(np.arange(60) == 0, -1.0, 3.0)
    np.testing.assert_allclose(ct.compute(), expect, rtol=1e-14)


@pytest.mark.parametrize("chunks", [7, 60, 1])
def test_gradient_and_hvp_build_no_broadcast_chunks(chunks):
    x = da.from_array(XN, chunks=chunks)
    v = da.from_array(VN, chunks=chunks)
    with _NoCompute():
        g = cr.grad(_loss)(x)
        h = cr.hvp(_loss, x, v)
    for a in (g, h):
        assert a.chunks == x.chunks
        # the scalar cotangents of the three sums are never broadcast to a
        # full-size array of zeros plus the scalar
        assert "zeros_like" not in _layers(a)
    np.testing.assert_allclose(g.compute(), cr.grad(_loss)(XN), rtol=1e-13)
    np.testing.assert_allclose(h.compute(), cr.hvp(_loss, XN, VN), rtol=1e-13)


def test_float32_keeps_its_dtype():
    x = da.from_array(XN.astype(np.float32), chunks=9)
    g = cr.grad(lambda x: np.sum(np.sin(x) * np.sin(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.compute(), np.sin(2 * XN.astype(np.float32)), rtol=1e-5)
