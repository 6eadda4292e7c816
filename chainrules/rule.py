"""The rule protocol: ``NodeId``, ``ReverseRule`` and the forward protocol.

A rule is the record of one operation applied to traced values. It knows

* ``inputs()``: the ``NodeId`` of each traced argument it depends on;
* ``pullback(cotangent)``: a list of ``(NodeId, cotangent)`` pairs, the
  vector-Jacobian product for each input;
* ``pushforward(tangents)``: the Jacobian-vector product; ``tangents`` is a
  tuple aligned with ``inputs()``, entries may be ``ZeroTangent()``;
* ``pullback_with_tangents(cotangent, cotangent_tangent, tangents)``: the
  pullback together with its directional derivative, as a list of
  ``(NodeId, cotangent, tangent_of_cotangent)`` triples. ``tangents`` are
  the forward tangents of the inputs (aligned with ``inputs()``); the
  second-order term of the rule needs them. This is the fast path of
  forward-over-reverse Hessian-vector products.

Optional, for the engine's speed only: a rule whose pullback is "zeros of
the input's shape with the cotangent placed at a basic index" (``x[1:]``,
``x[i]``, ``x[..., None]``) may set ``gather_index`` to that index; the
engine then adds the cotangent into the input's own cotangent buffer at the
index instead of materialising the zeros (a loop over ``x[i]`` costs
O(1) per element, not O(x.size)). ``pullback`` must still be defined.
Likewise ``takes_output_tangent = True`` asks for the output's tangent as
``pullback_with_tangents(..., out_tangent=...)`` in HVP sweeps.

Only ``inputs`` and ``pullback`` are required. ``pushforward`` is derived
from ``pullback`` (a pullback is linear in its cotangent, so the engine can
transpose it). A rule that is linear in its inputs can set ``linear = True``
and gets ``pullback_with_tangents`` for free. Any other rule without a
hand-written ``pullback_with_tangents`` gets its second order by *replay*
(``second_order_by_replay``): the tracer keeps the maker that made it and
its arguments, and the HVP sweep makes the rule again on forward-traced
inputs and differentiates its pullback (``chainrules.second_order``). The
user's function is never traced again; a pullback that cannot be traced
raises ``HvpNotSupported`` naming the rule.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from .errors import HvpNotSupported

__all__ = ["NodeId", "ReverseRule", "MultiOutput", "rule_name", "op_name"]


class NodeId(int):
    """Identifier of a node on a tape (its position in recording order).

    Examples
    --------
    >>> import chainrules as cr
    >>> cr.NodeId(3), int(cr.NodeId(3))
    (NodeId(3), 3)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodeId({int(self)})"


#: ``NODE_IDS[n] == NodeId(n)``, made once and shared by every tape (and
#: thread): recording an operation indexes this list instead of constructing
#: an int subclass (about 17 against 130 ns). Only ``node_ids`` grows it.
NODE_IDS: list[NodeId] = []
_grow = threading.Lock()


def node_ids(n: int) -> NodeId:
    """``NodeId(n)`` from ``NODE_IDS``, growing the table first if needed.

    One thread grows it at a time, and each growth appends a finished list
    in one step, so a reader in another thread sees either the old table or
    the new one: every entry it can index is right."""
    if n >= len(NODE_IDS):
        with _grow:
            k = len(NODE_IDS)
            if n >= k:
                NODE_IDS.extend([NodeId(i) for i in range(k, max(n + 1, 2 * k, 1024))])
    return NODE_IDS[n]


class MultiOutput:
    """Wrap the output of a rule with several outputs (a tuple or list).

    Examples
    --------
    >>> import chainrules as cr
    >>> cr.MultiOutput((1.0, 2.0)).values
    (1.0, 2.0)
    """

    __slots__ = ("values",)

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values


#: the rule classes whose second order is found by replay: those that define
#: no ``pullback_with_tangents`` and are not ``linear`` (see
#: ``ReverseRule.second_order_by_replay``). The tracer tests ``type(rule) in
#: REPLAY_TYPES`` when it records, one set lookup.
REPLAY_TYPES: set[type[ReverseRule]] = set()


