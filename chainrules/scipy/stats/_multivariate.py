"""``multivariate_normal`` and ``dirichlet`` of ``chainrules.scipy.stats``.

multivariate_normal (x on the last axis; ``cov`` a matrix, a 1-D diagonal or
a scalar, as in SciPy):

    log pdf(x) = -(rank log(2 pi) + log pdet(cov) + (x - mean)^T cov^+ (x - mean)) / 2

* ``allow_singular=False`` with a full matrix: a Cholesky factor L (cov =
  L L^T), log det = 2 sum log diag L and the Mahalanobis term |L^-1 (x - mean)|^2
  by a triangular solve. SciPy calls a covariance singular when its smallest
  eigenvalue is at most eps = 1e6 * 2.2e-16 * max|eigenvalue| and then raises
  ``np.linalg.LinAlgError`` (``ValueError`` for an eigenvalue below -eps).
  The eigenvalues are computed (on the plain values) only when Cholesky fails
  or its smallest pivot is within 1e4 of that bound (the pivots bound the
  smallest eigenvalue from above), so the check costs nothing otherwise.
* ``allow_singular=True``: the eigenvalues above eps give the
  pseudo-determinant, the pseudo-inverse is applied by a Cholesky solve with
  the null space filled in (see ``_pseudo_terms``), and points off the
  support (``|(x - mean) @ U_null| >= 1e3 eps``) get -inf (pdf 0), as in
  SciPy. No eigenvector is differentiated, so repeated eigenvalues are fine.
* a diagonal or scalar ``cov``: the same maths on the variances directly.

dirichlet (x on the first axis, one entry fewer allowed):

    log pdf(x) = sum_i (alpha_i - 1) log x_i - (sum_i log Gamma(alpha_i)
                 - log Gamma(sum_i alpha_i))

Inputs SciPy rejects (a non-simplex x, alpha <= 0, ...) raise the same
``ValueError``.
"""

import math

import numpy as np

from ._base import arg, plain, refuse_traced, safe

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

__all__ = ["multivariate_normal", "dirichlet"]

_LOG_2PI = math.log(2 * math.pi)
_COND = 1e6 * float(np.finfo(np.float64).eps)   # SciPy's relative eigenvalue cut-off
_PSD_MSG = "The input matrix must be symmetric positive semidefinite."
_SPD_MSG = ("When `allow_singular is False`, the input matrix must be symmetric positive "
            "definite.")


def _float64(v):
    return np.asarray(plain(v), dtype=np.float64)


def _squeeze(out):
    out = np.squeeze(out)
    if type(out) is np.ndarray and out.ndim == 0:
        return out[()]
    return out


def _spectrum_checks(s, allow_singular):
    """SciPy's eigenvalue tests on the plain spectrum ``s``: the mask of the
    eigenvalues kept and the cut-off ``eps``."""
    eps = _COND * float(np.max(np.abs(s))) if s.size else 0.0
    if s.size and np.min(s) < -eps:
        raise ValueError(_PSD_MSG)
    pos = s > eps
    if not pos.all() and not allow_singular:
        raise np.linalg.LinAlgError(_SPD_MSG)
    return pos, eps


class _Params:
    __slots__ = ("dim", "mean", "cov", "var")


def _process(mean, cov):
    """SciPy's ``_process_parameters_psd``: the dimension, the mean vector and
    either ``var`` (the variances, for a scalar or diagonal cov) or ``cov``
    (a matrix)."""
    mean, cov = arg(mean), arg(1.0 if cov is None else cov)
    if mean is None:
        dim = 1 if np.ndim(plain(cov)) < 2 else np.shape(plain(cov))[0]
        ct = getattr(plain(cov), "dtype", np.dtype(np.float64))
        mean = np.zeros(dim, dtype=ct if ct.kind == "f" else np.float64)
    else:
        dim = int(np.size(plain(mean)))
    if dim == 1:
        mean, cov = np.reshape(mean, (1,)), np.reshape(cov, (1, 1))
    if np.ndim(plain(mean)) != 1 or np.shape(plain(mean))[0] != dim:
        raise ValueError(f"Array 'mean' must be a vector of length {dim}.")
    p = _Params()
    p.dim, p.mean, p.cov, p.var = dim, mean, None, None
    cshape = np.shape(plain(cov))
    if len(cshape) == 0:
        p.var = cov * np.ones(dim, dtype=getattr(plain(cov), "dtype", np.float64))
    elif len(cshape) == 1:
        if cshape[0] != dim:
            raise ValueError(f"Dimension mismatch: array 'cov' is of shape "
                             f"{(cshape[0], cshape[0])}, but 'mean' is a vector of length "
                             f"{dim}.")
        p.var = cov
    elif len(cshape) == 2:
        if cshape != (dim, dim):
            if cshape[0] != cshape[1]:
                raise ValueError("Array 'cov' must be square if it is two dimensional, "
                                 f"but cov.shape = {str(cshape)}.")
            raise ValueError(f"Dimension mismatch: array 'cov' is of shape {cshape}, but "
                             f"'mean' is a vector of length {dim}.")
        if dim == 1:
            p.var = np.reshape(cov, (1,))
        else:
            p.cov = cov
    else:
        raise ValueError("Array 'cov' must be at most two-dimensional, but cov.ndim = "
                         f"{len(cshape)}")
    return p


