"""Shape rules of several arrays in or out: broadcast_arrays,
atleast_1d/2d/3d of several arrays, concatenate, stack, hstack, vstack,
dstack, column_stack, append, split, array_split, hsplit, vsplit, dsplit;
``np.block`` as the concatenations it stands for.

Pieces may mix traced and constant arrays; unused outputs of an operation
with several outputs get a zero cotangent. Like every shape rule, each is
linear: one adjoint per operation gives all three sweeps (see ``shape.py``,
which holds the helper rules these build on).
"""

import numpy as np

from chainrules.arrays import is_array
from chainrules.broadcast import expand_batched, unbroadcast_batched
from chainrules.derived import LinearRule, linear_rule, unbroadcast
from chainrules.errors import MissingRuleError
from chainrules.rule import MultiOutput
from chainrules.registry import accepts_sequences, decompose, op_name, register
from chainrules.rule import ReverseRule
from chainrules.tangents import ZERO, Structural
from chainrules.primitives import primitive
from chainrules.tracing import Traced, astype, untraced

from ._util import ndim_of, shape_of
from .shape import (PiecesRule, ZipLinearRule, axis_slice, batch_size, dtype_of, first_dtype,
                    reject_traced, reshape_back, to_dtype, traced_only)


# -- several arrays in, several out: broadcast_arrays, atleast_nd(a, b) ---------------
class MapRule(ZipLinearRule):
    """Output ``k`` is a reshape or broadcast of input ``k``."""

    __slots__ = ("ids", "shapes", "out_shapes", "broadcast", "label")

    def __init__(self, label, ids, shapes, out_shapes, broadcast):
        self.label = label
        self.ids = ids
        self.shapes = shapes
        self.out_shapes = out_shapes
        self.broadcast = broadcast

    @property
    def name(self):
        return self.label

    def inputs(self):
        return traced_only(self.ids)

    def pullback(self, gs, batched=False):
        """Each traced input's cotangent: its output's, summed back over the
        broadcast axes or reshaped (``batched``: behind a leading axis of
        directions)."""
        if isinstance(gs, Structural) or all(isinstance(g, Structural) for g in gs):
            return []
        out = []
        for nid, g, shape in zip(self.ids, gs, self.shapes):
            if nid is None:
                continue
            if isinstance(g, Structural):
                out.append((nid, ZERO))
            elif self.broadcast:
                out.append((nid, unbroadcast_batched(g, shape) if batched
                            else unbroadcast(g, shape)))
            else:
                out.append((nid, np.reshape(g, g.shape[:1] + shape if batched else shape)))
        return out

    def pushforward(self, tangents):
        ts = iter(tangents)
        out = []
        for nid, shape in zip(self.ids, self.out_shapes):
            t = ZERO if nid is None else next(ts)
            if isinstance(t, Structural):
                out.append(ZERO)
            elif self.broadcast:
                out.append(np.broadcast_to(t, shape))
            else:
                out.append(np.reshape(t, shape))
        return tuple(out)

    # batches of directions: the same maps behind a leading batch axis
    batched = True

    def pullback_batched(self, gs):
        return self.pullback(gs, batched=True)

    def pushforward_batched(self, tangents):
        ts = iter(tangents)
        out = []
        for nid, shape, oshape in zip(self.ids, self.shapes, self.out_shapes):
            t = ZERO if nid is None else next(ts)
            if isinstance(t, Structural):
                out.append(ZERO)
            elif self.broadcast:
                t = expand_batched(t, shape, len(oshape))
                out.append(np.broadcast_to(t, t.shape[:1] + oshape))
            else:
                out.append(np.reshape(t, t.shape[:1] + oshape))
        return tuple(out)


def _map_maker(op, broadcast):
    def map_maker(ids, *xs, **kwargs):
        out = op(*xs, **kwargs)
        if not isinstance(out, (tuple, list)):  # atleast_1d(x): one array
            return out, LinearRule(ids[0], op, reshape_back, shape_of(xs[0]), (), {})
        rule = MapRule(op_name(op), tuple(ids), tuple(shape_of(x) for x in xs),
                       tuple(o.shape for o in out), broadcast)
        return MultiOutput(tuple(out)), rule

    register(op)(map_maker)


_map_maker(np.broadcast_arrays, True)
for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    _map_maker(_f, False)


