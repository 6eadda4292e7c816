"""Rule specs: how to sample valid inputs for each registered rule.

A ``RuleSpec`` names an operation and a sampler ``args(draw, dtype)`` that
returns ``(args, kwargs)`` for one example (``draw`` is Hypothesis's draw
function, so samplers use ``chainrules.testing.strategies``). Positional
arguments of an inexact dtype are differentiated; everything else (ints,
axes, shapes, index tuples, keyword arguments) is held constant.

The built-in specs live in one module per rule family, each exposing
``SPECS = [...]``; ``all_specs()`` collects them, and the registry sweep in
the test suite runs every one through the checkers and fails for any
registered operation that has no spec.
"""

import dataclasses
import importlib
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["RuleSpec", "all_specs", "family_specs", "FAMILIES"]

#: spec modules of the built-in rule families (chainrules.testing.specs.<name>)
FAMILIES = ("arithmetic", "elementwise", "complex", "reductions", "contractions",
            "shape", "indexing", "nondiff", "linalg", "fft", "special", "scipy_linalg",
            "scipy_integrate", "scipy_quad", "scipy_signal", "scipy_stats", "scipy_spatial",
            "composites", "special_elementary", "special_distributions", "special_integrals",
            "special_odes", "special_inverses", "scipy_fft", "scipy_interpolate",
            "scipy_sparse", "scipy_optimize")


@dataclasses.dataclass(frozen=True)
class RuleSpec:
    """How to test one operation.

    op:      the registered operation (np.sin, np.sum, chainrules.tracing.getitem)
    args:    ``args(draw, dtype) -> (args_tuple, kwargs_dict)``
    dtypes:  dtypes to test; complex128 only where NumPy defines the op
    call:    how to apply the op to the arguments (default ``op(*args, **kw)``),
             for operators and methods, e.g. ``lambda x, i: x[i]``
    modes:   subset of {"rrule", "frule", "hvp"}; {"nondiff"} for operations
             that return plain values
    rtol, atol: tolerance overrides (default: from the dtype)
    name:    label in test ids and reports (default: the op's name)
    wrt:     positions of the arguments to differentiate (default: every
             positional argument holding float or complex values); the
             others are held constant, e.g. ``wrt=(1,)`` for ``zeta(s, q)``
    skip:    a reason not to run the checks on this installation (a library
             release whose primal is too coarse for finite differences to
             check a derivative), or None
    """

    op: Any
    args: Callable
    dtypes: tuple = ("float64", "float32")
    call: Optional[Callable] = None
    modes: frozenset = frozenset({"rrule", "frule", "hvp"})
    rtol: Optional[float] = None
    atol: Optional[float] = None
    name: Optional[str] = None
    wrt: Optional[tuple] = None
    skip: Optional[str] = None

    def __post_init__(self):
        # the operation the registry holds (SciPy's array-API mode wraps its
        # ufuncs in Python functions; the rules are the ufuncs')
        from chainrules.rule import dispatch_target

        object.__setattr__(self, "op", dispatch_target(self.op))

    @property
    def label(self):
        if self.name:
            return self.name
        from chainrules.registry import op_name

        return op_name(self.op).replace("numpy.", "np.")

    def function(self):
        """The callable under test: ``f(*args, **kwargs)``."""
        if self.call is not None:
            return self.call
        return self.op

    def np_dtypes(self):
        return tuple(np.dtype(d) for d in self.dtypes)


def family_specs(fam: str) -> list[RuleSpec]:
    """The specs of one built-in family (empty when its module is absent,
    e.g. SciPy families without SciPy)."""
    try:
        mod = importlib.import_module(f"{__name__}.{fam}")
    except ModuleNotFoundError as e:
        if e.name == f"{__name__}.{fam}":
            return []
        raise
    return list(getattr(mod, "SPECS", []))


def all_specs() -> list[RuleSpec]:
    """Every built-in spec, from the family modules that exist."""
    out = []
    for fam in FAMILIES:
        out.extend(family_specs(fam))
    return out
