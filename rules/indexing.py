"""Indexing rules: ``x[index]``, take, take_along_axis, sort, partition,
delete, select, choose, and the out-of-place updates ``index_update`` /
``index_add``.

Gathers (``x[index]``, take, take_along_axis, sort, partition, delete) are
linear in ``x``:
their adjoint is ``scatter_add`` (rules/shape.py), which adds the cotangent
back at the gathered positions, so repeated indices accumulate. Basic
indexing (ints, slices with any step, ``None``, ``Ellipsis``), integer
arrays, boolean masks and mixed advanced indexing all go through the same
rule.

``np.sort`` is a gather through the sorting permutation: the cotangent of
``sorted[j]`` goes to the element that landed at ``j``. Ties are broken by
a stable sort (the earlier element first), so among equal elements each
position's cotangent goes to one of them, in their original order; this is a
valid one-sided derivative (``np.sort`` is not differentiable at ties).
``np.partition`` is the gather through ``np.argpartition``.

``np.select`` and ``np.choose`` are masked sums of their choices: each
output element takes the cotangent of the choice it came from.

``index_update(x, index, values)`` and ``index_add(x, index, values)`` are
the differentiable, out-of-place forms of ``x[index] = values`` and
``np.add.at(x, index, values)``; they are exported as
``chainrules.numpy.index_update`` and ``chainrules.numpy.index_add``, and
writes into traced arrays (``x[index] = v``, ``chainrules/writes.py``) are
recorded as ``index_update``. With repeated positions in an advanced index,
``index_update`` keeps what NumPy's assignment keeps: which element of the
values wins each position is asked from NumPy (an assignment of element
numbers), and only the winners receive a cotangent.
"""

import numpy as np

from chainrules.derived import LinearRule, linear_rule, unbroadcast
from chainrules.errors import AutodiffError
from chainrules.registry import accepts_sequences, lookup, op_name, register
from chainrules.staging import Staged
from chainrules.tangents import ZERO, Structural
from chainrules.numpy import index_add, index_update
from chainrules.tracing import getitem, untraced

from ._util import shape_of
from .shape import (NamedLinearRule, PiecesRule, ZipLinearRule, dtype_of, is_basic,
                    reject_traced, traced_only, scatter_add, to_dtype)


# -- x[index] ------------------------------------------------------------------------
def _getitem_transpose(g, shape, index):
    return scatter_add(g, index, shape)


class BasicIndexRule(LinearRule):
    """``x[index]`` with a basic index (ints, slices, None, Ellipsis): a view,
    each element of ``x`` at most once. ``gather_index`` lets the engine add
    the cotangent straight into ``x``'s cotangent buffer (no zeros of x's
    size per index: a loop over ``x[i]`` stays linear in time)."""

    __slots__ = ("gather_index",)


def _batched_index(index):
    """A basic index of one direction, for a batch (axis 0 kept whole)."""
    return (slice(None),) + (index if type(index) is tuple else (index,))


def _getitem_batched(t, index):
    return t[_batched_index(index)]


def _getitem_transpose_batched(g, shape, index):
    # a basic index names each element at most once: placing is adding. The
    # zeros are of g's type: an ndarray's are np.zeros, a staged value's
    # (cr.jit) a step of the plan, a traced value's (nested differentiation)
    # a traced buffer, the write into it recorded
    z = np.zeros_like(g, shape=g.shape[:1] + tuple(shape), order="C")
    z[_batched_index(index)] = g
    return z


linear_rule(getitem, _getitem_transpose)
_general_getitem = lookup(getitem, (np.ndarray, object))
_BASIC_FORMS = (_getitem_batched, _getitem_transpose_batched)


@register(getitem)
def _getitem_maker(ids, x, index):
    if ids[1] is None and (type(index) is int or is_basic(index)):
        # a staged value (cr.jit's recording) indexes as an ndarray: a batch
        # of directions is indexed in one step, not one per direction
        rule = BasicIndexRule(ids[0], getitem, _getitem_transpose, shape_of(x), (index,), {},
                              _BASIC_FORMS if type(x) is np.ndarray or type(x) is Staged
                              else None)
        rule.gather_index = index
        return x[index], rule
    return _general_getitem(ids, x, index)


# -- take, take_along_axis ------------------------------------------------------------------
def _take_indices(indices, n, mode):
    idx = np.asarray(indices)
    if mode == "wrap":
        return idx % n
    if mode == "clip":
        return np.clip(idx, 0, n - 1)
    return idx


