"""Profile chainrules' hot paths on the benchmark workloads.

    python benchmarks/profile_ops.py [--workloads chain,mlp_grad] [--calls 200] [--top 25]

Workloads: chain, mlp_grad, rosen_hvp, mlp_hvp, lstm_grad, gp_grad, gp_hvp, tv_grad.

For each workload it prints

1. a phase breakdown without any profiler: NumPy forward, traced forward
   (``cr.vjp``: tracing, rule lookup, tape append), reverse sweep
   (``f_vjp``), and the whole ``value_and_grad`` (or ``hvp``), per call and,
   for the chain, per op;
2. cProfile's top functions by own time, with microseconds per call of the
   workload and per op;
3. the same own time summed by source file (tracing, registry, graph,
   derived, rule modules, NumPy's C functions, multipledispatch, ...);
4. a pyinstrument call tree, if pyinstrument is installed.

cProfile adds a roughly constant cost to every Python function call, so its
absolute numbers overstate pure-Python overhead; use the phase breakdown
for absolute times and the profile for where the time goes.
"""

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chainrules as cr  # noqa: E402
import common  # noqa: E402
from common import (CHAIN_OPS, chain, gp_nlml, lstm_loss, lstm_params, mlp_loss,  # noqa: E402
                    mlp_params, rosen, tv_loss)

ROOT = os.path.dirname(HERE)


def timed(fn, calls, repeats=5):
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t) / calls)
    return statistics.median(out)


def workload(name, d, shift):
    """(forward f, args, the differentiated call, vjp-able single-arg f)."""
    if name == "chain":
        x = d["chain_x"]
        f = lambda x: chain(np, x)  # noqa: E731
        vg = cr.value_and_grad(f)
        return f, (x,), (lambda: vg(x)), CHAIN_OPS
    if name == "mlp_grad":
        p, X, Y = mlp_params(d), d["X"], d["Y"]
        f = lambda p: mlp_loss(np, p, X, Y, shift)  # noqa: E731
        vg = cr.value_and_grad(f)
        return f, (p,), (lambda: vg(p)), None
    if name == "rosen_hvp":
        x, v = d["rosen_x"], d["rosen_v"]
        f = lambda x: rosen(np, x)  # noqa: E731
        return f, (x,), (lambda: cr.hvp(f, x, v)), None
    if name == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = mlp_params(d)
        W1, V1, X, Y = d["W1"], d["V1"], d["X"], d["Y"]
        f = lambda W1: mlp_loss(np, (W1, b1, W2, b2, W3, b3), X, Y, shift)  # noqa: E731
        return f, (W1,), (lambda: cr.hvp(f, W1, V1)), None
    if name == "lstm_grad":
        p, X, T = lstm_params(d), d["lstm_X"], d["lstm_T"]
        f = lambda p: lstm_loss(np, p, X, T, shift)  # noqa: E731
        vg = cr.value_and_grad(f)
        return f, (p,), (lambda: vg(p)), None
    if name in ("gp_grad", "gp_hvp"):
        import chainrules.scipy.linalg as sla

        D, y, eye, theta = d["gp_D"], d["gp_y"], d["gp_I"], d["gp_theta"]
        f = lambda theta: gp_nlml(np, sla, theta, D, y, eye)  # noqa: E731
        if name == "gp_grad":
            vg = cr.value_and_grad(f)
            return f, (theta,), (lambda: vg(theta)), None
        v = d["gp_v"]
        return f, (theta,), (lambda: cr.hvp(f, theta, v)), None
    if name == "tv_grad":
        x, fimg = d["tv_x"], d["tv_f"]
        f = lambda x: tv_loss(np, x, fimg)  # noqa: E731
        vg = cr.value_and_grad(f)
        return f, (x,), (lambda: vg(x)), None
    raise SystemExit(f"unknown workload {name}")


def category(filename, funcname):
    if filename == "~":
        if "numpy" in funcname or "ufunc" in funcname:
            return "NumPy functions called directly (C; operator arithmetic like a @ b is counted in its caller)"
        return "builtins: " + funcname.split(" of ")[0].strip("{}<>")[:40]
    f = os.path.abspath(filename)
    if f.startswith(os.path.join(ROOT, "chainrules")):
        return "chainrules/" + os.path.relpath(f, os.path.join(ROOT, "chainrules"))
    if f.startswith(os.path.join(ROOT, "rules")):
        return "rules/" + os.path.relpath(f, os.path.join(ROOT, "rules"))
    if f.startswith(HERE):
        return "benchmarks (the workload itself)"
    if "multipledispatch" in f:
        return "multipledispatch"
    if os.sep + "numpy" + os.sep in f:
        return "numpy (Python part)"
    return "other: " + os.path.basename(f)


