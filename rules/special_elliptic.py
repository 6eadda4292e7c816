"""``scipy.special``'s elliptic integrals (registered only when SciPy is
installed): the complete and incomplete integrals of Legendre's form,
Carlson's symmetric forms and the arithmetic-geometric mean, each in every
argument (DLMF chapter 19):

* complete elliptic integrals, as 2F1s (19.5.1, 19.5.2, differentiated by
  15.5.1): ``K'(m) = pi/8 2F1(3/2,3/2;2;m)``, ``K'' = 9pi/64 2F1(5/2,5/2;3;m)``,
  ``E' = -pi/8 2F1(1/2,3/2;2;m)``, ``E'' = -3pi/64 2F1(3/2,5/2;3;m)``; ``ellipkm1``
  near ``p = 0`` by Legendre's ``K' = (E - pK)/(2mp)``, ``p = 1 - m``.
* incomplete ``F(phi|m)``, ``E(phi|m)``: the ``phi`` derivatives are
  ``1/Delta`` and ``Delta``, ``Delta = sqrt(1 - m sin^2 phi)``;
  ``dF/dm = s^3 R_D(c^2, 1, Delta^2)/6`` and ``dE/dm = -s^3 R_D(c^2, Delta^2, 1)/6``
  (19.25.5 and 19.25.7 differentiated by 19.18.1, ``phi`` reduced to
  ``|phi| <= pi/2`` plus ``2k K'(m)``, ``2k E'(m)``); the second ``m`` derivatives
  differentiate those ``R_D`` in their ``Delta^2`` argument by the complex step
  (``R_D`` is analytic there and SciPy's ``elliprd`` takes complex arguments):
  exact to rounding at every ``m`` and ``phi``, where Legendre's forms
  ``(E - F)/(2m)`` and ``(E - (1-m) F)/(2m(1-m))`` cancel near ``m = 0``,
  ``m = 1`` and ``phi = 0``. At ``m = 1`` (``|phi| < pi/2``) they are the finite
  values there.
* Carlson forms: ``dR_F/dz = -R_D(x,y,z)/6`` (19.18.1),
  ``dR_G/dz = (3 R_F - z R_D)/12`` (19.18.4 and the integral of
  ``R_{-1/2}(1/2,1/2,3/2)``); ``R_D`` and ``R_J`` by partial fractions of
  their integrands: ``dR_D/dx = (R_D(y,z,x) - R_D(x,y,z))/(2(x-z))``,
  ``dR_D/dz = (3/2 R_F + (x+y-2z) R_D - 3/2 sqrt(xy) z^(-3/2))/((x-z)(y-z))``,
  ``dR_J/dx = (R_J - R_D(y,z,x))/(2(p-x))``, and the last derivative of each
  from Euler's homogeneity relation (19.18.11). These divide by differences
  of the arguments: where two of them coincide the limit is not taken (NaN)
  and close to that the accuracy falls with the difference. ``R_C`` and
  ``agm`` have two variables: their derivatives are the two-variable
  ``R_{-a}(b1, b2; z1, z2) = z2^-a 2F1(a, b1; b1+b2; 1 - z1/z2)`` (19.18.4),
  exact at ``x = y``; ``agm(a, b) = 1/R_{-1/2}(1/2, 1/2; a^2, b^2)``.

``NO_RULE`` in ``rules/special_elementary.py`` lists what has no rule, and why.
"""

import math

import numpy as np

from chainrules.primitives import primitive

from ._util import array_value, in_dtype_of, on_demand_family, real_only

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

_PI = math.pi


# -- elliptic integrals ---------------------------------------------------------------
def _ellipk_d(m):
    return in_dtype_of((_PI / 8) * sc.hyp2f1(1.5, 1.5, 2.0, m), m)


def _ellipk_dd(m):
    return in_dtype_of((9 * _PI / 64) * sc.hyp2f1(2.5, 2.5, 3.0, m), m)


