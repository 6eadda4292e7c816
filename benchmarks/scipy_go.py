"""Gradients of SciPy's global-optimization benchmark functions: plain call,
eager ``value_and_grad``, staged ``cr.jit(value_and_grad)``, and BFGS end to
end with the staged gradient against SciPy's '2-point' default.

The functions (about 200 problems in plain NumPy) are read at run time from
a SciPy source checkout; their code is not part of chainrules. Get one with
``git clone --depth 1`` of the ``scipy/scipy`` repository, then::

    python benchmarks/scipy_go.py --scipy-src PATH/TO/scipy [--quick]

Each function is evaluated at a seeded random point inside its bounds.
Functions that the eager gradient refuses (Python's ``math`` on values,
non-differentiable indexing) or whose gradient is not finite there are
listed as skipped. Ratios are to the plain call; the table gives the
median, 10th and 90th percentiles, and the share of functions on which
BFGS with the staged gradient finished faster than with finite
differences (both from the same point, ``maxiter`` bounded; the fastest of
``BFGS_RUNS`` alternated runs each, with the iterations each took).
"""

import argparse
import importlib
import inspect
import os
import sys
import time
import timeit
import warnings

import numpy as np

import chainrules as cr


def _functions(src):
    root = os.path.join(src, "benchmarks", "benchmarks")
    if not os.path.isdir(os.path.join(root, "go_benchmark_functions")):
        sys.exit(f"no benchmarks/benchmarks/go_benchmark_functions under {src}: "
                 "give the root of a SciPy source checkout with --scipy-src")
    # the functions' package imports one helper of SciPy's benchmark suite
    # (``..common.safe_import``, which needs asv): a package of our own
    # stands for the suite's, with that helper alone
    import contextlib
    import types

    suite = types.ModuleType("_scipy_go_suite")
    suite.__path__ = [root]
    common = types.ModuleType("_scipy_go_suite.common")
    common.safe_import = contextlib.nullcontext
    sys.modules["_scipy_go_suite"] = suite
    sys.modules["_scipy_go_suite.common"] = common
    pkg = importlib.import_module("_scipy_go_suite.go_benchmark_functions")
    base = importlib.import_module(f"{pkg.__name__}.go_benchmark").Benchmark
    out = []
    for name in sorted(os.listdir(os.path.join(root, "go_benchmark_functions"))):
        if not name.startswith("go_funcs") or not name.endswith(".py"):
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{name[:-3]}")
        for cname, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, base) and cls is not base and cls.__module__ == mod.__name__:
                out.append((cname, cls))
    return sorted(out)


#: runs of each BFGS minimisation (the fastest is kept)
BFGS_RUNS = 5


