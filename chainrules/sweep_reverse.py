"""The reverse sweep of a tape, in one loop for whatever it carries:
cotangents alone (``Tape.backward``), or every cotangent together with its
tangent along forward tangents (``Tape.backward_with_tangents``,
forward-over-reverse HVPs). Cotangents are accumulated from the outputs back
to the leaves, optionally only along the nodes that lead to a chosen set
(``wrt``)."""

from __future__ import annotations

from typing import Any, Callable, Collection, Sequence

import numpy as np

from .sweep_common import (CONSUMED, HOOKS, MULTI, STRUCT, Gradients, accumulate,
                           accumulate_slot, add_at, library_rule, note_failure, verify_results)
from .sweep_batch import (as_batch_of_one, batched_rule, pullback_sliced,
                          pullback_with_tangents_sliced, slice_of)
from .rule import REPLAY_TYPES, NodeId
from .tangents import ZERO, Structural

_ndarray = np.ndarray
_new = object.__new__
_asarray = np.asarray
_f64 = np.float64
_F64 = np.dtype(np.float64)
#: NumPy's scalar types of inexact dtypes (scalar cotangents)
_INEXACT_SCALARS = frozenset((np.float16, np.float32, np.float64, np.longdouble, np.complex64,
                              np.complex128, np.clongdouble))


class TangentCarry:
    """What a reverse sweep carries besides cotangents: the tangent of each
    one, along the forward ``tangents`` (from ``Tape.forward``).

    ``need``: which first-order cotangents to compute (``cotangent_demand``),
    or None for all; rules that support it (``cot_skippable``) are told which
    inputs to skip (``skip=``). ``out_tangents``: give a rule that asks for
    it (``takes_output_tangent``) its output's tangent from ``tangents``;
    False makes every rule compute it itself (the rule checker runs both).
    ``batch``: the tangents hold that many directions (a leading axis); the
    cotangents, the same for every direction, do not.
    """

    __slots__ = ("tape", "tangents", "need", "out_tangents", "batch")

    def __init__(self, tape, tangents, need=None, out_tangents=True, batch=None):
        self.tape = tape
        self.tangents = tangents
        self.need = need
        self.out_tangents = out_tangents
        self.batch = batch

    def pull(self, rule, i, g, gd):
        """The rule's ``(NodeId, cotangent, tangent)`` triples."""
        method = (pullback_with_tangents_of(self.tape, i, rule) if type(rule) in REPLAY_TYPES
                  else rule.pullback_with_tangents)
        if self.batch is None:
            return self._pull(rule, i, g, gd, None, method)
        if batched_rule(rule):
            return self._pull(rule, i, g, gd, None, rule.pullback_with_tangents_batched)

        def one(g, gd_j, j):
            return self._pull(rule, i, g, gd_j, j, method)

        return pullback_with_tangents_sliced(self.tape, rule, one, g, gd, self.batch)

    def _pull(self, rule, i, g, gd, j, method):
        """``method(g, gd, input tangents, ...)``; ``j``: direction ``j`` of
        batched tangents only."""
        tangents = self.tangents
        ins = rule.inputs()
        if len(ins) == 1:  # the common rule: one traced input, no comprehension
            t = tangents[ins[0]]
            ts = (ZERO if t is None else t,)
        else:
            ts = tuple([ZERO if tangents[n] is None else tangents[n] for n in ins])
        out_t = tangents[i]
        if j is not None:
            ts = tuple([slice_of(t, j) for t in ts])
            out_t = None if out_t is None else slice_of(out_t, j)
        if out_t is not None and self.out_tangents and getattr(rule, "takes_output_tangent",
                                                               False):
            # the rule reuses its output's tangent from the forward sweep
            return method(g, gd, ts, out_tangent=out_t)
        need = self.need
        if need is not None and getattr(rule, "cot_skippable", False):  # duck-typed rules too
            skip = [n for n in ins if not need[n]]
            if skip:
                return method(g, gd, ts, skip=skip)
        return method(g, gd, ts)


