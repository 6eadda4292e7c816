"""Jacobians and Hessians: chainrules' batched sweeps side by side with
torch.func, torch.autograd.functional (vectorize=True) and JAX (eager, no
jit), at one and at two threads.

    python benchmarks/jacobians.py                 # the table, 1 and 2 threads
    python benchmarks/jacobians.py --threads 1     # one thread count only
    python benchmarks/jacobians.py --repeat 30

Workloads (float64):

* Hessian of ``sum(tanh(A x)**2) + sum(log1p(x**2))`` for n = 10, 100, 300
  and 1000 (``A`` n x n);
* Jacobian of the residuals ``exp(-B th) * sin(3 t) + (B tanh th)**2 - y``
  for B of 1000 x 50, 200 x 200, 50 x 1000 and 2000 x 2000;
* ``hessian_operator(f, x).matmat`` with 20 columns against 20 ``matvec``
  calls (stacked) on the Rosenbrock function of 1e3 and 1e4 elements.

Each framework runs in a worker process of its own with the thread count
and allocator settings of ``benchmarks/common.py``; a time is the minimum
over ``--repeat`` calls after a warm-up. Every result is checked against
chainrules' before it is timed. The table reports milliseconds and the
ratio of chainrules' time to the best torch variant's (below 1: faster).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

HESS_N = (10, 100, 300, 1000)
JAC_SHAPES = ((1000, 50), (200, 200), (50, 1000), (2000, 2000))
ROSEN_NS, ROSEN_K = (1_000, 10_000), 20


def hess_data(n):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)


def jac_data(m, p):
    rng = np.random.default_rng(m * 7 + p)
    B = rng.standard_normal((m, p)) / np.sqrt(p)
    t = np.linspace(0.0, 1.0, m)
    y = rng.standard_normal(m)
    th = 0.1 * rng.standard_normal(p)
    return B, t, y, th


def best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


# ---------------------------------------------------------------- frameworks
def run_chainrules(repeat):
    import chainrules as cr

    out = {}
    for n in HESS_N:
        A, x = hess_data(n)
        H = cr.hessian(lambda x: np.sum(np.tanh(A @ x) ** 2) + np.sum(np.log1p(x ** 2)))
        out[f"hessian n={n}"] = (best(lambda: H(x), repeat), H(x))
    for m, p in JAC_SHAPES:
        B, t, y, th = jac_data(m, p)
        s3 = np.sin(3 * t)
        J = cr.jacobian(lambda th: np.exp(-(B @ th)) * s3 + (B @ np.tanh(th)) ** 2 - y)
        out[f"jacobian {m}x{p}"] = (best(lambda: J(th), max(3, repeat // 5)
                                         if m * p > 10 ** 6 else repeat), J(th))
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    for n in ROSEN_NS:
        x = np.random.default_rng(1).uniform(0.5, 1.5, n)
        V = np.random.default_rng(2).standard_normal((n, ROSEN_K))
        op = cr.hessian_operator(rosen, x)
        out[f"rosenbrock n={n}: matmat({ROSEN_K})"] = (best(lambda: op.matmat(V), repeat),
                                                       op.matmat(V))
        out[f"rosenbrock n={n}: {ROSEN_K} matvec"] = (
            best(lambda: np.stack([op.matvec(V[:, j]) for j in range(ROSEN_K)], axis=1),
                 repeat),
            np.stack([op.matvec(V[:, j]) for j in range(ROSEN_K)], axis=1))
    return out


def run_torch(repeat):
    import torch
    from torch.autograd.functional import hessian as ag_hessian, jacobian as ag_jacobian
    from torch.func import hessian as f_hessian, jacfwd, jacrev

    torch.set_default_dtype(torch.float64)
    out = {}
    for n in HESS_N:
        A, x = hess_data(n)
        At, xt = torch.from_numpy(A), torch.from_numpy(x)

        def f(x):
            return torch.sum(torch.tanh(At @ x) ** 2) + torch.sum(torch.log1p(x ** 2))

        fh = f_hessian(f)
        out[f"hessian n={n}"] = {
            "torch.func": (best(lambda: fh(xt), repeat), fh(xt).numpy()),
            "autograd.functional": (best(lambda: ag_hessian(f, xt, vectorize=True), repeat),
                                    ag_hessian(f, xt, vectorize=True).numpy())}
    for m, p in JAC_SHAPES:
        B, t, y, th = jac_data(m, p)
        Bt, s3, yt, tht = (torch.from_numpy(B), torch.from_numpy(np.sin(3 * t)),
                           torch.from_numpy(y), torch.from_numpy(th))

        def r(th):
            return torch.exp(-(Bt @ th)) * s3 + (Bt @ torch.tanh(th)) ** 2 - yt

        jf = jacfwd(r) if p <= m else jacrev(r)
        rep = max(3, repeat // 5) if m * p > 10 ** 6 else repeat
        mode = "forward-mode" if p <= m else "reverse-mode"
        out[f"jacobian {m}x{p}"] = {
            "torch.func": (best(lambda: jf(tht), rep), jf(tht).numpy()),
            "autograd.functional": (
                best(lambda: ag_jacobian(r, tht, vectorize=True,
                                         strategy=mode), rep),
                ag_jacobian(r, tht, vectorize=True, strategy=mode).numpy())}
    return out


def run_jax(repeat):
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import jax
    import jax.numpy as jnp

    out = {}
    for n in HESS_N:
        A, x = hess_data(n)
        Aj, xj = jnp.asarray(A), jnp.asarray(x)
        h = jax.hessian(lambda x: jnp.sum(jnp.tanh(Aj @ x) ** 2) + jnp.sum(jnp.log1p(x ** 2)))
        out[f"hessian n={n}"] = {"jax (eager)": (
            best(lambda: h(xj).block_until_ready(), repeat), np.asarray(h(xj)))}
    for m, p in JAC_SHAPES:
        B, t, y, th = jac_data(m, p)
        Bj, s3, yj, thj = jnp.asarray(B), jnp.asarray(np.sin(3 * t)), jnp.asarray(y), \
            jnp.asarray(th)

        def r(th):
            return jnp.exp(-(Bj @ th)) * s3 + (Bj @ jnp.tanh(th)) ** 2 - yj

        jf = jax.jacfwd(r) if p <= m else jax.jacrev(r)
        rep = max(3, repeat // 5) if m * p > 10 ** 6 else repeat
        out[f"jacobian {m}x{p}"] = {"jax (eager)": (
            best(lambda: jf(thj).block_until_ready(), rep), np.asarray(jf(thj)))}
    return out


RUNNERS = {"chainrules": run_chainrules, "torch": run_torch, "jax": run_jax}


# -------------------------------------------------------------------- driver
def worker(name, threads, repeat, path):
    res = RUNNERS[name](repeat)
    np.savez(path + ".npz", **{f"{k}|{v}": r[1] for k, d in res.items()
                                for v, r in (d.items() if isinstance(d, dict)
                                             else [("chainrules", d)])})
    times = {k: ({v: r[0] for v, r in d.items()} if isinstance(d, dict) else d[0])
             for k, d in res.items()}
    with open(path + ".json", "w") as fh:
        json.dump(times, fh)


def run_all(threads, repeat, tmp):
    from common import worker_env

    results, values = {}, {}
    for name in RUNNERS:
        path = os.path.join(tmp, f"jac_{name}_{threads}")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", name,
               "--threads", str(threads), "--repeat", str(repeat), "--out", path]
        p = subprocess.run(cmd, env=worker_env(threads), capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name} failed at {threads} thread(s):\n{p.stderr[-2000:]}")
            continue
        with open(path + ".json") as fh:
            results[name] = json.load(fh)
        with np.load(path + ".npz") as z:
            values[name] = {k: z[k] for k in z.files}
    return results, values


def report(threads, results, values):
    cr_t = results.get("chainrules", {})
    cr_v = values.get("chainrules", {})
    print(f"\n## {threads} thread(s): milliseconds (min over repeats), ratio = chainrules"
          " / best torch\n")
    print("| workload | chainrules | torch.func | autograd.functional | jax (eager) | ratio |")
    print("|---|---|---|---|---|---|")
    for key, t in cr_t.items():
        row = {}
        for name in ("torch", "jax"):
            for variant, tv in results.get(name, {}).get(key, {}).items():
                row[variant] = tv
                got = values[name].get(f"{key}|{variant}")
                ref = cr_v.get(f"{key}|chainrules")
                if got is not None and ref is not None and not np.allclose(
                        got, ref, rtol=1e-8, atol=1e-10):
                    row[variant] = float("nan")
                    print(f"  (warning: {variant} disagrees with chainrules on {key})")
        torch_best = min([row[v] for v in ("torch.func", "autograd.functional") if v in row],
                         default=None)
        cells = [f"{row[v]:.3f}" if v in row else "-" for v in
                 ("torch.func", "autograd.functional", "jax (eager)")]
        ratio = f"{t / torch_best:.2f}" if torch_best else "-"
        print(f"| {key} | {t:.3f} | " + " | ".join(cells) + f" | {ratio} |")
    for n in ROSEN_NS:
        mm = cr_t.get(f"rosenbrock n={n}: matmat({ROSEN_K})")
        mv = cr_t.get(f"rosenbrock n={n}: {ROSEN_K} matvec")
        if mm and mv:
            print(f"\nhessian_operator on Rosenbrock n={n}: {ROSEN_K} matvec calls (stacked) / "
                  f"one matmat of {ROSEN_K} columns = {mv / mm:.1f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--worker")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.threads[0], a.repeat, a.out)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for threads in a.threads:
            results, values = run_all(threads, a.repeat, tmp)
            report(threads, results, values)


if __name__ == "__main__":
    main()