def _quantiles(x, dim):
    x = arg(x)
    nd = np.ndim(plain(x))
    if nd == 0:
        return np.reshape(x, (1,))
    if nd == 1:
        return np.reshape(x, (-1, 1)) if dim == 1 else np.reshape(x, (1, -1))
    return x


def _raise_like_scipy(cov):
    """Cholesky failed: SciPy's error for this matrix (its eigenvalue tests)."""
    _spectrum_checks(np.linalg.eigvalsh(_float64(cov)), False)
    # every eigenvalue above SciPy's cut-off but not positive definite in
    # this precision (float32): the Cholesky error itself
    raise np.linalg.LinAlgError(_SPD_MSG)


def _mahalanobis(L, dev, dim):
    """|L^-1 (x - mean)|^2 over the last axis, by a triangular solve."""
    from chainrules.scipy.linalg import solve_triangular

    batch = np.shape(plain(dev))[:-1]
    z = solve_triangular(L, np.transpose(np.reshape(dev, (-1, dim))), lower=True)
    return np.reshape(np.sum(z ** 2, axis=0), batch)


def _cholesky_terms(cov, dev, dim):
    """log det and Mahalanobis term by Cholesky (allow_singular=False)."""
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        _raise_like_scipy(cov)
    d = np.diagonal(L)
    piv = _float64(d) ** 2
    bound = _COND * float(np.trace(np.abs(_float64(cov))))
    if piv.size and float(np.min(piv)) <= 1e4 * bound:
        _spectrum_checks(np.linalg.eigvalsh(_float64(cov)), False)
    return 2.0 * np.sum(np.log(d)), _mahalanobis(L, dev, dim), dim, None


def _pseudo_terms(cov, dev, dim):
    """Pseudo-determinant, Mahalanobis term and support (allow_singular=True).

    The eigenvalues s above SciPy's cut-off give log pdet = sum log s (a
    function of the eigenvalues alone, so its derivative holds at repeated
    eigenvalues too). With N the projector on the null space (constant, from
    the plain eigenvectors) and c = max s, (cov + c N)^-1 = cov^+ + N / c, and
    N (x - mean) = 0 on the support: the Mahalanobis term is a Cholesky solve
    with cov + c N, a matrix function whose derivative needs no eigenvectors."""
    sv, uv = np.linalg.eigh(_float64(cov))
    pos, eps = _spectrum_checks(sv, True)
    s = np.linalg.eigvalsh(cov)
    logpdet = np.sum(safe(np.log(safe(s, pos, 1.0)), pos, 0.0))
    if pos.all():
        return logpdet, _mahalanobis(np.linalg.cholesky(cov), dev, dim), dim, None
    null = uv[:, ~pos]
    shift = (float(np.max(sv)) * (null @ null.T)).astype(plain(cov).dtype)
    maha = _mahalanobis(np.linalg.cholesky(cov + shift), dev, dim)
    resid = np.linalg.norm(_float64(dev) @ null, axis=-1)
    return logpdet, maha, int(pos.sum()), ~(resid < 1e3 * eps)


def _diag_terms(var, dev, allow_singular):
    """The same for a scalar or diagonal covariance (its eigenvalues are the
    variances)."""
    pos, eps = _spectrum_checks(_float64(var), allow_singular)
    if pos.all():
        return np.sum(np.log(var)), np.sum(dev ** 2 / var, axis=-1), int(pos.size), None
    v = safe(var, pos, 1.0)
    maha = np.sum(safe(dev ** 2 / v, pos, 0.0), axis=-1)
    resid = np.linalg.norm(_float64(dev)[..., ~pos], axis=-1)
    return (np.sum(safe(np.log(v), pos, 0.0)), maha, int(pos.sum()),
            ~(resid < 1e3 * eps))