def _take_transpose(g, shape, indices, axis=None, out=None, mode="raise"):
    if axis is None or len(shape) == 0:
        # NumPy takes from a 0-d array along any axis as from an array of one element
        size = int(np.prod(shape, dtype=np.int64))
        flat = scatter_add(g, (_take_indices(indices, size, mode),), (size,))
        return np.reshape(flat, shape)
    axis = axis % len(shape)
    idx = _take_indices(indices, shape[axis], mode)
    return scatter_add(g, (slice(None),) * axis + (idx,), shape)


linear_rule(np.take, _take_transpose)


def _along_axis_index(indices, axis, shape):
    """The advanced index equivalent to ``np.take_along_axis(., indices, axis)``."""
    nd = len(shape)
    index = []
    for k in range(nd):
        if k == axis:
            index.append(indices)
        else:
            s = [1] * nd
            s[k] = shape[k]
            index.append(np.arange(shape[k]).reshape(s))
    return tuple(index)


def _take_along_axis_transpose(g, shape, indices, axis=-1):
    if axis is None:
        size = int(np.prod(shape, dtype=np.int64))
        return np.reshape(scatter_add(g, (np.asarray(indices),), (size,)), shape)
    index = _along_axis_index(np.asarray(indices), axis % len(shape), shape)
    return scatter_add(g, index, shape)


linear_rule(np.take_along_axis, _take_along_axis_transpose)


# -- sort: a gather through the (stable) sorting permutation ----------------------------
def _gather(t, index):
    return t[index]


def _gather_transpose(g, shape, index):
    return scatter_add(g, index, shape)


def _permuted_index(x, axis, arg):
    """The advanced index of ``x`` reordered by ``arg(values, axis)`` (argsort,
    argpartition) along ``axis``, or over the flattened array for None."""
    shape = shape_of(x)
    v = untraced(x)
    if axis is None:
        if len(shape) == 0:
            return (None,)
        return np.unravel_index(arg(np.ravel(v), 0), shape)
    if len(shape) == 0:  # a 0-d array has no axis to sort along: NumPy's own error
        np.sort(np.asarray(v), axis=axis)
    axis = axis % len(shape)
    return _along_axis_index(arg(v, axis), axis, shape)


def _sort_params(a, axis=-1, kind=None, order=None, *, stable=None):
    return locals()


def _partition_params(a, kth, axis=-1, kind="introselect", order=None):
    return locals()


def _sort_maker(op, arg):
    params = _partition_params if op is np.partition else _sort_params

    def sort_maker(ids, x, *args, **kwargs):
        reject_traced(op, ids, 1)
        p = params(x, *args, **kwargs)  # positional and keyword forms alike
        axis = p["axis"]
        if p["order"] is not None:
            raise AutodiffError(f"{op_name(op)} with order= (structured arrays) has no rule")
        if op is np.partition:
            kth = p["kth"]
            index = _permuted_index(x, axis, lambda v, a: np.argpartition(v, kth, axis=a))
        else:
            index = _permuted_index(x, axis, arg)
        out = x[index]
        if type(x) is np.ndarray and x.ndim > 1 and axis is not None \
                and not x.flags.c_contiguous:
            # NumPy sorts a copy in x's memory layout (a column-major x gives
            # a column-major result): whether a later reshape or ravel of it
            # is a view depends on that, so the primal keeps it
            laid = np.empty_like(x)
            laid[...] = out
            out = laid
        return out, NamedLinearRule(op_name(op), ids[0], _gather, _gather_transpose,
                                    shape_of(x), (index,), {})

    register(op)(sort_maker)


_sort_maker(np.sort, lambda v, a: np.argsort(v, axis=a, kind="stable"))
_sort_maker(np.partition, None)


# -- delete: a gather of the kept positions ------------------------------------------------
def _delete_tangent(t, index, flat_shape):
    if flat_shape is not None:
        t = np.ravel(t)
    return t[index]


def _delete_transpose(g, shape, index, flat_shape):
    if flat_shape is not None:
        return np.reshape(scatter_add(g, index, flat_shape), shape)
    return scatter_add(g, index, shape)


