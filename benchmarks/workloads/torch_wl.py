"""PyTorch eager and ``torch.compile``, float64, thread count set like NumPy's.

The shared workloads are written against a NumPy-like namespace; ``TorchNS``
maps the handful of names they use onto torch (one Python call each).
Eager: ``torch.autograd.grad``; HVPs use double backward
(reverse-over-reverse), the usual eager idiom. ``torch.compile``: the value
and gradient (``torch.func.grad_and_value``) or the HVP (``torch.func.jvp``
of ``torch.func.grad``) compiled whole by inductor, as one graph.
"""

import atexit
import os
import shutil
import tempfile

import torch

from common import (LSTM_NAMES, PARAM_NAMES, Bench, chain, gp_nlml, lstm_loss, lstm_params,
                    mlp_loss, mlp_params, rosen, tv_loss)


class TorchNS:
    sin = staticmethod(torch.sin)
    tanh = staticmethod(torch.tanh)
    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    sqrt = staticmethod(torch.sqrt)
    diagonal = staticmethod(torch.diagonal)
    linalg = torch.linalg

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        if axis is None:
            return torch.sum(x)
        return torch.sum(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def max(x, axis=None, keepdims=False):
        if axis is None:
            return torch.amax(x)
        return torch.amax(x, dim=axis, keepdim=keepdims)


class TorchSLA:
    @staticmethod
    def solve_triangular(a, b, lower=False):
        return torch.linalg.solve_triangular(a, b[:, None], upper=not lower)[:, 0]


tnp = TorchNS()
tsla = TorchSLA()


def setup(threads):
    torch.set_num_threads(threads)
    torch.set_default_dtype(torch.float64)


def version():
    return torch.__version__


def threads():
    return torch.get_num_threads()


def _t(a):
    return torch.from_numpy(a)


def _np(t):
    return t.detach().numpy()


def _grad_bench(f, x0):
    """value_and_grad of ``f`` w.r.t. the one tensor ``x0``."""
    def run():
        x = x0.detach().requires_grad_()
        y = f(x)
        (g,) = torch.autograd.grad(y, x)
        return y.detach(), g
    return Bench(run, lambda r: {"value": _np(r[0]), "grad": _np(r[1])}, "autograd.grad")


def _params_grad_bench(f, p0, names):
    """value_and_grad of ``f`` w.r.t. every tensor of the list ``p0``."""
    def run():
        p = [a.detach().requires_grad_() for a in p0]
        y = f(p)
        return y.detach(), torch.autograd.grad(y, p)

    def outputs(r):
        return {"value": _np(r[0]), **{k: _np(g) for k, g in zip(names, r[1])}}
    return Bench(run, outputs, "autograd.grad")


def _hvp_bench(f, x0, v):
    """The HVP of ``f`` at ``x0`` along ``v`` by double backward."""
    def run():
        x = x0.detach().requires_grad_()
        (g,) = torch.autograd.grad(f(x), x, create_graph=True)
        (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
        return hv
    return Bench(run, lambda r: {"hvp": _np(r)}, "double backward (reverse-over-reverse)")


def _compile(fn):
    """``fn`` through ``torch.compile`` (inductor, CPU) as one graph: a graph
    break raises instead of running part of ``fn`` eagerly."""
    return torch.compile(fn, backend="inductor", fullgraph=True)


def _fresh_inductor_cache():
    """Inductor keeps what it compiled on disk, shared by every process of
    the user (``/tmp/torchinductor_<user>``), so a second run would load
    instead of compiling. Each worker gets an empty directory of its own:
    the first call always compiles, as jax.jit's does."""
    path = tempfile.mkdtemp(prefix="torchinductor-bench-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    atexit.register(shutil.rmtree, path, True)


def _compiled_grad_bench(f, x0, names=None):
    """``torch.compile`` of ``torch.func.grad_and_value(f)``: the value and
    the gradient in one compiled graph, like ``jax.jit(value_and_grad)``.
    ``x0`` is a tensor, or a list of them named by ``names``."""
    vg = _compile(torch.func.grad_and_value(f))

    def outputs(r):
        g, y = r
        if names is None:
            return {"value": _np(y), "grad": _np(g)}
        return {"value": _np(y), **{k: _np(a) for k, a in zip(names, g)}}
    return Bench(lambda: vg(x0), outputs, "torch.compile of torch.func.grad_and_value")


def _compiled_hvp_bench(f, x0, v):
    """``torch.compile`` of ``torch.func.jvp`` of ``torch.func.grad``
    (forward-over-reverse). Double backward, the eager idiom, cannot be
    compiled: AOTAutograd's compiled backward is not differentiable again."""
    g = torch.func.grad(f)

    def hvp(x, v):
        return torch.func.jvp(g, (x,), (v,))[1]
    hvp = _compile(hvp)
    return Bench(lambda: hvp(x0, v), lambda r: {"hvp": _np(r)},
                 "torch.compile of torch.func.jvp of grad (forward-over-reverse)")


def build(workload, d, cfg, compile=False):
    """The eager form, or with ``compile`` every workload as one
    ``torch.compile`` graph (compiled on the first call)."""
    shift = cfg["shift"]
    if compile:
        _fresh_inductor_cache()
        grad_bench, hvp_bench = _compiled_grad_bench, _compiled_hvp_bench
        params_grad_bench = _compiled_grad_bench
    else:
        grad_bench, params_grad_bench, hvp_bench = _grad_bench, _params_grad_bench, _hvp_bench
    if workload == "chain":
        return grad_bench(lambda x: chain(tnp, x), _t(d["chain_x"]))
    if workload == "mlp_grad":
        X, Y = _t(d["X"]), _t(d["Y"])
        return params_grad_bench(lambda p: mlp_loss(tnp, p, X, Y, shift),
                                 [_t(a) for a in mlp_params(d)], PARAM_NAMES)
    if workload == "rosen_hvp":
        return hvp_bench(lambda x: rosen(tnp, x), _t(d["rosen_x"]), _t(d["rosen_v"]))
    if workload == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = [_t(a) for a in mlp_params(d)]
        X, Y = _t(d["X"]), _t(d["Y"])
        return hvp_bench(lambda W1: mlp_loss(tnp, (W1, b1, W2, b2, W3, b3), X, Y, shift),
                         _t(d["W1"]), _t(d["V1"]))
    if workload == "lstm_grad":
        X, T = _t(d["lstm_X"]), _t(d["lstm_T"])
        return params_grad_bench(lambda p: lstm_loss(tnp, p, X, T, shift),
                                 [_t(a) for a in lstm_params(d)], LSTM_NAMES)
    if workload in ("gp_grad", "gp_hvp"):
        D, y, I = _t(d["gp_D"]), _t(d["gp_y"]), _t(d["gp_I"])

        def f(th):
            return gp_nlml(tnp, tsla, th, D, y, I)
        if workload == "gp_grad":
            return grad_bench(f, _t(d["gp_theta"]))
        return hvp_bench(f, _t(d["gp_theta"]), _t(d["gp_v"]))
    if workload == "tv_grad":
        fimg = _t(d["tv_f"])
        return grad_bench(lambda x: tv_loss(tnp, x, fimg), _t(d["tv_x"]))
    raise NotImplementedError(workload)