# -- joining: concatenate, stack, hstack, vstack, dstack, column_stack ----------------
class JoinRule(PiecesRule):
    """``out = concatenate([reshape(p_i, r_i) for p_i in pieces], axis)``."""

    __slots__ = ("rshapes", "axis")

    def __init__(self, label, ids, shapes, rshapes, axis, whole, dtypes, out_dtype):
        super().__init__(label, ids, shapes, whole, dtypes, out_dtype)
        self.rshapes = rshapes
        self.axis = axis

    def _pieces(self, g):
        start = 0
        axis = self.axis
        for shape, rshape in zip(self.shapes, self.rshapes):
            stop = start + rshape[axis]
            p = g[axis_slice(axis, start, stop)]
            start = stop
            yield p if rshape == shape else np.reshape(p, shape)

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        return self._cotangents(self._pieces(g))

    def pushforward(self, tangents):
        ts = self._tangents(tangents)
        dtype = self.out_dtype
        parts = []
        for t, shape, rshape in zip(ts, self.shapes, self.rshapes):
            if isinstance(t, Structural):
                parts.append(np.zeros(rshape, dtype))
            else:
                parts.append(to_dtype(t if rshape == shape else np.reshape(t, rshape), dtype))
        return np.concatenate(parts, axis=self.axis)

    # batches of directions: the pieces behind a leading batch axis, the
    # join axis one further
    batched = True

    def pullback_batched(self, G):
        if isinstance(G, Structural):
            return []
        k, axis = G.shape[0], self.axis + 1
        pieces = []
        start = 0
        for shape, rshape in zip(self.shapes, self.rshapes):
            stop = start + rshape[self.axis]
            p = G[axis_slice(axis, start, stop)]
            start = stop
            pieces.append(p if rshape == shape else np.reshape(p, (k,) + shape))
        return self._cotangents_batched(pieces)

    def pushforward_batched(self, tangents):
        ts = self._tangents_batched(tangents)
        k = batch_size(ts)
        dtype = self.out_dtype
        parts = []
        for t, shape, rshape in zip(ts, self.shapes, self.rshapes):
            if isinstance(t, Structural):
                parts.append(np.zeros((k,) + rshape, dtype))
            else:
                t = t if rshape == shape else _behind_batch(t, k, shape, rshape)
                parts.append(to_dtype(t, dtype))
        return np.concatenate(parts, axis=self.axis + 1)


def _behind_batch(t, k, shape, rshape):
    """A batch ``t`` of pieces of ``shape`` as pieces of ``rshape``: where
    ``rshape`` only inserts unit axes (stack, atleast), by indexing with
    ``None`` (a view; one getitem step in a staged plan, cheaper at replay
    than ``np.reshape``), else by ``np.reshape``."""
    index, j = [slice(None)], 0
    for r in rshape:
        if j < len(shape) and r == shape[j]:
            index.append(slice(None))
            j += 1
        elif r == 1:
            index.append(None)
        else:
            return np.reshape(t, (k,) + rshape)
    if j < len(shape):
        return np.reshape(t, (k,) + rshape)
    return t[tuple(index)]


