"""The second order of closure rules (``chainrules.rrule``): forward mode
over the rule's own pullback.

A closure rule's pullback is written with NumPy calls, so it can be
differentiated again. For an HVP the reverse sweep with tangents asks each
rule for its cotangent and the tangent of that cotangent; a closure rule
answers by running its closure again on the primal arguments it kept (the
traced ones made forward-traced along their tangents) and pulling back the
cotangent ``g`` along ``gd``: one ``jvp`` of ``(x, g) -> pullback_x(g)``.
The user's function is not traced again, only the one operation.
"""

from . import registry
from .api import jvp
from .arrays import zeros_like_value
from .tangents import ZERO, Structural

__all__ = ["closure_second_order"]


def _slots(ids):
    """``(k, j)`` of each traced input in ``inputs()`` order: argument ``k``,
    element ``j`` of a sequence argument (None for a plain argument)."""
    out = []
    for k, i in enumerate(ids):
        if type(i) is tuple:
            out.extend((k, j) for j, n in enumerate(i) if n is not None)
        elif i is not None:
            out.append((k, None))
    return out


def _structural(t):
    return t is None or isinstance(t, Structural)


def closure_second_order(rule, g, gd, tangents):
    inputs = rule.inputs()
    if _structural(g):
        # no first-order cotangent: the pullback is linear in it, so the
        # tangent of the cotangent is the pullback of gd
        if _structural(gd):
            return []
        return [(nid, ZERO, c) for nid, c in rule.pullback(gd)]
    slots = _slots(rule.ids)
    args = rule.args
    primals = [args[k] if j is None else args[k][j] for k, j in slots]
    tans = [zeros_like_value(p) if _structural(t) else t for p, t in zip(primals, tangents)]
    gd = zeros_like_value(g) if _structural(gd) else gd

    def pulled_back(*xs_and_g):
        *xs, cot = xs_and_g
        full = [list(a) if isinstance(a, (list, tuple)) else a for a in args]
        for (k, j), x in zip(slots, xs):
            if j is None:
                full[k] = x
            else:
                full[k][j] = x
        # each sequence argument back in its own container (a namedtuple by
        # its fields)
        full = [(type(a)(*f) if hasattr(a, "_fields") else type(a)(f))
                if isinstance(a, tuple) else f for a, f in zip(args, full)]
        _, pb = rule.fn(*full, **rule.kwargs)
        cots = dict(enumerate(c for _, c in rule.pairs(pb(cot))))
        return tuple(zeros_like_value(p) if _structural(cots.get(n)) else cots[n]
                     for n, p in enumerate(primals))

    c, cd = jvp(pulled_back, tuple(primals) + (g,), tuple(tans) + (gd,))
    return [(nid, ci, cdi) for nid, ci, cdi in zip(inputs, c, cd)]


registry.CLOSURE_SECOND_ORDER = closure_second_order