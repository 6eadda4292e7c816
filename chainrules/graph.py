"""The graph engine: a tape of rules keyed by ``NodeId``.

The tape is a list indexed by ``NodeId``; a node is either a leaf (no rule)
or the rule that produced it. Because nodes are appended as they are
computed, the list is already in topological order: every sweep is a plain
loop, forwards or reversed, with no recursion and no sort.

Sweeps:

* ``backward``: reverse sweep accumulating cotangents (fan-out adds up);
  cotangents are freed as soon as their node is processed and, unless the
  graph is retained, so are the rule's saved values.
* ``forward``: forward-tangent sweep through ``pushforward``.
* ``backward_with_tangents``: reverse sweep carrying the tangent of every
  cotangent (forward-over-reverse HVPs).

Cotangents are projected onto their primal's shape, dtype and real/complex
kind before they are accumulated; a rule that returns a tangent of the wrong
shape raises ``TangentShapeError`` naming the rule.
"""

import itertools

import numpy as np

from .arrays import is_array
from .errors import GraphFreedError, TangentShapeError
from .rule import MultiOutput, NodeId, ReverseRule, rule_name  # noqa: F401  (MultiOutput re-exported)
from .tangents import ZERO, NoTangent, ZeroTangent, Structural

__all__ = ["Tape", "Gradients", "MultiOutput", "HOOKS", "EngineHooks", "MULTI"]

_ndarray = np.ndarray
_F64 = np.dtype(np.float64)
_levels = itertools.count(1)
#: the shape recorded for a node with several outputs
MULTI = object()


class EngineHooks:
    """What the layers above the engine plug into it. The engine imports
    neither tracing nor anomaly detection; they install themselves here when
    imported (``import chainrules`` imports both).

    anomaly:   None, or an object with ``anomaly_mode`` (a ContextVar: is the
               mode on in this context?), ``on_leaf(tape, value)``,
               ``on_record(tape, rule, value, nid)``, ``user_frame()``,
               ``check_pullback(tape, i, g, results)`` and
               ``check_pushforward(tape, i, tangent)``
               (``chainrules.anomaly``).
    transpose: ``transpose(rule, tangents, out_shape, out_dtype, project)``,
               the pushforward of a rule that defines only a pullback
               (``chainrules.transpose.transpose_pullback``).
    """

    __slots__ = ("anomaly", "transpose")

    def __init__(self):
        self.anomaly = None
        self.transpose = None


HOOKS = EngineHooks()
_STRUCT = (ZeroTangent, NoTangent, type(None))


class Gradients:
    """Cotangents of the requested nodes after a backward sweep.

    ``get(node)`` returns the cotangent (``ZeroTangent()`` when the output
    does not depend on the node), ``remove(node)`` pops it without copying,
    ``replace(node, value)`` swaps in a new value and returns the old one.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> g = cr.Gradients({cr.NodeId(0): np.ones(2)})
    >>> g.get(cr.NodeId(0)), g.get(cr.NodeId(1))
    (array([1., 1.]), ZeroTangent())
    """

    __slots__ = ("_store",)

    def __init__(self, store=None):
        self._store = {} if store is None else store

    def get(self, node, default=ZERO):
        return self._store.get(node, default)

    def remove(self, node, default=ZERO):
        return self._store.pop(node, default)

    def replace(self, node, value):
        old = self._store.get(node, ZERO)
        self._store[node] = value
        return old

    def __contains__(self, node):
        return node in self._store

    def __len__(self):
        return len(self._store)

    def __iter__(self):
        return iter(self._store)

    def items(self):
        return self._store.items()

    def __repr__(self):
        return f"Gradients({sorted(int(k) for k in self._store)})"


class Select(ReverseRule):
    """Output ``k`` of a multi-output node."""

    __slots__ = ("parent", "k")
    linear = True

    def __init__(self, parent, k):
        self.parent = parent
        self.k = k

    def inputs(self):
        return (self.parent,)

    def pullback(self, g):
        return [(self.parent, (self.k, g))]

    def pushforward(self, tangents):
        t = tangents[0]
        if isinstance(t, Structural):
            return ZERO
        return t[self.k]


