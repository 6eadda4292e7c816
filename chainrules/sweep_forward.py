"""The forward sweep of a tape (``Tape.forward``: tangents pushed from the
leaves to the outputs), and which tangents and cotangents a reverse sweep
carrying tangents reads (``tangent_demand``, ``cotangent_demand``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

import numpy as np

from .rule import NodeId, ReverseRule
from .sweep_batch import as_batch_of_one, batched_rule, pushforward_sliced, slice_of
from .sweep_common import HOOKS, MULTI, note_failure
from .tangents import ZERO, Structural

_ndarray = np.ndarray


def last_output(outputs):
    """The last node among ``outputs`` (None entries left out), or -1."""
    if len(outputs) == 1:  # a gradient's one output
        o = outputs[0]
        return -1 if o is None else o
    return max((o for o in outputs if o is not None), default=-1)


class ForwardSweeps:
    """The forward sweep of ``chainrules.graph.Tape`` and the demand
    analyses of its sweeps (a mixin of it)."""

    __slots__ = ()

    # what the tape holds (``Tape.__init__``), for the type checker
    rules: list[Any]  # ReverseRule (with the optional batched methods) or None
    shapes: list[Any]
    dtypes: list[Any]
    anomaly: bool
    if TYPE_CHECKING:
        def _check_alive(self) -> None: ...

        def _project(self, c: Any, nid: int, rule: Any, what: str = ...,
                     batch: int | None = ...) -> Any: ...

    # -- what a forward-over-reverse sweep reads ------------------------------------
    def tangent_demand(self, outputs: Sequence[NodeId]) -> bytearray:
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
        start = last_output(outputs)
        for i in range(start, -1, -1):
            rule = rules[i]
            if rule is not None and (need[i] or not rule.linear):
                for j in rule.inputs():
                    need[j] = 1
        return need

    def cotangent_demand(self, outputs: Sequence[NodeId], leaf_cotangents: bool = False,
                         keep: Collection[NodeId] = ()) -> bytearray:
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
        start = last_output(outputs)
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
    def forward(self, leaf_tangents: Mapping[NodeId, Any], start: int = 0,
                needed: bytearray | None = None, check: Callable[..., Any] | None = None,
                batch: int | None = None) -> list[Any]:
        """Push ``leaf_tangents`` ({NodeId: tangent}) through every rule.

        ``needed`` (from ``tangent_demand``) limits the sweep to the nodes
        whose tangents are read. ``check(tape, i, tangent)``, if given, sees
        each pushforward's result before the engine projects it (anomaly mode
        installs one; the rule checker another). ``batch``: the leaf
        tangents hold that many directions (a leading axis), and so does
        every tangent (``chainrules.sweep_batch``). Returns the list of node
        tangents (``None`` where structurally zero or not needed).
        """
        if batch == 1:  # one direction: the unbatched sweep, without batch overheads
            tans = self.forward({k: slice_of(t, 0) for k, t in leaf_tangents.items()}, start,
                                needed, check)
            return [as_batch_of_one(t) for t in tans]
        self._check_alive()
        rules = self.rules
        n = len(rules)
        tans = [None] * n
        for nid, t in leaf_tangents.items():
            if not isinstance(t, Structural):
                tans[nid] = t if batch is None else self._project(t, nid, "seed", "tangent",
                                                                  batch)
        if check is None and self.anomaly:
            check = HOOKS.anomaly.check_pushforward
        for i in range(start, n):
            rule = rules[i]
            if rule is None or (needed is not None and not needed[i]):
                continue
            ins = rule.inputs()
            if len(ins) == 1:  # the common rule: one traced input, no comprehensions
                t = tans[ins[0]]
                if t is None:
                    continue
                ts: Sequence[Any] = (t,)
            else:
                ts = [tans[j] for j in ins]
                if all(t is None for t in ts):
                    continue
                ts = tuple(ZERO if t is None else t for t in ts)
            try:
                if batch is None:
                    t = self._pushforward(rule, ts, i)
                elif batched_rule(rule):
                    t = rule.pushforward_batched(ts)
                else:
                    t = pushforward_sliced(self, rule, i, ts, batch)
            except Exception as e:
                note_failure(e, rule, i, "pushforward")
                raise
            if t is None or isinstance(t, Structural):
                continue
            if check is not None:
                check(self, i, t)
            shape = self.shapes[i]
            if shape is not MULTI and (batch is not None or type(t) is not _ndarray
                                       or t.shape != shape or (t.dtype is not self.dtypes[i]
                                                               and t.dtype != self.dtypes[i])):
                t = self._project(t, i, rule, "tangent", batch)
            tans[i] = t
        return tans

    def _pushforward(self, rule, ts, i):
        if type(rule).pushforward is ReverseRule.pushforward:
            return HOOKS.transpose(rule, ts, self.shapes[i], self.dtypes[i],
                                   project=lambda c, nid: self._project(c, nid, rule))
        return rule.pushforward(ts)
