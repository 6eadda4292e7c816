"""Shape rules: reshaping, transposing, joining, splitting, tiling, padding.

Every operation here is linear in its array arguments, so one adjoint
(``transpose``) per operation gives all three sweeps: the pullback is the
adjoint, the pushforward is the operation itself applied to the tangent, and
``pullback_with_tangents`` is the pullback applied to the cotangent and to
its tangent (no second-order term). The adjoints are written with NumPy
calls that are rules themselves, so they differentiate again.

Covered here: reshape, ravel (and x.flatten), copy, astype (between
inexact dtypes), expand_dims, squeeze, transpose, moveaxis, swapaxes,
broadcast_to, tile, repeat, flip, fliplr, flipud, rot90, roll, pad
(constant, edge, reflect, symmetric, wrap), diag, diagonal, diagflat, triu,
tril; and the helper rules of operations on several arrays, whose rules
(broadcast_arrays, atleast_1d/2d/3d, concatenate, stack, hstack, vstack,
dstack, column_stack, append, split, array_split, hsplit, vsplit, dsplit)
are in ``shape_pieces.py``.

Operations of several arrays (``np.concatenate([a, b])``) accept any mix of
traced and constant pieces; operations with several outputs (``np.split``,
``np.broadcast_arrays``) give unused outputs a zero cotangent.

Batches of directions: the rules of several arrays (joins, splits,
broadcast_arrays, atleast_nd) take a leading batch axis on every piece, the
join or split axis one further (``batched = True`` in ``shape_pieces.py``).

``scatter_add(g, index, shape)`` (zeros of ``shape`` with ``g`` added at
``index``, repeats accumulating) is the adjoint of every gather; it is a
primitive with its own rule, so adjoints built on it differentiate again.
"""

import numpy as np

from chainrules.arrays import computes_eagerly, is_array
from chainrules.derived import LinearRule, linear_rule, unbroadcast
from chainrules.errors import MissingRuleError
from chainrules.rule import MultiOutput
from chainrules.registry import accepts_sequences, op_name, register
from chainrules.rule import ReverseRule
from chainrules.tangents import ZERO, Structural
from chainrules.primitives import primitive
from chainrules.tracing import astype, untraced

from ._util import ndim_of, shape_of


# -- scatter_add: the adjoint of every gather ----------------------------------------
def is_basic(index):
    """True for an index made only of ints, slices, None and Ellipsis (no repeats)."""
    parts = index if type(index) is tuple else (index,)
    for p in parts:
        if p is None or p is Ellipsis or type(p) is slice:
            continue
        if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            continue
        return False
    return True


