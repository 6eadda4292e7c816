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
``f`` must receive every value being differentiated as an argument: a
closure over a traced value raises ``UntraceableError``.
"""

import contextvars
import functools
import math

import numpy as np

from . import pytree
from .transformed import Transformed
from .errors import AutodiffError, UntraceableError
from .guards import treat_as_ndarray
from .graph import Tape
from .rule import MultiOutput, ReverseRule
from .tangents import ZERO, Structural
from .tracing import Traced, record, top_tape

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointRule", "dots_saveable"]

_POLICIES = ("nothing", "everything", "dots")

_EXPENSIVE = {np.dot, np.einsum, np.tensordot, np.inner, np.vdot, np.outer, np.kron,
              np.matmul}


def dots_saveable(op):
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
            self.saved.append((op, _plain(out)))
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


def _plain(v):
    return v.view(np.ndarray) if isinstance(v, _Seg) else v


def _seg(v):
    if type(v) is np.ndarray:
        return v.view(_Seg)
    if isinstance(v, tuple):
        return tuple(_seg(x) for x in v)
    return v


def _unseg(v):
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

    Keeps the segment's argument leaves (traced ones unwrapped) and, under
    a saving policy, the saved outputs; every sweep recomputes the segment
    on a fresh inner tape."""

    __slots__ = ("fn", "treedef", "leaves", "traced_pos", "in_ids", "n_out", "multi",
                 "wants", "saved")

    def __init__(self, fn, treedef, leaves, traced_pos, in_ids, n_out, multi, wants,
                 saved):
        self.fn = fn
        self.treedef = treedef
        self.leaves = leaves
        self.traced_pos = traced_pos
        self.in_ids = in_ids
        self.n_out = n_out
        self.multi = multi
        self.wants = wants
        self.saved = saved

    @property
    def name(self):
        fn = self.fn
        return "checkpoint(" + (getattr(fn, "__qualname__", None)
                                or getattr(fn, "__name__", None) or repr(fn)) + ")"

    def inputs(self):
        return self.in_ids

    def _recompute(self):
        tape = Tape()
        leaves = list(self.leaves)
        ids = []
        saver = None
        if self.saved is not None:
            saver = _Saver(self.wants, self.saved)
        for k in self.traced_pos:
            v = leaves[k]
            if saver is not None and type(v) is np.ndarray:
                v = v.view(_Seg)
            nid = tape.leaf(v)
            ids.append(nid)
            leaves[k] = Traced(v, nid, tape)
        args, kwargs = pytree.unflatten(self.treedef, leaves)
        token = _push_saver(saver) if saver is not None else None
        try:
            out = self.fn(*args, **kwargs)
        finally:
            tape.active = False
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
        nodes = [o.node if type(o) is Traced and o.tape is tape else None
                 for o in out_leaves]
        return tape, ids, nodes

    def _split(self, g):
        if not self.multi:
            return (g,)
        if isinstance(g, Structural):
            return (ZERO,) * self.n_out
        return g

    def pullback(self, g):
        tape, ids, nodes = self._recompute()
        outs, seeds = [], []
        for n, c in zip(nodes, self._split(g)):
            if n is not None and not isinstance(c, Structural):
                outs.append(n)
                seeds.append(c)
        if not outs:
            return []
        grads = tape.backward(outs, seeds)
        return [(nid, _plain(grads.get(lid))) for nid, lid in zip(self.in_ids, ids)]

    def _forward(self, tape, ids, tangents):
        seeds = {}
        for lid, t in zip(ids, tangents):
            if not isinstance(t, Structural):
                seeds[lid] = t if lid not in seeds else seeds[lid] + t
        return tape.forward(seeds)

    def pushforward(self, tangents):
        tape, ids, nodes = self._recompute()
        tans = self._forward(tape, ids, tangents)
        res = [ZERO if n is None or tans[n] is None else _plain(tans[n]) for n in nodes]
        return tuple(res) if self.multi else res[0]

    def pullback_with_tangents(self, g, gd, tangents):
        tape, ids, nodes = self._recompute()
        tans = self._forward(tape, ids, tangents)
        outs, seeds, dseeds = [], [], []
        for n, c, cd in zip(nodes, self._split(g), self._split(gd)):
            if n is None or (isinstance(c, Structural) and isinstance(cd, Structural)):
                continue
            outs.append(n)
            seeds.append(c)
            dseeds.append(cd)
        if not outs:
            return []
        cg, dg = tape.backward_with_tangents(outs, seeds, dseeds, tans,
                                             retain_graph=False)
        return [(nid, _plain(cg.get(lid)), _plain(dg.get(lid)))
                for nid, lid in zip(self.in_ids, ids)]