def _concat_layout(pieces, axis=0, *args, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    if axis is None:
        return shapes, [(int(np.prod(s, dtype=np.int64)),) for s in shapes], 0
    return shapes, shapes, axis % len(shapes[0])


def _stack_layout(pieces, axis=0, *args, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    a = axis % (len(shapes[0]) + 1)
    return shapes, [s[:a] + (1,) + s[a:] for s in shapes], a


def _atleast(shape, n, where):
    """The shape ``np.atleast_{n}d`` gives (``where``: how 1-D is padded)."""
    if len(shape) >= n:
        return shape
    if len(shape) == 0:
        return (1,) * n
    if n == 2:
        return (1,) + shape if where == "row" else shape + (1,)
    if len(shape) == 1:
        return (1,) + shape + (1,)
    return shape + (1,)


def _hstack_layout(pieces, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    r = [_atleast(s, 1, None) for s in shapes]
    return shapes, r, 0 if len(r[0]) == 1 else 1


def _vstack_layout(pieces, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    return shapes, [_atleast(s, 2, "row") for s in shapes], 0


def _dstack_layout(pieces, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    return shapes, [_atleast(s, 3, None) for s in shapes], 2


def _column_stack_layout(pieces, **kwargs):
    shapes = [shape_of(p) for p in pieces]
    return shapes, [_atleast(s, 2, "column") for s in shapes], 1


def _join_maker(op, layout):
    def join_maker(ids, pieces, *args, **kwargs):
        reject_traced(op, ids, 1)
        out = op(pieces, *args, **kwargs)
        kw = {k: v for k, v in kwargs.items() if k not in ("dtype", "casting", "out")}
        if ids[0] is None:
            return out, None
        whole = None
        if type(ids[0]) is not tuple:  # one traced array: its rows are the pieces
            whole = ids[0]
            pieces = [pieces[i] for i in range(shape_of(pieces)[0])]
        shapes, rshapes, axis = layout(pieces, *args[:1], **kw)
        ids0 = ids[0] if whole is None else (None,) * len(shapes)
        dtypes = tuple(dtype_of(p) for p in pieces)
        return out, JoinRule(op_name(op), ids0, tuple(shapes), tuple(rshapes), axis, whole,
                             dtypes, dtype_of(out))

    register(op)(join_maker)
    accepts_sequences(op, 0)


_join_maker(np.concatenate, _concat_layout)
_join_maker(np.stack, _stack_layout)
_join_maker(np.hstack, _hstack_layout)
_join_maker(np.vstack, _vstack_layout)
_join_maker(np.dstack, _dstack_layout)
_join_maker(np.column_stack, _column_stack_layout)


@decompose(np.block)
def _block(arrays, **kwargs):
    """``np.block`` as the concatenations it stands for (each recorded by
    the concatenate rule): innermost lists along the last axis, the next
    level along the one before, pieces promoted to the common rank."""
    def depth(a):
        return 1 + depth(a[0]) if type(a) is list and a else 0

    def max_ndim(a):
        return max(max_ndim(b) for b in a) if type(a) is list else ndim_of(a)

    if type(arrays) is not list:
        return np.block(untraced(arrays)) if type(arrays) is not Traced else arrays
    d = depth(arrays)
    n = max(d, max_ndim(arrays))

    def build(a, level):
        if type(a) is list:
            return np.concatenate([build(b, level + 1) for b in a], axis=level - d)
        if type(a) is tuple:
            raise TypeError("np.block takes nested lists, not tuples")
        k = ndim_of(a)
        return a if k == n else np.reshape(a, (1,) * (n - k) + tuple(shape_of(a)))

    return build(arrays, 0)


@register(np.append)
def _append_maker(ids, arr, values, axis=None):
    out = np.append(arr, values, axis)
    pieces = (arr, values)
    shapes = tuple(shape_of(p) for p in pieces)
    if axis is None:
        rshapes, axis = tuple((int(np.prod(s, dtype=np.int64)),) for s in shapes), 0
    else:
        rshapes, axis = shapes, axis % len(shapes[0])
    ids2 = (ids[0], ids[1] if len(ids) > 1 else None)
    return out, JoinRule("numpy.append", ids2, shapes, rshapes, axis, None,
                         tuple(dtype_of(p) for p in pieces), dtype_of(out))


# -- splitting: split, array_split, hsplit, vsplit, dsplit ------------------------------
class SplitRule(ZipLinearRule):
    """Several outputs, the pieces of ``x`` along ``axis``."""

    __slots__ = ("x_id", "op", "args", "kwargs", "out_shapes", "axis")

    def __init__(self, x_id, op, args, kwargs, out_shapes, axis):
        self.x_id = x_id
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.out_shapes = out_shapes
        self.axis = axis

    def inputs(self):
        return (self.x_id,)

    def pullback(self, gs):
        if isinstance(gs, Structural) or all(isinstance(g, Structural) for g in gs):
            return []
        dtype = first_dtype(gs)
        parts = [np.zeros(s, dtype) if isinstance(g, Structural) else g
                 for g, s in zip(gs, self.out_shapes)]
        return [(self.x_id, np.concatenate(parts, axis=self.axis))]

    def pushforward(self, tangents):
        return tuple(self.op(tangents[0], *self.args, **self.kwargs))

    # batches of directions: the pieces behind a leading batch axis, the
    # split axis one further
    batched = True

    def pullback_batched(self, gs):
        if isinstance(gs, Structural) or all(isinstance(g, Structural) for g in gs):
            return []
        dtype = first_dtype(gs)
        k = batch_size(gs)
        parts = [np.zeros((k,) + s, dtype) if isinstance(g, Structural) else g
                 for g, s in zip(gs, self.out_shapes)]
        return [(self.x_id, np.concatenate(parts, axis=self.axis + 1))]

    def pushforward_batched(self, tangents):
        t = tangents[0]
        axis = self.axis + 1
        out, start = [], 0
        for s in self.out_shapes:
            stop = start + s[self.axis]
            out.append(t[axis_slice(axis, start, stop)])
            start = stop
        return tuple(out)


def _split_maker(op, axis_of):
    def split_maker(ids, x, *args, **kwargs):
        reject_traced(op, ids, 1)
        out = op(x, *args, **kwargs)
        axis = axis_of(ndim_of(x), *args[1:], **kwargs) % max(ndim_of(x), 1)
        rule = SplitRule(ids[0], op, args, kwargs, tuple(o.shape for o in out), axis)
        return MultiOutput(list(out)), rule

    register(op)(split_maker)


_split_maker(np.split, lambda nd, axis=0: axis)
_split_maker(np.array_split, lambda nd, axis=0: axis)
_split_maker(np.hsplit, lambda nd: 0 if nd == 1 else 1)
_split_maker(np.vsplit, lambda nd: 0)
_split_maker(np.dsplit, lambda nd: 2)
