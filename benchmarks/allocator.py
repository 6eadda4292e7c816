"""Page faults and time per call under glibc's default allocator settings,
for a staged plan keeping its large private arrays between replays
(``chainrules.plan_buffers``) and the same plan keeping none.

glibc gives freed memory back to the system (it trims the heap's top and
unmaps large blocks), so a call that makes large temporaries and frees
them faults fresh pages in again at the next call; on this 2-core virtual
machine a fault costs about 2 us, more than the arithmetic on its page.
``run.py`` fixes the allocator identically for every framework (no trim,
no unmapping) so that no framework gains by reusing its heap; this script
measures what a user's process, with glibc's defaults, sees. Fault counts
(``getrusage``'s minor faults) do not move with the machine's load; the
times do.

Each case runs in a process of its own without the ``MALLOC_*`` settings,
at one BLAS thread: the NumPy forward, the eager ``value_and_grad`` (or
``hvp``), and the staged one with kept arrays and without
(``KEEP_MIN_BYTES`` set out of reach before its plan is prepared). Medians
of ``--calls`` calls after ``--warm`` calls (past the plan's compile and,
with numba, its kernels' warm-up).

Run: python benchmarks/allocator.py [--calls 200] [--warm 80] [--only NAME,...]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = ("rosenbrock-vg", "rosenbrock-hvp", "tv-vg", "mlp-vg")


def _case(name):
    import numpy as np

    import chainrules as cr
    sys.path.insert(0, HERE)
    from common import MLP_BATCH, MLP_SIZES, mlp_loss, rosen, tv_loss

    rng = np.random.default_rng(0)
    if name.startswith("rosenbrock"):
        x = 1.0 + 0.3 * rng.standard_normal(100_000)
        f = lambda x: rosen(np, x)  # noqa: E731
        if name.endswith("hvp"):
            return f, (x,), (lambda x, v: cr.hvp(f, x, v)), (x, np.cos(x))
        return f, (x,), cr.value_and_grad(f), (x,)
    if name == "tv-vg":
        img = rng.standard_normal((512, 512))
        f = lambda u: tv_loss(np, u, img)  # noqa: E731
        return f, (img,), cr.value_and_grad(f), (img,)
    sizes = MLP_SIZES
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((a, b)) * 0.1, np.zeros(b)]
    params = tuple(params)
    X = rng.standard_normal((MLP_BATCH, sizes[0]))
    Y = np.eye(sizes[-1])[rng.integers(0, sizes[-1], MLP_BATCH)]
    f = lambda p, X, Y: mlp_loss(np, p, X, Y)  # noqa: E731
    return f, (params, X, Y), cr.value_and_grad(f), (params, X, Y)


def _measure(fn, args, calls):
    times = []
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / calls
    return statistics.median(times), faults


def _child(name, variant, calls, warm):
    import chainrules as cr
    from chainrules import plan_buffers

    f, fargs, d, dargs = _case(name)
    if variant == "numpy":
        fn, args = f, fargs
    elif variant == "eager":
        fn, args = d, dargs
    else:
        fn, args = cr.jit(d), dargs
        if variant == "jit-unkept":
            keep = plan_buffers.KEEP_MIN_BYTES
            plan_buffers.KEEP_MIN_BYTES = 1 << 62
            fn(*args)
            fn(*args)  # (the plan is prepared at its first replay)
            plan_buffers.KEEP_MIN_BYTES = keep
    for _ in range(warm):
        fn(*args)
    t, faults = _measure(fn, args, calls)
    print(json.dumps({"seconds": t, "faults": faults}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warm", type=int, default=80)
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child(a.child[0], a.child[1], a.calls, a.warm)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    variants = ("numpy", "eager", "jit-unkept", "jit")
    print(f"glibc's default allocator, 1 BLAS thread, medians of {a.calls} calls; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| case | " + " | ".join(f"{v} us | {v} faults" for v in variants) +
          " | jit / numpy |")
    print("|---" * (2 * len(variants) + 2) + "|")
    for name in a.only.split(","):
        row = {}
        for v in variants:
            out = subprocess.run([sys.executable, __file__, "--calls", str(a.calls), "--warm",
                                  str(a.warm), "--child", name, v], env=env,
                                 capture_output=True, text=True, check=True)
            row[v] = json.loads(out.stdout.strip().splitlines()[-1])
        cells = " | ".join(f"{row[v]['seconds'] * 1e6:.0f} | {row[v]['faults']:.0f}"
                           for v in variants)
        print(f"| {name} | {cells} | {row['jit']['seconds'] / row['numpy']['seconds']:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
