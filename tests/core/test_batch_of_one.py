"""A batch of one direction (the Hessian of a size-1 or 0-d input, a chunk of
one) runs the unbatched sweeps and lifts their values to a batch: a rule
with several outputs, one of them without a derivative (the pivots of
``lu_factor``, the flag of ``cho_factor``), gives the same Hessian there as
dense finite differences and as one ``cr.hvp`` per direction."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp
from chainrules.scipy.linalg import cho_factor, cho_solve, lu_factor, lu_solve
from chainrules.sweep_batch import as_batch_of_one, slice_of
from chainrules.tangents import ZERO, ZeroTangent


def spd(n):
    a = np.arange(1.0, n * n + 1).reshape(n, n) / (n * n)
    return a @ a.T + n * np.eye(n)


def cho_program(x):
    k = spd(x.shape[0])
    return np.sum(cho_solve(cho_factor(k + 0.2 * np.outer(x, x), lower=True), x))


LIFT = np.array([1.0, -0.5])


def lifted_cho_program(x):
    y = np.tensordot(x, LIFT, axes=0)  # 0-d -> (2,)
    return np.sum(cho_solve(cho_factor(spd(2) + 0.2 * np.outer(y, y), lower=True), y))


def stacked_lu_program(x):
    m = np.stack([np.stack([2.0 + x, x * x]), np.stack([np.sin(x), 3.0 - x])])
    return np.sum(lu_solve(lu_factor(m), np.array([1.0, 2.0]) * x))


def array_lu_program(x):
    m = cnp.array([[2.0 + x, x * x], [np.sin(x), 3.0 - x]])
    return np.sum(lu_solve(lu_factor(m), np.array([1.0, 2.0]) * x))


def fd_hessian(f, x, h=1e-4):
    """Second central differences of ``f`` itself (no derivative rule)."""
    x = np.asarray(x, float)
    n = x.size
    basis = np.eye(n).reshape((n,) + x.shape) * h
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = basis[i], basis[j]
            out[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                         + f(x - ei - ej)) / (4 * h * h)
    return out


def hvp_columns(f, x):
    x = np.asarray(x, float)
    n = x.size
    return np.stack([np.ravel(cr.hvp(f, x, np.eye(n)[i].reshape(x.shape)))
                     for i in range(n)], axis=1)


CASES = [
    ("cho size 1", cho_program, np.array([0.3])),
    ("cho size 1 negative", cho_program, np.array([-1.7])),
    ("cho 0-d lifted", lifted_cho_program, np.array(0.3)),
    ("lu 0-d stacked", stacked_lu_program, np.array(0.3)),
    ("lu 0-d array", array_lu_program, np.array(-0.4)),
]


@pytest.mark.parametrize("name,f,x", CASES, ids=[c[0] for c in CASES])
def test_hessian_of_one_direction_through_factor_and_solve(name, f, x):
    h = cr.hessian(f)(x)
    assert np.shape(h) == x.shape * 2
    dense = np.reshape(h, (x.size, x.size))
    np.testing.assert_allclose(dense, fd_hessian(f, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dense, hvp_columns(f, x), rtol=1e-12, atol=1e-14)
    assert np.all(np.abs(dense) > 1e-3)  # a real second derivative, not a zero


@pytest.mark.parametrize("f", [lifted_cho_program, stacked_lu_program])
def test_scalar_entry_points(f):
    ref = cr.hessian(f)(np.array(0.3))
    for x in (0.3, np.float64(0.3), np.array(0.3)):
        np.testing.assert_allclose(cr.hessian(f)(x), ref, rtol=1e-12)
    h32 = cr.hessian(f)(np.float32(0.3))
    np.testing.assert_allclose(h32, ref, rtol=1e-3)


def test_size_three_in_chunks_of_one_matches_one_batch():
    x = np.array([0.3, -0.2, 0.5])
    whole = cr.hessian(cho_program)(x)
    np.testing.assert_allclose(whole, fd_hessian(cho_program, x), rtol=1e-6, atol=1e-7)
    for chunk in (1, 2):
        np.testing.assert_allclose(cr.hessian(cho_program, chunk_size=chunk)(x), whole,
                                   rtol=1e-12, atol=1e-14)


def test_a_tangent_without_derivative_output_round_trips_a_batch_of_one():
    fd = np.arange(4.0).reshape(2, 2)
    lifted = as_batch_of_one((fd, None))
    assert lifted[0].shape == (1, 2, 2) and isinstance(lifted[1], ZeroTangent)
    back = slice_of(lifted, 0)
    np.testing.assert_array_equal(back[0], fd)
    assert back[1] is ZERO
    assert as_batch_of_one(None) is None and as_batch_of_one(ZERO) is ZERO


# SciPy reads a 0-d array as a 1 x 1 matrix (expm, sqrtm, cho_factor) or
# keeps it 0-d (lu_factor); NumPy's multi_dot of two is a product. The
# linear-algebra rules read their arguments by trailing axes: a traced 0-d
# argument is refused by name, before any derivative could be wrong.
def _zero_d_linalg_programs():
    import scipy.linalg as sl
    import chainrules.scipy.linalg as csl
    return [
        ("scipy.linalg.expm", lambda x: np.sum(csl.expm(x))),
        ("scipy.linalg.sqrtm", lambda x: np.sum(csl.sqrtm(x))),
        ("scipy.linalg.cho_factor", lambda x: np.sum(cho_factor(x)[0])),
        ("scipy.linalg.lu_factor", lambda x: np.sum(lu_factor(x)[0])),
        ("numpy.linalg.multi_dot", lambda x: np.linalg.multi_dot([x, x])),
        ("scipy.linalg.solve_discrete_lyapunov",
         lambda x: np.sum(csl.solve_discrete_lyapunov(np.full((1, 1), 0.3), x))),
    ], sl


@pytest.mark.parametrize("k", range(6))
def test_a_traced_0d_matrix_argument_is_refused_by_name(k):
    programs, _ = _zero_d_linalg_programs()
    name, f = programs[k]
    x = np.array(0.7)
    # (SciPy before 1.16 refuses some 0-d inputs itself, with a ValueError)
    with pytest.raises((cr.MissingRuleError, ValueError)) as refused:
        cr.grad(f)(x)
    if isinstance(refused.value, cr.MissingRuleError):
        assert "traced 0-d array has no derivative rule" in str(refused.value)
    assert x == 0.7
    # the 1 x 1 matrix it reads the value as is differentiated
    if name != "numpy.linalg.multi_dot":
        g = cr.grad(f)(np.full((1, 1), 0.7))
        assert g.shape == (1, 1) and np.isfinite(g).all()
