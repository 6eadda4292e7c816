"""Per-example gradients of a small MLP (100-64-10, tanh, softmax
cross-entropy): the recipes of docs/guide/per-example-gradients.md against
a Python loop of ``chainrules.grad`` and ``torch.func.vmap(grad)``.

    python benchmarks/per_example.py [--batch 64 256] [--repeat 10] [--threads 1]

Each recipe's result is checked against the loop's before it is timed;
times are the minimum over ``--repeat`` calls, in milliseconds.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

SIZES = (100, 64, 10)


def data(batch):
    rng = np.random.default_rng(batch)
    d, h, c = SIZES
    params = [rng.standard_normal((d, h)) / np.sqrt(d), np.zeros(h),
              rng.standard_normal((h, c)) / np.sqrt(h), np.zeros(c)]
    X = rng.standard_normal((batch, d))
    y = rng.integers(0, c, batch)
    return params, X, y


def best(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def chainrules_recipes(params, X, y):
    import chainrules as cr

    def loss_one(p, x, t):
        W1, b1, W2, b2 = p
        z = np.tanh(x @ W1 + b1) @ W2 + b2
        return np.log(np.sum(np.exp(z - np.max(z)))) + np.max(z) - z[t]

    g1 = cr.grad(loss_one)

    def loop():
        return [g1(params, X[i], y[i]) for i in range(len(y))]

    def replicated_losses(rp, X, y):
        # every example has its own copy of the parameters: the gradient of
        # the summed loss with respect to copy i is example i's gradient
        W1, b1, W2, b2 = rp
        h = np.tanh(np.einsum("bi,bij->bj", X, W1) + b1)
        z = np.einsum("bj,bjk->bk", h, W2) + b2
        m = np.max(z, axis=1, keepdims=True)
        lse = np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0]
        return np.sum(lse - z[np.arange(len(y)), y])

    g_rep = cr.grad(replicated_losses)

    def replicated():
        b = len(y)
        rp = [np.repeat(p[None], b, axis=0) for p in params]
        return g_rep(rp, X, y)

    def losses(p, X, y):
        W1, b1, W2, b2 = p
        z = np.tanh(X @ W1 + b1) @ W2 + b2
        m = np.max(z, axis=1, keepdims=True)
        return np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0] - z[np.arange(len(y)), y]

    jac = cr.jacobian(losses)

    def jacobian_of_losses():
        return jac(params, X, y)

    return {"python loop of cr.grad": loop, "replicated parameters (cr.grad)": replicated,
            "cr.jacobian of the per-example losses": jacobian_of_losses}


def torch_vmap(params, X, y):
    import torch
    from torch.func import grad, vmap

    torch.set_default_dtype(torch.float64)
    tp = [torch.from_numpy(p) for p in params]
    tX = torch.from_numpy(X)
    ty = torch.nn.functional.one_hot(torch.from_numpy(y), SIZES[-1]).to(torch.float64)

    def loss_one(p, x, t):
        W1, b1, W2, b2 = p
        z = torch.tanh(x @ W1 + b1) @ W2 + b2
        return torch.logsumexp(z, 0) - torch.sum(z * t)   # t: one-hot target

    per = vmap(grad(loss_one), in_dims=(None, 0, 0))
    return lambda: per(tp, tX, ty)


def as_rows(res, batch):
    """Per-example gradients as a (batch, n_params) array, from any recipe."""
    if isinstance(res, list) and len(res) == batch and isinstance(res[0], list):
        return np.stack([np.concatenate([np.ravel(g) for g in r]) for r in res])
    return np.concatenate([np.reshape(np.asarray(g), (batch, -1)) for g in res], axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="*", default=[64, 256])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print("| batch | recipe | ms | ratio to torch.func.vmap(grad) |")
    print("|---|---|---|---|")
    for b in a.batch:
        params, X, y = data(b)
        recipes = chainrules_recipes(params, X, y)
        ref = as_rows(recipes["python loop of cr.grad"](), b)
        times = {}
        for name, fn in recipes.items():
            got = as_rows(fn(), b)
            assert np.allclose(got, ref, rtol=1e-10, atol=1e-12), name
            times[name] = best(fn, a.repeat)
        try:
            import torch
            torch.set_num_threads(a.threads)
            tv = torch_vmap(params, X, y)
            got = as_rows([t.numpy() for t in tv()], b)
            assert np.allclose(got, ref, rtol=1e-10, atol=1e-12), "torch"
            times["torch.func.vmap(grad)"] = best(tv, a.repeat)
        except ImportError:
            pass
        t_ref = times.get("torch.func.vmap(grad)")
        for name, t in times.items():
            ratio = f"{t / t_ref:.2f}" if t_ref else "-"
            print(f"| {b} | {name} | {t:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
