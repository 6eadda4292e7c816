"""chainrules on dask arrays at scale: time and peak memory of ``grad`` and
``hvp`` of a chunked loss at 10^7, 10^8 and 10^9 elements, against a
hand-written dask gradient (and HVP) of the same loss in the same run, and
against chainrules on NumPy where the array fits.

Run: python benchmarks/dask_scale.py [--sizes 1e7,1e8,1e9] [--chunk 1e7]
     [--out benchmarks/results] [--plot]

``--plot`` draws ``dask_scale.png`` into ``--out``, and for a run over three
or more sizes also into ``docs/img/dask-scale.png`` (the manual's figure).

Every (size, method) runs in its own process, so its peak resident memory
(``ru_maxrss``) is its own. ``x`` is generated lazily chunk by chunk
(``dask.array.random``); the gradient is reduced to its squared norm inside
the same ``dask.compute`` (holding an n-element result would measure the
result, not the differentiation). Times are wall-clock medians over
``--repeats`` runs inside that process, after one warm-up.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def loss(x):
    d = x - 0.5
    return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2)


def hand_grad(x):
    d = x - 0.5
    return 2 * d / (1 + d * d) + 0.1 * np.sin(2 * x)


def hand_hvp(x, v):
    d = x - 0.5
    q = 1 + d * d
    return v * (2 * (1 - d * d) / (q * q) + 0.2 * np.cos(2 * x))


def _case(method, n, chunk, repeats):
    import chainrules as cr

    if method.endswith("numpy"):
        x = np.random.default_rng(0).random(n)
        v = np.ones(n)
        run = {"chainrules grad numpy": lambda: float(np.sum(cr.grad(loss)(x) ** 2)),
               "chainrules hvp numpy": lambda: float(np.sum(cr.hvp(loss, x, v) ** 2))}[method]
    else:
        import dask
        import dask.array as da

        x = da.random.RandomState(0).random_sample(n, chunks=chunk)
        v = da.ones(n, chunks=chunk)

        def reduce(g):
            return dask.compute(np.sum(g * g))[0]

        run = {
            "chainrules grad": lambda: reduce(cr.grad(loss)(x)),
            "hand grad": lambda: reduce(hand_grad(x)),
            "chainrules hvp": lambda: reduce(cr.hvp(loss, x, v)),
            "hand hvp": lambda: reduce(hand_hvp(x, v)),
        }[method]
    value = run()  # warm-up (and the value, for the agreement check)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"method": method, "n": n, "time": statistics.median(times),
            "peak_mb": peak_mb, "value": float(value)}


METHODS = ["chainrules grad", "hand grad", "chainrules hvp", "hand hvp",
           "chainrules grad numpy", "chainrules hvp numpy"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e7,1e8,1e9")
    ap.add_argument("--chunk", type=float, default=1e7)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numpy-max", type=float, default=1e8,
                    help="largest size also run on NumPy (it must fit in memory)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        print(json.dumps(_case(a.case, int(a.n), int(a.chunk), a.repeats)))
        return
    rows = []
    for n in [int(float(s)) for s in a.sizes.split(",")]:
        for m in METHODS:
            if m.endswith("numpy") and n > a.numpy_max:
                continue
            reps = a.repeats if n < 1e9 else 1
            proc = subprocess.run([sys.executable, __file__, "--case", m, "--n", str(n),
                                   "--chunk", str(a.chunk), "--repeats", str(reps)],
                                  capture_output=True, text=True)
            if proc.returncode:
                print(proc.stderr[-2000:], file=sys.stderr)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"{m:24s} n={n:.0e}  {r['time']:8.2f} s  peak {r['peak_mb']:8.0f} MB",
                  flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "dask_scale.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    print()
    print(table(rows))
    if a.plot:
        plot(rows, os.path.join(a.out, "dask_scale.png"))
        if len({r["n"] for r in rows}) >= 3:  # a full run: the manual's figure too
            plot(rows, os.path.join(os.path.dirname(__file__), "..", "docs", "img",
                                    "dask-scale.png"))


def table(rows):
    by = {(r["method"], r["n"]): r for r in rows}
    sizes = sorted({r["n"] for r in rows})
    lines = ["| n | chainrules grad | hand grad | ratio | chainrules hvp | hand hvp | ratio "
             "| peak MB (cr grad / hand / cr hvp) | NumPy grad, hvp (chainrules) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        g, hg = by.get(("chainrules grad", n)), by.get(("hand grad", n))
        h, hh = by.get(("chainrules hvp", n)), by.get(("hand hvp", n))
        ng, nh = by.get(("chainrules grad numpy", n)), by.get(("chainrules hvp numpy", n))

        def t(r):
            return f"{r['time']:.2f} s" if r else "-"

        def ratio(a, b):
            return f"{a['time'] / b['time']:.2f}x" if a and b else "-"

        peaks = " / ".join(f"{r['peak_mb']:.0f}" if r else "-" for r in (g, hg, h))
        lines.append(f"| {n:.0e} | {t(g)} | {t(hg)} | {ratio(g, hg)} | {t(h)} | {t(hh)} | "
                     f"{ratio(h, hh)} | {peaks} | {t(ng)}, {t(nh)} |")
    return "\n".join(lines)


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for m in METHODS:
        rs = sorted((r for r in rows if r["method"] == m), key=lambda r: r["n"])
        if rs:
            ax1.loglog([r["n"] for r in rs], [r["time"] for r in rs], "o-", label=m)
            ax2.loglog([r["n"] for r in rs], [r["peak_mb"] for r in rs], "o-", label=m)
    ax1.set(xlabel="elements", ylabel="seconds", title="time")
    ax2.set(xlabel="elements", ylabel="peak RSS (MB)", title="peak memory")
    ax2.axhline(1536, color="grey", ls=":", label="1.5 GB target")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("plot:", path)


if __name__ == "__main__":
    main()
