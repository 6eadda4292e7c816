"""A pass on staged plans: a sum of matrix products, accumulated one
product at a time, becomes one product of the stacked operands.

A weight that a loop uses at every step (an LSTM's recurrent weight) gets
its cotangent as a sum of one small product per step. The reverse sweep
records it as a chain: ``acc = A_1 @ B_1 + A_2 @ B_2``, then
``np.add(acc, A_t @ B_t, out=acc)`` for each further step (``A_t`` is often
``np.transpose(a_t, (1, 0))``). Since ``sum_t A_t @ B_t`` equals
``[A_1 ... A_n] @ [B_1; ...; B_n]``, ``join_products`` computes the chain
as ``np.concatenate(A, axis=1) @ np.concatenate(B, axis=0)`` where its last
addition was: one product with an inner dimension ``n k`` runs near BLAS's
peak where ``n`` products of inner dimension ``k`` and ``n - 1`` additions
do not (transposed operands are stacked through the arrays they transpose,
so the copies are of contiguous rows).

**Shared runs.** Chains may join the same operands: an LSTM's gradients
of ``Wx`` and ``Wh`` are sums over the same ``dz_t`` (``Wh``'s from the
second step), those of ``Wh`` and ``Wo`` over the same ``h_t`` (``Wo``'s
to the last). Where one chain's operands on a side (the arrays transposed,
where all are transposes) are a run of another's, in order, compared by
value or as the same row of one array, the first reads rows of the
second's joined array instead of joining its own copy, and its product is
made where both are complete: only if its sum is not read before then, and
its operands are not written after its products up to there, nor between
the other's last addition (where the run is joined) and a product after
it. The products and their sums are the same, bit for bit, as unshared.

**Rounding.** Both compute the same sum of the ``n k`` products per entry,
in another order, so the results differ by rounding only. Per entry, with
``u`` the dtype's unit roundoff and ``S = sum_t |A_t| @ |B_t|``: for real
dtypes each order is within ``gamma_m S`` of the exact sum (``m`` roundings
at most on a term's path: ``n k`` joined, ``k + n - 1`` for the chain), so
they differ by at most ``(n k + n + k - 1) u S <= 2 n k u S`` (to first
order in ``u``); for complex dtypes (``|.|`` the modulus) the real and
imaginary parts are real sums of ``2 n k`` terms whose magnitudes add to at
most ``S`` each, which gives ``sqrt(2) (2 n k + 2 k + n - 1) u S <= 4
sqrt(2) n k u S``. Overflow in an intermediate sum, and the floating-point
warnings of the additions (``inf - inf``), may differ likewise: the joined
product is a BLAS call, not ``n - 1`` ufunc calls.

**When.** A chain is joined only where the order of the sum is all that
changes:

* at least ``MIN_TERMS`` products, each of two 2-D operands of one BLAS
  dtype (float32, float64, complex64, complex128) giving that dtype, every
  ``A_t`` of one shape and every ``B_t`` of one shape;
* each product read by its addition alone (not kept, not returned);
* the sum read by nothing but its in-place additions until the last
  (anything may read it after: the joined product is made there);
* no operand written between its product and the last addition, nor any
  value that may share memory with it (alias classes as in
  ``plan_passes.common_subexpressions``: the result of a call that is not
  a ufunc's or a ``_FRESH`` function's may be a view of its arguments; a
  step made for its effect writes every value it is given). The joined
  product reads the operands at the last addition, so they must hold then
  what they held at their own products.
"""

import bisect
import operator

import numpy as np

from .plan_passes import _FRESH, _defines, _uses
from .staging import Ref

__all__ = ["join_products"]

#: the fewest products a chain must have to be joined (two products and
#: one addition gain nothing from a copy of their operands)
MIN_TERMS = 3

#: the dtypes whose products BLAS computes (others gain nothing)
_BLAS_DTYPES = frozenset(np.dtype(c) for c in "fdFD")


class _Term:
    """A product ``m = a @ b`` made at step ``at``; ``key`` is what every
    term of one chain shares: the dtype and the operands' shapes."""

    __slots__ = ("at", "a", "b", "key")

    def __init__(self, at, a, b, key):
        self.at, self.a, self.b, self.key = at, a, b, key