class multivariate_normal_gen:
    """A twin of ``scipy.stats.multivariate_normal`` (logpdf, pdf, entropy,
    differentiable in x, mean and cov)."""

    name = "multivariate_normal"
    methods = ("logpdf", "pdf", "entropy")

    def _terms(self, x, mean, cov, allow_singular):
        p = _process(mean, cov)
        x = _quantiles(x, p.dim)
        dev = x - p.mean
        if p.var is not None:
            return _diag_terms(p.var, dev, allow_singular)
        if allow_singular:
            return _pseudo_terms(p.cov, dev, p.dim)
        return _cholesky_terms(p.cov, dev, p.dim)

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """log N(x; mean, cov) over the last axis of x."""
        logdet, maha, rank, oob = self._terms(x, mean, cov, allow_singular)
        out = -0.5 * (rank * _LOG_2PI + logdet + maha)
        if oob is not None:
            out = np.where(oob, -np.inf, out)
        return _squeeze(out)

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        """N(x; mean, cov) = exp(logpdf)."""
        logdet, maha, rank, oob = self._terms(x, mean, cov, allow_singular)
        out = np.exp(-0.5 * (rank * _LOG_2PI + logdet + maha))
        if oob is not None:
            out = np.where(oob, 0.0, out)
        return _squeeze(out)

    def entropy(self, mean=None, cov=1):
        """(rank (log(2 pi) + 1) + log pdet(cov)) / 2 (singular covariances
        allowed, as in SciPy)."""
        p = _process(mean, cov)
        s = p.var if p.var is not None else np.linalg.eigvalsh(p.cov)
        pos, _ = _spectrum_checks(_float64(s), True)
        logpdet = np.sum(safe(np.log(safe(s, pos, 1.0)), pos, 0.0))
        return _squeeze(0.5 * (int(pos.sum()) * (_LOG_2PI + 1) + logpdet))

    def rvs(self, mean=None, cov=1, size=1, random_state=None):
        """``scipy.stats.multivariate_normal.rvs`` on plain parameters."""
        refuse_traced("chainrules.scipy.stats.multivariate_normal.rvs", [mean, cov],
                      "mean + eps @ L.T with L = np.linalg.cholesky(cov) and eps standard "
                      "normal of shape (size, dim) drawn with plain values")
        import scipy.stats

        return scipy.stats.multivariate_normal.rvs(mean, cov, size=size,
                                                   random_state=random_state)

    def __call__(self, mean=None, cov=1, allow_singular=False, seed=None):
        """The frozen distribution: ``multivariate_normal(mean, cov).logpdf(x)``."""
        _process(mean, cov)
        return _FrozenMVN(self, mean, cov, allow_singular, seed)

    def __repr__(self):
        return "<chainrules.scipy.stats.multivariate_normal>"


class _FrozenMVN:
    def __init__(self, dist, mean, cov, allow_singular, seed):
        self.dist, self.mean, self.cov = dist, mean, cov
        self.allow_singular, self.seed = allow_singular, seed

    def logpdf(self, x):
        return self.dist.logpdf(x, self.mean, self.cov, self.allow_singular)

    def pdf(self, x):
        return self.dist.pdf(x, self.mean, self.cov, self.allow_singular)

    def entropy(self):
        return self.dist.entropy(self.mean, self.cov)

    def rvs(self, size=1, random_state=None):
        return self.dist.rvs(self.mean, self.cov, size=size,
                             random_state=self.seed if random_state is None else random_state)


multivariate_normal = multivariate_normal_gen()


# -- Dirichlet ----------------------------------------------------------------------------
def _check_alpha(alpha):
    alpha = arg(alpha)
    av = plain(alpha)
    if np.min(av) <= 0:
        raise ValueError("All parameters must be greater than 0")
    if np.ndim(av) != 1:
        raise ValueError("Parameter vector 'a' must be one dimensional, "
                         f"but a.shape = {np.shape(av)}.")
    return alpha


