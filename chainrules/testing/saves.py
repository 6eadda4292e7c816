"""``check_saves``: a ``scalar_rule``'s ``saves=`` declaration against what
its partials read.

A rule made by ``chainrules.scalar_rule`` keeps only the values its
``saves=`` names (the input and output of a unary rule, ``x``/``y``; the
inputs and output of a binary one, ``x``/``y``/``z``) and holds a
``NotKept`` stand-in for the others, whose every use raises ``RuleError``.
The check evaluates each partial at sample arguments:

* with the values the rule does not keep replaced by their stand-ins: a
  partial that reads one makes the declaration *insufficient* (the first
  derivative would fail);
* with each kept value replaced in turn: a value that no partial reads is
  kept for nothing (*wider* than needed: memory held for every call).

The check reads values, never bytecode, so it answers alike on every Python.
A partial that raises anything else (an order argument with no derivative)
is skipped for that call.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from chainrules.derived_common import NotKept
from chainrules.errors import RuleError
from chainrules.registry import DISPATCHERS, lookup, op_name
from chainrules.tracing import untraced

from .report import CheckFailure, CheckReport

__all__ = ["check_saves", "derived_ops", "derived_spec", "reads"]

_UNARY = ("x", "y")
_BINARY = ("x", "y", "z")


def derived_spec(op, *args):
    """The ``scalar_rule`` definition registered for ``op`` at these
    argument types, or None (a rule written another way)."""
    maker = lookup(op, tuple(type(untraced(a)) for a in args))
    return getattr(maker, "spec", None)


def _partials(spec):
    if hasattr(spec, "dx"):
        fns = (("dx", spec.dx), ("dy", spec.dy), ("dxx", spec.dxx), ("dxy", spec.dxy),
               ("dyy", spec.dyy))
    else:
        fns = (("d", spec.d), ("second", spec.d2), ("second_ratio", spec.ratio))
    return [(n, f) for n, f in fns if callable(f)]


def reads(op, *args, **kwargs):
    """``(kept, read)``: the values a ``scalar_rule`` of ``op`` keeps, and
    those its partials read at these arguments (each a frozenset of role
    names)."""
    spec = derived_spec(op, *args)
    if spec is None:
        raise TypeError(f"{op_name(op)} at these argument types was not registered with "
                        "chainrules.scalar_rule")
    plain = [np.asarray(untraced(a)) for a in args]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = op(*plain, **kwargs)
    values = dict(zip(_BINARY if len(plain) == 2 else _UNARY, (*plain, out)))
    name = op_name(op)

    def reads_role(role):
        trial = [NotKept(name, r) if r == role else v for r, v in values.items()]
        for _, f in _partials(spec):
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if isinstance(f(*trial), NotKept):  # returned as it is: y for exp
                        return True
            except RuleError:
                return True
            except Exception:  # a partial that raises by design (no derivative)
                continue
        return False

    return spec.saves, frozenset(r for r in values if reads_role(r))


def check_saves(op: Callable[..., Any], *args: Any, **kwargs: Any) -> CheckReport:
    """Check that the ``scalar_rule`` registered for ``op`` keeps exactly the
    values its partials read at ``args``: raises ``CheckFailure`` when a
    partial reads a value the rule does not keep (its derivative would raise
    ``RuleError``) or when the rule keeps a value no partial reads.

    >>> import numpy as np
    >>> from chainrules.testing import check_saves
    >>> bool(check_saves(np.tanh, np.array([0.5, -1.0])))
    True
    """
    kept, read = reads(op, *args, **kwargs)
    name = op_name(op)
    if read - kept:
        raise CheckFailure(
            f"{name}: a partial reads {sorted(read - kept)}, which saves= does not keep "
            f"(it keeps {sorted(kept)}); its derivative raises RuleError")
    if kept - read:
        raise CheckFailure(
            f"{name}: saves= keeps {sorted(kept - read)}, which no partial reads at these "
            "arguments: memory held by every call for nothing")
    return CheckReport(name, ["saves"], checks=len(kept) + 1)


def derived_ops():
    """Every (op, argument types) whose rule was made by ``scalar_rule``
    with one or two arguments."""
    out = []
    for op, d in DISPATCHERS.items():
        for types, maker in d.funcs.items():
            if getattr(maker, "spec", None) is not None:
                out.append((op, types))
    return out
