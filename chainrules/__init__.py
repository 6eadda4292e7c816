"""chainrules: automatic differentiation of plain NumPy code, made of rules.

>>> import numpy as np, chainrules as cr
>>> cr.grad(lambda x: np.sum(np.sin(x) ** 2))(np.zeros(3))
array([0., 0., 0.])
"""

from .api import grad, grad_and_hvp, hvp, jvp, stop_gradient, value_and_grad, vjp
from .derived import bilinear_rule, linear_rule, scalar_rule, unbroadcast
from .errors import (AutodiffError, ComplexOutputError, DomainError, EscapedTracerError,
                     GraphFreedError, HvpNotSupported, MissingRuleError,
                     NonDifferentiableInputError,
                     NonScalarOutputError, NumericalInstabilityError, RuleError,
                     StagingError, StagingWarning, TangentShapeError, TruthValueError,
                     UntraceableError)
from .graph import Gradients, MultiOutput, Tape
from .registry import non_differentiable, register, rrule
from .rule import NodeId, ReverseRule
from .tangents import NoTangent, ZeroTangent
from .primitives import primitive
from .tracing import Traced
from .jacobians import hessian, jacobian
from .linearization import hessian_operator, hessp, linearize, linearize_grad
from .checkpoint import checkpoint, checkpoint_sequential
from .anomaly import detect_anomaly, is_anomaly_enabled, set_anomaly_mode
from .fused_sweeps import fusion
from .jit import jit
from . import transpose as _transpose  # noqa: E402,F401  (installs the engine's hook)
from . import twin_hints as _twin_hints  # noqa: E402,F401  (installs the guards' hook)
from . import second_order as _second_order  # noqa: E402,F401  (second order by replay)

from . import pytree  # noqa: E402
from . import numpy  # noqa: E402,F401  (chainrules.numpy.array, index_update, index_add)
from . import writes as _writes  # noqa: E402,F401  (installs writes into traced arrays)
from . import writes_buffers as _writes_buffers  # noqa: E402,F401  (ufunc.at, np.put...)
from . import writes_views as _writes_views  # noqa: E402,F401  (reshape, ravel... views)
# the NumPy rule library, imported for its registrations (its source is rules/
# at the top of the repository, mapped to chainrules.rules by pyproject.toml:
# a type checker of the source tree finds it only in an installed package)
from . import rules  # type: ignore[attr-defined, import-not-found, unused-ignore]  # noqa: E402,F401
from .registry import mark_builtins as _mark_builtins  # noqa: E402

_mark_builtins()

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "hvp", "grad_and_hvp", "stop_gradient",
    "scalar_rule", "linear_rule", "bilinear_rule", "unbroadcast",
    "register", "rrule", "non_differentiable", "primitive",
    "ReverseRule", "NodeId", "Tape", "Gradients", "MultiOutput", "Traced",
    "ZeroTangent", "NoTangent",
    "AutodiffError", "MissingRuleError", "HvpNotSupported", "NonScalarOutputError",
    "TangentShapeError", "NumericalInstabilityError", "UntraceableError",
    "EscapedTracerError", "GraphFreedError", "NonDifferentiableInputError",
    "ComplexOutputError", "DomainError", "TruthValueError", "RuleError",
    "jacobian", "hessian", "linearize", "linearize_grad", "hessian_operator", "hessp",
    "checkpoint", "checkpoint_sequential",
    "detect_anomaly", "set_anomaly_mode", "is_anomaly_enabled", "fusion",
    "jit", "StagingError", "StagingWarning",
]

#: submodules that are part of the public surface (``chainrules.numpy.array``,
#: ``chainrules.pytree``); ``chainrules.scipy`` and ``chainrules.testing`` are
#: imported on demand. Internal modules (graph, tracing, registry, ...) stay
#: importable by their full path but are not listed by ``dir(chainrules)``.
_PUBLIC_MODULES = ["numpy", "pytree", "scipy", "testing"]


def __dir__():
    return sorted(__all__ + _PUBLIC_MODULES + ["__version__"])


def __getattr__(name):
    # chainrules.scipy and chainrules.testing on first use (they import SciPy,
    # Hypothesis)
    if name in ("scipy", "testing"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