class _Chain:
    """The sum ``acc`` made at step ``start`` and added into at ``adds``."""

    __slots__ = ("start", "adds", "acc", "terms")

    def __init__(self, start, acc, terms):
        self.start, self.adds, self.acc, self.terms = start, [], acc, terms

    @property
    def last(self):
        return self.adds[-1]


def join_products(steps, outputs, meta):
    """``steps`` with every chain of sums of products that may be joined
    (see the module's text) computed as one product of the stacked
    operands. ``outputs``: the plan's result templates; ``meta``: per value
    index, its dtype and shape (``meta[i][:2]``); the values the pass makes
    are added to it."""
    n_products = 0
    for s in steps:
        if s[0] == "call" and s[1] is np.matmul:
            n_products += 1
    if n_products < MIN_TERMS:
        return steps
    made_at = {}
    for k, s in enumerate(steps):
        if s[0] == "call" and type(s[4]) is Ref:
            made_at[s[4].i] = k
    readers = _readers(steps, outputs)
    chains = []
    for k, s in enumerate(steps):
        if not (s[0] == "call" and s[1] is np.add and len(s) == 5 and not s[3]
                and type(s[4]) is Ref and len(s[2]) == 2):
            continue
        x, y = s[2]
        if type(x) is not Ref or type(y) is not Ref:
            continue
        first = _term(x.i, steps, made_at, readers, meta)
        if first is None:
            continue
        second = _term(y.i, steps, made_at, readers, meta)
        if second is None or second.key != first.key:
            continue
        chain = _grow(_Chain(k, s[4].i, [first, second]), steps, made_at, readers, meta)
        if len(chain.terms) >= MIN_TERMS:
            chains.append(chain)
    if not chains:
        return steps
    find, written_at = _writes(steps)
    chains = [c for c in chains if _unwritten(c, steps, made_at, find, written_at)]
    if not chains:
        return steps
    shared = _shared(chains, steps, made_at, readers, find, written_at)
    return _rewrite(steps, outputs, chains, made_at, meta, shared)


def _readers(steps, outputs):
    """Per value, the indices of the steps that read it, in order (an
    output counts as a read at ``len(steps)``)."""
    readers = {}
    for k, s in enumerate(steps):
        ins = set()
        if s[0] == "call":
            _uses(s[2], ins)
            _uses(s[3], ins)
        else:  # a guard reads its value
            ins.add(s[2].i)
        for i in ins:
            readers.setdefault(i, []).append(k)
    ins = set()
    for o in outputs:
        _uses(o, ins)
    for i in ins:
        readers.setdefault(i, []).append(len(steps))
    return readers


def _term(i, steps, made_at, readers, meta):
    """The product that made value ``i``, where it may be a term of a chain
    (two 2-D operands of one BLAS dtype, the result read once), else None."""
    k = made_at.get(i)
    if k is None or len(readers.get(i, ())) != 1:
        return None
    s = steps[k]
    if s[1] is not np.matmul or len(s) != 5 or s[3] or len(s[2]) != 2:
        return None
    a, b = s[2]
    if type(a) is not Ref or type(b) is not Ref:
        return None
    ma = _blas_operands(a.i, b.i, i, meta)
    if ma is None:
        return None
    ma, mb = ma
    return _Term(k, a.i, b.i, (ma[0], tuple(ma[1]), tuple(mb[1])))


def _blas_operands(a, b, out, meta):
    """``(meta[a], meta[b])`` when ``a @ b`` (giving ``out``) is a product of
    two 2-D values of one BLAS dtype giving that dtype, else None."""
    ma, mb, mm = meta.get(a), meta.get(b), meta.get(out)
    if ma is None or mb is None or mm is None:
        return None
    dtype = ma[0]
    if dtype not in _BLAS_DTYPES or mb[0] != dtype or mm[0] != dtype \
            or len(ma[1]) != 2 or len(mb[1]) != 2:
        return None
    return ma, mb


def _added_term(s, acc):
    """The value ``s`` adds into ``acc`` in place (``np.add(acc, v,
    out=(acc,))``, either order of the two), else None."""
    if not (s[0] == "call" and s[1] is np.add and len(s) == 5 and s[4] is None
            and len(s[2]) == 2 and len(s[3]) == 1):
        return None
    out = s[3].get("out")
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    if type(out) is not Ref or out.i != acc:
        return None
    x, y = s[2]
    if type(x) is not Ref or type(y) is not Ref:
        return None
    if x.i == acc and y.i != acc:
        return y.i
    if y.i == acc and x.i != acc:
        return x.i
    return None