@primitive
def scatter_add(g, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices
    accumulate): the adjoint of ``x[index]`` for ``x`` of ``shape``."""
    if type(g) is np.ndarray or not is_array(g):
        out = np.zeros(shape, np.result_type(g))
        if is_basic(index):
            out[index] = g
        else:
            np.add.at(out, index, g)
        return out
    if computes_eagerly(g):  # a staged value: zeros of its type, written into
        out = np.zeros_like(g, shape=shape)
        if is_basic(index):
            out[index] = g
        else:
            np.add.at(out, index, g)
        return out
    return _scatter_add_lazy(g, index, shape)


def _scatter_add_lazy(g, index, shape):
    """``scatter_add`` for dask and other array types: zeros of ``g``'s type
    with ``g`` assigned at ``index``. ``np.add.at`` has no lazy form, so an
    index that selects an element twice (repeated integers) raises."""
    out = np.zeros_like(g, shape=shape)
    parts = index if type(index) is tuple else (index,)
    for p in parts:
        if isinstance(p, np.ndarray) and p.dtype.kind in "iu":
            flat = np.unique(p.ravel(), return_counts=True)[1]
            if flat.size and flat.max() > 1:
                raise MissingRuleError(
                    f"the cotangent of x[index] with repeated integer indices on a "
                    f"{type(g).__name__} array needs a scatter-add, which "
                    f"{type(g).__module__.split('.')[0]} cannot do lazily; gather "
                    "with unique indices, or use NumPy arrays for this operation")
    if any(p is None for p in parts) and is_basic(index):
        index, g = _without_new_axes(parts, g, len(shape))
    out[index] = g
    return out


def _without_new_axes(parts, g, ndim):
    """A basic index (``is_basic``) without its ``None`` entries, and ``g``
    (shaped like ``x[index]``) without the size-1 axes they made: dask's item
    assignment takes no new axes."""
    n_used = sum(1 for p in parts if p is not None and p is not Ellipsis)
    axis, new = 0, []
    for p in parts:
        if p is None:
            new.append(axis)
            axis += 1
        elif p is Ellipsis:
            axis += ndim - n_used
        elif type(p) is slice:
            axis += 1
    return tuple(p for p in parts if p is not None), np.squeeze(g, axis=tuple(new))


def _scatter_add_transpose(g, g_shape, index, shape):
    # ``g`` is broadcast to ``out[index]``'s shape when it is written
    return unbroadcast(g[index], g_shape)


linear_rule(scatter_add, _scatter_add_transpose)


# -- helpers ----------------------------------------------------------------------
class NamedLinearRule(LinearRule):
    """A ``LinearRule`` whose tangent map is not the registered op itself
    (``np.sort`` pushes tangents through a gather), named after the op."""

    __slots__ = ("label",)

    def __init__(self, label, x_id, fwd, transpose, shape, args, kwargs):
        super().__init__(x_id, fwd, transpose, shape, args, kwargs)
        self.label = label

    @property
    def name(self):
        return self.label


class ZipLinearRule(ReverseRule):
    """Base of linear rules with several inputs or outputs.

    ``pullback`` must return one pair per traced input, in ``inputs()``
    order (``ZeroTangent()`` where there is no contribution), or ``[]`` for
    a structurally zero cotangent; then ``pullback_with_tangents`` pairs the
    pullbacks of the cotangent and of its tangent positionally, which stays
    right when the same node appears twice (``np.stack([x, x])``).
    """

    __slots__ = ()
    linear = True

    def pullback_with_tangents(self, g, gd, tangents):
        a = self.pullback(g)
        b = self.pullback(gd)
        if not a:
            return [(nid, ZERO, c) for nid, c in b]
        if not b:
            return [(nid, c, ZERO) for nid, c in a]
        return [(nid, c, cd) for (nid, c), (_, cd) in zip(a, b)]

    def pullback_with_tangents_batched(self, g, GD, tangents):
        """The same pairing for a batch ``GD`` of cotangent tangents, in a
        subclass with ``batched = True`` (and a ``pullback_batched``)."""
        a = self.pullback(g)
        b = self.pullback_batched(GD)
        if not a:
            return [(nid, ZERO, c) for nid, c in b]
        if not b:
            return [(nid, c, ZERO) for nid, c in a]
        return [(nid, c, cd) for (nid, c), (_, cd) in zip(a, b)]


def batch_size(values):
    """The number of directions of the first batched (non-structural) value."""
    for v in values:
        if not isinstance(v, Structural):
            return v.shape[0]
    return None


def traced_only(ids):
    return tuple(i for i in ids if i is not None)


class PiecesRule(ZipLinearRule):
    """Base of linear rules over a sequence of pieces (``np.concatenate``,
    ``np.select``, ...): ``ids`` has one entry per piece (``None`` for
    constants); when the whole sequence is one traced array, ``whole`` is
    its id and the pieces are its rows. ``dtypes`` are the pieces' dtypes."""

    __slots__ = ("label", "ids", "shapes", "whole", "dtypes", "out_dtype")

    def __init__(self, label, ids, shapes, whole, dtypes, out_dtype):
        self.label = label
        self.ids = ids
        self.shapes = shapes
        self.whole = whole
        self.dtypes = dtypes
        self.out_dtype = out_dtype

    @property
    def name(self):
        return self.label

    def inputs(self):
        if self.whole is not None:
            return (self.whole,)
        return traced_only(self.ids)

    def _cotangents(self, pieces):
        """Pairs for the inputs from one cotangent per piece."""
        if self.whole is not None:
            return [(self.whole, to_dtype(np.stack(list(pieces)), self.dtypes[0]))]
        return [(nid, to_dtype(p, d)) for nid, p, d in zip(self.ids, pieces, self.dtypes)
                if nid is not None]

    def _tangents(self, tangents):
        """One tangent per piece (``ZeroTangent()`` for constants)."""
        if self.whole is not None:
            t = tangents[0]
            return [t[i] for i in range(len(self.shapes))]
        it = iter(tangents)
        return [ZERO if nid is None else next(it) for nid in self.ids]

    def _cotangents_batched(self, pieces):
        """``_cotangents`` of batched pieces (a leading axis of directions):
        the rows of a whole traced array are stacked after the batch axis."""
        if self.whole is not None:
            return [(self.whole, to_dtype(np.stack(list(pieces), axis=1), self.dtypes[0]))]
        return self._cotangents(pieces)

    def _tangents_batched(self, tangents):
        """``_tangents`` of batched tangents."""
        if self.whole is not None:
            t = tangents[0]
            return [t[:, i] for i in range(len(self.shapes))]
        return self._tangents(tangents)


