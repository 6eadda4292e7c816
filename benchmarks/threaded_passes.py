"""What running a fused region's passes on two threads would gain, by size.

The fused sweeps evaluate a region's program (``elementwise_expr.Program``)
with NumPy on the calling thread. Its values are elementwise, so they split
into blocks that threads could evaluate at once: NumPy releases the GIL
inside each ufunc loop, and only the Python step between two passes is
serial. This measures that split at its best, before building it: the
programs of the HVPs of ``fusion.py``'s functions are captured, then timed
whole on one thread against two halves at once (the second on a worker
thread that waits on a queue, as a pool would), with no cost for putting
the halves' results together. A ratio above 1 means two threads are slower.

    python benchmarks/threaded_passes.py [--sizes 16384,100000,1000000,4000000]

Run it at two BLAS threads with the allocator settings of ``run.py``'s
workers (it re-executes itself with them), the setting users have.
"""

import argparse
import os
import queue
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _median_time(fn, n):
    fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def _halves(env, axis_len):
    """The env of each half: arrays of the program's length split, the rest whole."""
    h = axis_len // 2
    lo, hi = {}, {}
    for k, v in env.items():
        if getattr(v, "ndim", 0) and v.shape[0] == axis_len:
            lo[k], hi[k] = v[:h], v[h:]
        else:
            lo[k] = hi[k] = v
    return lo, hi


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16384,100000,1000000,4000000")
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads")
    ap.add_argument("--calls", type=int, default=60)
    a = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    import common

    common.run_as_worker(a.threads)

    import numpy as np

    from chainrules import fused_sweeps
    from fusion import programs_by_size

    fused_sweeps.MIN_SIZE = fused_sweeps.MIN_SIZE_SECOND = 0
    jobs, done = queue.SimpleQueue(), queue.SimpleQueue()

    def worker():
        while True:
            program, env = jobs.get()
            done.put(program(env, False))

    threading.Thread(target=worker, daemon=True).start()
    print(f"{a.threads} BLAS thread(s); median of {a.calls} calls; µs per program "
          "(one thread → two halves at once)\n")
    print("| function | size | passes | one thread | two threads | ratio |")
    print("|---|---|---|---|---|---|")
    for name, size, captured in programs_by_size(a.sizes):
        one = two = 0.0
        passes = 0
        for program, env in captured:
            n = max((np.shape(w)[0] for w in env.values() if np.ndim(w)), default=0)
            if n < 4:
                continue
            lo, hi = _halves(env, n)

            def both(program=program, lo=lo, hi=hi):
                jobs.put((program, hi))
                program(lo, False)
                done.get()

            one += _median_time(lambda: program(env, False), a.calls)
            two += _median_time(both, a.calls)
            passes += len(program.steps)
        if passes:
            print(f"| {name} | {size:.0e} | {passes} | {one * 1e6:.0f} | {two * 1e6:.0f} "
                  f"| {two / one:.2f} |", flush=True)


if __name__ == "__main__":
    main()