def _grow(chain, steps, made_at, readers, meta):
    """``chain`` with the in-place additions of products into its sum that
    follow, up to the first other read of the sum."""
    key = chain.terms[0].key
    for r in readers.get(chain.acc, ()):
        if r >= len(steps):
            break
        v = _added_term(steps[r], chain.acc)
        if v is None:
            break
        term = _term(v, steps, made_at, readers, meta)
        if term is None or term.key != key:
            break
        chain.terms.append(term)
        chain.adds.append(r)
    return chain


def _writes(steps):
    """``(find, written_at)``: ``find(i)`` names the alias class of value
    ``i`` (values that may share memory), ``written_at[c]`` lists in order
    the steps that write into a value of class ``c``."""
    parent = {}

    def find(i):
        p = parent.get(i)
        if p is None:
            return i
        while True:  # (each value on the way pointed at its grandparent)
            q = parent.get(p)
            if q is None:
                return p
            parent[i] = q
            i, p = p, q

    writes = []
    for k, s in enumerate(steps):
        if s[0] != "call":
            continue
        fn, args, kwargs, out = s[1:5]
        if out is None:  # made for its effect: every value given may be written
            touched = set()
            _uses(args, touched)
            _uses(kwargs, touched)
            writes.append((k, touched))
            continue
        if "out" in kwargs:
            touched = set()
            _uses(kwargs["out"], touched)
            writes.append((k, touched))
        if isinstance(fn, np.ufunc) and not kwargs or fn in _FRESH:
            continue
        ins, made = set(), set()
        _uses(args, ins)
        _uses(kwargs, ins)
        _defines(out, made)
        ins |= made
        if len(ins) > 1:
            it = iter(ins)
            root = find(next(it))
            for i in it:
                r = find(i)
                if r != root:
                    parent[r] = root
    written_at = {}
    for k, touched in writes:
        for c in {find(i) for i in touched}:
            written_at.setdefault(c, []).append(k)
    return find, written_at


def _transposed(i, steps, made_at):
    """The value that the 2-D value ``i`` is the transpose of (``x.T``,
    ``np.transpose(x)``, ``np.transpose(x, (1, 0))``), else None."""
    k = made_at.get(i)
    if k is None:
        return None
    s = steps[k]
    if s[1] is not np.transpose or len(s) != 5 or not s[2] or type(s[2][0]) is not Ref:
        return None
    args, kwargs = s[2], s[3]
    axes = args[1] if len(args) == 2 and not kwargs else \
        kwargs.get("axes") if len(args) == 1 and len(kwargs) == 1 else None
    if len(args) == 1 and not kwargs or type(axes) in (tuple, list) and list(axes) == [1, 0]:
        return args[0].i  # (a 2-D result: its source is 2-D, its axes swapped)
    return None


def _unwritten(chain, steps, made_at, find, written_at, last=None):
    """Whether no operand of the chain (nor the array it transposes) may
    be written after its product, up to the chain's last addition (or the
    later step ``last``)."""
    if last is None:
        last = chain.last
    for t in chain.terms:
        classes = {find(t.a), find(t.b)}
        for i in (t.a, t.b):
            src = _transposed(i, steps, made_at)
            if src is not None:
                classes.add(find(src))
        for c in classes:
            ks = written_at.get(c)
            if ks:
                j = bisect.bisect_right(ks, t.at)
                if j < len(ks) and ks[j] <= last:
                    return False
    return True


def _fresh_ids(steps, outputs, meta):
    """``new(dtype, shape)``: a ``Ref`` to a value index no step, output or
    ``meta`` entry uses yet, its dtype and shape entered in ``meta``."""
    top = max(meta, default=-1)
    ids = set()
    for s in steps:
        if s[0] == "call":
            for x in s[2]:
                if type(x) is Ref:
                    if x.i > top:
                        top = x.i
                elif type(x) in (tuple, list, dict):
                    _uses(x, ids)
            if s[3]:
                _uses(s[3], ids)
            out = s[4]
            if type(out) is Ref:
                if out.i > top:
                    top = out.i
            elif out is not None:
                _defines(out, ids)
        elif s[2].i > top:
            top = s[2].i
    for o in outputs:
        _uses(o, ids)
    top = max(top, max(ids, default=-1))
    counter = [top]

    def new(dtype, shape):
        counter[0] += 1
        meta[counter[0]] = (dtype, shape)
        return Ref(counter[0])

    return new