def _ellipe_d(m):
    return in_dtype_of((-_PI / 8) * sc.hyp2f1(0.5, 1.5, 2.0, m), m)


def _ellipe_dd(m):
    return in_dtype_of((-3 * _PI / 64) * sc.hyp2f1(1.5, 2.5, 3.0, m), m)


def _ellipkm1_d(p, k):
    """``d/dp K(1 - p) = -K'(1 - p)``: for ``p < 0.5`` from ``(E - pK)/(2mp)``,
    accurate as ``p -> 0`` where ``1 - p`` would lose ``p``."""
    pv = array_value(p)
    near = pv < 0.5
    ps = np.where(near, p, 0.25)
    m = 1 - ps
    formula = (sc.ellipe(m) - ps * np.where(near, k, 1.0)) / (2 * m * ps)
    far = _ellipk_d(1 - np.where(near, 0.75, p))
    return -np.where(near, formula, far)


def _ellipkm1_dd(p, k):
    pv = array_value(p)
    near = pv < 0.5
    ps = np.where(near, p, 0.25)
    ks = np.where(near, k, 1.0)
    m = 1 - ps
    kd = (sc.ellipe(m) - ps * ks) / (2 * m * ps)
    formula = (ks / 2 - (2 - 4 * m) * kd) / (2 * m * ps)
    far = _ellipk_dd(1 - np.where(near, 0.75, p))
    return np.where(near, formula, far)


def _reduce_phi(phi):
    """``phi = phi0 + k pi`` with ``|phi0| <= pi/2``: ``(phi0, k)``."""
    k = np.round(array_value(phi) / _PI)
    return phi - k * _PI, k


def _rd_step(x, y, z, place):
    """``dR_D(x, y, z)`` by its argument ``place`` (1: ``y``, 2: ``z``) by the
    complex step: ``R_D`` is analytic at positive arguments, so
    ``Im R_D(.., a + i h, ..)/h`` is the derivative to ``O(h^2)`` relative, with
    no subtraction to cancel (SciPy's ``elliprd`` takes complex arguments).
    NaN where an argument is negative, as the real ``R_D`` (off its cut the
    complex one has values the real function has not)."""
    args = [x, y, z]
    # in float64 whatever the arguments' dtype (a NumPy float64 scalar is not
    # weakly typed), without converting lazy arrays
    a = args[place] * np.float64(1.0)
    h = 1e-20 * np.abs(a) + 1e-300
    args[place] = a + 1j * h
    negative = (np.real(args[0]) < 0) | (np.real(args[1]) < 0) | (np.real(args[2]) < 0)
    return np.where(negative, np.nan, np.imag(sc.elliprd(*args)) / h)


@primitive
def ellipkinc_dm(phi, m):
    """``dF(phi|m)/dm = s^3 R_D(c^2, 1, Delta^2)/6 + 2k K'(m)`` (reduced phi)."""
    phi0, k = _reduce_phi(phi)
    s, c = np.sin(phi0), np.cos(phi0)
    base = s * s * s * sc.elliprd(c * c, 1.0, 1 - m * s * s) / 6
    whole = np.where(k == 0, 0.0, 2 * k * sc.elliprd(0.0, 1.0, np.where(k == 0, 0.5, 1 - m)) / 6)
    return in_dtype_of(base + whole, phi)


@primitive
def ellipeinc_dm(phi, m):
    """``dE(phi|m)/dm = -s^3 R_D(c^2, Delta^2, 1)/6 + 2k E'(m)``."""
    phi0, k = _reduce_phi(phi)
    s, c = np.sin(phi0), np.cos(phi0)
    base = -s * s * s * sc.elliprd(c * c, 1 - m * s * s, 1.0) / 6
    whole = np.where(k == 0, 0.0,
                     -2 * k * sc.elliprd(0.0, np.where(k == 0, 0.5, 1 - m), 1.0) / 6)
    return in_dtype_of(base + whole, phi)


