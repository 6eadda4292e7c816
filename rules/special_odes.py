"""``scipy.special`` functions that solve a second-order differential
equation, differentiated in their argument through it (registered only when
SciPy is installed): the parabolic cylinder and Mathieu functions, which
return ``(value, derivative)``, Jacobi's elliptic functions (also in their
parameter) and the associated Legendre function ``lpmv``. Every formula was
checked against finite differences. The orders and parameters raise
``MissingRuleError`` (no closed form).

* parabolic cylinder functions (DLMF 12.2.2, 12.14.1): ``D_v(x) = U(-v-1/2, x)``
  and SciPy's ``V_v`` solve ``w'' = (x^2/4 - v - 1/2) w``, ``W(a, x)`` solves
  ``w'' = (a - x^2/4) w``: with ``c`` that coefficient, the value's derivative
  is the second output ``w'``, its second ``c w``; the second output's
  derivative is ``c w`` and its second ``c' w + c w'``.
* Mathieu functions (DLMF 28.2.1, 28.20.1): ``ce_m``, ``se_m`` solve
  ``w'' + (a - 2q cos 2t) w = 0`` with ``a = mathieu_a(m, q)`` (``ce``) or
  ``mathieu_b(m, q)`` (``se``), and the modified ``Mc``, ``Ms`` (both kinds)
  ``w'' - (a - 2q cosh 2t) w = 0``. SciPy's angle ``x`` of ``mathieu_cem`` and
  ``mathieu_sem`` is in degrees, ``t = k x`` with ``k = pi/180``, and their
  second output is ``dw/dt``: ``d/dx w = k w_t``, ``d2/dx2 w = -k^2 (a - 2q cos 2t) w``,
  ``d/dx w_t = -k (a - 2q cos 2t) w``, ``d2/dx2 w_t = -k^2 (4q sin(2t) w +
  (a - 2q cos 2t) w_t)``; the modified functions take ``t`` in radians.
* Jacobi's elliptic functions in ``u`` (DLMF 22.13.1-3, 22.16.1):
  ``sn' = cn dn``, ``cn' = -sn dn``, ``dn' = -m sn cn``, ``am' = dn``; second
  derivatives ``sn'' = -sn (dn^2 + m cn^2)``, ``cn'' = cn (m sn^2 - dn^2)``,
  ``dn'' = -m dn (cn^2 - sn^2)``, ``am'' = -m sn cn``. In the parameter ``m``:
  ``u = F(am|m)`` at fixed ``u`` gives ``d am/dm = -dn dF/dm(am|m)``
  (``= (m sn cn - dn (E(am|m) - (1-m) u))/(2m(1-m))`` by Legendre's form, here
  through Carlson's ``R_D``, without that division), ``d sn/dm = cn d am/dm``,
  ``d cn/dm = -sn d am/dm``, ``d dn/dm = m sn cn dF/dm - sn^2/(2 dn)``; the
  second derivatives by the chain rule with ``d2F/dm2``. At ``m = 0`` and
  ``m = 1`` (``|am| < pi/2``) they are the finite values there; outside
  ``[0, 1]`` SciPy returns NaN and so do they.
* spheroidal wave functions (DLMF 30.2.1, and 30.2.1 at ``x = i xi`` for the
  oblate radial ones): with ``l`` the characteristic value (``pro_cv``,
  ``obl_cv``, or the ``cv`` argument of the ``*_cv`` forms) they solve
  ``w'' = P w' + Q w`` with ``P = 2x/(1 - x^2)``,
  ``Q = m^2/(1 - x^2)^2 - (l - s c^2 x^2)/(1 - x^2)`` (prolate ``s = 1``, both
  angular and radial; oblate angular ``s = -1``) and for the oblate radial
  ``P = -2x/(1 + x^2)``, ``Q = (l - c^2 x^2)/(1 + x^2) - m^2/(1 + x^2)^2``; they
  return ``(w, w')``, so ``w'' = P w' + Q w`` and the second output's second
  derivative is ``P' w' + P w'' + Q' w + Q w'``. ``pro_rad2`` and ``obl_rad2``
  have no rule: SciPy's values are not consistent with its own derivative
  output (off by up to 20 % at ``x`` in [1.2, 2.5] for ``pro_rad2``, zero or
  off below ``x ~ 2`` for ``obl_rad2``).
* ``lpmv(m, v, x) = P_v^m(x)`` for ``|x| < 1`` (DLMF 14.10.5 and Legendre's
  equation 14.2.1): ``(1 - x^2) P' = (v + 1) x P_v - (v - m + 1) P_{v+1}``,
  ``(1 - x^2) P'' = 2x P' - (v (v + 1) - m^2/(1 - x^2)) P``.
"""

