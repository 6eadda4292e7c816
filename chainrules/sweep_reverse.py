"""The reverse sweep of a tape (``Tape.backward``): cotangents accumulated
from the outputs back to the leaves, optionally only along the nodes that
lead to a chosen set (``wrt``)."""

import numpy as np

from .sweep_common import (HOOKS, MULTI, STRUCT, Gradients, _verified_classes, accumulate,
                           accumulate_slot, add_at, library_rule, note_failure, verify_results)
from .tangents import ZERO, Structural

_ndarray = np.ndarray


class ReverseSweeps:
    """The reverse sweep of ``chainrules.graph.Tape`` (a mixin of it)."""

    __slots__ = ()

    # -- reverse sweep -----------------------------------------------------------
    def backward(self, outputs, seeds, wrt=None, retain_graph=False, check=None):
        """Reverse sweep from ``outputs`` seeded with ``seeds``.

        ``wrt``: the nodes whose cotangents to keep (default: every leaf).
        With ``wrt`` the sweep is partial: only rules whose inputs lead to a
        ``wrt`` node are pulled back (e.g. the gradient of one layer's
        weights skips every other branch). ``check(tape, i, g, pairs)``, if
        given, sees each pullback's result (anomaly mode installs one).
        Returns a ``Gradients`` store (``get``, ``remove``, ``replace``).
        """
        rules, check = self._reverse_start(outputs, wrt, retain_graph, check)
        shapes = self.shapes
        dtypes = self.dtypes
        n = len(rules)
        cots = [None] * n
        owned = bytearray(n)
        for o, s in zip(outputs, seeds):
            if o is not None:
                self._seed(cots, o, s)
        keep = None if wrt is None else set(wrt)
        store = {}
        start = max((o for o in outputs if o is not None), default=-1)
        for i in range(start, -1, -1):
            g = cots[i]
            if g is None:
                continue
            rule = rules[i]
            if keep is not None:
                if i in keep:
                    store[i] = g
            elif rule is None:
                store[i] = g
            if rule is None:
                cots[i] = None
                continue
            cots[i] = None
            if shapes[i] is MULTI:
                g = tuple(ZERO if t is None else t for t in g)
            index = getattr(rule, "gather_index", None)
            if index is not None and check is None:
                x = rule.inputs()[0]
                if add_at(cots, owned, 1, x, index, g, shapes[x], dtypes[x]):
                    if not retain_graph:
                        rules[i] = None
                    continue
            try:
                pairs = rule.pullback(g)
            except Exception as e:
                note_failure(e, rule, i, "pullback")
                raise
            if check is not None:
                check(self, i, g, pairs)
            if type(rule) not in _verified_classes and not library_rule(type(rule)):
                verify_results(rule, pairs, "pullback")
            if not retain_graph:
                rules[i] = None
            for nid, c in pairs:
                tc = type(c)
                if tc is _ndarray:
                    if c.shape != shapes[nid] or (c.dtype is not dtypes[nid]
                                                  and c.dtype != dtypes[nid]):
                        c = self._project(c, nid, rule)
                elif tc in STRUCT:
                    continue
                elif shapes[nid] is MULTI:
                    accumulate_slot(cots, nid, dtypes[nid], c)
                    continue
                else:
                    c = self._project(c, nid, rule)
                if cots[nid] is None:  # the common case, without a call
                    cots[nid] = c
                else:
                    accumulate(cots, owned, 1, nid, c)
        return Gradients(store)

    def _reverse_start(self, outputs, wrt, retain_graph, check):
        """What every reverse sweep does first: refuse a freed tape, mark it
        consumed unless retained, install anomaly mode's check, and prune
        the rules to those leading to ``wrt``. Returns ``(rules, check)``."""
        self._check_alive()
        self._consumed(retain_graph)
        if check is None and self.sources is not None:
            check = HOOKS.anomaly.check_pullback
        if wrt is None:
            return self.rules, check
        return self._prune(wrt, outputs, retain_graph), check

    def _seed(self, buf, o, s):
        """Add the seed ``s`` (projected onto node ``o``) into ``buf[o]``."""
        if isinstance(s, Structural) or s is None:
            return
        s = self._project(s, o, "seed")
        buf[o] = s if buf[o] is None else buf[o] + s

    # -- partial backward ------------------------------------------------
    def _prune(self, wrt, outputs, retain_graph):
        """The rules list with ``None`` for every node whose inputs do not
        lead to a node of ``wrt``, so that the sweep never pulls back through
        them (in place when the graph is not retained: dropped early)."""
        rules = self.rules
        start = max((o for o in outputs if o is not None), default=-1)
        dep = bytearray(len(rules))  # 1: the node is in wrt or depends on it
        first = start + 1
        for w in wrt:
            if w <= start:
                dep[w] = 1
                first = min(first, w)
        out = rules if not retain_graph else list(rules)
        for i in range(start + 1):
            rule = rules[i]
            if rule is None:
                continue
            if i > first:
                for j in rule.inputs():
                    if dep[j]:
                        dep[i] = 1
                        break
                else:
                    out[i] = None
            else:
                out[i] = None  # nothing at or before the first wrt node is needed
        return out
