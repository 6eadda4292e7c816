"""A pass on staged plans: matrix products that share their right operand
are computed as one product, and a transposed right operand that many
products read is copied once into rows.

**Batched products.** A loop that multiplies each step's slice of an input
by one weight (an LSTM's ``X[t] @ Wx``) records one small product per step,
``v = X[i] @ W``. Where ``X`` is 3-D, its rows ``X[lo:hi + 1]`` stacked are
the reshape ``(m B, D)`` of that slice, and ``batch_products`` computes
``P = X[lo:hi + 1].reshape(m B, D) @ W`` once, before the first product;
each product becomes the view ``P.reshape(m, B, N)[i - lo]`` (one product
with ``m B`` rows runs near BLAS's peak where ``m`` products of ``B`` rows
do not; the loop's other work is unchanged).

**Transposed operands in rows.** A product whose right operand is the
transpose of a 2-D array ``W`` (``h @ W.T``: the reverse sweep of ``h @ W``)
makes BLAS read ``W`` across its rows; where ``MIN_TERMS`` or more
products read such a transpose of one ``W``, the pass copies
``W.T`` once into a C-contiguous array before the first of them and the
products read the copy (for an LSTM's ``dz @ Wh.T``, 32 x 512 by 512 x
128: 97 us a product instead of 127 at one OpenBLAS thread, 58 instead of
72 at two).

**Rounding.** Each entry of a product is a sum of ``k`` products (``k``
the inner dimension) that BLAS may add in another order for another
number of rows or another layout of an operand (its blocking and its
kernels depend on both), so a rewritten product differs from the plan's
by rounding only: with ``u`` the dtype's unit roundoff and ``S = |A| @
|B|``, each order is within ``gamma_k S`` of the exact sum, so the two
differ by at most ``2 k u S`` (to first order in ``u``); for complex
dtypes (``|.|`` the modulus) the real and imaginary parts are sums of
``2 k`` real terms whose magnitudes add to at most ``S``, which gives
``4 sqrt(2) k u S``. (OpenBLAS gives the same bits in both forms on the
sizes measured; the bound is what is promised.)

**When.** Only where nothing but the order of those sums changes:

* at least ``MIN_TERMS`` products of two operands of one BLAS dtype
  (float32, float64, complex64, complex128) giving that dtype, with one
  right operand: the same value, or transposes of one 2-D array;
* batched: each left operand ``X[i]``, an integer index into the first axis
  of one 3-D ``X``, the indices distinct and spanning at most twice as many
  rows as are multiplied; no product a result of the plan (it would be a
  view of the batch);
* no operand written between the first product and the last, nor any
  value that may share memory with it (alias classes as in
  ``plan_join``): the batch and the copy read the operands at the first
  product, so they must hold then what they hold at each product.

Both scans are linear in the plan's steps (one pass, then a binary search
per group in the steps that write each operand's class).
"""

import bisect
import operator

import numpy as np

from .plan_join import _blas_operands, _fresh_ids, _transposed, _writes
from .plan_passes import _uses
from .staging import Ref

__all__ = ["batch_products"]

#: the fewest products a group must have to be rewritten
MIN_TERMS = 3


