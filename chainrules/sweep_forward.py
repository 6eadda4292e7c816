"""The forward sweeps of a tape: tangents pushed forward (``Tape.forward``),
the reverse sweep carrying the tangent of every cotangent
(``Tape.backward_with_tangents``, forward-over-reverse HVPs), and which
tangents and cotangents that sweep reads (``tangent_demand``,
``cotangent_demand``)."""

import numpy as np

from .rule import ReverseRule
from .sweep_common import (HOOKS, MULTI, STRUCT, Gradients, _verified_classes, accumulate,
                           accumulate_slot, add_at, library_rule, note_failure, verify_results)
from .tangents import ZERO, Structural

_ndarray = np.ndarray


class ForwardSweeps:
    """The forward and forward-over-reverse sweeps of
    ``chainrules.graph.Tape`` (a mixin of it)."""

    __slots__ = ()

    # -- what a forward-over-reverse sweep reads ------------------------------------
    def tangent_demand(self, outputs):
        """Which forward tangents a ``backward_with_tangents`` sweep from
        ``outputs`` reads: a bytearray over the nodes, for ``forward(needed=)``.

        A tangent is read by the second-order term of a non-linear consumer,
        or by the pushforward of a consumer whose tangent is read. Linear
        rules (``rule.linear``) have no second-order term, so tangents that
        flow only through linear operations into the output (the last
        ``100 * c + e`` and ``sum`` of a loss) are never computed.
        """
        rules = self.rules
        need = bytearray(len(rules))
        start = max((o for o in outputs if o is not None), default=-1)
        for i in range(start, -1, -1):
            rule = rules[i]
            if rule is not None and (need[i] or not rule.linear):
                for j in rule.inputs():
                    need[j] = 1
        return need

    def cotangent_demand(self, outputs, leaf_cotangents=False, keep=()):
        """Which first-order cotangents a ``backward_with_tangents`` sweep
        from ``outputs`` must compute: a bytearray over the nodes.

        A node's cotangent is needed when its own rule's second-order term
        reads it (the rule is not linear), when an input's cotangent is
        needed (it is pulled back from this one), or when it is a leaf and
        ``leaf_cotangents`` is true, or it is in ``keep``. The rest (for an
        HVP: every cotangent that flows only into the inputs through linear
        operations) is skipped.
        """
        rules = self.rules
        start = max((o for o in outputs if o is not None), default=-1)
        need = bytearray(len(rules))
        for k in keep:
            need[k] = 1
        leaf = 1 if leaf_cotangents else 0
        for i in range(start + 1):
            if need[i]:
                continue
            rule = rules[i]
            if rule is None:
                need[i] = leaf
            elif not rule.linear:
                need[i] = 1
            else:
                for j in rule.inputs():
                    if need[j]:
                        need[i] = 1
                        break
        return need

    # -- forward-tangent sweep ---------------------------------------------------
    def forward(self, leaf_tangents, start=0, needed=None):
        """Push ``leaf_tangents`` ({NodeId: tangent}) through every rule.

        ``needed`` (from ``tangent_demand``) limits the sweep to the nodes
        whose tangents are read. Returns the list of node tangents (``None``
        where structurally zero or not needed).
        """
        self._check_alive()
        rules = self.rules
        n = len(rules)
        tans = [None] * n
        for nid, t in leaf_tangents.items():
            if not isinstance(t, Structural):
                tans[nid] = t
        check = None
        if self.sources is not None:
            check = HOOKS.anomaly.check_pushforward
        for i in range(start, n):
            rule = rules[i]
            if rule is None or (needed is not None and not needed[i]):
                continue
            ins = rule.inputs()
            ts = [tans[j] for j in ins]
            if all(t is None for t in ts):
                continue
            ts = tuple(ZERO if t is None else t for t in ts)
            try:
                t = self._pushforward(rule, ts, i)
            except Exception as e:
                note_failure(e, rule, i, "pushforward")
                raise
            if t is None or isinstance(t, Structural):
                continue
            shape = self.shapes[i]
            if shape is not MULTI and (type(t) is not _ndarray or t.shape != shape or (
                    t.dtype is not self.dtypes[i] and t.dtype != self.dtypes[i])):
                t = self._project(t, i, rule, "tangent")
            if check is not None:
                check(self, i, t)
            tans[i] = t
        return tans

    def _pushforward(self, rule, ts, i):
        if type(rule).pushforward is ReverseRule.pushforward:
            return HOOKS.transpose(rule, ts, self.shapes[i], self.dtypes[i],
                                   project=lambda c, nid: self._project(c, nid, rule))
        return rule.pushforward(ts)

    # -- reverse sweep carrying tangents ----------------------------------------
    def backward_with_tangents(self, outputs, seeds, seed_tangents, tangents,
                               wrt=None, retain_graph=True, check=None,
                               leaf_cotangents=True, need=None):
        """Reverse sweep carrying, for every cotangent, its tangent along the
        forward tangents ``tangents`` (from ``forward``).

        ``leaf_cotangents=False``: only the tangents of the leaves' cotangents
        are wanted (a plain HVP), so first-order cotangents that no
        second-order term reads are not computed (``cotangent_demand``; pass
        its result as ``need`` to reuse it across sweeps of one tape). Rules
        that support it (``cot_skippable``) are told which inputs to skip
        (``skip=``); from the others such cotangents are dropped.

        Returns ``(Gradients of cotangents, Gradients of their tangents)``.
        """
        rules, check = self._reverse_start(outputs, wrt, retain_graph, check)
        shapes = self.shapes
        dtypes = self.dtypes
        n = len(rules)
        cots = [None] * n
        dots = [None] * n
        owned = bytearray(n)  # bit 1: cots[i] is our own buffer, bit 2: dots[i]
        for o, s, sd in zip(outputs, seeds, seed_tangents):
            if o is not None:
                self._seed(cots, o, s)
                self._seed(dots, o, sd)
        keep = None if wrt is None else set(wrt)
        if need is None and not leaf_cotangents:
            need = self.cotangent_demand(outputs, False, keep or ())
        store, dstore = {}, {}
        start = max((o for o in outputs if o is not None), default=-1)
        for i in range(start, -1, -1):
            g = cots[i]
            gd = dots[i]
            if g is None and gd is None:
                continue
            rule = rules[i]
            if (keep is not None and i in keep) or (keep is None and rule is None):
                store[i] = ZERO if g is None else g
                dstore[i] = ZERO if gd is None else gd
            cots[i] = dots[i] = None
            if rule is None:
                continue
            if shapes[i] is MULTI:
                g = ZERO if g is None else tuple(ZERO if t is None else t for t in g)
                gd = ZERO if gd is None else tuple(ZERO if t is None else t for t in gd)
            else:
                g = ZERO if g is None else g
                gd = ZERO if gd is None else gd
            ins = rule.inputs()
            index = getattr(rule, "gather_index", None)
            if index is not None and check is None:
                x = ins[0]
                shape, dtype = shapes[x], dtypes[x]
                if (isinstance(g, Structural) or (need is not None and not need[x])
                        or add_at(cots, owned, 1, x, index, g, shape, dtype)):
                    g = ZERO  # done (or not wanted)
                if isinstance(gd, Structural) or add_at(dots, owned, 2, x, index, gd,
                                                          shape, dtype):
                    gd = ZERO
                if g is ZERO and gd is ZERO:
                    if not retain_graph:
                        rules[i] = None
                    continue
                # what add_at could not take goes through the pullback
            if len(ins) == 1:
                t = tangents[ins[0]]
                ts = (ZERO if t is None else t,)
            else:
                ts = tuple([ZERO if tangents[j] is None else tangents[j] for j in ins])
            try:
                if getattr(rule, "takes_output_tangent", False) and tangents[i] is not None:
                    # the rule reuses its output's tangent from the forward sweep
                    triples = rule.pullback_with_tangents(g, gd, ts, out_tangent=tangents[i])
                elif need is None:
                    triples = rule.pullback_with_tangents(g, gd, ts)
                else:
                    skip = [j for j in ins if not need[j]]
                    if skip and getattr(rule, "cot_skippable", False):  # duck-typed rules too
                        triples = rule.pullback_with_tangents(g, gd, ts, skip=skip)
                    else:
                        triples = rule.pullback_with_tangents(g, gd, ts)
            except Exception as e:
                note_failure(e, rule, i, "pullback_with_tangents")
                raise
            if check is not None:
                check(self, i, g, triples)
            if type(rule) not in _verified_classes and not library_rule(type(rule)):
                verify_results(rule, triples, "pullback_with_tangents")
            if not retain_graph:
                rules[i] = None
            for nid, c, cd in triples:
                if need is not None and not need[nid]:
                    c = None  # nothing reads it (a rule without skip= computed it)
                if shapes[nid] is MULTI:
                    for buf, val in ((cots, c), (dots, cd)):
                        if type(val) not in STRUCT and not isinstance(val[1], Structural):
                            accumulate_slot(buf, nid, dtypes[nid], val)
                    continue
                for buf, bit, val in ((cots, 1, c), (dots, 2, cd)):
                    if type(val) in STRUCT:
                        continue
                    if type(val) is not _ndarray or val.shape != shapes[nid] or (
                            val.dtype is not dtypes[nid] and val.dtype != dtypes[nid]):
                        val = self._project(val, nid, rule)
                    accumulate(buf, owned, bit, nid, val)
        return Gradients(store), Gradients(dstore)
