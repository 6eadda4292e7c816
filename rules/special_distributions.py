"""``scipy.special`` distribution functions and their inverses, orthogonal
polynomials and the remaining special functions of the long tail
(registered only when SciPy is installed). One ``scalar_rule`` each, in
every continuous argument with a closed-form derivative (inverses by the
inverse-function theorem); the others raise ``MissingRuleError`` naming the
argument.

Distribution functions, by their densities ``rho`` (``L = d log rho / dx``):

* a CDF ``F`` has ``F' = rho`` and ``F'' = rho L`` (a survival function the
  negated ones); binomial, negative binomial and Poisson in ``p`` and ``m``
  through the incomplete beta and gamma functions they are made of
  (``bdtrc(k, n, p) = I_p(k+1, n-k)``, ``nbdtr(k, n, p) = I_p(n, k+1)``,
  ``pdtr(k, m) = Q(k+1, m)``, counts rounded down as SciPy does);
* an inverse ``x(y)`` of ``F(x) = y`` (``F' = s rho`` with ``s = +-1``):
  ``dx/dy = s / rho(x)`` and ``d2x/dy2 = -L(x) / rho(x)^2``;
* ``gdtr(a, b, x) = P(b, a x)`` also in the rate ``a``; its inverses
  ``gdtrix = t / a`` and ``gdtria = t / x`` with ``t = gammaincinv(b, p)``
  in the rate or point as well as in ``p``;
* the noncentral t and F functions in Kummer's ``M = hyp1f1`` (DLMF 13.2.2),
  in the point and the noncentrality: ``nctdtr(v, nc, t) = E[Phi(t S - nc)]``
  with ``S = sqrt(V/v)``, ``V ~ chi2(v)``, so every derivative is a moment
  ``J_k = E[S^k phi(t S - nc)]`` (``d/dt = J_1``, ``d/dnc = -J_0``), each
  two Kummer terms (``nct_moment``); ``ncfdtr`` is a Poisson(nc/2) mixture
  of ``I_w(n1/2 + j, n2/2)``, ``w = n1 x / (n2 + n1 x)``: its density is
  ``exp(-nc/2) rho_F(x) M(a+b, a, nc w/2)`` and its derivative in ``nc``
  ``-exp(-nc/2) w^a (1-w)^b / (2 a B(a, b)) M(a+b, a+1, nc w/2)``
  (``a = n1/2``, ``b = n2/2``, ``rho_F`` the central F density), with
  ``dM/dz = (a/b) M(a+1, b+1, z)`` for the second derivatives;
* ``kolmogorov(y) = 2 sum (-1)^(k-1) exp(-2 k^2 y^2)`` for ``y > 1`` and
  ``1 - sqrt(2 pi)/y sum exp(-(2k-1)^2 pi^2 / (8 y^2))`` below, each
  differentiated term by term (ten terms: the next are below 1e-80);
  ``smirnov(n, d) = sum_{j <= n(1-d)} C(n, j) d (d + j/n)^(j-1) (1 - d - j/n)^(n-j)``
  (Birnbaum and Tingey) term by term;
* ``ndtri_exp(y)``: ``x`` with ``log_ndtr(x) = y``: ``dx/dy = 1/g'`` with
  ``g' = exp(-x^2/2 - y) / sqrt(2 pi)``, ``d2x/dy2 = (x + g') / g'^2``.

Orthogonal polynomials in ``x``, by the derivatives of their hypergeometric
forms (valid for non-integer degrees too), each again a polynomial of the
family with shifted parameters (no removable singularity at ``x = +-1``):
``d/dx C_n^(a) = 2a C_{n-1}^(a+1)`` (DLMF 18.9.19), ``P_n = C_n^(1/2)``,
``T_n' = n U_{n-1}``, ``U_n = C_n^(1)``,
``d/dx P_n^(a,b) = (n+a+b+1)/2 P_{n-1}^(a+1,b+1)`` (18.9.15),
``d/dx L_n^(a) = -L_{n-1}^(a+1)`` (18.9.23), ``H_n' = 2n H_{n-1}``,
``He_n' = n He_{n-1}`` and for SciPy's shifted Jacobi
``G_n^(p,q) = P_n^(p-q,q-1)(2x-1) / binom(2n+p-1, n)``:
``G_n' = n G_{n-1}^(p+2,q+1)``. Negative integer degrees follow SciPy's
reflections (``P_{-n-1} = P_n``, ``T_{-n} = T_n``, ``U_{-n-2} = -U_n``);
a polynomial of negative integer degree in a derivative is 0. The degree
and the parameters (``alpha``, ``beta``, ``p``, ``q``) raise
``MissingRuleError``.
"""