class ReverseRule:
    """Base class of rules. Subclasses define ``inputs`` and ``pullback``.

    Examples
    --------
    >>> import chainrules as cr
    >>> class Identity(cr.ReverseRule):
    ...     def __init__(self, x_id):
    ...         self.x_id = x_id
    ...     def inputs(self):
    ...         return (self.x_id,)
    ...     def pullback(self, g):
    ...         return [(self.x_id, g)]
    >>> Identity(cr.NodeId(0)).pullback(1.0)
    [(NodeId(0), 1.0)]
    """

    __slots__ = ()

    #: the basic index of a gather ``x[index]`` (see the module docstring)
    gather_index = None

    #: set to True when ``pullback_with_tangents`` accepts ``out_tangent=``:
    #: the engine then passes the output's tangent from the forward sweep of
    #: the same HVP (when it computed one), for rules whose second-order
    #: term needs it and would otherwise compute it again
    takes_output_tangent = False

    #: set to True when ``pullback_with_tangents`` accepts ``skip=`` (the
    #: input ids whose first-order cotangent nobody reads): HVPs pass it
    cot_skippable = False

    #: set to True when the rule also defines ``pullback_batched(G)``,
    #: ``pushforward_batched(tangents)`` and ``pullback_with_tangents_batched(
    #: g, GD, tangents, ...)``: the same maps applied to a batch of directions
    #: at once, each batched value with one leading axis more than the value
    #: it belongs to (``(k,) + shape``; structural zeros stay structural). In
    #: ``pullback_with_tangents_batched`` the cotangent ``g`` is shared by the
    #: batch and unbatched (so are the first-order results); ``GD`` and the
    #: input tangents are batched. Without them the engine calls the
    #: unbatched methods once per direction (``chainrules.sweep_batch``).
    batched = False

    #: set to True when the rule's output is linear in its traced inputs. The
    #: engine relies on it: a linear rule's ``pullback_with_tangents`` reads
    #: neither the input tangents nor the first-order cotangent for its
    #: second-order term (it has none), so an HVP skips computing those that
    #: only linear rules would read (``Tape.tangent_demand``).
    linear = False

    #: True when the rule's second order is found by replay: the tracer keeps
    #: the maker that made the rule and its arguments, and HVP sweeps make the
    #: rule again on forward-traced inputs and differentiate its pullback.
    #: Set for every subclass that defines no ``pullback_with_tangents`` and
    #: is not ``linear``; a class may set it itself (True when its own
    #: ``pullback_with_tangents`` would raise ``HvpNotSupported``).
    second_order_by_replay = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "second_order_by_replay" not in cls.__dict__:
            # ``linear`` may be a property (decided per rule): replay unless
            # the class says True outright
            cls.second_order_by_replay = (
                cls.pullback_with_tangents is ReverseRule.pullback_with_tangents
                and cls.linear is not True)
        if cls.second_order_by_replay:
            REPLAY_TYPES.add(cls)
        else:
            REPLAY_TYPES.discard(cls)

    @property
    def name(self) -> str:
        """The name used in messages: the operation's (``self.op``) when the
        rule has one, else the class name. Subclasses may override it."""
        op = getattr(self, "op", None)
        if op is not None:
            return op_name(op)
        return type(self).__name__

    def inputs(self) -> Sequence[NodeId]:
        """The ``NodeId`` of each traced argument the rule depends on."""
        raise NotImplementedError(f"{type(self).__name__} must define inputs()")

    def pullback(self, cotangent: Any) -> Sequence[tuple[NodeId, Any]]:
        """``[(NodeId, cotangent), ...]``: the vector-Jacobian product for each
        input (an input left out has a zero cotangent)."""
        raise NotImplementedError(f"{type(self).__name__} must define pullback()")

    def pushforward(self, tangents: Sequence[Any]) -> Any:
        # Not overridden: the engine derives the pushforward by transposing the
        # pullback (it knows the output's shape and dtype, which a rule need
        # not). Calling this directly on such a rule is a usage error.
        raise NotImplementedError(
            f"{rule_name(self)} defines no pushforward; the engine derives one from "
            "its pullback during Tape.forward (call chainrules.transpose."
            "transpose_pullback(rule, tangents, out_shape, out_dtype) to do it by hand)")

    def pullback_with_tangents(self, cotangent: Any, cotangent_tangent: Any,
                               tangents: Sequence[Any]) -> Sequence[tuple[NodeId, Any, Any]]:
        if self.linear:
            cots = list(self.pullback(cotangent))
            dots = list(self.pullback(cotangent_tangent))
            if len(cots) == len(dots) and all(a[0] == b[0] for a, b in zip(cots, dots)):
                return [(nid, c, d) for (nid, c), (_, d) in zip(cots, dots)]
            # a structurally zero side returns no pairs: keep the other side whole
            return [(nid, c, None) for nid, c in cots] + [(nid, None, d) for nid, d in dots]
        raise HvpNotSupported(
            f"rule {rule_name(self)} cannot carry tangents through its pullback: it "
            "was not recorded by the tracer (which keeps what a replay of it needs); "
            "define pullback_with_tangents(cotangent, cotangent_tangent, tangents), "
            "or set linear = True if the operation is linear"
        )


def rule_name(rule: Any) -> str:
    """A readable name for a rule, for error messages."""
    return getattr(rule, "name", None) or type(rule).__name__


# -- names of operations, for messages ------------------------------------------
def dispatch_target(op: Any) -> Any:
    """The operation traced calls reach for ``op``: a ufunc that SciPy's
    array-API mode (``SCIPY_ARRAY_API=1``) wrapped in a Python function is
    the ufunc itself (the wrapper asks the arguments for their namespace,
    NumPy's for traced values, and calls the ufunc); anything else is
    itself."""
    if not isinstance(op, np.ufunc):
        inner = getattr(op, "__wrapped__", None)
        if isinstance(inner, np.ufunc):
            return inner
    return op


def op_name(op: Any) -> str:
    """A qualified, readable name of an operation, for messages: the public
    path (``numpy.sum``, ``numpy.linalg.solve``, ``scipy.special.erf``)
    rather than the private module that defines it."""
    name = getattr(op, "__name__", None)
    if name is not None:
        for prefix, mod in _PUBLIC_NAMESPACES():
            public = getattr(mod, name, None)
            # SciPy's array-API mode wraps its ufuncs in Python functions
            if public is op or getattr(public, "__wrapped__", None) is op:
                return f"{prefix}.{name}"
    if isinstance(op, np.ufunc):
        return op.__name__
    mod = getattr(op, "__module__", None) or ""
    qual = getattr(op, "__qualname__", None) or name or repr(op)
    parts = mod.split(".")
    public = []
    for p in parts:
        if p.startswith("_"):
            break
        public.append(p)
    if mod.startswith(("numpy", "scipy")) and public:
        mod = ".".join(public)
    return f"{mod}.{qual}" if mod else qual


_SCIPY_NAMESPACES = ("scipy.special", "scipy.linalg")


def _PUBLIC_NAMESPACES() -> list[tuple[str, Any]]:
    """NumPy's public namespaces, and SciPy's where the program has imported
    them (never imported here: SciPy is optional, and slow to import)."""
    import sys

    spaces = [("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft)]
    for name in _SCIPY_NAMESPACES:
        mod = sys.modules.get(name)
        if mod is not None:
            spaces.append((name, mod))
    return spaces