def _rewrite(steps, outputs, chains, made_at, meta, shared):
    new = _fresh_ids(steps, outputs, meta)
    dropped = set()
    made_here = {}
    flats = {}  # (chain, side) -> the provider's joined array, before any transpose
    at = {}
    for n, c in enumerate(chains):
        dropped.add(c.start)
        dropped.update(c.adds)
        dropped.update(t.at for t in c.terms)
        at[n] = max([c.last] + [chains[p].last for (m, _), (p, _) in shared.items()
                                if m == n])
    # providers first: a consumer is made where its providers' arrays are
    order = sorted(range(len(chains)), key=lambda n: (at[n], n in {m for m, _ in shared}))
    for n in order:
        c = chains[n]
        dtype, shape_a, shape_b = c.terms[0].key
        new_steps = made_here.setdefault(at[n], [])
        ops = []
        for side, (ids, axis, shape) in enumerate((([t.a for t in c.terms], 1, shape_a),
                                                   ([t.b for t in c.terms], 0, shape_b))):
            src = shared.get((n, side))
            if src is None:
                out, flats[n, side] = _stacked(ids, axis, shape, dtype, steps, made_at, new,
                                               new_steps)
            else:
                out = _block(flats[src[0], side], src[1], len(ids), axis, shape, dtype,
                             _sources(ids, steps, made_at) is not None, new, new_steps)
            ops.append(out)
        new_steps.append(("call", np.matmul, tuple(ops), {}, Ref(c.acc)))
    result = []
    for k, s in enumerate(steps):
        if k in made_here:
            result.extend(made_here[k])
        elif k not in dropped:
            result.append(s)
    return result


def _sources(ids, steps, made_at):
    """The arrays the operands ``ids`` transpose, if every one is a
    transpose, else None."""
    sources = [_transposed(i, steps, made_at) for i in ids]
    return sources if all(s is not None for s in sources) else None


def _shared(chains, steps, made_at, readers, find, written_at):
    """Which chains read a side's joined operands as a block of another
    chain's: ``{(consumer, side): (provider, offset)}``, ``side`` 0 for the
    left operands, 1 for the right ones. The operands one chain joins (the
    arrays transposed, where all are transposes) may be a run of those of
    another, in order (an LSTM's gradients of ``Wh`` and ``Wx`` join the
    same ``dz_t`` but the first): the consumer then reads rows of the
    provider's joined array, made once, and its product is made where both
    are complete, if its sum is not read before then and its operands are
    not written. A provider is no chain's consumer."""
    lists = []
    for c in chains:
        sides = []
        for side, ids in enumerate(([t.a for t in c.terms], [t.b for t in c.terms])):
            src = _sources(ids, steps, made_at)
            items = [_item(i, steps, made_at) for i in (src if src is not None else ids)]
            dtype = c.terms[0].key[0]
            sides.append(((side, src is not None, dtype, c.terms[0].key[1 + side]), items))
        lists.append(sides)
    shared = {}
    consumers = set()
    # (longest first: a chain shares the longest run it is part of)
    for n in sorted(range(len(chains)), key=lambda n: -len(chains[n].terms)):
        if n in consumers:
            continue
        for side in (0, 1):
            key, items = lists[n][side]
            where = {x: j for j, x in enumerate(items)}
            if len(where) != len(items):
                continue
            for m, c in enumerate(chains):
                if m == n or (m, side) in shared or any(p == m for p, _ in shared.values()):
                    continue
                key_m, items_m = lists[m][side]
                j = where.get(items_m[0])
                if key_m != key or j is None or items[j:j + len(items_m)] != items_m:
                    continue
                # (made where this provider's and any other's arrays are)
                last = max([c.last, chains[n].last]
                           + [chains[p].last for (q, _), (p, _) in shared.items() if q == m])
                if _read_between(readers.get(c.acc, ()), c.last, last):
                    continue
                if not _unwritten(c, steps, made_at, find, written_at, last):
                    continue
                # the run holds at the provider's last addition (where it is
                # joined) what it holds at the consumer's products: checked
                # above after them; here between the provider's last
                # addition and a product after it
                if not _unwritten_run(c, side, chains[n].last, steps, made_at, find,
                                      written_at):
                    continue
                shared[m, side] = (n, j)
                consumers.add(m)
    return shared


