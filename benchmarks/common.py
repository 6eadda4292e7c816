"""Shared pieces of the benchmark suite: workload definitions, inputs,
timing, the environment every framework runs in, and the worker entry.

The workloads are written once, against a NumPy-like namespace ``xp``
(``numpy``, ``autograd.numpy``, ``jax.numpy`` or the small ``torch`` shim in
``workloads/torch_wl.py``), so every framework runs exactly the same
operations. Each framework module in ``workloads/`` only says how to
differentiate and how to move arrays in and out.

A worker process (``python benchmarks/common.py --worker ...``, started by
``run.py``) benchmarks one (framework, workload) pair in a fresh process and
writes a JSON summary and an ``.npz`` of its outputs (values, gradients,
HVPs), which ``run.py`` compares with chainrules'.
"""

import argparse
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------- sizes
CHAIN_BLOCKS = 50          # 4 elementwise ops per block -> 200 ops
CHAIN_OPS = 4 * CHAIN_BLOCKS + 1   # plus the final sum
CHAIN_N = 16
MLP_SIZES = (784, 256, 256, 10)
MLP_BATCH = 128
ROSEN_N = 100_000
LSTM_HIDDEN, LSTM_SEQ, LSTM_BATCH, LSTM_VOCAB = 128, 64, 32, 64
GP_N, GP_DIM = 500, 3
TV_N = 1024
TV_EPS, TV_LAM = 1e-3, 0.5

# ---------------------------------------------------- the allocator, threads
# glibc returns freed memory to the kernel (trim, and mmap for large blocks);
# page faults are expensive on these machines, so whichever framework happens
# to reuse its heap looks faster. Every worker gets the same fixed settings:
# no mmap below 32 MiB (the largest value glibc accepts on 64-bit) and no trim
# below 1 GiB. Setting either also switches off glibc's dynamic threshold.
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
}

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS")


def run_as_worker(threads):
    """Re-run the calling script under ``worker_env(threads)`` unless its
    allocator and thread settings are in effect already (they must be set
    before NumPy is imported): the settings of ``run.py``'s workers."""
    env = worker_env(threads)
    if any(os.environ.get(k) != env[k] for k in list(MALLOC_ENV) + ["OPENBLAS_NUM_THREADS"]):
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def worker_env(threads, allocator="fixed"):
    """The environment of every worker: same threads, same allocator
    (``allocator="default"``: glibc's own settings, as a user's process
    has them)."""
    env = dict(os.environ)
    for k in THREAD_VARS:
        env[k] = str(threads)
    if allocator == "fixed":
        env.update(MALLOC_ENV)
    else:
        for k in MALLOC_ENV:
            env.pop(k, None)
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    if threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            " --xla_cpu_multi_thread_eigen=false"
                            " intra_op_parallelism_threads=1").strip()
    env["PYTHONHASHSEED"] = "0"
    return env


# ------------------------------------------------------------------ workloads
# ``goals``: chainrules' figure (``metric``) divided by that of the named
# framework in the same run must not exceed the number ("numpy" is the
# forward, so its goal is a plain ratio); on top of these, every workload
# has the goal of being ahead of autograd and of PyTorch eager (GOAL_PEERS).
# ``line``: a ratio drawn as a dashed line in the plot.
GOAL_PEERS = ("autograd", "torch")
WORKLOADS = {
    "chain": dict(
        title=f"{CHAIN_OPS - 1}-op elementwise chain, value_and_grad "
              f"({CHAIN_N} float64)",
        short="per-op overhead",
        metric="us_per_op",
        goals=[("torch", 0.5)], line=None),
    "mlp_grad": dict(
        title="MLP {}-{}-{}-{}, batch {}, log-softmax loss, value_and_grad "
              "w.r.t. all weights".format(*MLP_SIZES, MLP_BATCH),
        short="MLP value_and_grad",
        metric="ratio",
        goals=[("numpy.hand", 1.1)], line=None),
    "rosen_hvp": dict(
        title=f"Rosenbrock, n = {ROSEN_N:.0e}, Hessian-vector product",
        short="Rosenbrock HVP",
        metric="ratio",
        goals=[("numpy", 3.0)], line=3.0),
    "mlp_hvp": dict(
        title="MLP loss, Hessian-vector product w.r.t. the first weight matrix",
        short="MLP HVP (W1)",
        metric="ratio",
        goals=[("numpy.hand", 1.1)], line=None),
    "lstm_grad": dict(
        title=f"LSTM language-model step, hidden {LSTM_HIDDEN}, sequence {LSTM_SEQ}, "
              f"batch {LSTM_BATCH}, vocabulary {LSTM_VOCAB}, value_and_grad",
        short="LSTM value_and_grad",
        metric="ratio",
        goals=[("torch", 1.0)], line=None),
    "gp_grad": dict(
        title=f"Gaussian-process negative log marginal likelihood, n = {GP_N}, "
              "Cholesky, value_and_grad w.r.t. 3 log-hyperparameters",
        short="GP value_and_grad",
        metric="ratio",
        goals=[("numpy.hand", 1.2)], line=None),
    "gp_hvp": dict(
        title=f"the GP negative log marginal likelihood, n = {GP_N}, HVP w.r.t. the "
              "3 log-hyperparameters",
        short="GP HVP",
        metric="ratio",
        goals=[], line=None),
    "tv_grad": dict(
        title=f"total-variation image denoising loss on {TV_N}x{TV_N} "
              "(shifted slices), value_and_grad",
        short="TV value_and_grad",
        metric="ratio",
        goals=[], line=None),
}