import numpy as np

from chainrules.arrays import computes_eagerly

from ._util import array_value, in_dtype_of, no_derivative, on_demand_family
from .special_incomplete import gamma_density, gamma_dlog

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

# Python floats, so that float32 stays float32 (NumPy 2 promotion)
_SQRT_2PI = float(np.sqrt(2 * np.pi))
_SQRT_2 = float(np.sqrt(2.0))
_LOG_PI = float(np.log(np.pi))
_LOG_2PI = float(np.log(2 * np.pi))
_PI2_8 = float(np.pi ** 2 / 8)
_KS_TERMS = 10

#: functions (or arguments) of this family left without a rule, and why
NO_RULE = {
    "bdtr, bdtrc, bdtri, nbdtr, nbdtrc, nbdtri, pdtr, pdtrc, pdtri (k, n)":
        "integer counts (SciPy rounds them down): no derivative",
    "chdtr, chdtrc, chdtri (v)": "no closed form in the degrees of freedom (the derivative "
                                 "of gammainc in its shape is a series)",
    "fdtr, fdtrc, fdtri, ncfdtr (dfn, dfd)": "no closed form in the degrees of freedom",
    "stdtr, stdtrit, nctdtr (df)": "no closed form in the degrees of freedom",
    "gdtr, gdtrc, gdtrix, gdtria (b)": "no closed form in the shape",
    "smirnov, smirnovi (n)": "integer sample size: no derivative",
    "eval_* (n)": "integer degree: no closed form in the degree",
    "eval_jacobi, eval_sh_jacobi, eval_gegenbauer, eval_genlaguerre (parameters)":
        "no closed form in alpha, beta, p, q",
    "gdtrib, chdtriv, bdtrik, bdtrin, nbdtrik, nbdtrin, pdtrik, stdtridf, fdtridfd":
        "inverses in a shape, count or degrees of freedom: the forward function has no "
        "closed-form derivative in that argument",
}


def _no(name, what):
    return no_derivative(f"scipy.special.{name}", what)


# -- densities: (rho, L) with L = d log rho / dx ------------------------------
def _beta_density(a, b, x):
    return np.exp(sc.xlogy(a - 1, x) + sc.xlog1py(b - 1, -x) - sc.betaln(a, b))


def _beta_dlog(a, b, x):
    return (a - 1) / x - (b - 1) / (1 - x)


def _binom_density(k, n, p):
    """d bdtrc / dp: the Beta(k+1, n-k) density (counts rounded down)."""
    k, n = np.floor(k), np.floor(n)
    return _beta_density(k + 1, n - k, p), _beta_dlog(k + 1, n - k, p)


def _nbinom_density(k, n, p):
    """d nbdtr / dp: the Beta(n, k+1) density."""
    k, n = np.floor(k), np.floor(n)
    return _beta_density(n, k + 1, p), _beta_dlog(n, k + 1, p)


def _poisson_density(k, m):
    """d pdtrc / dm: the Gamma(k+1) density at m."""
    a = np.floor(k) + 1
    return gamma_density(a, m), gamma_dlog(a, m)


def _chi2_density(v, x):
    return gamma_density(v / 2, x / 2) / 2, (v / 2 - 1) / x - 0.5


def _f_density(n1, n2, x):
    """``x^(n1/2-1) (x + n2/n1)^(-n1/2) (1 + n1 x/n2)^(-n2/2) / B(n1/2, n2/2)``
    (no large powers that cancel)."""
    rho = np.exp(sc.xlogy(n1 / 2 - 1, x) - n1 / 2 * np.log(x + n2 / n1)
                 - n2 / 2 * np.log1p(n1 * x / n2) - sc.betaln(n1 / 2, n2 / 2))
    return rho, (n1 / 2 - 1) / x - n1 * (n1 + n2) / (2 * (n2 + n1 * x))


def _t_density(v, t):
    rho = np.exp(sc.gammaln((v + 1) / 2) - sc.gammaln(v / 2) - (np.log(v) + _LOG_PI) / 2
                 - (v + 1) / 2 * np.log1p(t * t / v))
    return rho, -(v + 1) * t / (v + t * t)


