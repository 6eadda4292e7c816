"""Incomplete gamma and beta functions of ``scipy.special`` and their
inverses (registered only with SciPy).

With ``p(x) = x^(a-1) e^-x / Gamma(a)`` the density of Gamma(a):

* ``gammainc(a, x) = P(a, x)``: ``dP/dx = p(x)``; ``dP/da`` has no closed
  form and is summed from the series ``P = sum_n T_n``,
  ``T_n = x^(a+n) e^-x / Gamma(a+n+1)``, term by term:
  ``dP/da = sum_n T_n (log x - psi(a+n+1))`` and
  ``d2P/da2 = sum_n T_n ((log x - psi(a+n+1))^2 - psi'(a+n+1))``
  (every term positive weight; the sum runs past the largest term by twelve
  standard deviations, so the truncation error is below the rounding error);
* ``gammaincc = Q = 1 - P``: the negated derivatives;
* ``gammaincinv(a, y)`` / ``gammainccinv(a, y)``: ``x`` with ``P(a, x) = y``;
  ``dx/dy = 1 / p(x)`` (``-1 / p(x)`` for Q), ``d2x/dy2 = -p'(x)/p(x) (dx/dy)^2``;
* ``betainc(a, b, x) = I_x(a, b)``: ``dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b)``;
  ``betaincc = 1 - I``; ``betaincinv`` / ``betainccinv`` as for gamma.

Derivatives with respect to ``a`` and ``b`` of the beta functions and ``a``
of the inverses raise ``MissingRuleError`` (no closed form); hold them
constant.
"""

import numpy as np

from ._util import array_value, in_dtype_of, no_derivative, on_demand_family

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()


def gamma_density(a, x):
    """``x^(a-1) e^-x / Gamma(a)``, with its limits at ``x = 0``."""
    return np.exp(sc.xlogy(a - 1, x) - x - sc.gammaln(a))


def gamma_dlog(a, x):
    """``d log p / dx = (a - 1) / x - 1``."""
    return (a - 1) / x - 1


def _gammainc_da(a, x, order):
    """``dP/da`` (order 1) or ``d2P/da2`` (order 2) by the series above.

    Elements far in the right tail (``x > a + 40 sqrt(a + 1) + 50``: ``Q``
    below 1e-300) and at ``x <= 0`` have derivative 0. The number of terms
    is decided from the plain values, so that the sum itself can be traced
    (derivatives of any order)."""
    av, xv = np.broadcast_arrays(array_value(a), array_value(x))
    live = (xv > 0) & (av > 0) & (xv <= av + 40 * np.sqrt(av + 1) + 50)
    if not np.any(live):
        return np.zeros(np.broadcast_shapes(np.shape(a), np.shape(x)),
                        np.result_type(av, xv, 1.0))
    span = xv[live] - av[live] + 12 * np.sqrt(xv[live]) + 40
    n_terms = int(np.ceil(max(np.max(span), 40.0)))
    xs = np.where(live, x, 1.0)
    a_s = np.where(live, a, 1.0)
    log_x = np.log(xs)
    log_t = a_s * log_x - xs - sc.gammaln(a_s + 1)
    psi = sc.digamma(a_s + 1)
    tri = sc.zeta(2.0, a_s + 1) if order == 2 else None
    total = 0.0
    for n in range(n_terms):
        if n:
            k = a_s + n
            log_t = log_t + log_x - np.log(k)
            psi = psi + 1 / k
            if order == 2:
                tri = tri - 1 / (k * k)
        u = log_x - psi
        term = np.exp(log_t) * (u if order == 1 else u * u - tri)
        total = total + term
    return np.where(live, total, 0.0)


def _register():
    from chainrules.derived import scalar_rule

    # -- incomplete gamma ---------------------------------------------------------
    def p_x(a, x, z):
        return in_dtype_of(gamma_density(a, x), z)

    def p_xx(a, x, z):
        return in_dtype_of(gamma_density(a, x) * gamma_dlog(a, x), z)

    def p_ax(a, x, z):
        return in_dtype_of(gamma_density(a, x) * (np.log(x) - sc.digamma(a)), z)

    scalar_rule(sc.gammainc, lambda a, x, z: in_dtype_of(_gammainc_da(a, x, 1), z), p_x,
                second=(lambda a, x, z: in_dtype_of(_gammainc_da(a, x, 2), z), p_ax, p_xx), saves="xyz")
    scalar_rule(sc.gammaincc, lambda a, x, z: -in_dtype_of(_gammainc_da(a, x, 1), z),
                lambda a, x, z: -p_x(a, x, z),
                second=(lambda a, x, z: -in_dtype_of(_gammainc_da(a, x, 2), z),
                        lambda a, x, z: -p_ax(a, x, z), lambda a, x, z: -p_xx(a, x, z)),
                saves="xyz")

    noa = no_derivative("scipy.special inverse incomplete gamma", "the shape a")

    def inv_d(sign):
        def d(a, y, x):
            return in_dtype_of(sign / gamma_density(a, x), x)

        def dd(a, y, x):
            dx = 1 / gamma_density(a, x)
            return in_dtype_of(-gamma_dlog(a, x) * dx * dx, x)
        return d, dd

    for f, sign in ((sc.gammaincinv, 1), (sc.gammainccinv, -1)):
        d, dd = inv_d(sign)
        scalar_rule(f, noa, d, second=(noa, 0, dd), saves="xz")

    # -- incomplete beta -----------------------------------------------------------
    def beta_density(a, b, x):
        return np.exp(sc.xlogy(a - 1, x) + sc.xlog1py(b - 1, -x) - sc.betaln(a, b))

    def beta_dlog(a, b, x):
        return (a - 1) / x - (b - 1) / (1 - x)

    def beta_rule(f, sign, name):
        na = no_derivative(f"scipy.special.{name}", "the shape a")
        nb = no_derivative(f"scipy.special.{name}", "the shape b")
        scalar_rule(f, na, nb, lambda a, b, x, z: in_dtype_of(sign * beta_density(a, b, x), z),
                    second=(na, 0, 0, nb, 0,
                            lambda a, b, x, z: in_dtype_of(sign * beta_density(a, b, x)
                                                     * beta_dlog(a, b, x), z)))

    def beta_inv_rule(f, sign, name):
        na = no_derivative(f"scipy.special.{name}", "the shape a")
        nb = no_derivative(f"scipy.special.{name}", "the shape b")

        def d(a, b, y, x):
            return in_dtype_of(sign / beta_density(a, b, x), x)

        def dd(a, b, y, x):
            dx = 1 / beta_density(a, b, x)
            return in_dtype_of(-beta_dlog(a, b, x) * dx * dx, x)
        scalar_rule(f, na, nb, d, second=(na, 0, 0, nb, 0, dd))

    beta_rule(sc.betainc, 1, "betainc")
    beta_inv_rule(sc.betaincinv, 1, "betaincinv")
    if hasattr(sc, "betaincc"):
        beta_rule(sc.betaincc, -1, "betaincc")
        beta_inv_rule(sc.betainccinv, -1, "betainccinv")


if sc is not None:
    _register()

_family_loaded()
