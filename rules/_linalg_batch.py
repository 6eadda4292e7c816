"""Batches of directions for the linear-algebra rules (``LinalgRule`` of
rules/_linalg_util.py).

A batch holds k directions along a leading axis: the inputs' tangents, the
output's cotangent and the cotangent's tangent have shape ``(k,) + shape``
(a structural zero stays one for the whole batch; the first-order cotangent
of an HVP, shared by every direction, is unbatched). Each method returns the
stacked per-direction results:

* ``pushforward_batched``: the rule's ``pfb`` where written by hand (solve,
  inv, det, slogdet: one factorization for the whole batch), else ``pf``
  once per direction;
* ``pullback_batched``: the rule's ``pbb``; else, for a rule whose pullback
  is its transposed ``pf``, ``pf`` recorded once on a local tape and swept
  back with the whole batch of cotangents; else ``pb`` once per direction;
* ``pullback_with_tangents_batched``: the pullback recorded once (traced)
  and swept forward with the whole batch of tangents, the jvp of the
  pullback along k directions at once; a rule with a hand-written ``pbt``
  calls it once per direction.

Values traced on an enclosing tape (a batched sweep inside a function being
differentiated) take the per-direction paths, which record their work.
"""

import numpy as np

from chainrules.arguments import check_tangent, trace_args
from chainrules.graph import Tape
from chainrules.sweep_batch import slice_of
from chainrules.tangents import ZERO, is_zero
from chainrules.tracing import Traced

from ._linalg_base import all_zero, cotangent_pairs, is_inexact, project_cotangent, zeros_of

__all__ = ["any_traced", "batch_count", "broadcasting_pb", "broadcasting_pf", "fold_columns",
           "jvp_batched", "lift", "pullback_batched", "pullback_with_tangents_batched",
           "pushforward_batched", "solve_rhs", "stack"]


def _leaves(vals):
    for v in vals:
        if isinstance(v, (tuple, list)):
            yield from _leaves(v)
        else:
            yield v


def any_traced(*vals):
    """Whether any value is traced (on an enclosing tape)."""
    return any(isinstance(v, Traced) for v in _leaves(vals))


def batch_count(*vals):
    """The number of directions of the batched values among ``vals``."""
    for v in _leaves(vals):
        if v is not None and not is_zero(v) and hasattr(v, "shape"):
            return v.shape[0]
    return None


def stack(cols):
    """One batched value from per-direction values (``ZERO``/None where
    structurally zero, filled with zeros): ZERO when every one is."""
    ref = next((c for c in cols if c is not None and not is_zero(c)), None)
    if ref is None:
        return ZERO
    zero = None
    out = []
    for c in cols:
        if c is None or is_zero(c):
            if zero is None:
                zero = np.zeros(np.shape(ref), np.asarray(ref).dtype)
            c = zero
        out.append(c)
    return np.stack(out)


def _stack_outputs(outs, multi):
    if not multi:
        return stack(outs)
    n = len(next(o for o in outs if isinstance(o, tuple)))
    return tuple(stack([o[m] if isinstance(o, tuple) else ZERO for o in outs])
                 for m in range(n))


# -- hand-written batches from maps that broadcast -------------------------------
def broadcasting_pf(pf):
    """A ``pfb`` from a ``pf`` that takes a leading batch axis on its
    tangents as it is: every tangent enters through elementwise products,
    matrix products and reductions over trailing axes, with operands of no
    more axes than the tangent itself (zero tangents broadcast unbatched)."""
    def pfb(r, xds, k):
        return pf(r, r._materialize(xds))
    pfb.__name__ = pf.__name__ + "_batched"
    return pfb


def broadcasting_pb(pb):
    """A ``pbb`` from a ``pb`` that takes a leading batch axis on its
    cotangent as it is (as ``broadcasting_pf``)."""
    def pbb(r, G, k):
        return pb(r, G)
    pbb.__name__ = pb.__name__ + "_batched"
    return pbb


def lift(t, rank):
    """A batch ``t`` (``(k,) + s``) with ones after its batch axis, up to
    ``rank`` axes: it broadcasts against unbatched operands as its slices do."""
    return np.reshape(t, t.shape[:1] + (1,) * (rank - t.ndim) + t.shape[1:])


