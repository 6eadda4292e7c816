"""The engine's own plans: ``cr.hessp`` and ``cr.hessian_operator`` with
staged plans versus their eager paths.

* ``scipy.optimize.minimize`` with ``h = cr.hessp(f)`` (``jac=True``,
  ``hessp=h``): seconds per minimize call with the plans (the default)
  and with ``cr.hessp(f, staged=False)`` (``f`` recorded at each new point,
  products as sweeps over the recording). "fresh" makes a new ``Hessp`` per
  call (its plans are recorded and checked inside the timed call); "reused"
  keeps one ``Hessp`` across calls (fitting again, as in a loop over data
  sets of one shape). SciPy's hand-written ``rosen_der``/``rosen_hess_prod``
  give the floor for Rosenbrock, and every run's solution is compared with
  theirs.
* ``cr.hessian_operator(f, x)``: milliseconds per ``matvec`` as eager
  sweeps over the recording and as a replayed plan of them, the cost of the
  call that records the plan and of the one that checks it, whether an
  operator keeps the plan after its probe (``MIN_GAIN``), and a
  ``scipy.sparse.linalg.cg`` solve on a fresh operator (recording of ``f``
  included; at most ``CG_MAXITER`` iterations) with the plan (the default,
  from the ``STAGE_AFTER + 1``-th product on) and without (``STAGE_AFTER``
  set out of reach).

Every time is the median of ``--repeat`` runs (the machine is shared), with
one BLAS thread and the allocator settings of ``benchmarks/common.py``.
Compiled kernels (numba) follow ``CHAINRULES_KERNELS`` as in any plan; the
mode is printed. Usage:
``python benchmarks/hessp_plans.py [--repeat 7] [--sizes 10 100 1000]``.
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from scipy.optimize import minimize, rosen_der, rosen_hess_prod
from scipy.sparse.linalg import LinearOperator, cg, eigsh

import chainrules as cr
from chainrules import kernels, linearization

ENV = {  # the fixed allocator settings of benchmarks/common.py, one BLAS thread
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
    # (a second BLAS thread on a loaded 2-core machine makes cg's dot
    # products of 1e5 elements 10 times slower at random)
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
}


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_value_and_grad(x):
    return rosenbrock(x), rosen_der(x)


_rng = np.random.default_rng(0)
_X = _rng.standard_normal((200, 20))
_Y = (_rng.uniform(size=200) < 1 / (1 + np.exp(-_X @ _rng.standard_normal(20)))).astype(float)


def logistic(w):
    """L2-regularised logistic-regression loss, X 200x20."""
    z = _X @ w
    return np.sum(np.logaddexp(0.0, z) - _Y * z) + 0.5 * np.sum(w * w)


#: at most this many cg iterations per solve (ill-conditioned at large n)
CG_MAXITER = 200
#: eigenvalues asked of eigsh (the largest)
EIGSH_K = 3


def median_time(fn, repeat):
    return median_times([fn], repeat)[0]


def median_times(fns, repeat):
    """The median time of each function, timed in turn in each round (a
    change of the machine's load falls on all of them alike)."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def fit(f, x0, method, staged, h=None, options=None):
    h = h if h is not None else cr.hessp(f, staged=staged)
    return minimize(h.value_and_grad, x0, jac=True, hessp=h, method=method,
                    options=options or {})


def minimize_rows(repeat, sizes, methods):
    rows = []
    problems = [(f"rosenbrock n={n}", rosenbrock, np.random.default_rng(n).uniform(0.0, 2.0, n),
                 rosen_value_and_grad, rosen_hess_prod) for n in sizes]
    problems.append(("logistic 200x20", logistic, np.zeros(20), None, None))
    for name, f, x0, vg_ref, hessp_ref in problems:
        for method in methods:
            # (Newton-CG's default xtol stops early, where rounding decides the path)
            opts = {"maxiter": 2000, **({"xtol": 1e-10} if method == "Newton-CG" else {})}
            res_old = fit(f, x0, method, False, options=opts)
            res_new = fit(f, x0, method, True, options=opts)
            if vg_ref is not None:
                def scipys():
                    return minimize(vg_ref, x0, jac=True, hessp=hessp_ref, method=method,
                                    options=opts)
            else:
                def scipys():
                    return res_old
            ref = scipys()
            h_reused = cr.hessp(f)
            fit(f, x0, method, True, h_reused, opts)  # records and checks the plans
            t_ref, t_old, t_new, t_reused = median_times(
                [scipys, lambda: fit(f, x0, method, False, options=opts),
                 lambda: fit(f, x0, method, True, options=opts),
                 lambda: fit(f, x0, method, True, h_reused, opts)], repeat)
            if vg_ref is None:
                t_ref = float("nan")
            same = np.max(np.abs(res_new.x - res_old.x))
            diff = np.max(np.abs(res_new.x - ref.x))
            rows.append((name, method, res_new.nit, res_new.nhev, t_ref, t_old, t_new,
                         t_reused, same, diff, h_reused.staged))
    return rows


def operator_rows(repeat, sizes):
    rows = []
    rng = np.random.default_rng(1)
    # near the minimum, where the Hessian is positive definite (for cg)
    problems = [(f"rosenbrock n={n}", rosenbrock, 1.0 + 0.01 * rng.standard_normal(n))
                for n in sizes]
    problems.append(("logistic 200x20", logistic, rng.standard_normal(20)))
    stage_after = linearization.STAGE_AFTER
    for name, f, x in problems:
        n = x.size
        v = rng.standard_normal(n)
        # per matvec: eager sweeps vs the replayed plan (one operator each)
        linearization.STAGE_AFTER = 10 ** 9
        try:
            H_old = cr.hessian_operator(f, x)
            t_old = median_time(lambda: H_old.matvec(v), repeat * 20)
        finally:
            linearization.STAGE_AFTER = stage_after
        min_gain = linearization.MIN_GAIN
        linearization.MIN_GAIN = 0.0  # keep the plan whatever its speed: time it
        H = cr.hessian_operator(f, x)
        for _ in range(stage_after):
            H.matvec(v)
        t0 = time.perf_counter()
        H.matvec(v)  # records the plan
        t_record = time.perf_counter() - t0
        t0 = time.perf_counter()
        H.matvec(v)  # checks it against an eager sweep
        t_check = time.perf_counter() - t0
        np.testing.assert_allclose(H.matvec(v), H_old.matvec(v), rtol=1e-12,
                                   atol=1e-12 * np.max(np.abs(H_old.matvec(v))))
        t_plan = median_time(lambda: H.matvec(v), repeat * 20)
        linearization.MIN_GAIN = min_gain
        # what an operator decides by itself
        H_default = cr.hessian_operator(f, x)
        for _ in range(stage_after + 2 + linearization.PROBE_CALLS):
            H_default.matvec(v)
        kept = H_default._products.use_plan
        # a cg solve on a fresh operator, recording of f included
        A = cr.hessian_operator(f, x)
        b = A.matvec(np.ones(n))  # H @ 1: a right-hand side with a known solution

        def solve(stage):
            linearization.STAGE_AFTER = stage
            try:
                op = cr.hessian_operator(f, x)
                sol, info = cg(op, b, rtol=1e-10, maxiter=CG_MAXITER)
            finally:
                linearization.STAGE_AFTER = stage_after
            return sol, info

        sol_old, _ = solve(10 ** 9)
        sol_new, _ = solve(stage_after)
        iters = []
        cg(A, b, rtol=1e-10, maxiter=CG_MAXITER, callback=lambda xk: iters.append(1))
        t_cg_old, t_cg_new = median_times([lambda: solve(10 ** 9), lambda: solve(stage_after)],
                                          repeat)

        # the largest eigenvalues, a longer run of products
        def eigen(stage):
            linearization.STAGE_AFTER = stage
            try:
                return eigsh(cr.hessian_operator(f, x), k=EIGSH_K, which="LA", tol=1e-8)[0]
            finally:
                linearization.STAGE_AFTER = stage_after

        products = []
        counted = LinearOperator(A.shape, matvec=lambda v: products.append(1) or A.matvec(v),
                                 dtype=np.float64)
        eigsh(counted, k=EIGSH_K, which="LA", tol=1e-8)
        eig_diff = np.max(np.abs(eigen(10 ** 9) - eigen(stage_after)))
        t_eig_old, t_eig_new = median_times([lambda: eigen(10 ** 9), lambda: eigen(stage_after)],
                                            repeat)
        rows.append((name, t_old, t_plan, t_record, t_check, kept, len(iters), t_cg_old, t_cg_new,
                     np.max(np.abs(sol_old - sol_new)), len(products), t_eig_old, t_eig_new,
                     eig_diff))
    return rows


def main():
    if any(os.environ.get(k) != v for k, v in ENV.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **ENV})
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--operator-sizes", type=int, nargs="*", default=[100, 1000, 10000, 100000])
    ap.add_argument("--methods", nargs="*", default=["trust-krylov", "Newton-CG"])
    args = ap.parse_args()
    warnings.simplefilter("error", cr.StagingWarning)
    print(f"kernels: {kernels.mode()} (numba {'available' if kernels.available() else 'absent'})"
          f", medians of {args.repeat} runs")
    print("\nscipy.optimize.minimize with cr.hessp: ms per call (ratio old/plans)")
    print("| problem | method | nit | nhev | SciPy hand-written | old path | plans, fresh "
          "| plans, reused | old/fresh | old/reused | x: plans - old | x: plans - SciPy's |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, method, nit, nhev, t_ref, t_old, t_new, t_reused, same, diff,
         staged) in minimize_rows(args.repeat, args.sizes, args.methods):
        assert staged, f"{name} {method}: the plans gave up"
        print(f"| {name} | {method} | {nit} | {nhev} | {t_ref * 1e3:.2f} | {t_old * 1e3:.2f} "
              f"| {t_new * 1e3:.2f} | {t_reused * 1e3:.2f} | {t_old / t_new:.2f}x "
              f"| {t_old / t_reused:.2f}x | {same:.1e} | {diff:.1e} |")
    print("\ncr.hessian_operator: ms per matvec, eager sweeps vs plan; cg solve on a fresh "
          "operator")
    rows = operator_rows(args.repeat, args.operator_sizes)
    print("| problem | matvec eager | matvec plan | eager/plan | record call | check call "
          "| plan kept |")
    print("|---|---|---|---|---|---|---|")
    for name, t_old, t_plan, t_record, t_check, kept, *_ in rows:
        print(f"| {name} | {t_old * 1e3:.3f} | {t_plan * 1e3:.3f} | {t_old / t_plan:.2f}x "
              f"| {t_record * 1e3:.2f} | {t_check * 1e3:.2f} | {'yes' if kept else 'no'} |")
    print(f"\nsolves on a fresh operator (recording of f included), ms: eager sweeps vs "
          f"the default (STAGE_AFTER = {linearization.STAGE_AFTER})")
    print("| problem | cg products | cg eager | cg default | eager/default | x diff "
          f"| eigsh(k={EIGSH_K}) products | eigsh eager | eigsh default | eager/default "
          "| eigenvalue diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, *_, iters, t_cg_old, t_cg_new, diff, n_eig, t_eig_old, t_eig_new,
         eig_diff) in rows:
        print(f"| {name} | {iters + 1} | {t_cg_old * 1e3:.2f} | {t_cg_new * 1e3:.2f} "
              f"| {t_cg_old / t_cg_new:.2f}x | {diff:.1e} | {n_eig} | {t_eig_old * 1e3:.2f} "
              f"| {t_eig_new * 1e3:.2f} | {t_eig_old / t_eig_new:.2f}x | {eig_diff:.1e} |")


if __name__ == "__main__":
    main()