def nct_moment(v, nc, t, k):
    """``J_k = E[S^k phi(t S - nc)]`` with ``S = sqrt(V / v)``, ``V ~ chi2(v)``:
    ``int_0^inf s^(m-1) exp(-A s^2 + B s) ds = A^(-m/2) (Gamma(m/2) M(m/2, 1/2, z)
    + B / sqrt(A) Gamma((m+1)/2) M((m+1)/2, 3/2, z)) / 2`` with ``m = v + k``,
    ``A = (v + t^2) / 2``, ``B = nc t``, ``z = B^2 / (4 A)`` (the series of
    ``exp(B s)`` integrated term by term)."""
    s = v + t * t
    z = nc * nc * t * t / (2 * s)
    base = (-v / 2 * np.log1p(t * t / v) - k / 2 * np.log(s / 2) - sc.gammaln(v / 2)
            - nc * nc / 2 - _LOG_2PI / 2)
    m = v + k
    even = np.exp(base + sc.gammaln(m / 2)) * sc.hyp1f1(m / 2, 0.5, z)
    odd = np.exp(base + sc.gammaln((m + 1) / 2)) * sc.hyp1f1((m + 1) / 2, 1.5, z)
    return even + _SQRT_2 * nc * t / np.sqrt(s) * odd


def _ncf_parts(n1, n2, nc, x):
    """The pieces of the noncentral F derivatives: ``a = n1/2``, ``b = n2/2``,
    ``w = n1 x / (n2 + n1 x)``, ``z = nc w / 2`` and ``exp(-nc/2)`` times the
    central F density and times ``w^a (1-w)^b / (a B(a, b))``."""
    a, b = n1 / 2, n2 / 2
    q = n2 + n1 * x
    w = n1 * x / q
    rho0, dlog0 = _f_density(n1, n2, x)
    e = np.exp(-nc / 2)
    tail = np.exp(sc.xlogy(a, w) - b * np.log1p(n1 * x / n2) - np.log(a) - sc.betaln(a, b))
    return a, b, w, nc * w / 2, e * rho0, dlog0, e * tail, nc * n1 * n2 / (2 * q * q)


def ncf_dx(n1, n2, nc, x):
    """``d ncfdtr/dx``: the noncentral F density."""
    a, b, w, z, rho, dlog0, tail, dz = _ncf_parts(n1, n2, nc, x)
    return rho * sc.hyp1f1(a + b, a, z)


def ncf_dnc(n1, n2, nc, x):
    """``d ncfdtr/dnc``, the derivative in the noncentrality."""
    a, b, w, z, rho, dlog0, tail, dz = _ncf_parts(n1, n2, nc, x)
    return -tail * sc.hyp1f1(a + b, a + 1, z) / 2


def ncf_dxx(n1, n2, nc, x):
    """``d2 ncfdtr/dx2``."""
    a, b, w, z, rho, dlog0, tail, dz = _ncf_parts(n1, n2, nc, x)
    return rho * (dlog0 * sc.hyp1f1(a + b, a, z) + (a + b) / a * sc.hyp1f1(a + b + 1, a + 1, z)
                  * dz)


def ncf_dxnc(n1, n2, nc, x):
    """``d2 ncfdtr/dx dnc``."""
    a, b, w, z, rho, dlog0, tail, dz = _ncf_parts(n1, n2, nc, x)
    return rho * ((a + b) / a * w * sc.hyp1f1(a + b + 1, a + 1, z) - sc.hyp1f1(a + b, a, z)) / 2


def ncf_dncnc(n1, n2, nc, x):
    """``d2 ncfdtr/dnc2``."""
    a, b, w, z, rho, dlog0, tail, dz = _ncf_parts(n1, n2, nc, x)
    return -tail * ((a + b) / (a + 1) * w * sc.hyp1f1(a + b + 1, a + 2, z)
                    - sc.hyp1f1(a + b, a + 1, z)) / 4


