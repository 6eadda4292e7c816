"""Contractions: matmul (1-D, 2-D, batched), dot, vdot, inner, outer,
tensordot, einsum, kron, cross.

Every contraction except ``matmul``, ``vdot`` and ``cross`` is recorded as an
``EinsumRule``: the operation is described by explicit einsum subscripts
(``dot`` of an N-D and an M-D array, ``tensordot`` with any ``axes``,
``kron`` as an outer product with interleaved axes, ...), and the cotangent
of operand ``k`` is the einsum of the output cotangent with the *other*
operands. That one transpose handles

* indices summed within one operand only (the cotangent is broadcast back),
* size-1 (broadcast) dimensions and ``...`` (the cotangent is summed back),
* repeated indices within one operand (``'ii->i'``, ``'ii'``, ``'iij->j'``):
  the cotangent lives on the diagonal, so it is multiplied onto a constant
  diagonal mask, zeros elsewhere.

Complex inputs follow the JAX convention: every contraction is holomorphic
(no conjugate, transposes only) except ``vdot``, which conjugates its first
argument, so its cotangents are ``conj(g * b)`` and ``g * conj(a)``.
"""

import string

import numpy as np

from chainrules.broadcast import unbroadcast_batched
from chainrules.derived import BilinearRule, bilinear_rule, unbroadcast
from chainrules.derived_linear import BatchedBilinear
from chainrules.errors import MissingRuleError, UntraceableError
from chainrules.registry import op_name, register
from chainrules.rule import ReverseRule
from chainrules.staging import plain_array
from chainrules.tangents import ZERO, Structural

from ._util import conj, ndim_of, shape_of

_LETTERS = string.ascii_letters


