"""chainrules: plain NumPy code, differentiated by tracing."""

import numpy as np

import chainrules as cr
import chainrules.scipy.linalg as crsl
from common import functional_bench


def setup(threads):
    pass


def version():
    return cr.__version__


def threads():
    return None


def build(workload, d, cfg):
    return functional_bench(workload, d, cfg, np, cr.value_and_grad,
                            lambda f: (lambda x, v: cr.hvp(f, x, v)),
                            "hvp (forward-over-reverse sweep)", sla=crsl)