import math

import numpy as np

from ._util import in_dtype_of, no_derivative, on_demand_family
from .special_elliptic import ellipkinc_dm, ellipkinc_dmm
from .special_integrals import output

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

_DEG = math.pi / 180.0


def _float32_in_float64(ufunc):
    """``ufunc`` computed in float64 for float32 arguments, its results cast
    back to float32: SciPy 1.17's float32 loops of the spheroidal functions
    do not return."""
    def call(*args):
        single = any(getattr(a, "dtype", None) == np.float32 for a in args)
        out = ufunc(*(a.astype(np.float64) if getattr(a, "dtype", None) == np.float32
                      else a for a in args))
        return tuple(o.astype(np.float32) for o in out) if single else out

    call.__name__ = ufunc.__name__
    return call


if sc is not None:
    def _pair(f, a, b):
        return output(f, 0, a, __name__), output(f, 1, b, __name__)

    pbdv_d, pbdv_dp = _pair(sc.pbdv, "pbdv_d", "pbdv_dp")
    pbvv_v, pbvv_vp = _pair(sc.pbvv, "pbvv_v", "pbvv_vp")
    pbwa_w, pbwa_wp = _pair(sc.pbwa, "pbwa_w", "pbwa_wp")
    ellipj_sn, ellipj_cn = _pair(sc.ellipj, "ellipj_sn", "ellipj_cn")
    ellipj_dn = output(sc.ellipj, 2, "ellipj_dn", __name__)
    ellipj_ph = output(sc.ellipj, 3, "ellipj_ph", __name__)
    MATHIEU = {}
    for _name in ("cem", "sem", "modcem1", "modcem2", "modsem1", "modsem2"):
        _f = getattr(sc, f"mathieu_{_name}")
        MATHIEU[_name] = _pair(_f, f"mathieu_{_name}_y", f"mathieu_{_name}_yp")
    SPHEROIDAL = {}
    for _name in ("pro_ang1", "pro_rad1", "obl_ang1", "obl_rad1"):
        for _n in (_name, _name + "_cv"):
            _f = _float32_in_float64(getattr(sc, _n))
            SPHEROIDAL[_n] = (output(_f, 0, f"{_n}_w", __name__),
                              output(_f, 1, f"{_n}_wp", __name__))


def _nod(name, what):
    return no_derivative(f"scipy.special.{name}", what)


