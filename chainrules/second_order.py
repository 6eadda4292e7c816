"""The second order of rules that define no ``pullback_with_tangents``:
forward mode over the rule's own pullback, by *replay*.

A rule's pullback is written with NumPy calls, so it can be differentiated
again. For an HVP the reverse sweep with tangents asks each rule for its
cotangent and the tangent of that cotangent. A rule without a hand-written
``pullback_with_tangents`` (a user's class rule, a ``chainrules.rrule``
closure, a ``scalar_rule`` registered without ``second=``) was recorded
together with the maker that made it and the maker's arguments
(``Tape.keep_replay``). The sweep makes the rule again from those arguments
with the traced ones forward-traced along their tangents, and pulls back the
cotangent ``g`` along ``gd``: one ``jvp`` of ``(x, g) -> pullback_x(g)``.
Only that one operation runs again, never the user's function: its random
numbers, side effects and control flow happen once.

In the replay the rule's inputs are named by labels of their own, one per
traced argument, so that an argument passed twice (``x * x``) keeps a
cotangent of its own. The maker must make the same operation again: its
output is compared with the recorded one, and a maker that draws random
numbers or reads changing state (another output) raises ``HvpNotSupported``
instead of differentiating another function.
"""

import numpy as np

from .api import jvp
from .arrays import zeros_like_value
from .errors import AutodiffError, HvpNotSupported
from .rule import MultiOutput, node_ids, rule_name
from .sweep_common import HOOKS
from .tangents import ZERO, Structural
from .tracing import untraced

__all__ = ["replay"]


def _structural(t):
    return t is None or isinstance(t, Structural)


def _slots(ids):
    """``(k, j)`` of each traced argument: argument ``k``, element ``j`` of a
    sequence argument (None for a plain argument)."""
    out = []
    for k, i in enumerate(ids):
        if type(i) is tuple:
            out.extend((k, j) for j, n in enumerate(i) if n is not None)
        elif i is not None:
            out.append((k, None))
    return out


def _labels(ids):
    """``ids`` with each traced argument renamed ``NodeId(position)``."""
    n = 0
    out = []
    for i in ids:
        if type(i) is tuple:
            sub = []
            for m in i:
                sub.append(None if m is None else node_ids(n))
                n += m is not None
            out.append(tuple(sub))
        else:
            out.append(None if i is None else node_ids(n))
            n += i is not None
    return out


def _with(args, slots, xs):
    """``args`` with the traced arguments at ``slots`` replaced by ``xs``;
    a sequence argument keeps its container (a namedtuple its fields)."""
    full = [list(a) if isinstance(a, (list, tuple)) else a for a in args]
    for (k, j), x in zip(slots, xs):
        if j is None:
            full[k] = x
        else:
            full[k][j] = x
    return [(type(a)(*f) if hasattr(a, "_fields") else type(a)(f))
            if isinstance(a, tuple) else f for a, f in zip(args, full)]


def _cotangent_parts(g, gd):
    """The cotangent (and its tangent) of a rule as differentiable leaves:
    the entries of a multi-output cotangent that are not structural in
    both, a structural entry of ``g`` as zeros; and how to put them back."""
    if type(g) is not tuple and type(gd) is not tuple:
        return [g], [zeros_like_value(g) if _structural(gd) else gd], lambda leaves: leaves[0]
    n = len(g) if type(g) is tuple else len(gd)
    gs = g if type(g) is tuple else (ZERO,) * n
    gds = gd if type(gd) is tuple else (ZERO,) * n
    live = [k for k in range(n) if not (_structural(gs[k]) and _structural(gds[k]))]
    prim = [zeros_like_value(gds[k]) if _structural(gs[k]) else gs[k] for k in live]
    tans = [zeros_like_value(gs[k]) if _structural(gds[k]) else gds[k] for k in live]

    def rebuild(leaves):
        out = [ZERO] * n
        for k, v in zip(live, leaves):
            out[k] = v
        return tuple(out)

    return prim, tans, rebuild


def _values(out):
    """The arrays of a maker's output, untraced (a multi-output's each)."""
    vals = out.values if type(out) is MultiOutput else (out,)
    return [np.asarray(untraced(v)) for v in vals]


def _check_same(rule, recorded, again):
    """The replayed output equals the recorded one (to rounding: the same
    NumPy calls on the same values), else ``HvpNotSupported``."""
    a, b = _values(recorded), _values(again)
    if len(a) != len(b) or not all(
            x.shape == y.shape and np.allclose(x, y, rtol=1e-10, atol=0, equal_nan=True)
            for x, y in zip(a, b)):
        raise HvpNotSupported(
            f"{rule_name(rule)} has no pullback_with_tangents, and its maker gave another "
            "output when made again on the same arguments (random numbers or changing "
            "state in the maker?), so its second order cannot be found by replay; define "
            "pullback_with_tangents(cotangent, cotangent_tangent, tangents), or make the "
            "maker depend on its arguments only")


def replay(entry, g, gd, tangents):
    """``[(NodeId, cotangent, tangent of cotangent), ...]`` of the rule in
    ``entry`` (``(rule, maker, ids, args, kwargs, out)``), given the tangent
    of each traced argument (``tangents``, in argument order)."""
    rule, maker, ids, args, kwargs, recorded = entry
    if _structural(g):
        # no first-order cotangent: the pullback is linear in it, so the
        # tangent of the cotangent is the pullback of gd
        if _structural(gd):
            return []
        return [(nid, ZERO, c) for nid, c in rule.pullback(gd)]
    slots = _slots(ids)
    nids = [ids[k] if j is None else ids[k][j] for k, j in slots]
    primals = [args[k] if j is None else args[k][j] for k, j in slots]
    tans = [zeros_like_value(p) if _structural(t) else t for p, t in zip(primals, tangents)]
    g_leaves, gd_leaves, rebuild = _cotangent_parts(g, gd)
    labels = _labels(ids)
    n = len(primals)

    def pulled_back(*leaves):
        out, again = maker(labels, *_with(args, slots, leaves[:n]), **kwargs)
        _check_same(rule, recorded, out)
        cots = {}
        for label, c in again.pullback(rebuild(leaves[n:])):
            if not _structural(c):
                cots[label] = cots[label] + c if label in cots else c
        return tuple(cots[node_ids(k)] if node_ids(k) in cots else zeros_like_value(p)
                     for k, p in enumerate(primals))

    try:
        c, cd = jvp(pulled_back, tuple(primals) + tuple(g_leaves),
                    tuple(tans) + tuple(gd_leaves))
    except HvpNotSupported:
        raise
    except AutodiffError as e:
        raise HvpNotSupported(
            f"{rule_name(rule)} has no pullback_with_tangents, and its pullback could not "
            f"be differentiated again ({type(e).__name__}: {e}); write its pullback "
            "with NumPy calls on the values it is given, or define "
            "pullback_with_tangents(cotangent, cotangent_tangent, tangents)") from e
    ins = set(rule.inputs())  # an argument the rule does not list gets nothing
    return [(n, ci, cdi) for n, ci, cdi in zip(nids, c, cd) if n in ins]


HOOKS.replay = replay
