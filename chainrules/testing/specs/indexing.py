"""Specs for rules/indexing.py (and the primitive ``scatter_add`` in
rules/shape.py). Indices, masks and condition lists are constants; repeated
integer indices are drawn on purpose, so accumulation is always exercised."""

import numpy as np
from hypothesis import strategies as st

from chainrules.rules.indexing import index_add, index_update
from chainrules.rules.shape import scatter_add
from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.tracing import getitem

C = ("float64", "float32", "complex128")


def _arr(draw, dtype, shape, domain="real"):
    return draw(crs.arrays(dtype, shape, domain))


def _rng(draw):
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def _basic_part(draw, n):
    kind = draw(st.sampled_from(["int", "slice", "rslice", "all"]))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "all":
        return slice(None)
    start = draw(st.one_of(st.none(), st.integers(-n, n)))
    stop = draw(st.one_of(st.none(), st.integers(-n, n)))
    step = draw(st.integers(1, 2)) * (-1 if kind == "rslice" else 1)
    return slice(start, stop, step)


def _basic_index(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    k = draw(st.integers(0, x.ndim))
    parts = [_basic_part(draw, n) for n in x.shape[:k]]
    if draw(st.booleans()):  # an Ellipsis, then parts for the trailing axes it leaves
        m = draw(st.integers(0, x.ndim - k))
        parts += [Ellipsis] + [_basic_part(draw, n) for n in x.shape[x.ndim - m:]]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return (x, tuple(parts)), {}


def _int_array_index(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    rng = _rng(draw)
    n = x.shape[0]
    idx = rng.integers(-n, n, size=draw(crs.shapes(0, 2, max_side=5)))
    return (x, (idx,)), {}


def _mask_index(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    k = draw(st.integers(1, x.ndim))
    mask = _rng(draw).random(x.shape[:k]) < 0.6
    return (x, (mask,)), {}


def _mixed_index(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(2, 3)))
    rng = _rng(draw)
    i = rng.integers(0, x.shape[0], size=4)  # 4 draws of <= 4 values: repeats likely
    j = rng.integers(0, x.shape[-1], size=(1, 4))
    form = draw(st.sampled_from(["adjacent", "split", "ellipsis"]))
    if form == "adjacent":
        idx = (i, rng.integers(0, x.shape[1], size=4))
    elif form == "split":  # advanced indices separated by a slice
        idx = (i, slice(None, None, -1)) + ((j,) if x.ndim == 3 else ())
        if x.ndim == 2:
            idx = (i, slice(None, None, -1))
    else:
        idx = (Ellipsis, j)
    return (x, idx), {}


def _scatter(draw, dtype):
    shape = draw(crs.shapes(1, 3))
    rng = _rng(draw)
    idx = (rng.integers(0, shape[0], size=5),)
    g = _arr(draw, dtype, np.zeros(shape)[idx].shape)
    return (g, idx, shape), {}


def _take(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)))
    rng = _rng(draw)
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    n = x.size if axis is None else x.shape[axis]
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    lo, hi = (-n, n) if mode == "raise" else (-2 * n, 2 * n)
    idx = rng.integers(lo, hi, size=draw(crs.shapes(0, 2)))
    return (x, idx, axis), {"mode": mode}


def _take_along_axis(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    rng = _rng(draw)
    if draw(st.booleans()):
        return (x, rng.integers(0, x.size, size=5), None), {}
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    shape = list(x.shape)
    shape[axis] = draw(st.integers(1, 5))
    return (x, rng.integers(0, x.shape[axis], size=shape), axis), {}


def _sort(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(0, 3)), "distinct")
    if x.ndim == 0:
        return (x, None), {}
    return (x, draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))), {}


def _partition(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)), "distinct")
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    kth = draw(st.one_of(st.integers(-n, n - 1),
                         st.lists(st.integers(0, n - 1), min_size=1, max_size=2,
                                  unique=True).map(tuple)))
    return (x, kth, axis), {}


def _delete(draw, dtype):
    x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    obj = draw(st.one_of(st.integers(-n, n - 1), st.slices(n),
                         st.lists(st.integers(0, n - 1), max_size=3)))
    return (x, obj, axis), {}


def _select(draw, dtype):
    a_shape, b_shape = draw(crs.broadcastable_shapes(2))
    out = np.broadcast_shapes(a_shape, b_shape)
    rng = _rng(draw)
    c1 = rng.random(out) < 0.4
    c2 = rng.random(out[1:] if out else ()) < 0.5
    a = _arr(draw, dtype, a_shape)
    b = _arr(draw, dtype, b_shape)
    d = _arr(draw, dtype, draw(st.sampled_from([(), out])))
    return (a, b, d, c1, c2), {}


