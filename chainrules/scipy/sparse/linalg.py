"""Differentiable twins of ``scipy.sparse.linalg``: ``spsolve``, ``splu``,
``cg``, ``gmres``, ``minres``, ``bicgstab``, ``expm_multiply`` and
``LinearOperator``.

The matrix is a twin of ``chainrules.scipy.sparse`` (differentiable in its
stored values), a plain SciPy sparse matrix or a dense array (constant); the
right-hand side may be traced. Derivatives are those of the exact solution
(``chainrules.rules.scipy_sparse_linalg``): each pullback does one more solve
with the transposed matrix (the same LU factor, or the same iterative method
with the same tolerances).

Example: a 1-D Poisson problem with learned conductances ``k``::

    import numpy as np, chainrules as cr
    from chainrules.scipy import sparse
    from chainrules.scipy.sparse.linalg import spsolve

    n = 5
    i = np.arange(n)
    row = np.concatenate([i, i[1:], i[:-1]])
    col = np.concatenate([i, i[:-1], i[1:]])

    def u_mean(k):
        data = np.concatenate([k[:-1] + k[1:], -k[1:-1], -k[1:-1]])
        return np.mean(spsolve(sparse.csr_array((data, (row, col)), shape=(n, n)),
                               np.ones(n)))

    cr.grad(u_mean)(np.linspace(1.0, 2.0, n + 1))
"""

import numpy as np

from chainrules import tracing as _tracing
from chainrules.capture import closure_convert
from chainrules.errors import MissingRuleError
from chainrules.rules import scipy_sparse_linalg as _rules

import scipy.sparse as _sp
import scipy.sparse.linalg as _spl

__all__ = ["spsolve", "splu", "factorized", "cg", "gmres", "minres", "bicgstab",
           "expm_multiply", "LinearOperator", "aslinearoperator"]


def _twin_type():
    from . import _SparseTwin

    return _SparseTwin


def _square_coords(A, op):
    """``(data, row, col, n)`` of a square twin, SciPy sparse or dense matrix."""
    T = _twin_type()
    if not isinstance(A, T):
        if type(A) is _tracing.Traced:
            raise MissingRuleError(
                f"scipy.sparse.linalg.{op}: a traced dense matrix is not taken here; "
                "build chainrules.scipy.sparse.csr_array((data, indices, indptr)) with "
                "traced data, or use chainrules.numpy.linalg.solve for dense matrices")
        from . import csr_array

        A = csr_array(A)
    m, n = A.shape
    if m != n:
        raise ValueError(f"scipy.sparse.linalg.{op}: the matrix must be square, got {A.shape}")
    return A._data, A._row, A._col, n


def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """``scipy.sparse.linalg.spsolve``: ``A^{-1} b`` by a sparse LU factor
    (SuperLU), differentiable in ``A``'s stored values and in ``b`` (1-D or
    2-D dense). A singular matrix raises ``DomainError``; the result is an
    ndarray also for a sparse ``b`` (dense it first)."""
    data, row, col, n = _square_coords(A, "spsolve")
    if _sp.issparse(b) or isinstance(b, _twin_type()):
        b = b.toarray()
    lu = _rules.factor(data, row, col, n, "scipy.sparse.linalg.spsolve")
    return _rules.lu_solve(data, b, row=row, col=col, n=n, lu=lu)


class SuperLU:
    """The factor ``splu(A)``: ``solve(b, trans="N"|"T")`` differentiable in
    ``b`` and in ``A``'s stored values (one transposed solve with the same
    factor per pullback). ``perm_r``, ``perm_c``, ``L``, ``U``, ``shape`` and
    ``nnz`` are SciPy's (plain)."""

    def __init__(self, data, row, col, n, lu):
        self._data, self._row, self._col, self._n, self._lu = data, row, col, n, lu

    def __getattr__(self, name):
        return getattr(self._lu, name)

    def solve(self, rhs, trans="N"):
        if trans not in ("N", "T"):
            raise MissingRuleError("SuperLU.solve: trans='H' is not differentiable here; "
                                   "use trans='T' on the conjugate")
        return _rules.lu_solve(self._data, rhs, row=self._row, col=self._col, n=self._n,
                               trans=trans, lu=self._lu)


def splu(A, permc_spec=None, diag_pivot_thresh=None, relax=None, panel_size=None,
         options=None):
    """``scipy.sparse.linalg.splu``: a ``SuperLU`` whose ``solve`` is
    differentiable (see there); a singular matrix raises ``DomainError``."""
    data, row, col, n = _square_coords(A, "splu")
    return SuperLU(data, row, col, n, _rules.factor(data, row, col, n))


