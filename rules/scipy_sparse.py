"""Products of ``scipy.sparse`` matrices with dense arrays, differentiable in
the stored values and in the dense operand (registered when ``scipy.sparse``
is imported).

A sparse matrix is its stored values ``data`` (one per entry, duplicates
summed) at the constant coordinates ``(row, col)`` of a ``(m, n)`` matrix.
Three primitives, each bilinear, whose transposes are each other:

* ``spmm(data, x, row, col, m, n)``: ``A @ x`` for ``x`` of shape ``(n,)``
  or ``(n, k)``;
* ``rspmm(x, data, row, col, m, n)``: ``x @ A`` for ``x`` of shape ``(m,)``
  or ``(p, m)``;
* ``sddmm(g, x, row, col, m, n)``: the values ``sum_j g[row, j] x[col, j]``
  at the stored coordinates (the cotangent of ``data`` in ``A @ x``).

Cotangents follow the JAX convention (no conjugates): the transpose of
``x -> A @ x`` is ``g -> A^T @ g`` and that of ``data -> A @ x`` is
``g -> sddmm(g, x)``. Since every transpose is one of the three primitives,
all orders of derivatives follow from bilinearity.

``x @ A`` with a traced ``x`` and a plain SciPy sparse ``A`` (the tracer's
operator runs first) is ``rspmm`` on ``A``'s coordinates (``A @ x`` runs
SciPy's operator, whose ``np.asarray`` refuses the traced ``x`` and names
the twins of ``chainrules.scipy.sparse``). Any other operation of a traced
value with a plain SciPy sparse matrix (``x * A``, ``x + A``) raises
``MissingRuleError`` naming the twin (``tracing.OPERAND_CHECKS``).
"""

import numpy as np

from chainrules.derived_linear import bilinear_rule
from chainrules.errors import MissingRuleError
from chainrules.primitives import primitive
from chainrules import tracing as _tracing
from chainrules.registry import lookup, op_name, register

from ._util import on_demand_family

import scipy.sparse as _sp

_family_loaded = on_demand_family()

__all__ = ["spmm", "rspmm", "sddmm", "coordinates"]


def _csr(data, row, col, m, n):
    """The plain CSR matrix of these entries (duplicates summed)."""
    return _sp.csr_array((data, (row, col)), shape=(m, n))


def _check_dense(op, x, axis, size):
    if x.ndim not in (1, 2) or x.shape[axis if x.ndim == 2 else 0] != size:
        raise ValueError(f"{op}: a dense operand of shape {x.shape} does not match a "
                         f"sparse dimension of {size} (1-D or 2-D operands only)")


@primitive
def spmm(data, x, *, row, col, m, n):
    """``A @ x`` with ``A`` the ``(m, n)`` matrix of ``data`` at ``(row, col)``."""
    x = np.asarray(x)
    _check_dense("spmm", x, 0, n)
    return np.asarray(_csr(data, row, col, m, n) @ x)


@primitive
def rspmm(x, data, *, row, col, m, n):
    """``x @ A`` with ``A`` the ``(m, n)`` matrix of ``data`` at ``(row, col)``."""
    x = np.asarray(x)
    _check_dense("rspmm", x, 1, m)
    if x.ndim == 1:
        return np.asarray(_csr(data, col, row, n, m) @ x)
    return np.asarray((_csr(data, col, row, n, m) @ x.T).T)


@primitive
def sddmm(g, x, *, row, col, m, n):
    """``sum_j g[row_k, j] x[col_k, j]`` for each stored entry ``k`` (the
    product ``g x^T`` sampled at the coordinates): ``g`` of shape ``(m,)`` or
    ``(m, k)``, ``x`` of shape ``(n,)`` or ``(n, k)``."""
    g = np.asarray(g)
    x = np.asarray(x)
    _check_dense("sddmm", g, 0, m)
    _check_dense("sddmm", x, 0, n)
    if g.shape[1:] != x.shape[1:]:
        raise ValueError(f"sddmm: dense operands of shapes {g.shape} and {x.shape} do not "
                         "have the same columns")
    prod = g[row] * x[col]
    return prod if prod.ndim == 1 else np.sum(prod, axis=-1)


