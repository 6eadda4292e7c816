"""chainrules: plain NumPy code, differentiated by tracing."""

import numpy as np

import chainrules as cr
from common import PARAM_NAMES, Bench, chain, mlp_loss, mlp_params, rosen


def setup(threads):
    pass


def version():
    return cr.__version__


def threads():
    return None


def build(workload, d, cfg):
    shift = cfg["shift"]
    if workload == "chain":
        x = d["chain_x"]
        vg = cr.value_and_grad(lambda x: chain(np, x))
        return Bench(lambda: vg(x), lambda r: {"value": r[0], "grad": r[1]},
                     "value_and_grad")
    if workload == "mlp_grad":
        p, X, Y = mlp_params(d), d["X"], d["Y"]
        vg = cr.value_and_grad(lambda p, X, Y: mlp_loss(np, p, X, Y, shift))

        def outputs(r):
            return {"value": r[0], **dict(zip(PARAM_NAMES, r[1]))}
        return Bench(lambda: vg(p, X, Y), outputs, "value_and_grad")
    if workload == "rosen_hvp":
        x, v = d["rosen_x"], d["rosen_v"]
        f = lambda x: rosen(np, x)  # noqa: E731
        return Bench(lambda: cr.hvp(f, x, v), lambda r: {"hvp": r},
                     "hvp (forward-over-reverse sweep)")
    if workload == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = mlp_params(d)
        W1, V1, X, Y = d["W1"], d["V1"], d["X"], d["Y"]
        f = lambda W1: mlp_loss(np, (W1, b1, W2, b2, W3, b3), X, Y, shift)  # noqa: E731
        return Bench(lambda: cr.hvp(f, W1, V1), lambda r: {"hvp": r},
                     "hvp (forward-over-reverse sweep)")
    raise NotImplementedError(workload)