def pullback_with_tangents_of(tape, i, rule):
    """``rule.pullback_with_tangents`` for the rule at node ``i``; for a rule
    whose second order is found by replay (``second_order_by_replay``, kept
    by ``Tape.keep_replay``), the replay (``HOOKS.replay``) with the same
    signature (tangents aligned with ``inputs()``)."""
    entry = tape.replays.get(i) if type(rule) in REPLAY_TYPES else None
    if entry is None or entry[0] is not rule:
        return rule.pullback_with_tangents

    def replayed(g, gd, tangents, **_):
        # skip= and out_tangent= are hints: the replay computes what it needs
        by_node = dict(zip(rule.inputs(), tangents))
        nids = [n for a in entry[2] for n in (a if type(a) is tuple else (a,))
                if n is not None]
        return HOOKS.replay(entry, g, gd, [by_node.get(n) for n in nids])

    return replayed


def _gradients(store):
    """``Gradients(store)``, made without a Python-level ``__init__``."""
    out = _new(Gradients)
    out._store = store
    return out


def _keep(store, dstore, i, g, gd):
    """Store the swept cotangent of node ``i`` (and its tangent with a
    ``dstore``) for the caller."""
    if dstore is None:
        store[i] = g
    else:
        store[i] = ZERO if g is None else g
        dstore[i] = ZERO if gd is None else gd


def _pair(g, gd, multi):
    """A cotangent and its tangent as a rule takes them: structural zeros
    for what is missing (per output of a multi-output node)."""
    if multi:
        return (ZERO if g is None else tuple(ZERO if t is None else t for t in g),
                ZERO if gd is None else tuple(ZERO if t is None else t for t in gd))
    return ZERO if g is None else g, ZERO if gd is None else gd


