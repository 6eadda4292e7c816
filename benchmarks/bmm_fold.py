"""When matmul's batched forms should fold a batch of matrices into one GEMM
(``rules/contractions.py``, ``_bmm``): a batch ``a`` of ``k`` matrices ``r x
c`` times one ``c x q`` matrix, as one ``(k r) x c`` GEMM ("fold") or as
NumPy's stacked matmul, one small GEMM per matrix ("stacked"), timed
interleaved at about ``--rows`` rows in all, for ``r`` and ``(c, q)`` on a
grid. Prints fold / stacked per cell (median; the ratio of the 10th
percentiles in parentheses) and the stacked time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bmm_fold.py [--repeats 25]
    OPENBLAS_NUM_THREADS=2 python benchmarks/bmm_fold.py

Run it on a quiet machine: a threaded GEMM on oversubscribed cores waits
for its descheduled thread (the folded product is threaded where the small
stacked ones are not).
"""

import argparse
import os
import time

import numpy as np


def fold(a, b):
    k, r, c = a.shape
    return np.matmul(a.reshape(k * r, c), b).reshape(k, r, b.shape[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--rows", type=int, default=38400)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', '(default)')}, "
          f"load {os.getloadavg()[0]:.2f}")
    for c, q in ((8, 8), (30, 20), (64, 64), (128, 128), (256, 256)):
        cells = []
        for r in (1, 2, 4, 8, 16, 32, 128, 512):
            k = max(1, min(args.rows // r, int(4e6 // (r * c))))
            a, b = rng.standard_normal((k, r, c)), rng.standard_normal((c, q))
            folded, stacked = [], []
            fold(a, b)
            np.matmul(a, b)
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                fold(a, b)
                folded.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                np.matmul(a, b)
                stacked.append(time.perf_counter() - t0)
            cells.append(f"r={r}: {np.median(folded) / np.median(stacked):.2f} "
                         f"({np.percentile(folded, 10) / np.percentile(stacked, 10):.2f}, "
                         f"{1e3 * np.median(stacked):.2f} ms)")
        print(f"c={c} q={q}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