def reject_traced(op, ids, start):
    for i in ids[start:]:
        if i is not None:
            raise MissingRuleError(
                f"{op_name(op)} is differentiated in its array argument only; "
                "its other arguments (axes, shapes, indices) must not be traced: "
                "wrap them in chainrules.stop_gradient")


def axis_slice(axis, start, stop):
    return (slice(None),) * axis + (slice(start, stop),)


def to_dtype(c, dtype):
    """Cast cotangent ``c`` to its primal's ``dtype`` (real part for a real
    primal); pieces of a mixed-dtype join get cotangents of the output dtype."""
    if isinstance(c, Structural) or dtype is None or c.dtype == dtype:
        return c
    if c.dtype.kind == "c" and dtype.kind != "c":
        c = np.real(c)
    return c.astype(dtype)


def dtype_of(v):
    d = getattr(v, "dtype", None)
    return d if d is not None else np.asarray(v).dtype


def first_dtype(values):
    for v in values:
        if not isinstance(v, Structural):
            return v.dtype
    return None


# -- reshape-like ops: the adjoint is a reshape back ----------------------------------
def reshape_back(g, shape, *args, **kwargs):
    return np.reshape(g, shape)


def _concrete_order(x, order):
    """Resolve ravel/reshape order 'A' and 'K' against x's memory layout."""
    if order in ("C", "F", None):
        return order or "C"
    v = untraced(x)
    flags = getattr(v, "flags", None)
    if flags is None or flags.c_contiguous:
        return "C"
    if flags.f_contiguous:
        return "F"
    if order == "A":
        return "C"
    raise MissingRuleError(
        "numpy.ravel(x, order='K') of a non-contiguous traced array follows its memory "
        "layout, which the tangents do not share; pass order='C' or order='F'")


def _reshape_transpose(g, xshape, *args, **kwargs):
    order = args[1] if len(args) > 1 else kwargs.get("order", "C")
    # "C" is not passed on: some array libraries (dask) take no order argument
    return np.reshape(g, xshape) if order == "C" else np.reshape(g, xshape, order=order)


def _reshape_batched(t, newshape, order="C"):
    shape = (newshape,) if np.ndim(newshape) == 0 else tuple(newshape)
    return np.reshape(t, (np.shape(t)[0],) + shape)


def _reshape_back_batched(g, xshape, *args, **kwargs):
    return np.reshape(g, (np.shape(g)[0],) + tuple(xshape))


