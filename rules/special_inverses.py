"""``scipy.special``'s noncentral chi-square functions, the inverses of the
noncentral t, F and chi-square distribution functions in their point,
probability and noncentrality, the normal distribution's inverses in its
mean and standard deviation, and Tukey's lambda distribution (registered
only when SciPy is installed). Every formula was checked against finite
differences; the degrees of freedom raise ``MissingRuleError`` (no closed
form).

* noncentral chi-square with ``k`` degrees of freedom and noncentrality
  ``l`` (DLMF 10.25.2 and the Poisson mixture of central chi-squares):
  density ``f_k(x) = exp(-(x + l)/2) (x/l)^(nu/2) I_nu(sqrt(l x)) / 2``,
  ``nu = k/2 - 1`` (``ive`` keeps it finite; ``l = 0`` the central density);
  ``chndtr' = f_k`` in ``x`` and ``-f_{k+2}`` in ``l`` (the Poisson weights'
  derivative shifts ``k`` by 2, and ``P(k/2+1, x/2) - P(k/2, x/2) = -2 f_{k+2}``
  for central densities); ``d f_k/dl = (f_{k+2} - f_k)/2`` and
  ``d f_k/dx = f_k (nu/x - 1/2 + sqrt(l/x) I_{nu+1}(s)/(2 I_nu(s)))``,
  ``s = sqrt(l x)`` (10.29.2).
* inverses, by the implicit-function theorem: ``u(p, w)`` with
  ``F(u, w) = p`` has ``u_p = 1/F_u``, ``u_w = -F_w/F_u``, ``u_pp = -F_uu u_p^3``,
  ``u_pw = -(F_uu u_w + F_uw) u_p^2`` and
  ``u_ww = -(F_ww + 2 F_uw u_w + F_uu u_w^2) u_p``, with the partials of
  ``chndtr`` above (``chndtrix`` in ``p`` and ``l``, ``chndtrinc`` in ``x`` and ``p``)
  and those of ``nctdtr`` and ``ncfdtr`` in ``rules/special_distributions.py``
  (``nctdtrit``, ``nctdtrinc``, ``ncfdtri``). ``ncfdtrinc`` has none: SciPy's
  solver stops about 1e-6 short of ``ncfdtr(dfn, dfd, nc, f) = p`` and its value
  jumps where the solver's path changes, so that no derivative matches it.
* ``nrdtrimn(p, std, x) = x - std z`` and ``nrdtrisd(mn, p, x) = (x - mn)/z``
  with ``z = ndtri(p)``, ``dz/dp = 1/phi(z)``, ``d2z/dp2 = z/phi(z)^2``
  (``phi`` the normal density).
* Tukey's lambda distribution ``p = tklmbda(x, l)`` inverts the quantile
  ``Q(p, l) = (p^l - (1-p)^l)/l = A exprel(l A) - B exprel(l B)``,
  ``A = log p``, ``B = log(1-p)``: ``Q_p = p^(l-1) + (1-p)^(l-1)``,
  ``Q_pp = (l-1) (p^(l-2) - (1-p)^(l-2))``, ``Q_l = A^2 exprel'(l A) - B^2 exprel'(l B)``,
  ``Q_ll`` the same with ``A^3``, ``B^3`` and ``exprel''``, ``Q_pl = A p^(l-1) +
  B (1-p)^(l-1)`` (no removable singularity at ``l = 0``, the logistic
  distribution), and ``p(x, l)`` by the implicit-function theorem in ``x`` and
  ``l``. SciPy evaluates ``|l| < 1e-4`` or so as ``l = 0``: its value is flat
  there in ``l``, the derivative is the distribution's.
"""

import math

import numpy as np

from ._util import array_value, in_dtype_of, no_derivative, on_demand_family
from .special_distributions import (ncf_dnc, ncf_dncnc, ncf_dx, ncf_dxnc, ncf_dxx,
                                    nct_moment)
from .special_elementary import exprel_d, exprel_dd
from .special_incomplete import gamma_density

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

_SQRT_2PI = math.sqrt(2 * math.pi)


def _nod(name, what):
    return no_derivative(f"scipy.special.{name}", what)


def implicit(fu, fw, fuu, fuw, fww):
    """``(u_p, u_w, u_pp, u_pw, u_ww)`` of ``u(p, w)`` with ``F(u, w) = p``,
    from ``F``'s partials."""
    up = 1 / fu
    uw = -fw * up
    return (up, uw, -fuu * up * up * up, -(fuu * uw + fuw) * up * up,
            -(fww + 2 * fuw * uw + fuu * uw * uw) * up)


