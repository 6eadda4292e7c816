"""Fused programs on chunked arrays (dask) run as one task per chunk.

Each chunk's task runs the whole program on the chunk's NumPy blocks, so
the results are those of the program on the computed arrays, bit for bit
(the same ufunc calls per entry); values that are not for it (NumPy arrays
beside chunked ones, unknown chunk sizes, other dtypes, results of another
shape) make ``run`` decline, and the program then builds the graph one
operation at a time, as before.
"""

import pickle

import numpy as np
import pytest

import chainrules as cr
from chainrules import elementwise_chunks as ec
from chainrules import elementwise_expr as ee
from chainrules import elementwise_threads as et
from chainrules import fused_sweeps as fusion

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

F64 = np.float64


@pytest.fixture
def chunk_calls(monkeypatch):
    """The block shapes each chunk task was called with."""
    calls = []
    real = ec._Chunk.__call__

    def spy(self, *blocks):
        calls.append(tuple(b.shape for b in blocks))
        return real(self, *blocks)

    monkeypatch.setattr(ec._Chunk, "__call__", spy)
    return calls


def _program():
    x, y, s = ee.placeholder("x", F64), ee.placeholder("y", F64), ee.placeholder("s", F64)
    t = ee.apply(np.sin, (x,))
    return ee.Program((
        ee.apply(np.multiply, (ee.apply(np.add, (t, y)), s)),  # shares sin(x) with the next
        ee.apply(np.divide, (t, ee.apply(np.add, (ee.constant(2.0), y)))),
        x,                                                      # a value given
        ee.constant(1.5),                                       # a constant
    ))


@pytest.mark.parametrize("xshape, xchunks, yshape, ychunks", [
    ((40,), 10, (40,), 10),
    ((6, 8), (3, 4), (8,), 4),       # broadcast along the first axis
    ((6, 8), (3, 4), (1, 8), (1, 4)),
])
def test_programs_run_once_per_chunk(chunk_calls, xshape, xchunks, yshape, ychunks):
    rng = np.random.default_rng(0)
    xn, yn = rng.standard_normal(xshape), rng.standard_normal(yshape)
    s = F64(0.75)
    program = _program()
    env = {"x": da.from_array(xn, chunks=xchunks), "y": da.from_array(yn, chunks=ychunks),
           "s": s}
    out = et.run(program, env)
    assert isinstance(out[0], da.Array) and isinstance(out[1], da.Array)
    assert out[2] is env["x"] and out[3] == 1.5
    assert chunk_calls == []  # still lazy
    got = dask.compute(out[0], out[1])
    whole = program({"x": xn, "y": yn, "s": s}, False)
    for u, v in zip(got, whole):
        assert u.shape == v.shape and u.dtype == v.dtype and np.array_equal(u, v)
    # one task per chunk of the result, computing both results
    chunks = out[0].numblocks
    assert len(chunk_calls) == int(np.prod(chunks)), (chunk_calls, chunks)


def test_one_result_needs_no_tuple(chunk_calls):
    x = ee.placeholder("x", F64)
    program = ee.Program((ee.apply(np.tanh, (ee.apply(np.sin, (x,)),)),))
    xn = np.linspace(-2.0, 2.0, 30)
    (r,) = et.run(program, {"x": da.from_array(xn, chunks=7)})
    assert r.dtype == F64 and r.chunks == ((7, 7, 7, 7, 2),)
    assert np.array_equal(r.compute(), np.tanh(np.sin(xn)))
    assert len(chunk_calls) == 5