def _time(fn, budget):
    n, t = 1, 0.0
    while True:
        t = timeit.timeit(fn, number=n)
        if t > budget / 5 or n > 1e6:
            break
        n *= 4
    return min(timeit.repeat(fn, number=n, repeat=3)) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scipy-src", default=os.environ.get("SCIPY_SRC"),
                    help="root of a SciPy source checkout")
    ap.add_argument("--quick", action="store_true", help="shorter timings, no BFGS")
    ap.add_argument("--only", default=None, help="comma-separated function names")
    args = ap.parse_args()
    if not args.scipy_src:
        sys.exit(__doc__)
    from scipy.optimize import minimize

    budget = 0.01 if args.quick else 0.05
    rng = np.random.default_rng(0)
    rows, skipped = [], []
    warnings.simplefilter("ignore")
    only = set(args.only.split(",")) if args.only else None
    for name, cls in _functions(args.scipy_src):
        if only and name not in only:
            continue
        try:
            b = cls()
            lo, hi = np.array(b.bounds, dtype=float).T
        except Exception as e:  # noqa: BLE001 - a problem that does not build
            skipped.append((name, f"setup: {type(e).__name__}"))
            continue
        x = lo + (hi - lo) * rng.uniform(0.1, 0.9, size=lo.shape)
        f = b.fun
        vg = cr.value_and_grad(f)
        try:
            v, g = vg(x)
            if not np.all(np.isfinite(g)) or not np.isfinite(v):
                skipped.append((name, "gradient not finite"))
                continue
        except Exception as e:  # noqa: BLE001 - refused by the eager gradient
            skipped.append((name, f"eager: {type(e).__name__}"))
            continue
        staged = cr.jit(vg)
        try:
            for k in range(3):
                sv, sg = staged(x)
            ok = np.allclose(sv, v, rtol=1e-9, atol=1e-12) and np.allclose(
                sg, g, rtol=1e-9, atol=1e-12 * (1 + np.max(np.abs(g))))
        except Exception as e:  # noqa: BLE001
            skipped.append((name, f"staged: {type(e).__name__}: {e}"))
            continue
        eager_only = staged.cache_info()["eager"] > 0
        t_plain = _time(lambda: f(x), budget)
        t_eager = _time(lambda: vg(x), budget)
        t_staged = _time(lambda: staged(x), budget)
        row = dict(name=name, n=x.size, plain=t_plain, eager=t_eager / t_plain,
                   staged=t_staged / t_plain, ok=ok, eager_only=eager_only)
        if not args.quick:
            x0 = lo + (hi - lo) * rng.uniform(0.3, 0.7, size=lo.shape)
            opts = {"maxiter": 50}
            # the fastest of BFGS_RUNS runs each, alternated: a run of a
            # small problem takes about a millisecond, which one context
            # switch on a busy machine doubles
            t_fd = t_ad = np.inf
            for _ in range(BFGS_RUNS):
                t0 = time.perf_counter()
                r_fd = minimize(f, x0, method="BFGS", options=opts)
                t_fd = min(t_fd, time.perf_counter() - t0)
                t0 = time.perf_counter()
                r_ad = minimize(staged, x0, method="BFGS", jac=True, options=opts)
                t_ad = min(t_ad, time.perf_counter() - t0)
            row.update(bfgs_fd=t_fd, bfgs_staged=t_ad, nit_fd=r_fd.nit, nit_staged=r_ad.nit)
        rows.append(row)
        print(f"{name:24s} n={x.size:3d} plain {t_plain * 1e6:8.1f} us  eager "
              f"{row['eager']:7.1f}x  staged {row['staged']:6.1f}x"
              + ("" if ok else "  MISMATCH") + ("  (eager fallback)" if eager_only else "")
              + (f"  BFGS {row['bfgs_staged'] / row['bfgs_fd']:.2f}x of 2-point"
                 f" ({row['nit_staged']} / {row['nit_fd']} iterations)"
                 if "bfgs_fd" in row else ""), flush=True)
    print()
    print(f"{len(rows)} functions timed, {len(skipped)} skipped:")
    for name, why in skipped:
        print(f"  {name}: {why}")
    e = np.array([r["eager"] for r in rows])
    s = np.array([r["staged"] for r in rows])
    print()
    print("| gradient / plain call | median | p10 | p90 |")
    print("|---|---|---|---|")
    for label, a in (("eager value_and_grad", e), ("staged value_and_grad", s)):
        print(f"| {label} | {np.median(a):.1f}x | {np.percentile(a, 10):.1f}x | "
              f"{np.percentile(a, 90):.1f}x |")
    bad = [r["name"] for r in rows if not r["ok"]]
    print(f"\nstaged differs from eager: {bad or 'none'}")
    print(f"staged signatures running eagerly: "
          f"{[r['name'] for r in rows if r['eager_only']] or 'none'}")
    if rows and "bfgs_fd" in rows[0]:
        faster = np.mean([r["bfgs_staged"] < r["bfgs_fd"] for r in rows])
        print(f"BFGS with the staged gradient faster than '2-point': {100 * faster:.0f}% "
              f"of {len(rows)} (the fastest of {BFGS_RUNS} runs each)")
        slower = [r for r in rows if r["bfgs_staged"] >= r["bfgs_fd"]]
        more = [r["name"] for r in slower if r["nit_staged"] > r["nit_fd"]]
        print(f"  slower: {[r['name'] for r in slower] or 'none'}; of these, with more "
              f"iterations than '2-point': {more or 'none'}")


if __name__ == "__main__":
    main()