def factorized(A):
    """``scipy.sparse.linalg.factorized``: ``splu(A).solve``."""
    return splu(A).solve


# -- iterative solvers -------------------------------------------------------------
def _iterative(method, A, b, x0, rtol, atol, maxiter, M, callback):
    if callback is not None:
        raise MissingRuleError(f"scipy.sparse.linalg.{method}: callback= is not supported "
                               "by the differentiable twin")
    opts = (("rtol", rtol), ("atol", atol), ("maxiter", maxiter))
    if M is not None:
        if method not in _rules._SYMMETRIC:
            raise MissingRuleError(
                f"scipy.sparse.linalg.{method}: a preconditioner M is supported for cg and "
                "minres (the transposed solve of the pullback needs M^T)")
        opts += (("M", M),)
    if x0 is not None:
        opts += (("x0", np.asarray(_tracing.untraced(x0) if type(x0) is _tracing.Traced
                                   else x0)),)
    if isinstance(A, (LinearOperator, _spl.LinearOperator)):
        x = _operator_solve(A, b, method, opts)
    else:
        data, row, col, n = _square_coords(A, method)
        x = _rules.iterative_solve(data, b, row=row, col=col, n=n, method=method, opts=opts)
    return x, 0


def _operator_solve(A, b, method, opts):
    """An iterative solve with a ``LinearOperator``: one whose ``matvec``
    closes over traced values is differentiated in them too."""
    if isinstance(A, LinearOperator):
        m, n = A.shape
        if m != n:
            raise ValueError(f"scipy.sparse.linalg.{method}: the operator must be square, "
                             f"got {A.shape}")
        f, captured = closure_convert(A.matvec, np.zeros(n, A.dtype),
                                      name=f"the matvec of a LinearOperator in {method}")
        if captured:
            # 0-d values travel as vectors of one element (the solve's rule reads
            # its arguments as vectors and matrices)
            shapes = [np.shape(c) for c in captured]
            vectors = [np.reshape(c, (1,)) if s == () else c for c, s in zip(captured, shapes)]

            def matvec_of(v, *ps):
                return f(v, *[np.reshape(p, s) for p, s in zip(ps, shapes)])

            return _rules.function_solve(b, *vectors, f=matvec_of, trans=False,
                                         method=method, opts=opts, n=n)
        A = A._plain_operator(method)
    return _rules.operator_solve(b, op=A, method=method, opts=opts)


_ERROR_BOUND = """

    Differentiated as the exact solution ``x = A^{-1} b``: the tangent and the
    cotangent are solves with ``A`` and ``A^T`` by the same method, tolerances
    and ``maxiter``. Each solve stops at a residual of at most
    ``max(rtol * ||rhs||, atol)``, so the value and each derivative are within
    ``cond(A) * max(rtol, atol / ||rhs||)`` (relative) of the exact ones. A
    solve that does not converge (SciPy's ``info != 0``) raises
    ``NumericalInstabilityError`` instead of returning its last iterate; the
    ``info`` returned is therefore always 0."""


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    return _iterative("cg", A, b, x0, rtol, atol, maxiter, M, callback)


def minres(A, b, x0=None, *, rtol=1e-5, shift=0.0, maxiter=None, M=None, callback=None,
           show=False, check=False):
    if shift != 0.0:
        raise MissingRuleError("scipy.sparse.linalg.minres: shift= is not supported by the "
                               "differentiable twin; subtract shift * I from A")
    return _minres(A, b, x0, rtol, maxiter, M, callback)


def _minres(A, b, x0, rtol, maxiter, M, callback):
    if callback is not None:
        raise MissingRuleError("scipy.sparse.linalg.minres: callback= is not supported "
                               "by the differentiable twin")
    opts = (("rtol", rtol), ("maxiter", maxiter))
    if M is not None:
        opts += (("M", M),)
    if x0 is not None:
        opts += (("x0", np.asarray(_tracing.untraced(x0) if type(x0) is _tracing.Traced
                                   else x0)),)
    if isinstance(A, (LinearOperator, _spl.LinearOperator)):
        return _operator_solve(A, b, "minres", opts), 0
    data, row, col, n = _square_coords(A, "minres")
    return _rules.iterative_solve(data, b, row=row, col=col, n=n, method="minres",
                                  opts=opts), 0


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None,
          callback=None, callback_type=None):
    if restart is not None:
        raise MissingRuleError("scipy.sparse.linalg.gmres: restart= is not supported by "
                               "the differentiable twin")
    return _iterative("gmres", A, b, x0, rtol, atol, maxiter, M, callback)


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    return _iterative("bicgstab", A, b, x0, rtol, atol, maxiter, M, callback)