def fold_columns(solve, rhs, shape):
    """``solve(rhs_j)`` for every direction of a batch ``rhs`` (``(k, ...,
    n, m)``, broadcast to ``(k,) + shape``) by one call of ``solve`` on
    ``(..., n, k * m)``: the directions become more right-hand sides of one
    factored matrix (one LU per matrix, not one per direction)."""
    k = rhs.shape[0]
    rhs = np.broadcast_to(rhs, (k,) + tuple(shape))
    lead, (n, m) = tuple(shape[:-2]), tuple(shape[-2:])
    nd = len(shape)
    cols = np.transpose(rhs, tuple(range(1, nd)) + (0, nd))        # (..., n, k, m)
    sol = solve(np.reshape(cols, lead + (n, k * m)))
    return np.moveaxis(np.reshape(sol, lead + (n, k, m)), -2, 0)


def solve_rhs(bd, td_x, vec, rank):
    """The right-hand sides ``bd_j - op(Ad_j) x`` of a solve's tangent on a
    batch: ``bd`` the batch of b's tangents (ZERO or ``(k,) + b.shape``,
    a vector b's as columns), ``td_x`` the batch of ``op(Ad_j) @ x`` (or
    None), both lifted to ``rank`` axes."""
    rhs = None
    if not is_zero(bd):
        rhs = lift(np.reshape(bd, bd.shape + (1,)) if vec else bd, rank)
    if td_x is not None:
        rhs = -td_x if rhs is None else rhs - td_x
    return rhs


# -- pushforward -----------------------------------------------------------------
def pushforward_batched(r, xds):
    """The output's tangents along a batch of input tangents ``xds`` (one
    per positional argument, ZERO where not traced)."""
    if all(is_zero(t) for t in xds):
        return ZERO
    k = batch_count(xds)
    if r.d.pfb is not None and not any_traced(r.xs, r.y, xds):
        return r.d.pfb(r, xds, k)
    outs = [r.d.pf(r, r._materialize([slice_of(t, j) for t in xds])) for j in range(k)]
    return _stack_outputs(outs, isinstance(r.y, tuple))


# -- pullback --------------------------------------------------------------------
def _cotangent_batches(r, G, k):
    """One batched cotangent per positional argument (None where not traced)."""
    traced = any_traced(r.xs, r.y, G)
    if r.d.pbb is not None and not traced:
        return r.d.pbb(r, G, k)
    if r.d.pb is None and not traced:
        return _transpose_batched(r, G, k)
    per = [r.cotangents(slice_of(G, j)) for j in range(k)]
    return [None if i is None else stack([p[m] for p in per]) for m, i in enumerate(r.ids)]


def pullback_batched(r, G):
    """``(NodeId, batched cotangent)`` pairs for a batch ``G`` of cotangents."""
    if all_zero(G):
        return []
    cots = _cotangent_batches(r, G, batch_count(G))
    return [(i, project_cotangent(c, x)) for i, c, x in zip(r.ids, cots, r.xs)
            if i is not None and c is not None and not is_zero(c)]


def _transpose_batched(r, G, k):
    """The transposed pushforward on a batch: ``pf`` recorded once on a
    local tape (traced tangents at zero) and swept back from its outputs
    seeded with ``G`` (the pairing ``Re(sum(g * t))`` of ``transpose_pushforward``)."""
    local = Tape()
    xds, leaves = [], []
    for i, x in zip(r.ids, r.xs):
        if i is None:
            xds.append(zeros_of(x) if is_inexact(x) else None)
            leaves.append(None)
        else:
            z = zeros_of(x)
            nid = local.leaf(z)
            xds.append(Traced(z, nid, local))
            leaves.append(nid)
    try:
        t = r.d.pf(r, xds)
    finally:
        local.active = False
    outs, seeds = [], []
    for gk, tk in cotangent_pairs(G, t):
        if not is_zero(gk) and type(tk) is Traced and tk.tape is local:
            outs.append(tk.node)
            seeds.append(gk)
    if not outs:
        return [None if n is None else ZERO for n in leaves]
    grads = local.backward(outs, seeds, batch=k)
    res = [None if n is None else grads.get(n) for n in leaves]
    return [None if n is None else (ZERO if c is None else c) for n, c in zip(leaves, res)]


