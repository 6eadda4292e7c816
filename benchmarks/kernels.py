"""The costs of compiled kernels (``chainrules.kernels``, the numba extra):
when a staged plan's fused region is compiled, what the compile costs in a
new process and in a second one that finds it on disk, and what a replay
costs with the kernel and with the NumPy program.

    python benchmarks/kernels.py [--sizes 10000,100000,1000000] [--threads 1]

Per workload and size, each in fresh processes with an empty kernel cache
(a temporary ``CHAINRULES_CACHE_DIR``), then again with the cache that run
left:

- ``eager``: one eager call (the transformation without ``cr.jit``);
- ``first``: the first call of the jitted function (records the plan);
- ``hot after``: the calls it took until the region was compiled (the
  default tiering: ``kernels.COMPILE_SECONDS`` of NumPy time, or
  ``CACHED_SECONDS`` when numba's code is on disk, plus ``INIT_SECONDS``
  for the process's first kernel);
- ``compile``: the time of the call that compiled (minus a NumPy replay);
- ``numpy``, ``kernel``: a replay's time with the NumPy program and with the
  kernel (median of 30), and the NumPy forward's, as ratios to it.

Needs numba (``pip install "chainrules[numba]"``).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import json, statistics, sys, time
import numpy as np, chainrules as cr
from chainrules import kernels
name, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
x, v = rng.uniform(-1.5, 1.5, n), rng.standard_normal(n)
if name == "rosen_hvp":
    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    call = lambda x, v: cr.hvp(f, x, v)
elif name == "softplus_hvp":
    def f(x):
        return np.sum(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0) + 0.5 * x * x)
    call = lambda x, v: cr.hvp(f, x, v)
else:  # tanh_grad
    def f(x):
        return np.sum(np.tanh(x * 1.3 + 0.2) ** 2 * np.cos(x))
    call = lambda x, v: cr.grad(f)(x)
def clock(fn):
    t0 = time.perf_counter(); fn(); return time.perf_counter() - t0
eager = min(clock(lambda: call(x, v)) for _ in range(3))
fwd = statistics.median(clock(lambda: f(x)) for _ in range(30))
j = cr.jit(call)
first = clock(lambda: j(x, v))
times, hot, compile_t = [], None, None
for k in range(2, 2000):
    t = clock(lambda: j(x, v))
    rows = kernels.stats()
    if rows and rows[0]["compiled"] and hot is None:
        hot, compile_t = k, t
        break
    times.append(t)
    if sum(times) > 20:
        break
numpy_t = statistics.median(times[-30:]) if times else None
kernel_t = statistics.median(clock(lambda: j(x, v)) for _ in range(30))
rows = kernels.stats()
print(json.dumps(dict(eager=eager, fwd=fwd, first=first, hot=hot,
                      compile=None if compile_t is None or numpy_t is None
                      else compile_t - numpy_t,
                      numpy=numpy_t, kernel=kernel_t if rows and rows[0]["compiled"] else None,
                      reason=rows[0]["reason"] if rows else "no region")))
"""


def run(name, n, cache, threads):
    env = dict(os.environ, CHAINRULES_CACHE_DIR=cache, CHAINRULES_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MALLOC_MMAP_THRESHOLD_=str(32 * 1024 * 1024),
               MALLOC_TRIM_THRESHOLD_=str(1024 * 1024 * 1024))
    out = subprocess.run([sys.executable, "-c", WORKER, name, str(n)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ms(t):
    return "—" if t is None else f"{t * 1e3:.2f} ms"


def _x(t, base):
    return "—" if t is None or not base else f"{t / base:.2f}x"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--workloads", default="rosen_hvp,softplus_hvp,tanh_grad")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    print(f"threads {a.threads}; ratios to the NumPy forward; first = first jitted "
          "call / one eager call")
    print("| workload | n | cache | first | hot after | compile | NumPy plan | kernel | "
          "forward |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.workloads.split(","):
        for n in map(int, a.sizes.split(",")):
            with tempfile.TemporaryDirectory() as cache:
                for label in ("cold", "on disk"):
                    r = run(name, n, cache, a.threads)
                    print(f"| {name} | {n:.0e} | {label} | {_x(r['first'], r['eager'])} | "
                          f"{r['hot'] or '—'} calls | {_ms(r['compile'])} | "
                          f"{_x(r['numpy'], r['fwd'])} | {_x(r['kernel'], r['fwd'])}"
                          f"{'' if r['kernel'] else ' (' + str(r['reason']) + ')'} | "
                          f"{_ms(r['fwd'])} |", flush=True)


if __name__ == "__main__":
    main()