for _f, _what in ((cg, "conjugate gradients (A symmetric positive definite)"),
                  (minres, "MINRES (A symmetric)"), (gmres, "GMRES"),
                  (bicgstab, "BiCGSTAB")):
    _f.__doc__ = (f"``scipy.sparse.linalg.{_f.__name__}``: ``(x, info)`` by {_what}, "
                  "differentiable in ``b`` and in the stored values of a sparse twin ``A``."
                  + _ERROR_BOUND)


# -- expm_multiply --------------------------------------------------------------------
def expm_multiply(A, B, start=None, stop=None, num=None, endpoint=None, traceA=None):
    """``scipy.sparse.linalg.expm_multiply``: ``expm(A) @ B``, differentiable
    in ``B`` and in ``A``'s stored values (the pullback in ``A`` holds an
    ``n x n`` dense matrix). ``start``/``stop``/``num`` are not supported.
    SciPy's is called at one fixed state of ``np.random`` (its norm
    estimates draw from it), so the result is a function of the input and
    the caller's random stream is left where it was."""
    if start is not None or stop is not None or num is not None:
        raise MissingRuleError("scipy.sparse.linalg.expm_multiply: start/stop/num are not "
                               "supported by the differentiable twin; call it per time")
    data, row, col, n = _square_coords(A, "expm_multiply")
    return _rules.expm_multiply(data, B, row=row, col=col, n=n)


# -- LinearOperator -------------------------------------------------------------------
class LinearOperator:
    """``scipy.sparse.linalg.LinearOperator`` whose ``matvec`` may compute
    with traced values: ``A @ x``, ``A.matvec``, ``A.matmat``, ``A.rmatvec``
    and ``A.T`` call the given functions, so they differentiate as the code in
    them. The iterative solvers differentiate in the values ``matvec`` closes
    over (found by running it once, ``chainrules.capture.closure_convert``):
    each pullback solves with the transpose, the vjp of ``matvec``, by the
    same method, so ``rmatvec`` is not needed."""

    def __init__(self, shape, matvec, rmatvec=None, matmat=None, dtype=None, rmatmat=None):
        self.shape = tuple(int(s) for s in shape)
        self._matvec, self._rmatvec, self._matmat = matvec, rmatvec, matmat
        self.dtype = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
        self.ndim = 2

    def matvec(self, x):
        y = self._matvec(x)
        return y.reshape(-1) if np.ndim(y) == 2 and np.ndim(x) == 1 else y

    def rmatvec(self, x):
        if self._rmatvec is None:
            raise NotImplementedError("rmatvec is not defined")
        return self._rmatvec(x)

    def matmat(self, X):
        if self._matmat is not None:
            return self._matmat(X)
        return np.stack([self.matvec(X[:, j]) for j in range(X.shape[1])], axis=1) \
            if X.shape[1] else np.zeros((self.shape[0], 0), self.dtype)

    def __matmul__(self, x):
        return self.matvec(x) if np.ndim(x) == 1 else self.matmat(x)

    dot = __matmul__

    def __call__(self, x):
        return self @ x

    def transpose(self):
        if self._rmatvec is None:
            raise NotImplementedError("the transpose needs rmatvec")
        return LinearOperator(self.shape[::-1], self._rmatvec, self._matvec, dtype=self.dtype)

    T = property(transpose)

    def _plain_operator(self, method):
        """SciPy's operator on these functions, refusing traced results."""
        def check(f, what):
            def plain_f(v):
                out = f(v)
                if type(out) is _tracing.Traced:
                    raise MissingRuleError(
                        f"scipy.sparse.linalg.{method}: this LinearOperator's {what} "
                        "computes with traced values, which an iterative solve cannot "
                        "differentiate; build the matrix as a chainrules.scipy.sparse "
                        "twin with traced data")
                return np.asarray(out)
            return plain_f

        rm = None if self._rmatvec is None else check(self._rmatvec, "rmatvec")
        return _spl.LinearOperator(self.shape, check(self._matvec, "matvec"), rmatvec=rm,
                                   dtype=self.dtype)


def aslinearoperator(A):
    """A ``LinearOperator`` of a twin, sparse or dense matrix (``A @ x``)."""
    if isinstance(A, LinearOperator):
        return A
    T = _twin_type()
    if not isinstance(A, T):
        from . import csr_array

        A = csr_array(A)
    At = A.T
    return LinearOperator(A.shape, lambda v: A @ v, lambda v: At @ v, dtype=A.dtype)
