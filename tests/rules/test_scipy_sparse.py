"""chainrules.scipy.sparse and .linalg against dense references: the same
program on ``A.toarray()`` with plain NumPy, differentiated by chainrules."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import chainrules as cr
from chainrules.scipy import sparse
from chainrules.scipy.sparse import linalg as sl

RNG = np.random.default_rng(0)
A0 = sp.csr_array(sp.random_array((4, 5), density=0.5, format="csr", rng=1))
A0.data[:] = np.linspace(-1.5, 2.0, A0.nnz)
S0 = sp.csr_array(sp.random_array((4, 4), density=0.4, format="csr", rng=2)
                  + 4.0 * sp.eye_array(4))
SYM = sp.csr_array(S0 + S0.T)
X = np.linspace(-1.0, 1.5, 5)
Y = np.linspace(0.5, 2.0, 4)


def _dense(w, pattern):
    """The dense matrix of values ``w`` at ``pattern``'s coordinates."""
    a = pattern.tocsr()
    row = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    out = np.zeros(a.shape, np.result_type(w, np.float64))
    np.add.at(out, (row, a.indices), w)
    return out


def _twin(w, pattern=A0, cls=sparse.csr_array):
    return cls((w, pattern.indices, pattern.indptr), shape=pattern.shape)


def _dense_twin(w, pattern):
    # the same matrix as a traced dense array, for references
    a = pattern.tocsr()
    row = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    idx = np.ravel_multi_index((row, a.indices), a.shape)
    onehot = np.zeros((a.nnz, a.shape[0] * a.shape[1]))
    onehot[np.arange(a.nnz), idx] = 1.0
    return (w @ onehot).reshape(a.shape)


def _close(a, b, tol=1e-9):
    a = [a] if not isinstance(a, tuple) else a
    b = [b] if not isinstance(b, tuple) else b
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


