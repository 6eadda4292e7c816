"""Where a staged plan's replay spends its time: each step of the plan of
``cr.jit(cr.value_and_grad(f))`` timed as it runs (the plan's steps run as
data, as its first replays do), summed by function and operand shapes.

    python benchmarks/profile_plan.py [--workload lstm_grad] [--repeats 20]
        [--top 30] [--kernels on|off]

The times are per replay (the median over ``--repeats`` replays of each
step's time, summed per group). Timing each step adds a fixed cost per step
(about 0.2 µs, subtracted: the time of an empty timed step); the total of
the plan's code is printed beside, for comparison.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chainrules as cr  # noqa: E402
from chainrules import plan as _plan  # noqa: E402
from chainrules.staging import Ref  # noqa: E402
from common import lstm_loss, lstm_params, make_data, mlp_loss, mlp_params  # noqa: E402


def _function(name, d):
    if name == "lstm_grad":
        def f(p, X, T):
            return lstm_loss(np, p, X, T)
        return f, (lstm_params(d), d["lstm_X"], d["lstm_T"])
    if name == "mlp_grad":
        def f(p, X, Y):
            return mlp_loss(np, p, X, Y)
        return f, (mlp_params(d), d["X"], d["Y"])
    raise SystemExit(f"unknown workload {name}")


def _fn_name(fn):
    name = getattr(fn, "__name__", None) or type(fn).__name__
    mod = getattr(fn, "__module__", None) or ""
    return f"{mod.split('.')[-1]}.{name}" if mod and not mod.startswith("numpy") else name


def _shape(v):
    s = getattr(v, "shape", None)
    return "x".join(map(str, s)) if s is not None else type(v).__name__


def _label(fn, ins):
    if _fn_name(fn) == "kernels.run":  # a region: its program and its inputs
        program, env = ins[0], ins[1]
        arrays = env.values() if isinstance(env, dict) else env
        shapes = ",".join(_shape(v) for v in arrays if hasattr(v, "shape"))
        return f"kernels.run[{id(program) % 100003}]({shapes})"
    if _fn_name(fn) == "concatenate":
        parts = ins[0]
        return f"concatenate({len(parts)} x {_shape(parts[0])})"
    return f"{_fn_name(fn)}({','.join(_shape(v) for v in ins if hasattr(v, 'shape'))})"


def profile(plan, args, repeats):
    """Per step of the plan: (label, [times]) over ``repeats`` replays."""
    steps, inputs, outputs, _ = plan._parts
    rep = _plan._Replay(steps, inputs, outputs, plan.out_tree)
    from chainrules.pytree import flatten
    flat, _ = flatten(args)
    dynamic = [np.asarray(x) for x in flat]
    times = [[] for _ in rep.ops]
    labels = [None] * len(rep.ops)
    perf = time.perf_counter
    for _ in range(repeats):
        env = [None] * rep.size
        for i, v in zip(rep.inputs, dynamic):
            env[i] = v
        for k, (form, fn, x, y, o) in enumerate(rep.ops):
            if form == _plan._GUARD:
                continue
            if form == _plan._CALL:
                base, refs, built, kbase, krefs, kbuilt = x
                a = list(base)
                for p, i in refs:
                    a[p] = env[i]
                for p, t in built:
                    a[p] = _plan._fill(t, env)
                kw = dict(kbase)
                for key, i in krefs:
                    kw[key] = env[i]
                for key, t in kbuilt:
                    kw[key] = _plan._fill(t, env)
                t0 = perf()
                r = fn(*a, **kw)
                times[k].append(perf() - t0)
                if o is not None:
                    _plan._bind(o, r, env)
                ins = a
            else:
                ax = env[x] if form in (_plan._UNARY, _plan._BINARY, _plan._BINARY_RC) else x
                ay = (env[y] if form in (_plan._BINARY, _plan._BINARY_CR) else y)
                t0 = perf()
                if form == _plan._UNARY:
                    r = fn(ax)
                else:
                    r = fn(ax, ay)
                times[k].append(perf() - t0)
                env[o] = r
                ins = [ax] if form == _plan._UNARY else [ax, ay]
            if labels[k] is None:
                labels[k] = _label(fn, ins)
    t0 = perf()
    for _ in range(1000):
        t1 = perf()
        perf() - t1
    empty = (perf() - t0) / 1000
    return [(labels[k], [max(t - empty, 0.0) for t in ts]) for k, ts in enumerate(times) if ts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="lstm_grad")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--kernels", choices=("on", "off"), default="on",
                    help="compiled kernels as chainrules.jit (on) or "
                         "chainrules.jit.numpy (off) in run.py")
    args = ap.parse_args()
    from chainrules import kernels as compiled
    compiled.set_mode(args.kernels == "on")
    compiled.COMPILE_SECONDS = compiled.CACHED_SECONDS = compiled.INIT_SECONDS = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        d = make_data(os.path.join(tmp, "data.npz"))
    f, fargs = _function(args.workload, d)
    j = cr.jit(cr.value_and_grad(f))
    for _ in range(3):
        j(*fargs)
    plan = j.plan(*fargs)
    plan.compile()
    for _ in range(10):
        j(*fargs)
    code = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        j(*fargs)
        code.append(time.perf_counter() - t0)
    rows = profile(plan, fargs, args.repeats)
    groups = defaultdict(lambda: [0, 0.0])
    for label, ts in rows:
        g = groups[label]
        g[0] += 1
        g[1] += statistics.median(ts)
    total = sum(g[1] for g in groups.values())
    print(f"{args.workload}: {plan.num_steps} steps; plan's code "
          f"{1e3 * statistics.median(code):.2f} ms per call (median of {args.repeats}); "
          f"steps timed: {1e3 * total:.2f} ms")
    print(f"{'ms':>8} {'share':>6} {'count':>6}  step")
    for label, (n, t) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{1e3 * t:8.3f} {100 * t / total:5.1f}% {n:6d}  {label}")


if __name__ == "__main__":
    main()
