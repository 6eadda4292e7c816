"""Per-op overhead of value_and_grad on a 200-op chain of small elementwise
ops (16-element float64 vector), chainrules vs HIPS autograd in one run.

Run: python benchmarks/per_op_overhead.py [--repeats N]
Reports microseconds per op beyond NumPy's own cost (median of repeats).
"""

import argparse
import statistics
import time

import numpy as np

N_BLOCKS = 50  # 4 ops per block -> 200 ops, plus the final sum


def chain(np_, x):
    for _ in range(N_BLOCKS):
        x = np_.sin(x)
        x = x * 1.01
        x = x + 0.1
        x = np_.tanh(x)
    return np_.sum(x)


def timeit(fn, repeats, inner):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t) / inner)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--inner", type=int, default=50)
    args = ap.parse_args()
    x = np.random.default_rng(0).standard_normal(16)
    n_ops = 4 * N_BLOCKS + 1
    base = timeit(lambda: chain(np, x), args.repeats, args.inner)
    rows = [("numpy forward", base, 0.0)]

    import chainrules as cr

    vg = cr.value_and_grad(lambda x: chain(np, x))
    t = timeit(lambda: vg(x), args.repeats, args.inner)
    rows.append(("chainrules value_and_grad", t, (t - base) / n_ops * 1e6))
    ref = vg(x)[1]
    try:
        import autograd
        import autograd.numpy as anp

        ag = autograd.value_and_grad(lambda x: chain(anp, x))
        t = timeit(lambda: ag(x), args.repeats, args.inner)
        rows.append(("autograd value_and_grad", t, (t - base) / n_ops * 1e6))
        assert np.allclose(ag(x)[1], ref, rtol=1e-12), "autograd gradient differs"
    except ImportError:
        rows.append(("autograd (not installed)", float("nan"), float("nan")))
    print(f"200-op elementwise chain on 16 float64 elements ({n_ops} ops), median of "
          f"{args.repeats}x{args.inner}")
    print("| framework | time per call (us) | overhead per op beyond NumPy (us) |")
    print("|---|---|---|")
    for name, t, per in rows:
        print(f"| {name} | {t * 1e6:.1f} | {per:.2f} |")


if __name__ == "__main__":
    main()
