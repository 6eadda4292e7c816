"""Jacobians and Hessians: record once, sweep many times.

Every function here traces the user's function *once* on a tape and then
runs only the engine's sweeps, each carrying a chunk of basis directions as
one batch (``chainrules.sweep_batch``; ``chunk_size`` bounds it):

* ``jacobian(f)``: forward mode (tangent sweeps over the input elements)
  when the inputs are smaller than the outputs, reverse mode (backward
  sweeps over the output elements, graph retained) otherwise; ``mode=``
  forces.
* ``hessian(f)``: forward-over-reverse, a tangent sweep plus a reverse
  sweep carrying tangents per chunk of input elements.

Linearizations and Hessian operators (``linearize``, ``linearize_grad``,
``hessian_operator``, ``hessp``) are in ``chainrules.linearization``; they share
``Recording`` from here.

Every function here sweeps one recording of ``f``: rules without a
hand-written ``pullback_with_tangents`` get their second order by replay
(``chainrules.second_order``), never by tracing ``f`` again.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Literal, ParamSpec, Sequence, overload

import numpy as np

from . import pytree
from .transformed import Transformed
from .arguments import (function_name, is_inexact, normalize_argnums, scalar_output_dtype,
                        trace_args, unwrap_level)
from .arrays import is_array, shape_of
from .errors import MissingRuleError, NonDifferentiableInputError
from .fused_sweeps import fuse
from .graph import Tape
from .tangents import NOTANGENT, ZERO, Structural
from .staging import Staged
from .tracing import Traced, untraced

__all__ = ["jacobian", "hessian"]

P = ParamSpec("P")

# NumPy's ufuncs are typed with overloads (scalar first, then arrays); a type
# checker that gives a ParamSpec the first overload only (mypy) would reject
# ``jacobian(np.sin)(x)`` for an array ``x``, so a ufunc keeps no signature here.


# -- recording ---------------------------------------------------------------
class Recording:
    """``f(*args)`` traced once on a tape, with the traced argument leaves."""

    __slots__ = ("tape", "specs", "out", "aux", "out_leaves", "out_td")

    def __init__(self, f, args, nums, fname, has_aux=False, kwargs=None, private=False,
                 second_order=False):
        tape = Tape()
        try:
            # private: the recording outlives the call, so it keeps copies of
            # the inputs (the caller may mutate its arrays afterwards)
            targs, specs = trace_args(tape, args, nums, fname, private)
            out = f(*targs, **(kwargs or {}))
            aux = None
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TypeError(f"{fname} was declared has_aux=True and must "
                                    "return a pair (value, aux)")
                out, aux = out
        finally:
            tape.close()
        self.tape = tape
        self.specs = specs
        self.out = out
        self.aux = None if aux is None else unwrap_level(aux, tape)
        self.out_leaves, self.out_td = pytree.flatten(out)
        # (second_order: the recording is for Hessians and HVPs)
        fuse(tape, [leaf.node for leaf in self.out_leaves
                    if type(leaf) is Traced and leaf.tape is tape], second_order=second_order)

    def node(self, leaf):
        """The node of an output leaf on this tape, or None for a constant."""
        if type(leaf) is Traced and leaf.tape is self.tape:
            return leaf.node
        return None

    def inputs(self):
        """(spec index, leaf index, leaf value, NodeId or None) per input leaf."""
        for s, spec in enumerate(self.specs):
            for k, (leaf, nid) in enumerate(zip(spec.leaves, spec.ids)):
                yield s, k, leaf, nid


def leaf_dtype(v):
    v = untraced(v)
    dt = getattr(v, "dtype", None)
    return dt if dt is not None else np.result_type(v)


def is_complex_leaf(v):
    return is_inexact(v) and leaf_dtype(v).kind == "c"


#: the elements a chunk of directions may hold on a tape's nodes together
#: (8 bytes each in float64: 128 MB), unless ``chunk_size`` says otherwise
CHUNK_ELEMENTS = 1 << 24
#: a node of at least LARGE_NODE elements makes the sweeps memory-bound:
#: its batch is then kept within CACHE_ELEMENTS, one direction per sweep
#: from 8192 elements on (measured on the Rosenbrock HVP: 20 directions of
#: 1e4 elements ran 1.6x slower as batches of 6 than one at a time; of 1e3
#: elements, 1.6x faster as one batch)
LARGE_NODE = 1 << 12
CACHE_ELEMENTS = 1 << 13


def basis_batch(shape, dtype, start, stop):
    """Basis directions ``start .. stop - 1`` of a value of ``shape``: a
    batch of shape ``(stop - start,) + shape``."""
    n = _size(shape)
    e = np.zeros((stop - start, n), dtype)
    e[np.arange(stop - start), np.arange(start, stop)] = 1
    return e.reshape((stop - start,) + tuple(shape))


def direction_chunks(n, tape, chunk_size):
    """``(start, stop)`` ranges covering ``n`` directions, each batch small
    enough that every node of ``tape`` carrying it stays within
    ``CHUNK_ELEMENTS`` together, and a large node's batch within
    ``CACHE_ELEMENTS`` (or ``chunk_size`` directions when given)."""
    if chunk_size is None:
        sizes = [_size(s) for s in tape.shapes if type(s) is tuple]
        chunk_size = CHUNK_ELEMENTS // (sum(sizes) or 1)
        biggest = max(sizes, default=1)
        if biggest >= LARGE_NODE:
            chunk_size = min(chunk_size, CACHE_ELEMENTS // biggest)
        chunk_size = max(1, chunk_size)
    elif int(chunk_size) != chunk_size or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, not {chunk_size!r}")
    chunk_size = int(chunk_size)
    return [(a, min(a + chunk_size, n)) for a in range(0, n, chunk_size)]


def batch_or_zeros(v, k, shape, dtype):
    """A node's batched value (zeros where it is structurally zero)."""
    if v is None or isinstance(v, Structural):
        return np.zeros((k,) + tuple(shape), dtype)
    return v


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _finish(block, shape):
    if type(block) is np.ndarray or type(block) is Staged:
        # (a staged block, cr.jit's, by the same recorded calls)
        block = block.reshape(shape)
        return block[()] if shape == () else block
    return np.reshape(block, shape)


