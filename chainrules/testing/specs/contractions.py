"""Specs for rules/contractions.py: matmul, dot, vdot, inner, outer,
tensordot, einsum, kron, cross, over 0-d, 1-D, 2-D, N-D and batched
(broadcasting) shapes."""

import operator

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

C = ("float64", "float32", "complex128")


def _pair(draw, dtype, sa, sb):
    return draw(crs.arrays(dtype, sa)), draw(crs.arrays(dtype, sb))


def _side():
    return st.integers(1, 3)


def _matmul(draw, dtype):
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched"]))
    m, k, n = draw(_side()), draw(_side()), draw(_side())
    if kind == "vv":
        sa, sb = (k,), (k,)
    elif kind == "mv":
        sa, sb = (m, k), (k,)
    elif kind == "vm":
        sa, sb = (k,), (k, n)
    elif kind == "mm":
        sa, sb = (m, k), (k, n)
    else:
        ba, bb = draw(crs.broadcastable_shapes(2, min_dims=1, max_dims=2, max_side=3))
        sa = ba + (m, k) if draw(st.booleans()) else (k,)
        sb = bb + (k, n)
    return _pair(draw, dtype, sa, sb), {}


def _dot(draw, dtype, min_a=0):
    na, nb = draw(st.integers(min_a, 3)), draw(st.integers(0, 3))
    k = draw(_side())
    sa = tuple(draw(st.lists(_side(), min_size=na, max_size=na)))
    sb = tuple(draw(st.lists(_side(), min_size=nb, max_size=nb)))
    if na and nb:
        sa = sa[:-1] + (k,)
        sb = (k,) if nb == 1 else sb[:-2] + (k,) + sb[-1:]
    return _pair(draw, dtype, sa, sb), {}


def _inner(draw, dtype):
    na, nb = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    k = draw(_side())
    sa = tuple(draw(st.lists(_side(), min_size=na, max_size=na)))
    sb = tuple(draw(st.lists(_side(), min_size=nb, max_size=nb)))
    if na and nb:
        sa, sb = sa[:-1] + (k,), sb[:-1] + (k,)
    return _pair(draw, dtype, sa, sb), {}


def _vdot(draw, dtype):
    sa = draw(crs.shapes(min_dims=1))
    n = int(np.prod(sa))
    sb = draw(st.sampled_from([sa, (n,)]))
    return _pair(draw, dtype, sa, sb), {}


def _outer(draw, dtype):
    return _pair(draw, dtype, draw(crs.shapes()), draw(crs.shapes())), {}


def _tensordot(draw, dtype):
    sa = draw(crs.shapes(max_dims=3))
    na = len(sa)
    form = draw(st.sampled_from(["int", "pair", "scalars"] if na else ["int"]))
    if form == "int":
        n = draw(st.integers(0, na))
        sb = sa[na - n:] + draw(crs.shapes(max_dims=2))
        axes = n
    else:
        k = draw(st.integers(1, na)) if form == "pair" else 1
        ax_a = draw(st.lists(st.integers(0, na - 1), min_size=k, max_size=k, unique=True))
        free_b = draw(crs.shapes(max_dims=2))
        nb = len(free_b) + k
        ax_b = draw(st.permutations(range(nb)))[:k]
        sb = [None] * nb
        for i, j in zip(ax_a, ax_b):
            sb[j] = sa[i]
        it = iter(free_b)
        sb = tuple(s if s is not None else next(it) for s in sb)
        ax_a = [a - na if draw(st.booleans()) else a for a in ax_a]
        axes = (ax_a[0], ax_b[0]) if form == "scalars" else (ax_a, list(ax_b))
    return _pair(draw, dtype, sa, sb), {"axes": axes}


