"""Solves and exponentials of ``scipy.sparse.linalg``, differentiable in the
stored values ``data`` of a sparse matrix (at constant coordinates
``(row, col)``, see ``rules/scipy_sparse.py``) and in the right-hand side.

* ``lu_solve(data, b, row=, col=, n=, trans=, lu=)``: ``x = A^{-1} b``
  (``trans="T"``: ``A^{-T} b``) with a SuperLU factor ``lu`` of ``A``. Its
  tangent is ``A^{-1} (b' - A' x)`` and its cotangents are ``y = A^{-T} g``
  for ``b`` and ``-y x^T`` at the coordinates for ``data``: one more solve
  with the same factor, transposed.
* ``iterative_solve(data, b, row=, col=, n=, method=, opts=)``: the same
  derivative for ``cg``, ``gmres``, ``minres`` and ``bicgstab``, each extra
  solve done by the same method with the same tolerances; a solve that does
  not converge raises ``NumericalInstabilityError``.
* ``operator_solve(b, op=, method=, opts=)``: an iterative solve with a
  constant ``LinearOperator`` (or dense matrix), linear in ``b``.
* ``function_solve(b, *params, f=, trans=, method=, opts=, n=)``: an
  iterative solve of ``f(x, *params) = b`` with ``f`` linear in ``x`` (a
  ``LinearOperator``'s ``matvec`` closing over traced ``params``). The
  tangent is ``A^{-1} (b' - d_p[f(x, p)] p')`` and the cotangents are
  ``y = A^{-T} g`` and ``-vjp_p[f(x, p)](y)``; ``A^T`` is the vjp of ``f``
  in ``x``, so the transposed solve needs no ``rmatvec``.
* ``expm_multiply(data, b, row=, col=, n=)``: ``expm(A) @ b``. Its tangent
  in ``A`` is the Fréchet derivative ``L(A, A') b``, the top block of
  ``expm([[A, A'], [0, A]]) @ [0; b]``; the cotangent of ``data`` is
  ``L(A^T, g b^T)`` at the coordinates, from the same block form with
  ``n`` columns (``O(n^2)`` memory: it holds the dense ``g b^T``).

Every derived quantity is a call of these primitives or of the products of
``rules/scipy_sparse.py``, so second order follows (the jvp of the
pullback).
"""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.derived_linear import linear_rule
from chainrules.errors import DomainError, NumericalInstabilityError
from chainrules.primitives import primitive

from ._linalg_util import defrule, plain
from ._util import fixed_global_rng, on_demand_family
from .scipy_sparse import sddmm, spmm

import scipy.sparse as _sp
import scipy.sparse.linalg as _spl

_family_loaded = on_demand_family()

__all__ = ["lu_solve", "iterative_solve", "operator_solve", "function_solve",
           "expm_multiply", "factor"]

_FLIP = {"N": "T", "T": "N"}


def _csc(data, row, col, n):
    return _sp.csc_array((data, (row, col)), shape=(n, n))


def factor(data, row, col, n, op="scipy.sparse.linalg.splu"):
    """The SuperLU factor of the plain matrix; a singular one raises
    ``DomainError`` (its solution and derivative do not exist)."""
    vals = plain(data)
    if vals.dtype.kind not in "fc":
        vals = vals.astype(np.float64)
    try:
        return _spl.splu(_csc(vals, row, col, n))
    except RuntimeError as e:
        raise DomainError(f"{op}: the matrix is singular ({e}); the solution and its "
                          "derivative do not exist") from None


@primitive
def lu_solve(data, b, *, row, col, n, trans="N", lu=None):
    """``A^{-1} b`` (``trans="T"``: ``A^{-T} b``) with the factor ``lu`` of ``A``."""
    b = np.asarray(b)
    dt = np.result_type(plain(data).dtype, b.dtype, np.float32)
    if lu is None or lu.L.dtype != dt:
        lu = factor(np.asarray(data).astype(dt), row, col, n)
    if b.shape[:1] != (n,) or b.ndim > 2:
        raise ValueError(f"spsolve: right-hand side of shape {b.shape} for a matrix of "
                         f"order {n}")
    if b.size == 0:
        return np.zeros(b.shape, dt)
    x = lu.solve(np.ascontiguousarray(b.astype(dt)), trans=trans)
    if not np.all(np.isfinite(x)):
        raise DomainError("scipy.sparse.linalg.spsolve: the solution is not finite (a "
                          "numerically singular matrix); its derivative does not exist")
    return x