def chain(xp, x):
    """200 small elementwise ops and a sum."""
    for _ in range(CHAIN_BLOCKS):
        x = xp.sin(x)
        x = x * 1.01
        x = x + 0.1
        x = xp.tanh(x)
    return xp.sum(x)


def mlp_loss(xp, params, X, Y, shift=True):
    """Mean cross-entropy of a tanh MLP with a log-softmax output.

    ``shift`` subtracts the row maximum before the exponential (the usual
    stable log-softmax); without it the same loss is computed unshifted
    (the logits here are O(1), so both are accurate).
    """
    W1, b1, W2, b2, W3, b3 = params
    h = xp.tanh(X @ W1 + b1)
    h = xp.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    if shift:
        z = z - xp.max(z, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.sum(Y * logp) * (1.0 / MLP_BATCH)


def rosen(xp, x):
    """The Rosenbrock function, written as scipy.optimize.rosen."""
    a = x[:-1]
    return xp.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)


def _sigmoid(xp, z):
    return 0.5 * xp.tanh(0.5 * z) + 0.5


def lstm_loss(xp, params, X, T, shift=True):
    """Mean next-token cross-entropy of a one-layer LSTM language model.

    ``X`` and ``T`` are one-hot, (sequence, batch, vocabulary): the input
    token and the token to predict at each step. The gates are one product
    of the input and one of the state, sliced into input, forget and output
    gates (sigmoids) and the candidate (tanh); the state starts at zero.
    """
    Wx, Wh, b, Wo, bo = params
    H = Wh.shape[0]
    h = c = None
    total = 0.0
    for t in range(X.shape[0]):
        z = X[t] @ Wx + b
        if h is not None:
            z = z + h @ Wh
        s = _sigmoid(xp, z[:, :3 * H])
        g = xp.tanh(z[:, 3 * H:])
        c = s[:, :H] * g if c is None else s[:, H:2 * H] * c + s[:, :H] * g
        h = s[:, 2 * H:] * xp.tanh(c)
        y = h @ Wo + bo
        if shift:
            y = y - xp.max(y, axis=1, keepdims=True)
        logp = y - xp.log(xp.sum(xp.exp(y), axis=1, keepdims=True))
        total = total + xp.sum(T[t] * logp)
    return -total * (1.0 / (X.shape[0] * X.shape[1]))


def gp_nlml(xp, sla, theta, D, y, I):
    """Negative log marginal likelihood of a GP with a squared-exponential
    kernel; ``theta`` = (log length scale, log signal std, log noise std),
    ``D`` the squared distances of the inputs, ``I`` the identity."""
    ell2 = xp.exp(2.0 * theta[0])
    sf2 = xp.exp(2.0 * theta[1])
    sn2 = xp.exp(2.0 * theta[2])
    K = sf2 * xp.exp(D * (-0.5 / ell2)) + sn2 * I
    L = xp.linalg.cholesky(K)
    a = sla.solve_triangular(L, y, lower=True)
    return (0.5 * xp.sum(a * a) + xp.sum(xp.log(xp.diagonal(L, 0, -1, -2)))
            + 0.5 * y.shape[0] * np.log(2 * np.pi))