def _meta(value):
    try:
        return value.shape, value.dtype
    except AttributeError:
        a = np.asarray(value)
        return a.shape, a.dtype


class Tape:
    """A recording of rules in topological order.

    Low-level use, for people building their own array types::

        tape = Tape()
        x = tape.leaf(x_value)                 # -> NodeId
        y = tape.record(MyRule(x, ...), y_val)  # rule.inputs() == (x,)
        grads = tape.backward([y], [seed])
        grads.get(x)

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> tape = cr.Tape()
    >>> x = tape.leaf(np.ones(2))
    >>> x
    NodeId(0)
    """

    __slots__ = ("rules", "shapes", "dtypes", "level", "active", "sources", "freed",
                 "__weakref__")

    def __init__(self):
        self.rules = []
        self.shapes = []
        self.dtypes = []
        self.level = next(_levels)
        self.active = True
        # why the rules were dropped (a message), or None while they are there
        self.freed = None
        # anomaly detection: per-node user source lines, None when off
        anomaly = HOOKS.anomaly
        self.sources = [] if anomaly is not None and anomaly.anomaly_mode.get() else None

    def __len__(self):
        return len(self.rules)

    def __repr__(self):
        return f"<Tape level={self.level} nodes={len(self.rules)}>"

    # -- recording ---------------------------------------------------------------
    def leaf(self, value):
        """Add an input node and return its ``NodeId``."""
        shape, dtype = _meta(value)
        nid = NodeId(len(self.rules))
        self.rules.append(None)
        self.shapes.append(shape)
        self.dtypes.append(dtype)
        if self.sources is not None:  # anomaly mode
            HOOKS.anomaly.on_leaf(self, value)
        return nid

    def record(self, rule, value):
        """Append ``rule`` whose primal output is ``value``; return its NodeId.

        Returns ``None`` (and records nothing) when ``value`` is not of an
        inexact dtype: integer and boolean results carry no derivative.
        """
        try:
            dtype = value.dtype
            shape = value.shape
        except AttributeError:
            shape, dtype = _meta(value)
        if dtype is not _F64 and dtype.kind not in "fc":
            return None
        rules = self.rules
        nid = NodeId(len(rules))
        rules.append(rule)
        self.shapes.append(shape)
        self.dtypes.append(dtype)
        if self.sources is not None:  # anomaly mode
            HOOKS.anomaly.on_record(self, rule, value, nid)
        return nid

    def record_multi(self, rule, values):
        """Append a rule with several outputs; return one NodeId per output
        (``None`` for outputs without a derivative)."""
        rules = self.rules
        parent = NodeId(len(rules))
        rules.append(rule)
        self.shapes.append(MULTI)
        self.dtypes.append(len(values))
        if self.sources is not None:
            self.sources.append(HOOKS.anomaly.user_frame())
        return [self.record(Select(parent, k), v) for k, v in enumerate(values)]

    def free(self):
        """Drop every rule and its saved values. Sweeping the tape afterwards
        raises ``GraphFreedError``."""
        n = len(self.rules)
        self.rules = [None] * n
        self.active = False
        if self.freed is None:
            self.freed = "free() was called on it"

    def _check_alive(self):
        if self.freed is not None:
            raise GraphFreedError(
                f"this recording can no longer be differentiated: {self.freed}. Pass "
                "retain_graph=True to sweep a tape more than once, do not call free() "
                "on a recording you still use, or record the function again")

    def _consumed(self, retain_graph):
        if not retain_graph and self.freed is None:
            self.freed = ("a backward sweep without retain_graph=True already dropped "
                          "its rules")

    # -- projection --------------------------------------------------------------
    def _project(self, c, nid, rule, what="cotangent"):
        """``c`` as a tangent of node ``nid``: its shape checked (a mismatch is
        the rule's bug: ``TangentShapeError`` naming it), its dtype cast to the
        node's, the imaginary part dropped for a real node. The one
        validation of every sweep (reverse, forward, forward-over-reverse)."""
        shape = self.shapes[nid]
        if shape is MULTI:
            return c
        dtype = self.dtypes[nid]
        try:
            cshape = c.shape
            cdtype = c.dtype
        except AttributeError:
            if isinstance(c, (int, float, complex)):
                c = np.asarray(c)
                cshape, cdtype = c.shape, c.dtype
            else:
                raise TangentShapeError(
                    f"rule {_rname(rule)} returned a {what} of type "
                    f"{type(c).__name__} for a value of shape {shape} and dtype "
                    f"{dtype}; return an array (or ZeroTangent())") from None
        if cshape != shape:
            raise TangentShapeError(
                f"rule {_rname(rule)} returned a {what} of shape {cshape} for "
                f"a value of shape {shape}; reduce broadcast axes with "
                f"chainrules.unbroadcast(g, x.shape)")
        if cdtype != dtype:
            if cdtype.kind == "c" and dtype.kind != "c":
                c = np.real(c)
            if cdtype.kind not in "fc":
                raise TangentShapeError(
                    f"rule {_rname(rule)} returned a {what} of dtype {cdtype} "
                    f"for a value of dtype {dtype}")
            c = c.astype(dtype)
        elif type(c) is not _ndarray and type(c).__name__ != "Traced" and not is_array(c):
            c = np.asarray(c)  # a NumPy scalar; other array types stay as they are
        return c

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
        self._check_alive()
        self._consumed(retain_graph)
        rules = self.rules
        shapes = self.shapes
        dtypes = self.dtypes
        n = len(rules)
        # anomaly checks and partial backward (outside the loop)
        if check is None and self.sources is not None:
            check = HOOKS.anomaly.check_pullback
        if wrt is not None:
            rules = self._prune(wrt, outputs, retain_graph)
        cots = [None] * n
        owned = bytearray(n)
        for o, s in zip(outputs, seeds):
            if o is None or isinstance(s, Structural):
                continue
            s = self._project(s, o, "seed")
            cots[o] = s if cots[o] is None else cots[o] + s
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
                if _add_at(cots, owned, 1, x, index, g, shapes[x], dtypes[x]):
                    if not retain_graph:
                        rules[i] = None
                    continue
            try:
                pairs = rule.pullback(g)
            except Exception as e:
                _note(e, rule, i, "pullback")
                raise
            if check is not None:
                check(self, i, g, pairs)
            if not retain_graph:
                rules[i] = None
            for nid, c in pairs:
                tc = type(c)
                if tc is _ndarray:
                    if c.shape != shapes[nid] or (c.dtype is not dtypes[nid]
                                                  and c.dtype != dtypes[nid]):
                        c = self._project(c, nid, rule)
                elif tc in _STRUCT:
                    continue
                elif shapes[nid] is MULTI:
                    _accumulate_slot(cots, nid, dtypes[nid], c)
                    continue
                else:
                    c = self._project(c, nid, rule)
                if cots[nid] is None:  # the common case, without a call
                    cots[nid] = c
                else:
                    _accumulate(cots, owned, 1, nid, c)
        return Gradients(store)

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
                _note(e, rule, i, "pushforward")
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
        self._check_alive()
        self._consumed(retain_graph)
        rules = self.rules
        shapes = self.shapes
        dtypes = self.dtypes
        n = len(rules)
        # anomaly checks and partial backward (outside the loop)
        if check is None and self.sources is not None:
            check = HOOKS.anomaly.check_pullback
        if wrt is not None:
            rules = self._prune(wrt, outputs, retain_graph)
        cots = [None] * n
        dots = [None] * n
        owned = bytearray(n)  # bit 1: cots[i] is our own buffer, bit 2: dots[i]
        for o, s, sd in zip(outputs, seeds, seed_tangents):
            if o is None:
                continue
            if not isinstance(s, Structural):
                s = self._project(s, o, "seed")
                cots[o] = s if cots[o] is None else cots[o] + s
            if not isinstance(sd, Structural) and sd is not None:
                sd = self._project(sd, o, "seed")
                dots[o] = sd if dots[o] is None else dots[o] + sd
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
                        or _add_at(cots, owned, 1, x, index, g, shape, dtype)):
                    g = ZERO  # done (or not wanted)
                if isinstance(gd, Structural) or _add_at(dots, owned, 2, x, index, gd,
                                                          shape, dtype):
                    gd = ZERO
                if g is ZERO and gd is ZERO:
                    if not retain_graph:
                        rules[i] = None
                    continue
                # what _add_at could not take goes through the pullback
            if len(ins) == 1:
                t = tangents[ins[0]]
                ts = (ZERO if t is None else t,)
            else:
                ts = tuple([ZERO if tangents[j] is None else tangents[j] for j in ins])
            try:
                if need is None:
                    triples = rule.pullback_with_tangents(g, gd, ts)
                else:
                    skip = [j for j in ins if not need[j]]
                    if skip and getattr(rule, "cot_skippable", False):
                        triples = rule.pullback_with_tangents(g, gd, ts, skip=skip)
                    else:
                        triples = rule.pullback_with_tangents(g, gd, ts)
            except Exception as e:
                _note(e, rule, i, "pullback_with_tangents")
                raise
            if check is not None:
                check(self, i, g, triples)
            if not retain_graph:
                rules[i] = None
            for nid, c, cd in triples:
                if need is not None and not need[nid]:
                    c = None  # nothing reads it (a rule without skip= computed it)
                if shapes[nid] is MULTI:
                    for buf, val in ((cots, c), (dots, cd)):
                        if type(val) not in _STRUCT and not isinstance(val[1], Structural):
                            _accumulate_slot(buf, nid, dtypes[nid], val)
                    continue
                for buf, bit, val in ((cots, 1, c), (dots, 2, cd)):
                    if type(val) in _STRUCT:
                        continue
                    if type(val) is not _ndarray or val.shape != shapes[nid] or (
                            val.dtype is not dtypes[nid] and val.dtype != dtypes[nid]):
                        val = self._project(val, nid, rule)
                    _accumulate(buf, owned, bit, nid, val)
        return Gradients(store), Gradients(dstore)


