"""Plot the ratios of a benchmark run (PNG, matplotlib Agg backend).

    python benchmarks/plot.py [benchmarks/results/results.json] [out.png]

One row per thread count, one panel per workload: per-op overhead in
microseconds for the chain, time ÷ NumPy forward for the others (log
scale), with a plain-ratio goal as a dashed line. Mismatching cells are
marked.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import FRAMEWORKS, WORKLOADS  # noqa: E402

COLORS = {"chainrules": "#d62728", "autograd": "#7f7f7f", "torch": "#ff7f0e",
          "torch.compile": "#fdae6b", "jax": "#1f77b4", "jax.jit": "#9ecae1",
          "numpy.hand": "#2ca02c"}


def plot(results, path):
    """One row of panels per thread count of the run, one panel per workload."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"] if "runs" in results else [results]
    wls = [w for w in WORKLOADS if any(w in r["workloads"] for r in runs)]
    fws = [f for f in FRAMEWORKS if f != "numpy"]
    fig, axes = plt.subplots(len(runs), len(wls), figsize=(2.9 * len(wls), 3.6 * len(runs)),
                             squeeze=False)
    for row, run in zip(axes, runs):
        for ax, w in zip(row, wls):
            _panel(ax, run, w, fws)
    m = runs[0]["meta"]
    fig.suptitle("chainrules vs peers, float64, BLAS threads "
                 + " / ".join(str(r["meta"]["threads"]) for r in runs)
                 + f" (rows; {'quick' if m['quick'] else 'full'} run {m['date']}); "
                 "lower is better", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _panel(ax, run, w, fws):
    spec = WORKLOADS[w]
    key = spec["metric"]
    names, vals, raw, cols, notes = [], [], [], [], []
    for fw in fws:
        r = run["workloads"].get(w, {}).get(fw)
        if not r or r.get("status") != "ok" or key not in r:
            continue
        names.append(fw)
        raw.append(r[key])
        vals.append(max(r[key], 1e-2))
        cols.append(COLORS.get(fw, "#333333"))
        chk = r.get("check")
        notes.append("mismatch" if chk and not chk.get("ok", True) else "")
    bars = ax.bar(range(len(vals)), vals, color=cols)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
    ax.set_yscale("log")
    for b, v, rv, n in zip(bars, vals, raw, notes):
        label = f"{rv:.1f}" + (" mismatch!" if n else "")
        ax.annotate(label, (b.get_x() + b.get_width() / 2, v), ha="center",
                    va="bottom", fontsize=7)
    if spec.get("line"):
        ax.axhline(spec["line"], ls="--", color="black", lw=1)
    if key == "us_per_op":
        ax.set_ylabel("µs per op beyond NumPy", fontsize=8)
    else:
        ax.set_ylabel("time ÷ NumPy forward", fontsize=8)
        ax.axhline(1.0, color="#2ca02c", lw=1)
    ax.set_title(f"{spec['short']}, {run['meta']['threads']} thr.", fontsize=9)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "results.json")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(src), "ratios.png")
    with open(src) as f:
        results = json.load(f)
    print(plot(results, dst))


if __name__ == "__main__":
    main()