def tv_loss(xp, x, f):
    """Smoothed total variation of the image ``x`` plus a quadratic fit to
    the noisy image ``f`` (forward differences as shifted slices)."""
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    r = x - f
    return xp.sum(xp.sqrt(dx * dx + dy * dy + TV_EPS)) + (0.5 * TV_LAM) * xp.sum(r * r)


def make_data(path, seed=0):
    """Seeded inputs shared by every framework, saved to ``path`` (.npz)."""
    rng = np.random.default_rng(seed)
    d = {"chain_x": rng.standard_normal(CHAIN_N)}
    sizes = MLP_SIZES
    for i in range(3):
        d[f"W{i + 1}"] = rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])
        d[f"b{i + 1}"] = 0.1 * rng.standard_normal(sizes[i + 1])
    d["X"] = rng.standard_normal((MLP_BATCH, sizes[0]))
    labels = rng.integers(0, sizes[-1], MLP_BATCH)
    d["Y"] = np.eye(sizes[-1])[labels]
    d["V1"] = rng.standard_normal((sizes[0], sizes[1]))
    d["rosen_x"] = 1.0 + 0.3 * rng.standard_normal(ROSEN_N)
    d["rosen_v"] = rng.standard_normal(ROSEN_N)
    H, V = LSTM_HIDDEN, LSTM_VOCAB
    d["lstm_Wx"] = rng.standard_normal((V, 4 * H)) / np.sqrt(V)
    d["lstm_Wh"] = rng.standard_normal((H, 4 * H)) / np.sqrt(H)
    d["lstm_b"] = 0.1 * rng.standard_normal(4 * H)
    d["lstm_Wo"] = rng.standard_normal((H, V)) / np.sqrt(H)
    d["lstm_bo"] = 0.1 * rng.standard_normal(V)
    tokens = rng.integers(0, V, (LSTM_SEQ + 1, LSTM_BATCH))
    onehot = np.eye(V)[tokens]
    d["lstm_X"], d["lstm_T"] = onehot[:-1], onehot[1:]
    P = rng.uniform(0.0, 5.0, (GP_N, GP_DIM))
    d["gp_D"] = np.sum((P[:, None, :] - P[None, :, :]) ** 2, axis=-1)
    d["gp_y"] = np.sin(P @ np.array([1.0, -0.7, 0.4])) + 0.1 * rng.standard_normal(GP_N)
    d["gp_I"] = np.eye(GP_N)
    d["gp_theta"] = np.array([0.2, 0.1, np.log(0.1)])
    d["gp_v"] = rng.standard_normal(3)
    u = np.linspace(0.0, 1.0, TV_N)
    clean = (np.sin(6 * u)[:, None] * np.cos(4 * u)[None, :] > 0).astype(float)
    d["tv_f"] = clean + 0.2 * rng.standard_normal((TV_N, TV_N))
    d["tv_x"] = d["tv_f"] + 0.05 * rng.standard_normal((TV_N, TV_N))
    np.savez(path, **d)
    return d


def mlp_params(d):
    return (d["W1"], d["b1"], d["W2"], d["b2"], d["W3"], d["b3"])


PARAM_NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")
LSTM_NAMES = ("Wx", "Wh", "b", "Wo", "bo")


def lstm_params(d):
    return tuple(d["lstm_" + k] for k in LSTM_NAMES)


# --------------------------------------------------------------------- timing
class Bench:
    """What a framework module returns for one workload.

    ``run()`` does the timed work (and waits for asynchronous results);
    ``outputs(result)`` turns its result into a dict of NumPy arrays for the
    correctness comparison (not timed). ``method`` names how the derivative
    is computed (e.g. "forward-over-reverse").
    """

    def __init__(self, run, outputs, method=""):
        self.run = run
        self.outputs = outputs
        self.method = method