# -- parabolic cylinder functions -----------------------------------------------------
def _register_parabolic():
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    def rule(f, value, slope, coef, coef_d, name, what):
        """``w = f(v, x)[0]``, ``w' = f(v, x)[1]`` with ``w'' = coef(v, x) w``."""
        no = _nod(name, what)

        def w_d(v, x, z):
            return in_dtype_of(f(v, x)[1], z)

        def w_dd(v, x, z):
            return in_dtype_of(coef(v, x) * z, z)

        def wp_d(v, x, z):
            return in_dtype_of(coef(v, x) * f(v, x)[0], z)

        def wp_dd(v, x, z):
            return in_dtype_of(coef_d(v, x) * f(v, x)[0] + coef(v, x) * z, z)
        scalar_rule(value, no, w_d, second=(no, 0, w_dd), saves="xyz")
        scalar_rule(slope, no, wp_d, second=(no, 0, wp_dd), saves="xyz")
        DECOMPOSITIONS[f] = lambda v, x, **kw: (value(v, x), slope(v, x))

    def weber(v, x):
        return x * x / 4 - v - 0.5

    def half_x(v, x):
        return x / 2

    rule(sc.pbdv, pbdv_d, pbdv_dp, weber, half_x, "pbdv", "the order v")
    rule(sc.pbvv, pbvv_v, pbvv_vp, weber, half_x, "pbvv", "the order v")
    rule(sc.pbwa, pbwa_w, pbwa_wp, lambda a, x: a - x * x / 4, lambda a, x: -x / 2, "pbwa",
         "the parameter a")


# -- Mathieu functions ----------------------------------------------------------------
def _mathieu_parts(kind, m, q, x):
    """``(w, w_t, c, c_t, k)`` of the Mathieu function ``kind`` at ``(m, q, x)``:
    ``w_tt = c w`` in the variable ``t = k x``."""
    f = getattr(sc, f"mathieu_{kind}")
    w, wt = f(m, q, x)
    a = (sc.mathieu_a if "cem" in kind else sc.mathieu_b)(m, q)
    if kind in ("cem", "sem"):
        t = _DEG * x
        return w, wt, 2 * q * np.cos(2 * t) - a, -4 * q * np.sin(2 * t), _DEG
    return w, wt, a - 2 * q * np.cosh(2 * x), -4 * q * np.sinh(2 * x), 1.0


def _register_mathieu():
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    for kind, (value, slope) in MATHIEU.items():
        name = f"mathieu_{kind}"
        nom, noq = _nod(name, "the order m"), _nod(name, "the parameter q")

        def w_d(m, q, x, z, kind=kind):
            w, wt, c, ct, k = _mathieu_parts(kind, m, q, x)
            return in_dtype_of(k * wt, z)

        def w_dd(m, q, x, z, kind=kind):
            w, wt, c, ct, k = _mathieu_parts(kind, m, q, x)
            return in_dtype_of((k * k) * c * w, z)

        def wt_d(m, q, x, z, kind=kind):
            w, wt, c, ct, k = _mathieu_parts(kind, m, q, x)
            return in_dtype_of(k * c * w, z)

        def wt_dd(m, q, x, z, kind=kind):
            w, wt, c, ct, k = _mathieu_parts(kind, m, q, x)
            return in_dtype_of((k * k) * (ct * w + c * wt), z)
        scalar_rule(value, nom, noq, w_d, second=(nom, 0, 0, noq, 0, w_dd))
        scalar_rule(slope, nom, noq, wt_d, second=(nom, 0, 0, noq, 0, wt_dd))
        DECOMPOSITIONS[getattr(sc, name)] = (
            lambda m, q, x, value=value, slope=slope, **kw: (value(m, q, x), slope(m, q, x)))


# -- Jacobi's elliptic functions ------------------------------------------------------------
def _ellipj_m_parts(u, m, second):
    """``(sn, cn, dn, a, a_m, dn_m)`` at ``(u, m)``: ``a = d am/dm`` and its
    derivatives ``a_m = d2 am/dm2`` (None unless ``second``),
    ``dn_m = d dn/dm = d2 am/du dm``."""
    sn, cn, dn, ph = sc.ellipj(u, m)
    fm = ellipkinc_dm(ph, m)
    a = -dn * fm
    a_m = None
    if second:
        a_m = -(m * sn * cn * a * a + sn * sn * a) / (dn * dn) - dn * ellipkinc_dmm(ph, m)
    dn_m = m * sn * cn * fm - sn * sn / (2 * dn)
    return sn, cn, dn, a, a_m, dn_m