# -- matmul (bilinear) -------------------------------------------------------------
def _mT(v):
    nd = ndim_of(v)
    return np.transpose(v, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _matmul_tx(g, y, xshape):
    xnd, ynd = len(xshape), ndim_of(y)
    y2, g2 = y, g
    if ynd == 1:
        y2 = np.reshape(y, (-1, 1))
        g2 = np.reshape(g2, shape_of(g2) + (1,))
    if xnd == 1:
        g2 = np.reshape(g2, shape_of(g2)[:-1] + (1,) + shape_of(g2)[-1:])
    gx = np.matmul(g2, _mT(y2))
    if xnd == 1:
        return np.reshape(unbroadcast(gx, (1,) + xshape), xshape)
    return unbroadcast(gx, xshape)


def _matmul_ty(g, x, yshape):
    xnd, ynd = ndim_of(x), len(yshape)
    x2, g2 = x, g
    if xnd == 1:
        x2 = np.reshape(x, (1, -1))
    if ynd == 1:
        g2 = np.reshape(g2, shape_of(g2) + (1,))
    if xnd == 1:
        g2 = np.reshape(g2, shape_of(g2)[:-1] + (1,) + shape_of(g2)[-1:])
    gy = np.matmul(_mT(x2), g2)
    if ynd == 1:
        return np.reshape(unbroadcast(gy, yshape + (1,)), yshape)
    return unbroadcast(gy, yshape)


# batches: each operand promoted as matmul promotes it (a vector x as a row,
# a vector y as a column), and a batched one given ones after its batch axis
# up to the output's rank, so that the batch axis is left of every stacked
# axis and matmul broadcasts it; promoted axes are dropped at the end
def _mm_ranks(xshape, yshape):
    xp = len(xshape) if len(xshape) > 1 else 2
    yp = len(yshape) if len(yshape) > 1 else 2
    return xp, yp, max(xp, yp)


def _mm_x(v, xshape, batched, rank):
    if len(xshape) == 1:
        v = v[..., None, :]
    return _mm_lift(v, batched, max(len(xshape), 2), rank)


def _mm_y(v, yshape, batched, rank):
    if len(yshape) == 1:
        v = v[..., None]
    return _mm_lift(v, batched, max(len(yshape), 2), rank)


def _mm_lift(v, batched, own, rank):
    if batched and own < rank:
        return np.reshape(v, v.shape[:1] + (1,) * (rank - own) + v.shape[1:])
    return v


def _bmm(a, b, a_batched, b_batched):
    """``np.matmul(a, b)`` where one side is a batch of matrices (``(k, r,
    c)``) and the other one matrix: one GEMM over the batch folded into the
    rows, instead of k small products. Anything else: ``np.matmul``. A
    staged value of an ndarray (cr.jit) takes the ndarray's path: the plan
    makes the same GEMM, with eager code's bits."""
    if plain_array(a) and plain_array(b):
        if a_batched and not b_batched and a.ndim == 3 and b.ndim == 2:
            k, r, c = a.shape
            return np.matmul(a.reshape(k * r, c), b).reshape(k, r, b.shape[1])
        if b_batched and not a_batched and b.ndim == 3 and a.ndim == 2:
            k, c, q = b.shape
            bt = np.swapaxes(b, 1, 2).reshape(k * q, c)
            return np.swapaxes(np.matmul(bt, a.T).reshape(k, q, a.shape[0]), 1, 2)
    return np.matmul(a, b)


def _mm_g(g, xshape, yshape):
    if len(yshape) == 1:
        g = g[..., None]
    if len(xshape) == 1:
        g = g[..., None, :]
    return g


def _matmul_tx_batched(g, y, xshape, yshape, g_batched, y_batched):
    _, _, rank = _mm_ranks(xshape, yshape)
    gx = _bmm(_mm_g(g, xshape, yshape), _mT(_mm_y(y, yshape, y_batched, rank)), g_batched,
              y_batched)
    if len(xshape) == 1:
        return np.reshape(unbroadcast_batched(gx, (1,) + xshape), gx.shape[:1] + xshape)
    return unbroadcast_batched(gx, xshape)


def _matmul_ty_batched(g, x, xshape, yshape, g_batched, x_batched):
    _, _, rank = _mm_ranks(xshape, yshape)
    gy = _bmm(_mT(_mm_x(x, xshape, x_batched, rank)), _mm_g(g, xshape, yshape), x_batched,
              g_batched)
    if len(yshape) == 1:
        return np.reshape(unbroadcast_batched(gy, yshape + (1,)), gy.shape[:1] + yshape)
    return unbroadcast_batched(gy, yshape)


def _matmul_batched(x, y, xshape, yshape, x_batched, y_batched):
    _, _, rank = _mm_ranks(xshape, yshape)
    z = _bmm(_mm_x(x, xshape, x_batched, rank), _mm_y(y, yshape, y_batched, rank), x_batched,
             y_batched)
    if len(yshape) == 1:
        z = z[..., 0]
    if len(xshape) == 1:
        z = z[..., 0, :] if len(yshape) > 1 else z[..., 0]
    return z


bilinear_rule(np.matmul, _matmul_tx, _matmul_ty,
              batched=BatchedBilinear(_matmul_tx_batched, _matmul_ty_batched, _matmul_batched))


# -- einsum subscripts ---------------------------------------------------------------
def _label(k):
    if not 0 <= k < 52:
        raise ValueError(f"einsum sublist label {k} out of range [0, 52)")
    return chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26)


def _sublist(sub):
    return "".join("..." if s is Ellipsis else _label(int(s)) for s in sub)


def split_einsum_args(args):
    """``(subscripts, operands)`` from either einsum calling form."""
    if isinstance(args[0], str):
        return args[0], list(args[1:])
    ops, subs = [], []
    rest = list(args)
    while len(rest) >= 2:
        ops.append(rest.pop(0))
        subs.append(_sublist(rest.pop(0)))
    s = ",".join(subs)
    if rest:
        s += "->" + _sublist(rest[0])
    return s, ops


def normalize_subscripts(subscripts, shapes):
    """Explicit subscripts without ``...``: ``(input_subs, output_sub)``."""
    s = subscripts.replace(" ", "")
    if "->" in s:
        ins, out = s.split("->")
    else:
        ins, out = s, None
    subs = ins.split(",")
    if len(subs) != len(shapes):
        raise ValueError(f"einsum: {len(subs)} subscripts for {len(shapes)} operands")
    free = [c for c in _LETTERS if c not in s]
    ell = []
    for sub, shp in zip(subs, shapes):
        ell.append(len(shp) - (len(sub) - 3) if "..." in sub else 0)
    n_ell = max(ell, default=0)
    ell_letters = "".join(free[:n_ell])
    new_subs = [sub.replace("...", ell_letters[n_ell - e:]) if "..." in sub else sub
                for sub, e in zip(subs, ell)]
    if out is None:
        counts = {}
        for sub in subs:
            for c in sub.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        out = out.replace("...", ell_letters)
    return new_subs, out


