"""``chainrules.primitive``: a user function made into one operation of the
registry, so that calls on traced values go to its registered rule instead
of tracing through its body."""

from __future__ import annotations

from typing import Callable, Generic, ParamSpec, TypeVar

from .tracing import dispatch, top_tape

P = ParamSpec("P")
R = TypeVar("R")


class Primitive(Generic[P, R]):
    """A user function made into one operation of the registry: called as
    the function (the same parameters; on traced values the result is the
    registered rule's, a traced value standing for ``R``)."""

    _chainrules_primitive = True

    def __init__(self, fn: Callable[P, R]) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "primitive")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", None)  # type: ignore[assignment]
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if top_tape(args, kwargs) is None:
            return self.fn(*args, **kwargs)
        return dispatch(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<primitive {self.__qualname__}>"


def primitive(fn: Callable[P, R]) -> Primitive[P, R]:
    """Make ``fn`` one operation: calls on traced values go to its registered
    rule (register one with ``chainrules.rrule(fn)``) instead of tracing
    through its body. Usable as a decorator.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> f = cr.primitive(lambda x: np.sqrt(x))
    >>> _ = cr.scalar_rule(f, lambda x, y: 0.5 / y)
    >>> cr.grad(lambda x: np.sum(f(x)))(np.array([4.0]))
    array([0.25])
    """
    if isinstance(fn, Primitive):
        return fn
    return Primitive(fn)
