"""Derivatives of integrals through ``chainrules.scipy.integrate.quad`` and
``quad_vec``: the time of ``cr.grad`` and ``cr.hvp`` of a loss, in a loop
that calls them again at new parameters (an optimiser's), and how many
times the integrand ran.

SciPy evaluates the derivative's integrand (a ``vjp`` of the user's
integrand for the gradient, a ``jvp`` of that for the HVP) at every
quadrature point (21 per subinterval for ``quad_vec``). Each evaluation
traces the integrand; with staged plans (rules/scipy_quad.py,
rules/scipy_integrate_plans.py) it replays a plan recorded at the first
points of the first call. The cases:

* ``quad``: ``p0 exp(-p1 x^2) cos(p2 x)`` over ``[0, 3]``, ``args=(p,)``;
* ``quad inf``: ``exp(-p0 x^2) / (1 + p1 x^2)`` over ``[0, inf)``;
* ``quad_vec``: ``exp(-w x) sin(x + w)`` over ``[0, 2]``, ``w`` of 5
  entries closed over.

Columns: milliseconds of the first call and the median of the next
``--repeat`` calls (each at parameters scaled by ``1 + 0.01 i``), and the
calls of the user's integrand per call once warm (a count the machine's
load does not change: each eager evaluation of a derivative calls it
once). ``--profile`` prints instead, from cProfile over 10 warm calls, the
calls per call of ``chainrules.vjp`` and ``chainrules.jvp`` (each traces
the integrand once), of the integrand and of all Python functions: counts
the load does not change. Usage: ``python benchmarks/quad_plans.py
[--repeat 15] [--profile]``.
"""

import argparse
import cProfile
import pstats
import statistics
import time

import numpy as np

import chainrules as cr
from chainrules.scipy.integrate import quad, quad_vec

CALLS = {"n": 0}


def bump(x):
    CALLS["n"] += 1
    return x


def quad_loss(p):
    f = lambda x, p: bump(p[0] * np.exp(-p[1] * x * x) * np.cos(p[2] * x))  # noqa: E731
    return quad(f, 0.0, 3.0, args=(p,))[0] ** 2


def quad_inf_loss(p):
    f = lambda x, p: bump(np.exp(-p[0] * x * x) / (1.0 + p[1] * x * x))  # noqa: E731
    return quad(f, 0.0, np.inf, args=(p,))[0] ** 2


def quad_vec_loss(w):
    return np.sum(quad_vec(lambda x: bump(np.exp(-w * x) * np.sin(x + w)), 0.0, 2.0)[0] ** 2)


CASES = {
    "quad": (quad_loss, np.array([1.2, 0.7, 1.3])),
    "quad inf": (quad_inf_loss, np.array([0.8, 0.4])),
    "quad_vec": (quad_vec_loss, np.linspace(0.5, 1.5, 5)),
}


def timed(call, x0, repeat):
    """(first call ms, median ms of the next ``repeat``, integrand calls per
    warm call)."""
    t0 = time.perf_counter()
    call(x0)
    first = 1e3 * (time.perf_counter() - t0)
    times, counts = [], []
    for i in range(1, repeat + 1):
        CALLS["n"] = 0
        t0 = time.perf_counter()
        call(x0 * (1 + 0.01 * i))
        times.append(1e3 * (time.perf_counter() - t0))
        counts.append(CALLS["n"])
    return first, statistics.median(times), statistics.median(counts)


def profiled(call, x0, calls=10):
    """Calls per warm call: ``(chainrules.vjp, chainrules.jvp, the integrand,
    all Python functions)``."""
    call(x0)
    pr = cProfile.Profile()
    pr.enable()
    for i in range(1, calls + 1):
        call(x0 * (1 + 0.01 * i))
    pr.disable()
    counts = {"vjp": 0, "jvp": 0, "<lambda>": 0}
    total = 0
    for (path, _, func), (_, ncalls, _, _, _) in pstats.Stats(pr).stats.items():
        total += ncalls
        if path.endswith("api.py") and func in ("vjp", "jvp") \
                or path == __file__ and func == "<lambda>":
            counts[func] += ncalls
    return tuple(n / calls for n in (counts["vjp"], counts["jvp"], counts["<lambda>"], total))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.profile:
        print("| case | derivative | chainrules.vjp | chainrules.jvp | integrand | Python calls |")
        print("|---|---|---|---|---|---|")
        for name, (loss, x0) in CASES.items():
            v = np.linspace(-1.0, 1.0, x0.size)
            def hvp(x, loss=loss, v=v):   # (not a lambda: those are counted)
                return cr.hvp(loss, x, v)

            for what, call in (("grad", cr.grad(loss)), ("hvp", hvp)):
                n = profiled(call, x0)
                print(f"| {name} | {what} | {n[0]:.0f} | {n[1]:.0f} | {n[2]:.0f} | {n[3]:.0f} |")
        return
    print("| case | derivative | first call (ms) | median (ms) | integrand calls per call |")
    print("|---|---|---|---|---|")
    for name, (loss, x0) in CASES.items():
        v = np.linspace(-1.0, 1.0, x0.size)
        grad = cr.grad(loss)
        for what, call in (("grad", grad), ("hvp", lambda x: cr.hvp(loss, x, v))):
            first, med, n = timed(call, x0, args.repeat)
            print(f"| {name} | {what} | {first:.1f} | {med:.1f} | {n:.0f} |")


if __name__ == "__main__":
    main()
