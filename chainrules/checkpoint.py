"""Checkpointing: trade compute for memory by recomputing a segment in the
backward pass instead of storing its intermediate values.

``checkpoint(f, policy=...)(*args)`` behaves like ``f(*args)``. Under
differentiation it records a *single* node on the tape, a
``CheckpointRule``, which keeps only the segment's inputs (and, with the
``"dots"`` policy, the outputs of its expensive operations). Its pullback
traces ``f`` again on a fresh inner tape and sweeps it backwards; its
pushforward and ``pullback_with_tangents`` do the same with a tangent
sweep, so ``jvp``, ``hvp`` and ``grad`` of ``grad`` go through checkpoints.
The recomputation does the same arithmetic in the same order, so
gradients and HVPs equal those of the plain function (bit for bit when the
segment's inputs are not also used after the segment; otherwise only the
order in which cotangent contributions are added differs).

Policies:

* ``"nothing"`` (default): save nothing inside the segment; recompute it all.
* ``"everything"``: save every intermediate: ``f`` is recorded as usual
  (no recomputation; useful to switch checkpointing off).
* ``"dots"``: save the outputs of expensive operations (``matmul``,
  ``dot``, ``einsum``, ``tensordot``, ``inner``, ``outer``, ``kron``,
  ``numpy.linalg.*``); the recomputation reuses them and recomputes only
  the cheap elementwise work in between.
* a callable ``policy(op) -> bool``: save the outputs of the operations
  (NumPy ufuncs or functions) for which it returns True.

``f`` must be deterministic (same operations on the same values each time
it runs), as with any recomputation; ``"dots"`` raises if the recomputation
calls different expensive operations, or a different number of them.

Closures: ``f`` may use values being differentiated that are not its
arguments (``W`` in ``lambda x: np.tanh(W @ x)``). Its first run, under a
closure capture (``capture.py``), finds them: each becomes a leaf of the
run's own tape and an input of the ``CheckpointRule``, after the traced
arguments, so the pullback returns their cotangents and the HVP sweep
carries their tangents. The recomputations convert them the same way. A
result that still depends on an enclosing traced value through a path the
capture cannot see raises ``UntraceableError`` rather than give a wrong
derivative.
"""

from __future__ import annotations

import contextvars
import functools
import math
from typing import Any, Callable, Iterable, Literal, ParamSpec, TypeVar, Union, overload

import numpy as np

from . import pytree
from .transformed import Transformed
from .errors import AutodiffError, UntraceableError
from .guards import treat_as_ndarray
from .graph import Tape
from .rule import MultiOutput, ReverseRule
from .tangents import ZERO, Structural
from .capture import FIXED, LEAVES, Capture, converted, current
from .tracing import Traced, record, top_tape

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointRule", "dots_saveable",
           "CheckpointPolicy"]

P = ParamSpec("P")
R = TypeVar("R")

# NumPy's ufuncs are typed with overloads (scalar first, then arrays); a type
# checker that gives a ParamSpec the first overload only (mypy) would reject
# ``checkpoint(np.tanh)(x)`` for an array ``x``, so a ufunc keeps no signature here.

#: what ``checkpoint`` saves inside a segment: a named policy, or a callable
#: ``policy(op) -> bool`` naming the operations whose outputs to save
CheckpointPolicy = Union[Literal["nothing", "everything", "dots"], Callable[[Any], bool]]

_POLICIES = ("nothing", "everything", "dots")

_EXPENSIVE = {np.dot, np.einsum, np.tensordot, np.inner, np.vdot, np.outer, np.kron,
              np.matmul}


def dots_saveable(op: Any) -> bool:
    """The ``"dots"`` policy: True for matmul/dot/einsum/tensordot/linalg."""
    if op in _EXPENSIVE:
        return True
    mod = getattr(op, "__module__", None) or ""
    return mod.startswith("numpy.linalg")


# -- the "save these outputs" machinery ------------------------------------------
class _Saver:
    """Saves (record) or hands back (replay) the outputs of chosen ops."""

    __slots__ = ("wants", "saved", "replay", "pos")

    def __init__(self, wants, saved=None):
        self.wants = wants
        self.replay = saved is not None
        self.saved = [] if saved is None else saved
        self.pos = 0

    def run(self, op, compute):
        if not self.replay:
            out = compute()
            self.saved.append((op, _unseg(out)))
            return _seg(out)
        if self.pos >= len(self.saved):
            raise AutodiffError(
                f"checkpoint: the recomputation called {getattr(op, '__name__', op)} "
                "more often than the first run; the checkpointed function must be "
                "deterministic (same operations in the same order)")
        sop, val = self.saved[self.pos]
        if sop is not op:
            raise AutodiffError(
                f"checkpoint: the recomputation called {getattr(op, '__name__', op)} "
                f"where the first run called {getattr(sop, '__name__', sop)}; the "
                "checkpointed function must be deterministic")
        self.pos += 1
        return _seg(val)