def _ellipj_dn_mm(m, sn, cn, dn, a, a_m):
    """``d2 dn/dm2`` of ``dn = Delta(am, m)``, ``Delta(phi, m) = sqrt(1 - m sin^2 phi)``."""
    d_pp = -m * (cn * cn - sn * sn) / dn - (m * m) * (sn * sn * cn * cn) / (dn * dn * dn)
    d_pm = -sn * cn / dn - m * sn * sn * sn * cn / (2 * dn * dn * dn)
    d_mm = -(sn * sn * sn * sn) / (4 * dn * dn * dn)
    return d_pp * a * a + 2 * d_pm * a - (m * sn * cn / dn) * a_m + d_mm


def _register_ellipj():
    """sn, cn, dn, am in ``u`` and in ``m``. In ``m``: ``u = F(am|m)`` at fixed
    ``u`` gives ``d am/dm = -dn dF/dm(am, m)``, ``dF/dm`` and ``d2F/dm2`` those of
    ``ellipkinc`` (``rules/special_elliptic.py``, exact at ``m = 0`` and ``m = 1``,
    no division by ``m`` or ``1 - m``); ``sn = sin am``, ``cn = cos am``,
    ``dn = Delta(am, m)`` give the rest by the chain rule."""
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    def jac(u, m):
        sn, cn, dn, _ = sc.ellipj(u, m)
        return sn, cn, dn

    def partial(expr):
        return lambda u, m, z: in_dtype_of(expr(m, *jac(u, m)), z)

    def in_m(expr, second=False):
        """A partial in ``m``: ``expr(m, sn, cn, dn, a, a_m, dn_m)`` (``a_m`` only
        for the second partial in ``m``, which says ``second``)."""
        return lambda u, m, z: in_dtype_of(expr(m, *_ellipj_m_parts(u, m, second)), z)

    scalar_rule(ellipj_sn, partial(lambda m, sn, cn, dn: cn * dn),
                in_m(lambda m, sn, cn, dn, a, am, dnm: cn * a),
                second=(partial(lambda m, sn, cn, dn: -sn * (dn * dn + m * cn * cn)),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: cn * dnm - sn * dn * a),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: cn * am - sn * a * a, True)))
    scalar_rule(ellipj_cn, partial(lambda m, sn, cn, dn: -sn * dn),
                in_m(lambda m, sn, cn, dn, a, am, dnm: -sn * a),
                second=(partial(lambda m, sn, cn, dn: cn * (m * sn * sn - dn * dn)),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: -sn * dnm - cn * dn * a),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: -sn * am - cn * a * a, True)))
    scalar_rule(ellipj_dn, partial(lambda m, sn, cn, dn: -m * sn * cn),
                in_m(lambda m, sn, cn, dn, a, am, dnm: dnm),
                second=(partial(lambda m, sn, cn, dn: -m * dn * (cn * cn - sn * sn)),
                        in_m(lambda m, sn, cn, dn, a, am, dnm:
                             -sn * cn - m * a * (cn * cn - sn * sn)),
                        in_m(lambda m, sn, cn, dn, a, am, dnm:
                             _ellipj_dn_mm(m, sn, cn, dn, a, am), True)))
    scalar_rule(ellipj_ph, partial(lambda m, sn, cn, dn: dn),
                in_m(lambda m, sn, cn, dn, a, am, dnm: a),
                second=(partial(lambda m, sn, cn, dn: -m * sn * cn),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: dnm),
                        in_m(lambda m, sn, cn, dn, a, am, dnm: am, True)))
    DECOMPOSITIONS[sc.ellipj] = lambda u, m, **kw: (ellipj_sn(u, m), ellipj_cn(u, m),
                                                    ellipj_dn(u, m), ellipj_ph(u, m))


# -- associated Legendre functions ------------------------------------------------------------
def _lpmv_d(m, v, x, p):
    return ((v + 1) * x * p - (v - m + 1) * sc.lpmv(m, v + 1, x)) / (1 - x * x)