@primitive
def ellipkinc_dmm(phi, m):
    """``d2F(phi|m)/dm2 = -s^5 dR_D(c^2, 1, Delta^2)/dz / 6 - 2k dR_D(0, 1, 1 - m)/dz / 6``."""
    phi0, k = _reduce_phi(phi)
    s, c = np.sin(phi0), np.cos(phi0)
    base = -(s ** 5) * _rd_step(c * c, 1.0, 1 - m * s * s, 2) / 6
    whole = np.where(k == 0, 0.0,
                     -2 * k * _rd_step(0.0, 1.0, np.where(k == 0, 0.5, 1 - m), 2) / 6)
    return in_dtype_of(base + whole, phi)


@primitive
def ellipeinc_dmm(phi, m):
    """``d2E(phi|m)/dm2 = s^5 dR_D(c^2, Delta^2, 1)/dy / 6 + 2k dR_D(0, 1 - m, 1)/dy / 6``."""
    phi0, k = _reduce_phi(phi)
    s, c = np.sin(phi0), np.cos(phi0)
    base = (s ** 5) * _rd_step(c * c, 1 - m * s * s, 1.0, 1) / 6
    whole = np.where(k == 0, 0.0,
                     2 * k * _rd_step(0.0, np.where(k == 0, 0.5, 1 - m), 1.0, 1) / 6)
    return in_dtype_of(base + whole, phi)


# -- Carlson's symmetric integrals ------------------------------------------------------
def _rd_1(x, y, z):
    """``dR_D(x, y, z)/dx``."""
    return (sc.elliprd(y, z, x) - sc.elliprd(x, y, z)) / (2 * (x - z))


def _rd_2(x, y, z):
    return _rd_1(y, x, z)


def _rd_3(x, y, z):
    """``dR_D(x, y, z)/dz``."""
    return ((1.5 * sc.elliprf(x, y, z) + (x + y - 2 * z) * sc.elliprd(x, y, z)
             - 1.5 * np.sqrt(x) * np.sqrt(y) / (z * np.sqrt(z))) / ((x - z) * (y - z)))


def _rd_11(x, y, z):
    return (_rd_3(y, z, x) - 3 * _rd_1(x, y, z)) / (2 * (x - z))


def _rd_12(x, y, z):
    return (_rd_1(y, z, x) - _rd_2(x, y, z)) / (2 * (x - z))


def _rd_13(x, y, z):
    return (_rd_2(y, z, x) - _rd_3(x, y, z) + 2 * _rd_1(x, y, z)) / (2 * (x - z))


def _rd_22(x, y, z):
    return _rd_11(y, x, z)


def _rd_23(x, y, z):
    return _rd_13(y, x, z)


def _rd_33(x, y, z):
    return (-2.5 * _rd_3(x, y, z) - x * _rd_13(x, y, z) - y * _rd_23(x, y, z)) / z


def _rg_2nd(i, j):
    """``d2R_G/dz_i dz_j`` (``i <= j``) from ``dR_G/dz_i = (3 R_F - z_i R_D(.., z_i))/12``."""
    def rf_d(args, k):  # dR_F/dz_k = -R_D(others, z_k)/6
        return -sc.elliprd(*_rot(args, k)) / 6

    def d2(*a):
        args = a[:3]
        if i == j:
            return -(1.5 * sc.elliprd(*_rot(args, i)) + args[i] * _rd_3(*_rot(args, i))) / 12
        # d/dz_j of R_D(others of i, z_i): z_j is argument place q of that call
        rot = _rot(args, i)
        q = [k for k in range(3) if k != i].index(j)
        rd_q = _rd_1(*rot) if q == 0 else _rd_2(*rot)
        return (3 * rf_d(args, j) - args[i] * rd_q) / 12
    return d2


def _rot(args, k):
    """The three arguments with ``z_k`` last (the others in their order)."""
    return tuple(a for n, a in enumerate(args) if n != k) + (args[k],)