def _accumulate(buf, owned, bit, nid, c):
    """``buf[nid] += c`` for a projected cotangent ``c``: in place into a
    buffer the sweep owns (bit ``bit`` of ``owned[nid]``), else into a new
    array that it then owns. A rule's own arrays are never written to."""
    prev = buf[nid]
    if prev is None:
        buf[nid] = c
    elif owned[nid] & bit and type(c) is _ndarray:
        np.add(prev, c, out=prev)
    else:
        s = prev + c
        buf[nid] = s
        # a traced sum (nested differentiation) is not a buffer we may write to
        owned[nid] = owned[nid] | bit if type(s) is _ndarray else owned[nid] & ~bit


def _accumulate_slot(buf, nid, n_out, kc):
    """Add ``kc = (k, c)``, the cotangent of output ``k`` of a multi-output
    node, into its slot list."""
    k, c = kc
    slots = buf[nid]
    if slots is None:
        slots = buf[nid] = [None] * n_out
    slots[k] = c if slots[k] is None else slots[k] + c


def _add_at(buf, owned, bit, nid, index, g, shape, dtype):
    """Add ``g`` into ``buf[nid]`` at the basic ``index`` (the pullback of a
    gather ``x[index]``), in place when the engine owns the buffer. Returns
    False, doing nothing, when it cannot (the caller uses the pullback)."""
    if (type(g) is not _ndarray and not isinstance(g, np.generic)) or (
            g.dtype is not dtype and g.dtype != dtype):
        return False
    prev = buf[nid]
    if prev is None:
        acc = np.zeros(shape, dtype)
    elif type(prev) is _ndarray:
        acc = prev if owned[nid] & bit else np.array(prev, dtype)
    else:
        return False
    target = acc[index]
    if type(target) is _ndarray:  # a view: add in place
        target += g
    else:  # every axis indexed by an int: a scalar copy
        acc[index] = target + g
    buf[nid] = acc
    owned[nid] |= bit
    return True


def _rname(rule):
    return rule if isinstance(rule, str) else rule_name(rule)


def _note(exc, rule, i, method):
    """Name the rule that raised, on the exception itself (it propagates
    unchanged otherwise)."""
    add = getattr(exc, "add_note", None)
    if add is None or getattr(exc, "_chainrules_noted", False):
        return
    add(f"raised by {method} of rule {type(rule).__qualname__} for the operation "
        f"{rule_name(rule)} (node {int(i)} of its tape)")
    try:
        exc._chainrules_noted = True
    except AttributeError:  # pragma: no cover - exceptions with __slots__
        pass