def _closure_error(fname):
    return UntraceableError(
        f"checkpoint({fname}): the function uses a value being differentiated that "
        "is not one of its arguments (a closure or a global); pass every traced "
        "value as an argument of the checkpointed function")


def checkpoint(f=None, policy="nothing"):
    """Return a version of ``f`` whose intermediate values are recomputed in
    the backward pass instead of stored. Usable as ``@checkpoint`` or
    ``@checkpoint(policy="dots")``.

    Policies: ``"nothing"`` (default: save nothing inside the segment),
    ``"everything"`` (record ``f`` as usual: checkpointing off), ``"dots"``
    (save the outputs of matmul, dot, einsum, tensordot, inner, outer, kron
    and ``numpy.linalg`` calls and recompute the elementwise work between
    them), or a callable ``policy(op) -> bool`` naming the operations whose
    outputs to save. ``f`` must be deterministic, and must receive every
    value being differentiated as an argument: a closure over a traced value
    raises ``UntraceableError`` (pass it as an argument). The checkpointing
    guide (docs/guide/checkpointing.md) has the memory figures.

    >>> import numpy as np, chainrules as cr
    >>> block = cr.checkpoint(lambda x: np.tanh(np.tanh(x)))
    >>> g = cr.grad(lambda x: np.sum(block(x)))(np.zeros(3))
    >>> g
    array([1., 1., 1.])
    """
    if f is None:
        return functools.partial(checkpoint, policy=policy)
    if callable(policy):
        wants = policy
    elif policy in _POLICIES:
        wants = dots_saveable if policy == "dots" else None
    else:
        raise ValueError(f"checkpoint: unknown policy {policy!r}; use one of "
                         f"{_POLICIES} or a callable op -> bool")
    fname = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)

    @functools.wraps(f)
    def checkpointed(*args, **kwargs):
        leaves, td = pytree.flatten((args, kwargs))
        top = top_tape(leaves, None)
        if top is None or not top.active or policy == "everything":
            return f(*args, **kwargs)
        traced_pos = tuple(k for k, v in enumerate(leaves)
                           if type(v) is Traced and v.tape is top)
        plain = list(leaves)
        for k in traced_pos:
            plain[k] = leaves[k].value
        in_ids = tuple(leaves[k].node for k in traced_pos)
        saved = None
        if wants is not None and all(type(plain[k]) is np.ndarray for k in traced_pos):
            out = _first_run_saving(f, td, plain, traced_pos, wants, fname, top)
            out, saved = out
        else:
            a, kw = pytree.unflatten(td, plain)
            out = f(*a, **kw)
        out_leaves, out_td = pytree.flatten(out)
        for o in out_leaves:
            if type(o) is Traced and o.tape.level >= top.level:
                raise _closure_error(fname)
        multi = out_td is not pytree.LEAF
        rule = CheckpointRule(f, td, plain, traced_pos, in_ids, len(out_leaves), multi,
                              wants, saved)
        if not multi:
            return record(top, rule, out)
        return pytree.unflatten(out_td, record(top, rule, MultiOutput(out_leaves)))

    checkpointed.policy = policy
    return Transformed(checkpointed, checkpoint, f, (), dict(policy=policy))


def _first_run_saving(f, td, plain, traced_pos, wants, fname, top):
    """Run ``f`` once on a throwaway tape (so that it makes exactly the calls
    the recomputation will make) saving the chosen outputs."""
    tape = Tape()
    leaves = list(plain)
    for k in traced_pos:
        v = leaves[k].view(_Seg)
        leaves[k] = Traced(v, tape.leaf(v), tape)
    saver = _Saver(wants)
    a, kw = pytree.unflatten(td, leaves)
    token = _push_saver(saver)
    try:
        out = f(*a, **kw)
    finally:
        _savers.reset(token)
        tape.active = False
    out_leaves, out_td = pytree.flatten(out)
    res = []
    for o in out_leaves:
        if type(o) is Traced and o.tape is tape:
            o = o.value
        if type(o) is Traced and o.tape.level >= top.level:
            raise _closure_error(fname)
        res.append(_plain(o))
    tape.free()
    return pytree.unflatten(out_td, res), saver.saved


def checkpoint_sequential(layers, x, segments=None, policy="nothing"):
    """Apply ``layers`` (callables) in order to ``x``, checkpointing groups of
    consecutive layers: ``segments`` groups (default ``ceil(sqrt(n))``), so
    the backward pass keeps about ``2 sqrt(n)`` layers' worth of values
    instead of ``n``. The last group is recorded normally (its backward
    pass comes first, so recomputing it would save nothing).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> layers = [np.tanh] * 9
    >>> g = cr.grad(lambda x: np.sum(cr.checkpoint_sequential(layers, x)))(np.zeros(2))
    >>> g
    array([1., 1.])
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
