"""Anomaly detection: stop at the first NaN or Inf, naming the operation and
the line of user code that recorded it.

Usage::

    with chainrules.detect_anomaly():
        g = chainrules.grad(loss)(w)

or ``chainrules.set_anomaly_mode(True)`` to leave it on while debugging.
While the mode is on, every tape created records, for each node, the first
stack frame outside chainrules (and outside NumPy/SciPy internals): the
line of user code where the operation was called. Then

* every forward output (and every input to differentiation) is checked for
  NaN/Inf when it is recorded;
* every cotangent a pullback returns is checked in ``Tape.backward`` and
  ``Tape.backward_with_tangents`` (also the tangents of cotangents).

A failing check raises ``NumericalInstabilityError`` naming the operation,
the shapes of its traced arguments and the user's source line. The mode is
off by default and costs nothing then: tapes created while it is off keep
``sources = None`` and the engine's loops see no extra work. Forward-mode
tangents (``jvp``, forward ``jacobian``, the tangents of an HVP) are checked
too, in ``Tape.forward``.

The mode is a context variable: it holds for the current thread (and
asyncio task) only, so one thread debugging inside ``detect_anomaly()``
leaves every other thread's differentiation alone. Blocks nest: leaving one
restores the setting it found. A new thread starts with the mode off. It
costs one stack walk and one ``isfinite`` pass per operation while it is on.
"""

from __future__ import annotations

import contextlib
import contextvars
import linecache
import sys
from types import FrameType
from typing import Iterator

import numpy as np

from .errors import NumericalInstabilityError
from .tracing import untraced
from .user_code import is_internal

__all__ = ["detect_anomaly", "set_anomaly_mode", "is_anomaly_enabled", "user_frame"]

#: the anomaly mode of the current context (thread / asyncio task)
anomaly_mode = contextvars.ContextVar("chainrules_anomaly_mode", default=False)


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on in the current thread or task.

    Examples
    --------
    >>> import chainrules as cr
    >>> with cr.detect_anomaly():
    ...     cr.is_anomaly_enabled()
    True
    """
    return anomaly_mode.get()


def set_anomaly_mode(enabled: bool) -> bool:
    """Turn anomaly detection on or off for the current thread or task;
    returns the previous setting.

    Only tapes created while the mode is on are checked (a ``grad`` call
    creates its tape when it starts).

    Examples
    --------
    >>> import chainrules as cr
    >>> previous = cr.set_anomaly_mode(True)
    >>> cr.is_anomaly_enabled()
    True
    >>> _ = cr.set_anomaly_mode(previous)
    """
    prev = anomaly_mode.get()
    anomaly_mode.set(bool(enabled))
    return prev


@contextlib.contextmanager
def detect_anomaly(enabled: bool = True) -> Iterator[None]:
    """Context manager: check every value and cotangent for NaN/Inf.

    >>> import numpy as np, chainrules as cr
    >>> with cr.detect_anomaly():
    ...     cr.grad(lambda x: np.sum(np.log(x)))(np.zeros(2))   # doctest: +SKIP
    Traceback (most recent call last):
    NumericalInstabilityError: numpy.log produced -inf in its output ...
    """
    token = anomaly_mode.set(bool(enabled))
    try:
        yield
    finally:
        anomaly_mode.reset(token)


# -- where was an operation recorded? -------------------------------------------
class SourceLocation:
    """Where an operation was recorded: file, line and function."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename: str, lineno: int, function: str) -> None:
        self.filename = filename
        self.lineno = lineno
        self.function = function

    @property
    def line(self) -> str:
        """The source text of the line (empty when unavailable)."""
        return linecache.getline(self.filename, self.lineno).strip()

    def __repr__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"

    def describe(self) -> str:
        text = self.line
        where = f'File "{self.filename}", line {self.lineno}, in {self.function}'
        return where + (f"\n    {text}" if text else "")


def user_frame() -> SourceLocation | None:
    """The first stack frame outside chainrules, NumPy and SciPy, as a
    ``SourceLocation`` (``None`` when the whole stack is internal)."""
    try:
        f: FrameType | None = sys._getframe(1)
    except (AttributeError, ValueError):  # no frames to read: no user line to name
        return None
    while f is not None:
        code = f.f_code
        if not is_internal(code):
            return SourceLocation(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None


# -- checks ------------------------------------------------------------------
def _bad(v):
    """'nan', 'inf', '-inf' or None for a value (array, scalar, tuple)."""
    v = untraced(v)
    if v is None:
        return None
    if isinstance(v, (tuple, list)):
        for item in v:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int):
                item = item[1]
            b = _bad(item)
            if b:
                return b
        return None
    dt = getattr(v, "dtype", None)
    if dt is None:
        if not isinstance(v, (float, complex)):
            return None
        v = np.asarray(v)
        dt = v.dtype
    if dt.kind not in "fc":
        return None
    finite = np.isfinite(v)
    if finite.all():
        return None
    bad = np.asarray(v)[~finite]
    if np.isnan(bad).any():
        return "nan"
    if dt.kind == "f" and (bad > 0).any():
        return "inf"
    return "-inf" if dt.kind == "f" else "inf"


