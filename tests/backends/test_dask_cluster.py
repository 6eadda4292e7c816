"""A gradient computed on a real dask.distributed cluster: worker processes
on 127.0.0.1, a chunked loss differentiated by chainrules on the client, the
lazy gradient computed by the cluster; and an HVP whose fused programs the
workers run per chunk (pickled to them). The cluster is always shut down."""

import numpy as np
import pytest

import chainrules as cr

# worker processes on a local cluster: the full tier (--full) runs it
pytestmark = pytest.mark.slow

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")


def loss(w, X, y):
    return np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.01 * np.sum(w ** 2)


def elementwise(x):
    d = x - 0.5
    return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2)


def test_gradient_on_a_local_cluster():
    rng = np.random.default_rng(0)
    Xn = rng.standard_normal((4000, 5))
    yn = np.sign(Xn @ np.linspace(-1, 1, 5) + 0.3 * rng.standard_normal(4000))
    w = np.linspace(0.2, -0.2, 5)
    expected_v, expected_g = cr.value_and_grad(loss)(w, Xn, yn)
    xn, tn = rng.standard_normal(70000), rng.standard_normal(70000)
    expected_h = cr.hvp(elementwise, xn, tn)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    try:
        with distributed.Client(cluster) as client:
            X = da.from_array(Xn, chunks=(500, 5))
            y = da.from_array(yn, chunks=500)
            v, g = cr.value_and_grad(loss)(w, X, y)
            assert isinstance(g, da.Array)
            fut = client.compute([v, g])
            v, g = client.gather(fut)
            assert len(client.scheduler_info()["workers"]) == 2
            # large enough to be fused: the programs are tasks on the workers
            h = cr.hvp(elementwise, da.from_array(xn, chunks=20000),
                       da.from_array(tn, chunks=20000))
            assert any(name.startswith("fused-") for name in h.dask.layers)
            h = client.gather(client.compute(h))
    finally:
        cluster.close()
    np.testing.assert_allclose(v, expected_v, rtol=1e-12)
    np.testing.assert_allclose(g, expected_g, rtol=1e-10, atol=1e-14)
    # the same ufunc calls per entry as on NumPy: the same numbers
    assert np.array_equal(h, expected_h)