class ReverseSweeps:
    """The reverse sweeps of ``chainrules.graph.Tape`` (a mixin of it)."""

    __slots__ = ()

    def backward(self, outputs: Sequence[NodeId], seeds: Sequence[Any],
                 wrt: Collection[NodeId] | None = None, retain_graph: bool = False,
                 check: Callable[..., Any] | None = None,
                 batch: int | None = None) -> Gradients:
        """Reverse sweep from ``outputs`` seeded with ``seeds``.

        ``wrt``: the nodes whose cotangents to keep (default: every leaf).
        With ``wrt`` the sweep is partial: only rules whose inputs lead to a
        ``wrt`` node are pulled back (e.g. the gradient of one layer's
        weights skips every other branch). ``check(tape, i, g, pairs)``, if
        given, sees each pullback's result before the engine projects it
        (anomaly mode installs one; the rule checker another).
        ``batch``: the seeds hold that many directions (a leading axis of
        that length), and so does every cotangent (``chainrules.sweep_batch``).
        Returns a ``Gradients`` store (``get``, ``remove``, ``replace``).
        """
        if batch == 1:  # one direction: the unbatched sweep, without batch overheads
            g = self._reverse(outputs, [slice_of(s, 0) for s in seeds], None, None, wrt,
                              retain_graph, check)[0]
            return Gradients({k: as_batch_of_one(v) for k, v in g.items()})
        return self._reverse(outputs, seeds, None, None, wrt, retain_graph, check, batch)[0]

    def backward_with_tangents(self, outputs: Sequence[NodeId], seeds: Sequence[Any],
                               seed_tangents: Sequence[Any], tangents: Sequence[Any],
                               wrt: Collection[NodeId] | None = None,
                               retain_graph: bool = True,
                               check: Callable[..., Any] | None = None,
                               leaf_cotangents: bool = True, need: bytearray | None = None,
                               out_tangents: bool = True,
                               batch: int | None = None) -> tuple[Gradients, Gradients]:
        """Reverse sweep carrying, for every cotangent, its tangent along the
        forward tangents ``tangents`` (from ``forward``).

        ``leaf_cotangents=False``: only the tangents of the leaves' cotangents
        are wanted (a plain HVP), so first-order cotangents that no
        second-order term reads are not computed (``cotangent_demand``; pass
        its result as ``need`` to reuse it across sweeps of one tape). Rules
        that support it (``cot_skippable``) are told which inputs to skip
        (``skip=``); from the others such cotangents are dropped.
        ``out_tangents``: see ``TangentCarry``. ``batch``: ``tangents`` and
        ``seed_tangents`` hold that many directions (a leading axis), and so
        do the tangents of the cotangents; the cotangents do not.

        Returns ``(Gradients of cotangents, Gradients of their tangents)``.
        """
        if need is None and not leaf_cotangents:
            # (a method of ForwardSweeps, the tape's other mixin)
            need = self.cotangent_demand(  # type: ignore[attr-defined]
                outputs, False, () if wrt is None else wrt)
        if batch == 1:  # one direction: the unbatched sweep, without batch overheads
            carry = TangentCarry(self, [slice_of(t, 0) if t is not None else None
                                        for t in tangents], need, out_tangents)
            g, gd = self._reverse(outputs, seeds, [slice_of(s, 0) for s in seed_tangents],
                                  carry, wrt, retain_graph, check)
            return g, Gradients({k: as_batch_of_one(v) for k, v in gd.items()})
        carry = TangentCarry(self, tangents, need, out_tangents, batch)
        return self._reverse(outputs, seeds, seed_tangents, carry, wrt, retain_graph, check)

    def _reverse(self, outputs, seeds, seed_tangents, carry, wrt, retain_graph, check,
                 batch=None):
        """The one reverse loop. ``carry`` None: cotangents only, each rule's
        ``pullback`` called (``batch``: batches of them); else a
        ``TangentCarry``, each rule's ``pullback_with_tangents`` called.
        Returns ``(Gradients, Gradients of the tangents or None)``."""
        if wrt is None:  # _reverse_start, without a call
            if self.freed is not None:
                self._check_alive()  # raises
            if not retain_graph:
                self.freed = CONSUMED  # (_consumed, without the call)
            if check is None and self.anomaly:
                check = HOOKS.anomaly.check_pullback
            rules = self.rules
        else:
            rules, check = self._reverse_start(outputs, wrt, retain_graph, check)
        shapes = self.shapes
        dtypes = self.dtypes
        if carry is None and len(outputs) == 1:  # one output (a gradient): no loops
            start = outputs[0]
            n = len(rules)
            cots = [None] * n
            if start is None:
                start = -1
            else:
                s = seeds[0]
                if type(s) is _ndarray and batch is None and s.shape == shapes[start] and (
                        s.dtype is dtypes[start]):
                    cots[start] = s  # the common seed, as _seed takes it, without the call
                else:
                    self._seed(cots, start, s, batch)
            dots, owned = None, bytearray(n)
        else:
            cots, dots, owned = self._buffers(outputs, seeds, seed_tangents, carry, batch)
            if len(outputs) == 1:
                start = -1 if outputs[0] is None else outputs[0]
            else:
                start = max((o for o in outputs if o is not None), default=-1)
        if carry is None and batch is None and wrt is None and check is None:
            # the common sweep (a gradient): the loop below without its other
            # cases, the results added without calls
            store = {}
            verify = self.user_rules  # rules from outside the library were recorded
            for i in range(start, -1, -1):
                g = cots[i]
                if g is None:
                    continue
                cots[i] = None
                rule = rules[i]
                if rule is None:
                    store[i] = g
                    continue
                if shapes[i] is MULTI:
                    g = tuple(ZERO if t is None else t for t in g)
                try:  # an attribute of ReverseRule; duck-typed rules may lack it
                    index = rule.gather_index
                except AttributeError:
                    index = None
                if index is not None:  # (_gather's add_at, without its call)
                    x = rule.inputs()[0]
                    if add_at(cots, owned, 1, x, index, g, shapes[x], dtypes[x]):
                        if not retain_graph:  # all of it added in place
                            rules[i] = None
                        continue
                    # what add_at could not take goes through the pullback
                try:
                    results = rule.pullback(g)
                except Exception as e:
                    note_failure(e, rule, i, "pullback")
                    raise
                if verify and not library_rule(type(rule)):
                    verify_results(rule, results, "pullback")
                if not retain_graph:
                    rules[i] = None
                for nid, c in results:
                    tc = type(c)
                    if tc is _ndarray:
                        if c.shape != shapes[nid] or (c.dtype is not dtypes[nid]
                                                      and c.dtype != dtypes[nid]):
                            c = self._project(c, nid, rule)
                    elif tc is _f64 and dtypes[nid] is _F64 and shapes[nid] == ():
                        # a float64 scalar onto a 0-d float64 node: kept as it
                        # is (the sum of two 0-d arrays is one already), so the
                        # next pullback multiplies scalars without a 0-d array
                        if (prev := cots[nid]) is None:
                            cots[nid] = c
                        elif type(prev) is _f64:
                            cots[nid] = prev + c
                        else:
                            accumulate(cots, owned, 1, nid, c)
                        continue
                    elif tc in STRUCT:
                        continue
                    elif shapes[nid] is MULTI:
                        accumulate_slot(cots, nid, dtypes[nid], c)
                        continue
                    elif tc in _INEXACT_SCALARS and c.dtype is dtypes[nid] and shapes[nid] == ():
                        c = _asarray(c)  # what _project makes of it, without the call
                    else:
                        c = self._project(c, nid, rule)
                    prev = cots[nid]
                    if prev is None:  # the common case, without a call
                        cots[nid] = c
                    elif owned[nid] or type(prev) is not _ndarray or type(c) is not _ndarray:
                        accumulate(cots, owned, 1, nid, c)
                    else:  # accumulate's sum into a new array, without the call
                        prev = prev + c
                        cots[nid] = prev
                        if type(prev) is _ndarray:  # (not a NumPy scalar, of 0-d arrays)
                            owned[nid] = 1
            grads = _new(Gradients)
            grads._store = store
            return grads, None
        dbatch = None if carry is None else carry.batch  # batch of the tangents
        keep = None if wrt is None else set(wrt)
        need = None if carry is None else carry.need
        store = {}
        dstore = None if dots is None else {}
        plain = dots is None and batch is None  # cotangents of one direction
        verify = self.user_rules  # rules from outside the library were recorded
        for i in range(start, -1, -1):
            g = cots[i]
            if dots is not None:
                gd = dots[i]
                if g is None and gd is None:
                    continue
                dots[i] = None
            elif g is None:
                continue
            cots[i] = None
            rule = rules[i]
            if rule is None or keep is not None:
                if keep is None or i in keep:
                    if dstore is None:
                        store[i] = g
                    else:
                        _keep(store, dstore, i, g, gd)
                if rule is None:
                    continue
            if dots is not None:
                if shapes[i] is MULTI:
                    g, gd = _pair(g, gd, True)
                else:  # _pair of one output, without a call
                    if g is None:
                        g = ZERO
                    if gd is None:
                        gd = ZERO
            elif shapes[i] is MULTI:
                g = tuple(ZERO if t is None else t for t in g)
                gd = None
            try:  # an attribute of ReverseRule; duck-typed rules may lack it
                index = rule.gather_index
            except AttributeError:
                index = None
            if index is not None and check is None and batch is None and dbatch is None:
                left = self._gather(rule.inputs()[0], index, g, None if dots is None else gd, cots,
                                    dots, owned, need)
                if left is None:  # all of it added in place
                    if not retain_graph:
                        rules[i] = None
                    continue
                g, gd = left  # what add_at could not take goes through the pullback
            try:
                if plain:
                    results = rule.pullback(g)
                elif dots is None:
                    results = (rule.pullback_batched(g) if batched_rule(rule)
                               else pullback_sliced(self, rule, g, batch))
                else:
                    results = carry.pull(rule, i, g, gd)
            except Exception as e:
                note_failure(e, rule, i, "pullback" if dots is None else
                             "pullback_with_tangents")
                raise
            if check is not None:
                check(self, i, g, results)
            if verify and not library_rule(type(rule)):
                verify_results(rule, results, "pullback" if dots is None else
                               "pullback_with_tangents")
            if not retain_graph:
                rules[i] = None
            self._scatter(results, rule, cots, dots, owned, need, batch, dbatch)
        grads = _new(Gradients)  # (_gradients, without the call)
        grads._store = store
        return grads, (None if dstore is None else _gradients(dstore))

    def _buffers(self, outputs, seeds, seed_tangents, carry, batch):
        """The sweep's cotangent buffers (and those of their tangents with a
        ``carry``), seeded, and the bytearray of which ones it owns."""
        n = len(self.rules)
        cots = [None] * n
        dots = None if carry is None else [None] * n
        for k, o in enumerate(outputs):
            if o is not None:
                self._seed(cots, o, seeds[k], batch)
                if dots is not None:
                    self._seed(dots, o, seed_tangents[k], carry.batch)
        # bit 1: cots[i] is the sweep's own buffer, bit 2: dots[i]
        return cots, dots, bytearray(n)

    def _scatter(self, results, rule, cots, dots, owned, need, batch, dbatch):
        """Add a rule's results into the buffers, off the plain path: batched
        cotangents (``dots`` None), or cotangents with their tangents."""
        if dots is None:
            for nid, c in results:
                self._add(cots, owned, 1, nid, c, rule, batch)
            return
        for nid, c, cd in results:
            if need is not None and not need[nid]:
                c = None  # nothing reads it (a rule without skip= computed it)
            self._add(cots, owned, 1, nid, c, rule)
            self._add(dots, owned, 2, nid, cd, rule, dbatch)

    def _add(self, buf, owned, bit, nid, c, rule, batch=None):
        """Project a rule's cotangent (or its tangent) ``c`` onto node ``nid``
        (``batch``: a batch of them) and add it into ``buf``; structural
        zeros add nothing."""
        if type(c) in STRUCT:
            return
        if self.shapes[nid] is MULTI:
            if not isinstance(c[1], Structural):
                accumulate_slot(buf, nid, self.dtypes[nid], c)
            return
        if (batch is not None or type(c) is not _ndarray or c.shape != self.shapes[nid]
                or (c.dtype is not self.dtypes[nid] and c.dtype != self.dtypes[nid])):
            c = self._project(c, nid, rule, batch=batch)
        if buf[nid] is None:  # the first contribution: no call
            buf[nid] = c
        else:
            accumulate(buf, owned, bit, nid, c)

    def _gather(self, x, index, g, gd, cots, dots, owned, need):
        """The pullback of a gather ``x[index]`` as an in-place add into the
        sweep's buffers (``add_at``). Returns None when all of it was added,
        else ``(g, gd)`` with what is left for the rule's pullback."""
        shape, dtype = self.shapes[x], self.dtypes[x]
        if dots is None:
            return None if add_at(cots, owned, 1, x, index, g, shape, dtype) else (g, gd)
        if (isinstance(g, Structural) or (need is not None and not need[x])
                or add_at(cots, owned, 1, x, index, g, shape, dtype)):
            g = ZERO  # done (or not wanted)
        if isinstance(gd, Structural) or add_at(dots, owned, 2, x, index, gd, shape, dtype):
            gd = ZERO
        return None if g is ZERO and gd is ZERO else (g, gd)

    def _reverse_start(self, outputs, wrt, retain_graph, check):
        """What every reverse sweep does first: refuse a freed tape, mark it
        consumed unless retained, install anomaly mode's check, and prune
        the rules to those leading to ``wrt``. Returns ``(rules, check)``."""
        if self.freed is not None:
            self._check_alive()  # raises
        if not retain_graph:
            self._consumed(retain_graph)
        if check is None and self.anomaly:
            check = HOOKS.anomaly.check_pullback
        if wrt is None:
            return self.rules, check
        return self._prune(wrt, outputs, retain_graph), check

    def _seed(self, buf, o, s, batch=None):
        """Add the seed ``s`` (projected onto node ``o``; ``batch``: a batch
        of seeds) into ``buf[o]``."""
        if type(s) is _ndarray and batch is None and s.shape == self.shapes[o] and (
                s.dtype is self.dtypes[o] or s.dtype == self.dtypes[o]):
            pass  # the common seed: nothing to project
        elif isinstance(s, Structural) or s is None:
            return
        else:
            s = self._project(s, o, "seed", batch=batch)
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