@register(np.delete)
def _delete_maker(ids, arr, obj, axis=None):
    reject_traced(np.delete, ids, 1)
    shape = shape_of(arr)
    if axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        index, flat = (np.delete(np.arange(n), obj),), (n,)
    else:
        axis = axis % len(shape)
        index, flat = (slice(None),) * axis + (np.delete(np.arange(shape[axis]), obj),), None
    return np.delete(arr, obj, axis), NamedLinearRule(
        "numpy.delete", ids[0], _delete_tangent, _delete_transpose, shape, (index, flat), {})


# -- select, choose: masked sums of the choices -------------------------------------------
class MaskedSumRule(PiecesRule):
    """``out = sum_i mask_i * x_i`` (broadcast): np.select, np.choose."""

    __slots__ = ("masks", "out_shape")

    def __init__(self, label, ids, shapes, masks, out_shape, whole, dtypes, out_dtype):
        super().__init__(label, ids, shapes, whole, dtypes, out_dtype)
        self.masks = masks
        self.out_shape = out_shape

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        if self.whole is not None:  # only the traced rows' shapes matter
            return self._cotangents(unbroadcast(g * m, s)
                                    for m, s in zip(self.masks, self.shapes))
        return self._cotangents(ZERO if nid is None else unbroadcast(g * m, s)
                                for nid, m, s in zip(self.ids, self.masks, self.shapes))

    def pushforward(self, tangents):
        # the engine pushes forward only when some traced piece has an array
        # tangent, so at least one term is added; every mask has the output's
        # shape, so each term (and the total) has it too
        ts = self._tangents(tangents)
        total = None
        for t, m in zip(ts, self.masks):
            if isinstance(t, Structural):
                continue
            term = t * m
            total = term if total is None else total + term
        return to_dtype(total, self.out_dtype)


def _pieces(ids_i, value):
    """(ids, pieces, whole) of a sequence argument that may be one traced array."""
    if type(ids_i) is tuple:
        return ids_i, list(value), None
    if ids_i is None:
        pieces = list(value)
        return (None,) * len(pieces), pieces, None
    pieces = [value[i] for i in range(shape_of(value)[0])]
    return (None,) * len(pieces), pieces, ids_i


@register(np.select)
def _select_maker(ids, condlist, choicelist, default=0):
    if type(ids[0]) is tuple and any(i is not None for i in ids[0]) or (
            ids[0] is not None and type(ids[0]) is not tuple):
        raise AutodiffError("numpy.select: the conditions must be boolean arrays, "
                            "not traced values")
    out = np.select(condlist, choicelist, default)
    out_shape = shape_of(out)
    cids, choices, whole = _pieces(ids[1] if len(ids) > 1 else None, choicelist)
    taken = np.zeros(out_shape, bool)
    masks = []
    for c in condlist:
        c = np.broadcast_to(c, out_shape)
        masks.append(c & ~taken)
        taken = taken | c
    shapes = [shape_of(p) for p in choices]
    dtypes = [dtype_of(p) for p in choices]
    default_id = ids[2] if len(ids) > 2 else None
    if default_id is not None:
        if whole is not None:
            raise AutodiffError("numpy.select with a traced choicelist array and a traced "
                                "default: pass the choices as a list")
        cids = tuple(cids) + (default_id,)
        masks.append(~taken)
        shapes.append(shape_of(default))
        dtypes.append(dtype_of(default))
    if whole is not None:
        dtypes = [dtype_of(choicelist)]
    return out, MaskedSumRule("numpy.select", tuple(cids), tuple(shapes), tuple(masks),
                              out_shape, whole, tuple(dtypes), dtype_of(out))


accepts_sequences(np.select, 0, 1)


@register(np.choose)
def _choose_maker(ids, a, choices, out=None, mode="raise"):
    if ids[0] is not None:
        raise AutodiffError("numpy.choose: the index array must be an integer array, "
                            "not a traced value")
    if out is not None:
        raise AutodiffError("numpy.choose(..., out=...) on traced choices: assign the "
                            "result instead")
    res = np.choose(a, choices, mode=mode)
    out_shape = shape_of(res)
    cids, pieces, whole = _pieces(ids[1] if len(ids) > 1 else None, choices)
    n = len(pieces)
    idx = np.asarray(a)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    masks = tuple(np.broadcast_to(idx == i, out_shape) for i in range(n))
    dtypes = (dtype_of(choices),) if whole is not None else tuple(dtype_of(p) for p in pieces)
    return res, MaskedSumRule("numpy.choose", tuple(cids),
                              tuple(shape_of(p) for p in pieces), masks, out_shape, whole,
                              dtypes, dtype_of(res))