# -- transposes (each a call of the three primitives, so differentiable) ------
def _spmm_tdata(g, x, data_shape, *, row, col, m, n):
    return sddmm(g, x, row=row, col=col, m=m, n=n)


def _spmm_tx(g, data, x_shape, *, row, col, m, n):
    return spmm(data, g, row=col, col=row, m=n, n=m)


def _rspmm_tx(g, data, x_shape, *, row, col, m, n):
    return rspmm(g, data, row=col, col=row, m=n, n=m)


def _rspmm_tdata(g, x, data_shape, *, row, col, m, n):
    # (x @ A)[i, j] = sum_k x[i, row_k] data_k [col_k == j]
    if np.ndim(x) == 1:
        return sddmm(x, g, row=row, col=col, m=m, n=n)
    return sddmm(np.swapaxes(x, 0, 1), np.swapaxes(g, 0, 1), row=row, col=col, m=m, n=n)


def _sddmm_tg(c, x, g_shape, *, row, col, m, n):
    return spmm(c, x, row=row, col=col, m=m, n=n)


def _sddmm_tx(c, g, x_shape, *, row, col, m, n):
    return spmm(c, g, row=col, col=row, m=n, n=m)


bilinear_rule(spmm, _spmm_tdata, _spmm_tx)
bilinear_rule(rspmm, _rspmm_tx, _rspmm_tdata)
bilinear_rule(sddmm, _sddmm_tg, _sddmm_tx)


def coordinates(a):
    """``(data, row, col, m, n)`` of a plain SciPy sparse matrix, the values in
    the order the object stores them (CSR/CSC: ``data``; COO: ``data``; other
    formats through their COO form)."""
    m, n = a.shape
    fmt = a.format
    if fmt in ("csr", "csc"):
        major = np.repeat(np.arange(a.indptr.size - 1), np.diff(a.indptr))
        minor = np.asarray(a.indices)
        row, col = (major, minor) if fmt == "csr" else (minor, major)
        return a.data, row.astype(np.intp), col.astype(np.intp), m, n
    c = a.tocoo()
    return c.data, np.asarray(c.row, np.intp), np.asarray(c.col, np.intp), m, n


# -- operators of the tracer meeting a plain SciPy sparse matrix ----------------
_SPARSE = (_sp.sparray, _sp.spmatrix)


def _matmul_sparse_maker(ids, x, a):
    """``x @ A``: traced dense ``x``, plain SciPy sparse ``A``."""
    if a.ndim != 2:
        raise MissingRuleError(f"x @ A with a {a.ndim}-d sparse array is not "
                               "differentiable; use 2-d sparse matrices")
    data, row, col, m, n = coordinates(a)
    maker = lookup(rspmm, (type(x), np.ndarray))
    return maker([ids[0], None], x, data, row=row, col=col, m=m, n=n)


def _check_sparse_operand(t, op):
    """A plain SciPy sparse matrix beside a traced value: ``x @ A`` has a rule
    (above); any other operation would run NumPy on the sparse object (an
    object array of matrices, or SciPy's own error), so it is refused."""
    if op is np.matmul:
        return
    raise MissingRuleError(
        f"{op_name(op)} of a traced value and a SciPy sparse matrix ({t.__name__}) is not "
        "differentiable; make the matrix a twin, chainrules.scipy.sparse."
        f"{_twin_name(t)}(A), and use its methods (A.multiply(x), A @ x, A.toarray())")


def _twin_name(t):
    """The twin of SciPy's class ``t`` (CSR for the formats without one)."""
    kind = "matrix" if issubclass(t, _sp.spmatrix) else "array"
    fmt = t.__name__.split("_")[0]
    return f"{fmt if fmt in ('csr', 'csc', 'coo') else 'csr'}_{kind}"


for _cls in _SPARSE:
    register(np.matmul, object, _cls)(_matmul_sparse_maker)
    _tracing.OPERAND_CHECKS[_cls] = _check_sparse_operand

_family_loaded()
