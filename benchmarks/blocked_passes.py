"""Fused programs run whole against block by block (``elementwise_threads``).

The programs of the HVPs of ``fusion.py``'s functions and of
``dask_scale.py``'s loss are captured, then each is run by
``elementwise_threads.run`` at the thread count given, alternately with
blocks off (``MIN_BLOCKED`` infinite: the program whole, split only over
threads) and on (the library's setting). Times are summed over a call's
programs, medians of ``--repeats``; the ratio is blocked ÷ whole.

    python benchmarks/blocked_passes.py [--sizes 1e6,4e6,1e7] [--threads 1]

``--block`` tries another block size in bytes. It re-executes itself with
the allocator settings of ``run.py``'s workers and ``--threads`` BLAS
threads; the fused programs use as many (``fusion(threads=n)``).
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,4e6,1e7")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--block", type=int, default=None, help="BLOCK_BYTES to try")
    a = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    import common

    common.run_as_worker(a.threads)

    import numpy as np

    import chainrules as cr
    from chainrules import elementwise_threads as et
    from dask_scale import loss
    from fusion import FUNCTIONS, programs_by_size

    functions = dict(FUNCTIONS, dask_loss=loss)
    blocked = et.MIN_BLOCKED
    if a.block:
        et.BLOCK_BYTES = a.block
    print(f"{a.threads} thread(s); block {et.BLOCK_BYTES} bytes; ms per HVP's programs, "
          f"median of {a.repeats}\n")
    print("| function | size | passes | whole | blocked | ratio |")
    print("|---|---|---|---|---|---|")
    for name, size, captured in programs_by_size(a.sizes, functions):
        whole = split = 0.0
        passes = 0
        for program, env in captured:
            if max((np.size(w) for w in env.values()), default=0) < 1000:
                continue
            times = {False: [], True: []}
            with cr.fusion(threads=a.threads):
                for _ in range(a.repeats):
                    for on in (False, True):
                        et.MIN_BLOCKED = blocked if on else float("inf")
                        t0 = time.perf_counter()
                        et.run(program, env)
                        times[on].append(time.perf_counter() - t0)
            et.MIN_BLOCKED = blocked
            whole += statistics.median(times[False])
            split += statistics.median(times[True])
            passes += len(program.steps)
        print(f"| {name} | {size:.0e} | {passes} | {whole * 1e3:.2f} | {split * 1e3:.2f} "
              f"| {split / whole:.2f} |", flush=True)


if __name__ == "__main__":
    main()
