"""The floor: the plain NumPy forward of every workload (no derivative)."""

import numpy as np

from common import Bench, chain, mlp_loss, mlp_params, rosen


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
    raise NotImplementedError(workload)
