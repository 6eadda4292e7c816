"""``scipy.linalg.schur`` (registered only when SciPy is installed).

``A = Z T Z^H`` with ``Z`` unitary and ``T`` upper triangular. With
``Omega = Z^H Z'`` (skew-Hermitian) and ``C = Z^H A' Z``,
``C = T' + Omega T - T Omega``; ``T'`` is upper triangular, so the strictly
lower part of ``Omega`` solves, entry by entry (columns left to right, rows
bottom up),

    Omega_ij (T_jj - T_ii) + sum_{k<j} Omega_ik T_kj - sum_{k>i} T_ik Omega_kj = C_ij,

its upper part is ``-Omega^H`` and its diagonal is 0 (the phases of Schur
vectors are a gauge: none is turned). Then ``Z' = Z Omega`` and
``T' = triu(C - Omega T + T Omega)``. This needs distinct eigenvalues
(``DomainError`` otherwise) and a triangular ``T``: the real Schur form of a
matrix with complex eigenvalues (2x2 blocks) raises ``MissingRuleError``; use
``output='complex'``. The pullback is the transpose of this pushforward.
"""

import numpy as np

from chainrules.errors import DomainError, MissingRuleError

from ._linalg_util import defrule, mH, plain

from ._util import on_demand_family

from chainrules.opaque import OpaqueNamespace

from ._scipy_blas_pool import LimitedNamespace

try:
    import scipy.linalg as _scipy_linalg

    # each SciPy call recorded as one step of a staged plan (cr.jit), made
    # with SciPy's BLAS pool at one thread (rules/_scipy_blas_pool.py)
    sl = OpaqueNamespace(LimitedNamespace(_scipy_linalg))
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

_family_loaded = on_demand_family()

__all__ = ["schur"]

_NAME = "scipy.linalg.schur"


def _check(t):
    tp = plain(t)
    n = tp.shape[-1]
    if n > 1 and np.any(np.tril(np.abs(tp), -1) != 0):
        raise MissingRuleError(f"{_NAME}: the real Schur form has 2x2 blocks (complex "
                               "eigenvalues); differentiate output='complex' instead")
    w = np.diagonal(tp, axis1=-2, axis2=-1)
    gap = np.abs(w[..., :, None] - w[..., None, :])
    scale = np.max(np.abs(w), axis=-1)[..., None, None] + 1 if n else 1
    if n > 1 and np.any(np.where(np.eye(n, dtype=bool), np.inf, gap)
                        <= 100 * n * np.finfo(np.abs(tp).dtype).eps * scale):
        raise DomainError(f"{_NAME}: the input has a repeated eigenvalue, where the Schur "
                          "vectors are not differentiable")


def _schur_pf(r, xds):
    t, z = r.y[0], r.y[1]
    _check(t)
    n = t.shape[-1]
    c = mH(z) @ xds[0] @ z
    om = {}
    for j in range(n):
        for i in range(n - 1, j, -1):
            acc = c[..., i, j]
            for k in range(j):
                acc = acc - om[i, k] * t[..., k, j]
            for k in range(i + 1, n):
                acc = acc + t[..., i, k] * om[k, j]
            om[i, j] = acc / (t[..., j, j] - t[..., i, i])
    zero = c[..., 0, 0] * 0
    rows = []
    for i in range(n):
        row = []
        for j in range(n):
            if i > j:
                row.append(om[i, j])
            elif i < j:
                v = om[j, i]
                row.append(-(np.conjugate(v) if v.dtype.kind == "c" else v))
            else:
                row.append(zero)
        rows.append(np.stack(row, axis=-1))
    omega = np.stack(rows, axis=-2)
    td = c - omega @ t + t @ omega
    td = td * np.triu(np.ones((n, n), dtype=np.abs(plain(td)).dtype))
    out = (td, z @ omega)
    return out + (None,) * (len(r.y) - 2)


if sl is not None:
    from chainrules.primitives import primitive

    schur = primitive(sl.schur)
    defrule(schur, _schur_pf, multi=True)

_family_loaded()
