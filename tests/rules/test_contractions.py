"""Targeted tests of rules/contractions.py: einsum in every subscript form
against closed forms, tensordot axes forms, vdot's conjugate, second order
through matmul, kron and cross."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_frule, check_hvp, check_rrule
from chainrules.testing.specs.contractions import EINSUM_CASES

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64):
    if np.dtype(dtype).kind == "c":
        return (RNG.uniform(-1, 1, shape) + 1j * RNG.uniform(-1, 1, shape)).astype(dtype)
    return RNG.uniform(-1, 1, shape).astype(dtype)


# -- einsum ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("subs,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_every_case(subs, shapes, dtype):
    ops = [rand(*s, dtype=dtype) for s in shapes]
    check_rrule(np.einsum, subs, *ops)
    check_frule(np.einsum, subs, *ops)
    check_hvp(np.einsum, subs, *ops)


def test_einsum_trace_and_diagonal_closed_forms():
    a = rand(3, 3)
    np.testing.assert_array_equal(cr.grad(lambda a: np.einsum("ii", a))(a), np.eye(3))
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(
        cr.grad(lambda a: np.sum(np.einsum("ii->i", a) * w))(a), np.diag(w))
    # repeated index with another free index: d/dA sum_j w_j sum_i A[i, i, j]
    b = rand(2, 2, 3)
    g = cr.grad(lambda b: np.sum(np.einsum("iij->j", b) * w))(b)
    expected = np.zeros_like(b)
    expected[0, 0] = expected[1, 1] = w
    np.testing.assert_array_equal(g, expected)
    # a repeated index in one operand and a shared one: x^T diag(A) ...
    x = rand(3)
    ga, gx = cr.grad(lambda a, x: np.einsum("ii,i->", a, x), argnums=(0, 1))(a, x)
    np.testing.assert_allclose(ga, np.diag(x))
    np.testing.assert_allclose(gx, np.diag(a))


def test_einsum_implicit_output_equals_explicit():
    a, b = rand(2, 3), rand(3, 4)
    w = rand(2, 4)
    g_imp = cr.grad(lambda a, b: np.sum(np.einsum("ij,jk", a, b) * w), argnums=(0, 1))(a, b)
    g_exp = cr.grad(lambda a, b: np.sum(np.einsum("ij,jk->ik", a, b) * w),
                    argnums=(0, 1))(a, b)
    np.testing.assert_allclose(g_imp[0], w @ b.T)
    np.testing.assert_allclose(g_imp[1], a.T @ w)
    for u, v in zip(g_imp, g_exp):
        np.testing.assert_array_equal(u, v)
    # implicit output is sorted: 'ba,ac' -> 'bc' (a summed)
    w2 = rand(2, 2)
    ga = cr.grad(lambda a: np.sum(np.einsum("ba,ac", a, b[:, :2]) * w2))(a)
    np.testing.assert_allclose(ga, w2 @ b[:, :2].T)


def test_einsum_ellipsis_matches_matmul():
    a, b = rand(2, 1, 2, 3), rand(4, 3, 2)
    w = rand(2, 4, 2, 2)
    f_e = lambda a, b: np.sum(np.einsum("...ij,...jk->...ik", a, b) * w)  # noqa: E731
    f_m = lambda a, b: np.sum((a @ b) * w)  # noqa: E731
    for u, v in zip(cr.grad(f_e, argnums=(0, 1))(a, b), cr.grad(f_m, argnums=(0, 1))(a, b)):
        np.testing.assert_allclose(u, v, rtol=1e-13)
    # broadcast ellipsis dimension of size 1 is summed back
    x, y = rand(1, 3), rand(2, 3)
    gx = cr.grad(lambda x: np.sum(np.einsum("...i,...i", x, y)))(x)
    np.testing.assert_allclose(gx, y.sum(0, keepdims=True))


def test_einsum_sublist_form():
    a, b = rand(2, 3), rand(3, 2)
    w = rand(2, 2)
    g1 = cr.grad(lambda a: np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) * w))(a)
    np.testing.assert_allclose(g1, w @ b.T)
    check_rrule(np.einsum, a, [Ellipsis, 1], b, [1, Ellipsis])


def test_einsum_float32_and_errors():
    a, b = rand(2, 3, dtype=np.float32), rand(3, dtype=np.float32)
    g = cr.grad(lambda a: np.sum(np.einsum("ij,j->i", a, b)))(a)
    assert g.dtype == np.float32
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda a: np.sum(np.einsum("ij,j->i", a, b, out=np.zeros(2, np.float32))))(a)


def test_einsum_same_operand_twice_second_order():
    # f(x) = (x . x)^2 / 4 via einsum('i,i', x, x): grad = (x.x) x, H = (x.x) I + 2 x x^T
    x = np.array([1.0, -2.0, 0.5])
    v = np.array([0.3, 0.1, -1.0])
    f = lambda x: np.einsum("i,i", x, x) ** 2 / 4  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(x), (x @ x) * x)
    h = (x @ x) * np.eye(3) + 2 * np.outer(x, x)
    np.testing.assert_allclose(cr.hvp(f, x, v), h @ v)
    np.testing.assert_allclose(cr.jvp(cr.grad(f), (x,), (v,))[1], h @ v)


# -- second order through matmul ------------------------------------------------------
@pytest.mark.parametrize("form", ["matmul", "dot", "einsum", "method"])
def test_hvp_of_quadratic_form_is_sym_a(form):
    a = rand(4, 4)
    x, v = rand(4), rand(4)
    f = {
        "matmul": lambda x: 0.5 * (x @ a @ x),
        "dot": lambda x: 0.5 * np.dot(x, np.dot(a, x)),
        "einsum": lambda x: 0.5 * np.einsum("i,ij,j->", x, a, x),
        "method": lambda x: 0.5 * x.dot(a).dot(x),
    }[form]
    sym = 0.5 * (a + a.T)
    np.testing.assert_allclose(cr.grad(f)(x), sym @ x, rtol=1e-12)
    np.testing.assert_allclose(cr.hvp(f, x, v), sym @ v, rtol=1e-12)
    np.testing.assert_allclose(cr.jvp(cr.grad(f), (x,), (v,))[1], sym @ v, rtol=1e-12)


def test_matmul_batched_broadcast_and_float32():
    a, b = rand(2, 1, 3, 4, dtype=np.float32), rand(5, 4, 2, dtype=np.float32)
    ga, gb = cr.grad(lambda a, b: np.sum(a @ b), argnums=(0, 1))(a, b)
    assert ga.dtype == gb.dtype == np.float32
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(ga, np.broadcast_to(b.sum(axis=(0, 2))[None, None, None],
                                                   a.shape), rtol=1e-5)


# -- tensordot --------------------------------------------------------------------------
TENSORDOT = [  # a has shape (3, 2, 4)
    (0, (2, 2)), (1, (4, 2)), (2, (2, 4, 3)), (([1, 0], [0, 1]), (2, 3, 5)),
    (([-1], [0]), (4, 2)), ((2, 1), (2, 4)), ([[0, 2], [2, 0]], (4, 2, 3)),
]


@pytest.mark.parametrize("axes,bshape", TENSORDOT, ids=[str(c[0]) for c in TENSORDOT])
def test_tensordot_axes_forms(axes, bshape):
    a = rand(3, 2, 4)
    b = rand(*bshape)
    check_rrule(np.tensordot, a, b, axes=axes)
    check_hvp(np.tensordot, a, b, axes=axes)
    # against an explicit einsum of the same contraction
    z = np.tensordot(a, b, axes)
    w = rand(*z.shape)
    g_td = cr.grad(lambda a, b: np.sum(np.tensordot(a, b, axes) * w), argnums=(0, 1))(a, b)
    _, f_vjp = cr.vjp(lambda a, b: np.tensordot(a, b, axes), a, b)
    for u, v in zip(g_td, f_vjp(w)):
        np.testing.assert_array_equal(u, v)
    # closed form for the int form: cotangent of a is w . b^T over the free axes
    if axes == 1:
        np.testing.assert_allclose(g_td[0], np.tensordot(w, b, ([2], [1])))


# -- dot, vdot, inner, outer, kron, cross -------------------------------------------------
def test_dot_all_cases_closed_forms():
    s, v, m, t = np.float64(1.5), rand(3), rand(2, 3), rand(2, 3, 4)
    assert cr.grad(lambda s: np.sum(np.dot(s, m)))(s) == pytest.approx(m.sum())
    np.testing.assert_allclose(cr.grad(lambda v: np.dot(v, v))(v), 2 * v)
    np.testing.assert_allclose(cr.grad(lambda m: np.sum(np.dot(m, v)))(m),
                               np.broadcast_to(v, m.shape))
    # N-D . M-D: contracts last of a with second-to-last of b
    w = rand(2, 2, 4)
    gm = cr.grad(lambda m: np.sum(np.dot(m, t) * w))(m)
    np.testing.assert_allclose(gm, np.einsum("ack,cjk->aj", w, t))
    gt = cr.grad(lambda t: np.sum(np.dot(m, t) * w))(t)
    np.testing.assert_allclose(gt, np.einsum("ack,aj->cjk", w, m))


def test_vdot_conjugates_first_argument():
    a, b = rand(3, dtype=np.complex128), rand(3, dtype=np.complex128)
    _, f_vjp = cr.vjp(np.vdot, a, b)
    g = np.complex128(0.7 - 0.2j)
    ca, cb = f_vjp(g)
    np.testing.assert_allclose(ca, np.conj(g * b))
    np.testing.assert_allclose(cb, g * np.conj(a))
    # real loss: Re(vdot(a, b)) = Re(sum(conj(a) b)); gradient wrt a is conj(conj(b)) = b?
    # with the convention dL = Re(sum(c * da)): c = conj(b)
    np.testing.assert_allclose(cr.grad(lambda a: np.real(np.vdot(a, b)))(a), np.conj(b))
    check_rrule(np.vdot, a.reshape(3, 1), b)
    check_hvp(np.vdot, a, b)


def test_inner_outer_kron():
    a, b = rand(2, 3), rand(4, 3)
    w = rand(2, 4)
    ga = cr.grad(lambda a: np.sum(np.inner(a, b) * w))(a)
    np.testing.assert_allclose(ga, w @ b)
    x, y = rand(2, 2), rand(3)
    wo = rand(4, 3)
    gx, gy = cr.grad(lambda x, y: np.sum(np.outer(x, y) * wo), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, (wo @ y).reshape(2, 2))
    np.testing.assert_allclose(gy, x.ravel() @ wo)
    p, q = rand(2, 3), rand(3)
    z = np.kron(p, q)
    wk = rand(*z.shape)
    gp = cr.grad(lambda p: np.sum(np.kron(p, q) * wk))(p)
    np.testing.assert_allclose(gp, (wk.reshape(2, 3, 3) * q).sum(-1))
    check_rrule(np.kron, p, rand(2, 1, 2))
    check_hvp(np.kron, p, rand(2, 1, 2))


def test_cross_closed_form_and_axes():
    a, b = rand(4, 3), rand(3)
    w = rand(4, 3)
    ga, gb = cr.grad(lambda a, b: np.sum(np.cross(a, b) * w), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, np.cross(b, w))
    np.testing.assert_allclose(gb, np.cross(w, a).sum(0))
    a2, b2 = rand(3, 2), rand(2, 3)
    check_rrule(np.cross, a2, b2, axisa=0, axisb=1, axisc=0)
    check_hvp(np.cross, a2, b2, axisa=0, axisb=1, axisc=0)
    with pytest.raises(cr.MissingRuleError, match="3-vectors"):
        cr.grad(lambda a: np.sum(np.cross(a, np.ones(2))))(np.ones(2))


def test_complex_contractions_are_holomorphic():
    # cotangent of z = a @ b with respect to a is g @ b^T (no conjugate)
    a, b = rand(2, 3, dtype=np.complex128), rand(3, 2, dtype=np.complex128)
    g = rand(2, 2, dtype=np.complex128)
    for f in (np.matmul, np.dot, lambda a, b: np.einsum("ij,jk->ik", a, b),
              lambda a, b: np.tensordot(a, b, 1)):
        _, f_vjp = cr.vjp(f, a, b)
        ca, cb = f_vjp(g)
        np.testing.assert_allclose(ca, g @ b.T)
        np.testing.assert_allclose(cb, a.T @ g)


# -- second order by differentiating the pullbacks --------------------------------------
def _nested_vs_fast(f, x, v):
    hv_fast = cr.hvp(f, x, v)
    hv_nested = cr.jvp(cr.grad(f), (x,), (v,))[1]
    np.testing.assert_allclose(hv_nested, hv_fast, rtol=1e-10, atol=1e-12)
    eps = 1e-6
    g = cr.grad(f)
    np.testing.assert_allclose(hv_fast, (g(x + eps * v) - g(x - eps * v)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)


NESTED = {
    "einsum-diag": (lambda x: np.sum(np.einsum("ii->i", x) ** 3), (3, 3)),
    "einsum-trace-product": (lambda x: np.einsum("ij,jk,ki", x, x, x), (3, 3)),
    "einsum-ellipsis": (lambda x: np.sum(np.einsum("...ij,...jk", x, x) ** 2), (2, 2, 2)),
    "tensordot": (lambda x: np.sum(np.tensordot(x, x, ([0], [1])) ** 2), (3, 3)),
    "inner": (lambda x: np.sum(np.inner(x, x) ** 2), (2, 3)),
    "outer": (lambda x: np.sum(np.outer(x, x[::-1]) ** 2), (2, 2)),
    "kron": (lambda x: np.sum(np.kron(x, x) ** 2), (2, 2)),
    "cross": (lambda x: np.sum(np.cross(x, x[::-1]) ** 2), (2, 3)),
    "matmul-batched": (lambda x: np.sum((x @ x) ** 2), (2, 3, 3)),
    "vdot": (lambda x: np.vdot(x, x[::-1]) ** 2, (4,)),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_second_order_matches_fast_hvp(name):
    f, shape = NESTED[name]
    _nested_vs_fast(f, rand(*shape), rand(*shape))