def _check_x(alpha, x):
    """SciPy's checks; the last component 1 - sum(x) is appended when x has
    one entry fewer than alpha."""
    x = arg(x)
    K = np.shape(plain(alpha))[0]
    n0 = np.shape(plain(x))[0]
    if n0 + 1 != K and n0 != K:
        raise ValueError("Vector 'x' must have either the same number of entries as, or "
                         "one entry fewer than, parameter vector 'a', but alpha.shape = "
                         f"{np.shape(plain(alpha))} and x.shape = {np.shape(plain(x))}.")
    if n0 != K:
        xk = 1 - np.sum(x, 0)
        if np.ndim(plain(xk)) > 1:
            raise ValueError("The input must be one dimensional or a two dimensional "
                             "matrix containing the entries.")
        x = np.concatenate([x, np.reshape(xk, (1,) + np.shape(plain(xk)))], axis=0)
    xv = plain(x)
    if np.min(xv) < 0:
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if np.max(xv) > 1:
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    alt1 = np.reshape(plain(alpha) < 1, (K,) + (1,) * (np.ndim(xv) - 1))
    if np.sum((xv == 0) & alt1):
        raise ValueError("Each entry in 'x' must be greater than zero if its alpha is less "
                         "than one.")
    if (np.abs(np.sum(xv, 0) - 1.0) > 10e-10).any():
        raise ValueError("The input vector 'x' must lie within the normal simplex. but "
                         f"np.sum(x, 0) = {np.sum(xv, 0)}.")
    return x


def _lnB(alpha):
    return np.sum(sc.gammaln(alpha)) - sc.gammaln(np.sum(alpha))


class dirichlet_gen:
    """A twin of ``scipy.stats.dirichlet`` (logpdf, pdf, entropy,
    differentiable in x and alpha)."""

    name = "dirichlet"
    methods = ("logpdf", "pdf", "entropy")

    def _logpdf(self, x, alpha):
        alpha = _check_alpha(alpha)
        x = _check_x(alpha, x)
        K = np.shape(plain(alpha))[0]
        a1 = np.reshape(alpha - 1, (K,) + (1,) * (np.ndim(plain(x)) - 1))
        return -_lnB(alpha) + np.sum(sc.xlogy(a1, x), 0)

    def logpdf(self, x, alpha):
        """log Dir(x; alpha), x on the first axis."""
        return _squeeze(self._logpdf(x, alpha))

    def pdf(self, x, alpha):
        """Dir(x; alpha) = exp(logpdf)."""
        return _squeeze(np.exp(self._logpdf(x, alpha)))

    def entropy(self, alpha):
        """log B(alpha) + (alpha0 - K) psi(alpha0) - sum_i (alpha_i - 1) psi(alpha_i)."""
        alpha = _check_alpha(alpha)
        alpha0 = np.sum(alpha)
        K = np.shape(plain(alpha))[0]
        out = (_lnB(alpha) + (alpha0 - K) * sc.digamma(alpha0)
               - np.sum((alpha - 1) * sc.digamma(alpha)))
        return _squeeze(out)

    def rvs(self, alpha, size=1, random_state=None):
        """``scipy.stats.dirichlet.rvs`` on plain parameters."""
        refuse_traced("chainrules.scipy.stats.dirichlet.rvs", [alpha],
                      "Dirichlet draws have no location-scale form; use a score-function "
                      "estimator, or a logistic-normal (softmax of a Gaussian "
                      "mean + sigma * eps) surrogate")
        import scipy.stats

        return scipy.stats.dirichlet.rvs(alpha, size=size, random_state=random_state)

    def __call__(self, alpha, seed=None):
        """The frozen distribution: ``dirichlet(alpha).logpdf(x)``."""
        _check_alpha(alpha)
        return _FrozenDirichlet(self, alpha, seed)

    def __repr__(self):
        return "<chainrules.scipy.stats.dirichlet>"


class _FrozenDirichlet:
    def __init__(self, dist, alpha, seed):
        self.dist, self.alpha, self.seed = dist, alpha, seed

    def logpdf(self, x):
        return self.dist.logpdf(x, self.alpha)

    def pdf(self, x):
        return self.dist.pdf(x, self.alpha)

    def entropy(self):
        return self.dist.entropy(self.alpha)

    def rvs(self, size=1, random_state=None):
        return self.dist.rvs(self.alpha, size=size,
                             random_state=self.seed if random_state is None else random_state)


dirichlet = dirichlet_gen()
