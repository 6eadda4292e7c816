"""Where the sweeps spend their time, rule by rule.

    python benchmarks/profile_nodes.py WORKLOAD [--threads N] [--calls 50]

Runs chainrules' build of ``WORKLOAD`` (see ``common.WORKLOADS``) and times
every call of every rule's ``pullback``, ``pullback_with_tangents`` and
``pushforward`` (and the engine's in-place add of gather cotangents),
summed per (method, rule class, operation) and reported per call of the
workload, largest first. Each rule is timed with ``time.perf_counter`` and
no profiler, so the figures add up to the sweeps' real cost; the rest of
the call (tracing, the NumPy forward, the engine's own loop) is the
difference to the whole call, printed last. BLAS threads are set before
NumPy is imported, with the allocator settings of ``run.py``'s workers.
"""

import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    import common

    common.run_as_worker(a.threads)

    import tempfile

    import numpy as np  # noqa: F401

    import chainrules.rules  # noqa: F401  (registers every rule class)
    from chainrules.rule import ReverseRule
    from workloads import chainrules_wl

    acc = collections.defaultdict(float)
    count = collections.Counter()

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    for cls in set(subclasses(ReverseRule)):
        for meth in ("pullback", "pullback_with_tangents", "pushforward"):
            fn = cls.__dict__.get(meth)
            if fn is None:
                continue

            def timed(self, *args, _fn=fn, _meth=meth, **kwargs):
                t0 = time.perf_counter()
                out = _fn(self, *args, **kwargs)
                dt = time.perf_counter() - t0
                name = getattr(self, "name", "") or getattr(getattr(self, "d", None), "name", "")
                key = (_meth, type(self).__name__, str(name))
                acc[key] += dt
                count[key] += 1
                return out

            setattr(cls, meth, timed)

    # the engine adds the cotangent of a gather x[index] into x's buffer
    # itself (no pullback call): time that too
    from chainrules import sweep_reverse

    for mod in (sweep_reverse,):
        def add_at(*args, _fn=mod.add_at):
            t0 = time.perf_counter()
            out = _fn(*args)
            acc[("add_at", "engine", "gather cotangent")] += time.perf_counter() - t0
            count[("add_at", "engine", "gather cotangent")] += 1
            return out

        mod.add_at = add_at

    with tempfile.TemporaryDirectory() as tmp:
        d = common.make_data(os.path.join(tmp, "inputs.npz"))
    bench = chainrules_wl.build(a.workload, d, {"shift": True})
    if os.environ.get("CR_NOFUSE"):
        import chainrules.fused_sweeps as fused
        fused._enabled.set(False)
    for _ in range(3):
        bench.run()
    acc.clear()
    count.clear()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        bench.run()
    whole = (time.perf_counter() - t0) / a.calls
    n = a.calls
    print(f"{a.workload}, {a.threads} BLAS thread(s): {whole * 1e3:.2f} ms per call")
    print(f"{'us/call':>10} {'calls':>6}  method / rule / operation")
    swept = 0.0
    for key, t in sorted(acc.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{t / n * 1e6:10.1f} {count[key] // n:6d}  {' / '.join(key)}")
    swept = sum(acc.values()) / n
    print(f"{swept * 1e6:10.1f}         all of the above")
    print(f"{(whole - swept) * 1e6:10.1f}         the rest (tracing and the forward, "
          "the engine's loops)")


if __name__ == "__main__":
    sys.exit(main())
