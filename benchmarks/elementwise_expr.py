"""Elementwise partial derivatives as expressions: the partial's own callable
vs ``chainrules.elementwise_expr.evaluate`` (NumPy, dead temporaries reused)
vs numexpr at 1 and 2 threads, for a few derivatives at sizes 1e3 .. 1e6,
to find the size from which numexpr pays.

Run: python benchmarks/elementwise_expr.py [--dtype float32] [--repeats N]
Prints one table: microseconds per call, the best of the repeats (the least
disturbed by other load on the machine). The numexpr columns are left out
when numexpr is not installed.
"""

import argparse
import time

import numpy as np

import chainrules.rules  # noqa: F401  (registers the rule library)
from chainrules import elementwise_expr as ee
from chainrules.registry import DISPATCHERS

try:
    import numexpr
except ImportError:
    numexpr = None

#: (label, op, field of its spec)
CASES = [
    ("tanh f'", np.tanh, "d"),
    ("tanh f''", np.tanh, "d2"),
    ("tanh f''/f'", np.tanh, "ratio"),
    ("log f''", np.log, "d2"),
    ("sinc f'", np.sinc, "d"),
    ("logaddexp d2/dx2", np.logaddexp, "dxx"),
]
SIZES = (1_000, 10_000, 100_000, 1_000_000)


def spec_of(op):
    for maker in DISPATCHERS[op].funcs.values():
        spec = getattr(maker, "spec", None)
        if spec is not None:
            return spec
    raise LookupError(op)


def best_us(fn, repeats):
    fn()
    n = 1
    while True:  # calls per sample: about 2 ms
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t > 2e-3 or n >= 1 << 14:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return min(samples)


def env_for(op, n, dtype, rng):
    x = rng.uniform(0.2, 3.0, n).astype(dtype)
    if op is np.logaddexp:
        y = rng.uniform(-3.0, 3.0, n).astype(dtype)
        return {"x": x, "y": y, "z": np.logaddexp(x, y)}
    return {"x": x, "y": op(x)}


def row(label, op, field, n, dtype, repeats, rng):
    spec = spec_of(op)
    env = env_for(op, n, dtype, rng)
    expr = ee.expressions(spec, dtype)[field]
    partial = getattr(spec, field)
    args = tuple(env.values())
    out = np.empty(n, dtype)
    cells = [best_us(lambda: partial(*args), repeats),
             best_us(lambda: ee.evaluate(expr, env), repeats),
             best_us(lambda: ee.evaluate(expr, env, out=out), repeats)]
    if numexpr is not None:
        for threads in (1, 2):
            numexpr.set_num_threads(threads)
            cells.append(best_us(lambda: ee.evaluate_numexpr(expr, env, out=out), repeats))
    return [label, f"{n:.0e}"] + [f"{c:9.1f}" for c in cells]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    dtype = np.dtype(a.dtype)
    rng = np.random.default_rng(0)
    head = ["derivative", "size", "callable", "evaluate", "eval out="]
    if numexpr is not None:
        head += ["numexpr 1t", "numexpr 2t"]
    print(f"microseconds per call (best of {a.repeats}), {dtype}, numpy {np.__version__}, numexpr "
          f"{numexpr.__version__ if numexpr else 'not installed'}")
    print(" | ".join(f"{h:>16}" if i < 1 else f"{h:>10}" for i, h in enumerate(head)))
    with np.errstate(all="ignore"):
        for label, op, field in CASES:
            for n in SIZES:
                r = row(label, op, field, n, dtype, a.repeats, rng)
                print(" | ".join(f"{c:>16}" if i < 1 else f"{c:>10}" for i, c in enumerate(r)))
    if numexpr is not None:
        print("numexpr expressions:")
        for label, op, field in CASES:
            print(f"  {label}: {ee.to_numexpr(ee.expressions(spec_of(op), dtype)[field], {})}")


if __name__ == "__main__":
    main()