def _select_call(a, b, d, c1, c2):
    return np.select([c1, c2], [a, 2.0 * b], default=d)


def _select_stacked(draw, dtype):
    """The choices as one array (its rows), the default a constant."""
    out = draw(crs.shapes(0, 2))
    rng = _rng(draw)
    c1 = rng.random(out) < 0.4
    c2 = rng.random(out) < 0.5
    default = draw(st.sampled_from([0.0, _arr(draw, dtype, out)]))
    return (_arr(draw, dtype, (2,) + out), c1, c2), {"default": default}


def _select_stacked_call(choices, c1, c2, default=0.0):
    return np.select([c1, c2], choices, default=default)


def _choose(draw, dtype):
    a_shape, b_shape = draw(crs.broadcastable_shapes(2, min_dims=1))
    out = np.broadcast_shapes(a_shape, b_shape)
    rng = _rng(draw)
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    idx = rng.integers(0, 3, size=out) if mode == "raise" else rng.integers(-4, 6, size=out)
    const = np.arange(out[-1] if out else 1, dtype=int)
    return (_arr(draw, dtype, a_shape), _arr(draw, dtype, b_shape), idx, const), \
        {"mode": mode}


def _choose_call(a, b, idx, const, mode="raise"):
    return np.choose(idx, [a, const, b], mode=mode)


def _choose_stacked(draw, dtype):
    """The choices as one array (its rows), broadcast against the index."""
    row, ishape = draw(crs.broadcastable_shapes(2))
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    rng = _rng(draw)
    idx = rng.integers(0, 3, size=ishape) if mode == "raise" else \
        rng.integers(-4, 6, size=ishape)
    return (_arr(draw, dtype, (3,) + row), idx), {"mode": mode}


def _update(adv):
    def sample(draw, dtype):
        x = _arr(draw, dtype, draw(crs.shapes(1, 3)))
        rng = _rng(draw)
        n = x.shape[0]
        if adv == "basic":
            index = (slice(draw(st.integers(0, n - 1)), None, draw(st.sampled_from([1, -1]))),)
        elif adv == "unique":
            index = (rng.permutation(n)[:draw(st.integers(1, n))],)
        else:
            index = (rng.integers(0, n, size=5),)
        target = np.zeros(x.shape)[index].shape
        vshape = draw(st.sampled_from([(), target, target[1:]]))
        return (x, index, _arr(draw, dtype, vshape)), {}
    return sample


SPECS = [
    RuleSpec(getitem, _basic_index, C, call=lambda x, i: x[i], name="getitem-basic"),
    RuleSpec(getitem, _int_array_index, C, call=lambda x, i: x[i], name="getitem-int-array"),
    RuleSpec(getitem, _mask_index, C, call=lambda x, i: x[i], name="getitem-mask"),
    RuleSpec(getitem, _mixed_index, C, call=lambda x, i: x[i], name="getitem-mixed"),
    RuleSpec(scatter_add, _scatter, C),
    RuleSpec(np.take, _take, C),
    RuleSpec(np.take, _take, C, call=lambda x, i, axis, mode: x.take(i, axis, mode=mode),
             name="Traced.take"),
    RuleSpec(np.take_along_axis, _take_along_axis, C),
    RuleSpec(np.sort, _sort, ("float64", "float32")),
    RuleSpec(np.partition, _partition, ("float64", "float32")),
    RuleSpec(np.delete, _delete, C),
    RuleSpec(np.select, _select, C, call=_select_call),
    RuleSpec(np.select, _select_stacked, C, call=_select_stacked_call,
             name="np.select-stacked-choices"),
    RuleSpec(np.choose, _choose, C, call=_choose_call),
    RuleSpec(np.choose, _choose_stacked, C,
             call=lambda choices, idx, mode="raise": np.choose(idx, choices, mode=mode),
             name="np.choose-stacked-choices"),
    RuleSpec(index_update, _update("basic"), C, name="index_update-basic"),
    RuleSpec(index_update, _update("unique"), C, name="index_update-advanced"),
    RuleSpec(index_add, _update("repeated"), C, name="index_add-repeated"),
    # repeated positions: the elements NumPy's assignment keeps win
    RuleSpec(index_update, _update("repeated"), C, name="index_update-repeated"),
    # each argument alone: the other one held constant
    RuleSpec(index_update, _update("unique"), C, wrt=(0,), name="index_update-x-alone"),
    RuleSpec(index_update, _update("basic"), C, wrt=(2,), name="index_update-values-alone"),
    RuleSpec(index_add, _update("repeated"), C, wrt=(0,), name="index_add-x-alone"),
]
