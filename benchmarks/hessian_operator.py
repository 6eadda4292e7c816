"""k Hessian-vector products at one point: the recorded Hessian operator
versus k independent calls of ``chainrules.hvp``.

``cr.hessian_operator(f, x)`` traces ``f`` once (and computes the gradient);
each ``H @ v`` then runs only the tangent sweep and the reverse sweep
carrying tangents. ``cr.hvp(f, x, v)`` traces ``f`` again for every ``v``.
The difference is the cost of tracing, which matters most for many small
operations (the MLP-free Rosenbrock below has ~10 ops on 1e5 elements, the
small-op chain has 200 ops on 16 elements).

Times are the best of ``--repeat`` runs, with the allocator settings of
``benchmarks/common.py``. Usage:
``python benchmarks/hessian_operator.py [--k 1 10 50] [--repeat 9]``.
"""

import argparse
import os
import sys
import time

import numpy as np

import chainrules as cr


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def chain(x):
    for _ in range(50):
        x = np.sin(x) * 0.9 + np.tanh(x) * 0.1
    return np.sum(x * x)


_W = np.random.default_rng(0).standard_normal((64, 32)) / 8


def mlp(w):
    h = np.tanh(_W @ np.reshape(w, (32, 16)))
    return np.sum(h * h) + 0.5 * np.sum(w * w)


WORKLOADS = {
    "rosenbrock 1e5": (rosenbrock, 100_000),
    "200-op chain (16 elements)": (chain, 16),
    "tanh layer (512 weights)": (mlp, 512),
}


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


MALLOC_ENV = {  # the same fixed allocator settings as benchmarks/common.py
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
}


def main():
    if any(os.environ.get(k) != v for k, v in MALLOC_ENV.items()):
        # page faults dominate otherwise: re-run with a fixed allocator
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  {**os.environ, **MALLOC_ENV})
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, nargs="*", default=[1, 10, 50])
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    reps = max(args.repeat, 1) * 5
    print("best-of-%d times of single calls (robust on a loaded machine), and the\n"
          "totals they imply for k products at one point" % reps)
    print(f"{'workload':28s} {'hvp [ms]':>9s} {'matvec [ms]':>12s} {'record [ms]':>12s} "
          + " ".join(f"{'k=%d speed-up' % k:>14s}" for k in args.k))
    for name, (f, n) in WORKLOADS.items():
        x = rng.uniform(-1, 1, n)
        v = rng.standard_normal(n)
        H = cr.hessian_operator(f, x)
        np.testing.assert_allclose(H.matvec(v), cr.hvp(f, x, v), rtol=1e-12, atol=1e-12)
        t_hvp = best(lambda: cr.hvp(f, x, v), reps)
        t_mv = best(lambda: H.matvec(v), reps)
        t_rec = best(lambda: cr.hessian_operator(f, x), reps)
        ups = " ".join(f"{k * t_hvp / (t_rec + k * t_mv):13.2f}x" for k in args.k)
        print(f"{name:28s} {t_hvp * 1e3:9.3f} {t_mv * 1e3:12.3f} {t_rec * 1e3:12.3f} {ups}")
    print("(record = trace f once + its gradient; matvec = tangent sweep + reverse\n"
          " sweep carrying tangents; hvp = trace + both sweeps)")

if __name__ == "__main__":
    main()
