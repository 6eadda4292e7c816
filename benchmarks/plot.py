"""Plot the ratios of a benchmark run (PNG, matplotlib Agg backend).

    python benchmarks/plot.py [benchmarks/results/results.json] [out.png]

One panel per workload: per-op overhead in microseconds for the chain,
time ÷ NumPy forward for the others (log scale), with the target as a
dashed line. Failed or mismatching cells are marked.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import FRAMEWORKS, WORKLOADS  # noqa: E402

COLORS = {"chainrules": "#d62728", "autograd": "#7f7f7f", "torch": "#ff7f0e",
          "jax": "#1f77b4", "jax.jit": "#9ecae1", "numpy.hand": "#2ca02c"}


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wls = [w for w in WORKLOADS if w in results["workloads"]]
    fws = [f for f in FRAMEWORKS if f != "numpy"]
    fig, axes = plt.subplots(1, len(wls), figsize=(3.6 * len(wls), 4.2), squeeze=False)
    for ax, w in zip(axes[0], wls):
        spec = WORKLOADS[w]
        key = spec["metric"]
        names, vals, raw, cols, notes = [], [], [], [], []
        for fw in fws:
            r = results["workloads"][w].get(fw)
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
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=9)
        ax.set_yscale("log")
        for b, v, rv, n in zip(bars, vals, raw, notes):
            label = f"{rv:.1f}" + (" mismatch!" if n else "")
            ax.annotate(label, (b.get_x() + b.get_width() / 2, v), ha="center",
                        va="bottom", fontsize=8)
        ax.axhline(spec["target"], ls="--", color="black", lw=1)
        if key == "us_per_op":
            ax.set_ylabel("µs per op beyond NumPy")
        else:
            ax.set_ylabel("time ÷ NumPy forward")
            ax.axhline(1.0, color="#2ca02c", lw=1)
        ax.set_title(f"{spec['short']} (target ≤ {spec['target']:g}, dashed)", fontsize=9)
    m = results["meta"]
    fig.suptitle(f"chainrules vs peers, threads: {m['threads']}, float64 "
                 f"({'quick' if m['quick'] else 'full'} run {m['date']}); lower is better",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "results.json")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(src), "ratios.png")
    with open(src) as f:
        results = json.load(f)
    print(plot(results, dst))


if __name__ == "__main__":
    main()
