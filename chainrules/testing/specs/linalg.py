"""Specs for rules/linalg.py (np.linalg) and rules/scipy_linalg.py.

Outputs that are not unique (eigenvectors, singular vectors, QR's extra
columns) are tested through gauge-invariant functions given as ``call=``.
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

F = ("float64", "float32")
C = ("float64", "float32", "complex128")
D = ("float64",)
DC = ("float64", "complex128")


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _mH(x):
    return np.conjugate(_mT(x)) if x.dtype.kind == "c" else _mT(x)


def _batch(draw):
    return draw(st.sampled_from([(), (2,)]))


def _n(draw, lo=1, hi=4):
    return draw(st.integers(lo, hi))


def wellcond(batch=True, lo=1):
    def sample(draw, dtype):
        b = _batch(draw) if batch else ()
        return (draw(crs.well_conditioned_matrices(dtype, _n(draw, lo), b)),), {}
    return sample


def spd(batch=True, lo=1, hi=4):
    def sample(draw, dtype):
        b = _batch(draw) if batch else ()
        return (draw(crs.spd_matrices(dtype, _n(draw, lo, hi), b)),), {}
    return sample


def separated_spectrum(draw, dtype, n, batch=()):
    """Hermitian matrices with eigenvalues at least 0.5 apart."""
    q, _ = np.linalg.qr(draw(crs.well_conditioned_matrices(dtype, n, batch)))
    w = np.arange(n) * 0.7 + 0.5 + draw(crs.arrays("float64", batch + (n,), "unit")) * 0.1
    return ((q * w[..., None, :]) @ _mH(q)).astype(dtype)


def hermitian_spaced(batch=True):
    def sample(draw, dtype):
        b = _batch(draw) if batch else ()
        return (separated_spectrum(draw, dtype, _n(draw), b),), {}
    return sample


def rect(min_side=1, max_side=4, batch=True, spaced=True):
    """Full-rank rectangular matrices with separated singular values."""
    def sample(draw, dtype):
        b = _batch(draw) if batch else ()
        m, n = _n(draw, min_side, max_side), _n(draw, min_side, max_side)
        k = min(m, n)
        u, _ = np.linalg.qr(draw(crs.well_conditioned_matrices(dtype, m, b)))
        v, _ = np.linalg.qr(draw(crs.well_conditioned_matrices(dtype, n, b)))
        s = np.arange(k, 0, -1) * 0.6 + 0.4 if spaced else np.ones(k)
        a = (u[..., :, :k] * s) @ _mH(v[..., :, :k])
        if np.dtype(dtype).kind == "c":
            # a generic phase: LAPACK's complex QR is discontinuous where a
            # pivot is exactly real (it then skips the reflection)
            a = a * (0.8 + 0.6j)
        return (a.astype(dtype),), {}
    return sample


def _eigh_call(a):
    w, v = np.linalg.eigh(a)
    return w, (v * w[..., None, :]) @ _mH(v), v * np.conjugate(v)


def _eigh_upper_call(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return w, (v * w[..., None, :]) @ _mH(v)


def _svd_call(full):
    def svd_call(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        u1, vh1 = u[..., :, :k], vh[..., :k, :]
        out = (s, (u1 * s[..., None, :]) @ vh1, u1 * np.conjugate(u1),
               vh1 * np.conjugate(vh1))
        if full:  # projectors on the complements (gauge-free)
            u2, vh2 = u[..., :, k:], vh[..., k:, :]
            out = out + (u2 @ _mH(u2), _mH(vh2) @ vh2)
        return out
    return svd_call


def _qr_call(mode):
    def qr_call(a):
        if mode == "r":
            return np.linalg.qr(a, mode="r")
        q, r = np.linalg.qr(a, mode=mode)
        k = min(a.shape[-2:])
        if mode == "complete":  # the complement's basis is not unique
            q2 = q[..., :, k:]
            return q[..., :, :k], r, q2 @ _mH(q2)
        return q, r
    return qr_call


def _eig_call(a):
    w, v = np.linalg.eig(a)
    # LAPACK's order can change under the finite-difference steps, and
    # eigenvectors are unique up to scale: compare invariant functions
    return np.sort(w), (v * w[..., None, :] ** 2) @ np.linalg.inv(v)


def _eigvals_call(a):
    return np.sort(np.linalg.eigvals(a))


def real_spectrum(draw, dtype, n, batch=()):
    """Non-symmetric matrices with real eigenvalues at least 0.5 apart."""
    s = draw(crs.well_conditioned_matrices(dtype, n, batch))
    w = np.arange(n) * 0.7 + 0.5
    return ((s * w) @ np.linalg.inv(s)).astype(dtype)


def solve_args(draw, dtype):
    b = _batch(draw)
    n = _n(draw)
    a = draw(crs.well_conditioned_matrices(dtype, n, b))
    kind = draw(st.sampled_from(["vector", "matrix", "broadcast", "stacked-b"]))
    if kind == "vector":
        rhs = draw(crs.arrays(dtype, (n,)))
    elif kind == "matrix":
        rhs = draw(crs.arrays(dtype, b + (n, _n(draw))))
    elif kind == "broadcast":
        rhs = draw(crs.arrays(dtype, (n, 2)))
    else:  # a stack of right-hand sides for one matrix (or a stack of one)
        a = a if not b else a[:1]
        rhs = draw(crs.arrays(dtype, (2, n, _n(draw))))
    return (a, rhs), {}


def norm_args(draw, dtype):
    """x alone: the 2-norm of all its entries."""
    x = draw(crs.arrays(dtype, draw(crs.shapes(1, 3)), "nonzero"))
    return (x,), {"keepdims": draw(st.booleans())}


def vector_norm_args(draw, dtype):
    shape = draw(crs.shapes(1, 3))
    x = draw(crs.arrays(dtype, shape, "distinct" if dtype != np.complex128 else "nonzero"))
    ords = [None, 1, 2, np.inf, -np.inf, 3.0, 1.5]
    kw = {"ord": draw(st.sampled_from(ords)), "keepdims": draw(st.booleans())}
    if len(shape) != 1 or draw(st.booleans()):  # a 1-d x takes no axis too
        kw["axis"] = draw(st.integers(-len(shape), len(shape) - 1))
    return (x,), kw


def matrix_norm_args(draw, dtype):
    b = _batch(draw)
    a = rect(2, 4, batch=False)(draw, dtype)[0][0]
    if b:
        a = np.stack([a, a[::-1] * 1.3])
    a = a + np.asarray(draw(crs.arrays(dtype, a.shape, "unit")) * 0.05, dtype)
    ords = ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]
    ax = (-2, -1) if draw(st.booleans()) else (-1, -2)
    ord_ = draw(st.sampled_from(ords))
    if ord_ in (1, -1, np.inf, -np.inf):
        a = _apart_abs_sums(a, ax[0] if ord_ in (1, -1) else ax[1])
    kw = {"ord": ord_, "axis": ax, "keepdims": draw(st.booleans())}
    if not b and ax == (-2, -1) and draw(st.booleans()):
        del kw["axis"]  # a 2-d x: the matrix norm over both axes
    return (a.astype(dtype),), kw


def _apart_abs_sums(a, axis):
    """``a`` with every entry at least 0.1 in modulus and its sums of moduli
    along ``axis`` at least 30% apart: the max/min-of-sums matrix norms have
    kinks where an entry is zero and where two sums tie."""
    mag = np.abs(a)
    a = a * (np.maximum(mag, 0.1) / np.where(mag > 0, mag, 1.0))
    a = np.where(mag > 0, a, 0.1)
    sums = np.sum(np.abs(a), axis=axis, keepdims=True)
    other = -1 if axis in (-2, a.ndim - 2) else -2
    rank = np.argsort(np.argsort(sums, axis=other), axis=other)
    target = np.mean(sums, axis=other, keepdims=True) * (1.0 + 0.3 * rank)
    return a * (target / sums)


def lstsq_args(draw, dtype):
    a = rect(1, 4, batch=False)(draw, dtype)[0][0]
    m = a.shape[0]
    if a.shape[0] < a.shape[1]:
        a = _mT(a).copy()
        m = a.shape[0]
    rhs = draw(crs.arrays(dtype, (m,) if draw(st.booleans()) else (m, 2)))
    return (a, rhs), {"rcond": None}


def _lstsq_call(a, b, rcond=None):
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    return x, res, s


def matrix_power_args(draw, dtype):
    b = _batch(draw)
    a = draw(crs.well_conditioned_matrices(dtype, _n(draw), b)) * 0.5
    return (a.astype(dtype), draw(st.sampled_from([-2, -1, 0, 1, 2, 3]))), {}


def multi_dot_args(draw, dtype):
    k = draw(st.integers(2, 4))
    dims = [_n(draw) for _ in range(k + 1)]
    arrays = [draw(crs.arrays(dtype, (dims[i], dims[i + 1]))) for i in range(k)]
    if draw(st.booleans()):
        arrays[0] = arrays[0][0]
    if draw(st.booleans()):
        arrays[-1] = arrays[-1][:, 0]
    return tuple(arrays), {}


def _multi_dot_call(*arrays):
    return np.linalg.multi_dot(list(arrays))


def tensorinv_args(draw, dtype):
    a = draw(crs.well_conditioned_matrices(dtype, 6))
    if draw(st.booleans()):
        return (a.reshape(2, 3, 6),), {"ind": 2}
    return (a.reshape(6, 2, 3),), {"ind": 1}


def tensorsolve_args(draw, dtype):
    a = draw(crs.well_conditioned_matrices(dtype, 6)).reshape(2, 3, 6)
    b = draw(crs.arrays(dtype, (2, 3)))
    if draw(st.booleans()):  # the unknown's axis first, moved back by axes=
        return (np.ascontiguousarray(np.moveaxis(a, -1, 0)), b), {"axes": (0,)}
    return (a, b), {}


def pinv_args(draw, dtype):
    a = rect(1, 4, batch=True)(draw, dtype)[0][0]
    return (a,), {}


def pinv_herm_args(draw, dtype):
    return (separated_spectrum(draw, dtype, _n(draw, 2)),), {"hermitian": True}


def svd_herm_args(draw, dtype):
    return (separated_spectrum(draw, dtype, _n(draw, 2)),), {"hermitian": True}


def _svd_kw_call(a, **kw):
    u, s, vh = np.linalg.svd(a, **kw)
    return s, (u * s[..., None, :]) @ vh


def _rank_args(draw, dtype):
    return (draw(crs.well_conditioned_matrices(dtype, _n(draw))),), {}


def _chol_upper(a):
    return np.linalg.cholesky(a, upper=True)


SPECS = [
    RuleSpec(np.linalg.inv, wellcond(), C),
    # det of a 1x1 matrix is linear: its Hessian is rounding noise
    RuleSpec(np.linalg.det, wellcond(lo=2), C),
    RuleSpec(np.linalg.slogdet, wellcond(), C),
    RuleSpec(np.linalg.solve, solve_args, C),
    RuleSpec(np.linalg.cholesky, spd(), C),
    RuleSpec(np.linalg.cholesky, spd(), DC, call=_chol_upper, name="np.linalg.cholesky-upper"),
    RuleSpec(np.linalg.eigh, hermitian_spaced(), C, call=_eigh_call),
    RuleSpec(np.linalg.eigh, hermitian_spaced(), D, call=_eigh_upper_call,
             name="np.linalg.eigh-upper"),
    RuleSpec(np.linalg.eigvalsh, hermitian_spaced(), F),
    # finite differences of complex spectra need a looser tolerance
    RuleSpec(np.linalg.eigvalsh, hermitian_spaced(), ("complex128",), rtol=3e-5,
             name="np.linalg.eigvalsh-complex"),
    RuleSpec(np.linalg.svd, rect(), C, call=_svd_call(False), name="np.linalg.svd-reduced"),
    RuleSpec(np.linalg.svd, rect(), DC, call=_svd_call(True), name="np.linalg.svd-full"),
    RuleSpec(np.linalg.svd, lambda d, t: (rect()(d, t)[0], {"compute_uv": False}), C,
             name="np.linalg.svd-s"),
    RuleSpec(np.linalg.svd, svd_herm_args, D, call=_svd_kw_call, name="np.linalg.svd-herm"),
    RuleSpec(np.linalg.svdvals, rect(), C),
    RuleSpec(np.linalg.qr, rect(), C, call=_qr_call("reduced")),
    RuleSpec(np.linalg.qr, rect(), DC, call=_qr_call("complete"), name="np.linalg.qr-complete"),
    RuleSpec(np.linalg.qr, rect(), DC, call=_qr_call("r"), name="np.linalg.qr-r"),
    RuleSpec(np.linalg.eig, lambda d, t: ((real_spectrum(d, t, _n(d), _batch(d)),), {}), DC,
             call=_eig_call),
    RuleSpec(np.linalg.eigvals, lambda d, t: ((real_spectrum(d, t, _n(d), _batch(d)),), {}),
             DC, call=_eigvals_call),
    RuleSpec(np.linalg.pinv, pinv_args, C),
    RuleSpec(np.linalg.pinv, pinv_herm_args, D, name="np.linalg.pinv-herm"),
    RuleSpec(np.linalg.lstsq, lstsq_args, DC, call=_lstsq_call),
    RuleSpec(np.linalg.norm, norm_args, C),
    RuleSpec(np.linalg.norm, vector_norm_args, C, name="np.linalg.norm-vector"),
    RuleSpec(np.linalg.norm, matrix_norm_args, C, name="np.linalg.norm-matrix"),
    RuleSpec(np.linalg.matrix_power, matrix_power_args, C),
    RuleSpec(np.linalg.multi_dot, multi_dot_args, C, call=_multi_dot_call),
    # the other arrays held constant
    RuleSpec(np.linalg.multi_dot, multi_dot_args, D, call=_multi_dot_call, wrt=(1,),
             name="np.linalg.multi_dot-wrt1"),
    RuleSpec(np.linalg.tensorinv, tensorinv_args, DC),
    RuleSpec(np.linalg.tensorsolve, tensorsolve_args, DC),
    RuleSpec(np.linalg.matrix_rank, _rank_args, D, modes=frozenset({"nondiff"})),
]


# -- scipy.linalg ----------------------------------------------------------------
try:
    from chainrules.rules import scipy_linalg as _sl
except ImportError:  # pragma: no cover
    _sl = None

if _sl is not None and hasattr(_sl, "expm"):
    from chainrules.rules._linalg_util import scipy_takes_batches

    def _sbatch(draw):  # SciPy's functions take stacks of matrices from 1.16 on
        return _batch(draw) if scipy_takes_batches() else ()

    def _swellcond(draw, dtype):
        b = _sbatch(draw)
        return (draw(crs.well_conditioned_matrices(dtype, _n(draw), b)),), {}

    def _small(draw, dtype):
        b = _sbatch(draw)
        a = draw(crs.arrays(dtype, b + (_n(draw, 1, 3),) * 2)) * 0.4
        return (a.astype(dtype),), {}

    def _rhs(draw, dtype, n, bt):
        """A vector, a matrix (stacked as the factor is) or, where SciPy takes
        stacks, a stack of matrices for one factor."""
        kinds = ["vector", "matrix"] + (["stack"] if scipy_takes_batches() and not bt else [])
        kind = draw(st.sampled_from(kinds))
        shape = {"vector": (n,), "matrix": bt + (n, 2), "stack": (2, n, 1)}[kind]
        return draw(crs.arrays(dtype, shape))

    def _tri_args(draw, dtype):
        n, bt = _n(draw), _sbatch(draw)
        a = draw(crs.well_conditioned_matrices(dtype, n, bt))
        b = _rhs(draw, dtype, n, bt)
        kw = {"lower": draw(st.booleans()),
              "trans": draw(st.sampled_from([0, 1, 2, "N", "T", "C"])),
              "unit_diagonal": draw(st.booleans())}
        return (a, b), kw

    def _cho_factor_args(draw, dtype):
        a = draw(crs.spd_matrices(dtype, _n(draw), _sbatch(draw)))
        a = a + np.triu(draw(crs.arrays(dtype, a.shape)), 1) * 0.1  # asymmetric copy
        return (a.astype(dtype),), {"lower": draw(st.booleans())}

    def _cho_solve_args(draw, dtype):
        n, bt = _n(draw), _sbatch(draw)
        a = draw(crs.spd_matrices(dtype, n, bt))
        c, lower = _sl.cho_factor(a, lower=draw(st.booleans()))
        b = _rhs(draw, dtype, n, bt)
        return (c, b), {"lower": lower}

    def _cho_solve_call(c, b, lower):
        return _sl.cho_solve((c, lower), b)

    def _lu_factor_args(draw, dtype):  # 1x1 is linear: Hessian = rounding noise
        return (draw(crs.well_conditioned_matrices(dtype, _n(draw, 2), _sbatch(draw))),), {}

    def _lu_factor_call(a):
        return _sl.lu_factor(a)[0]

    def _lu_solve_args(draw, dtype):
        n, bt = _n(draw), _sbatch(draw)
        a = draw(crs.arrays(dtype, bt + (n, n))) * 0.3 + np.eye(n)[::-1] * 2
        lu, piv = _sl.lu_factor(a.astype(dtype))
        b = _rhs(draw, dtype, n, bt)
        return (lu, b), {"piv": piv, "trans": draw(st.sampled_from([0, 1, 2]))}

    def _lu_solve_call(lu, b, piv, trans):
        return _sl.lu_solve((lu, piv), b, trans=trans)

    SPECS += [
        RuleSpec(_sl.expm, _small, DC, name="scipy.linalg.expm"),
        RuleSpec(_sl.sqrtm, _swellcond, DC, name="scipy.linalg.sqrtm"),
        RuleSpec(_sl.logm, _swellcond, DC, name="scipy.linalg.logm"),
        RuleSpec(_sl.solve_triangular, _tri_args, C, name="scipy.linalg.solve_triangular"),
        # one argument differentiated, the other held constant
        RuleSpec(_sl.solve_triangular, _tri_args, DC, wrt=(1,),
                 name="scipy.linalg.solve_triangular-b"),
        RuleSpec(_sl.solve_triangular, _tri_args, D, wrt=(0,),
                 name="scipy.linalg.solve_triangular-a"),
        RuleSpec(_sl.cho_factor, _cho_factor_args, DC, call=lambda a, lower: _sl.cho_factor(
            a, lower=lower)[0], name="scipy.linalg.cho_factor"),
        RuleSpec(_sl.cho_solve, _cho_solve_args, C, call=_cho_solve_call,
                 name="scipy.linalg.cho_solve"),
        RuleSpec(_sl.lu_factor, _lu_factor_args, DC, call=_lu_factor_call,
                 name="scipy.linalg.lu_factor"),
        RuleSpec(_sl.lu_solve, _lu_solve_args, C, call=_lu_solve_call,
                 name="scipy.linalg.lu_solve"),
    ]
