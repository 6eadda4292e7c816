"""``scipy.special``'s integrals of Bessel, Struve and Airy functions, the
modified Fresnel integrals, the Hankel and Kelvin functions and
``besselpoly`` (registered only when SciPy is installed). Every formula was
checked against finite differences; the ufuncs with several outputs are
compositions of one private primitive per output (as ``sici``).

* Hankel functions, in ``z`` (the order ``v`` raises ``MissingRuleError``):
  ``H_v' = (H_{v-1} - H_{v+1})/2`` (DLMF 10.6.1), holomorphic;
  ``H_v'' = (H_{v-2} - 2 H_v + H_{v+2})/4``. The scaled ``hankel1e = H1 e^(-iz)``
  and ``hankel2e = H2 e^(iz)`` (``s = -i``, ``+i``): ``f' = (f_{v-1} - f_{v+1})/2 + s f``,
  ``f'' = (f_{v-2} - 2 f + f_{v+2})/4 + s (f_{v-1} - f_{v+1}) - f``.
* ``kelvin(x) = (ber + i bei, ker + i kei, berp + i beip, kerp + i keip)``:
  a composition of the Kelvin rules of ``rules/special_elementary.py``.
* integrals from 0 to ``x`` (or from ``x`` to infinity, negated), whose
  derivatives are their integrands: ``iti0k0 = (int I_0, int K_0)``,
  ``itj0y0 = (int J_0, int Y_0)``, ``itstruve0 = int H_0``,
  ``itmodstruve0 = int L_0``, ``it2i0k0 = (int_0^x (I_0 - 1)/t, int_x^inf K_0/t)``,
  ``it2j0y0 = (int_0^x (1 - J_0)/t, int_x^inf Y_0/t)``,
  ``it2struve0 = int_x^inf H_0/t``, ``itairy = (int Ai(t), int Bi(t), int Ai(-t),
  int Bi(-t))``; second derivatives from ``J_0' = -J_1``, ``Y_0' = -Y_1``,
  ``I_0' = I_1``, ``K_0' = -K_1`` (10.6.2, 10.29.3), ``H_0' = 2/pi - H_1``,
  ``L_0' = 2/pi + L_1`` (11.4.27, 11.4.28), ``Ai'`` and ``Bi'``. The
  integrands ``(I_0 - 1)/x`` and ``(1 - J_0)/x`` cancel near 0, where their
  power series (10.25.2, 10.2.2) take over (``|x| < 1``).
* modified Fresnel integrals: ``fp(x) = int_x^inf exp(i t^2) dt``,
  ``kp = exp(-i (x^2 + pi/4)) fp / sqrt(pi)``; ``fp' = -exp(i x^2)`` and
  ``kp' = -2ix kp - exp(-i pi/4)/sqrt(pi)``; ``fm``, ``km`` the conjugate forms
  (``i`` for ``-i``). SciPy's ``fp`` and ``fm`` at ``x < 0`` are not the
  integral (their imaginary part is off; ``kp``, ``km`` are right there): their
  derivatives are NaN for ``x < 0``.
* ``besselpoly(a, l, v) = int_0^1 t^l J_v(2 a t) dt``, in ``a`` (10.6.1 under
  the integral): ``d/da = B(a, l+1, v-1) - B(a, l+1, v+1)``,
  ``d2/da2 = B(a, l+2, v-2) - 2 B(a, l+2, v) + B(a, l+2, v+2)``; ``l`` and ``v``
  raise ``MissingRuleError`` (no closed form).
"""

import math

import numpy as np

from chainrules.primitives import primitive

from ._util import array_value, in_dtype_of, no_derivative, on_demand_family

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

_TWO_PI = 2.0 / math.pi
_C_SQRT_PI = 1.0 / math.sqrt(math.pi)
_SMALL = 1.0
# (I_0(x) - 1)/x = sum_{k>=1} x^(2k-1) / (4^k k!^2); (1 - J_0(x))/x alternates
_TERMS = 10
_I0M1 = [1.0 / (4.0 ** k * math.factorial(k) ** 2) for k in range(1, _TERMS + 1)]


def output(ufunc, k, name, module=__name__):
    """Output ``k`` of the multi-output ufunc ``ufunc``, as a primitive named
    ``name`` in ``module``."""
    def out(*args):
        return ufunc(*args)[k]

    out.__name__ = out.__qualname__ = name
    out.__module__ = module
    out.__doc__ = f"Output {k} of ``scipy.special.{ufunc.__name__}`` (one operation)."
    return primitive(out)


def _series(x, sign, derivative):
    """``sum_k sign^(k+1) c_k x^(2k-1)`` (``(I_0 - 1)/x`` for ``sign = 1``,
    ``(1 - J_0)/x`` for ``-1``) or its derivative, by Horner's rule in ``x^2``."""
    t = x * x
    acc = 0.0
    for k in range(_TERMS, 0, -1):
        c = _I0M1[k - 1] * sign ** (k + 1) * ((2 * k - 1) if derivative else 1)
        acc = acc * t + c
    return acc if derivative else acc * x