def test_values_not_for_it_are_declined():
    program = _program()
    xn, yn = np.linspace(0.0, 1.0, 20), np.linspace(1.0, 2.0, 20)
    x, y, s = da.from_array(xn, chunks=5), da.from_array(yn, chunks=5), F64(2.0)

    def declined(env):
        return ec.run(program, env, et.run) is None

    assert not declined({"x": x, "y": y, "s": s})
    assert not declined({"x": x, "y": y, "s": np.array(2.0)})  # a 0-d array is a scalar
    assert declined({"x": x, "y": yn, "s": s})  # a NumPy array beside a chunked one
    assert declined({"x": x, "y": y.astype(np.float32), "s": s})  # another dtype
    assert declined({"x": x[x > 0.5], "y": y[y > 1.5], "s": s})  # unknown chunk sizes
    assert declined({"x": x, "y": y.rechunk(4), "s": s})  # chunks that differ
    # a result of another shape than the values' broadcast one
    a, b = ee.placeholder("a", F64), ee.placeholder("b", F64)
    narrow = ee.Program((ee.apply(np.sin, (a,)), ee.apply(np.multiply, (a, b))))
    wide = {"a": da.from_array(np.ones((1, 4)), chunks=2),
            "b": da.from_array(np.ones((3, 4)), chunks=2)}
    assert ec.run(narrow, wide, et.run) is None
    # a result of scalars only (the same in every chunk)
    scalar_only = ee.Program((ee.apply(np.multiply, (b, ee.apply(np.exp, (a,)))),
                              ee.apply(np.exp, (a,))))
    assert ec.run(scalar_only, {"a": F64(0.5), "b": wide["b"]}, et.run) is None

    class NoMapBlocks:  # an array type without ``map_blocks``
        shape, dtype, ndim = (3,), np.dtype(F64), 1

    assert ec.run(program, {"x": NoMapBlocks(), "y": NoMapBlocks(), "s": s}, et.run) is None
    # declined values are computed by the program itself, still right
    out = et.run(program, {"x": x, "y": yn, "s": s})
    whole = program({"x": xn, "y": yn, "s": s}, False)
    assert np.array_equal(np.asarray(out[0]), whole[0])


def test_the_chunk_function_pickles():
    program = _program()
    fn = ec._Chunk(["x", "y"], {"s": F64(0.5)}, program, [0, 1], False, et.run)
    back = pickle.loads(pickle.dumps(fn))
    xn, yn = np.linspace(0.0, 1.0, 9), np.linspace(1.0, 2.0, 9)
    for u, v in zip(back(xn, yn), fn(xn, yn)):
        assert np.array_equal(u, v)


def loss(x):
    d = x - 0.5
    return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2)


def test_sweeps_on_dask_run_their_programs_per_chunk(chunk_calls, monkeypatch):
    monkeypatch.setattr(fusion, "MIN_SIZE", 0)
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", 0)
    monkeypatch.setattr(fusion, "MIN_NONLINEAR", 0)
    xn = np.linspace(-1.0, 2.0, 60)
    vn = np.cos(3 * xn)
    x, v = da.from_array(xn, chunks=15), da.from_array(vn, chunks=20)
    g, h = cr.grad(loss)(x), cr.hvp(loss, x, v)
    assert isinstance(g, da.Array) and isinstance(h, da.Array)
    assert any(name.startswith("fused-") for name in h.dask.layers)
    g, h = dask.compute(g, h)
    assert chunk_calls  # the programs ran per chunk
    with cr.fusion(False):
        g0, h0 = cr.grad(loss)(xn), cr.hvp(loss, xn, vn)
    with cr.fusion(True):
        g1, h1 = cr.grad(loss)(xn), cr.hvp(loss, xn, vn)
    # NumPy's fused sweeps make the same calls per entry: the same numbers
    assert np.array_equal(g, g1) and np.array_equal(h, h1)
    np.testing.assert_allclose(h, h0, rtol=1e-14, atol=1e-15)
    d = xn - 0.5
    q = 1 + d * d
    np.testing.assert_allclose(h, vn * (2 * (1 - d * d) / (q * q) + 0.2 * np.cos(2 * xn)),
                               rtol=1e-12, atol=1e-14)


def test_hoisted_values_are_computed_per_chunk_not_kept(chunk_calls, monkeypatch):
    """On NumPy a region keeps its partials of the members' values
    (hoisted) for later sweeps; on dask they would be graphs recomputed by
    every evaluation, held as chunks of their own beside the program's, so
    each chunk's task computes them itself: nothing is kept, and the
    numbers are the NumPy program's."""
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", 0)
    regions = []

    class Recorded(fusion.FusedRegion):
        __slots__ = ()

        def __init__(self, *args):
            super().__init__(*args)
            regions.append(self)

    monkeypatch.setattr(fusion, "FusedRegion", Recorded)
    xn = np.linspace(-1.0, 2.0, 60)
    vn = np.cos(3 * xn)
    h1 = cr.hvp(loss, xn, vn)
    assert regions and any(r.cache for r in regions)  # NumPy: kept
    del regions[:]
    x, v = da.from_array(xn, chunks=15), da.from_array(vn, chunks=15)
    h = cr.hvp(loss, x, v)
    assert regions and not any(r.cache for r in regions)  # dask: not kept
    assert any(name.startswith("fused-") for name in h.dask.layers)
    h = h.compute()
    assert len(chunk_calls) == 4 * len(regions)  # one task per chunk and region
    assert np.array_equal(h, h1)
