"""What the first calls of ``cr.jit(cr.value_and_grad(f))`` cost, against an
eager ``cr.value_and_grad(f)`` call.

The first call of a signature records a plan (runs ``f`` on staged values
and builds the plan's steps); the second runs the plan's passes, replays
it and checks it against an eager call; the next ``plan.COMPILE_AFTER -
2`` replays run the plan's steps as data ("3rd..", their mean), the one
after also writes the plan's source ("writing"), the next compiles its
first segment ("compiling"; each later one compiles one more,
``plan._segment_size`` lines each), and later calls run that code
("steady": the median of calls after, a few of which may compile a
segment of a long plan). "worst later": the slowest call after the second
(the replays that run a stage of the plan's passes first, the one that
writes the source, those that compile a segment each), the most any one
call of a signature costs once it is checked. Each round times these calls,
in turn, of a *new* jitted function, after one eager call; the table gives
the medians over the rounds (steady: the median of ``--replays`` calls per
round) and their ratios to the eager call. "record + check" is the first
two calls together: what a new signature costs before it pays off. (With
a tree whose plans compile at recording, "3rd.." is empty and
"compiling" is a plain replay.)

Plans with the same generated code share its compiled code object
(``chainrules.plan``). A new function usually generates new code, so by
default every round starts with that cache empty ("cold"); ``--warm``
keeps it (a program that re-creates its jitted functions, or many
signatures with the same code).

The process runs with glibc's default allocator settings (a user's
process); ``--allocator fixed`` re-runs it with ``run.py``'s (no trim: no
page faults for arrays freed and made again).

Run: python benchmarks/first_call.py [--rounds 15] [--warm]
         [--allocator default|fixed] [--scipy-src PATH] [--only NAME,...]
"""

import argparse
import gc
import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chainrules as cr  # noqa: E402
from chainrules import plan as _plan  # noqa: E402
from common import (MLP_BATCH, MLP_SIZES, lstm_loss, lstm_params, make_data,  # noqa: E402
                    mlp_loss, rosen)


def _workloads(scipy_src, go_names):
    rng = np.random.default_rng(0)
    out = []

    def rosenbrock(x):
        return rosen(np, x)

    out.append(("rosenbrock n=10", rosenbrock, (1.0 + 0.3 * rng.standard_normal(10),)))
    out.append(("rosenbrock n=1e4", rosenbrock,
                (1.0 + 0.3 * rng.standard_normal(10_000),)))

    def two_ops(x):
        return np.sin(x) * x

    out.append(("2 ops (0-d)", two_ops, (np.array(0.3),)))

    sizes = MLP_SIZES
    params = tuple(a for i in range(3) for a in (
        rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i]),
        0.1 * rng.standard_normal(sizes[i + 1])))
    X = rng.standard_normal((MLP_BATCH, sizes[0]))
    Y = np.eye(sizes[-1])[rng.integers(0, sizes[-1], MLP_BATCH)]

    def mlp(p, X, Y):
        return mlp_loss(np, p, X, Y)

    out.append(("MLP 784-256-256-10", mlp, (params, X, Y)))

    # a loop of 64 steps: a plan of thousands of steps, whose passes at the
    # check call are what a long loop pays (the seeded data of run.py)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        d = make_data(os.path.join(tmp, "data.npz"))

    def lstm(p, X, T):
        return lstm_loss(np, p, X, T)

    out.append(("LSTM (64 steps)", lstm, (lstm_params(d), d["lstm_X"], d["lstm_T"])))
    if scipy_src:
        from scipy_go import _functions
        for name, cls in _functions(scipy_src):
            if name not in go_names:
                continue
            b = cls()
            lo, hi = np.array(b.bounds, dtype=float).T
            x = lo + (hi - lo) * rng.uniform(0.1, 0.9, size=lo.shape)
            out.append((f"go {name}", b.fun, (x,)))
    return out