def _integrand(x, f, sign):
    """``(I_0 - 1)/x`` (``f = i0``, ``sign = 1``) or ``(1 - J_0)/x`` (``j0``, ``-1``)."""
    small = np.abs(array_value(x)) < _SMALL
    xs = np.where(small, 2.0, x)
    return np.where(small, _series(x, sign, False), sign * (f(xs) - 1) / xs)


def _integrand_d(x, f, f1, sign):
    """The derivative of ``_integrand``: ``f1/x - sign (f - 1)/x^2`` with
    ``f1 = I_1`` or ``J_1``."""
    small = np.abs(array_value(x)) < _SMALL
    xs = np.where(small, 2.0, x)
    return np.where(small, _series(x, sign, True),
                    f1(xs) / xs - sign * (f(xs) - 1) / (xs * xs))


if sc is not None:
    iti0k0_i, iti0k0_k = output(sc.iti0k0, 0, "iti0k0_i"), output(sc.iti0k0, 1, "iti0k0_k")
    it2i0k0_i = output(sc.it2i0k0, 0, "it2i0k0_i")
    it2i0k0_k = output(sc.it2i0k0, 1, "it2i0k0_k")
    itj0y0_j, itj0y0_y = output(sc.itj0y0, 0, "itj0y0_j"), output(sc.itj0y0, 1, "itj0y0_y")
    it2j0y0_j = output(sc.it2j0y0, 0, "it2j0y0_j")
    it2j0y0_y = output(sc.it2j0y0, 1, "it2j0y0_y")
    itairy_apt, itairy_bpt = output(sc.itairy, 0, "itairy_apt"), output(sc.itairy, 1, "itairy_bpt")
    itairy_ant, itairy_bnt = output(sc.itairy, 2, "itairy_ant"), output(sc.itairy, 3, "itairy_bnt")
    modfresnelp_f = output(sc.modfresnelp, 0, "modfresnelp_f")
    modfresnelp_k = output(sc.modfresnelp, 1, "modfresnelp_k")
    modfresnelm_f = output(sc.modfresnelm, 0, "modfresnelm_f")
    modfresnelm_k = output(sc.modfresnelm, 1, "modfresnelm_k")


def _in(expr):
    """A unary partial ``expr(x)`` in the dtype of the output."""
    return lambda x, y: in_dtype_of(expr(x), y)


def _register_integrals():
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    scalar_rule(iti0k0_i, _in(sc.i0), second=_in(sc.i1), saves="xy")
    scalar_rule(iti0k0_k, _in(sc.k0), second=_in(lambda x: -sc.k1(x)), saves="xy")
    scalar_rule(itj0y0_j, _in(sc.j0), second=_in(lambda x: -sc.j1(x)), saves="xy")
    scalar_rule(itj0y0_y, _in(sc.y0), second=_in(lambda x: -sc.y1(x)), saves="xy")
    scalar_rule(it2i0k0_i, _in(lambda x: _integrand(x, sc.i0, 1.0)),
                second=_in(lambda x: _integrand_d(x, sc.i0, sc.i1, 1.0)), saves="xy")
    scalar_rule(it2i0k0_k, _in(lambda x: -sc.k0(x) / x),
                second=_in(lambda x: sc.k1(x) / x + sc.k0(x) / (x * x)), saves="xy")
    scalar_rule(it2j0y0_j, _in(lambda x: _integrand(x, sc.j0, -1.0)),
                second=_in(lambda x: _integrand_d(x, sc.j0, sc.j1, -1.0)), saves="xy")
    scalar_rule(it2j0y0_y, _in(lambda x: -sc.y0(x) / x),
                second=_in(lambda x: sc.y1(x) / x + sc.y0(x) / (x * x)), saves="xy")
    scalar_rule(sc.itstruve0, _in(lambda x: sc.struve(0, x)),
                second=_in(lambda x: _TWO_PI - sc.struve(1, x)), saves="xy")
    scalar_rule(sc.itmodstruve0, _in(lambda x: sc.modstruve(0, x)),
                second=_in(lambda x: _TWO_PI + sc.modstruve(1, x)), saves="xy")
    scalar_rule(sc.it2struve0, _in(lambda x: -sc.struve(0, x) / x),
                second=_in(lambda x: (sc.struve(1, x) - _TWO_PI) / x
                           + sc.struve(0, x) / (x * x)), saves="xy")
    scalar_rule(itairy_apt, _in(lambda x: sc.airy(x)[0]), second=_in(lambda x: sc.airy(x)[1]),
                saves="xy")
    scalar_rule(itairy_bpt, _in(lambda x: sc.airy(x)[2]), second=_in(lambda x: sc.airy(x)[3]),
                saves="xy")
    scalar_rule(itairy_ant, _in(lambda x: sc.airy(-x)[0]),
                second=_in(lambda x: -sc.airy(-x)[1]), saves="xy")
    scalar_rule(itairy_bnt, _in(lambda x: sc.airy(-x)[2]),
                second=_in(lambda x: -sc.airy(-x)[3]), saves="xy")
    DECOMPOSITIONS[sc.iti0k0] = lambda x, **kw: (iti0k0_i(x), iti0k0_k(x))
    DECOMPOSITIONS[sc.it2i0k0] = lambda x, **kw: (it2i0k0_i(x), it2i0k0_k(x))
    DECOMPOSITIONS[sc.itj0y0] = lambda x, **kw: (itj0y0_j(x), itj0y0_y(x))
    DECOMPOSITIONS[sc.it2j0y0] = lambda x, **kw: (it2j0y0_j(x), it2j0y0_y(x))
    DECOMPOSITIONS[sc.itairy] = lambda x, **kw: (itairy_apt(x), itairy_bpt(x),
                                                 itairy_ant(x), itairy_bnt(x))


