"""The floor: the plain NumPy forward of every workload (no derivative)."""

import numpy as np
import scipy.linalg as sl

from common import (Bench, chain, gp_nlml, lstm_loss, lstm_params, mlp_loss, mlp_params,
                    rosen, tv_loss)


def setup(threads):
    pass


def version():
    return np.__version__


def threads():
    return None


def build(workload, d, cfg):
    if workload == "chain":
        x = d["chain_x"]
        return Bench(lambda: chain(np, x), lambda r: {"value": r}, "forward")
    if workload in ("mlp_grad", "mlp_hvp"):
        p, X, Y = mlp_params(d), d["X"], d["Y"]
        return Bench(lambda: mlp_loss(np, p, X, Y, cfg["shift"]),
                     lambda r: {"value": r}, "forward")
    if workload == "rosen_hvp":
        x = d["rosen_x"]
        return Bench(lambda: rosen(np, x), lambda r: {"value": r}, "forward")
    if workload == "lstm_grad":
        p, X, T = lstm_params(d), d["lstm_X"], d["lstm_T"]
        return Bench(lambda: lstm_loss(np, p, X, T, cfg["shift"]),
                     lambda r: {"value": r}, "forward")
    if workload in ("gp_grad", "gp_hvp"):
        args = d["gp_theta"], d["gp_D"], d["gp_y"], d["gp_I"]
        return Bench(lambda: gp_nlml(np, sl, *args), lambda r: {"value": r}, "forward")
    if workload == "tv_grad":
        x, f = d["tv_x"], d["tv_f"]
        return Bench(lambda: tv_loss(np, x, f), lambda r: {"value": r}, "forward")
    raise NotImplementedError(workload)
