"""SciPy's BLAS pool at one thread around the rule library's SciPy calls:
what it changes, alternated in one process.

NumPy and SciPy each bundle an OpenBLAS with its own thread pool; the GP
workloads of ``run.py`` call both (``np.linalg.cholesky``, then SciPy's
``solve_triangular``, ``trmm`` and ``sygst`` in the derivatives). The rule
library runs its SciPy calls with SciPy's pool at one thread
(``rules/_scipy_blas_pool.py``); this times each workload with that limit
on and off (``set_enabled``), in rounds that alternate the two so a change
of machine load hits both, and checks that the results agree.

    python benchmarks/blas_pools.py --threads 2 [--rounds 7] [--seconds 0.3]

It re-executes itself with ``run.py``'s worker settings (BLAS threads,
allocator) for the given thread count.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _per_call(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.3,
                    help="length of one measurement")
    a = ap.parse_args()

    from common import run_as_worker
    run_as_worker(a.threads)

    import numpy as np
    import scipy.linalg as sl

    import chainrules as cr
    import chainrules.scipy.linalg as crsl
    from chainrules.rules import _scipy_blas_pool as pool
    from chainrules.rules._linalg_util import chol_pullback_plain
    from common import gp_nlml, make_data

    path = os.path.join("/tmp", f"blas_pools_data_{os.getpid()}.npz")
    make_data(path)
    d = dict(np.load(path))
    os.remove(path)
    D, y, I, theta, v = d["gp_D"], d["gp_y"], d["gp_I"], d["gp_theta"], d["gp_v"]

    def f(th):
        return gp_nlml(np, crsl, th, D, y, I)

    vg = cr.value_and_grad(f)
    vg_jit = cr.jit(cr.value_and_grad(f))
    hvp_jit = cr.jit(lambda th, u: cr.hvp(f, th, u))
    K = np.exp(D * -0.5) + 0.01 * I
    G = np.random.default_rng(1).standard_normal(K.shape)

    def chol_then_pullback():
        chol_pullback_plain(np.linalg.cholesky(K), G)

    # SciPy alone, large: what the second thread is worth where NumPy's
    # pool sleeps (a triangular solve with 1500 right-hand sides, and its
    # pullback: two trsm of 1500 x 1500)
    rng = np.random.default_rng(2)
    big = np.linalg.cholesky(np.cov(rng.standard_normal((1500, 3000))) + np.eye(1500))
    rhs = rng.standard_normal((1500, 1500))
    big_vg = cr.value_and_grad(lambda b: np.sum(crsl.solve_triangular(big, b, lower=True)))

    cases = {
        "NumPy forward (no rule)": lambda: gp_nlml(np, sl, theta, D, y, I),
        "Cholesky (NumPy) + its pullback": chol_then_pullback,
        "GP value_and_grad": lambda: vg(theta),
        "GP value_and_grad, jit": lambda: vg_jit(theta),
        "GP HVP": lambda: cr.hvp(f, theta, v),
        "GP HVP, jit": lambda: hvp_jit(theta, v),
        "SciPy only: solve_triangular n = 1500, value_and_grad": lambda: big_vg(rhs),
    }
    out = {}
    for on in (True, False):
        pool.set_enabled(on)
        out[on] = {k: fn() for k, fn in cases.items()}
        for fn in cases.values():      # warm-up (records the plans)
            for _ in range(3):
                fn()
    # calls per measurement: about --seconds (timed with the limit off)
    number = {k: max(1, int(a.seconds / _per_call(fn, 2))) for k, fn in cases.items()}
    times = {k: {True: [], False: []} for k in cases}
    for r in range(a.rounds):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            pool.set_enabled(on)
            for k, fn in cases.items():
                time.sleep(0.15)       # the previous case's BLAS threads go to sleep
                times[k][on].append(_per_call(fn, number[k]))
    pool.set_enabled(True)

    pool_info = pool.separate_pool()
    print(f"BLAS threads {a.threads}; SciPy's own OpenBLAS: "
          f"{pool_info.path if pool_info else None}; median of {a.rounds} rounds "
          f"of about {a.seconds} s each, ms per call")
    print("| call | SciPy pool as set (before) | at one thread in our calls (after) | "
          "after / before |")
    print("|---|---|---|---|")
    for k in cases:
        b = statistics.median(times[k][False]) * 1e3
        t = statistics.median(times[k][True]) * 1e3
        print(f"| {k} | {b:.2f} | {t:.2f} | {t / b:.2f} |")
    worst = 0.0
    for k in cases:
        for x, y0 in zip(np.atleast_1d(np.asarray(out[True][k], dtype=object)),
                         np.atleast_1d(np.asarray(out[False][k], dtype=object))):
            if x is None:
                continue
            xa, ya = np.asarray(x, dtype=float), np.asarray(y0, dtype=float)
            worst = max(worst, float(np.max(np.abs(xa - ya)) / np.max(np.abs(ya))))
    print(f"largest difference of the results, on against off, relative to the "
          f"largest entry: {worst:.1e}")


if __name__ == "__main__":
    main()
