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

This module owns the tape itself (recording, freeing, projection); the
sweeps are its mixins in ``sweep_reverse.py`` and ``sweep_forward.py``, and
what they share (``MULTI``, ``HOOKS``, ``Gradients``, accumulation) is in
``sweep_common.py``.
"""

from __future__ import annotations

import itertools
import sys
import types
from typing import Any, Sequence

import numpy as np

from .arrays import NOT_ARRAYS, is_array
from .staging import complex_scalar_as_array
from .errors import GraphFreedError, TangentShapeError
from .registry import MadeByUser
from .rule import (NODE_IDS, MultiOutput, NodeId, ReverseRule,  # noqa: F401  (re-exported)
                   node_ids)
from .sweep_common import (CONSUMED, HOOKS, MULTI, EngineHooks, Gradients,  # noqa: F401
                           rule_label)
from .sweep_forward import ForwardSweeps
from .sweep_reverse import ReverseSweeps
from .tangents import ZERO, Structural

__all__ = ["Tape", "Gradients", "MultiOutput", "HOOKS", "EngineHooks", "MULTI", "record"]

_ndarray = np.ndarray
_F64 = np.dtype(np.float64)
_f64 = np.float64
_levels = itertools.count(1)
_new = object.__new__


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

    # a batch of cotangents or tangents is routed the same way
    batched = True
    pullback_batched = pullback
    pushforward_batched = pushforward

    def pullback_with_tangents_batched(self, g, gd, tangents):
        return self.pullback_with_tangents(g, gd, tangents)


#: ``Tape()`` without a first leaf
_NO_LEAF = object()
#: the replays of a tape that keeps none (``Tape.keep_replay`` makes a dict)
_NO_REPLAYS: types.MappingProxyType[int, Any] = types.MappingProxyType({})


def _meta(value):
    try:
        return value.shape, value.dtype
    except AttributeError:
        a = np.asarray(value)
        return a.shape, a.dtype


def record(tape, rule, out, traced=None):
    """Append ``rule``, whose primal output is ``out``, to ``tape``: the one
    place where a node with a rule is recorded (``Tape.record``, and the
    tracer's dispatch, operators, ufuncs and checkpointed segments, which
    pass their class of traced values as ``traced``).

    Returns the node's ``NodeId`` (``traced`` None) or ``out`` traced: an
    instance of ``traced`` with ``value``, ``node`` and ``tape`` set, made
    without a Python-level ``__init__`` (this is the per-operation hot path:
    one call). An output of integer or boolean dtype is not recorded (None,
    or ``out`` itself). ``rule`` None: ``out`` has no derivative and comes
    back as it is, unless it is a ``MadeByUser`` (a rule from a maker outside
    the library: the tape notes that it holds user rules, whose results its
    sweeps verify, and keeps how a rule whose second order is found by
    replay was made; off the hot path). A
    ``MultiOutput`` gives one node per output, traced one by one in their
    container (a namedtuple keeps its fields)."""
    if rule is None:
        if type(out) is not MadeByUser:
            return out
        tape.user_rules = True
        if out.entry is not None:
            tape.keep_replay(out.entry)
        rule, out = out.rule, out.out
    if type(out) is _f64:  # a float64 scalar: its dtype and shape, without reading them
        dtype = _F64
        shape = ()
    else:
        try:
            dtype = out.dtype
            shape = out.shape
        except AttributeError:
            if type(out) is MultiOutput:  # (which has neither)
                return _record_multi(tape, rule, out.values, traced)
            shape, dtype = _meta(out)
    if dtype is not _F64 and dtype.kind not in "fc":
        return None if traced is None else out
    rules = tape.rules
    try:
        nid = NODE_IDS[len(rules)]
    except IndexError:
        nid = node_ids(len(rules))
    rules.append(rule)
    tape.shapes.append(shape)
    tape.dtypes.append(dtype)
    if tape.anomaly:
        HOOKS.anomaly.on_record(tape, rule, out, nid)
    if traced is None:
        return nid
    t = _new(traced)
    t.value = out
    t.node = nid
    t.tape = tape
    return t


def _record_multi(tape, rule, values, traced):
    """``record`` of a rule with several outputs: its own node (shape
    ``MULTI``, the outputs' dtypes as its dtype), then a ``Select`` node per
    output. NodeIds (``traced`` None) or the outputs traced in their
    container."""
    rules = tape.rules
    parent = node_ids(len(rules))
    rules.append(rule)
    tape.shapes.append(MULTI)
    tape.dtypes.append(tuple(_meta(v)[1] for v in values))
    if tape.anomaly:
        tape.sources.append(HOOKS.anomaly.user_frame())
    res = [record(tape, Select(parent, k), v, traced) for k, v in enumerate(values)]
    if traced is None:
        return res
    res = [v if r is None else r for v, r in zip(values, res)]
    if isinstance(values, tuple):  # namedtuples (EighResult, ...) take fields
        return type(values)(*res) if hasattr(values, "_fields") else type(values)(res)
    return res


class Tape(ReverseSweeps, ForwardSweeps):
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

    __slots__ = ("rules", "shapes", "dtypes", "level", "active", "anomaly", "sources",
                 "freed", "replays", "user_rules", "refused", "converted",
                 "__weakref__")

    def __init__(self, first=_NO_LEAF):
        # first: the value (an array or a NumPy scalar) of a first leaf, node
        # 0, recorded as leaf() would (a gradient call of one argument),
        # without the call
        if first is _NO_LEAF:
            self.rules = []
            self.shapes = []
            self.dtypes = []
        else:
            self.rules = [None]
            self.shapes = [first.shape]
            self.dtypes = [first.dtype]
        self.level = next(_levels)
        self.active = True
        # why the rules were dropped (a message), or None while they are there
        self.freed = None
        # anomaly detection: whether it is on for this recording, and then the
        # user's source line of each node (empty when off)
        anomaly = HOOKS.anomaly
        # (anomaly_mode holds a bool: set_anomaly_mode stores bool(enabled))
        self.anomaly = on = anomaly is not None and anomaly.anomaly_mode.get()
        self.sources = []
        # what a replay of a rule without pullback_with_tangents needs, by the
        # rule's NodeId: (rule, maker, ids, args, kwargs) (``keep_replay``);
        # a shared read-only empty mapping until the first one
        self.replays = _NO_REPLAYS
        # whether a rule from outside the library was recorded: the sweeps
        # then verify what each such rule returns
        self.user_rules = False
        # a refused conversion of one of its values that compiled code may
        # have dropped (``close`` raises it)
        self.refused = None
        # the last refused conversion of one of its values to a number or a
        # plain array (``close`` raises it when NumPy raised from it)
        self.converted: BaseException | None = None
        if on and first is not _NO_LEAF:
            anomaly.on_leaf(self, first)

    def close(self) -> None:
        """End the recording of the function's own operations (a
        transformation calls it when the function returns or raises).

        Raises the refusal of a conversion asked for by SciPy's compiled
        code (``float()`` of a traced value in a solver's loop) when that
        refusal did not reach the caller. Such code may leave the error
        pending and go on; the interpreter's garbage collector, running in
        between, then reports the pending error as "ignored" and clears it,
        and the solver continues with a made-up number. Whatever happened
        after it (a different exception, or a result without the
        derivative), the refusal is what the caller gets."""
        self.active = False
        if self.converted is not None:
            converted, self.converted = self.converted, None
            e = sys.exc_info()[1]
            if e is not None and e is not converted and e.__cause__ is converted:
                # NumPy raised an error of its own from a refused conversion
                # (``out[i] = x`` into a plain array: "setting an array
                # element with a sequence"); the refusal says what to do
                raise converted
        if self.refused is not None:
            refused, self.refused = self.refused, None
            e, seen = sys.exc_info()[1], set()
            while e is not None and id(e) not in seen:
                if e is refused:  # on its way to the caller already
                    return
                seen.add(id(e))
                e = e.__cause__ or e.__context__
            raise refused

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"<Tape level={self.level} nodes={len(self.rules)}>"

    # -- recording ---------------------------------------------------------------
    def leaf(self, value: Any) -> NodeId:
        """Add an input node and return its ``NodeId``."""
        try:
            shape = value.shape
            dtype = value.dtype
        except AttributeError:
            shape, dtype = _meta(value)
        rules = self.rules
        n = len(rules)
        try:
            nid = NODE_IDS[n]
        except IndexError:
            nid = node_ids(n)
        rules.append(None)
        self.shapes.append(shape)
        self.dtypes.append(dtype)
        if self.anomaly:
            HOOKS.anomaly.on_leaf(self, value)
        return nid

    def record(self, rule: ReverseRule, value: Any) -> NodeId | None:
        """Append ``rule`` whose primal output is ``value``; return its NodeId.

        Returns ``None`` (and records nothing) when ``value`` is not of an
        inexact dtype: integer and boolean results carry no derivative.
        The sweeps verify what the rules recorded this way return.
        """
        self.user_rules = True
        return record(self, rule, value)

    def record_multi(self, rule: ReverseRule, values: Sequence[Any]) -> list[NodeId | None]:
        """Append a rule with several outputs; return one NodeId per output
        (``None`` for outputs without a derivative). The rule's own node has
        the shape ``MULTI`` and, as its dtype, the tuple of its outputs'
        dtypes; each output is a ``Select`` node of its own."""
        self.user_rules = True
        return _record_multi(self, rule, values, None)

    def keep_replay(self, entry: tuple[Any, ...]) -> None:
        """Keep how a rule, about to be recorded as the next node, was made:
        ``entry`` is ``(rule, maker, ids, args, kwargs, out)``: the rule and
        its output ``out`` made by ``maker(ids, *args, **kwargs)``. Its second order is found by making
        it again on forward-traced inputs (``second_order_by_replay``). The
        sweep uses an entry only while ``rule`` itself is at its node."""
        if self.replays is _NO_REPLAYS:
            self.replays = {}
        self.replays[len(self.rules)] = entry

    def free(self) -> None:
        """Drop every rule and its saved values. Sweeping the tape afterwards
        raises ``GraphFreedError``."""
        n = len(self.rules)
        self.replays = _NO_REPLAYS
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
            self.freed = CONSUMED

    # -- projection --------------------------------------------------------------
    def _project(self, c, nid, rule, what="cotangent", batch=None):
        """``c`` as a tangent of node ``nid``: its shape checked (a mismatch is
        the rule's bug: ``TangentShapeError`` naming it), its dtype cast to the
        node's, the imaginary part dropped for a real node. The one
        validation of every sweep (reverse, forward, forward-over-reverse).
        ``batch``: ``c`` holds that many directions (a leading axis)."""
        shape = self.shapes[nid]
        if shape is MULTI:
            return c
        if batch is not None:
            shape = (batch,) + shape
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
                    f"rule {rule_label(rule)} returned a {what} of type "
                    f"{type(c).__name__} for a value of shape {shape} and dtype "
                    f"{dtype}; return an array (or ZeroTangent())") from None
        if cshape != shape:
            raise TangentShapeError(
                f"rule {rule_label(rule)} returned a {what} of shape {cshape} for "
                f"a value of shape {shape}; reduce broadcast axes with "
                f"chainrules.unbroadcast(g, x.shape)")
        if cdtype != dtype:
            if cdtype.kind == "c" and dtype.kind != "c":
                c = np.real(c)
            if cdtype.kind not in "fc":
                raise TangentShapeError(
                    f"rule {rule_label(rule)} returned a {what} of dtype {cdtype} "
                    f"for a value of dtype {dtype}")
            c = c.astype(dtype)
        elif type(c) is not _ndarray and type(c) not in NOT_ARRAYS and not is_array(c):
            # a NumPy scalar; other array types, and traced values (nested
            # differentiation: NOT_ARRAYS), stay as they are
            c = np.asarray(c)
        elif not cshape and cdtype.kind == "c":
            c = complex_scalar_as_array(c)  # (staged: as above)
        return c