# -- pullback_with_tangents ------------------------------------------------------
def pullback_with_tangents_batched(r, g, GD, tangents, out_tangent=None):
    """``(NodeId, cotangent, batched tangent of it)`` triples: ``g`` shared,
    ``GD`` and the inputs' ``tangents`` batches of directions."""
    xds = r._expand(tangents)
    if all_zero(g) or all(is_zero(t) for t in xds):
        c, cd = dict(r.pullback(g)), dict(pullback_batched(r, GD))
        return [(i, c.get(i, ZERO), cd.get(i, ZERO)) for i in r.inputs()]
    k = batch_count(xds)
    if r.d.pbt is not None or any_traced(r.xs, r.y, g, GD, xds):
        return _per_direction(r, g, GD, tangents, out_tangent, k)
    return _pullback_jvp_batched(r, g, GD, xds, k)


def _per_direction(r, g, GD, tangents, out_tangent, k):
    """``pullback_with_tangents`` once per direction, stacked."""
    per = []
    for j in range(k):
        ot = None if out_tangent is None else slice_of(out_tangent, j)
        per.append(r.pullback_with_tangents(g, slice_of(GD, j),
                                            tuple(slice_of(t, j) for t in tangents),
                                            out_tangent=ot))
    return [(nid, c, stack([p[m][2] for p in per])) for m, (nid, c, _) in enumerate(per[0])]


def _pullback_jvp_batched(r, g, GD, xds, k):
    """``pullback_jvp`` along k directions: the pullback traced once at
    ``(inputs, output, g)`` and swept forward with the batches of the inputs'
    tangents, the output's tangents (from ``pf``) and ``GD``."""
    pos = [m for m, i in enumerate(r.ids) if i is not None]
    yd = pushforward_batched(r, xds)
    multi = isinstance(r.y, tuple)
    if multi:
        if is_zero(GD):
            GD = (ZERO,) * len(g)
        g = tuple(zeros_of(y) if is_zero(gk) and not is_zero(gdk) else gk
                  for y, gk, gdk in zip(r.y, g, GD))
        yd = tuple(ZERO if not is_inexact(y) else t for y, t in zip(r.y, yd))
    x_p = tuple(r.xs[m] for m in pos)
    x_t = tuple(xds[m] for m in pos)

    def pullback_of(xp, y, gg):
        xs = list(r.xs)
        for m, v in zip(pos, xp):
            xs[m] = v
        aux = r.aux
        if aux is not None:  # saved factors depend on x: recompute them traced
            y, aux = r.d.prepare(tuple(xs), r.kw)
        r2 = type(r)(r.d, r.ids, tuple(xs), tuple(y) if multi else y, r.kw, aux)
        cots = r2.cotangents(tuple(gg) if multi else gg)
        return tuple(cots[m] for m in pos)

    out = []
    for m, (c, cd) in zip(pos, jvp_batched(pullback_of, (x_p, r.y, g), (x_t, yd, GD), k,
                                           r.d.name)):
        c = ZERO if not is_inexact(c) else project_cotangent(c, r.xs[m])
        cd = ZERO if not is_inexact(cd) else project_cotangent(cd, r.xs[m])
        out.append((r.ids[m], c, cd))
    return out


def jvp_batched(fn, primals, tangents, k, name):
    """``fn``'s forward derivative at ``primals`` along k directions at once:
    ``fn`` (returning a flat tuple) traced once and swept forward with the
    batches ``tangents`` (pytrees like ``primals``, ZERO where a primal does
    not move). Returns ``(value, batched tangent or ZERO)`` per output."""
    tape = Tape()
    try:
        args, specs = trace_args(tape, primals, range(len(primals)), name)
        outs = fn(*args)
    finally:
        tape.active = False
    seeds = {}
    for spec, p, t in zip(specs, primals, tangents):
        leaves, _ = check_tangent(t, p, name, entry="pullback_with_tangents", batch=True)
        for nid, tv in zip(spec.ids, leaves):
            if nid is not None and not is_zero(tv):
                seeds[nid] = tv
    tans = tape.forward(seeds, batch=k)
    res = []
    for o in outs:
        if type(o) is Traced and o.tape is tape:
            t = tans[o.node]
            res.append((o.value, ZERO if t is None else t))
        else:
            res.append((o, ZERO))
    tape.free()
    return res