# -- noncentral chi-square ---------------------------------------------------------------
def ncx2_density(x, k, nc):
    """``(f_k(x), d f_k/dx)`` of the noncentral chi-square: the central one for
    ``nc < 1e-10`` (an error of order ``nc``), where ``(x/nc)^(nu/2)`` and
    ``I_nu(sqrt(nc x))`` would overflow and underflow."""
    nu = k / 2 - 1
    pos = array_value(nc) > 1e-10
    ncs = np.where(pos, nc, 1.0)
    s = np.sqrt(ncs * x)
    i0, i1 = sc.ive(nu, s), sc.ive(nu + 1, s)
    bessel = 0.5 * np.exp(-(x + ncs) / 2 + s + nu / 2 * (np.log(x) - np.log(ncs))) * i0
    f = np.where(pos, bessel, gamma_density(k / 2, x / 2) / 2)
    ratio = np.where(pos, np.sqrt(ncs / x) * i1 / (2 * i0), 0.0)
    return f, f * (nu / x - 0.5 + ratio)


def _chndtr_partials(x, k, nc):
    """``(F_x, F_nc, F_xx, F_xnc, F_ncnc)`` of ``chndtr(x, k, nc)``."""
    f, fx = ncx2_density(x, k, nc)
    f2 = ncx2_density(x, k + 2, nc)[0]
    f4 = ncx2_density(x, k + 4, nc)[0]
    return f, -f2, fx, (f2 - f) / 2, (f2 - f4) / 2


def _nct_partials(v, nc, t):
    """``(F_t, F_nc, F_tt, F_tnc, F_ncnc)`` of ``nctdtr(v, nc, t)``."""
    j0, j1, j2, j3 = (nct_moment(v, nc, t, k) for k in range(4))
    return j1, -j0, nc * j2 - t * j3, t * j2 - nc * j1, nc * j0 - t * j1


def _ncf_partials(n1, n2, nc, x):
    """``(F_x, F_nc, F_xx, F_xnc, F_ncnc)`` of ``ncfdtr(n1, n2, nc, x)``."""
    return (ncf_dx(n1, n2, nc, x), ncf_dnc(n1, n2, nc, x), ncf_dxx(n1, n2, nc, x),
            ncf_dxnc(n1, n2, nc, x), ncf_dncnc(n1, n2, nc, x))


def _swap(parts):
    """The partials of ``F(u, w)`` as those of ``F(w, u)``."""
    fu, fw, fuu, fuw, fww = parts
    return fw, fu, fww, fuw, fuu


def _inverse(parts, k):
    """Item ``k`` of ``implicit(*parts)``, as a partial of an n-ary rule."""
    def partial(*args):
        return in_dtype_of(implicit(*parts(*args))[k], args[-1])
    return partial


def _register_chndtr():
    from chainrules.derived import scalar_rule

    nodf = _nod("chndtr", "the degrees of freedom df")

    def part(k):
        return lambda x, df, nc, z: in_dtype_of(_chndtr_partials(x, df, nc)[k], z)

    scalar_rule(sc.chndtr, part(0), nodf, part(1),
                second=(part(2), 0, part(3), nodf, 0, part(4)))

    # chndtrix(p, df, nc) = x: u = x, w = nc
    nodf = _nod("chndtrix", "the degrees of freedom df")

    def ix(p, df, nc, x):
        return _chndtr_partials(x, df, nc)

    scalar_rule(sc.chndtrix, _inverse(ix, 0), nodf, _inverse(ix, 1),
                second=(_inverse(ix, 2), 0, _inverse(ix, 3), nodf, 0, _inverse(ix, 4)))

    # chndtrinc(x, df, p) = nc: u = nc, w = x
    nodf = _nod("chndtrinc", "the degrees of freedom df")

    def inc(x, df, p, nc):
        return _swap(_chndtr_partials(x, df, nc))

    scalar_rule(sc.chndtrinc, _inverse(inc, 1), nodf, _inverse(inc, 0),
                second=(_inverse(inc, 4), 0, _inverse(inc, 3), nodf, 0, _inverse(inc, 2)))