@register(np.reshape)
def _reshape_maker(ids, x, *args, **kwargs):
    reject_traced(np.reshape, ids, 1)
    args = list(args)
    if len(args) > 1:
        args[1] = _concrete_order(x, args[1])
    elif "order" in kwargs:
        kwargs = dict(kwargs, order=_concrete_order(x, kwargs["order"]))
    kwargs.pop("copy", None)
    y = np.reshape(x, *args, **kwargs)
    # batches of C-ordered reshapes: the same reshape after the batch axis
    c_order = (args[1] if len(args) > 1 else kwargs.get("order", "C")) == "C"
    forms = (_reshape_batched, _reshape_back_batched) if (
        c_order and len(args) == 1 and not kwargs) else None
    return y, LinearRule(ids[0], np.reshape, _reshape_transpose, shape_of(x),
                         tuple(args), kwargs, forms)


def _ravel_transpose(g, shape, order="C"):
    return np.reshape(g, shape) if order == "C" else np.reshape(g, shape, order=order)


@register(np.ravel)
def _ravel_maker(ids, x, order="C"):
    order = _concrete_order(x, order)
    args = () if order == "C" else (order,)
    return np.ravel(x, *args), LinearRule(ids[0], np.ravel, _ravel_transpose,
                                          shape_of(x), args, {})


linear_rule(np.copy, lambda g, shape, *a, **k: g)


def _astype_transpose(g, shape, dtype, src):
    return to_dtype(g, src)


def _astype_tangent(t, dtype, src):
    return astype(t, dtype)


@register(astype)
def _astype_maker(ids, x, dtype):
    src = dtype_of(x)
    return astype(x, dtype), NamedLinearRule("chainrules.tracing.astype", ids[0],
                                             _astype_tangent, _astype_transpose,
                                             shape_of(x), (dtype, src), {})


linear_rule(np.expand_dims, reshape_back)
linear_rule(np.squeeze, reshape_back)


def _transpose_transpose(g, shape, axes=None):
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort([a % len(shape) for a in axes]))


def _batch_perm(axes, nd):
    """The permutation of a batch (axis 0 first) for ``axes`` of one direction."""
    if axes is None:
        return (0,) + tuple(range(nd, 0, -1))
    return (0,) + tuple(a % nd + 1 for a in axes)


def _transpose_batched(t, axes=None):
    return np.transpose(t, _batch_perm(axes, np.ndim(t) - 1))


def _transpose_transpose_batched(g, shape, axes=None):
    return np.transpose(g, np.argsort(_batch_perm(axes, len(shape))))


linear_rule(np.transpose, _transpose_transpose,
            batched=(_transpose_batched, _transpose_transpose_batched))


def _moveaxis_transpose(g, shape, source, destination):
    return np.moveaxis(g, destination, source)


linear_rule(np.moveaxis, _moveaxis_transpose)
linear_rule(np.swapaxes, lambda g, shape, axis1, axis2: np.swapaxes(g, axis1, axis2))
linear_rule(np.broadcast_to, lambda g, xshape, *a, **k: unbroadcast(g, xshape))


# -- tile, repeat -------------------------------------------------------------------
def _tile_transpose(g, shape, reps):
    reps = tuple(reps) if np.ndim(reps) else (int(reps),)
    d = max(len(shape), len(reps))
    s = (1,) * (d - len(shape)) + tuple(shape)
    r = (1,) * (d - len(reps)) + reps
    if r == (1,) * d:
        return np.reshape(g, shape)
    interleaved = []
    for ri, si in zip(r, s):
        interleaved += [ri, si]
    g = np.reshape(g, interleaved)
    return np.reshape(np.sum(g, axis=tuple(range(0, 2 * d, 2))), shape)


linear_rule(np.tile, _tile_transpose)


def _repeat_transpose(g, shape, repeats, axis=None):
    if axis is None or len(shape) == 0:
        # NumPy repeats a 0-d array along any axis as an array of one element
        n = int(np.prod(shape, dtype=np.int64))
        return np.reshape(_repeat_transpose(g, (n,), repeats, 0), shape)
    axis = axis % len(shape)
    n = shape[axis]
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.reshape(repeats, -1)[0])
        if r == 0:
            return np.zeros(shape, g.dtype)
        split = shape[:axis] + (n, r) + shape[axis + 1:]
        return np.sum(np.reshape(g, split), axis=axis + 1)
    src = np.repeat(np.arange(n), repeats)
    return scatter_add(g, (slice(None),) * axis + (src,), shape)


