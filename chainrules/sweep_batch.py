"""Batches of directions in one sweep: how the engine calls a rule on a
batch, and the per-direction fallback for rules without batched methods.

A batched value of a node of shape ``s`` has shape ``(k,) + s``: one slice
per direction. A rule that sets ``batched = True`` defines
``pullback_batched(G)``, ``pushforward_batched(Ts)`` and
``pullback_with_tangents_batched(g, GD, Ts, ...)`` taking and returning such
values (``g``, the first-order cotangent of an HVP, is shared by every
direction and stays unbatched). Any other rule (user rules included) is
called once per direction here and its results stacked, so a batched sweep
never depends on a rule author opting in: it is only slower for that rule.
"""

import numpy as np

from .sweep_common import MULTI, library_rule, verify_results
from .tangents import ZERO, Structural


def batched_rule(rule):
    """True when ``rule`` takes batches itself (``batched = True``)."""
    return getattr(rule, "batched", False)


def slice_of(v, j):
    """Direction ``j`` of a batched value (a structural zero is every
    direction's; a multi-output cotangent is a tuple of batched values)."""
    if isinstance(v, Structural):
        return v
    if type(v) is tuple:
        return tuple(slice_of(t, j) for t in v)
    return v[j]


def as_batch_of_one(v):
    """An unbatched value as a batch of one direction (a view).

    The unbatched sweeps let a rule with several outputs give ``None`` for
    an output without a derivative (an integer pivot, a boolean flag); in a
    batch that output's value is a structural zero, as the batched methods
    and the per-direction fallback give it, so that ``slice_of`` reads any
    output of the batch back."""
    if v is None or isinstance(v, Structural):
        return v
    if type(v) is tuple:
        return tuple(ZERO if t is None else as_batch_of_one(t) for t in v)
    return v[None]


class _Stacker:
    """Per-direction results of one rule, stacked into batched values of
    their nodes: a structural result in some directions is zeros there."""

    __slots__ = ("tape", "rule", "k", "cols", "order")

    def __init__(self, tape, rule, k):
        self.tape = tape
        self.rule = rule
        self.k = k
        self.cols = {}
        self.order = []

    def add(self, key, j, v):
        if v is None or isinstance(v, Structural):
            return
        col = self.cols.get(key)
        if col is None:
            col = self.cols[key] = [None] * self.k
            self.order.append(key)
        col[j] = v if col[j] is None else col[j] + v

    def stacked(self, key, shape, dtype):
        col = self.cols[key]
        return np.stack([np.zeros(shape, dtype) if c is None else c for c in col])

    def node_value(self, key, project):
        """The stacked value of ``key`` (a NodeId, or ``(NodeId, output)`` for
        an output of a multi-output node), each slice projected first."""
        tape = self.tape
        nid = key if type(key) is not tuple else key[0]
        col = self.cols[key]
        if type(key) is tuple:
            ref = next(c for c in col if c is not None)
            shape, dtype = np.shape(ref), np.asarray(ref).dtype
        else:
            col[:] = [None if c is None else project(c, nid) for c in col]
            shape, dtype = tape.shapes[nid], tape.dtypes[nid]
        return self.stacked(key, shape, dtype)


def _per_result(stacker, results, j, pos):
    tape = stacker.tape
    for item in results:
        nid, v = item[0], item[pos]
        if v is None or isinstance(v, Structural):
            continue
        if tape.shapes[nid] is MULTI:
            out, vk = v
            stacker.add((nid, out), j, vk)
        else:
            stacker.add(nid, j, v)


def _results(stacker, project, order=None):
    """``(NodeId, batched value)`` per node the rule gave a value for."""
    out = []
    for key in stacker.order if order is None else order:
        if key not in stacker.cols:
            continue
        v = stacker.node_value(key, project)
        out.append((key[0], (key[1], v)) if type(key) is tuple else (key, v))
    return out


def pullback_sliced(tape, rule, G, k):
    """The batched pullback of a rule without one: one call per direction."""
    st = _Stacker(tape, rule, k)
    for j in range(k):
        pairs = rule.pullback(slice_of(G, j))
        if j == 0:
            _verify(rule, pairs, "pullback")
        _per_result(st, pairs, j, 1)
    return _results(st, lambda c, nid: tape._project(c, nid, rule))


def pushforward_sliced(tape, rule, i, Ts, k):
    """The batched pushforward of a rule without one: one call per
    direction (the engine's transposed pullback where it defines none)."""
    outs = [None] * k
    live = False
    for j in range(k):
        t = tape._pushforward(rule, tuple(slice_of(t, j) for t in Ts), i)
        if t is not None and not isinstance(t, Structural):
            outs[j] = t
            live = True
    if not live:
        return ZERO
    if tape.shapes[i] is MULTI:  # a tuple per direction: one batched value per output
        n = len(tape.dtypes[i])  # the outputs' dtypes
        per = []
        for m in range(n):
            col = [None if o is None or isinstance(o[m], Structural) else o[m] for o in outs]
            ref = next((c for c in col if c is not None), None)
            per.append(ZERO if ref is None else np.stack(
                [np.zeros(np.shape(ref), np.asarray(ref).dtype) if c is None else c
                 for c in col]))
        return tuple(per)
    shape, dtype = tape.shapes[i], tape.dtypes[i]
    return np.stack([np.zeros(shape, dtype) if o is None
                     else tape._project(o, i, rule, "tangent") for o in outs])


def pullback_with_tangents_sliced(tape, rule, pull, g, GD, k):
    """The batched ``pullback_with_tangents`` of a rule without one: one
    call per direction through ``pull(g, gd_j, j)`` (which slices the
    tangents); the first-order cotangents, shared by every direction, are
    taken from the first."""
    st = _Stacker(tape, rule, k)
    first = []
    for j in range(k):
        triples = pull(g, slice_of(GD, j), j)
        if j == 0:
            _verify(rule, triples, "pullback_with_tangents")
            first = [(item[0], item[1]) for item in triples]
        _per_result(st, triples, j, 2)
    dots = _results(st, lambda c, nid: tape._project(c, nid, rule))
    # one triple per node the rule named: its (shared) cotangent and the
    # stacked tangents of it
    out = []
    for nid, c in first:
        for m, (dn, d) in enumerate(dots):
            if dn == nid and type(d) is not tuple:
                del dots[m]
                break
        else:
            d = ZERO
        out.append((nid, c, d))
    out.extend((nid, ZERO, d) for nid, d in dots)
    return out


def _verify(rule, results, what):
    """A user rule's per-direction results checked as the unbatched sweep
    checks them (a duplicate would be merged away by stacking)."""
    if not library_rule(type(rule)):
        verify_results(rule, results, what)
