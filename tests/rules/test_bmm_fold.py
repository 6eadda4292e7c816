"""matmul's batched forms (a batch of directions times one matrix): folded
into one GEMM only where that is faster (``contractions.FOLD_*``), else
NumPy's stacked matmul. The stacked form is each direction's own product,
bit for bit; the folded one the same sums in another order, within
``2 c u |a| @ |b|`` (``c`` the inner dimension). Either way eager and
staged (cr.jit) sweeps take the same path: the same bits."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules import contractions

rng = np.random.default_rng(0)


def _folds(shape_a, shape_b, a_batched):
    if a_batched:
        return shape_a[1] <= contractions.FOLD_MAX_FREE or \
            np.prod(shape_b) >= contractions.FOLD_MIN_OTHER
    return shape_b[2] <= contractions.FOLD_MAX_FREE or \
        np.prod(shape_a) >= contractions.FOLD_MIN_OTHER


CASES = [  # (batched operand's shape, the matrix's shape, which side is batched)
    ((40, 30, 30), (30, 20), True),   # thin products: stacked
    ((40, 3, 30), (30, 20), True),    # three rows each: folded
    ((6, 20, 130), (130, 130), True),  # a large matrix: folded
    ((40, 30, 20), (8, 30), False),   # batched on the right: stacked
    ((40, 30, 2), (8, 30), False),    # two columns each: folded
]


@pytest.mark.parametrize("batched, other, left", CASES)
def test_batched_matmul_is_each_directions_product(batched, other, left):
    x, w = rng.standard_normal(batched), rng.standard_normal(other)
    a, b = (x, w) if left else (w, x)
    out = contractions._bmm(a, b, left, not left)
    each = np.stack([(x[i] @ w) if left else (w @ x[i]) for i in range(len(x))])
    assert out.shape == each.shape
    if not _folds(a.shape, b.shape, left):
        assert out.tobytes() == each.tobytes()
        return
    c = a.shape[-1]
    S = np.stack([(np.abs(x[i]) @ np.abs(w)) if left else (np.abs(w) @ np.abs(x[i]))
                  for i in range(len(x))])
    assert np.all(np.abs(out - each) <= 2 * c * np.finfo(float).eps / 2 * S)


def test_the_fold_rule_takes_both_branches():
    assert [_folds(a if left else b, b if left else a, left)
            for a, b, left in ((c[0], c[1], c[2]) for c in CASES)] == \
        [False, True, True, False, True]


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("p", [6, 2])  # stacked, folded
def test_staged_hessian_through_batched_matmul_is_eager_bit_for_bit(left, p, monkeypatch):
    # the Hessian sweeps a batch of directions through W's products: the
    # batched forms meet (k, p, m) or (k, m, p) operands, stacked or folded
    # by their free dimension p
    X = rng.standard_normal((7, 5))
    if left:
        def f(W):
            return np.sum(np.tanh(W @ X) ** 2)
        W = rng.standard_normal((p, 7)) * 0.3
    else:
        def f(W):
            return np.sum(np.tanh(X @ W) ** 2)
        W = rng.standard_normal((5, p)) * 0.3
    seen = []
    bmm = contractions._bmm

    def spy(a, b, a_batched, b_batched):
        seen.append(_folds(a.shape, b.shape, a_batched) if a_batched != b_batched
                    and np.ndim(a) + np.ndim(b) == 5 else None)
        return bmm(a, b, a_batched, b_batched)

    monkeypatch.setattr(contractions, "_bmm", spy)
    hess = cr.hessian(f)
    eager = hess(W)
    assert (p <= contractions.FOLD_MAX_FREE) in seen  # the branch meant is taken
    j = cr.jit(hess, strict=True)
    for _ in range(3):
        staged = j(W)
    assert staged.tobytes() == eager.tobytes()