def _zeros_block(shape, dtype):
    z = np.zeros(shape, dtype)
    return z[()] if shape == () else z


def _assemble(rec, blocks, single):
    """Output tree whose leaves are (tuples of) input trees of blocks."""
    out = []
    for i in range(len(rec.out_leaves)):
        per_arg = []
        for s, spec in enumerate(rec.specs):
            per_arg.append(pytree.unflatten(spec.treedef, blocks[i][s]))
        out.append(per_arg[0] if single else tuple(per_arg))
    return pytree.unflatten(rec.out_td, out)


# -- jacobian ------------------------------------------------------------------
@overload
def jacobian(f: np.ufunc, argnums: int | Sequence[int] = 0,
             mode: Literal["forward", "reverse"] | None = None, has_aux: bool = False,
             holomorphic: bool = False, chunk_size: int | None = None) -> Callable[..., Any]: ...


@overload
def jacobian(f: Callable[P, Any], argnums: int | Sequence[int] = 0,
             mode: Literal["forward", "reverse"] | None = None, has_aux: bool = False,
             holomorphic: bool = False, chunk_size: int | None = None) -> Callable[P, Any]: ...


def jacobian(f: Callable[P, Any], argnums: int | Sequence[int] = 0,
             mode: Literal["forward", "reverse"] | None = None, has_aux: bool = False,
             holomorphic: bool = False, chunk_size: int | None = None) -> Callable[P, Any]:
    """Return a function computing the Jacobian of ``f`` with respect to
    ``args[argnums]``.

    The result has the structure of ``f``'s output; each output leaf is
    replaced by the structure of the differentiated argument (a tuple of
    them when ``argnums`` is a tuple) whose leaves have shape
    ``out_leaf.shape + in_leaf.shape`` (the JAX layout).

    ``mode``: ``"forward"`` (tangent sweeps over the input elements),
    ``"reverse"`` (backward sweeps over the output elements) or ``None`` to
    pick the cheaper one. Either way ``f`` is traced once, and each sweep
    carries a chunk of directions at once (a leading batch axis on every
    tangent or cotangent). ``chunk_size`` bounds the directions per sweep
    (memory grows with it); by default a chunk keeps every node's batch
    within ``CHUNK_ELEMENTS`` elements together.

    Complex outputs of real inputs are supported in both modes. Complex
    inputs need ``holomorphic=True`` (the result is then the complex
    derivative ``f'(z)``); for a non-holomorphic function differentiate
    the real and imaginary parts as separate real arguments.

    >>> import numpy as np, chainrules as cr
    >>> cr.jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    if mode not in (None, "forward", "reverse"):
        raise ValueError(f"jacobian: mode must be None, 'forward' or 'reverse', not {mode!r}")
    nums, single = normalize_argnums(argnums)
    fname = function_name(f)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        _refuse_lazy(args, nums, f"jacobian of {fname}")
        rec = Recording(f, args, nums, fname, has_aux, kwargs)
        try:
            jac = _jacobian(rec, mode, holomorphic, fname, single, chunk_size)
        finally:
            rec.tape.free()
        return (jac, rec.aux) if has_aux else jac

    return Transformed(jacobian_f, jacobian, f, (),
                       dict(argnums=argnums, mode=mode, has_aux=has_aux,
                            holomorphic=holomorphic, chunk_size=chunk_size))


#: array types whose values are at hand (a staged value of ``cr.jit`` holds
#: its concrete array: assembling a Jacobian of it is recorded, not computed
#: ahead)
_EAGER_TYPES = (np.ndarray, Traced, Staged)


def _refuse_lazy(args, nums, what):
    """Jacobians and Hessians are assembled one basis direction at a time
    into NumPy arrays: for a lazy argument (dask) that would compute it
    while differentiating, which chainrules never does. Refused before
    anything runs, naming the way out."""
    for k in nums:
        if not -len(args) <= k < len(args):
            continue  # trace_args reports the out-of-range argnums
        for leaf in pytree.flatten(args[k])[0]:
            if is_array(leaf) and type(leaf) not in _EAGER_TYPES:
                raise MissingRuleError(
                    f"{what}: argument {k} is a {type(leaf).__module__}."
                    f"{type(leaf).__qualname__}, a lazy array; Jacobians and Hessians are "
                    "built one direction at a time as NumPy arrays, which would compute it "
                    "while differentiating. Use chainrules.vjp / jvp / hvp along the "
                    "directions you need (they stay lazy), or pass the computed values "
                    "(x.compute()).")


def _jacobian(rec, mode, holomorphic, fname, single, chunk_size=None):
    ins = list(rec.inputs())
    for _, _, leaf, nid in ins:
        if nid is not None and is_complex_leaf(leaf) and not holomorphic:
            raise NonDifferentiableInputError(
                f"jacobian of {fname}: an input has complex dtype {leaf_dtype(leaf)}; pass "
                "holomorphic=True if the function is holomorphic, otherwise pass the "
                "real and imaginary parts as separate real arguments")
    n_in = sum(_size(shape_of(leaf)) for _, _, leaf, nid in ins if nid is not None)
    n_out = sum(_size(shape_of(o)) for o in rec.out_leaves if rec.node(o) is not None)
    if mode is None:
        mode = "forward" if n_in <= n_out else "reverse"
    blocks = [[[None] * len(spec.leaves) for spec in rec.specs] for _ in rec.out_leaves]
    for i, o in enumerate(rec.out_leaves):
        oshape = shape_of(o)
        for s, k, leaf, nid in ins:
            if nid is None:
                blocks[i][s][k] = NOTANGENT
            elif rec.node(o) is None or not is_inexact(o):
                dt = np.result_type(leaf_dtype(leaf), leaf_dtype(o)) if is_inexact(o) \
                    else leaf_dtype(leaf)
                blocks[i][s][k] = _zeros_block(oshape + shape_of(leaf), dt)
    if mode == "forward":
        _jac_forward(rec, ins, blocks, chunk_size)
    else:
        _jac_reverse(rec, ins, blocks, chunk_size)
    return _assemble(rec, blocks, single)


def _jac_forward(rec, ins, blocks, chunk_size):
    """One forward sweep per chunk of input directions, each carrying the
    chunk as a batch."""
    tape = rec.tape
    outs = [(i, o, rec.node(o)) for i, o in enumerate(rec.out_leaves)
            if rec.node(o) is not None and is_inexact(o)]
    if not outs:
        return
    for s, k, leaf, nid in ins:
        if nid is None:
            continue
        ishape, idt = shape_of(leaf), leaf_dtype(leaf)
        cols = [[] for _ in outs]
        for a, b in direction_chunks(_size(ishape), tape, chunk_size):
            tans = tape.forward({nid: basis_batch(ishape, idt, a, b)}, start=nid, batch=b - a)
            for c, (i, o, node) in enumerate(outs):
                cols[c].append(batch_or_zeros(tans[node], b - a, shape_of(o),
                                         np.result_type(leaf_dtype(o), idt)))
        for c, (i, o, node) in enumerate(outs):
            oshape = shape_of(o)
            if cols[c]:
                block = np.moveaxis(concat_batches(cols[c]), 0, -1)
            else:
                block = np.zeros(oshape + (0,), np.result_type(leaf_dtype(o), idt))
            blocks[i][s][k] = _finish(block, oshape + ishape)


def concat_batches(pieces):
    """Batches of directions joined along the batch axis (differentiable
    when they are traced)."""
    if len(pieces) == 1:
        return pieces[0]
    if not any(type(p) is Traced for p in pieces):
        return np.concatenate([np.asarray(p) for p in pieces], axis=0)
    return np.concatenate(pieces, axis=0)


def _jac_reverse(rec, ins, blocks, chunk_size):
    """One reverse sweep per chunk of output directions, each carrying the
    chunk as a batch."""
    tape = rec.tape
    live = [(s, k, leaf, nid) for s, k, leaf, nid in ins if nid is not None]
    for i, o in enumerate(rec.out_leaves):
        node = rec.node(o)
        if node is None or not is_inexact(o):
            continue
        oshape, odt = shape_of(o), leaf_dtype(o)
        # a real input sees Re(seed * J): the seed -1j gives Im(J)
        split = odt.kind == "c" and any(not is_complex_leaf(leaf) for _, _, leaf, _ in live)
        rows = {(s, k): [] for s, k, _, _ in live}
        for a, b in direction_chunks(_size(oshape), tape, chunk_size):
            seed = basis_batch(oshape, odt, a, b)
            g = tape.backward([node], [seed], retain_graph=True, batch=b - a)
            g_im = tape.backward([node], [-1j * seed], retain_graph=True,
                                 batch=b - a) if split else None
            for s, k, leaf, nid in live:
                ishape, idt = shape_of(leaf), leaf_dtype(leaf)
                r = batch_or_zeros(g.get(nid), b - a, ishape, np.result_type(odt, idt))
                if g_im is not None and not is_complex_leaf(leaf):
                    ri = g_im.get(nid)
                    if not isinstance(ri, Structural):
                        r = r + 1j * ri
                    elif type(r) is np.ndarray:
                        r = r.astype(np.result_type(r.dtype, np.complex64))
                rows[(s, k)].append(r)
        for (s, k), pieces in rows.items():
            leaf = rec.specs[s].leaves[k]
            ishape = shape_of(leaf)
            if pieces:
                block = concat_batches(pieces)
            else:
                block = np.zeros((0,) + ishape, np.result_type(odt, leaf_dtype(leaf)))
            blocks[i][s][k] = _finish(block, oshape + ishape)


# -- hessian -------------------------------------------------------------------
@overload
def hessian(f: np.ufunc, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            chunk_size: int | None = None) -> Callable[..., Any]: ...


@overload
def hessian(f: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
            chunk_size: int | None = None) -> Callable[P, Any]: ...


def hessian(f: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
            chunk_size: int | None = None) -> Callable[P, Any]:
    """Return a function computing the Hessian of scalar ``f``.

    Forward-over-reverse: ``f`` is traced once, then each chunk of input
    elements costs one tangent sweep and one reverse sweep carrying
    tangents, the chunk carried as a batch (``chunk_size``: as for
    ``jacobian``). The
    layout is that of ``jacobian(grad(f, argnums), argnums)``: for a single
    array argument of shape ``s`` an array of shape ``s + s``; for pytrees a
    tree of trees (``H[i][j]`` of shape ``leaf_i.shape + leaf_j.shape``);
    for a tuple ``argnums`` a tuple of tuples.

    >>> import numpy as np, chainrules as cr
    >>> cr.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    nums, single = normalize_argnums(argnums)
    fname = function_name(f)

    @functools.wraps(f)
    def hessian_f(*args, **kwargs):
        _refuse_lazy(args, nums, f"hessian of {fname}")
        rec = Recording(f, args, nums, fname, has_aux, kwargs, second_order=True)
        try:
            scalar_output_dtype(rec.out, rec.tape, f"hessian of {fname}")
            H = _hessian(rec, fname, single, chunk_size)
        finally:
            rec.tape.free()
        return (H, rec.aux) if has_aux else H

    return Transformed(hessian_f, hessian, f, (), dict(argnums=argnums, has_aux=has_aux,
                                                       chunk_size=chunk_size))