def _diagonal_mask(sub, shape, dtype):
    """1 where the axes of every repeated letter agree, for the layout ``sub``."""
    mask = None
    for letter in dict.fromkeys(sub):
        pos = [i for i, c in enumerate(sub) if c == letter]
        if len(pos) < 2:
            continue
        n = shape[pos[0]]
        idx = np.arange(n)
        first = idx.reshape(tuple(n if i == pos[0] else 1 for i in range(len(sub))))
        m = None
        for p in pos[1:]:
            other = idx.reshape(tuple(n if i == p else 1 for i in range(len(sub))))
            eq = first == other
            m = eq if m is None else m & eq
        mask = m if mask is None else mask & m
    return mask.astype(dtype)


def einsum_transpose(g, k, subs, out, operands, xshape, optimize=False):
    """Cotangent of operand ``k`` of ``einsum(subs -> out, *operands)``."""
    xs = subs[k]
    uniq = "".join(dict.fromkeys(xs))
    present = set(out)
    for j, s in enumerate(subs):
        if j != k:
            present.update(s)
    reach = "".join(c for c in uniq if c in present)
    size = {}
    for c, n in zip(xs, xshape):
        size.setdefault(c, n)
    others = [operands[j] for j in range(len(subs)) if j != k]
    spec = ",".join([out] + [s for j, s in enumerate(subs) if j != k]) + "->" + reach
    c = np.einsum(spec, g, *others, optimize=optimize)
    # dimensions of size 1 in x that were broadcast against other operands
    cshape = shape_of(c)
    summed = tuple(i for i, letter in enumerate(reach) if size[letter] == 1 and cshape[i] != 1)
    if summed:
        c = np.sum(c, axis=summed, keepdims=True)
    ushape = tuple(size[letter] for letter in uniq)
    if len(reach) != len(uniq):  # letters summed within x only: broadcast back
        c = np.broadcast_to(np.reshape(c, tuple(size[letter] if letter in reach else 1
                                                for letter in uniq)), ushape)
    if len(uniq) != len(xs):  # repeated letters: scatter onto the diagonal
        seen = set()
        layout = []
        for letter in xs:
            layout.append(1 if letter in seen else size[letter])
            seen.add(letter)
        c = np.reshape(c, tuple(layout))
        c = c * _diagonal_mask(xs, xshape, np.finfo(c.dtype).dtype)
    if shape_of(c) != tuple(xshape):
        c = np.broadcast_to(c, tuple(xshape))
    return c


