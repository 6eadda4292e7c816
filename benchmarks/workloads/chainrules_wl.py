"""chainrules: plain NumPy code, differentiated by tracing (``chainrules``) or by
replaying staged plans (``chainrules.jit``)."""

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


def build(workload, d, cfg, jit=False, kernels=True):
    if jit:
        from chainrules import kernels as compiled
        # (this process's main thread: the mode holds for every call timed)
        compiled.set_mode(kernels)
        # steady state: a hot region is compiled at its first replay (the
        # tiering's own costs are benchmarks/kernels.py's table); the timed
        # probes still drop a kernel slower than the NumPy program
        compiled.COMPILE_SECONDS = compiled.CACHED_SECONDS = compiled.INIT_SECONDS = 0.0
    if jit:  # staged plans: recorded in the warm-up calls, then replayed
        return functional_bench(workload, d, cfg, np,
                                lambda f: cr.jit(cr.value_and_grad(f)),
                                lambda f: cr.jit(lambda x, v: cr.hvp(f, x, v)),
                                "hvp (staged plan of the forward-over-reverse sweep)",
                                sla=crsl)
    return functional_bench(workload, d, cfg, np, cr.value_and_grad,
                            lambda f: (lambda x, v: cr.hvp(f, x, v)),
                            "hvp (forward-over-reverse sweep)", sla=crsl)