# -- Kolmogorov and Smirnov ----------------------------------------------------
def _kolmogorov_derivs(y):
    """(K'(y), K''(y)) of ``kolmogorov``, by the series of the docstring."""
    yv = array_value(y)
    big = yv > 1.0
    small = (yv > 0) & ~big
    yb = np.where(big, y, 2.0)
    ys = np.where(small, y, 0.5)
    d1b = d2b = d1s = d2s = 0.0
    log_y = np.log(ys)
    inv2 = 1 / (ys * ys)
    for k in range(1, _KS_TERMS + 1):
        sign = 1.0 if k % 2 else -1.0
        e = np.exp(-2.0 * k * k * yb * yb)
        d1b = d1b + sign * k * k * e
        d2b = d2b + sign * e * (16.0 * k ** 4 * yb * yb - 4.0 * k * k)
        c = (2 * k - 1) ** 2 * _PI2_8
        q = -c * inv2
        # d/dy [y^-1 e^(-c/y^2)] = e (2c y^-4 - y^-2); d2 = e (4c^2 y^-7 - 10c y^-5 + 2 y^-3)
        d1s = d1s + 2 * c * np.exp(q - 4 * log_y) - np.exp(q - 2 * log_y)
        d2s = d2s + (4 * c * c * np.exp(q - 7 * log_y) - 10 * c * np.exp(q - 5 * log_y)
                     + 2 * np.exp(q - 3 * log_y))
    d1 = np.where(big, -8.0 * yb * d1b, np.where(small, -_SQRT_2PI * d1s, 0.0))
    d2 = np.where(big, 2.0 * d2b, np.where(small, -_SQRT_2PI * d2s, 0.0))
    return d1, d2


