"""HIPS autograd (autograd.numpy)."""

import autograd
import autograd.numpy as anp
import autograd.scipy.linalg as asl

from common import functional_bench


def setup(threads):
    pass


def version():
    from importlib.metadata import version as v
    return v("autograd")


def threads():
    return None


def build(workload, d, cfg):
    return functional_bench(workload, d, cfg, anp, autograd.value_and_grad,
                            autograd.hessian_vector_product,
                            "hessian_vector_product (reverse-over-reverse)", sla=asl)
