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


class _Steady:
    """``jitted`` whose plan, at the first call, runs every stage of its
    passes and compiles its code at once (``plan.compile()``): the timed
    calls replay the plan as it runs from then on, as ``jax.jit``'s and
    ``torch.compile``'s are timed after their compile (the calls before,
    each a stage or a segment's compile, are ``first_call.py``'s)."""

    def __init__(self, jitted):
        self.jitted = jitted
        self.ready = False

    def __call__(self, *args):
        out = self.jitted(*args)
        if not self.ready:
            plan = self.jitted.plan(*args)
            if plan is not None:
                plan.compile()
            self.ready = True
        return out


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
                                lambda f: _Steady(cr.jit(cr.value_and_grad(f))),
                                lambda f: _Steady(cr.jit(lambda x, v: cr.hvp(f, x, v))),
                                "hvp (staged plan of the forward-over-reverse sweep)",
                                sla=crsl)
    return functional_bench(workload, d, cfg, np, cr.value_and_grad,
                            lambda f: (lambda x, v: cr.hvp(f, x, v)),
                            "hvp (forward-over-reverse sweep)", sla=crsl)