def functional_bench(workload, d, cfg, xp, value_and_grad, make_hvp, hvp_method,
                     sla=None):
    """The workloads for a framework with a functional API: ``xp`` is its
    NumPy-like namespace, ``sla`` its ``scipy.linalg``-like one,
    ``value_and_grad(f)`` its gradient transform (with respect to the first
    argument: the parameter tuple for the MLP and the LSTM), ``make_hvp(f)``
    returns ``hvp(x, v)``."""
    shift = cfg["shift"]
    if workload == "chain":
        x = d["chain_x"]
        vg = value_and_grad(lambda x: chain(xp, x))
        return Bench(lambda: vg(x), lambda r: {"value": r[0], "grad": r[1]},
                     "value_and_grad")
    if workload == "mlp_grad":
        p, X, Y = mlp_params(d), d["X"], d["Y"]
        vg = value_and_grad(lambda p, X, Y: mlp_loss(xp, p, X, Y, shift))

        def outputs(r):
            return {"value": r[0], **dict(zip(PARAM_NAMES, r[1]))}
        return Bench(lambda: vg(p, X, Y), outputs, "value_and_grad")
    if workload == "rosen_hvp":
        x, v = d["rosen_x"], d["rosen_v"]
        hvp = make_hvp(lambda x: rosen(xp, x))
        return Bench(lambda: hvp(x, v), lambda r: {"hvp": r}, hvp_method)
    if workload == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = mlp_params(d)
        W1, V1, X, Y = d["W1"], d["V1"], d["X"], d["Y"]
        hvp = make_hvp(lambda W1: mlp_loss(xp, (W1, b1, W2, b2, W3, b3), X, Y, shift))
        return Bench(lambda: hvp(W1, V1), lambda r: {"hvp": r}, hvp_method)
    if workload == "lstm_grad":
        p, X, T = lstm_params(d), d["lstm_X"], d["lstm_T"]
        vg = value_and_grad(lambda p, X, T: lstm_loss(xp, p, X, T, shift))

        def outputs(r):
            return {"value": r[0], **dict(zip(LSTM_NAMES, r[1]))}
        return Bench(lambda: vg(p, X, T), outputs, "value_and_grad")
    if workload in ("gp_grad", "gp_hvp"):
        if sla is None:
            raise NotImplementedError("no scipy.linalg-like namespace")
        D, y, I = d["gp_D"], d["gp_y"], d["gp_I"]
        theta = d["gp_theta"]

        def f(theta):
            return gp_nlml(xp, sla, theta, D, y, I)
        if workload == "gp_grad":
            vg = value_and_grad(f)
            return Bench(lambda: vg(theta), lambda r: {"value": r[0], "grad": r[1]},
                         "value_and_grad")
        hvp, v = make_hvp(f), d["gp_v"]
        return Bench(lambda: hvp(theta, v), lambda r: {"hvp": r}, hvp_method)
    if workload == "tv_grad":
        x, fimg = d["tv_x"], d["tv_f"]
        vg = value_and_grad(lambda x: tv_loss(xp, x, fimg))
        return Bench(lambda: vg(x), lambda r: {"value": r[0], "grad": r[1]},
                     "value_and_grad")
    raise NotImplementedError(workload)


def calibrate(fn, min_time, warmup_time):
    """Warm ``fn`` up, then return how many calls make one repeat last at
    least ``min_time`` seconds (so the timer's resolution is irrelevant)."""
    t_end = time.perf_counter() + warmup_time
    calls = 0
    while time.perf_counter() < t_end or calls < 3:
        fn()
        calls += 1
    gc.collect()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(min_time / one))


def repeat(fn, number):
    """Seconds per call over ``number`` calls. The garbage collector stays
    on (as in real use) but is run first."""
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    t1 = time.perf_counter()
    c1 = time.process_time()
    return (t1 - t0) / number, (c1 - c0) / number


def summarize(samples, number):
    """Wall-clock statistics, plus the median CPU time of this process per
    call (all its threads): on a busy machine the CPU time of a
    single-threaded workload is far less disturbed than the wall clock."""
    wall = [s[0] for s in samples]
    cpu = [s[1] for s in samples]
    return dict(median=statistics.median(wall), min=min(wall), max=max(wall),
                samples=wall, cpu_median=statistics.median(cpu), cpu_samples=cpu,
                number=number, repeats=len(samples))


