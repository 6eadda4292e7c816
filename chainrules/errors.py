"""Typed errors. Every failure the package reports is an ``AutodiffError``.

Each message names the operation, the argument types involved and the way
out, so that a user can act on it without reading the engine's source.
"""


class AutodiffError(Exception):
    """Base class of every error raised by chainrules."""


class MissingRuleError(AutodiffError, NotImplementedError):
    """No rule is registered for an operation and these argument types."""


class HvpNotSupported(AutodiffError, NotImplementedError):
    """A rule cannot carry tangents through its pullback."""


class NonScalarOutputError(AutodiffError, ValueError):
    """``grad`` was asked for the gradient of a non-scalar output."""


class TangentShapeError(AutodiffError, ValueError):
    """A rule returned a tangent whose shape or dtype does not fit its primal."""


class NumericalInstabilityError(AutodiffError, FloatingPointError):
    """A NaN or Inf appeared in a value or cotangent (anomaly detection)."""


class UntraceableError(AutodiffError, TypeError):
    """A traced value was used in a way that would drop its derivative.

    Converting to a plain array or Python number, in-place writes and
    ``out=`` arguments all raise this instead of silently cutting the graph.
    """


class EscapedTracerError(UntraceableError):
    """A traced value outlived the differentiation that created it."""


class DomainError(AutodiffError, ValueError):
    """The derivative asked for does not exist at this input (for example the
    exponent of a power with a negative real base)."""


class NonDifferentiableInputError(AutodiffError, TypeError):
    """An integer or boolean value was passed where a derivative is wanted."""


class ComplexOutputError(AutodiffError, TypeError):
    """``grad`` was asked for the gradient of a complex output."""


class GraphFreedError(AutodiffError, RuntimeError):
    """A recording was used after its saved values were freed: after
    ``free()``, or after a sweep that did not retain the graph."""


class TruthValueError(AutodiffError, ValueError):
    """``bool()`` of a traced array with more than one element (ambiguous, as
    for NumPy arrays)."""
