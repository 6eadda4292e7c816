"""Peak memory of value_and_grad on the 300-step residual chain.

    x <- x + 0.01 * tanh(x)      (300 steps, 1e6 float64 elements = 8 MB)
    loss = sum(x)

The reverse pass needs one saved array per step (tanh keeps its output,
from which its derivative 1 - y**2 follows); the target is at most that
(300 x 8 MB) without checkpointing and at most a fifth of it with
``checkpoint_sequential`` (sqrt(300) ~ 18 segments).

Two measurements per variant:

* ``tracemalloc`` peak in this process (NumPy reports its array buffers to
  tracemalloc), minus what is allocated before the call;
* peak RSS (``VmHWM`` in /proc/self/status) of a fresh child process
  running only that variant, minus its RSS just before the call.

Usage: ``python benchmarks/memory_chain.py [--steps 300] [--n 1000000]``.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

VARIANTS = ("numpy_forward", "plain", "checkpoint_sequential",
            "checkpoint_sequential_dots")


def step(x):
    return x + 0.01 * np.tanh(x)


def run(variant, steps, n):
    import chainrules as cr

    x0 = np.linspace(-2.0, 2.0, n)
    layers = [step] * steps

    if variant == "numpy_forward":
        def call():
            x = x0
            for layer in layers:
                x = layer(x)
            return np.sum(x)
    elif variant == "plain":
        def loss(x):
            for layer in layers:
                x = layer(x)
            return np.sum(x)
        vg = cr.value_and_grad(loss)

        def call():
            return vg(x0)
    else:
        policy = "dots" if variant.endswith("dots") else "nothing"

        def loss(x):
            return np.sum(cr.checkpoint_sequential(layers, x, policy=policy))
        vg = cr.value_and_grad(loss)

        def call():
            return vg(x0)
    return call


def _status_kb(key):
    """A field of /proc/self/status in KiB. VmHWM is the peak RSS of this
    process image (ru_maxrss is not usable: Linux carries it over from the
    parent across fork and exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def child(variant, steps, n):
    """Run one variant in this (fresh) process; print a JSON line."""
    call = run(variant, steps, n)
    call_small = run(variant, 3, 1000)
    call_small()  # warm up imports and caches
    before = _status_kb("VmRSS")
    t0 = time.perf_counter()
    out = call()
    dt = time.perf_counter() - t0
    peak = _status_kb("VmHWM")
    del out
    print(json.dumps({"variant": variant, "rss_peak_extra_mb": (peak - before) / 1024,
                      "seconds": dt}))


def tracemalloc_peak(variant, steps, n):
    call = run(variant, steps, n)
    run(variant, 3, 1000)()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return (peak - base) / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--child", choices=VARIANTS)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = ap.parse_args()
    if args.child:
        child(args.child, args.steps, args.n)
        return
    array_mb = args.n * 8 / 2**20
    budget = args.steps * array_mb
    print(f"residual chain: {args.steps} steps on {args.n} float64 "
          f"({array_mb:.1f} MiB per array); one saved array per step = "
          f"{budget:.0f} MiB")
    print(f"{'variant':30s} {'tracemalloc MiB':>16s} {'RSS MiB':>10s} "
          f"{'arrays/step':>12s} {'vs budget':>10s} {'time s':>8s}")
    results = {}
    for v in args.variants:
        tm = tracemalloc_peak(v, args.steps, args.n)
        env = dict(os.environ)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", v,
                               "--steps", str(args.steps), "--n", str(args.n)],
                              capture_output=True, text=True, env=env, check=True)
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        rss = info["rss_peak_extra_mb"]
        results[v] = {"tracemalloc_mb": tm, **info}
        print(f"{v:30s} {tm:16.1f} {rss:10.1f} {tm / array_mb / args.steps:12.3f} "
              f"{tm / budget:10.2f} {info['seconds']:8.2f}")
    plain = results.get("plain")
    ck = results.get("checkpoint_sequential")
    if plain and ck:
        print(f"\nplain: {plain['tracemalloc_mb'] / budget:.2f} x budget "
              f"(target <= 1); checkpointed: {ck['tracemalloc_mb'] / budget:.2f} x "
              f"budget (target <= 0.2)")
    return results


if __name__ == "__main__":
    main()