def _fresnel_f_d(x, s):
    """``fp' = -exp(i x^2)`` (``s = 1``), ``fm' = -exp(-i x^2)`` (``s = -1``);
    NaN at ``x < 0``, where SciPy's value is not the integral."""
    neg = array_value(x) < 0
    return np.where(neg, np.nan, -np.exp((1j * s) * x * x))


def _fresnel_f_dd(x, s):
    neg = array_value(x) < 0
    return np.where(neg, np.nan, (-2j * s) * x * np.exp((1j * s) * x * x))


def _register_fresnel():
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    for f, k, s in ((modfresnelp_f, modfresnelp_k, 1.0), (modfresnelm_f, modfresnelm_k, -1.0)):
        c = _C_SQRT_PI * complex(np.exp(-1j * s * math.pi / 4))
        scalar_rule(f, lambda x, y, s=s: in_dtype_of(_fresnel_f_d(x, s), y),
                    second=lambda x, y, s=s: in_dtype_of(_fresnel_f_dd(x, s), y), saves="xy")

        # k' = -2isx k - c, k'' = -2is k - 2isx k'
        def k_d(x, y, s=s, c=c):
            return (-2j * s) * x * y - c

        def k_dd(x, y, s=s, c=c):
            return (-2j * s) * (y + x * k_d(x, y, s, c))
        scalar_rule(k, k_d, second=k_dd, saves="xy")
    DECOMPOSITIONS[sc.modfresnelp] = lambda x, **kw: (modfresnelp_f(x), modfresnelp_k(x))
    DECOMPOSITIONS[sc.modfresnelm] = lambda x, **kw: (modfresnelm_f(x), modfresnelm_k(x))


def _register_hankel():
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    nov = no_derivative("scipy.special Hankel functions", "the order v")

    def rule(f, s):
        # f' = (f_{v-1} - f_{v+1})/2 + s f; s = 0 unscaled, -i for hankel1e, +i for hankel2e
        def d(v, z, out):
            return (f(v - 1, z) - f(v + 1, z)) / 2 + s * out

        def dd(v, z, out):
            return ((f(v - 2, z) - 2 * out + f(v + 2, z)) / 4
                    + s * (f(v - 1, z) - f(v + 1, z)) + (s * s) * out)
        scalar_rule(f, nov, d, second=(nov, 0, dd), saves="xyz")

    rule(sc.hankel1, 0.0)
    rule(sc.hankel2, 0.0)
    rule(sc.hankel1e, -1j)
    rule(sc.hankel2e, 1j)

    DECOMPOSITIONS[sc.kelvin] = lambda x, **kw: (
        sc.ber(x) + 1j * sc.bei(x), sc.ker(x) + 1j * sc.kei(x),
        sc.berp(x) + 1j * sc.beip(x), sc.kerp(x) + 1j * sc.keip(x))


def _register_besselpoly():
    from chainrules.derived import scalar_rule

    nol = no_derivative("scipy.special.besselpoly", "the power lmb")
    nov = no_derivative("scipy.special.besselpoly", "the order nu")

    def d(a, lm, nu, out):
        return in_dtype_of(sc.besselpoly(a, lm + 1, nu - 1) - sc.besselpoly(a, lm + 1, nu + 1),
                           out)

    def dd(a, lm, nu, out):
        return in_dtype_of(sc.besselpoly(a, lm + 2, nu - 2) - 2 * sc.besselpoly(a, lm + 2, nu)
                           + sc.besselpoly(a, lm + 2, nu + 2), out)
    scalar_rule(sc.besselpoly, d, nol, nov, second=(dd, 0, 0, nol, 0, nov))


if sc is not None:
    _register_integrals()
    _register_fresnel()
    _register_hankel()
    _register_besselpoly()

_family_loaded()
