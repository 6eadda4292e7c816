"""What the engine's sweeps share: the marker of a node with several
outputs (``MULTI``), the hooks the layers above plug into the engine
(``HOOKS``), the store of swept cotangents (``Gradients``), accumulation of
cotangents into buffers the sweep owns, and naming the rule that failed.
"""

from __future__ import annotations

import math
from typing import Any, ItemsView, Iterator

import numpy as np

from .arrays import computes_eagerly
from .errors import RuleError
from .rule import NodeId, rule_name
from .tangents import ZERO, NoTangent, ZeroTangent

_ndarray = np.ndarray
_F64 = np.dtype(np.float64)
_f64 = np.float64
#: the shape recorded for a node with several outputs
MULTI = object()
#: the types of structural (never materialised) cotangents
STRUCT = (ZeroTangent, NoTangent, type(None))
#: why a tape's rules are gone after a reverse sweep that did not retain them
CONSUMED = "a backward sweep without retain_graph=True already dropped its rules"


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
    replay:    ``replay(entry, g, gd, tangents)``, the ``(NodeId, cotangent,
               tangent)`` triples of a rule whose second order is found by
               replay (``Tape.keep_replay``'s entry; ``tangents`` by traced
               argument) (``chainrules.second_order.replay``).
    """

    __slots__ = ("anomaly", "transpose", "replay")

    def __init__(self):
        self.anomaly = None
        self.transpose = None
        self.replay = None


HOOKS = EngineHooks()


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

    def __init__(self, store: dict[NodeId, Any] | None = None) -> None:
        self._store = {} if store is None else store

    def get(self, node: NodeId, default: Any = ZERO) -> Any:
        return self._store.get(node, default)

    def remove(self, node: NodeId, default: Any = ZERO) -> Any:
        return self._store.pop(node, default)

    def replace(self, node: NodeId, value: Any) -> Any:
        old = self._store.get(node, ZERO)
        self._store[node] = value
        return old

    def __contains__(self, node: object) -> bool:
        return node in self._store

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[NodeId]:
        return iter(self._store)

    def items(self) -> ItemsView[NodeId, Any]:
        return self._store.items()

    def __repr__(self) -> str:
        return f"Gradients({sorted(int(k) for k in self._store)})"


def _staged_buffer(v):
    """Whether ``v`` is an array of a type other than ndarray that computes
    eagerly (a staged value of ``cr.jit``) with at least one axis: one that
    in-place writes can go into (a 0-d one may hold an immutable scalar)."""
    return type(v) is not _ndarray and computes_eagerly(v) and v.ndim > 0


def accumulate(buf, owned, bit, nid, c):
    """``buf[nid] += c`` for a projected cotangent ``c``: in place into a
    buffer the sweep owns (bit ``bit`` of ``owned[nid]``), else into a new
    array that it then owns. A rule's own arrays are never written to."""
    prev = buf[nid]
    if prev is None:
        buf[nid] = c
    elif owned[nid] & bit and (type(c) is _ndarray or computes_eagerly(c)
                               and _staged_buffer(prev)):
        np.add(prev, c, out=prev)
    else:
        s = prev + c
        buf[nid] = s
        # a traced sum (nested differentiation) is not a buffer we may write to
        owned[nid] = owned[nid] | bit if type(s) is _ndarray or _staged_buffer(s) \
            else owned[nid] & ~bit


def accumulate_slot(buf, nid, out_dtypes, kc):
    """Add ``kc = (k, c)``, the cotangent of output ``k`` of a multi-output
    node (whose outputs have the dtypes ``out_dtypes``), into its slot list."""
    k, c = kc
    slots = buf[nid]
    if slots is None:
        slots = buf[nid] = [None] * len(out_dtypes)
    slots[k] = c if slots[k] is None else slots[k] + c


