"""Logistic regression on a dask array larger than this script ever holds
in memory, differentiated by chainrules through NumPy's protocols.

The design matrix is a lazy dask array built chunk by chunk (8 GB of float64
at the default size: 10^8 rows x 10 features); nothing here allocates it in
NumPy. ``cr.value_and_grad`` traces the plain NumPy loss on the dask array
and returns the loss and the gradient as lazy dask arrays; ``dask.compute``
evaluates both in one pass over the chunks, with dask's progress bar. A few
gradient steps follow.

Run: python examples/out_of_core.py [--quick] [--rows N]
(``--quick``: 2*10^6 rows, as the test suite runs it.)
"""

import argparse
import time

import numpy as np

import chainrules as cr

try:
    import dask
    import dask.array as da
    from dask.diagnostics import ProgressBar
except ImportError:  # pragma: no cover - dask is an optional extra
    raise SystemExit('this example needs dask: pip install "chainrules[dask]"')


def make_data(rows, features, chunk_rows, seed=0):
    """A lazy, chunked design matrix and labels from a known weight vector."""
    rs = da.random.RandomState(seed)
    X = rs.standard_normal((rows, features), chunks=(chunk_rows, features))
    w_true = np.linspace(-1.0, 1.0, features)
    noise = da.random.RandomState(seed + 1).standard_normal(rows, chunks=chunk_rows)
    y = da.sign(X @ w_true + 0.5 * noise)
    return X, y, w_true


def loss(w, X, y):
    """Mean logistic loss: plain NumPy calls, no dask-specific code."""
    return np.mean(np.logaddexp(0.0, -y * (X @ w)))


def main(rows=100_000_000, features=10, chunk_rows=1_000_000, steps=3, lr=2.0,
         progress=True):
    X, y, w_true = make_data(rows, features, chunk_rows)
    print(f"X: {X.shape} float64 in {X.npartitions} chunks, "
          f"{X.nbytes / 1e9:.2f} GB if it were held in memory")
    w = np.zeros(features)
    value_and_grad = cr.value_and_grad(loss)
    history = []
    for step in range(steps):
        v, g = value_and_grad(w, X, y)  # lazy: nothing computed yet
        t0 = time.perf_counter()
        if progress:
            with ProgressBar(minimum=1.0):
                v, g = dask.compute(v, g)
        else:
            v, g = dask.compute(v, g)
        history.append(float(v))
        print(f"step {step}: loss {float(v):.5f}  |grad| {np.linalg.norm(g):.4f}  "
              f"({time.perf_counter() - t0:.1f} s)")
        w = w - lr * np.asarray(g)
    cos = w @ w_true / (np.linalg.norm(w) * np.linalg.norm(w_true))
    print(f"cosine(w, w_true) = {cos:.3f}")
    return history, cos


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=None)
    a = ap.parse_args()
    rows = a.rows or (2_000_000 if a.quick else 100_000_000)
    history, cos = main(rows=rows, chunk_rows=min(1_000_000, rows // 4))
    assert history[-1] < history[0] and cos > 0.9, (history, cos)