# -- the einsum rule -------------------------------------------------------------------
class EinsumRule(ReverseRule):
    """``z = einsum(subs -> out, *operands)``, linear in every operand.

    ``views`` are the shapes the einsum sees (operands are reshaped to them:
    ravel for ``outer``, leading 1s for ``kron``), ``out_view``/``out_shape``
    the einsum output and the operation's output when they differ.
    """

    __slots__ = ("ids", "pos", "operands", "subs", "out", "views", "shapes",
                 "out_view", "out_shape", "optimize", "op")

    def __init__(self, ids, pos, operands, subs, out, views, shapes, out_view,
                 out_shape, op):
        self.ids = ids
        self.pos = pos
        self.operands = operands
        self.subs = subs
        self.out = out
        self.views = views
        self.shapes = shapes
        self.out_view = out_view
        self.out_shape = out_shape
        self.optimize = "greedy" if len(subs) > 2 else False
        self.op = op

    def inputs(self):
        return self.ids

    def _view(self, k, v):
        return v if shape_of(v) == self.views[k] else np.reshape(v, self.views[k])

    def _transpose(self, g, k, ops):
        if self.out_view != self.out_shape:
            g = np.reshape(g, self.out_view)
        vals = [self._view(j, o) for j, o in enumerate(ops)]
        c = einsum_transpose(g, k, self.subs, self.out, vals, self.views[k], self.optimize)
        if self.views[k] != self.shapes[k]:
            c = np.reshape(c, self.shapes[k])
        return c

    def _apply(self, ops):
        vals = [self._view(j, o) for j, o in enumerate(ops)]
        spec = ",".join(self.subs) + "->" + self.out
        z = np.einsum(spec, *vals, optimize=self.optimize)
        if self.out_view != self.out_shape:
            z = np.reshape(z, self.out_shape)
        return z

    def pullback(self, g):
        # not a linear rule and one output: the engine passes an array here
        # (a structurally zero cotangent reaches pullback_with_tangents only)
        return [(nid, self._transpose(g, k, self.operands))
                for nid, k in zip(self.ids, self.pos)]

    def pushforward(self, tangents):
        t_out = ZERO
        for k, t in zip(self.pos, tangents):
            if isinstance(t, Structural):
                continue
            ops = list(self.operands)
            ops[k] = t
            z = self._apply(ops)
            t_out = z if isinstance(t_out, Structural) else t_out + z
        return t_out

    def pullback_with_tangents(self, g, gd, tangents):
        return self._with_tangents(g, gd, tangents, False)

    def _with_tangents(self, g, gd, tangents, batched):
        """``pullback_with_tangents``; ``batched``: ``gd`` and the tangents
        are batches of directions (``g`` is shared)."""
        if batched:
            lift = self._transpose_batched
        else:
            def lift(v, k, ops, m=None):
                return self._transpose(v, k, ops)
        has_g = not isinstance(g, Structural)
        has_gd = not isinstance(gd, Structural)
        out = []
        for nid, k in zip(self.ids, self.pos):
            c = self._transpose(g, k, self.operands) if has_g else ZERO
            cd = lift(gd, k, self.operands) if has_gd else ZERO
            if has_g:
                for m, t in zip(self.pos, tangents):
                    if m == k or isinstance(t, Structural):
                        continue
                    ops = list(self.operands)
                    ops[m] = t
                    term = lift(g, k, ops, m)
                    cd = term if isinstance(cd, Structural) else cd + term
            out.append((nid, c, cd))
        return out

    # -- batches: one more letter, on the batched operand and on the output ----
    batched = True

    def _batch_letter(self):
        used = set("".join(self.subs) + self.out)
        return next(c for c in _LETTERS if c not in used)

    def _batched_views(self, ops, m, n):
        """The operands as the einsum sees them, operand ``m`` a batch of ``n``."""
        return [np.reshape(o, (n,) + self.views[j]) if j == m and shape_of(o)[1:] != self.views[j]
                else (o if j == m else self._view(j, o)) for j, o in enumerate(ops)]

    def _transpose_batched(self, g, k, ops, m=None):
        """Cotangent of operand ``k`` as a batch: of a batch of cotangents
        ``g`` (``m`` None), or of one ``g`` with operand ``m`` a batch."""
        b = self._batch_letter()
        n = shape_of(g)[0] if m is None else shape_of(ops[m])[0]
        subs = list(self.subs)
        subs[k] = b + subs[k]
        if m is None:
            out = b + self.out
            if self.out_view != self.out_shape:
                g = np.reshape(g, (n,) + self.out_view)
        else:
            out = self.out
            subs[m] = b + subs[m]
            if self.out_view != self.out_shape:
                g = np.reshape(g, self.out_view)
        vals = self._batched_views(ops, m, n)
        c = einsum_transpose(g, k, subs, out, vals, (n,) + self.views[k], self.optimize)
        if self.views[k] != self.shapes[k]:
            c = np.reshape(c, (n,) + self.shapes[k])
        return c

    def pullback_batched(self, g):
        return [(nid, self._transpose_batched(g, k, self.operands))
                for nid, k in zip(self.ids, self.pos)]

    def pushforward_batched(self, tangents):
        b = self._batch_letter()
        t_out = ZERO
        for k, t in zip(self.pos, tangents):
            if isinstance(t, Structural):
                continue
            n = shape_of(t)[0]
            ops = list(self.operands)
            ops[k] = t
            subs = list(self.subs)
            subs[k] = b + subs[k]
            spec = ",".join(subs) + "->" + b + self.out
            z = np.einsum(spec, *self._batched_views(ops, k, n), optimize=self.optimize)
            if self.out_view != self.out_shape:
                z = np.reshape(z, (n,) + self.out_shape)
            t_out = z if isinstance(t_out, Structural) else t_out + z
        return t_out

    def pullback_with_tangents_batched(self, g, gd, tangents):
        return self._with_tangents(g, gd, tangents, True)