def _once(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def measure(f, args, rounds, replays, warm):
    vg = cr.value_and_grad(f)
    for _ in range(3):
        vg(*args)
        j = cr.jit(cr.value_and_grad(f))
        for _ in range(3):
            j(*args)
    # the replays before the one that compiles the plan's code (none
    # before plans replayed their steps first)
    stepped = getattr(_plan, "COMPILE_AFTER", 0) - 1
    rows = {"eager": [], "first": [], "second": [], "stepped": [], "writing": [],
            "compiling": [], "steady": [], "worst": []}
    for _ in range(rounds):
        gc.collect()
        rows["eager"].append(min(_once(vg, *args) for _ in range(3)))
        if not warm and hasattr(_plan, "clear_code_cache"):
            _plan.clear_code_cache()
        j = cr.jit(cr.value_and_grad(f))
        rows["first"].append(_once(j, *args))
        rows["second"].append(_once(j, *args))
        later = []
        if stepped > 1:
            times = [_once(j, *args) for _ in range(stepped - 1)]
            rows["stepped"].append(sum(times) / (stepped - 1))
            later += times
        if stepped > 0:  # the last stepped replay writes the plan's source
            rows["writing"].append(_once(j, *args))
            later.append(rows["writing"][-1])
        rows["compiling"].append(_once(j, *args))
        times = [_once(j, *args) for _ in range(replays)]
        rows["steady"].append(statistics.median(times))
        rows["worst"].append(max(later + rows["compiling"][-1:] + times))
        info = j.cache_info()
        if info["eager"]:
            raise RuntimeError(f"not staged: {j.eager_reasons()}")
    return {k: statistics.median(v) if v else float("nan") for k, v in rows.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--warm", action="store_true",
                    help="keep the compiled code of plans between rounds")
    ap.add_argument("--scipy-src", default=os.environ.get("SCIPY_SRC"),
                    help="a SciPy source tree: adds a few of its go functions")
    ap.add_argument("--go", default="Zettl,Treccani,Ackley01,Rastrigin,Schwefel26",
                    help="which go functions (with --scipy-src)")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--allocator", choices=("default", "fixed"), default="default",
                    help="glibc's allocator settings: a user's (default) or run.py's")
    args = ap.parse_args()
    if args.allocator == "fixed":
        from common import MALLOC_ENV
        if any(os.environ.get(k) != v for k, v in MALLOC_ENV.items()):
            os.execve(sys.executable, [sys.executable] + sys.argv,
                      {**os.environ, **MALLOC_ENV})
    elif any(k.startswith("MALLOC_") for k in os.environ):
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")})
    warnings.simplefilter("error", cr.StagingWarning)
    only = set(args.only.split(",")) if args.only else None
    print(f"code cache {'warm' if args.warm else 'cold'}; glibc allocator {args.allocator}; "
          f"medians of {args.rounds} rounds; times in us")
    print()
    print("| function | eager | first | second | 3rd.. | writing | compiling | steady | "
          "first / eager | second / eager | record + check / eager | writing / eager | "
          "compiling / eager | steady / eager | worst later / eager |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, f, fargs in _workloads(args.scipy_src, set(args.go.split(","))):
        if only and name not in only:
            continue
        m = measure(f, fargs, args.rounds, args.replays, args.warm)
        e = m["eager"]
        print(f"| {name} | {e * 1e6:.0f} | {m['first'] * 1e6:.0f} | "
              f"{m['second'] * 1e6:.0f} | {m['stepped'] * 1e6:.1f} | "
              f"{m['writing'] * 1e6:.0f} | {m['compiling'] * 1e6:.0f} | "
              f"{m['steady'] * 1e6:.1f} | {m['first'] / e:.2f} | {m['second'] / e:.2f} | "
              f"{(m['first'] + m['second']) / e:.2f} | {m['writing'] / e:.2f} | "
              f"{m['compiling'] / e:.2f} | "
              f"{m['steady'] / e:.3f} | {m['worst'] / e:.2f} |", flush=True)


if __name__ == "__main__":
    main()
