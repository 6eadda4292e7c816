"""Instructions per call of a chainrules workload, counted by callgrind.

    python benchmarks/instructions.py                 # the 200-op chain's value_and_grad
    python benchmarks/instructions.py --case numpy    # the same chain in plain NumPy
    python benchmarks/instructions.py --case sum      # value_and_grad of np.sum (fixed cost)
    python benchmarks/instructions.py --case twoop    # value_and_grad of np.sum(np.sin(x) * x)
    python benchmarks/instructions.py --case grad     # the same through grad
    python benchmarks/instructions.py --case hvp      # hvp of the same function
    python benchmarks/instructions.py --case first    # first call of cr.jit of that value_and_grad
    python benchmarks/instructions.py --case rosen-eager / rosen-first   # the same, Rosenbrock n=10
    python benchmarks/instructions.py --case go:Matyas --scipy-src PATH  # a SciPy go function

Wall-clock timings of the per-op overhead move by tens of percent between
runs on a shared 2-core machine. Instruction counts do not: valgrind's
callgrind counts what the CPU executes, so two runs of the same code agree to
the instruction, whatever else the machine is doing. That makes the count the
measure to use for a change to the per-op hot path (tracing, rule makers,
the tape, the reverse sweep), measured before and after.

The script runs the case N1 and N2 times after a warm-up, each in a process of
its own under ``valgrind --tool=callgrind``, and reports (count(N2) -
count(N1)) / (N2 - N1), so that start-up and imports cancel out. For counts
that repeat exactly it fixes what would otherwise vary between runs: one BLAS
thread (a spinning OpenBLAS pool executes instructions while it waits), the
hash seed, address-space randomisation (``setarch -R``) and the garbage
collector (off during the counted calls). Needs valgrind (Debian's package).
"""

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import gc, sys
sys.path.insert(0, {here!r})
import numpy as np
import chainrules as cr
from common import chain

n, case = int(sys.argv[1]), sys.argv[2]
x = np.random.default_rng(0).standard_normal(16)
if case == "chain":
    vg = cr.value_and_grad(lambda x: chain(np, x))
    call = lambda: vg(x)
elif case == "numpy":
    call = lambda: chain(np, x)
elif case == "sum":
    vg = cr.value_and_grad(lambda x: np.sum(x))
    call = lambda: vg(x)
elif case in ("twoop", "grad", "hvp"):  # the fixed cost per call, on a 3-element x
    x = x[:3]
    two = lambda x: np.sum(np.sin(x) * x)
    vg = cr.value_and_grad(two) if case == "twoop" else cr.grad(two)
    call = (lambda: cr.hvp(two, x, x)) if case == "hvp" else (lambda: vg(x))
elif case in ("first", "rosen-eager", "rosen-first"):
    # the first call of a new cr.jit(cr.value_and_grad(f)) (its recording),
    # against the eager call ("twoop", "rosen-eager") of the same function
    if case == "first":
        x = x[:3]
        f = lambda x: np.sum(np.sin(x) * x)
    else:
        from common import rosen
        x = 1.0 + 0.3 * x[:10]
        f = lambda x: rosen(np, x)
    vg = cr.value_and_grad(f)
    if case == "rosen-eager":
        call = lambda: vg(x)
    else:
        jitted = iter([cr.jit(vg) for _ in range(n + 3)])
        call = lambda: next(jitted)(x)
elif case.startswith("go:"):
    # value_and_grad of one SciPy go function (scipy_go.py) at the point
    # scipy_go.py times it at: the functions in sorted order, one draw each
    import warnings
    from scipy_go import _functions
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    for name, cls in _functions(sys.argv[3]):
        try:
            lo, hi = np.array(cls().bounds, dtype=float).T
        except Exception:  # (scipy_go skips it without a draw)
            continue
        x = lo + (hi - lo) * rng.uniform(0.1, 0.9, size=lo.shape)
        if name == case[3:]:
            break
    else:
        raise SystemExit("no SciPy go function " + case[3:])
    vg = cr.value_and_grad(cls().fun)
    call = lambda: vg(x)
else:
    raise SystemExit("unknown case " + case)
for _ in range(3):
    call()
gc.collect()
gc.disable()
for _ in range(n):
    call()
"""


def count(n, case, scipy_src=""):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           sys.executable, "-c", _CHILD.format(here=HERE), str(n), case, scipy_src]
    if shutil.which("setarch"):
        cmd = ["setarch", platform.machine(), "-R"] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if m is None:
        raise SystemExit("callgrind gave no count:\n" + out.stderr[-2000:])
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="chain",
                    help="chain, numpy, sum, twoop, grad, hvp, first, rosen-eager, "
                         "rosen-first, or go:NAME (a SciPy go function; needs --scipy-src)")
    ap.add_argument("--scipy-src", default=os.environ.get("SCIPY_SRC", ""),
                    help="root of a SciPy source checkout, for the go:NAME cases")
    ap.add_argument("--calls", default="10,30", help="N1,N2 (default 10,30)")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    n1, n2 = (int(v) for v in a.calls.split(","))
    c1, c2 = count(n1, a.case, a.scipy_src), count(n2, a.case, a.scipy_src)
    per_call = (c2 - c1) / (n2 - n1)
    print(f"{a.case}: {per_call:,.0f} instructions per call "
          f"(callgrind, ({c2:,} - {c1:,}) / {n2 - n1})")


if __name__ == "__main__":
    main()