def _einsum_rule(op, ids, operands, subs, out, views=None, out_view=None, out_shape=None):
    shapes = tuple(tuple(shape_of(o)) for o in operands)
    views = shapes if views is None else tuple(tuple(v) for v in views)
    pos = tuple(k for k, i in enumerate(ids) if i is not None)
    rids = tuple(ids[k] for k in pos)
    if any(type(i) is tuple for i in rids):
        raise MissingRuleError(f"{op_name(op)}: operands must be arrays, not lists of "
                               "traced values; stack them first (np.stack)")
    return EinsumRule(rids, pos, tuple(operands), tuple(subs), out, views, shapes,
                      out_view, out_shape, op)


@register(np.einsum)
def _einsum_maker(ids, *args, **kwargs):
    if "out" in kwargs and kwargs["out"] is not None:
        raise UntraceableError("numpy.einsum(..., out=...) on a traced value would drop "
                               "its derivative; assign the result to a new name instead")
    z = np.einsum(*args, **kwargs)
    subscripts, operands = split_einsum_args(args)
    if isinstance(args[0], str):
        op_ids = list(ids[1:])
    else:
        op_ids = [ids[i] for i in range(0, 2 * len(operands), 2)]
        if any(ids[i] is not None for i in range(1, len(ids), 2)):
            raise MissingRuleError("numpy.einsum: sublists must not be traced")
    subs, out = normalize_subscripts(subscripts, [shape_of(o) for o in operands])
    zshape = tuple(shape_of(z))
    return z, _einsum_rule(np.einsum, op_ids, operands, subs, out,
                           out_view=zshape, out_shape=zshape)


# -- dot, inner, outer, tensordot, kron: einsum descriptions -------------------------
def _letters(n, start=0):
    return _LETTERS[start:start + n]


def _static(op, ids, names):
    for i, name in zip(ids[2:], names):
        if i is not None:
            raise MissingRuleError(f"{op_name(op)}: argument {name!r} must not be traced")


def _product_subs(na, nb):
    a, b = _letters(na), _letters(nb, na)
    return [a, b], a + b