def _lu_pf(r, xds):
    data, b = r.xs
    dd, bd = xds
    kw = r.kw
    rhs = bd
    if dd is not None and r.ids[0] is not None:
        if kw.get("trans", "N") == "N":
            ax = spmm(dd, r.y, row=kw["row"], col=kw["col"], m=kw["n"], n=kw["n"])
        else:
            ax = spmm(dd, r.y, row=kw["col"], col=kw["row"], m=kw["n"], n=kw["n"])
        rhs = bd - ax
    return lu_solve(data, rhs, **kw)


def _lu_pb(r, g):
    data, b = r.xs
    kw = dict(r.kw)
    trans = kw.get("trans", "N")
    kw["trans"] = _FLIP[trans]
    y = lu_solve(data, g, **kw)
    gdata = None
    if r.ids[0] is not None:
        row, col, n = r.kw["row"], r.kw["col"], r.kw["n"]
        if trans == "N":
            gdata = -sddmm(y, r.y, row=row, col=col, m=n, n=n)
        else:
            gdata = -sddmm(r.y, y, row=row, col=col, m=n, n=n)
    return [gdata, y]


defrule(lu_solve, _lu_pf, _lu_pb)


# -- iterative solvers -------------------------------------------------------------
_METHODS = {"cg": _spl.cg, "gmres": _spl.gmres, "minres": _spl.minres,
            "bicgstab": _spl.bicgstab}
_SYMMETRIC = ("cg", "minres")


def run_solver(method, a, b, opts, what="the solve"):
    """``x`` from ``scipy.sparse.linalg.<method>(a, b, **opts)``; info != 0
    raises ``NumericalInstabilityError``."""
    b = np.asarray(b)
    if not np.any(b):
        return np.zeros(b.shape, np.result_type(b.dtype, np.float32))
    x, info = _METHODS[method](a, b, **dict(opts))
    if info != 0:
        why = "did not converge" if info > 0 else "broke down (illegal input)"
        raise NumericalInstabilityError(
            f"scipy.sparse.linalg.{method}: {what} {why} (info={info}); the result is "
            "not the solution, so neither is its derivative: raise maxiter, loosen "
            "rtol/atol or precondition")
    return x


@primitive
def iterative_solve(data, b, *, row, col, n, method, opts, trans="N"):
    """``A^{-1} b`` by ``scipy.sparse.linalg.<method>`` (``trans="T"``: ``A^T``)."""
    a = _sp.csr_array((data, (row, col) if trans == "N" else (col, row)), shape=(n, n))
    return run_solver(method, a, b, opts)


def _it_pf(r, xds):
    data, b = r.xs
    dd, bd = xds
    kw = r.kw
    rhs = bd
    if dd is not None and r.ids[0] is not None:
        rc = (kw["row"], kw["col"]) if kw.get("trans", "N") == "N" else (kw["col"], kw["row"])
        rhs = bd - spmm(dd, r.y, row=rc[0], col=rc[1], m=kw["n"], n=kw["n"])
    return iterative_solve(data, rhs, **kw)


def _it_pb(r, g):
    data, b = r.xs
    kw = dict(r.kw)
    trans = kw.get("trans", "N")
    kw["trans"] = _FLIP[trans]
    y = iterative_solve(data, g, **kw)
    gdata = None
    if r.ids[0] is not None:
        row, col, n = r.kw["row"], r.kw["col"], r.kw["n"]
        gdata = (-sddmm(y, r.y, row=row, col=col, m=n, n=n) if trans == "N"
                 else -sddmm(r.y, y, row=row, col=col, m=n, n=n))
    return [gdata, y]


defrule(iterative_solve, _it_pf, _it_pb)


def _transposed(op):
    if isinstance(op, np.ndarray) or _sp.issparse(op):
        return op.T
    return op.transpose()


@primitive
def operator_solve(b, *, op, method, opts):
    """``A^{-1} b`` by ``<method>`` with a constant operator ``op``."""
    return run_solver(method, op, b, opts)


def _operator_solve_t(g, b_shape, *, op, method, opts):
    top = op if method in _SYMMETRIC else _transposed(op)
    return operator_solve(g, op=top, method=method, opts=opts)


linear_rule(operator_solve, _operator_solve_t)


# -- solves with an operator given by a function ------------------------------------
def _apply(f, v, params, trans):
    """``A(p) v`` for ``A(p) v = f(v, *p)`` (``trans``: ``A(p)^T v``, the vjp of
    ``f`` in its linear argument, so no conjugate)."""
    if not trans:
        return f(v, *params)
    from chainrules.api import vjp

    _, back = vjp(lambda w: f(w, *params), np.zeros(np.shape(v), np.result_type(v, 1.0)))
    return back(v)[0]