def profile(name, call, calls, top, per_op):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        call()
    pr.disable()
    st = pstats.Stats(pr)
    rows = []
    total = 0.0
    for (fn, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        rows.append((tt, ct, nc, fn, line, func))
        total += tt
    rows.sort(reverse=True)
    unit = per_op or 1
    print(f"\n  cProfile, {calls} calls, total own time {total / calls * 1e6:.0f} µs per call"
          + (f" = {total / calls / per_op * 1e6:.2f} µs per op" if per_op else ""))
    hdr = "µs/op" if per_op else "µs/call"
    print(f"  {'own ' + hdr:>10} {'cum ' + hdr:>10} {'calls/call':>10}  function")
    for tt, ct, nc, fn, line, func in rows[:top]:
        where = func if fn == "~" else f"{func}  ({os.path.relpath(fn, ROOT)}:{line})"
        print(f"  {tt / calls / unit * 1e6:10.2f} {ct / calls / unit * 1e6:10.2f} "
              f"{nc / calls:10.1f}  {where}")
    cats = {}
    for tt, ct, nc, fn, line, func in rows:
        k = category(fn, func)
        cats[k] = cats.get(k, 0.0) + tt
    print(f"\n  own time by file ({hdr}, share):")
    for k, v in sorted(cats.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {v / calls / unit * 1e6:10.2f}  {100 * v / total:5.1f}%  {k}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="chain,mlp_grad")
    ap.add_argument("--calls", type=int, default=0, help="calls to profile (default: auto)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-shift", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="BLAS threads (default: all CPUs, as run.py)")
    a = ap.parse_args()
    # same allocator and thread settings as the benchmark workers: re-run
    # this script under them if they are not in effect yet
    common.run_as_worker(a.threads)
    print(f"threads={a.threads}; allocator: " +
          " ".join(f"{k}={v}" for k, v in common.MALLOC_ENV.items()) +
          f"; load average {os.getloadavg()}")
    d = common.make_data(os.path.join(tempfile.gettempdir(), "chainrules_profile_inputs.npz"))
    shift = not a.no_shift
    for name in a.workloads.split(","):
        f, args, call, per_op = workload(name, d, shift)
        print("=" * 78)
        print(f"{name}: {common.WORKLOADS[name]['title']}")
        one = timed(call, 1, 3)
        calls = a.calls or max(5, min(500, int(1.0 / max(one, 1e-6))))
        t_np = timed(lambda: f(*args), calls)
        t_all = timed(call, calls)
        out, f_vjp = cr.vjp(f, *args)
        t_fwd = timed(lambda: cr.vjp(f, *args), calls)
        seed = np.ones_like(out)
        t_bwd = timed(lambda: f_vjp(seed), calls)
        po = (lambda t: f"  ({t / per_op * 1e6:6.2f} µs/op)") if per_op else (lambda t: "")
        print(f"  NumPy forward                 {t_np * 1e6:10.1f} µs" + po(t_np))
        print(f"  traced forward (cr.vjp)       {t_fwd * 1e6:10.1f} µs" + po(t_fwd)
              + f"   {t_fwd / t_np:5.2f}× NumPy")
        print(f"  reverse sweep (f_vjp, retain) {t_bwd * 1e6:10.1f} µs" + po(t_bwd)
              + f"   {t_bwd / t_np:5.2f}× NumPy")
        print(f"  whole {'hvp' if 'hvp' in name else 'value_and_grad':15s}         "
              f"{t_all * 1e6:10.1f} µs" + po(t_all) + f"   {t_all / t_np:5.2f}× NumPy")
        if per_op:
            print(f"  overhead beyond NumPy: {(t_all - t_np) / per_op * 1e6:.2f} µs/op "
                  f"(forward {(t_fwd - t_np) / per_op * 1e6:.2f}, "
                  f"reverse {t_bwd / per_op * 1e6:.2f})")
        profile(name, call, calls, a.top, per_op)
        try:
            from pyinstrument import Profiler
        except ImportError:
            print("\n  (pyinstrument not installed: no call tree)")
            continue
        p = Profiler(interval=0.0001)
        p.start()
        for _ in range(calls):
            call()
        p.stop()
        print(p.output_text(unicode=True, color=False, show_all=False))


if __name__ == "__main__":
    main()