def _register_noncentral_inverses():
    from chainrules.derived import scalar_rule

    # nctdtrit(df, nc, p) = t: u = t, w = nc
    nodf = _nod("nctdtrit", "the degrees of freedom df")

    def it(v, nc, p, t):
        return _nct_partials(v, nc, t)

    scalar_rule(sc.nctdtrit, nodf, _inverse(it, 1), _inverse(it, 0),
                second=(nodf, 0, 0, _inverse(it, 4), _inverse(it, 3), _inverse(it, 2)))

    # nctdtrinc(df, p, t) = nc: u = nc, w = t
    nodf = _nod("nctdtrinc", "the degrees of freedom df")

    def inc(v, p, t, nc):
        return _swap(_nct_partials(v, nc, t))

    scalar_rule(sc.nctdtrinc, nodf, _inverse(inc, 0), _inverse(inc, 1),
                second=(nodf, 0, 0, _inverse(inc, 2), _inverse(inc, 3), _inverse(inc, 4)))

    # ncfdtri(dfn, dfd, nc, p) = x: u = x, w = nc
    no1, no2 = _nod("ncfdtri", "the degrees of freedom dfn"), _nod("ncfdtri", "dfd")

    def ix(n1, n2, nc, p, x):
        return _ncf_partials(n1, n2, nc, x)

    scalar_rule(sc.ncfdtri, no1, no2, _inverse(ix, 1), _inverse(ix, 0),
                second=(no1, 0, 0, 0, no2, 0, 0, _inverse(ix, 4), _inverse(ix, 3),
                        _inverse(ix, 2)))


# -- the normal distribution's inverses in its mean and standard deviation ------------
def _probit(p):
    """``(z, 1/phi(z))`` with ``z = ndtri(p)``."""
    z = sc.ndtri(p)
    return z, _SQRT_2PI * np.exp(z * z / 2)


def _register_normal():
    from chainrules.derived import scalar_rule

    def nr(expr):
        return lambda *args: in_dtype_of(expr(*args[:-1]), args[-1])

    # nrdtrimn(p, std, x) = x - std z
    def mn_pp(p, s, x):
        z, r = _probit(p)
        return -s * z * r * r

    scalar_rule(sc.nrdtrimn, nr(lambda p, s, x: -s * _probit(p)[1]),
                nr(lambda p, s, x: -_probit(p)[0]), 1,
                second=(nr(mn_pp), nr(lambda p, s, x: -_probit(p)[1]), 0, 0, 0, 0))

    # nrdtrisd(mn, p, x) = (x - mn)/z
    def sd_p(m, p, x):
        z, r = _probit(p)
        return -(x - m) * r / (z * z)

    def sd_mp(m, p, x):
        z, r = _probit(p)
        return r / (z * z)

    def sd_pp(m, p, x):
        z, r = _probit(p)
        return (x - m) * (2 - z * z) * r * r / (z * z * z)

    scalar_rule(sc.nrdtrisd, nr(lambda m, p, x: -1 / _probit(p)[0]), nr(sd_p),
                nr(lambda m, p, x: 1 / _probit(p)[0]),
                second=(0, nr(sd_mp), 0, nr(sd_pp), nr(lambda m, p, x: -sd_mp(m, p, x)), 0))


# -- Tukey's lambda distribution -------------------------------------------------------------
def _tukey(x, lm, p):
    """``(p_x, p_l, p_xx, p_xl, p_ll)`` of ``p = tklmbda(x, lm)``."""
    a, b = np.log(p), np.log1p(-p)
    ea, eb = np.exp((lm - 1) * a), np.exp((lm - 1) * b)
    la, lb = lm * a, lm * b
    ra, rb = sc.exprel(la), sc.exprel(lb)
    q_p = ea + eb
    q_pp = (lm - 1) * (ea / p - eb / (1 - p))
    q_l = a * a * exprel_d(la, ra) - b * b * exprel_d(lb, rb)
    q_ll = a * a * a * exprel_dd(la, ra) - b * b * b * exprel_dd(lb, rb)
    q_pl = a * ea + b * eb
    # Q(p, l) = x: p(x, l) is u(x, l) with F = Q, u = p, w = l
    return implicit(q_p, q_l, q_pp, q_pl, q_ll)


def _register_tukey():
    from chainrules.derived import scalar_rule

    def part(k):
        return lambda x, lm, p: in_dtype_of(_tukey(x, lm, p)[k], p)

    scalar_rule(sc.tklmbda, part(0), part(1), second=(part(2), part(3), part(4)), saves="yz")


if sc is not None:
    _register_chndtr()
    _register_noncentral_inverses()
    _register_normal()
    _register_tukey()

_family_loaded()
