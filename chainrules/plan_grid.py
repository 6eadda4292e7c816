"""A pass on staged plans: a two-dimensional region whose results the plan
adds into shifted views of one array becomes one step (``kernel_grid``).

The pattern, as the sweeps record the pullback of a 2-d finite difference
(TV, a stencil): a fused region's step giving cotangents ``C1, C2, ...`` of
shape ``(R0, R1)``, then for each of them ``V = D[o0:o0 + R0, o1:o1 + R1]``
and ``np.add(V, C, out=(V,))`` into one array ``D`` of shape ``(R0 + 1,
R1 + 1)``, offsets 0 or 1. Each cotangent and each view is read there
alone, and no value the region reads is written in place anywhere in the
plan or shares memory with one that is. The step replacing them adds into
``D`` as the plan did: the same NumPy calls (``Grid.numpy``), or one
compiled loop once hot.
"""

import operator

import numpy as np

from . import kernel_grid
from .plan_passes import _uses
from .staging import Ref

__all__ = ["scatter_grids"]

#: the most calls between a region and the additions of its results that
#: may run before it
MAX_BETWEEN = 4


def scatter_grids(steps, outputs, meta, is_region, uses, dirty):
    """``steps`` with each region followed by the pattern above written as
    one ``kernel_grid.run`` step. ``uses``: the reads of each value
    (``plan_regions._Counts``); ``dirty(i)``: whether value ``i`` is written
    in place or shares memory with one that is (``plan_regions._written``)."""
    out, k = [], 0
    while k < len(steps):
        step = steps[k]
        found = None
        if step[0] == "call" and is_region(step[1]) and len(step) == 5 \
                and type(step[4]) is tuple and len(step[2]) == 3 and not step[3]:
            found = _grid_at(steps, k, uses, meta, dirty)
        if found is None:
            out.append(step)
            k += 1
        else:
            new, k = found
            out.extend(new)
    return out


def _offset(idx, r, m):
    """0 or 1: the start of a step-1 slice of ``r`` elements of a length-``m``
    axis, else None."""
    if type(idx) is not slice:
        return None
    start, stop, stride = idx.indices(m)
    return start if stride == 1 and stop - start == r and start in (0, 1) else None


def _grid_at(steps, k, uses, meta, dirty):
    """``(step, next position)`` replacing region ``steps[k]`` and the pairs
    of view and addition after it, else None."""
    fn, (program, env, n), kwargs, outs = steps[k][1:5]
    if any(type(v) is Ref and dirty(v.i) for v in env.values()):
        return None
    # (calls between the region and the additions that read none of its
    # results, as the copy of the array added into, run before the step)
    mine = {o.i for o in outs if type(o) is Ref}
    j = k + 1
    while j < len(steps) and j <= k + MAX_BETWEEN and steps[j][0] == "call" \
            and steps[j][1] is not operator.getitem and not _reads(steps[j], mine):
        j += 1
    between = steps[k + 1:j]
    d, dtype, shape = None, None, None
    positions, offsets, seen = [], [], set()
    while j + 1 < len(steps):
        view, add = steps[j], steps[j + 1]
        if view[0] != "call" or add[0] != "call" or len(view) != 5 or len(add) != 5:
            break
        v_fn, v_args, v_kw, w = view[1:5]
        a_fn, a_args, a_kw, a_out = add[1:5]
        if not (v_fn is operator.getitem and not v_kw and len(v_args) == 2
                and type(v_args[0]) is Ref and (d is None or v_args[0].i == d.i)
                and type(w) is Ref and a_fn is np.add and len(a_args) == 2
                and type(a_args[0]) is Ref and a_args[0].i == w.i
                and type(a_args[1]) is Ref and a_out is None
                and set(a_kw) == {"out"} and type(a_kw["out"]) is tuple
                and len(a_kw["out"]) == 1 and type(a_kw["out"][0]) is Ref
                and a_kw["out"][0].i == w.i):
            break
        if d is None:
            d = v_args[0]
            if d.i not in meta or len(meta[d.i][1]) != 2:
                return None
            dtype, shape = meta[d.i]
            r0, r1 = shape[0] - 1, shape[1] - 1
        c, idx = a_args[1], v_args[1]
        pos = next((p for p, o in enumerate(outs) if type(o) is Ref and o.i == c.i), None)
        if pos is None or pos in seen or uses.get(c.i) != 1 or uses.get(w.i) != 1 \
                or meta.get(c.i) != (dtype, (r0, r1)) or type(idx) is not tuple \
                or len(idx) != 2:
            break
        o0, o1 = _offset(idx[0], r0, shape[0]), _offset(idx[1], r1, shape[1])
        if o0 is None or o1 is None:
            break
        seen.add(pos)
        positions.append(pos)
        offsets.append((o0, o1))
        j += 2
    # (the step writes D and gives nothing: a result of the region read
    # elsewhere leaves it as it is)
    if not positions or any(type(o) is Ref and p not in seen and uses.get(o.i, 0)
                            for p, o in enumerate(outs)):
        return None
    grid = kernel_grid.Grid(positions, offsets, shape, dtype)
    new_env = dict(env)
    new_env[kernel_grid.BASE] = d
    return between + [("call", kernel_grid.run, (program, new_env, n, grid), kwargs,
                       None)], j


def _reads(step, values):
    read = set()
    _uses(step[2], read)
    _uses(step[3], read)
    return not read.isdisjoint(values)