@primitive
def function_solve(b, *params, f, trans, method, opts, n):
    """``x`` with ``f(x, *params) = b`` (``trans``: the transposed operator)
    by ``scipy.sparse.linalg.<method>``; ``f`` is linear in its first argument."""
    b = np.asarray(b)
    dt = np.result_type(b.dtype, np.float32, *[np.asarray(p).dtype for p in params])
    op = _spl.LinearOperator((n, n), lambda v: np.asarray(_apply(f, v, params, trans)),
                             dtype=dt)
    return run_solver(method, op, b, opts)


def _fs_pf(r, xds):
    from chainrules.api import jvp

    b, params = r.xs[0], r.xs[1:]
    kw = r.kw
    rhs = xds[0]
    if any(i is not None for i in r.ids[1:]):
        _, t = jvp(lambda *ps: _apply(kw["f"], r.y, ps, kw["trans"]), tuple(params),
                   tuple(xds[1:]))
        rhs = rhs - t
    return function_solve(rhs, *params, **kw)


def _fs_pb(r, g):
    from chainrules.api import vjp

    params = r.xs[1:]
    kw = dict(r.kw)
    trans = kw["trans"]
    kw["trans"] = not trans
    y = function_solve(g, *params, **kw)
    gps = [None] * len(params)
    if any(i is not None for i in r.ids[1:]):
        _, back = vjp(lambda *ps: _apply(kw["f"], r.y, ps, trans), *params)
        gps = [-c for c in back(y)]
    return [y] + list(gps)


defrule(function_solve, _fs_pf, _fs_pb)


# -- expm_multiply ----------------------------------------------------------------
@primitive
def expm_multiply(data, b, *, row, col, n):
    """``expm(A) @ b`` for the ``(n, n)`` matrix of ``data`` at ``(row, col)``."""
    b = np.asarray(b)
    if b.shape[:1] != (n,) or b.ndim > 2:
        raise ValueError(f"expm_multiply: operand of shape {b.shape} for a matrix of "
                         f"order {n}")
    dt = np.result_type(np.asarray(data).dtype, b.dtype)
    if n == 0 or b.size == 0:
        return np.zeros(b.shape, dt)
    a = _sp.csr_array((data, (row, col)), shape=(n, n))
    # (at a fixed np.random state: SciPy's norm estimates draw from it)
    return np.asarray(fixed_global_rng(_spl.expm_multiply)(a, b), dt)


def _block_product(data, upper, b, row, col, n, urow, ucol):
    """Top half of ``expm([[A, U], [0, A]]) @ [0; b]``: ``L(A, U) b``."""
    big = np.concatenate([data, upper, data])
    brow = np.concatenate([row, urow, row + n])
    bcol = np.concatenate([col, ucol + n, col + n])
    rhs = np.concatenate([np.zeros_like(b), b], axis=0)
    out = expm_multiply(big, rhs, row=brow, col=bcol, n=2 * n)
    return out[:n]


def _expm_pf(r, xds):
    data, b = r.xs
    dd, bd = xds
    row, col, n = r.kw["row"], r.kw["col"], r.kw["n"]
    out = expm_multiply(data, bd, **r.kw) if r.ids[1] is not None else None
    if r.ids[0] is not None:
        lin = _block_product(data, dd, b, row, col, n, row, col)
        out = lin if out is None else out + lin
    return out


def _expm_pb(r, g):
    data, b = r.xs
    row, col, n = r.kw["row"], r.kw["col"], r.kw["n"]
    gb = expm_multiply(data, g, row=col, col=row, n=n) if r.ids[1] is not None else None
    gdata = None
    if r.ids[0] is not None:
        g2 = g if np.ndim(g) == 2 else g[:, None]
        b2 = b if np.ndim(b) == 2 else b[:, None]
        outer = (g2 @ np.swapaxes(b2, 0, 1)).reshape(-1)      # g b^T, row-major
        ii, jj = np.divmod(np.arange(n * n), n)
        eye = np.eye(n, dtype=real_dtype(np.result_type(plain(data).dtype, plain(g).dtype)))
        full = _block_product(data, outer, eye, col, row, n, ii, jj)   # L(A^T, g b^T)
        gdata = full[row, col]
    return [gdata, gb]


defrule(expm_multiply, _expm_pf, _expm_pb)

_family_loaded()