def _item(i, steps, made_at):
    """What value ``i`` is, for comparing operands: ``x[index]`` of a value
    ``x`` and a constant integer or slice index by the two (two recordings
    of one row read the same memory), else ``i``."""
    k = made_at.get(i)
    if k is not None:
        s = steps[k]
        if s[1] is operator.getitem and len(s) == 5 and not s[3] and len(s[2]) == 2 \
                and type(s[2][0]) is Ref and type(s[2][1]) in (int, slice, tuple):
            index = s[2][1]
            if type(index) is not tuple or all(type(x) in (int, slice) for x in index):
                key = index if type(index) is not slice else (index.start, index.stop,
                                                              index.step)
                if type(index) is tuple:
                    key = tuple(x if type(x) is int else (x.start, x.stop, x.step)
                                for x in index)
                return ("row", s[2][0].i, key)
    return i


def _read_between(ks, first, last):
    """Whether a step of ``ks`` (a value's readers, in order) comes after
    ``first`` and at or before ``last``."""
    r = bisect.bisect_right(ks, first)
    return r < len(ks) and ks[r] <= last


def _unwritten_run(chain, side, joined, steps, made_at, find, written_at):
    """Whether no operand of the chain's ``side`` (nor the array it
    transposes) that a product reads after step ``joined`` may be written
    after ``joined`` up to that product."""
    for t in chain.terms:
        if t.at <= joined:
            continue
        i = t.b if side else t.a
        classes = {find(i)}
        src = _transposed(i, steps, made_at)
        if src is not None:
            classes.add(find(src))
        for c in classes:
            ks = written_at.get(c)
            if ks:
                j = bisect.bisect_right(ks, joined)
                if j < len(ks) and ks[j] <= t.at:
                    return False
    return True


def _block(flat, offset, n, axis, shape, dtype, transposed, new, into):
    """Append to ``into`` the steps that read ``n`` operands (each of
    ``shape``) from the joined array ``flat`` of another chain, from its
    ``offset``-th; return the value that stands for them joined along
    ``axis`` (as ``_stacked`` does)."""
    joined_shape = list(shape)
    joined_shape[axis] *= n
    joined_shape = tuple(joined_shape)
    cut = 1 - axis if transposed else axis
    width = shape[axis]  # (each operand's extent along the joined axis)
    index = [slice(None), slice(None)]
    index[cut] = slice(offset * width, (offset + n) * width)
    rows = new(dtype, joined_shape[::-1] if transposed else joined_shape)
    into.append(("call", operator.getitem, (flat, tuple(index)), {}, rows))
    if not transposed:
        return rows
    out = new(dtype, joined_shape)
    into.append(("call", np.transpose, (rows, (1, 0)), {}, out))
    return out


def _stacked(ids, axis, shape, dtype, steps, made_at, new, into):
    """Append to ``into`` the steps that join the operands ``ids`` (each of
    ``shape``) along ``axis``; return the joined value and the array joined
    (the same, or the one it transposes). Where every operand is a
    transpose, their sources are joined along the other axis and the result
    transposed: a copy of contiguous rows, and BLAS reads the transposed
    result as it is."""
    n = len(ids)
    joined_shape = list(shape)
    joined_shape[axis] *= n
    joined_shape = tuple(joined_shape)
    sources = _sources(ids, steps, made_at)
    if sources is not None:
        flat = new(dtype, joined_shape[::-1])
        into.append(("call", np.concatenate, ([Ref(s) for s in sources],),
                     {"axis": 1 - axis}, flat))
        out = new(dtype, joined_shape)
        into.append(("call", np.transpose, (flat, (1, 0)), {}, out))
        return out, flat
    out = new(dtype, joined_shape)
    into.append(("call", np.concatenate, ([Ref(i) for i in ids],), {"axis": axis}, out))
    return out, out