def _describe_node(tape, i):
    from .rule import rule_name

    rule = tape.rules[i] if i < len(tape.rules) else None
    if type(rule) is _graph.Select:  # output k of a multi-output node
        k = rule.k
        i = rule.parent
        rule = tape.rules[i]
        name, shapes = _describe_node(tape, i)
        return f"{name} (output {k})", shapes
    name = "an input" if rule is None else rule_name(rule)
    shapes = []
    if rule is not None:
        try:
            shapes = [tape.shapes[j] for j in rule.inputs()]
        except Exception:  # the rule was freed or is malformed
            shapes = []
    return name, shapes


def _where(tape, i):
    rule = tape.rules[i] if i < len(tape.rules) else None
    if type(rule) is _graph.Select:
        i = rule.parent
    src = tape.sources[i] if i < len(tape.sources) else None
    if src is None:
        return "\n(no user source line: the node was created by chainrules itself)"
    return "\nThe operation was recorded at:\n  " + src.describe()


def _shape_str(shape):
    return "several outputs" if not isinstance(shape, tuple) else str(shape)


def on_leaf(tape, value):
    """Called by ``Tape.leaf`` in anomaly mode."""
    tape.sources.append(None)
    b = _bad(value)
    if b:
        raise NumericalInstabilityError(
            f"an input to differentiation (shape {np.shape(untraced(value))}) contains "
            f"{b} (anomaly detection); check the arguments passed to grad/jvp/hvp")


def on_record(tape, rule, value, nid):
    """Called by ``Tape.record`` in anomaly mode, after the node is appended."""
    tape.sources.append(user_frame())
    b = _bad(value)
    if b:
        name, shapes = _describe_node(tape, nid)
        raise NumericalInstabilityError(
            f"{name} produced {b} in its output of shape {np.shape(untraced(value))} "
            f"(traced argument shapes: {', '.join(map(_shape_str, shapes)) or 'none'}) "
            f"(anomaly detection, forward pass)." + _where(tape, nid))


def check_pushforward(tape, i, tangent):
    """Forward-mode check: the tangent that node ``i``'s pushforward returned."""
    b = _bad(tangent)
    if b:
        name, shapes = _describe_node(tape, i)
        raise NumericalInstabilityError(
            f"the pushforward of {name} returned {b} in its tangent of shape "
            f"{_shape_str(tape.shapes[i])} (traced argument shapes: "
            f"{', '.join(map(_shape_str, shapes)) or 'none'}) (anomaly detection, "
            "forward-mode pass)." + _where(tape, i))


def check_pullback(tape, i, g, results):
    """Backward check: ``results`` are the pairs/triples a pullback of node
    ``i`` returned for cotangent ``g``. Raises on the first non-finite value."""
    b = _bad(g)
    if b:  # a bad seed, or finite contributions whose sum overflowed
        name, shapes = _describe_node(tape, i)
        raise NumericalInstabilityError(
            f"the cotangent arriving at the output of {name} contains {b} (a "
            "non-finite seed, or finite contributions whose sum overflowed) "
            "(anomaly detection, backward pass)." + _where(tape, i))
    for item in results:
        for k, c in enumerate(item[1:]):
            b = _bad(c)
            if b:
                name, shapes = _describe_node(tape, i)
                what = "cotangent" if k == 0 else "tangent of the cotangent"
                raise NumericalInstabilityError(
                    f"the pullback of {name} returned {b} in the {what} of an "
                    f"argument of shape {_shape_str(tape.shapes[item[0]])} (traced "
                    f"argument shapes: {', '.join(map(_shape_str, shapes)) or 'none'}; "
                    f"incoming cotangent finite) (anomaly detection, backward pass)."
                    + _where(tape, i))


# the engine reads the mode and calls the checks above through its hooks
from . import graph as _graph  # noqa: E402

_graph.HOOKS.anomaly = sys.modules[__name__]