@register(np.dot)
def _dot_maker(ids, a, b, *args, **kwargs):
    if args or kwargs.get("out") is not None:
        raise UntraceableError("numpy.dot(..., out=...) on a traced value would drop its "
                               "derivative; assign the result to a new name instead")
    z = np.dot(a, b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        subs, out = _product_subs(na, nb)
    else:
        sa = _letters(na)
        c = sa[-1]
        if nb == 1:
            sb = c
            out = sa[:-1]
        else:
            rest = _letters(nb - 1, na)
            sb = rest[:-1] + c + rest[-1]
            out = sa[:-1] + rest
        subs = [sa, sb]
    return z, _einsum_rule(np.dot, ids[:2], (a, b), subs, out,
                           out_view=shape_of(z), out_shape=shape_of(z))


@register(np.inner)
def _inner_maker(ids, a, b):
    z = np.inner(a, b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        subs, out = _product_subs(na, nb)
    else:
        sa = _letters(na)
        sb = _letters(nb - 1, na) + sa[-1]
        subs, out = [sa, sb], sa[:-1] + sb[:-1]
    return z, _einsum_rule(np.inner, ids[:2], (a, b), subs, out,
                           out_view=shape_of(z), out_shape=shape_of(z))


@register(np.outer)
def _outer_maker(ids, a, b, *args, **kwargs):
    if args or kwargs.get("out") is not None:
        raise UntraceableError("numpy.outer(..., out=...) on a traced value would drop "
                               "its derivative; assign the result to a new name instead")
    z = np.outer(a, b)
    views = ((int(np.prod(shape_of(a), dtype=np.int64)),),
             (int(np.prod(shape_of(b), dtype=np.int64)),))
    return z, _einsum_rule(np.outer, ids[:2], (a, b), ["a", "b"], "ab", views=views,
                           out_view=shape_of(z), out_shape=shape_of(z))


def _tensordot_axes(axes, na, nb):
    try:
        n = int(axes)
    except (TypeError, ValueError):
        n = None
    if n is not None and not isinstance(axes, (tuple, list)):
        return list(range(na - n, na)), list(range(n))
    ax_a, ax_b = axes
    ax_a = [ax_a] if np.ndim(ax_a) == 0 else list(ax_a)
    ax_b = [ax_b] if np.ndim(ax_b) == 0 else list(ax_b)
    return [int(i) % na for i in ax_a], [int(i) % nb for i in ax_b]


@register(np.tensordot)
def _tensordot_maker(ids, a, b, *args, **kwargs):
    _static(np.tensordot, ids, ("axes",))
    axes = args[0] if args else kwargs.get("axes", 2)
    z = np.tensordot(a, b, axes)
    na, nb = ndim_of(a), ndim_of(b)
    ax_a, ax_b = _tensordot_axes(axes, na, nb)
    sa = list(_letters(na))
    sb = list(_letters(nb, na))
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = "".join(c for i, c in enumerate(sa) if i not in ax_a) + \
        "".join(c for j, c in enumerate(sb) if j not in ax_b)
    return z, _einsum_rule(np.tensordot, ids[:2], (a, b), ["".join(sa), "".join(sb)], out,
                           out_view=shape_of(z), out_shape=shape_of(z))


@register(np.kron)
def _kron_maker(ids, a, b):
    z = np.kron(a, b)
    sa_, sb_ = tuple(shape_of(a)), tuple(shape_of(b))
    nd = max(len(sa_), len(sb_))
    va = (1,) * (nd - len(sa_)) + sa_
    vb = (1,) * (nd - len(sb_)) + sb_
    la, lb = _letters(nd), _letters(nd, nd)
    out = "".join(x + y for x, y in zip(la, lb))
    out_view = tuple(s for pair in zip(va, vb) for s in pair)
    return z, _einsum_rule(np.kron, ids[:2], (a, b), [la, lb], out, views=(va, vb),
                           out_view=out_view, out_shape=shape_of(z))


# -- vdot: conjugates its first argument ---------------------------------------------
def _vdot_tx(g, b, ashape):
    return np.reshape(conj(g * np.reshape(b, (-1,))), ashape)


def _vdot_ty(g, a, bshape):
    return np.reshape(g * conj(np.reshape(a, (-1,))), bshape)


bilinear_rule(np.vdot, _vdot_tx, _vdot_ty)


# -- cross ----------------------------------------------------------------------------
def _cross_params(axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    return axisa, axisb, axisc


def _to_end(v, axis):
    nd = ndim_of(v)
    ax = axis % nd
    if ax == nd - 1:
        return v
    return np.transpose(v, [i for i in range(nd) if i != ax] + [ax])


def _from_end(v, axis):
    nd = ndim_of(v)
    ax = axis % nd
    if ax == nd - 1:
        return v
    perm = list(range(nd - 1))
    perm.insert(ax, nd - 1)
    return np.transpose(v, perm)


def _cross_check(x, y, axx, axy):
    if shape_of(x)[axx] != 3 or shape_of(y)[axy] != 3:
        raise MissingRuleError(
            "numpy.cross is differentiated for 3-vectors only (2-vectors are "
            "deprecated in NumPy 2); pad the vectors with a zero third component")


def _cross_tx(g, b, ashape, *args, **kwargs):
    axisa, axisb, axisc = _cross_params(*args, **kwargs)
    bv = _to_end(b, axisb)
    gv = _to_end(g, axisc % ndim_of(g))
    a_end = tuple(s for i, s in enumerate(ashape) if i != axisa % len(ashape)) + (3,)
    c = unbroadcast(np.cross(bv, gv), a_end)
    return _from_end(c, axisa % len(ashape))


def _cross_ty(g, a, bshape, *args, **kwargs):
    axisa, axisb, axisc = _cross_params(*args, **kwargs)
    av = _to_end(a, axisa)
    gv = _to_end(g, axisc % ndim_of(g))
    b_end = tuple(s for i, s in enumerate(bshape) if i != axisb % len(bshape)) + (3,)
    c = unbroadcast(np.cross(gv, av), b_end)
    return _from_end(c, axisb % len(bshape))


@register(np.cross)
def _cross_maker(ids, a, b, *args, **kwargs):
    _static(np.cross, ids, ("axisa", "axisb", "axisc", "axis"))
    axisa, axisb, _ = _cross_params(*args, **kwargs)
    _cross_check(a, b, axisa, axisb)
    z = np.cross(a, b, *args, **kwargs)
    return z, BilinearRule(ids[0], ids[1], a if ids[1] is not None else None,
                           b if ids[0] is not None else None, np.cross, _cross_tx,
                           _cross_ty, tuple(shape_of(a)), tuple(shape_of(b)), args, kwargs)
