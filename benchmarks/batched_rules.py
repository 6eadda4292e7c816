"""Jacobians and Hessians through np.linalg.solve / slogdet / cholesky and
np.concatenate / np.stack, with the rules' batched paths on and off (off:
the engine's per-direction loop, as for a rule without a batched path), in
milliseconds (minimum of the repeats), with their largest relative
difference.

    python benchmarks/batched_rules.py [--repeat 5]
"""
import argparse
import os
import time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import chainrules as cr
from chainrules.rules import _linalg_util, shape, shape_pieces

CLASSES = [_linalg_util.LinalgRule, shape_pieces.JoinRule, shape_pieces.MapRule,
           shape_pieces.SplitRule]


ORIG = {c: c.__dict__.get("batched", False) for c in CLASSES}


def set_batched(on):
    for c in CLASSES:
        c.batched = ORIG[c] if on else False


def best(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * min(ts)


def workloads():
    out = []
    for n in (50, 200):
        rng = np.random.default_rng(n)
        A = rng.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n)
        b = rng.standard_normal(n)
        x = rng.standard_normal(n)
        B = rng.standard_normal((n, 3))

        def f(x, A=A, b=b):
            return np.linalg.solve(A + np.diag(x ** 2), b)

        def fm(x, A=A, B=B):
            return np.linalg.solve(A + np.diag(x ** 2), B)

        def g(x, A=A):
            return np.linalg.slogdet(A @ A.T + np.outer(x, x))[1]

        def cat(x):
            return np.concatenate([np.sin(x), x[:5] ** 2, np.stack([x, np.cos(x)]).ravel()])

        def h_cat(x, A=A):
            y = np.stack([x, x ** 2, np.sin(x)], axis=1)          # (n, 3)
            z = np.concatenate([y, y[::-1]], axis=0)               # (2n, 3)
            return np.sum(np.tanh(z) ** 2)

        def chol(x, A=A):
            m = A @ A.T + np.outer(x, x)
            return 2 * np.sum(np.log(np.diagonal(np.linalg.cholesky(m))))

        def bvec(x, A=A):  # a solve where only b is traced: no n x n cotangent
            return np.linalg.solve(A, np.concatenate([np.sin(x[: n // 2]), x[n // 2:] ** 2]))

        out += [(f"jacobian solve(A, concat(sin x, x^2)) n={n}", cr.jacobian(bvec), x),
                (f"jacobian solve(A+diag(x^2), b) n={n}", cr.jacobian(f), x),
                (f"jacobian solve(A+diag(x^2), B[n,3]) n={n}", cr.jacobian(fm), x),
                (f"hessian slogdet(A A^T + x x^T) n={n}", cr.hessian(g), x),
                (f"hessian slogdet(A A^T + x x^T) n={n} chunk 32", cr.hessian(g, chunk_size=32), x),
                (f"hessian 2 sum log diag chol(A A^T + x x^T) n={n}", cr.hessian(chol), x),
                (f"jacobian concatenate/stack n={n}", cr.jacobian(cat), x),
                (f"hessian stack/concatenate n={n}", cr.hessian(h_cat), x)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    print(f"{'workload':48s} {'per-direction ms':>17s} {'batched ms':>11s} {'speedup':>8s}")
    for name, fn, x in workloads():
        set_batched(False)
        r0, t0 = fn(x), best(lambda: fn(x), a.repeat)
        set_batched(True)
        r1, t1 = fn(x), best(lambda: fn(x), a.repeat)
        err = np.max(np.abs(r0 - r1)) / max(1e-300, np.max(np.abs(r0)))
        print(f"{name:48s} {t0:17.2f} {t1:11.2f} {t0 / t1:8.1f}   (rel. diff {err:.1e})")


if __name__ == "__main__":
    main()
