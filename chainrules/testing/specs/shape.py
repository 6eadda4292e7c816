"""Specs for rules/shape.py.

These operations are linear and dtype-agnostic, so every spec runs in
float64, float32 and complex128. Constant pieces of joins are integer
arrays (never differentiated), which also tests mixed dtypes.
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.tracing import astype

C = ("float64", "float32", "complex128")


def _arr(draw, dtype, shape, domain="real"):
    return draw(crs.arrays(dtype, shape, domain))


def _x(min_dims=0, max_dims=3, **extra):
    """Sampler of one array; ``extra`` maps kwarg names to draw functions."""
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(crs.shapes(min_dims, max_dims)))
        return (x,), {k: f(draw, x) for k, f in extra.items()}
    return sample


def _const(draw, shape):
    return np.asarray(draw(st.integers(0, 2**31)) % 7 - 3 + np.zeros(shape, int))


# -- reshape-like --------------------------------------------------------------------
def _reshape(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes()))
    shape = draw(st.sampled_from([(-1,), (1, -1), (-1, 1), x.shape[::-1], x.shape + (1,)]))
    order = draw(st.sampled_from(["C", "F"]))
    return (x, shape), {"order": order}


def _ravel(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes()))
    return (x, draw(st.sampled_from(["C", "F"]))), {}


def _transpose(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes()))
    axes = draw(st.one_of(st.none(), st.permutations(range(x.ndim)).map(tuple)))
    return (x, axes), {}


def _two_axes(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    a = draw(st.integers(-x.ndim, x.ndim - 1))
    b = draw(st.integers(-x.ndim, x.ndim - 1))
    return (x, a, b), {}


def _moveaxis(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    n = draw(st.integers(1, x.ndim))
    src = draw(st.permutations(range(x.ndim)))[:n]
    dst = draw(st.permutations(range(x.ndim)))[:n]
    return (x, tuple(src), tuple(dst)), {}


def _expand_dims(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 2)))
    axis = draw(st.sampled_from([0, -1, (0, -1)]))
    return (x, axis), {}


def _squeeze(draw, dtype):
    shape = list(draw(crs.shapes(0, 3)))
    pos = draw(st.integers(0, len(shape)))
    shape.insert(pos, 1)
    x = _arr(draw, dtype, tuple(shape))
    axis = draw(st.sampled_from([None, pos, pos - len(shape)]))
    return (x, axis), {}


def _broadcast_to(draw, dtype):
    s, t = draw(crs.broadcastable_shapes(2))
    target = np.broadcast_shapes(s, t)
    return (_arr(draw, dtype, s), target), {}


def _broadcast_arrays(draw, dtype):
    s, t = draw(crs.broadcastable_shapes(2))
    return (_arr(draw, dtype, s), _arr(draw, dtype, t)), {}


def _atleast(draw, dtype):
    return (_arr(draw, dtype, draw(crs.shapes(0, 3))),), {}


def _atleast_multi(draw, dtype):
    shape = draw(crs.shapes(0, 2))
    return (_arr(draw, dtype, shape), _arr(draw, dtype, shape)), {}


# -- joins ------------------------------------------------------------------------------
def _join(kind):
    def sample(draw, dtype):
        if kind == "stack":
            base = draw(crs.shapes(0, 2))
            shapes = [base] * 3
            axis = draw(st.integers(-len(base) - 1, len(base)))
        elif kind == "concatenate":
            base = list(draw(crs.shapes(1, 3)))
            axis = draw(st.integers(-len(base), len(base) - 1))
            shapes = []
            for _ in range(3):
                b = list(base)
                b[axis] = draw(st.integers(1, 3))
                shapes.append(tuple(b))
        else:  # hstack, vstack, dstack, column_stack: one shape for all pieces
            lo = {"hstack": 0, "vstack": 0, "dstack": 0, "column_stack": 0}[kind]
            hi = 2 if kind == "column_stack" else 3
            shapes = [draw(crs.shapes(lo, hi))] * 3
            axis = None
        a = _arr(draw, dtype, shapes[0])
        b = _arr(draw, dtype, shapes[2])
        c = _const(draw, shapes[1])
        kw = {} if axis is None else {"axis": axis}
        return (a, c, b), kw
    return sample


def _stack_rows(draw, dtype):
    """One array whose rows are the pieces: ``np.stack(x, axis)``."""
    base = draw(crs.shapes(0, 2))
    x = _arr(draw, dtype, (draw(st.integers(1, 3)),) + base)
    return (x,), {"axis": draw(st.integers(-len(base) - 1, len(base)))}


def _concatenate_rows(draw, dtype):
    """One array whose rows are the pieces: ``np.concatenate(x, axis)``."""
    base = draw(crs.shapes(1, 2))
    x = _arr(draw, dtype, (draw(st.integers(1, 3)),) + base)
    axis = draw(st.one_of(st.none(), st.integers(-len(base), len(base) - 1)))
    return (x,), {"axis": axis}


def _concat_none(draw, dtype):
    a = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    b = _arr(draw, dtype, draw(crs.shapes(0, 2)))
    return (a, _const(draw, (2,)), b), {"axis": None}


def _concat_mixed(draw, dtype):
    """Pieces of two precisions (the output has the wider one) and an empty
    piece along the join axis."""
    base = list(draw(crs.shapes(1, 3)))
    axis = draw(st.integers(-len(base), len(base) - 1))
    empty = list(base)
    empty[axis] = 0
    other = np.float32 if np.dtype(dtype) != np.float32 else np.float64
    b = np.asarray(_arr(draw, "float64", tuple(base)), other)
    return (_arr(draw, dtype, tuple(base)), b, _arr(draw, dtype, tuple(empty))), {"axis": axis}


def _join_call(op):
    def call(a, c, b, **kw):
        return op([a, c, b, a], **kw)
    call.__name__ = f"{op.__name__}_call"
    return call


def _append(draw, dtype):
    a = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    if draw(st.booleans()):
        return (a, _arr(draw, dtype, draw(crs.shapes(0, 2)))), {}
    axis = draw(st.integers(-a.ndim, a.ndim - 1))
    shape = list(a.shape)
    shape[axis] = draw(st.integers(1, 2))
    return (a, _arr(draw, dtype, tuple(shape))), {"axis": axis}


# -- splits -----------------------------------------------------------------------------
def _split(op, min_dims, axis_of):
    def sample(draw, dtype):
        shape = list(draw(crs.shapes(min_dims, 3)))
        axis = axis_of(len(shape))
        k = draw(st.integers(1, 3))
        shape[axis] = k * draw(st.integers(1, 2))
        x = _arr(draw, dtype, tuple(shape))
        if op in ("split", "array_split"):
            return (x, k), {"axis": axis}
        return (x, k), {}
    return sample


def _split_unequal(draw, dtype):
    shape = list(draw(crs.shapes(1, 3)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = _arr(draw, dtype, tuple(shape))
    sections = draw(st.integers(1, shape[axis] + 1))
    return (x, sections), {"axis": axis}


def _split_indices(draw, dtype):
    shape = list(draw(crs.shapes(1, 3)))
    n = shape[0]
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    return (_arr(draw, dtype, tuple(shape)), cuts), {}


def _first_output_twice(x, cuts):
    parts = np.split(x, cuts)
    return parts[0] * 2.0 if parts[0].size else np.sum(parts[-1])


# -- tile, repeat, flips, rolls ----------------------------------------------------------
def _tile(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3, max_side=3)))
    reps = draw(st.one_of(st.integers(1, 3),
                          st.lists(st.integers(0, 2), min_size=1, max_size=4).map(tuple)))
    return (x, reps), {}


def _repeat(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    n = x.size if axis is None else x.shape[axis]
    repeats = draw(st.one_of(st.integers(0, 3),
                             st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    return (x, repeats, axis), {}


def _flip(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    return (x,), {"axis": draw(crs.axes(x.ndim))}


def _rot90(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(2, 3)))
    axes = tuple(draw(st.permutations(range(x.ndim)))[:2])
    return (x, draw(st.integers(-1, 3)), axes), {}


def _roll(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    if x.ndim and draw(st.booleans()):
        axis = tuple(draw(st.permutations(range(x.ndim)))[:draw(st.integers(1, x.ndim))])
        shift = tuple(draw(st.integers(-5, 5)) for _ in axis)
        return (x, shift, axis), {}
    return (x, draw(st.integers(-5, 5))), {}


def _pad(mode):
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
        hi = 2 if mode == "edge" or mode == "constant" else 5
        pw = tuple((draw(st.integers(0, hi)), draw(st.integers(0, hi))) for _ in x.shape)
        kw = {"mode": mode}
        if mode == "constant":
            kw["constant_values"] = draw(st.sampled_from([0.0, 1.5]))
        return (x, pw), kw
    return sample


# -- diagonals and triangles -----------------------------------------------------------------
def _diag(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 2)))
    return (x, draw(st.integers(-2, 2))), {}


def _diagonal(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(2, 3)))
    a1, a2 = draw(st.permutations(range(x.ndim)))[:2]
    if draw(st.booleans()):
        a1 -= x.ndim
    return (x, draw(st.integers(-2, 2)), a1, a2), {}


def _diagflat(draw, dtype):
    return (_arr(draw, dtype, draw(crs.shapes(0, 2))), draw(st.integers(-2, 2))), {}


def _tri(draw, dtype):
    return (_arr(draw, dtype, draw(crs.shapes(1, 3))), draw(st.integers(-2, 2))), {}


def _astype(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes()))
    # upcasts only: a downcast would put float32 rounding under a float64 tolerance
    target = {"float64": np.complex128, "float32": np.float64,
              "complex128": np.complex128}[np.dtype(dtype).name]
    return (x, np.dtype(target)), {}


SPECS = [
    RuleSpec(np.reshape, _reshape, C),
    RuleSpec(np.reshape, _reshape, C, call=lambda x, s, order="C": x.reshape(s, order=order),
             name="Traced.reshape"),
    RuleSpec(np.ravel, _ravel, C),
    RuleSpec(np.ravel, _x(), C, call=lambda x: x.flatten(), name="Traced.flatten"),
    RuleSpec(np.copy, _x(), C),
    RuleSpec(astype, _astype, C),
    RuleSpec(np.transpose, _transpose, C),
    RuleSpec(np.transpose, _x(), C, call=lambda x: x.T, name="Traced.T"),
    RuleSpec(np.moveaxis, _moveaxis, C),
    RuleSpec(np.swapaxes, _two_axes, C),
    RuleSpec(np.swapaxes, _two_axes, C, call=lambda x, a, b: x.swapaxes(a, b),
             name="Traced.swapaxes"),
    RuleSpec(np.expand_dims, _expand_dims, C),
    RuleSpec(np.squeeze, _squeeze, C),
    RuleSpec(np.squeeze, _squeeze, C, call=lambda x, axis: x.squeeze(axis),
             name="Traced.squeeze"),
    RuleSpec(np.broadcast_to, _broadcast_to, C),
    RuleSpec(np.broadcast_arrays, _broadcast_arrays, C),
    RuleSpec(np.broadcast_arrays, _broadcast_arrays, C, wrt=(0,),
             name="np.broadcast_arrays-one-constant"),
    RuleSpec(np.atleast_1d, _atleast, C),
    RuleSpec(np.atleast_2d, _atleast, C),
    RuleSpec(np.atleast_3d, _atleast, C),
    RuleSpec(np.atleast_3d, _atleast_multi, C, name="np.atleast_3d-several"),
    RuleSpec(np.concatenate, _join("concatenate"), C, call=_join_call(np.concatenate)),
    RuleSpec(np.concatenate, _concat_none, C, call=_join_call(np.concatenate),
             name="np.concatenate-axis-None"),
    RuleSpec(np.concatenate, _concatenate_rows, C, name="np.concatenate-one-array"),
    RuleSpec(np.concatenate, _concat_mixed, C, call=lambda a, b, e, axis: np.concatenate(
        [a, b, e], axis=axis), name="np.concatenate-mixed-dtypes"),
    RuleSpec(np.stack, _join("stack"), C, call=_join_call(np.stack)),
    RuleSpec(np.stack, _stack_rows, C, name="np.stack-one-array"),
    RuleSpec(np.hstack, _join("hstack"), C, call=_join_call(np.hstack)),
    RuleSpec(np.vstack, _join("vstack"), C, call=_join_call(np.vstack)),
    RuleSpec(np.dstack, _join("dstack"), C, call=_join_call(np.dstack)),
    RuleSpec(np.column_stack, _join("column_stack"), C, call=_join_call(np.column_stack)),
    RuleSpec(np.append, _append, C),
    RuleSpec(np.split, _split("split", 1, lambda nd: -1), C),
    RuleSpec(np.split, _split_indices, C, call=_first_output_twice, name="np.split-one-output"),
    RuleSpec(np.array_split, _split("array_split", 1, lambda nd: 0), C),
    RuleSpec(np.array_split, _split_unequal, C, name="np.array_split-unequal"),
    RuleSpec(np.hsplit, _split("hsplit", 1, lambda nd: 0 if nd == 1 else 1), C),
    RuleSpec(np.vsplit, _split("vsplit", 2, lambda nd: 0), C),
    RuleSpec(np.dsplit, _split("dsplit", 3, lambda nd: 2), C),
    RuleSpec(np.tile, _tile, C),
    RuleSpec(np.repeat, _repeat, C),
    RuleSpec(np.repeat, _repeat, C, call=lambda x, r, axis: x.repeat(r, axis),
             name="Traced.repeat"),
    RuleSpec(np.flip, _flip, C),
    RuleSpec(np.fliplr, _x(2, 3), C),
    RuleSpec(np.flipud, _x(1, 3), C),
    RuleSpec(np.rot90, _rot90, C),
    RuleSpec(np.roll, _roll, C),
    RuleSpec(np.pad, _pad("constant"), C, name="np.pad-constant"),
    RuleSpec(np.pad, _pad("edge"), C, name="np.pad-edge"),
    RuleSpec(np.pad, _pad("reflect"), C, name="np.pad-reflect"),
    RuleSpec(np.pad, _pad("symmetric"), C, name="np.pad-symmetric"),
    RuleSpec(np.pad, _pad("wrap"), C, name="np.pad-wrap"),
    RuleSpec(np.diag, _diag, C),
    RuleSpec(np.diagonal, _diagonal, C),
    RuleSpec(np.diagonal, _diagonal, C, call=lambda x, k, a1, a2: x.diagonal(k, a1, a2),
             name="Traced.diagonal"),
    RuleSpec(np.diagflat, _diagflat, C),
    RuleSpec(np.triu, _tri, C),
    RuleSpec(np.tril, _tri, C),
]