# -- products and methods ---------------------------------------------------------
METHODS = {
    "matmul": (lambda A, x: A @ x, lambda D, x: D @ x),
    "rmatmul": (lambda A, y: np.sin(y @ A), lambda D, y: np.sin(y @ D)),
    "dot2d": (lambda A, x: A.dot(np.outer(x, x[:2])), lambda D, x: D @ np.outer(x, x[:2])),
    "T": (lambda A, y: A.T @ y, lambda D, y: D.T @ y),
    "transpose": (lambda A, x: x @ A.transpose(), lambda D, x: x @ D.T),
    "multiply": (lambda A, y: A.multiply(np.outer(y, np.ones(5))).toarray(),
                 lambda D, y: D * np.outer(y, np.ones(5))),
    "multiply_row": (lambda A, x: A.multiply(x).sum(), lambda D, x: np.sum(D * x)),
    "sum": (lambda A, x: A.sum() * x, lambda D, x: np.sum(D) * x),
    "sum0": (lambda A, x: A.sum(axis=0) * x, lambda D, x: np.sum(D, axis=0) * x),
    "sum1": (lambda A, y: A.sum(axis=-1) ** 2 * y, lambda D, y: np.sum(D, axis=1) ** 2 * y),
    "toarray": (lambda A, x: A.toarray() ** 2 @ x, lambda D, x: D ** 2 @ x),
    "diagonal": (lambda A, x: A.diagonal() * x[:4], lambda D, x: np.diagonal(D) * x[:4]),
    "diagonal1": (lambda A, x: A.diagonal(1) * x[:4], lambda D, x: np.diagonal(D, 1) * x[:4]),
    "diagonal-2": (lambda A, x: A.diagonal(-2), lambda D, x: np.diagonal(D, -2)),
    "neg_div": (lambda A, x: (-A / 2.0) @ x, lambda D, x: (-D / 2.0) @ x),
    "scalar": (lambda A, x: (A * 3.0) @ x + (2.0 * A).dot(x), lambda D, x: 5.0 * D @ x),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods_against_dense(name):
    f, ref = METHODS[name]
    x = Y if name in ("rmatmul", "T", "multiply", "sum1") else X
    got = lambda w, x: np.sum(f(_twin(w), x) ** 2)
    want = lambda w, x: np.sum(ref(_dense_twin(w, A0), x) ** 2)
    _close(got(A0.data, x), want(A0.data, x))
    _close(cr.grad(got, argnums=(0, 1))(A0.data, x), cr.grad(want, argnums=(0, 1))(A0.data, x))
    v = np.linspace(0.3, 1.0, A0.nnz)
    _close(cr.hvp(lambda w: got(w, x), A0.data, v), cr.hvp(lambda w: want(w, x), A0.data, v))


@pytest.mark.parametrize("cls", [sparse.csr_array, sparse.csc_array, sparse.coo_array,
                                 sparse.csr_matrix, sparse.csc_matrix, sparse.coo_matrix])
def test_constructors_and_formats(cls):
    D = A0.toarray()
    for arg in (A0, sp.coo_array(A0), sp.csc_matrix(A0), D):
        A = cls(arg)
        _close(A.toarray(), D)
        assert A.format == cls.format and A.shape == (4, 5)
        np.testing.assert_allclose(A @ X, D @ X)
        np.testing.assert_allclose(Y @ A, Y @ D)
        _close(A.to_scipy().toarray(), D)
        assert type(A.to_scipy()).__name__ == cls.__name__
    c = A0.tocoo()
    f = lambda w: np.sum(np.cos(cls((w, (c.row, c.col)), shape=c.shape) @ X))
    want = lambda w: np.sum(np.cos(_dense_twin(w, c.tocsr()) @ X))
    # coordinates of c in csr order are those of A0: the same values
    _close(f(c.data), want(c.data))
    _close(cr.grad(f)(c.data), cr.grad(want)(c.data))


def test_matrix_twins_keep_matrix_semantics():
    A = sparse.csr_matrix(A0)
    D = A0.toarray()
    np.testing.assert_allclose(A * X, D @ X)
    np.testing.assert_allclose(Y * A, Y @ D)
    assert A.sum(axis=0).shape == (1, 5) and A.sum(axis=1).shape == (4, 1)
    np.testing.assert_allclose(sparse.csr_array(A0) * 2.0 @ X, 2.0 * D @ X)


def test_duplicates_are_summed():
    row, col = np.array([0, 0, 1]), np.array([1, 1, 0])
    f = lambda w: sparse.coo_array((w, (row, col)), shape=(2, 2)).toarray()
    np.testing.assert_allclose(f(np.array([1.0, 2.0, 3.0])), [[0, 3], [3, 0]])
    g = cr.grad(lambda w: np.sum(f(w) * np.array([[0.0, 5.0], [7.0, 0.0]])))
    np.testing.assert_allclose(g(np.array([1.0, 2.0, 3.0])), [5.0, 5.0, 7.0])


def test_format_conversion_keeps_values_traced():
    c = sp.coo_array(([1.0, 2.0, 3.0], ([1, 0, 1], [0, 1, 1])), shape=(2, 2))
    D = np.array([[0.0, 2.0], [1.0, 3.0]])

    def f(w):
        A = sparse.coo_array((w, (c.row, c.col)), shape=(2, 2))
        return A.tocsr().data, A.tocsc() @ np.array([1.0, 10.0])

    (data_csr, prod) = f(c.data)
    np.testing.assert_allclose(data_csr, [2.0, 1.0, 3.0])   # row-major order
    np.testing.assert_allclose(prod, D @ [1.0, 10.0])
    g = cr.grad(lambda w: np.sum(f(w)[0] * np.array([1.0, 2.0, 4.0])))(c.data)
    np.testing.assert_allclose(g, [2.0, 1.0, 4.0])


def test_plain_sparse_right_operand_is_differentiated():
    for A in (A0, sp.csc_matrix(A0), sp.coo_array(A0), sp.dia_array(A0)):
        D = A.toarray()
        f = lambda y: np.sum(np.sin(y @ A))
        np.testing.assert_allclose(f(Y), np.sum(np.sin(Y @ D)))
        np.testing.assert_allclose(cr.grad(f)(Y), np.cos(Y @ D) @ D.T)
        M = np.outer(np.ones(3), Y)
        np.testing.assert_allclose(cr.grad(lambda m: np.sum((m @ A) ** 2))(M),
                                   2 * (M @ D) @ D.T)
        v = np.linspace(-1, 1, 4)
        np.testing.assert_allclose(cr.hvp(f, Y, v), -(D * np.sin(Y @ D)) @ (D.T @ v))


def test_plain_sparse_left_operand_names_the_twin():
    with pytest.raises(cr.UntraceableError, match="chainrules.scipy.sparse.csr_array"):
        cr.grad(lambda x: np.sum(A0 @ x))(X)
    with pytest.raises(cr.UntraceableError, match="chainrules.scipy.sparse"):
        cr.grad(lambda x: np.sum(sp.csc_array(A0).dot(x)))(X)


@pytest.mark.parametrize("op", [np.multiply, np.add, np.subtract, np.true_divide])
def test_plain_sparse_in_elementwise_arithmetic_is_refused(op):
    for A, twin in ((A0, "csr_array"), (sp.coo_matrix(A0), "coo_matrix"),
                    (sp.dia_array(A0), "csr_array")):
        with pytest.raises(cr.MissingRuleError, match=f"chainrules.scipy.sparse.{twin}"):
            cr.grad(lambda y: np.sum(op(y[:, None], A)))(Y)
    with pytest.raises(cr.MissingRuleError, match="SciPy sparse matrix"):
        cr.grad(lambda y: np.sum(y[:, None] * A0))(Y)
    # x @ A still differentiates after the refusals
    np.testing.assert_allclose(cr.grad(lambda y: np.sum(y @ A0))(Y), A0.toarray().sum(axis=1))


def test_scalars_empty_float32_complex():
    # a 1x1 matrix with Python floats, NumPy scalars and 0-d arrays
    for v in (2.0, np.float64(2.0), np.array(2.0)):
        f = lambda v: np.sum(sparse.csr_array((np.stack([v]), [0], [0, 1]), shape=(1, 1))
                             @ np.array([3.0]))
        np.testing.assert_allclose(cr.grad(f)(v), 3.0)
    # empty matrix and empty operands
    E = sparse.csr_array(sp.csr_array((0, 3)))
    assert (E @ np.ones(3)).shape == (0,)
    g = cr.grad(lambda x: np.sum(E @ x) + np.sum(x))(np.ones(3))
    np.testing.assert_allclose(g, np.ones(3))
    Z = sp.csr_array((3, 2))
    g = cr.grad(lambda w, x: np.sum(_twin(w, Z) @ x) + np.sum(x), argnums=(0, 1))(
        np.zeros(0), np.ones(2))
    assert g[0].shape == (0,) and np.allclose(g[1], 1.0)
    # float32 stays float32
    w32 = A0.data.astype(np.float32)
    x32 = X.astype(np.float32)
    out = _twin(w32) @ x32
    assert out.dtype == np.float32
    g = cr.grad(lambda w, x: np.sum(_twin(w) @ x), argnums=(0, 1))(w32, x32)
    assert g[0].dtype == np.float32 and g[1].dtype == np.float32
    # complex values: JAX convention (no conjugate), real loss
    wc = A0.data * (1 + 0.5j)
    xc = X * (1 - 0.25j)
    got = cr.grad(lambda w, x: np.real(np.sum((_twin(w) @ x) ** 2)), argnums=(0, 1))(wc, xc)
    want = cr.grad(lambda w, x: np.real(np.sum((_dense_twin(w, A0) @ x) ** 2)),
                   argnums=(0, 1))(wc, xc)
    _close(got, want)


def test_bad_input_raises_and_leaves_arrays_untouched():
    w = A0.data.copy()
    with pytest.raises(ValueError, match="does not match"):
        cr.grad(lambda w: np.sum(_twin(w) @ np.ones(3)))(w)
    np.testing.assert_array_equal(w, A0.data)
    with pytest.raises(cr.UntraceableError, match="dense array"):
        cr.grad(lambda d: np.sum(sparse.csr_array(d) @ X))(A0.toarray())
    with pytest.raises(cr.MissingRuleError, match="two sparse"):
        _twin(w) @ A0.T
    with pytest.raises(ValueError, match="out of bounds"):
        sparse.coo_array((np.ones(1), ([5], [0])), shape=(2, 2))


def test_sddmm_takes_operands_of_the_sparse_dimensions_only():
    # like spmm and rspmm: a dense operand whose length is not the sparse
    # dimension is refused by the plain call and the traced one alike
    from chainrules.rules.scipy_sparse import sddmm

    kw = {"row": np.array([0, 0]), "col": np.array([0, 1]), "m": 2, "n": 2}
    g, x = np.array([0.7, -0.4]), np.array([1.5, 0.3])
    np.testing.assert_allclose(sddmm(g, x, **kw), [0.7 * 1.5, 0.7 * 0.3])
    jac = cr.jacobian(lambda x: sddmm(g, x, **kw))(x)
    np.testing.assert_allclose(jac, [[0.7, 0.0], [0.0, 0.7]])
    for bad in ((g[:1], x), (g, x[:1]), (g[:, None], x)):
        with pytest.raises(ValueError, match="sddmm"):
            sddmm(*bad, **kw)
        with pytest.raises(ValueError, match="sddmm"):
            cr.jacobian(lambda a, b=bad[1]: sddmm(a, b, **kw))(bad[0])


# -- linalg --------------------------------------------------------------------------
def _sq(w, pattern=S0):
    return sparse.csr_array((w, pattern.indices, pattern.indptr), shape=pattern.shape)


SOLVERS = {
    "spsolve": (lambda A, b: sl.spsolve(A, b), S0),
    "splu": (lambda A, b: sl.splu(A).solve(b), S0),
    "splu_T": (lambda A, b: sl.splu(A).solve(b, trans="T"), S0),
    "factorized": (lambda A, b: sl.factorized(A)(b), S0),
    "cg": (lambda A, b: sl.cg(A, b, rtol=1e-13)[0], SYM),
    "minres": (lambda A, b: sl.minres(A, b, rtol=1e-13)[0], SYM),
    "gmres": (lambda A, b: sl.gmres(A, b, rtol=1e-13, atol=0.0)[0], S0),
    "bicgstab": (lambda A, b: sl.bicgstab(A, b, rtol=1e-13)[0], S0),
}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_solvers_against_dense(name):
    solve, pat = SOLVERS[name]
    trans = name.endswith("_T")

    def got(w, b):
        return np.sum(solve(_sq(w, pat), b) ** 2 * np.arange(1.0, 5.0))

    def want(w, b):
        D = _dense_twin(w, pat)
        return np.sum(np.linalg.solve(D.T if trans else D, b) ** 2 * np.arange(1.0, 5.0))

    w = pat.data
    _close(got(w, Y), want(w, Y), 1e-8)
    _close(cr.grad(got, argnums=(0, 1))(w, Y), cr.grad(want, argnums=(0, 1))(w, Y), 1e-7)
    v = np.linspace(-1.0, 1.0, w.size)
    _close(cr.hvp(lambda w: got(w, Y), w, v), cr.hvp(lambda w: want(w, Y), w, v), 1e-6)


def test_solvers_plain_matrix_and_operator():
    D = SYM.toarray()
    for A in (SYM, D, spl.aslinearoperator(SYM), sl.aslinearoperator(SYM)):
        for method in (sl.cg, sl.gmres):
            f = lambda b: np.sum(method(A, b, rtol=1e-13)[0] ** 2)
            _close(cr.grad(f)(Y), cr.grad(lambda b: np.sum(np.linalg.solve(D, b) ** 2))(Y),
                   1e-7)


def test_spsolve_two_d_and_float32():
    B = np.outer(Y, [1.0, -2.0])
    got = cr.grad(lambda w, b: np.sum(sl.spsolve(_sq(w), b) ** 2), argnums=(0, 1))(S0.data, B)
    want = cr.grad(lambda w, b: np.sum(np.linalg.solve(_dense_twin(w, S0), b) ** 2),
                   argnums=(0, 1))(S0.data, B)
    _close(got, want, 1e-8)
    x = sl.spsolve(_sq(S0.data.astype(np.float32)), Y.astype(np.float32))
    assert x.dtype == np.float32


def test_solver_errors():
    sing = sp.csr_array(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(cr.DomainError, match="singular"):
        cr.grad(lambda b: np.sum(sl.spsolve(sing, b)))(np.ones(2))
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda b: np.sum(sl.cg(SYM, b, rtol=1e-14, maxiter=1)[0]))(Y)
    with pytest.raises(cr.NumericalInstabilityError, match="info="):
        sl.bicgstab(_sq(S0.data), Y, maxiter=1, rtol=1e-15)


def test_linear_operator_with_traced_matvec():
    D = S0.toarray()

    def f(t, x):
        op = sl.LinearOperator((4, 4), lambda v: t * (D @ v), rmatvec=lambda v: t * (D.T @ v))
        return np.sum((op @ x) ** 2) + np.sum(op.T @ x) + np.sum(op.matmat(np.outer(x, x)))

    def ref(t, x):
        return (np.sum((t * D @ x) ** 2) + np.sum(t * D.T @ x)
                + np.sum(t * D @ np.outer(x, x)))

    _close(cr.grad(f, argnums=(0, 1))(2.0, Y), cr.grad(ref, argnums=(0, 1))(2.0, Y))


def test_expm_multiply_against_dense():
    from scipy.linalg import expm

    def got(w, b):
        return np.sum(np.sin(sl.expm_multiply(_sq(w * 0.2), b)))

    def want(w, b):
        return np.sum(np.sin(cr.scipy.linalg.expm(_dense_twin(w * 0.2, S0)) @ b))

    w = S0.data
    np.testing.assert_allclose(sl.expm_multiply(_sq(w), Y), expm(S0.toarray()) @ Y, rtol=1e-10)
    _close(got(w, Y), want(w, Y))
    _close(cr.grad(got, argnums=(0, 1))(w, Y), cr.grad(want, argnums=(0, 1))(w, Y), 1e-8)
    v = np.linspace(-1.0, 1.0, w.size)
    _close(cr.hvp(lambda w: got(w, Y), w, v), cr.hvp(lambda w: want(w, Y), w, v), 1e-7)
    with pytest.raises(cr.MissingRuleError, match="start/stop"):
        sl.expm_multiply(S0, Y, start=0.0, stop=1.0, num=3)


@pytest.mark.parametrize("method", ["cg", "minres", "gmres", "bicgstab"])
def test_iterative_solve_with_traced_matvec(method):
    D = (SYM if method in ("cg", "minres") else S0).toarray()
    solve = getattr(sl, method)

    def got(t, b):
        op = sl.LinearOperator((4, 4), lambda v: D @ v + t * v)
        return np.sum(solve(op, b, rtol=1e-13)[0] ** 2)

    def want(t, b):
        return np.sum(np.linalg.solve(D + t * np.eye(4), b) ** 2)

    _close(got(0.7, Y), want(0.7, Y), 1e-8)
    _close(cr.grad(got, argnums=(0, 1))(0.7, Y), cr.grad(want, argnums=(0, 1))(0.7, Y), 1e-7)
    _close(cr.hessian(lambda t: got(t, Y))(0.7), cr.hessian(lambda t: want(t, Y))(0.7), 1e-6)
