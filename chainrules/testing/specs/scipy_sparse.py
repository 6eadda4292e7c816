"""Specs for rules/scipy_sparse.py and rules/scipy_sparse_linalg.py.

Sparse matrices are drawn as values at random coordinates (duplicates and
empty rows and no values at all included; empty operands are tested in
tests/rules/test_scipy_sparse.py); each product in both
layouts of its dense operand (1-D and 2-D), every argument at once and each
alone. Solves use diagonally dominant matrices (symmetric ones, built from
half their values by ``call``, for cg and minres) with tight tolerances, so
that finite differences of the solution check the derivative of the exact
solve.
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    from chainrules.rules import scipy_sparse as _sp
    from chainrules.rules import scipy_sparse_linalg as _spl
except ImportError:  # pragma: no cover - SciPy is an optional extra
    _sp = _spl = None


def _arr(draw, dtype, shape, domain):
    return draw(crs.arrays(dtype, shape, domain))


def _pattern(draw, m, n, max_nnz=7):
    nnz = 0 if m == 0 or n == 0 else draw(st.integers(0, max_nnz))
    row = np.array(draw(st.lists(st.integers(0, max(m - 1, 0)), min_size=nnz,
                                 max_size=nnz)), np.intp)
    col = np.array(draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=nnz,
                                 max_size=nnz)), np.intp)
    return row, col


def _dims(draw):
    return draw(st.integers(1, 4)), draw(st.integers(1, 4))


def _dense_shape(draw, size, left):
    if draw(st.booleans()):
        return (size,)
    k = draw(st.integers(1, 3))
    return (k, size) if left else (size, k)


def _spmm_args(draw, dtype):
    m, n = _dims(draw)
    row, col = _pattern(draw, m, n)
    data = _arr(draw, dtype, (row.size,), (-2.0, 2.0))
    x = _arr(draw, dtype, _dense_shape(draw, n, False), (-2.0, 2.0))
    return (data, x), {"row": row, "col": col, "m": m, "n": n}


def _rspmm_args(draw, dtype):
    (data, _), kw = _spmm_args(draw, dtype)
    x = _arr(draw, dtype, _dense_shape(draw, kw["m"], True), (-2.0, 2.0))
    return (x, data), kw


def _sddmm_args(draw, dtype):
    m, n = _dims(draw)
    row, col = _pattern(draw, m, n)
    k = () if draw(st.booleans()) else (draw(st.integers(1, 3)),)
    g = _arr(draw, dtype, (m,) + k, (-2.0, 2.0))
    x = _arr(draw, dtype, (n,) + k, (-2.0, 2.0))
    return (g, x), {"row": row, "col": col, "m": m, "n": n}


def _square(draw, dtype, symmetric=False, scale=1.0):
    """A diagonally dominant ``n x n`` matrix: values and coordinates (the
    diagonal first, then off-diagonal entries, mirrored when symmetric)."""
    n = draw(st.integers(1, 4))
    row, col = _pattern(draw, n, n, 5)
    keep = row != col
    row, col = row[keep], col[keep]
    if symmetric:
        pairs = sorted({(min(i, j), max(i, j)) for i, j in zip(row, col)})
        row = np.array([p[0] for p in pairs], np.intp)
        col = np.array([p[1] for p in pairs], np.intp)
    diag = _arr(draw, dtype, (n,), (2.5, 3.5)) * scale
    off = _arr(draw, dtype, (row.size,), (-0.6, 0.6)) * scale
    i = np.arange(n, dtype=np.intp)
    return n, diag, off, i, row, col


def _rhs(draw, dtype, n, two_d=True):
    shape = _dense_shape(draw, n, False) if two_d else (n,)
    return _arr(draw, dtype, shape, (-2.0, 2.0))


def _lu_args(draw, dtype):
    n, diag, off, i, row, col = _square(draw, dtype)
    data = np.concatenate([diag, off])
    kw = {"row": np.concatenate([i, row]), "col": np.concatenate([i, col]), "n": n,
          "trans": draw(st.sampled_from(["N", "T"]))}
    return (data, _rhs(draw, dtype, n)), kw


def _opts(method, dtype):
    """Tolerances near the working precision (SciPy's solvers keep float32)."""
    rtol = 1e-13 if np.finfo(dtype).eps < 1e-10 else 1e-6
    if method == "minres":
        return (("rtol", rtol), ("maxiter", 200))
    return (("rtol", rtol), ("atol", 0.0), ("maxiter", 200))


def _iter_args(draw, dtype, method):
    n, diag, off, i, row, col = _square(draw, dtype, symmetric=method in ("cg", "minres"))
    opts = _opts(method, dtype)
    kw = {"row": np.concatenate([i, row, col]), "col": np.concatenate([i, col, row]),
          "n": n, "method": method, "opts": opts}
    if method not in ("cg", "minres"):
        off2 = _arr(draw, dtype, (row.size,), (-0.6, 0.6))
        kw["trans"] = draw(st.sampled_from(["N", "T"]))
        return (np.concatenate([diag, off, off2]), _rhs(draw, dtype, n, False)), kw
    return (np.concatenate([diag, off]), _rhs(draw, dtype, n, False)), kw


def _symmetric_solve(data, b, *, row, col, n, method, opts):
    # the values of the upper triangle stand for both halves
    k = (row.size - n) // 2
    full = np.concatenate([data, data[n:n + k]])
    return _spl.iterative_solve(full, b, row=row, col=col, n=n, method=method, opts=opts)


def _operator_args(draw, dtype, method):
    n = draw(st.integers(1, 4))
    a = _arr(draw, dtype, (n, n), (-0.5, 0.5)) + 3.0 * np.eye(n, dtype=dtype)
    if method == "cg":
        a = (a + a.T) / 2
    if draw(st.booleans()):
        # SciPy's operator: the pullback of gmres solves with its transpose
        import scipy.sparse.linalg as spl

        a = spl.aslinearoperator(a)
    return (_rhs(draw, dtype, n, False),), {"op": a, "method": method, "opts": _opts(method, dtype)}


def _function_args(draw, dtype, method):
    """A LinearOperator's matvec closing over a traced diagonal shift ``p``."""
    n = draw(st.integers(1, 4))
    a = _arr(draw, dtype, (n, n), (-0.5, 0.5)) + 3.0 * np.eye(n, dtype=dtype)
    if method in ("cg", "minres"):
        a = (a + a.T) / 2
    p = _arr(draw, dtype, (n,), (0.5, 1.5))

    def shifted(v, p):
        return a @ v + p * v

    opts = _opts(method, dtype)
    kw = {"f": shifted, "trans": draw(st.booleans()), "method": method, "opts": opts, "n": n}
    return (_rhs(draw, dtype, n, False), p), kw


def _expm_args(draw, dtype):
    n, diag, off, i, row, col = _square(draw, dtype, scale=0.3)
    data = np.concatenate([diag - 0.9, off])
    kw = {"row": np.concatenate([i, row]), "col": np.concatenate([i, col]), "n": n}
    return (data, _rhs(draw, dtype, n)), kw


if _sp is not None:
    _ALL = ("float64", "float32", "complex128")
    for _op, _args, _name in ((_sp.spmm, _spmm_args, "scipy.sparse.spmm"),
                              (_sp.rspmm, _rspmm_args, "scipy.sparse.rspmm"),
                              (_sp.sddmm, _sddmm_args, "scipy.sparse.sddmm")):
        SPECS += [RuleSpec(_op, _args, _ALL, name=_name),
                  RuleSpec(_op, _args, ("float64",), wrt=(0,), name=f"{_name}-wrt-0"),
                  RuleSpec(_op, _args, ("float64",), wrt=(1,), name=f"{_name}-wrt-1")]
    SPECS += [
        RuleSpec(_spl.lu_solve, _lu_args, _ALL, name="scipy.sparse.linalg.lu_solve"),
        RuleSpec(_spl.lu_solve, _lu_args, ("float64",), wrt=(0,),
                 name="scipy.sparse.linalg.lu_solve-wrt-data"),
        RuleSpec(_spl.lu_solve, _lu_args, ("float64",), wrt=(1,),
                 name="scipy.sparse.linalg.lu_solve-wrt-b"),
        RuleSpec(_spl.expm_multiply, _expm_args, ("float64", "complex128"),
                 name="scipy.sparse.linalg.expm_multiply"),
        RuleSpec(_spl.expm_multiply, _expm_args, ("float64",), wrt=(0,),
                 name="scipy.sparse.linalg.expm_multiply-wrt-data"),
        RuleSpec(_spl.expm_multiply, _expm_args, ("float64",), wrt=(1,),
                 name="scipy.sparse.linalg.expm_multiply-wrt-b"),
    ]
    # the solvers stop at rtol = 1e-13 (1e-6 in float32): tolerances above that
    _TOL = {"rtol": 1e-6, "atol": 1e-8}
    _TOL32 = {"rtol": 1e-3, "atol": 1e-4}
    for _method in ("cg", "minres", "gmres", "bicgstab"):
        _sym = _method in ("cg", "minres")

        def _a(draw, dtype, _m=_method):
            return _iter_args(draw, dtype, _m)

        def _o(draw, dtype, _m=_method):
            return _operator_args(draw, dtype, _m)

        def _fa(draw, dtype, _m=_method):
            return _function_args(draw, dtype, _m)

        _call = _symmetric_solve if _sym else None
        _dt = ("float64",) if _sym else ("float64", "complex128")
        _name = f"scipy.sparse.linalg.{_method}"
        SPECS += [
            RuleSpec(_spl.iterative_solve, _a, _dt, call=_call, name=_name, **_TOL),
            RuleSpec(_spl.iterative_solve, _a, ("float32",), call=_call, name=_name, **_TOL32),
            RuleSpec(_spl.iterative_solve, _a, ("float64",), call=_call, wrt=(0,),
                     name=f"{_name}-wrt-data", **_TOL),
            RuleSpec(_spl.iterative_solve, _a, ("float64",), call=_call, wrt=(1,),
                     name=f"{_name}-wrt-b", **_TOL),
            RuleSpec(_spl.function_solve, _fa, _dt, name=f"{_name}-matvec", **_TOL),
            RuleSpec(_spl.function_solve, _fa, ("float32",), name=f"{_name}-matvec", **_TOL32),
            RuleSpec(_spl.function_solve, _fa, ("float64",), wrt=(1,),
                     name=f"{_name}-matvec-wrt-closure", **_TOL),
        ]
        if _method in ("cg", "gmres"):
            SPECS += [
                RuleSpec(_spl.operator_solve, _o, ("float64",), name=f"{_name}-operator",
                         **_TOL),
                RuleSpec(_spl.operator_solve, _o, ("float32",), name=f"{_name}-operator",
                         **_TOL32),
            ]