def add_at(buf, owned, bit, nid, index, g, shape, dtype):
    """Add ``g`` into ``buf[nid]`` at the basic ``index`` (the pullback of a
    gather ``x[index]``), in place when the engine owns the buffer. Returns
    False, doing nothing, when it cannot (the caller uses the pullback)."""
    tg = type(g)
    if type(index) is int and dtype is _F64 and (tg is _f64 or tg is _ndarray and (
            g.dtype is _F64 and not g.shape)):
        # x[i] of a float64 vector, the common gather of scalar code: the
        # general path below, without its other cases
        prev = buf[nid]
        if prev is None:
            acc = np.zeros(shape, dtype)
        elif type(prev) is _ndarray:
            acc = prev if owned[nid] & bit else np.array(prev, dtype)
        else:
            return False
        target = acc[index]
        if type(target) is _ndarray:  # (a row of a matrix: a view)
            target += g
        else:  # a float64 scalar: NumPy's scalar sum
            acc[index] = target + (g if tg is _f64 else g[()])
        buf[nid] = acc
        owned[nid] |= bit
        return True
    plain = type(g) is _ndarray or isinstance(g, np.generic)
    if not (plain or computes_eagerly(g)) or (g.dtype is not dtype and g.dtype != dtype):
        return False
    # a staged value (cr.jit) is added into buffers of its own type, so that
    # the writes are recorded
    like = None if plain else g
    prev = buf[nid]
    if prev is None:
        acc = None if type(index) is int else _placed(g, index, shape, dtype, like)
        if acc is not None:
            buf[nid] = acc
            owned[nid] |= bit
            return True
        acc = np.zeros(shape, dtype) if plain else np.zeros_like(g, shape=shape, dtype=dtype)
    elif type(prev) is _ndarray and plain or like is not None and _staged_buffer(prev):
        acc = prev if owned[nid] & bit else (np.array(prev, dtype) if plain else
                                             prev.astype(dtype, copy=True))
    else:
        return False
    target = acc[index]
    # (acc is an ndarray unless g is staged)
    if type(target) is _ndarray or like is not None and _staged_buffer(target):  # a view
        target += g
    else:  # every axis indexed by an int: a scalar copy
        if type(g) is _ndarray and g.dtype is _F64 and not g.shape:
            g = g[()]  # a float64 scalar: NumPy's scalar sum, the ufunc's
        acc[index] = target + g
    buf[nid] = acc
    owned[nid] |= bit
    return True


def _placed(g, index, shape, dtype, like=None):
    """A new buffer of ``shape`` holding ``g`` at a basic ``index`` made of
    slices of step 1 and zeros elsewhere (one pass: zeros are written only
    outside the slices), or None for other indices (the caller adds into
    zeros)."""
    if type(index) is int:  # x[0] of a vector: no slice
        return None
    idx = index if type(index) is tuple else (index,)
    if len(idx) > len(shape) or any(type(s) is not slice or s.step not in (None, 1)
                                    for s in idx):
        return None
    if like is not None and math.prod(shape) < 4096:
        # staged and small: zeros and one write are fewer steps. A copy, as
        # the eager buffer holds g (0.0 + g would turn a -0.0 of g into 0.0)
        acc = np.zeros_like(like, shape=shape, dtype=dtype)
        acc[idx] = g
        return acc
    acc = np.empty(shape, dtype) if like is None else np.empty_like(like, shape=shape,
                                                                    dtype=dtype)
    full = slice(None)
    for d, s in enumerate(idx):
        start, stop, _ = s.indices(shape[d])
        stop = max(stop, start)
        pre = (full,) * d
        if start > 0:
            acc[pre + (slice(0, start),)] = 0
        if stop < shape[d]:
            acc[pre + (slice(stop, None),)] = 0
    acc[idx] = g
    return acc


def rule_label(rule):
    return rule if isinstance(rule, str) else rule_name(rule)


def note_failure(exc, rule, i, method):
    """Name the rule that raised, on the exception itself (it propagates
    unchanged otherwise)."""
    if getattr(exc, "_chainrules_noted", False):
        return
    note = (f"raised by {method} of rule {type(rule).__qualname__} for the operation "
            f"{rule_name(rule)} (node {int(i)} of its tape)")
    try:
        add = getattr(exc, "add_note", None)
        if add is not None:
            add(note)
        else:  # Python 3.10: the same list PEP 678's add_note keeps
            exc.__notes__ = list(getattr(exc, "__notes__", ())) + [note]
        exc._chainrules_noted = True
    except AttributeError:  # pragma: no cover - exceptions with __slots__
        pass


#: rule classes of the library itself, whose results the property sweep
#: checks: the sweeps verify the results of every other (user) rule class
_verified_classes: set[type] = set()


def library_rule(cls):
    """True for a rule class defined in chainrules (cached per class)."""
    if cls in _verified_classes:
        return True
    if (getattr(cls, "__module__", "") or "").startswith("chainrules"):
        _verified_classes.add(cls)
        return True
    return False


def verify_results(rule, results, what):
    """A user rule's pullback results, ``(NodeId, cotangent[, tangent])``
    tuples, name only the rule's inputs, each at most as often as it is an
    input (an input left out has a zero cotangent); else ``RuleError``: a
    cotangent for another node would silently land on it."""
    inputs = list(rule.inputs())
    try:
        nids = [r[0] for r in results]
    except (TypeError, IndexError, KeyError):
        raise RuleError(
            f"{rule_name(rule)}.{what} must return a list of (NodeId, cotangent"
            + (", tangent" if what == "pullback_with_tangents" else "")
            + f") tuples, one per input; got {type(results).__name__}") from None
    for nid in nids:
        if nid in inputs:
            inputs.remove(nid)
            continue
        extra = "more cotangents than it has inputs" if nid in rule.inputs() else (
            f"a cotangent for node {nid!r}, which is not one of its inputs")
        raise RuleError(
            f"{rule_name(rule)}.{what} returned {extra} (inputs() = "
            f"{tuple(rule.inputs())!r}, results for {tuple(nids)!r}); return one "
            "(NodeId, cotangent) per input, leaving out only inputs whose cotangent "
            "is zero")