# ---------------------------------------------------------------- frameworks
# name -> (module in workloads/, keyword options for its build())
FRAMEWORKS = {
    "numpy": ("numpy_wl", {}),
    "numpy.hand": ("handwritten_wl", {}),
    "chainrules": ("chainrules_wl", {}),
    # staged plans; with numba installed their hot regions run compiled
    # (chainrules.jit), or as NumPy programs (chainrules.jit.numpy)
    "chainrules.jit": ("chainrules_wl", {"jit": True}),
    "chainrules.jit.numpy": ("chainrules_wl", {"jit": True, "kernels": False}),
    "autograd": ("autograd_wl", {}),
    "torch": ("torch_wl", {}),
    # the same functions through torch.compile (inductor, CPU)
    "torch.compile": ("torch_wl", {"compile": True}),
    "jax": ("jax_wl", {"jit": False}),
    "jax.jit": ("jax_wl", {"jit": True}),
}


def load_module(framework):
    modname, opts = FRAMEWORKS[framework]
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    return importlib.import_module(f"workloads.{modname}"), opts


def worker_main(argv=None):
    """One (framework, workload) in this fresh process.

    With ``--serve`` the worker warms up, calibrates, prints one JSON line
    ``{"ready": number}`` and then answers each ``run`` line on stdin with
    the seconds per call of one repeat, until ``quit``: ``run.py`` uses this
    to interleave the repeats of all frameworks of a workload, so that a
    change of machine load hits every framework alike. Without ``--serve``
    it times ``--repeats`` repeats itself. Either way it writes
    ``<out>.json`` (status, versions, times) and ``<out>.npz`` (outputs).
    """
    ap = argparse.ArgumentParser(description="benchmark one (framework, workload)")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--framework", required=True, choices=list(FRAMEWORKS))
    ap.add_argument("--workload", required=True, choices=list(WORKLOADS))
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, help="prefix of the .json/.npz outputs")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--no-shift", action="store_true",
                    help="log-softmax without the max shift")
    a = ap.parse_args(argv)
    # the protocol gets the real stdout; anything a framework prints goes to stderr
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    res = {"framework": a.framework, "workload": a.workload, "status": "ok"}
    bench = None
    try:
        try:
            mod, opts = load_module(a.framework)
        except ImportError as e:
            res.update(status="skipped", error=f"not installed: {e}")
        else:
            mod.setup(a.threads)
            res["version"] = mod.version()
            res["threads"] = mod.threads()
            data = dict(np.load(a.data))
            cfg = {"shift": not a.no_shift}
            try:
                bench = mod.build(a.workload, data, cfg, **opts)
            except NotImplementedError as e:
                res.update(status="skipped", error=str(e))
        if bench is not None:
            res["method"] = bench.method
            t0 = time.perf_counter()
            result = bench.run()
            res["first_call_s"] = time.perf_counter() - t0
            outs = {k: np.asarray(v, dtype=np.float64)
                    for k, v in bench.outputs(result).items()}
            np.savez(a.out + ".npz", **outs)
            del result
            number = calibrate(bench.run, a.min_time, a.warmup)
            if a.serve:
                samples = _serve(proto, bench.run, number)
            else:
                samples = [repeat(bench.run, number) for _ in range(a.repeats)]
            t = summarize(samples, number)
            res["time"] = t
            # for jax.jit and torch.compile the first call traced and
            # compiled: reported separately from the steady-state time
            res["compile_s"] = max(res["first_call_s"] - t["median"], 0.0)
            import resource
            res["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except Exception as e:  # reported in the table, not fatal for the run
        res.update(status="error", error=f"{type(e).__name__}: {e}",
                   traceback=traceback.format_exc(limit=8))
    _write(a.out, res)
    if a.serve:
        proto.write(json.dumps({"done": res["status"]}) + "\n")
    return 0


def _serve(proto, fn, number):
    proto.write(json.dumps({"ready": number}) + "\n")
    samples = []
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "run":
            t = repeat(fn, number)
            samples.append(t)
            proto.write(json.dumps({"time": t[0]}) + "\n")
        elif cmd == "quit":
            break
    return samples


def _write(prefix, res):
    with open(prefix + ".json", "w") as f:
        json.dump(res, f, indent=1)
    return 0


def machine_info():
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "numpy": np.__version__}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["loadavg"] = os.getloadavg()
    except OSError:
        pass
    return info


if __name__ == "__main__":
    sys.exit(worker_main())