def _register_lpmv():
    from chainrules.derived import scalar_rule

    nom, nov = _nod("lpmv", "the order m"), _nod("lpmv", "the degree v")

    def dd(m, v, x, z):
        s = 1 - x * x
        return in_dtype_of((2 * x * _lpmv_d(m, v, x, z) - (v * (v + 1) - m * m / s) * z) / s, z)

    scalar_rule(sc.lpmv, nom, nov, lambda m, v, x, z: in_dtype_of(_lpmv_d(m, v, x, z), z),
                second=(nom, 0, 0, nov, 0, dd))


# -- spheroidal wave functions ------------------------------------------------------------
def _spheroidal_pq(kind, m, c, cv, x):
    """``(P, Q, P', Q')`` of ``w'' = P w' + Q w`` for the spheroidal functions of
    ``kind`` (``"pro"``, ``"obl"``, ``"obl_rad"``)."""
    if kind == "obl_rad":
        t = 1 + x * x
        lam = cv - c * c * x * x
        return (-2 * x / t, lam / t - m * m / (t * t), 2 * (x * x - 1) / (t * t),
                (-2 * c * c * x * t - 2 * x * lam) / (t * t) + 4 * m * m * x / (t * t * t))
    s = 1.0 if kind == "pro" else -1.0
    t = 1 - x * x
    lam = cv - s * c * c * x * x
    return (2 * x / t, m * m / (t * t) - lam / t, 2 * (1 + x * x) / (t * t),
            (2 * s * c * c * x * t - 2 * x * lam) / (t * t) + 4 * m * m * x / (t * t * t))


def _last_only(nargs, no, dd):
    """The upper triangle of second partials of an n-ary rule whose last
    argument alone is differentiated (``no[i]`` raises for argument ``i``)."""
    return tuple(dd if i == j == nargs - 1 else no[i] if i == j else 0
                 for i in range(nargs) for j in range(i, nargs))


def _spheroidal_rules(name, value, slope):
    from chainrules.derived import scalar_rule
    from chainrules.registry import DECOMPOSITIONS

    kind = "obl_rad" if name.startswith("obl_rad") else name[:3]
    given_cv = name.endswith("_cv")
    cv_of, f = getattr(sc, f"{name[:3]}_cv"), _float32_in_float64(getattr(sc, name))
    what = ["the order m", "the degree n", "the spheroidal parameter c"]
    no = [_nod(name, w) for w in what + ["the characteristic value cv"] * given_cv]
    nargs = len(no) + 1

    def parts(*args):
        m, n, c, x = args[0], args[1], args[2], args[-1]
        cv = args[3] if given_cv else cv_of(m, n, c)
        w, wx = f(*args)
        return (w, wx) + _spheroidal_pq(kind, m, c, cv, x)

    def w_d(*args):
        return in_dtype_of(parts(*args[:-1])[1], args[-1])

    def w_dd(*args):
        w, wx, p, q, _, _ = parts(*args[:-1])
        return in_dtype_of(p * wx + q * w, args[-1])

    def wx_dd(*args):
        w, wx, p, q, pd, qd = parts(*args[:-1])
        return in_dtype_of(pd * wx + p * (p * wx + q * w) + qd * w + q * wx, args[-1])
    scalar_rule(value, *no, w_d, second=_last_only(nargs, no, w_dd))
    scalar_rule(slope, *no, w_dd, second=_last_only(nargs, no, wx_dd))
    DECOMPOSITIONS[getattr(sc, name)] = lambda *args, **kw: (value(*args), slope(*args))


def _register_spheroidal():
    for name, (value, slope) in SPHEROIDAL.items():
        _spheroidal_rules(name, value, slope)


if sc is not None:
    _register_parabolic()
    _register_mathieu()
    _register_ellipj()
    _register_lpmv()
    _register_spheroidal()

_family_loaded()
