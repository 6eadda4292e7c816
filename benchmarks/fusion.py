"""Fused sweeps against the rules one by one, by array size.

For a few elementwise functions, the time of ``value_and_grad`` and ``hvp``
with fusion on (the default) and off (``chainrules.fusion(False)``), in one
process, alternated, best of ``--repeats`` rounds; the ratio fused / unfused
per size decides ``chainrules.fused_sweeps.MIN_SIZE`` and ``MIN_SIZE_SECOND``
(below them the fixed cost of fusing is not repaid by the passes it saves).

    python benchmarks/fusion.py [--sizes 16,256,4096,65536,1000000] [--repeats 7]

Threads: set ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` as for ``run.py``;
these functions make no BLAS calls.
"""

import argparse
import time

import numpy as np

import chainrules as cr
from chainrules import fused_sweeps


def rosen(x):
    a = x[:-1]
    return np.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)


def tanh_chain(x):
    for _ in range(4):
        x = np.tanh(np.sin(x) * 1.01 + 0.1)
    return np.sum(x)


def softplus_fit(x):
    y = np.logaddexp(0.0, x * 0.5 - 0.25)
    return np.sum((y - 0.3) ** 2 + 0.01 * x * x)


FUNCTIONS = {"rosen": rosen, "tanh_chain": tanh_chain, "softplus_fit": softplus_fit}


def hvp_programs(f, x, v):
    """The fused programs (``elementwise_expr.Program``) that ``hvp(f, x, v)``
    runs, each with its values: ``[(program, env), ...]``, captured whole
    (one thread, no blocks)."""
    from chainrules import elementwise_expr as ee
    from chainrules import elementwise_threads as et

    captured = []
    call, blocked = ee.Program.__call__, et.MIN_BLOCKED

    def spy(self, env, *args, **kwargs):
        captured.append((self, dict(env)))
        return call(self, env, *args, **kwargs)

    ee.Program.__call__ = spy
    et.MIN_BLOCKED = float("inf")
    try:
        with cr.fusion(threads=1):
            cr.hvp(f, x, v)
    finally:
        ee.Program.__call__, et.MIN_BLOCKED = call, blocked
    return captured


def programs_by_size(sizes, functions=None):
    """``(name, size, hvp_programs(f, x, v))`` for each size (a string of
    comma-separated numbers, "1e6" allowed) and function (default
    ``FUNCTIONS``), on the same random ``x`` and ``v`` of that size."""
    for size in (int(float(s)) for s in sizes.split(",")):
        rng = np.random.default_rng(0)
        x, v = rng.standard_normal(size), rng.standard_normal(size)
        for name, f in (FUNCTIONS if functions is None else functions).items():
            yield name, size, hvp_programs(f, x, v)


def _best(fn, budget):
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget / 4:
        fn()
        n += 1
    n = max(n, 1)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,256,1024,4096,16384,100000,1000000")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--budget", type=float, default=0.2, help="seconds per timing")
    a = ap.parse_args(argv)
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    saved = fused_sweeps.MIN_SIZE, fused_sweeps.MIN_SIZE_SECOND
    fused_sweeps.MIN_SIZE = fused_sweeps.MIN_SIZE_SECOND = 0  # fusion at every size
    rng = np.random.default_rng(0)
    print(f"{'function':14} {'sweep':6} {'size':>8} {'fused us':>10} {'unfused us':>11} "
          f"{'ratio':>6}")
    try:
        for name, f in FUNCTIONS.items():
            for n in sizes:
                x, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
                vg = cr.value_and_grad(f)
                for sweep, call in (("grad", lambda: vg(x)), ("hvp", lambda: cr.hvp(f, x, v))):
                    on, off = [], []
                    for _ in range(a.repeats):
                        on.append(_best(call, a.budget))
                        with cr.fusion(False):
                            off.append(_best(call, a.budget))
                    t_on, t_off = min(on), min(off)
                    print(f"{name:14} {sweep:6} {n:8d} {t_on * 1e6:10.1f} {t_off * 1e6:11.1f} "
                          f"{t_on / t_off:6.2f}", flush=True)
    finally:
        fused_sweeps.MIN_SIZE, fused_sweeps.MIN_SIZE_SECOND = saved


if __name__ == "__main__":
    main()