def _rj_1(x, y, z, p, w, k):
    """``dR_J/dz_k`` for ``k`` in 0, 1, 2 (``w = R_J``)."""
    args = (x, y, z)
    return (w - sc.elliprd(*_rot(args, k))) / (2 * (p - args[k]))


def _rj_p(x, y, z, p, w):
    return -(1.5 * w + x * _rj_1(x, y, z, p, w, 0) + y * _rj_1(x, y, z, p, w, 1)
             + z * _rj_1(x, y, z, p, w, 2)) / p


def _rj_2nd(i, j):
    """``d2R_J/dz_i dz_j`` (``i <= j``; index 3 is ``p``)."""
    def d2(x, y, z, p, w):
        args = (x, y, z)
        if i == 3:  # (p, p): Euler's relation for dR_J/dp, of degree -5/2
            return (-2.5 * _rj_p(x, y, z, p, w)
                    - sum(args[k] * _rj_2nd(k, 3)(x, y, z, p, w) for k in range(3))) / p
        di = _rj_1(x, y, z, p, w, i)
        if j == 3:
            return (_rj_p(x, y, z, p, w) - 2 * di) / (2 * (p - args[i]))
        rot = _rot(args, i)
        if i == j:
            return (3 * di - _rd_3(*rot)) / (2 * (p - args[i]))
        q = [k for k in range(3) if k != i].index(j)
        rd_q = _rd_1(*rot) if q == 0 else _rd_2(*rot)
        return (_rj_1(x, y, z, p, w, j) - rd_q) / (2 * (p - args[i]))
    return d2


def _r2(a, b1, b2, z1, z2):
    """``R_{-a}(b1, b2; z1, z2) = z2^-a 2F1(a, b1; b1+b2; 1 - z1/z2)`` for real
    positive ``z1``, ``z2`` (19.16.20 family), with the larger of the two as
    ``z2`` so that the 2F1 argument is in [0, 1)."""
    swap = array_value(z1) > array_value(z2)
    hi = np.where(swap, z1, z2)
    lo = np.where(swap, z2, z1)
    u = 1 - lo / hi
    c = float(b1 + b2)
    f = np.where(swap, sc.hyp2f1(float(a), float(b2), c, u), sc.hyp2f1(float(a), float(b1), c, u))
    return in_dtype_of(hi ** (-a) * f, z1)


def _no_third(name):
    """The partial in ``m`` of a second ``m`` derivative: no rule (raises)."""
    def partial(*args):
        from chainrules.errors import MissingRuleError

        raise MissingRuleError(f"scipy.special.{name}: no third derivative in the parameter m "
                               "(the second is the complex step of R_D); differentiate at "
                               "most twice in m")
    return partial


def _register_m_partials(delta):
    """Rules of the ``m`` partials of ``F`` and ``E``, so that differentiating
    a derivative (``grad`` of ``grad``) uses the same formulas as the second
    partials: ``d/dphi dF/dm = s^2/(2 Delta^3)``, ``d/dphi dE/dm = -s^2/(2 Delta)``
    and their ``phi`` and ``m`` derivatives; the third ``m`` derivative raises."""
    from chainrules.derived import scalar_rule

    def sc_(phi):
        return np.sin(phi), np.cos(phi)

    def f_mp(phi, m, z):
        s, _ = sc_(phi)
        return in_dtype_of(s * s / (2 * delta(phi, m) ** 3), z)

    def f_mpp(phi, m, z):
        s, c = sc_(phi)
        d = delta(phi, m)
        return in_dtype_of(s * c / d ** 3 + 1.5 * m * s ** 3 * c / d ** 5, z)

    def f_mmp(phi, m, z):
        s, _ = sc_(phi)
        return in_dtype_of(0.75 * s ** 4 / delta(phi, m) ** 5, z)

    def e_mp(phi, m, z):
        s, _ = sc_(phi)
        return in_dtype_of(-s * s / (2 * delta(phi, m)), z)

    def e_mpp(phi, m, z):
        s, c = sc_(phi)
        d = delta(phi, m)
        return in_dtype_of(-s * c / d - m * s ** 3 * c / (2 * d ** 3), z)

    def e_mmp(phi, m, z):
        s, _ = sc_(phi)
        return in_dtype_of(-0.25 * s ** 4 / delta(phi, m) ** 3, z)

    no_f, no_e = _no_third("ellipkinc"), _no_third("ellipeinc")
    scalar_rule(ellipkinc_dm, f_mp, lambda phi, m, z: ellipkinc_dmm(phi, m),
                second=(f_mpp, f_mmp, no_f), saves="xyz")
    scalar_rule(ellipeinc_dm, e_mp, lambda phi, m, z: ellipeinc_dmm(phi, m),
                second=(e_mpp, e_mmp, no_e), saves="xyz")
    scalar_rule(ellipkinc_dmm, f_mmp, no_f, saves="xyz")
    scalar_rule(ellipeinc_dmm, e_mmp, no_e, saves="xyz")


