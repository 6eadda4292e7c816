"""HIPS autograd (autograd.numpy)."""

import autograd
import autograd.numpy as anp

from common import PARAM_NAMES, Bench, chain, mlp_loss, mlp_params, rosen


def setup(threads):
    pass


def version():
    from importlib.metadata import version as v
    return v("autograd")


def threads():
    return None


def build(workload, d, cfg):
    shift = cfg["shift"]
    if workload == "chain":
        x = d["chain_x"]
        vg = autograd.value_and_grad(lambda x: chain(anp, x))
        return Bench(lambda: vg(x), lambda r: {"value": r[0], "grad": r[1]},
                     "value_and_grad")
    if workload == "mlp_grad":
        p, X, Y = mlp_params(d), d["X"], d["Y"]
        vg = autograd.value_and_grad(lambda p, X, Y: mlp_loss(anp, p, X, Y, shift))

        def outputs(r):
            return {"value": r[0], **dict(zip(PARAM_NAMES, r[1]))}
        return Bench(lambda: vg(p, X, Y), outputs, "value_and_grad")
    if workload == "rosen_hvp":
        x, v = d["rosen_x"], d["rosen_v"]
        hvp = autograd.hessian_vector_product(lambda x: rosen(anp, x))
        return Bench(lambda: hvp(x, v), lambda r: {"hvp": r},
                     "hessian_vector_product (reverse-over-reverse)")
    if workload == "mlp_hvp":
        _, b1, W2, b2, W3, b3 = mlp_params(d)
        W1, V1, X, Y = d["W1"], d["V1"], d["X"], d["Y"]
        hvp = autograd.hessian_vector_product(
            lambda W1: mlp_loss(anp, (W1, b1, W2, b2, W3, b3), X, Y, shift))
        return Bench(lambda: hvp(W1, V1), lambda r: {"hvp": r},
                     "hessian_vector_product (reverse-over-reverse)")
    raise NotImplementedError(workload)