linear_rule(np.repeat, _repeat_transpose)


# -- flips, rotations, rolls -----------------------------------------------------------
linear_rule(np.flip, lambda g, shape, axis=None: np.flip(g, axis))
linear_rule(np.fliplr, lambda g, shape: np.fliplr(g))
linear_rule(np.flipud, lambda g, shape: np.flipud(g))
linear_rule(np.rot90, lambda g, shape, k=1, axes=(0, 1): np.rot90(g, -k, axes))


def _roll_transpose(g, shape, shift, axis=None):
    back = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -np.asarray(shift)
    return np.roll(g, back, axis)


linear_rule(np.roll, _roll_transpose)


# -- pad ------------------------------------------------------------------------------
_GATHER_PADS = ("edge", "reflect", "symmetric", "wrap")


def _pad_pairs(pad_width, ndim):
    return np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (ndim, 2))


def _pad_index(shape, pad_width, mode, pad_kwargs):
    """Per-axis source indices of a gather-type padding (edge, reflect, ...)."""
    pairs = _pad_pairs(pad_width, len(shape))
    return np.ix_(*[np.pad(np.arange(n), (int(b), int(a)), mode=mode, **pad_kwargs)
                    for n, (b, a) in zip(shape, pairs)])


def _pad_tangent(t, pad_width, mode, pad_kwargs, index):
    if mode == "constant":  # the constant values are not part of the tangent
        return np.pad(t, pad_width)
    return np.pad(t, pad_width, mode, **pad_kwargs)


def _pad_transpose(g, shape, pad_width, mode, pad_kwargs, index):
    if index is None:
        pairs = _pad_pairs(pad_width, len(shape))
        return g[tuple(slice(int(b), int(b) + n) for (b, _), n in zip(pairs, shape))]
    return scatter_add(g, index, shape)


@register(np.pad)
def _pad_maker(ids, x, pad_width, mode="constant", **kwargs):
    reject_traced(np.pad, ids, 1)
    y = np.pad(x, pad_width, mode, **kwargs)
    shape = shape_of(x)
    if mode == "constant":
        index = None
    elif mode in _GATHER_PADS and kwargs.get("reflect_type", "even") == "even":
        index = _pad_index(shape, pad_width, mode, kwargs)
    else:
        raise MissingRuleError(
            f"numpy.pad with mode={mode!r} {kwargs or ''} has no rule; differentiable "
            "modes are 'constant', 'edge', 'reflect', 'symmetric' and 'wrap' "
            "(reflect_type='even'); build other paddings from np.concatenate of slices")
    return y, NamedLinearRule("numpy.pad", ids[0], _pad_tangent, _pad_transpose, shape,
                              (pad_width, mode, kwargs, index), {})


# -- diagonals and triangles -------------------------------------------------------------
def _diag_indices(length, offset):
    i = np.arange(length)
    return i + max(-offset, 0), i + max(offset, 0)


def _diagonal_transpose(g, shape, offset=0, axis1=0, axis2=1):
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    rest = tuple(s for k, s in enumerate(shape) if k not in (a1, a2))
    rows, cols = _diag_indices(g.shape[-1], offset)
    moved = scatter_add(g, (Ellipsis, rows, cols), rest + (shape[a1], shape[a2]))
    return np.moveaxis(moved, (-2, -1), (a1, a2))


linear_rule(np.diagonal, _diagonal_transpose)


def _diag_transpose(g, shape, k=0):
    if len(shape) == 1:
        return np.diagonal(g, k)
    return _diagonal_transpose(g, shape, k)


linear_rule(np.diag, _diag_transpose)
linear_rule(np.diagflat, lambda g, shape, k=0: np.reshape(np.diagonal(g, k), shape))
linear_rule(np.triu, lambda g, shape, k=0: unbroadcast(np.triu(g, k), shape))
linear_rule(np.tril, lambda g, shape, k=0: unbroadcast(np.tril(g, k), shape))