def _hessian(rec, fname, single, chunk_size=None):
    ins = list(rec.inputs())
    for _, _, leaf, nid in ins:
        if nid is not None and is_complex_leaf(leaf):
            raise NonDifferentiableInputError(
                f"hessian of {fname}: an input has complex dtype {leaf_dtype(leaf)}; pass "
                "the real and imaginary parts as separate real arguments")
    tape = rec.tape
    node = rec.node(rec.out)
    live = [(s, k, leaf, nid) for s, k, leaf, nid in ins if nid is not None]
    one = np.ones(shape_of(rec.out), leaf_dtype(rec.out))
    if node is not None:
        need_t = tape.tangent_demand([node])
        need_g = tape.cotangent_demand([node])
    # blocks[a][b]: d/d(leaf b) of the gradient leaf a, shape leaf_a + leaf_b;
    # one forward sweep and one reverse sweep with tangents per chunk of
    # directions of leaf b, each carrying the chunk as a batch
    cols = {(a[0], a[1], b[0], b[1]): [] for a in live for b in live}
    for sb, kb, leafb, nidb in live:
        if node is None:
            break
        bshape, bdt = shape_of(leafb), leaf_dtype(leafb)
        for lo, hi in direction_chunks(_size(bshape), tape, chunk_size):
            tans = tape.forward({nidb: basis_batch(bshape, bdt, lo, hi)}, start=nidb,
                                needed=need_t, batch=hi - lo)
            _, hv = tape.backward_with_tangents([node], [one], [ZERO], tans,
                                                retain_graph=True, leaf_cotangents=False,
                                                need=need_g, batch=hi - lo)
            for sa, ka, leafa, nida in live:
                cols[(sa, ka, sb, kb)].append(
                    batch_or_zeros(hv.get(nida), hi - lo, shape_of(leafa), leaf_dtype(leafa)))
    # the Hessian of f(args[argnums]) as jacobian(grad): output tree = grad tree
    out = []
    for sa, spec_a in enumerate(rec.specs):
        out_leaves = []
        for ka, (leafa, nida) in enumerate(zip(spec_a.leaves, spec_a.ids)):
            per_arg = []
            for sb, spec_b in enumerate(rec.specs):
                row = []
                for kb, (leafb, nidb) in enumerate(zip(spec_b.leaves, spec_b.ids)):
                    if nida is None or nidb is None:
                        row.append(NOTANGENT)
                        continue
                    shape = shape_of(leafa) + shape_of(leafb)
                    pieces = cols[(sa, ka, sb, kb)]
                    if not pieces:
                        row.append(_zeros_block(shape, leaf_dtype(leafa)))
                    else:
                        row.append(_finish(np.moveaxis(concat_batches(pieces), 0, -1), shape))
                per_arg.append(pytree.unflatten(spec_b.treedef, row))
            out_leaves.append(per_arg[0] if single else tuple(per_arg))
        out.append(pytree.unflatten(spec_a.treedef, out_leaves))
    return out[0] if single else tuple(out)