def batch_products(steps, outputs, meta):
    """``steps`` with each group of products that share a right operand
    (see the module's text) rewritten: transposed right operands read from
    one copy in rows, products of slices of one 3-D array computed as one
    product. ``outputs``: the plan's result templates; ``meta``: per value
    index, its dtype and shape (``meta[i][:2]``); the values the pass makes
    are added to it."""
    products = [k for k, s in enumerate(steps) if s[0] == "call" and s[1] is np.matmul]
    if len(products) < MIN_TERMS:
        return steps
    made_at = {}
    for k, s in enumerate(steps):
        if s[0] == "call" and type(s[4]) is Ref:
            made_at[s[4].i] = k
    # one scan: the products reading transposes of one array, and those of
    # rows of one 3-D array by one right operand (a transpose: by its array)
    transposes, rows = {}, {}
    for k in products:
        p = _product(steps[k], meta)
        if p is None:
            continue
        a, b, dtype = p
        src = _transposed(b, steps, made_at)
        if src is not None and meta.get(src, (None,))[0] != dtype:
            src = None
        if src is not None:
            transposes.setdefault(src, []).append(k)
        row = _row_index(a, steps, made_at, meta)
        if row is not None:
            key = (row[0], b if src is None else None, src)
            rows.setdefault(key, []).append((k, row[1]))
    transposes = {w: ks for w, ks in transposes.items() if len(ks) >= MIN_TERMS}
    rows = {g: v for g, v in rows.items() if len(v) >= MIN_TERMS}
    if not transposes and not rows:
        return steps
    find, written_at = _writes(steps)
    new = _fresh_ids(steps, outputs, meta)
    before, replaced = {}, {}
    copies = {}
    for w, ks in transposes.items():
        # (the transposes are views of w: of its class)
        if not _unwritten([w], ks[0], ks[-1], find, written_at):
            continue
        dtype, shape = meta[w][:2]
        t = new(dtype, tuple(shape)[::-1])
        c = copies[w] = new(dtype, tuple(shape)[::-1])
        before.setdefault(ks[0], []).extend([
            ("call", np.transpose, (Ref(w), (1, 0)), {}, t),
            ("call", np.copy, (t,), {"order": "C"}, c)])
        for k in ks:
            s = steps[k]
            replaced[k] = ("call", np.matmul, (s[2][0], c), {}, s[4])
    if rows:
        results = set()
        for o in outputs:
            _uses(o, results)
        for (x, b, src), members in rows.items():
            if src is not None and src not in copies:
                continue  # (its array is written between its products)
            w = copies[src] if src is not None else Ref(b)
            made = _batch(x, w, members, steps, meta, results, find, written_at, new)
            if made is not None:
                before.setdefault(members[0][0], []).extend(made[0])
                replaced.update(made[1])
    if not replaced:
        return steps
    out = []
    for k, s in enumerate(steps):
        if k in before:
            out.extend(before[k])
        out.append(replaced.get(k, s))
    return out


def _product(s, meta):
    """``(a, b, dtype)`` of a product step ``a @ b`` of two 2-D values of
    one BLAS dtype giving that dtype, else None."""
    if len(s) != 5 or s[3] or len(s[2]) != 2 or type(s[4]) is not Ref:
        return None
    a, b = s[2]
    if type(a) is not Ref or type(b) is not Ref:
        return None
    found = _blas_operands(a.i, b.i, s[4].i, meta)
    if found is None:
        return None
    return a.i, b.i, found[0][0]


def _unwritten(ids, first, last, find, written_at):
    """Whether no value of the alias classes of ``ids`` is written by a
    step after ``first`` up to ``last``."""
    for c in {find(i) for i in ids}:
        ks = written_at.get(c)
        if ks:
            j = bisect.bisect_right(ks, first)
            if j < len(ks) and ks[j] <= last:
                return False
    return True


def _row_index(i, steps, made_at, meta):
    """``(X, index)`` where value ``i`` is ``X[index]`` of a 3-D ``X`` and
    an integer ``index`` (made non-negative), else None."""
    k = made_at.get(i)
    if k is None:
        return None
    s = steps[k]
    if s[1] is not operator.getitem or len(s) != 5 or s[3] or len(s[2]) != 2:
        return None
    x, index = s[2]
    if type(x) is not Ref or not isinstance(index, (int, np.integer)) \
            or isinstance(index, (bool, np.bool_)):
        return None
    mx = meta.get(x.i)
    if mx is None or len(mx[1]) != 3:
        return None
    n = mx[1][0]
    index = int(index)
    if not -n <= index < n:
        return None
    return x.i, index % n


def _batch(x, w, members, steps, meta, results, find, written_at, new):
    """The steps that compute the products ``members`` (``(step, row)``
    each, of rows of the 3-D ``x`` by ``w``) as one product before the
    first, and the steps that replace them, or None where they may not."""
    rows = [i for _, i in members]
    lo, hi = min(rows), max(rows)
    if len(set(rows)) != len(rows) or hi - lo + 1 > 2 * len(rows):
        return None
    if any(steps[k][4].i in results for k, _ in members):
        return None
    first, last = members[0][0], members[-1][0]
    if not _unwritten([x, w.i], first, last, find, written_at):
        return None
    dtype, (t, b, d) = meta[x][0], tuple(meta[x][1])
    n = meta[w.i][1][1]
    m = hi - lo + 1
    made = []
    src = Ref(x)
    if (lo, m) != (0, t):
        src = new(dtype, (m, b, d))
        made.append(("call", operator.getitem, (Ref(x), slice(lo, hi + 1)), {}, src))
    flat = new(dtype, (m * b, d))
    made.append(("call", np.reshape, (src, (m * b, d)), {}, flat))
    prod = new(dtype, (m * b, n))
    made.append(("call", np.matmul, (flat, w), {}, prod))
    stacked = new(dtype, (m, b, n))
    made.append(("call", np.reshape, (prod, (m, b, n)), {}, stacked))
    return made, {k: ("call", operator.getitem, (stacked, i - lo), {}, steps[k][4])
                  for k, i in members}