EINSUM_CASES = [
    # (subscripts, shapes): explicit/implicit output, ellipsis, diagonals,
    # traces, broadcasting, several operands
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 2)]),
    ("ba,ac", [(2, 3), (3, 2)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->", [(2, 1, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i", [(1, 3), (2, 3)]),
    ("i...->...", [(2, 3, 2)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 1)]),  # a summed index of size 1 in one operand only
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ii,ij,j->", [(2, 2), (2, 3), (3,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,i,i", [(3,), (3,), (3,)]),
    ("ij,j", [(2, 3), (3,)]),
    (",ij->ij", [(), (2, 3)]),
    ("ijk,ikj->i", [(2, 3, 3), (2, 3, 3)]),
]


def _einsum(draw, dtype):
    subs, shapes = draw(st.sampled_from(EINSUM_CASES))
    ops = tuple(draw(crs.arrays(dtype, s)) for s in shapes)
    return (subs,) + ops, {}


def _einsum_pair(draw, dtype):
    subs, shapes = draw(st.sampled_from([c for c in EINSUM_CASES if len(c[1]) == 2]))
    a = draw(crs.arrays(dtype, shapes[0]))
    b = draw(crs.arrays(dtype, shapes[1], "nonzero"))
    return (subs, a, b), {}


def _einsum_angle_call(subs, a, b):
    # np.angle of a real array (0 or pi) is traced with a structurally zero
    # tangent: the einsum's pushforward gets ZeroTangent() for that operand
    return np.einsum(subs, a, np.angle(b))


def _einsum_sublist(draw, dtype):
    a = draw(crs.arrays(dtype, (2, 3)))
    b = draw(crs.arrays(dtype, (3, 2)))
    form = draw(st.sampled_from(["matmul", "implicit", "ellipsis"]))
    if form == "matmul":
        return (a, [0, 1], b, [1, 2], [0, 2]), {}
    if form == "implicit":
        return (a, [27, 1], b, [1, 0]), {}
    return (a, [Ellipsis, 1], b, [1, Ellipsis]), {}


def _kron(draw, dtype):
    return _pair(draw, dtype, draw(crs.shapes(max_dims=2, max_side=3)),
                 draw(crs.shapes(max_dims=3, max_side=2))), {}


def _cross(draw, dtype):
    ba, bb = draw(crs.broadcastable_shapes(2, max_dims=2, max_side=3))
    use_axis = draw(st.booleans())
    if use_axis:
        axis = draw(st.integers(0, min(len(ba), len(bb))))
        sa, sb = ba[:axis] + (3,) + ba[axis:], bb[:axis] + (3,) + bb[axis:]
        kw = {"axis": axis}
    else:
        ia = draw(st.integers(0, len(ba)))
        ib = draw(st.integers(0, len(bb)))
        sa = ba[:ia] + (3,) + ba[ia:]
        sb = bb[:ib] + (3,) + bb[ib:]
        nc = max(len(ba), len(bb)) + 1
        kw = {"axisa": ia - len(sa) if draw(st.booleans()) else ia, "axisb": ib,
              "axisc": draw(st.integers(-nc, nc - 1))}
    return _pair(draw, dtype, sa, sb), kw


SPECS = [
    RuleSpec(np.matmul, _matmul, C),
    RuleSpec(np.matmul, _matmul, C, call=operator.matmul, name="operator.matmul"),
    RuleSpec(np.dot, _dot, C),
    RuleSpec(np.dot, lambda draw, dtype: _dot(draw, dtype, 1), C,
             call=lambda a, b: a.dot(b),
             name="ndarray.dot"),
    RuleSpec(np.vdot, _vdot, C),
    RuleSpec(np.inner, _inner, C),
    RuleSpec(np.outer, _outer, C),
    RuleSpec(np.tensordot, _tensordot, C),
    RuleSpec(np.einsum, _einsum, C),
    RuleSpec(np.einsum, _einsum_sublist, C, name="np.einsum-sublist"),
    RuleSpec(np.einsum, _einsum_pair, ("float64", "float32"), call=_einsum_angle_call,
             name="np.einsum-zero-tangent-operand"),
    RuleSpec(np.kron, _kron, C),
    RuleSpec(np.cross, _cross, C),
]
