"""Typed errors. Every failure the package reports is an ``AutodiffError``.

Each message names the operation, the argument types involved and the way
out, so that a user can act on it without reading the engine's source.
"""


class AutodiffError(Exception):
    """Base class of every error raised by chainrules.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda x: x)(np.ones(2))
    ... except cr.AutodiffError as e:
    ...     print(isinstance(e, cr.NonScalarOutputError))
    True
    """


class MissingRuleError(AutodiffError, NotImplementedError):
    """No rule is registered for an operation and these argument types.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(cr.primitive(lambda x: x))(1.0)
    ... except cr.MissingRuleError as e:
    ...     print(type(e).__name__)
    MissingRuleError
    """


class HvpNotSupported(AutodiffError, NotImplementedError):
    """A rule cannot carry tangents through its pullback.

    Examples
    --------
    >>> import chainrules as cr
    >>> issubclass(cr.HvpNotSupported, cr.AutodiffError)
    True
    """


class NonScalarOutputError(AutodiffError, ValueError):
    """``grad`` was asked for the gradient of a non-scalar output.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(np.sin)(np.ones(2))
    ... except cr.NonScalarOutputError as e:
    ...     print(type(e).__name__)
    NonScalarOutputError
    """


class TangentShapeError(AutodiffError, ValueError):
    """A rule returned a tangent whose shape or dtype does not fit its primal.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.jvp(np.sin, (np.ones(2),), (np.ones(3),))
    ... except cr.TangentShapeError as e:
    ...     print(type(e).__name__)
    TangentShapeError
    """


class NumericalInstabilityError(AutodiffError, FloatingPointError):
    """A NaN or Inf appeared in a value or cotangent (anomaly detection).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     with cr.detect_anomaly():
    ...         cr.grad(lambda x: np.sum(np.sqrt(x)))(np.zeros(1))
    ... except cr.NumericalInstabilityError as e:
    ...     print(type(e).__name__)
    NumericalInstabilityError
    """


class UntraceableError(AutodiffError, TypeError):
    """A traced value was used in a way that would drop its derivative.

    Converting to a plain array or Python number, in-place writes and
    ``out=`` arguments all raise this instead of silently cutting the graph.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda x: float(np.asarray(x).sum()))(np.ones(2))
    ... except cr.UntraceableError as e:
    ...     print(type(e).__name__)
    UntraceableError
    """


class EscapedTracerError(UntraceableError):
    """A traced value outlived the differentiation that created it.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> leaked = []
    >>> _ = cr.grad(lambda x: leaked.append(x * 1) or np.sum(x))(np.ones(2))
    >>> try:
    ...     np.sin(leaked[0])
    ... except cr.EscapedTracerError as e:
    ...     print(type(e).__name__)
    EscapedTracerError
    """


class DomainError(AutodiffError, ValueError):
    """The derivative asked for does not exist at this input (for example the
    exponent of a power with a negative real base).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda a: np.linalg.det(a))(np.zeros((2, 2)))
    ... except cr.DomainError as e:
    ...     print(type(e).__name__)
    DomainError
    """


class NonDifferentiableInputError(AutodiffError, TypeError):
    """An integer or boolean value was passed where a derivative is wanted,
    or an array chainrules cannot compute with faithfully met a traced value:
    an ndarray subclass with semantics of its own (``np.matrix``, masked
    arrays, user subclasses; ``np.memmap`` is computed with as the ndarray it
    is).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda n: n * 2.0)(3)
    ... except cr.NonDifferentiableInputError as e:
    ...     print(type(e).__name__)
    NonDifferentiableInputError
    """


class ComplexOutputError(AutodiffError, TypeError):
    """``grad`` was asked for the gradient of a complex output.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda z: z * 1j)(1.0)
    ... except cr.ComplexOutputError as e:
    ...     print(type(e).__name__)
    ComplexOutputError
    """


class GraphFreedError(AutodiffError, RuntimeError):
    """A recording was used after its saved values were freed: after
    ``free()``, or after a sweep that did not retain the graph.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> H = cr.hessian_operator(lambda x: np.sum(x ** 3), np.ones(2))
    >>> H.free()
    >>> try:
    ...     H.matvec(np.ones(2))
    ... except cr.GraphFreedError as e:
    ...     print(type(e).__name__)
    GraphFreedError
    """


class TruthValueError(AutodiffError, ValueError):
    """``bool()`` of a traced array with more than one element (ambiguous, as
    for NumPy arrays).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> try:
    ...     cr.grad(lambda x: np.sum(x) if x else 0.0)(np.ones(2))
    ... except cr.TruthValueError as e:
    ...     print(type(e).__name__)
    TruthValueError
    """


class RuleError(AutodiffError, TypeError):
    """A rule broke the rule protocol: it returned more or fewer cotangents
    than it has inputs, or a partial of a ``scalar_rule`` read a value that
    its ``saves=`` declaration does not keep. The message names the rule and
    what to change in its definition.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> f = cr.primitive(lambda x: np.tanh(x))
    >>> _ = cr.scalar_rule(f, lambda x, y: 1 - x * x, saves="y")
    >>> try:
    ...     cr.grad(lambda x: np.sum(f(x)))(np.ones(2))
    ... except cr.RuleError as e:
    ...     print(type(e).__name__)
    RuleError
    """


class StagingError(AutodiffError, RuntimeError):
    """``cr.jit(f, strict=True)`` could not stage ``f``: the recording met
    something a plan cannot replay (a conversion to a plain array, a write
    into an argument), its replay differed from an eager call (random draws
    inside ``f``, a global that changed), or its guards kept failing. The
    message says which, and where in the user's code. Without
    ``strict=True`` the function runs eagerly instead, after one
    ``StagingWarning``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> f = cr.jit(lambda x: np.sum(np.asarray(x)), strict=True)
    >>> try:
    ...     f(np.ones(2))
    ... except cr.StagingError as e:
    ...     print(type(e).__name__)
    StagingError
    """


class StagingWarning(UserWarning):
    """``cr.jit`` runs a function eagerly from now on; the message says why.

    Examples
    --------
    >>> import warnings, numpy as np, chainrules as cr
    >>> f = cr.jit(lambda x: np.sum(np.asarray(x)))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     _ = f(np.ones(2))
    >>> seen[0].category.__name__
    'StagingWarning'
    """
