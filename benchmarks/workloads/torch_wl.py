"""PyTorch eager, float64, thread count set like NumPy's.

The shared workloads are written against a NumPy-like namespace; ``TorchNS``
maps the handful of names they use onto torch (one Python call each).
HVPs use double backward (reverse-over-reverse), the usual eager idiom.
"""

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


def build(workload, d, cfg):
    shift = cfg["shift"]
    if workload == "chain":
        x0 = _t(d["chain_x"])

        def run():
            x = x0.detach().requires_grad_()
            y = chain(tnp, x)
            (g,) = torch.autograd.grad(y, x)
            return y.detach(), g
        return Bench(run, lambda r: {"value": _np(r[0]), "grad": _np(r[1])},
                     "autograd.grad")
    if workload == "mlp_grad":
        p0 = [_t(a) for a in mlp_params(d)]
        X, Y = _t(d["X"]), _t(d["Y"])

        def run():
            p = [a.detach().requires_grad_() for a in p0]
            y = mlp_loss(tnp, p, X, Y, shift)
            g = torch.autograd.grad(y, p)
            return y.detach(), g

        def outputs(r):
            return {"value": _np(r[0]), **{k: _np(g) for k, g in zip(PARAM_NAMES, r[1])}}
        return Bench(run, outputs, "autograd.grad")
    if workload == "rosen_hvp":
        x0, v = _t(d["rosen_x"]), _t(d["rosen_v"])

        def run():
            x = x0.detach().requires_grad_()
            (g,) = torch.autograd.grad(rosen(tnp, x), x, create_graph=True)
            (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
            return hv
        return Bench(run, lambda r: {"hvp": _np(r)},
                     "double backward (reverse-over-reverse)")
    if workload == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = [_t(a) for a in mlp_params(d)]
        W10, V1, X, Y = _t(d["W1"]), _t(d["V1"]), _t(d["X"]), _t(d["Y"])

        def run():
            W1 = W10.detach().requires_grad_()
            y = mlp_loss(tnp, (W1, b1, W2, b2, W3, b3), X, Y, shift)
            (g,) = torch.autograd.grad(y, W1, create_graph=True)
            (hv,) = torch.autograd.grad(g, W1, grad_outputs=V1)
            return hv
        return Bench(run, lambda r: {"hvp": _np(r)},
                     "double backward (reverse-over-reverse)")
    if workload == "lstm_grad":
        p0 = [_t(a) for a in lstm_params(d)]
        X, T = _t(d["lstm_X"]), _t(d["lstm_T"])

        def run():
            p = [a.detach().requires_grad_() for a in p0]
            y = lstm_loss(tnp, p, X, T, shift)
            g = torch.autograd.grad(y, p)
            return y.detach(), g

        def outputs(r):
            return {"value": _np(r[0]), **{k: _np(g) for k, g in zip(LSTM_NAMES, r[1])}}
        return Bench(run, outputs, "autograd.grad")
    if workload in ("gp_grad", "gp_hvp"):
        th0, v = _t(d["gp_theta"]), _t(d["gp_v"])
        D, y, I = _t(d["gp_D"]), _t(d["gp_y"]), _t(d["gp_I"])
        if workload == "gp_grad":
            def run():
                th = th0.detach().requires_grad_()
                val = gp_nlml(tnp, tsla, th, D, y, I)
                (g,) = torch.autograd.grad(val, th)
                return val.detach(), g
            return Bench(run, lambda r: {"value": _np(r[0]), "grad": _np(r[1])},
                         "autograd.grad")

        def run():
            th = th0.detach().requires_grad_()
            (g,) = torch.autograd.grad(gp_nlml(tnp, tsla, th, D, y, I), th,
                                       create_graph=True)
            (hv,) = torch.autograd.grad(g, th, grad_outputs=v)
            return hv
        return Bench(run, lambda r: {"hvp": _np(r)},
                     "double backward (reverse-over-reverse)")
    if workload == "tv_grad":
        x0, f = _t(d["tv_x"]), _t(d["tv_f"])

        def run():
            x = x0.detach().requires_grad_()
            val = tv_loss(tnp, x, f)
            (g,) = torch.autograd.grad(val, x)
            return val.detach(), g
        return Bench(run, lambda r: {"value": _np(r[0]), "grad": _np(r[1])},
                     "autograd.grad")
    raise NotImplementedError(workload)
