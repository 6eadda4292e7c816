"""NumPy's floating-point warnings at the user's line.

NumPy attributes a ``RuntimeWarning`` such as "divide by zero encountered
in log" to the Python frame that called the ufunc. Under a transformation
that frame is a rule inside chainrules, so the warning would name a library
line (``chainrules/derived.py``) instead of the user's ``np.log(x)``.
``at_user_line`` wraps the transformations' entry points: while one runs,
the floating-point categories the user has set to ``"warn"`` are switched
to NumPy's ``"log"`` mode, whose message (it names the ufunc) is re-issued
with ``warnings.warn`` at the first frame outside chainrules, NumPy and
SciPy. The user's warning filters apply as before; categories set to
``"ignore"``, ``"raise"``, ``"print"``, ``"call"`` or ``"log"`` are left
alone, and so is everything when the user has an error callback of their
own. ``np.errstate`` is context-local, so threads and tasks do not see
each other's settings.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable, ParamSpec, TypeVar

import numpy as np

from .user_code import user_stacklevel

__all__ = ["at_user_line", "eager_on_warning", "WarningMet"]

P = ParamSpec("P")
R = TypeVar("R")


class _AtUserLine:
    """The ``np.errstate(call=...)`` writer: re-issues each message."""

    __slots__ = ()

    def write(self, message):
        text = message.strip()
        if text.startswith("Warning: "):
            text = text[len("Warning: "):]
        warnings.warn(text, RuntimeWarning, stacklevel=user_stacklevel())


_WRITER = _AtUserLine()


def _switched_modes(mode, callback):
    """The ``np.errstate`` keywords that switch each category set to warn to
    ``mode`` with ``callback``, or ``None`` when nothing is to be switched
    (redirected already by an enclosing call, no category set to warn, or a
    callback of the user's own in place)."""
    if np.geterrcall() is not None:
        return None
    modes = {k: mode for k, v in np.geterr().items() if v == "warn"}
    if not modes:
        return None
    modes["call"] = callback
    return modes


def redirected_modes():
    """The ``np.errstate`` keywords of ``at_user_line`` for the current
    settings (NumPy's ``"log"`` mode, re-issued at the user's line), or
    ``None``."""
    return _switched_modes("log", _WRITER)


# NumPy (2.0 on) keeps its floating-point settings in a context variable
# holding an immutable capsule; ``np.errstate`` sets a new capsule. Setting
# the redirected capsule directly, remembered for the last settings seen,
# costs a context-variable set instead of building the settings each call.
# Without that variable the public ``np.errstate`` does the same.
try:
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar as _SETTINGS)
except ImportError:  # pragma: no cover - a NumPy without it
    _SETTINGS = None

class _Switch:
    """Switches NumPy's settings to a redirected form (``modes()``: the
    ``np.errstate`` keywords for the current settings, or ``None`` to leave
    them), remembering the form for the last settings seen: the usual call
    costs a context-variable set."""

    __slots__ = ("modes", "last")

    def __init__(self, modes):
        self.modes = modes
        self.last = (None, None)  # (the settings seen, their redirected form or None)

    def token(self):
        """Switch to the redirected settings; the token to reset them with,
        or ``None`` when nothing is switched."""
        current = _SETTINGS.get()
        seen, redirected = self.last
        if current is redirected and current is not None:  # a transformation inside another
            return None
        if current is not seen:
            modes = self.modes()
            redirected = None
            if modes is not None:
                with np.errstate(**modes):
                    redirected = _SETTINGS.get()
            self.last = (current, redirected)  # one assignment: safe across threads
        if redirected is None:
            return None
        return _SETTINGS.set(redirected)

    def wrap(self, fn):
        """``fn`` run under the redirected settings."""
        if _SETTINGS is None:  # pragma: no cover - a NumPy without the variable
            modes_of = self.modes

            @functools.wraps(fn)
            def errstate_wrapper(*args, **kwargs):
                modes = modes_of()
                if modes is None:
                    return fn(*args, **kwargs)
                with np.errstate(**modes):
                    return fn(*args, **kwargs)
            return errstate_wrapper

        get, set_, reset = _SETTINGS.get, _SETTINGS.set, _SETTINGS.reset
        switch = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            seen, redirected = switch.last
            if get() is seen and redirected is not None:
                token = set_(redirected)  # the usual call: the settings met last time
            else:
                token = switch.token()
                if token is None:
                    return fn(*args, **kwargs)
            try:
                return fn(*args, **kwargs)
            finally:
                reset(token)

        return wrapper


_AT_USER_LINE = _Switch(redirected_modes)


def at_user_line(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with NumPy's floating-point warnings re-issued at the
    user's line (see the module docstring)."""
    return _AT_USER_LINE.wrap(fn)


class WarningMet(Exception):
    """A staged replay met a floating-point warning that the user's
    settings show (``eager_on_warning``)."""


def _abandon(kind, flag):
    raise WarningMet(kind)


def _abandoning_modes():
    return _switched_modes("call", _abandon)


_ABANDON = _Switch(_abandoning_modes)


def eager_on_warning(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` (a staged replay) so that the first floating-point warning
    the user's settings would show raises ``WarningMet`` instead: the caller
    then runs the function eagerly, which warns as an eager call does, at
    the line of the operation, with the same results (a replay computes
    eager's values). Categories set to anything but ``"warn"``, and
    settings with an error callback (the user's, or an enclosing
    transformation's redirection) are left alone."""
    return _ABANDON.wrap(fn)