def _smirnov_derivs(n, d):
    """(S', S'') of ``smirnov(n, d)`` in ``d``: the Birnbaum-Tingey sum
    differentiated term by term. With ``a = d + j/n``, ``b = 1 - d - j/n``,
    ``e = n - j`` and ``T_j = C(n, j) d a^(j-1) b^e``:
    ``T_j' = C (a^(j-1) b^e + (j-1) d a^(j-2) b^e - e d a^(j-1) b^(e-1))`` and
    ``T_j'' = C ((2(j-1) a^(j-2) + (j-1)(j-2) d a^(j-3)) b^e
    - 2e (a^(j-1) + (j-1) d a^(j-2)) b^(e-1) + e(e-1) d a^(j-1) b^(e-2))``.
    ``S'`` jumps at ``d = 1/n`` and ``S''`` at ``d = 2/n`` (where the term of
    ``e = 1``, ``e = 2`` enters the sum); there the values are the left-hand ones."""
    if not all(computes_eagerly(array_value(v)) for v in (n, d)):
        # the number of terms depends on the values: no lazy form
        from chainrules.errors import MissingRuleError

        raise MissingRuleError(
            "scipy.special.smirnov: the derivative in d sums a number of terms that "
            "depends on the values, so it has no lazy form for this array type; "
            "compute the input first (np.asarray / .compute())")
    n = np.floor(n) * 1.0
    nv, dv = np.broadcast_arrays(array_value(n), array_value(d))
    inside = (dv > 0) & (dv < 1) & (nv >= 1)
    ds = np.where(inside, d, 0.5)
    ns = np.where(inside, n, 1.0)
    one = 1 - ds
    d1 = -ns * one ** (ns - 1)                        # j = 0: (1 - d)^n
    d2 = ns * (ns - 1) * one ** np.maximum(ns - 2, 0)
    # the terms j <= n (1 - d): one pass each
    n_max = int(np.max(np.ceil(nv * (1 - dv))[inside])) if np.any(inside) else 0
    log_n1 = sc.gammaln(ns + 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j in range(1, n_max + 1):
            a = ds + j / ns
            b = 1 - a
            e = ns - j
            live = (j <= array_value(ns)) & (array_value(b) >= 0)
            bs = np.where(live, b, 0.5)
            es = np.where(live, e, 1.0)
            log_c = log_n1 - sc.gammaln(j + 1.0) - sc.gammaln(es + 1)
            log_a = np.log(a)

            def p(ka, kb):
                # C a^(j-1+ka) b^(e+kb), 0 where the power of b is negative
                lp = log_c + (j - 1 + ka) * log_a + sc.xlogy(es + kb, bs)
                return np.where(es + kb >= 0, np.exp(np.where(es + kb >= 0, lp, 0.0)), 0.0)

            t1 = p(0, 0) + (j - 1) * ds * p(-1, 0) - es * ds * p(0, -1)
            t2 = ((2 * (j - 1) * p(-1, 0) + (j - 1) * (j - 2) * ds * p(-2, 0))
                  - 2 * es * (p(0, -1) + (j - 1) * ds * p(-1, -1))
                  + es * (es - 1) * ds * p(0, -2))
            d1 = d1 + np.where(live, t1, 0.0)
            d2 = d2 + np.where(live, t2, 0.0)
    return np.where(inside, d1, 0.0), np.where(inside, d2, 0.0)


# -- orthogonal polynomials ----------------------------------------------------
def _poly(f, m, *rest):
    """``f(m, *rest)``, 0 where the degree ``m`` is a negative integer."""
    mv = array_value(m)
    zero = (mv < 0) & (mv == np.floor(mv))
    if not np.any(zero):
        return f(m, *rest)
    return np.where(zero, 0.0, f(np.where(zero, 0, m), *rest))


def _reflect_p(n):
    """Legendre: ``P_n = P_{-n-1}``."""
    return np.where(array_value(n) < -0.5, -1 - n, n)


def _reflect_t(n):
    """Chebyshev T: ``T_n = T_{-n}``."""
    return np.where(array_value(n) < 0, -n, n)


def _reflect_u(n):
    """Chebyshev U: ``U_n = -U_{-n-2}``: the degree and the sign."""
    neg = array_value(n) < -1
    return np.where(neg, -2 - n, n), np.where(neg, -1.0, 1.0)


def _gegen(m, alpha, x):
    return _poly(sc.eval_gegenbauer, m, alpha, x)


def _legendre_d(n, x, order):
    n = _reflect_p(n)
    return _gegen(n - 1, 1.5, x) if order == 1 else 3.0 * _gegen(n - 2, 2.5, x)


def _chebyt_d(n, x, order):
    n = _reflect_t(n)
    return n * _gegen(n - 1, 1.0, x) if order == 1 else 2.0 * n * _gegen(n - 2, 2.0, x)


def _chebyu_d(n, x, order):
    n, sign = _reflect_u(n)
    return (2.0 * sign * _gegen(n - 1, 2.0, x) if order == 1
            else 8.0 * sign * _gegen(n - 2, 3.0, x))


def _register():
    from chainrules.derived import scalar_rule
    from chainrules.derived_nary import NarySpec, nary_maker
    from chainrules.registry import op_name, register

    # -- distribution functions of a count or shape and a point ------------------
    def cdf3(f, density, sign, name, names):
        """``f(k, n, x)`` differentiated in ``x``: ``sign * density``."""
        n0, n1 = _no(name, names[0]), _no(name, names[1])

        def d(k, n, x, z):
            return in_dtype_of(sign * density(k, n, x)[0], z)

        def dd(k, n, x, z):
            rho, dlog = density(k, n, x)
            return in_dtype_of(sign * rho * dlog, z)
        scalar_rule(f, n0, n1, d, second=(n0, 0, 0, n1, 0, dd))

    def inv3(f, density, sign, name, names):
        """``x = f(k, n, y)`` with ``F(k, n, x) = y``, ``F' = sign * density``."""
        n0, n1 = _no(name, names[0]), _no(name, names[1])

        def d(k, n, y, x):
            return in_dtype_of(sign / density(k, n, x)[0], x)

        def dd(k, n, y, x):
            rho, dlog = density(k, n, x)
            return in_dtype_of(-dlog / (rho * rho), x)
        scalar_rule(f, n0, n1, d, second=(n0, 0, 0, n1, 0, dd))

    def cdf2(f, density, sign, name, what):
        n0 = _no(name, what)

        def d(v, x, z):
            return in_dtype_of(sign * density(v, x)[0], z)

        def dd(v, x, z):
            rho, dlog = density(v, x)
            return in_dtype_of(sign * rho * dlog, z)
        scalar_rule(f, n0, d, second=(n0, 0, dd), saves="xyz")

    def inv2(f, density, sign, name, what):
        n0 = _no(name, what)

        def d(v, y, x):
            return in_dtype_of(sign / density(v, x)[0], x)

        def dd(v, y, x):
            rho, dlog = density(v, x)
            return in_dtype_of(-dlog / (rho * rho), x)
        scalar_rule(f, n0, d, second=(n0, 0, dd), saves="xz")

    counts = ("the count k", "the count n")
    cdf3(sc.bdtr, _binom_density, -1, "bdtr", counts)
    cdf3(sc.bdtrc, _binom_density, 1, "bdtrc", counts)
    inv3(sc.bdtri, _binom_density, -1, "bdtri", counts)
    cdf3(sc.nbdtr, _nbinom_density, 1, "nbdtr", counts)
    cdf3(sc.nbdtrc, _nbinom_density, -1, "nbdtrc", counts)
    inv3(sc.nbdtri, _nbinom_density, 1, "nbdtri", counts)
    dfs = ("the degrees of freedom dfn", "the degrees of freedom dfd")
    cdf3(sc.fdtr, _f_density, 1, "fdtr", dfs)
    cdf3(sc.fdtrc, _f_density, -1, "fdtrc", dfs)
    inv3(sc.fdtri, _f_density, 1, "fdtri", dfs)
    cdf2(sc.pdtr, _poisson_density, -1, "pdtr", "the count k")
    cdf2(sc.pdtrc, _poisson_density, 1, "pdtrc", "the count k")
    inv2(sc.pdtri, _poisson_density, -1, "pdtri", "the count k")
    cdf2(sc.chdtr, _chi2_density, 1, "chdtr", "the degrees of freedom v")
    cdf2(sc.chdtrc, _chi2_density, -1, "chdtrc", "the degrees of freedom v")
    inv2(sc.chdtri, _chi2_density, -1, "chdtri", "the degrees of freedom v")  # of chdtrc
    cdf2(sc.stdtr, _t_density, 1, "stdtr", "the degrees of freedom df")
    inv2(sc.stdtrit, _t_density, 1, "stdtrit", "the degrees of freedom df")

    # -- gamma distribution: gdtr(a, b, x) = P(b, a x), a the rate, b the shape ----
    def gamma_rule(f, sign, name):
        nob = _no(name, "the shape b")

        def g(a, b, x):
            return gamma_density(b, a * x)

        def d_a(a, b, x, z):
            return in_dtype_of(sign * x * g(a, b, x), z)

        def d_x(a, b, x, z):
            return in_dtype_of(sign * a * g(a, b, x), z)

        def d_aa(a, b, x, z):
            return in_dtype_of(sign * x * x * g(a, b, x) * gamma_dlog(b, a * x), z)

        def d_ax(a, b, x, z):
            # d/da (a p(a x)) = p + a x p' = p (b - a x)
            return in_dtype_of(sign * g(a, b, x) * (b - a * x), z)

        def d_xx(a, b, x, z):
            return in_dtype_of(sign * a * a * g(a, b, x) * gamma_dlog(b, a * x), z)
        scalar_rule(f, d_a, nob, d_x, second=(d_aa, 0, d_ax, nob, 0, d_xx))

    gamma_rule(sc.gdtr, 1, "gdtr")
    gamma_rule(sc.gdtrc, -1, "gdtrc")

    # gdtrix(a, b, p) = x = t / a with t = gammaincinv(b, p): dt/dp = 1 / p_b(t)
    nob = _no("gdtrix", "the shape b")

    def ix_g(a, b, x):
        return gamma_density(b, a * x)

    scalar_rule(
        sc.gdtrix,
        lambda a, b, p, x: in_dtype_of(-x / a, x), nob,
        lambda a, b, p, x: in_dtype_of(1 / (a * ix_g(a, b, x)), x),
        second=(lambda a, b, p, x: in_dtype_of(2 * x / (a * a), x), 0,
                lambda a, b, p, x: in_dtype_of(-1 / (a * a * ix_g(a, b, x)), x),
                nob, 0,
                lambda a, b, p, x: in_dtype_of(-gamma_dlog(b, a * x) / (a * ix_g(a, b, x) ** 2), x)))
    # gdtria(p, b, x) = a = t / x
    nob = _no("gdtria", "the shape b")
    scalar_rule(
        sc.gdtria,
        lambda p, b, x, a: in_dtype_of(1 / (x * ix_g(a, b, x)), a), nob,
        lambda p, b, x, a: in_dtype_of(-a / x, a),
        second=(lambda p, b, x, a: in_dtype_of(-gamma_dlog(b, a * x) / (x * ix_g(a, b, x) ** 2), a),
                0, lambda p, b, x, a: in_dtype_of(-1 / (x * x * ix_g(a, b, x)), a),
                nob, 0, lambda p, b, x, a: in_dtype_of(2 * a / (x * x), a)))

    # -- noncentral t and F ---------------------------------------------------------
    # nctdtr(v, nc, t) = E[Phi(t S - nc)]: d/dt = J_1, d/dnc = -J_0,
    # d2/dt2 = nc J_2 - t J_3, d2/dnc dt = t J_2 - nc J_1, d2/dnc2 = nc J_0 - t J_1
    nodf = _no("nctdtr", "the degrees of freedom df")

    def nct(fn):
        return lambda v, nc, t, z: in_dtype_of(fn(v, nc, t), z)

    def j(k):
        return lambda v, nc, t: nct_moment(v, nc, t, k)

    scalar_rule(sc.nctdtr, nodf,
                nct(lambda v, nc, t: -j(0)(v, nc, t)), nct(j(1)),
                second=(nodf, 0, 0,
                        nct(lambda v, nc, t: nc * j(0)(v, nc, t) - t * j(1)(v, nc, t)),
                        nct(lambda v, nc, t: t * j(2)(v, nc, t) - nc * j(1)(v, nc, t)),
                        nct(lambda v, nc, t: nc * j(2)(v, nc, t) - t * j(3)(v, nc, t))))
    no1 = _no("ncfdtr", "the degrees of freedom dfn")
    no2 = _no("ncfdtr", "the degrees of freedom dfd")

    def ncf(fn):
        return lambda n1, n2, nc, x, z: in_dtype_of(fn(n1, n2, nc, x), z)

    scalar_rule(sc.ncfdtr, no1, no2, ncf(ncf_dnc), ncf(ncf_dx),
                second=(no1, 0, 0, 0, no2, 0, 0, ncf(ncf_dncnc), ncf(ncf_dxnc),
                        ncf(ncf_dxx)))

    # -- Kolmogorov, Smirnov ------------------------------------------------------------
    scalar_rule(sc.kolmogorov, lambda x, y: _kolmogorov_derivs(x)[0],
                second=lambda x, y: _kolmogorov_derivs(x)[1], saves="x")

    def kolmogi_dd(p, y):
        d1, d2 = _kolmogorov_derivs(y)
        return -d2 / d1 ** 3

    scalar_rule(sc.kolmogi, lambda p, y: 1 / _kolmogorov_derivs(y)[0], second=kolmogi_dd,
                saves="y")
    non = _no("smirnov", "the sample size n")
    scalar_rule(sc.smirnov, non, lambda n, d, z: in_dtype_of(_smirnov_derivs(n, d)[0], z),
                second=(non, 0, lambda n, d, z: in_dtype_of(_smirnov_derivs(n, d)[1], z)),
                saves="xyz")

    def smirnovi_dd(n, p, d):
        d1, d2 = _smirnov_derivs(n, d)
        return in_dtype_of(-d2 / d1 ** 3, d)

    non = _no("smirnovi", "the sample size n")
    scalar_rule(sc.smirnovi, non, lambda n, p, d: in_dtype_of(1 / _smirnov_derivs(n, d)[0], d),
                second=(non, 0, smirnovi_dd), saves="xz")

    # ndtri_exp(y) = x with log_ndtr(x) = y: dx/dy = r = sqrt(2 pi) exp(x^2/2 + y)
    def r_exp(y, x):
        return _SQRT_2PI * np.exp(x * x / 2 + y)

    scalar_rule(sc.ndtri_exp, r_exp,
                second=lambda y, x: r_exp(y, x) * (x * r_exp(y, x) + 1), saves="xy")

    # -- orthogonal polynomials in x ----------------------------------------------------
    def poly2(f, deriv, name, integer_degree=False):
        nod = _no(name, "the degree n")

        def d(n, x, z):
            return in_dtype_of(deriv(n, x, 1), z)

        def dd(n, x, z):
            return in_dtype_of(deriv(n, x, 2), z)
        if integer_degree:
            # SciPy has only the loop of an integer degree (a float degree is
            # refused): the general elementwise rule of derived_nary, which
            # keeps n, x and the output, all three read by the partials
            register(f)(nary_maker(NarySpec(f, op_name(f), (nod, d), (nod, 0, dd))))
        else:
            scalar_rule(f, nod, d, second=(nod, 0, dd), saves="xyz")

    poly2(sc.eval_legendre, _legendre_d, "eval_legendre")
    poly2(sc.eval_chebyt, _chebyt_d, "eval_chebyt")
    poly2(sc.eval_chebyu, _chebyu_d, "eval_chebyu")
    # C_n(x) = 2 T_n(x/2), S_n(x) = U_n(x/2)
    poly2(sc.eval_chebyc, lambda n, x, k: 2.0 ** (1 - k) * _chebyt_d(n, x / 2, k),
          "eval_chebyc")
    poly2(sc.eval_chebys, lambda n, x, k: 0.5 ** k * _chebyu_d(n, x / 2, k), "eval_chebys")
    # shifted to [0, 1]: f(2x - 1)
    poly2(sc.eval_sh_legendre, lambda n, x, k: 2.0 ** k * _legendre_d(n, 2 * x - 1, k),
          "eval_sh_legendre")
    poly2(sc.eval_sh_chebyt, lambda n, x, k: 2.0 ** k * _chebyt_d(n, 2 * x - 1, k),
          "eval_sh_chebyt")
    poly2(sc.eval_sh_chebyu, lambda n, x, k: 2.0 ** k * _chebyu_d(n, 2 * x - 1, k),
          "eval_sh_chebyu")

    def laguerre_d(n, x, k):
        return (-1.0) ** k * _poly(sc.eval_genlaguerre, n - k, float(k), x)

    poly2(sc.eval_laguerre, laguerre_d, "eval_laguerre")

    def hermite_d(n, x, k):
        # H_n' = 2n H_{n-1}, He_n' = n He_{n-1}; 0 for n < k
        c = n * 1.0 if k == 1 else n * (n - 1.0)
        return np.where(array_value(n) >= k, c * sc.eval_hermite(np.maximum(n - k, 0), x),
                        0.0) * 2.0 ** k

    def hermitenorm_d(n, x, k):
        c = n * 1.0 if k == 1 else n * (n - 1.0)
        return np.where(array_value(n) >= k, c * sc.eval_hermitenorm(np.maximum(n - k, 0), x),
                        0.0)

    poly2(sc.eval_hermite, hermite_d, "eval_hermite", integer_degree=True)
    poly2(sc.eval_hermitenorm, hermitenorm_d, "eval_hermitenorm", integer_degree=True)

    def poly3(f, d, dd, name, what):
        nod, noa = _no(name, "the degree n"), _no(name, what)
        scalar_rule(f, nod, noa, lambda n, a, x, z: in_dtype_of(d(n, a, x), z),
                    second=(nod, 0, 0, noa, 0, lambda n, a, x, z: in_dtype_of(dd(n, a, x), z)))

    poly3(sc.eval_gegenbauer, lambda n, a, x: 2 * a * _gegen(n - 1, a + 1, x),
          lambda n, a, x: 4 * a * (a + 1) * _gegen(n - 2, a + 2, x),
          "eval_gegenbauer", "the parameter alpha")
    poly3(sc.eval_genlaguerre, lambda n, a, x: -_poly(sc.eval_genlaguerre, n - 1, a + 1, x),
          lambda n, a, x: _poly(sc.eval_genlaguerre, n - 2, a + 2, x),
          "eval_genlaguerre", "the parameter alpha")

    def poly4(f, d, dd, name, what):
        nod, noa, nob = _no(name, "the degree n"), _no(name, what[0]), _no(name, what[1])
        scalar_rule(f, nod, noa, nob, lambda n, a, b, x, z: in_dtype_of(d(n, a, b, x), z),
                    second=(nod, 0, 0, 0, noa, 0, 0, nob, 0,
                            lambda n, a, b, x, z: in_dtype_of(dd(n, a, b, x), z)))

    poly4(sc.eval_jacobi,
          lambda n, a, b, x: (n + a + b + 1) / 2 * _poly(sc.eval_jacobi, n - 1, a + 1, b + 1, x),
          lambda n, a, b, x: ((n + a + b + 1) * (n + a + b + 2) / 4
                              * _poly(sc.eval_jacobi, n - 2, a + 2, b + 2, x)),
          "eval_jacobi", ("the parameter alpha", "the parameter beta"))
    poly4(sc.eval_sh_jacobi,
          lambda n, p, q, x: n * _poly(sc.eval_sh_jacobi, n - 1, p + 2, q + 1, x),
          lambda n, p, q, x: n * (n - 1) * _poly(sc.eval_sh_jacobi, n - 2, p + 4, q + 2, x),
          "eval_sh_jacobi", ("the parameter p", "the parameter q"))



if sc is not None:
    _register()

_family_loaded()