def _register():
    from chainrules.derived import scalar_rule

    # -- elliptic integrals ------------------------------------------------------------------
    scalar_rule(sc.ellipk, lambda m, y: _ellipk_d(m), second=lambda m, y: _ellipk_dd(m),
                saves="x")
    scalar_rule(sc.ellipe, lambda m, y: _ellipe_d(m), second=lambda m, y: _ellipe_dd(m),
                saves="x")
    scalar_rule(sc.ellipkm1, _ellipkm1_d, second=_ellipkm1_dd, saves="xy")

    def delta(phi, m):
        s = np.sin(phi)
        return np.sqrt(1 - m * s * s)

    scalar_rule(sc.ellipkinc, lambda phi, m, z: 1 / delta(phi, m),
                lambda phi, m, z: ellipkinc_dm(phi, m),
                second=(lambda phi, m, z: m * np.sin(phi) * np.cos(phi) / delta(phi, m) ** 3,
                        lambda phi, m, z: np.sin(phi) ** 2 / (2 * delta(phi, m) ** 3),
                        lambda phi, m, z: ellipkinc_dmm(phi, m)), saves="xy")
    scalar_rule(sc.ellipeinc, lambda phi, m, z: delta(phi, m),
                lambda phi, m, z: ellipeinc_dm(phi, m),
                second=(lambda phi, m, z: -m * np.sin(phi) * np.cos(phi) / delta(phi, m),
                        lambda phi, m, z: -np.sin(phi) ** 2 / (2 * delta(phi, m)),
                        lambda phi, m, z: ellipeinc_dmm(phi, m)), saves="xy")

    _register_m_partials(delta)

    # Carlson's forms
    def rc_real(x):
        real_only(x, "elliprc")
        return x

    scalar_rule(sc.elliprc, lambda x, y, z: -sc.elliprd(y, y, rc_real(x)) / 6,
                lambda x, y, z: -sc.elliprd(rc_real(x), y, y) / 3,
                second=(lambda x, y, z: 0.15 * _r2(2.5, 2.5, 1.0, rc_real(x), y),
                        lambda x, y, z: 0.1 * _r2(2.5, 1.5, 2.0, rc_real(x), y),
                        lambda x, y, z: 0.4 * _r2(2.5, 0.5, 3.0, rc_real(x), y)), saves="xy")

    def rf_d(k):
        return lambda x, y, z, w: -sc.elliprd(*_rot((x, y, z), k)) / 6

    def rf_dd(i, j):
        # d/dz_j of -R_D(others of i, z_i)/6
        def d2(x, y, z, w):
            rot = _rot((x, y, z), i)
            if i == j:
                return -_rd_3(*rot) / 6
            q = [k for k in range(3) if k != i].index(j)
            return -(_rd_1(*rot) if q == 0 else _rd_2(*rot)) / 6
        return d2

    scalar_rule(sc.elliprf, rf_d(0), rf_d(1), rf_d(2),
                second=tuple(rf_dd(i, j) for i in range(3) for j in range(i, 3)))
    scalar_rule(sc.elliprd,
                lambda x, y, z, w: _rd_1(x, y, z), lambda x, y, z, w: _rd_2(x, y, z),
                lambda x, y, z, w: _rd_3(x, y, z),
                second=(lambda x, y, z, w: _rd_11(x, y, z), lambda x, y, z, w: _rd_12(x, y, z),
                        lambda x, y, z, w: _rd_13(x, y, z), lambda x, y, z, w: _rd_22(x, y, z),
                        lambda x, y, z, w: _rd_23(x, y, z), lambda x, y, z, w: _rd_33(x, y, z)))

    def rg_d(k):
        def d(x, y, z, w):
            args = (x, y, z)
            return (3 * sc.elliprf(x, y, z) - args[k] * sc.elliprd(*_rot(args, k))) / 12
        return d

    scalar_rule(sc.elliprg, rg_d(0), rg_d(1), rg_d(2),
                second=tuple(_rg_2nd(i, j) for i in range(3) for j in range(i, 3)))
    scalar_rule(sc.elliprj,
                *(lambda x, y, z, p, w, k=k: _rj_1(x, y, z, p, w, k) for k in range(3)),
                lambda x, y, z, p, w: _rj_p(x, y, z, p, w),
                second=tuple(_rj_2nd(i, j) for i in range(4) for j in range(i, 4)))

    # agm(a, b) = sign / S(a^2, b^2), S = R_{-1/2}(1/2, 1/2; .) (19.8.5 with 19.16.20)
    def agm_parts(a, b, z):
        """``T = |agm|`` and the derivatives of ``S(A, B) = 1/T``:
        ``S_A = -R_{-3/2}(3/2, 1/2)/4``, ``S_B = -R_{-3/2}(1/2, 3/2)/4``."""
        aa, bb = a * a, b * b
        return (np.abs(z), -0.25 * _r2(1.5, 1.5, 0.5, aa, bb), -0.25 * _r2(1.5, 0.5, 1.5, aa, bb))

    def agm_da(a, b, z):
        t, s_a, _ = agm_parts(a, b, z)
        return np.sign(z) * (-2 * a * t * t * s_a)

    def agm_db(a, b, z):
        t, _, s_b = agm_parts(a, b, z)
        return np.sign(z) * (-2 * b * t * t * s_b)

    def agm_daa(a, b, z):
        t, s_a, _ = agm_parts(a, b, z)
        s_aa = (9 / 32) * _r2(2.5, 2.5, 0.5, a * a, b * b)
        t_a = -2 * a * t * t * s_a
        return np.sign(z) * (-2 * t * t * s_a - 4 * a * t * t_a * s_a - 4 * a * a * t * t * s_aa)

    def agm_dab(a, b, z):
        t, s_a, s_b = agm_parts(a, b, z)
        s_ab = (3 / 32) * _r2(2.5, 1.5, 1.5, a * a, b * b)
        t_b = -2 * b * t * t * s_b
        return np.sign(z) * (-4 * a * t * t_b * s_a - 4 * a * b * t * t * s_ab)

    def agm_dbb(a, b, z):
        t, _, s_b = agm_parts(a, b, z)
        s_bb = (9 / 32) * _r2(2.5, 0.5, 2.5, a * a, b * b)
        t_b = -2 * b * t * t * s_b
        return np.sign(z) * (-2 * t * t * s_b - 4 * b * t * t_b * s_b - 4 * b * b * t * t * s_bb)

    scalar_rule(sc.agm, agm_da, agm_db, second=(agm_daa, agm_dab, agm_dbb), saves="xyz")


if sc is not None:
    _register()

_family_loaded()
