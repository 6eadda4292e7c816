"""The pushforward of a rule that defines only a pullback.

A pullback is linear in its cotangent, so the Jacobian-vector product is a
gradient: ``J u = d/dg <pullback(g), u>``. This module records the pullback
on a small tape with ``g`` traced and sweeps it backwards. It sits above the
tracing layer (it traces) and installs itself in the engine's hooks
(``chainrules.graph.HOOKS.transpose``), which the forward sweep calls.
"""

import numpy as np

from .errors import MissingRuleError
from .graph import HOOKS, MULTI, Tape
from .rule import rule_name
from .tangents import ZERO, Structural
from .tracing import Traced

__all__ = ["transpose_pullback"]


def transpose_pullback(rule, tangents, out_shape, out_dtype, project=None):
    """Derive a pushforward from a pullback.

    A pullback is linear in its cotangent, so ``J u`` is the gradient with
    respect to ``g`` of ``<pullback(g), u>``: record the pullback on a small
    tape with ``g`` traced and sweep it backwards.
    """
    if out_shape is MULTI:
        raise MissingRuleError(
            f"rule {rule_name(rule)} has several outputs and no pushforward; "
            "define pushforward(tangents) on it")
    local = Tape()
    g0 = np.zeros(out_shape, out_dtype)
    gid = local.leaf(g0)
    g = Traced(g0, gid, local)
    try:
        pairs = rule.pullback(g)
        by_node = dict(zip(rule.inputs(), tangents))
        total = None
        for nid, c in pairs:
            u = by_node.get(nid, ZERO)
            if c is None or isinstance(c, Structural):
                continue
            if project is not None:
                c = project(c, nid)
            if isinstance(u, Structural):
                continue
            prod = c * u
            if getattr(prod, "dtype", np.dtype(float)).kind == "c":
                prod = np.real(prod)
            term = np.sum(prod)
            total = term if total is None else total + term
    finally:
        local.active = False
    if total is None or not isinstance(total, Traced) or total.tape is not local:
        return ZERO
    grads = local.backward([total.node], [np.ones((), total.dtype)])
    return grads.get(gid)


HOOKS.transpose = transpose_pullback