accepts_sequences(np.choose, 1)


# -- index_update, index_add (defined in chainrules.numpy) -----------------------------
#: the ``keep`` of an update at a basic index (see ``IndexUpdateRule``)
BASIC_KEEP = "basic"


class IndexUpdateRule(ZipLinearRule):
    """``index_update`` (``keep`` is the mask of untouched entries, or
    ``BASIC_KEEP`` for a basic index: the entries are those left out by the
    index, zeroed without a mask of ``x``'s size, so that a loop of writes
    into one element each saves O(1) per write) or ``index_add`` (``keep``
    is None). ``wins``: for an update with repeated
    positions, the mask (of ``x[index]``'s shape) of the values' elements
    that NumPy's assignment keeps; None when every element is kept."""

    __slots__ = ("x_id", "v_id", "index", "keep", "x_shape", "v_shape", "x_dtype", "v_dtype",
                 "out_dtype", "wins")

    def __init__(self, x_id, v_id, index, keep, x_shape, v_shape, x_dtype, v_dtype,
                 out_dtype, wins=None):
        self.wins = wins
        self.out_dtype = out_dtype
        self.x_id = x_id
        self.v_id = v_id
        self.index = index
        self.keep = keep
        self.x_shape = x_shape
        self.v_shape = v_shape
        self.x_dtype = x_dtype
        self.v_dtype = v_dtype

    @property
    def name(self):
        return "chainrules.numpy.index_update" if self.keep is not None \
            else "chainrules.numpy.index_add"

    def inputs(self):
        return traced_only((self.x_id, self.v_id))

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        out = []
        if self.x_id is not None:
            gx = g if self.keep is None else self._kept(g)
            out.append((self.x_id, to_dtype(gx, self.x_dtype)))
        if self.v_id is not None:
            gi = g[self.index]
            gv = unbroadcast(gi if self.wins is None else gi * self.wins, self.v_shape)
            out.append((self.v_id, to_dtype(gv, self.v_dtype)))
        return out

    def _kept(self, t):
        """``t`` where the update left ``x`` as it was, zero where it wrote."""
        if self.keep is BASIC_KEEP:
            return index_update(t, self.index, 0)
        return t * self.keep

    def pushforward(self, tangents):
        it = iter(tangents)
        tx = next(it) if self.x_id is not None else ZERO
        tv = next(it) if self.v_id is not None else ZERO
        if isinstance(tv, Structural):
            # tx is an array: the engine never pushes forward a rule whose
            # every input tangent is structurally zero
            return to_dtype(tx if self.keep is None else self._kept(tx), self.out_dtype)
        if isinstance(tx, Structural):
            tx = np.zeros(self.x_shape, self.out_dtype)
        op = index_add if self.keep is None else index_update
        return to_dtype(op(tx, self.index, tv), self.out_dtype)


def _index_maker(op, update):
    def index_maker(ids, x, index, values):
        reject_traced(op, (None,) + tuple(ids[1:2]), 1)
        out = op(x, index, values)
        x_shape = shape_of(x)
        keep = wins = None
        if update:
            if is_basic(index):
                keep = BASIC_KEEP
            else:
                wins = _winners(x_shape, index)
                keep = np.ones(x_shape, bool)
                keep[index] = False
        v_id = ids[2] if len(ids) > 2 else None
        return out, IndexUpdateRule(ids[0], v_id, index, keep, x_shape, shape_of(values),
                                    dtype_of(x), dtype_of(values), dtype_of(out), wins)

    register(op)(index_maker)


def _winners(x_shape, index):
    """For an advanced ``index`` with repeated positions, the mask (of
    ``x[index]``'s shape) of the elements NumPy's ``x[index] = v`` keeps,
    found by NumPy itself (assigning element numbers); None without repeats."""
    count = np.zeros(x_shape, np.intp)
    np.add.at(count, index, 1)
    if not count.size or count.max() <= 1:
        return None
    slots = np.zeros(x_shape, np.intp)[index]
    numbers = np.arange(slots.size).reshape(slots.shape)
    seen = np.full(x_shape, -1, np.intp)
    seen[index] = numbers
    wins = np.zeros(slots.size, bool)
    wins[seen[seen >= 0]] = True
    return wins.reshape(slots.shape)


_index_maker(index_update, True)
_index_maker(index_add, False)