# the savers of the segments running in this context (thread / asyncio
# task), innermost last: the innermost one intercepts. A context variable, so
# that threads differentiating checkpointed functions at once never see each
# other's savers.
_savers = contextvars.ContextVar("chainrules_checkpoint_savers", default=())


def _active_saver():
    stack = _savers.get()
    return stack[-1] if stack else None


def _push_saver(saver):
    return _savers.set(_savers.get() + (saver,))


def _seg(v):
    if type(v) is np.ndarray:
        return v.view(_Seg)
    if isinstance(v, tuple):
        return tuple(_seg(x) for x in v)
    return v


def _unseg(v):
    """``v`` with every segment view (``_Seg``) in it a plain ndarray again."""
    if isinstance(v, _Seg):
        return v.view(np.ndarray)
    if type(v) is list or type(v) is tuple:
        return type(v)(_unseg(x) for x in v)
    return v


@treat_as_ndarray
class _Seg(np.ndarray):
    """A plain ndarray inside a checkpointed segment under a saving policy:
    its NumPy calls let the active ``_Saver`` save or replay expensive
    outputs. Outside a segment run it behaves as (and returns) ndarray."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_unseg(i) for i in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_unseg(o) for o in kwargs["out"])
        saver = _active_saver()
        if saver is None:
            return getattr(ufunc, method)(*inputs, **kwargs)
        if method == "__call__" and saver.wants(ufunc):
            return saver.run(ufunc, lambda: ufunc(*inputs, **kwargs))
        return _seg(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        args = tuple(_unseg(a) for a in args)
        kwargs = {k: _unseg(v) for k, v in kwargs.items()}
        saver = _active_saver()
        if saver is None:
            return func(*args, **kwargs)
        if saver.wants(func):
            return saver.run(func, lambda: func(*args, **kwargs))
        return _seg(func(*args, **kwargs))


# -- the rule ------------------------------------------------------------------
class CheckpointRule(ReverseRule):
    """One recorded node standing for a whole segment ``fn(*args, **kwargs)``.

    Keeps the segment's argument leaves (traced ones unwrapped), the values
    of the enclosing traced values it captured (closures, globals), the
    capture in effect when it was recorded and, under a saving policy, the
    saved outputs; every sweep recomputes the segment on a fresh inner tape,
    where arguments and captured values are leaves. Its inputs are the
    traced arguments' nodes, then the captured values' nodes."""

    __slots__ = ("fn", "treedef", "leaves", "traced_pos", "in_ids", "n_out", "multi",
                 "wants", "saved", "cap_values", "level", "parent")

    def __init__(self, fn, treedef, leaves, traced_pos, in_ids, n_out, multi, wants,
                 saved, cap_values=(), level=None, parent=None):
        self.fn = fn
        self.treedef = treedef
        self.leaves = leaves
        self.traced_pos = traced_pos
        self.in_ids = in_ids
        self.n_out = n_out
        self.multi = multi
        self.wants = wants
        self.saved = saved
        self.cap_values = cap_values
        self.level = level  # the level of the tape the rule is recorded on
        self.parent = parent

    @property
    def name(self):
        return f"checkpoint({_fn_name(self.fn)})"

    def inputs(self):
        return self.in_ids

    def _recompute(self):
        tape = Tape()
        saver = None if self.saved is None else _Saver(self.wants, self.saved)
        cap = Capture(tape.level, FIXED, self.parent, level=self.level, name=self.name)
        leaves = list(self.leaves)
        ids = []
        values = [leaves[k] for k in self.traced_pos] + list(self.cap_values)
        for i, (v, node) in enumerate(zip(values, self.in_ids)):
            if saver is not None and type(v) is np.ndarray:
                v = v.view(_Seg)
            nid = tape.leaf(v)
            ids.append(nid)
            leaf = Traced(v, nid, tape)
            cap.memo.setdefault((self.level, node), leaf)
            if i < len(self.traced_pos):
                leaves[self.traced_pos[i]] = leaf
        args, kwargs = pytree.unflatten(self.treedef, leaves)
        token = _push_saver(saver) if saver is not None else None
        try:
            out = cap.run(self.fn, *args, **kwargs)
        finally:
            tape.close()
            if token is not None:
                _savers.reset(token)
        out_leaves = pytree.flatten(out)[0]
        if len(out_leaves) != self.n_out:
            raise AutodiffError(
                f"{self.name}: the recomputation returned {len(out_leaves)} values "
                f"where the first run returned {self.n_out}; the checkpointed "
                "function must be deterministic")
        if saver is not None and saver.pos != len(saver.saved):
            raise AutodiffError(
                f"{self.name}: the recomputation made fewer expensive calls than the "
                "first run; the checkpointed function must be deterministic")
        for o in out_leaves:
            _check_escape(o, tape, self.level, self.name)
        nodes = [o.node if type(o) is Traced and o.tape is tape else None
                 for o in out_leaves]
        return tape, ids, nodes

    def _split(self, g):
        if not self.multi:
            return (g,)
        if isinstance(g, Structural):
            return (ZERO,) * self.n_out
        return g

    def pullback(self, g, batch=None):
        tape, ids, nodes = self._recompute()
        outs, seeds = [], []
        for n, c in zip(nodes, self._split(g)):
            if n is not None and not isinstance(c, Structural):
                outs.append(n)
                seeds.append(c)
        if not outs:
            return []
        grads = tape.backward(outs, seeds, batch=_batch_size(seeds, batch))
        return [(nid, _unseg(grads.get(lid))) for nid, lid in zip(self.in_ids, ids)]

    def _forward(self, tape, ids, tangents, batch=None):
        seeds = {}
        for lid, t in zip(ids, tangents):
            if not isinstance(t, Structural):
                seeds[lid] = t if lid not in seeds else seeds[lid] + t
        return tape.forward(seeds, batch=_batch_size(list(seeds.values()), batch))

    def pushforward(self, tangents, batch=None):
        tape, ids, nodes = self._recompute()
        tans = self._forward(tape, ids, tangents, batch)
        res = [ZERO if n is None or tans[n] is None else _unseg(tans[n]) for n in nodes]
        return tuple(res) if self.multi else res[0]

    # a batch of directions: one recomputation, then the inner tape's own
    # batched sweeps
    batched = True

    def pullback_batched(self, g):
        return self.pullback(g, batch=True)

    def pushforward_batched(self, tangents):
        return self.pushforward(tangents, batch=True)

    def pullback_with_tangents_batched(self, g, gd, tangents):
        return self.pullback_with_tangents(g, gd, tangents, batch=True)

    def pullback_with_tangents(self, g, gd, tangents, batch=None):
        tape, ids, nodes = self._recompute()
        tans = self._forward(tape, ids, tangents, batch)
        outs, seeds, dseeds = [], [], []
        for n, c, cd in zip(nodes, self._split(g), self._split(gd)):
            if n is None or (isinstance(c, Structural) and isinstance(cd, Structural)):
                continue
            outs.append(n)
            seeds.append(c)
            dseeds.append(cd)
        if not outs:
            return []
        cg, dg = tape.backward_with_tangents(outs, seeds, dseeds, tans, retain_graph=False,
                                             batch=_batch_size(list(dseeds) + list(tangents),
                                                               batch))
        return [(nid, _unseg(cg.get(lid)), _unseg(dg.get(lid)))
                for nid, lid in zip(self.in_ids, ids)]


def _batch_size(values, batch):
    """The number of directions of a batch (``batch`` True) from its first
    non-structural value; None for an unbatched sweep (or no value)."""
    if not batch:
        return None
    for v in values:
        if not isinstance(v, Structural):
            return np.shape(v)[0]
    return None


def _fn_name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _check_escape(o, tape, level, name):
    """Refuse an output of a segment's run (on its own ``tape``) that is
    still traced on the tape the segment is recorded on, or a higher one:
    it depends on a value being differentiated by a path the capture did
    not see, and its derivative would be wrong."""
    if type(o) is Traced and o.tape is tape:
        o = o.value
    if type(o) is Traced and o.tape.level >= level:
        raise UntraceableError(
            f"{name}: the result depends on a value being differentiated through a "
            "path chainrules cannot follow (a traced value kept from an earlier "
            "differentiation, or computed in another thread); compute it inside the "
            "checkpointed function, or before it runs, on the calling thread")


@overload
def checkpoint(f: np.ufunc, policy: CheckpointPolicy = "nothing") -> Callable[..., Any]: ...


@overload
def checkpoint(f: Callable[P, R], policy: CheckpointPolicy = "nothing") -> Callable[P, R]: ...


@overload
def checkpoint(f: None = None, policy: CheckpointPolicy = "nothing"
               ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def checkpoint(f: Callable[P, R] | None = None,
               policy: CheckpointPolicy = "nothing") -> Any:
    """Return a version of ``f`` whose intermediate values are recomputed in
    the backward pass instead of stored. Usable as ``@checkpoint`` or
    ``@checkpoint(policy="dots")``.

    Policies: ``"nothing"`` (default: save nothing inside the segment),
    ``"everything"`` (record ``f`` as usual: checkpointing off), ``"dots"``
    (save the outputs of matmul, dot, einsum, tensordot, inner, outer, kron
    and ``numpy.linalg`` calls and recompute the elementwise work between
    them), or a callable ``policy(op) -> bool`` naming the operations whose
    outputs to save. ``f`` must be deterministic. It may use values being
    differentiated that are not its arguments (closures, globals: the
    weights of a layer): they are found by running ``f`` and become inputs
    of the checkpointed segment. The checkpointing guide
    (docs/guide/checkpointing.md) has the memory figures.

    >>> import numpy as np, chainrules as cr
    >>> block = cr.checkpoint(lambda x: np.tanh(np.tanh(x)))
    >>> g = cr.grad(lambda x: np.sum(block(x)))(np.zeros(3))
    >>> g
    array([1., 1., 1.])
    >>> def loss(w):
    ...     layer = cr.checkpoint(lambda x: np.tanh(w * x))  # closes over w
    ...     return np.sum(layer(np.ones(2)))
    >>> float(cr.grad(loss)(0.0))
    2.0
    """
    if f is None:
        return functools.partial(checkpoint, policy=policy)
    wants: Callable[[Any], bool] | None
    if callable(policy):
        wants = policy
    elif policy in _POLICIES:
        wants = dots_saveable if policy == "dots" else None
    else:
        raise ValueError(f"checkpoint: unknown policy {policy!r}; use one of "
                         f"{_POLICIES} or a callable op -> bool")
    fname = _fn_name(f)

    @functools.wraps(f)
    def checkpointed(*args, **kwargs):
        if policy == "everything":
            return f(*args, **kwargs)
        leaves, td = pytree.flatten((args, kwargs))
        # inside a running capture (a segment in a segment), arguments
        # traced on an enclosing tape are what stands for them there
        leaves = converted(leaves)
        top = top_tape(leaves, None)
        if top is not None and not top.active:
            return f(*args, **kwargs)
        run = _first_run(f, td, leaves, top, wants, f"checkpoint({fname})")
        if run.outer is None:  # nothing traced met: a plain call
            return run.out
        out_leaves, out_td = pytree.flatten(run.out)
        multi = out_td is not pytree.LEAF
        rule = CheckpointRule(f, td, run.plain, run.traced_pos, run.in_ids,
                              len(out_leaves), multi, wants, run.saved, run.cap_values,
                              run.outer.level, run.parent)
        if not multi:
            return record(run.outer, rule, run.out)
        return pytree.unflatten(out_td, record(run.outer, rule, MultiOutput(out_leaves)))

    checkpointed.policy = policy  # type: ignore[attr-defined]
    return Transformed(checkpointed, checkpoint, f, (), dict(policy=policy))


class _FirstRun:
    """What the first run of a segment found: its output (plain or traced
    below ``outer``), the tape to record it on, the argument leaves with the
    traced ones unwrapped, and the inputs of its rule."""

    __slots__ = ("out", "outer", "plain", "traced_pos", "in_ids", "cap_values", "saved",
                 "parent")


def _first_run(f, td, leaves, top, wants, name):
    """Run ``f`` once under a capture, on a throwaway tape. Values traced on
    ``top`` (the highest tape among the arguments) are the segment's
    inputs: the arguments' are unwrapped, the closed-over ones become leaves
    of the throwaway tape and are captured. A closed-over value of a tape
    higher than ``top`` makes that tape the one to record on: the segment
    runs again. Under a saving policy the arguments are leaves too (so that
    the run makes exactly the calls the recomputation will make) and the
    chosen outputs are saved."""
    parent = current()
    while True:
        traced_pos = () if top is None else tuple(
            k for k, v in enumerate(leaves) if type(v) is Traced and v.tape is top)
        plain = list(leaves)
        for k in traced_pos:
            plain[k] = leaves[k].value
        saving = wants is not None and all(type(plain[k]) is np.ndarray for k in traced_pos)
        tape = Tape()
        cap = Capture(tape.level, LEAVES, parent, tape=tape, outer=top, name=name,
                      view=_seg_view if saving else None)
        args = list(plain)
        if saving:
            for k in traced_pos:
                v = plain[k].view(_Seg)
                args[k] = cap.bind(leaves[k], Traced(v, tape.leaf(v), tape))
        saver = _Saver(wants) if saving else None
        a, kw = pytree.unflatten(td, args)
        token = _push_saver(saver) if saver is not None else None
        try:
            out = cap.run(f, *a, **kw)
        finally:
            tape.close()
            if token is not None:
                _savers.reset(token)
        if cap.rise is None:
            break
        tape.free()
        top = cap.rise
    return _finish(out, cap, tape, leaves, plain, traced_pos, saver, parent, name)


def _finish(out, cap, tape, leaves, plain, traced_pos, saver, parent, name):
    run = _FirstRun()
    run.outer, run.parent, run.plain, run.traced_pos = cap.outer, parent, plain, traced_pos
    run.out = out
    if cap.outer is None:
        tape.free()
        return run
    level = cap.outer.level
    out_leaves, out_td = pytree.flatten(out)
    res = []
    for o in out_leaves:
        _check_escape(o, tape, level, name)
        res.append(_unseg(o.value if type(o) is Traced and o.tape is tape else o))
    tape.free()
    run.out = pytree.unflatten(out_td, res)
    in_ids = [leaves[k].node for k in traced_pos]
    captured = [c for c in cap.captured if c.node not in in_ids]  # also an argument
    run.in_ids = tuple(in_ids) + tuple(c.node for c in captured)
    run.cap_values = tuple(c.value for c in captured)
    # a saved output traced on a lower tape (the segment computed with such
    # a value) would be a stale value there when replayed: recompute instead
    run.saved = None
    if saver is not None and not any(type(v) is Traced for _, v in saver.saved):
        run.saved = saver.saved
    return run


def _seg_view(v):
    return v.view(_Seg) if type(v) is np.ndarray else v


def checkpoint_sequential(layers: Iterable[Callable[[Any], Any]], x: Any,
                          segments: int | None = None,
                          policy: CheckpointPolicy = "nothing") -> Any:
    """Apply ``layers`` (callables) in order to ``x``, checkpointing groups of
    consecutive layers: ``segments`` groups (default ``ceil(sqrt(n))``), so
    the backward pass keeps about ``2 sqrt(n)`` layers' worth of values
    instead of ``n``. The last group is recorded normally (its backward
    pass comes first, so recomputing it would save nothing).

    Parameters being differentiated reach the layers as closures: build
    each layer over its own weights (``lambda x, W=W: np.tanh(W @ x)``, or
    ``functools.partial(layer, W)``); ``checkpoint`` captures them, so their
    gradients come out of the checkpointed groups like ``x``'s.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> layers = [np.tanh] * 9
    >>> g = cr.grad(lambda x: np.sum(cr.checkpoint_sequential(layers, x)))(np.zeros(2))
    >>> g
    array([1., 1.])
    >>> def loss(ws):  # one weight per layer, closed over
    ...     layers = [lambda x, w=w: x + w * x for w in ws]
    ...     return np.sum(cr.checkpoint_sequential(layers, np.ones(2), segments=2))
    >>> cr.grad(loss)(np.zeros(4))
    array([2., 2., 2., 2.])
    """
    layers = list(layers)
    n = len(layers)
    if n == 0:
        return x
    if segments is None:
        segments = max(1, math.ceil(math.sqrt(n)))
    segments = max(1, min(int(segments), n))
    size = math.ceil(n / segments)
    chunks = [layers[i:i + size] for i in range(0, n, size)]

    def run(chunk):
        def segment(x):
            for layer in chunk:
                x = layer(x)
            return x
        return segment

    for chunk in chunks[:-1]:
        x = checkpoint(run(chunk), policy=policy)(x)
    return run(chunks[-1])(x)
