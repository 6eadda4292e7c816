"""scipy.special's long tail beyond the spec sweep (rules/special_integrals.py,
special_odes.py, special_inverses.py): derivatives against mpmath and
against the functions' own derivative outputs, the arguments without a
closed form, the multi-output ufuncs as compositions, and the points where
SciPy's value is not the function (NaN or no rule)."""

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.errors import MissingRuleError

sc = pytest.importorskip("scipy.special")
mp = pytest.importorskip("mpmath")


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def _d2(f, x):
    return cr.grad(cr.grad(f))(x)


# -- Hankel and Kelvin functions ---------------------------------------------------------
@pytest.mark.parametrize("name", ["hankel1", "hankel2", "hankel1e", "hankel2e"])
@pytest.mark.parametrize("v, z", [(0.0, 1.3), (1.5, 0.7 + 0.5j), (-0.7, 2.0 - 0.4j)])
def test_hankel_derivatives_match_mpmath(name, v, z):
    f = getattr(sc, name)
    kind = 1 if "1" in name else 2
    scale = {"hankel1e": -1j, "hankel2e": 1j}.get(name, 0)

    def ref(z):
        h = mp.hankel1(v, z) if kind == 1 else mp.hankel2(v, z)
        return h * mp.exp(scale * z)

    mp.mp.dps = 30
    d1, d2 = complex(mp.diff(ref, z)), complex(mp.diff(ref, z, 2))
    _, t = cr.jvp(lambda z: f(v, z), (np.complex128(z),), (np.complex128(1.0),))
    assert abs(t - d1) <= 1e-10 * abs(d1)
    _, t2 = cr.jvp(lambda z: cr.jvp(lambda w: f(v, w), (z,), (np.complex128(1.0),))[1],
                   (np.complex128(z),), (np.complex128(1.0),))
    assert abs(t2 - d2) <= 1e-9 * abs(d2)


def test_hankel_of_a_real_argument_has_a_real_gradient_and_h1vp_traces():
    g = cr.grad(lambda x: np.real(sc.hankel1(1.5, x)))(1.2)
    assert isinstance(g, float) or np.asarray(g).dtype == np.float64
    np.testing.assert_allclose(g, np.real(sc.h1vp(1.5, 1.2)), rtol=1e-12)
    np.testing.assert_allclose(cr.grad(lambda x: np.imag(sc.h2vp(0.5, x)))(0.9),
                               np.imag(sc.h2vp(0.5, 0.9, 2)), rtol=1e-10)


def test_kelvin_is_the_composition_of_the_kelvin_rules():
    x = np.array([0.4, 1.3, 3.0])
    out, _ = cr.vjp(sc.kelvin, x)
    for got, ref in zip(out, sc.kelvin(x)):
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    g = cr.grad(lambda x: np.sum(np.imag(sc.kelvin(x)[1])))(x)
    np.testing.assert_allclose(g, sc.keip(x), rtol=1e-13)


# -- integrals ------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [0.3, 1.7, -1.2])
def test_integrals_differentiate_to_their_integrands(x):
    f, pairs = sc.itj0y0, [(0, sc.j0, lambda x: -sc.j1(x))]
    if x > 0:
        pairs.append((1, sc.y0, lambda x: -sc.y1(x)))
    for k, d1, d2 in pairs:
        assert cr.grad(lambda x: f(x)[k])(x) == pytest.approx(d1(x), rel=1e-14)
        assert _d2(lambda x: f(x)[k], x) == pytest.approx(d2(x), rel=1e-14)
    assert cr.grad(lambda x: sc.iti0k0(x)[0])(x) == pytest.approx(sc.i0(x), rel=1e-14)
    assert cr.grad(sc.itstruve0)(x) == pytest.approx(sc.struve(0, x), rel=1e-14)
    assert _d2(sc.itmodstruve0, x) == pytest.approx(float(mp.diff(
        lambda t: mp.struvel(0, t), x)), rel=1e-12)
    assert _d2(sc.itstruve0, x) == pytest.approx(float(mp.diff(
        lambda t: mp.struveh(0, t), x)), rel=1e-12)
    for k, (ai, sign) in enumerate([(0, 1), (2, 1), (0, -1), (2, -1)]):
        assert cr.grad(lambda x: sc.itairy(x)[k])(x) == pytest.approx(
            sc.airy(sign * x)[ai], rel=1e-14)
        assert _d2(lambda x: sc.itairy(x)[k], x) == pytest.approx(
            sign * sc.airy(sign * x)[ai + 1], rel=1e-14)


@pytest.mark.parametrize("x", [1e-6, 1e-3, 0.4, 0.99, 1.01, 2.5, -0.6])
def test_cancelling_integrands_keep_their_digits_near_zero(x):
    mp.mp.dps = 40
    for k, ref in ((0, lambda t: (mp.besseli(0, t) - 1) / t),
                   (None, lambda t: (1 - mp.besselj(0, t)) / t)):
        f = (lambda x: sc.it2i0k0(x)[0]) if k == 0 else (lambda x: sc.it2j0y0(x)[0])
        assert cr.grad(f)(x) == pytest.approx(float(ref(mp.mpf(x))), rel=1e-13)
        assert _d2(f, x) == pytest.approx(float(mp.diff(ref, mp.mpf(x))), rel=1e-11)


def test_modified_fresnel_integrals():
    x = 0.8
    fp = cr.jvp(lambda x: sc.modfresnelp(x)[0], (x,), (1.0,))[1]
    assert fp == pytest.approx(-np.exp(1j * x * x), rel=1e-14)
    km = cr.jvp(lambda x: sc.modfresnelm(x)[1], (x,), (1.0,))[1]
    assert km == pytest.approx(_fd(lambda x: sc.modfresnelm(x)[1], x), rel=1e-8)
    # SciPy's fp is not the integral at x < 0: no derivative there; kp is right
    assert np.isnan(cr.grad(lambda x: np.real(sc.modfresnelp(x)[0]))(-0.5))
    g = cr.grad(lambda x: np.imag(sc.modfresnelp(x)[1]))(-0.5)
    assert g == pytest.approx(_fd(lambda x: np.imag(sc.modfresnelp(x)[1]), -0.5), rel=1e-8)


def test_besselpoly_in_a():
    for a, lm, nu in ((0.7, 0.0, 0.0), (1.3, 1.5, -0.5), (2.0, 0.5, 2.5)):
        g = cr.grad(lambda a: sc.besselpoly(a, lm, nu))(a)
        mp.mp.dps = 30
        ref = mp.quad(lambda t: t ** lm * 2 * t * mp.diff(lambda s: mp.besselj(nu, s),
                                                           2 * a * t), [0, 1])
        assert g == pytest.approx(float(ref), rel=1e-11)
    with pytest.raises(MissingRuleError, match="order nu"):
        cr.grad(lambda nu: sc.besselpoly(0.7, 1.0, nu))(0.5)


# -- functions that return their derivative ----------------------------------------------
def test_parabolic_cylinder_second_derivatives_from_webers_equation():
    mp.mp.dps = 30
    for v, x in ((0.0, 0.4), (1.5, -1.2), (-0.6, 2.0)):
        d2 = _d2(lambda x: sc.pbdv(v, x)[0], x)
        assert d2 == pytest.approx(float(mp.diff(lambda t: mp.pcfd(v, t), x, 2)), rel=1e-9)
        assert cr.grad(lambda x: sc.pbdv(v, x)[0])(x) == sc.pbdv(v, x)[1]
    for a, x in ((0.5, 0.3), (-1.0, 1.1)):
        g = cr.grad(lambda x: sc.pbwa(a, x)[1])(x)
        assert g == pytest.approx((a - x * x / 4) * sc.pbwa(a, x)[0], rel=1e-14)
    with pytest.raises(MissingRuleError, match="order v"):
        cr.grad(lambda v: sc.pbvv(v, 0.5)[0])(1.0)


def test_mathieu_angle_in_degrees():
    m, q, x = 2, 1.3, 47.0
    g = cr.grad(lambda x: sc.mathieu_cem(m, q, x)[0])(x)
    assert g == pytest.approx(math.pi / 180 * sc.mathieu_cem(m, q, x)[1], rel=1e-14)
    assert g == pytest.approx(_fd(lambda x: sc.mathieu_cem(m, q, x)[0], x, 1e-4), rel=1e-8)
    h = _d2(lambda x: sc.mathieu_sem(m, q, x)[1], x)
    ref = _fd(lambda x: cr.grad(lambda t: sc.mathieu_sem(m, q, t)[1])(x), x, 1e-4)
    assert h == pytest.approx(ref, rel=1e-7)
    g = cr.grad(lambda x: sc.mathieu_modcem1(m, q, x)[1])(0.6)
    assert g == pytest.approx(_fd(lambda x: sc.mathieu_modcem1(m, q, x)[1], 0.6), rel=1e-7)
    with pytest.raises(MissingRuleError, match="parameter q"):
        cr.grad(lambda q: sc.mathieu_cem(m, q, x)[0])(q)


def test_jacobi_elliptic_functions_in_u():
    u, m = 0.8, 0.6
    sn, cn, dn, ph = sc.ellipj(u, m)
    grads = [cr.grad(lambda u: sc.ellipj(u, m)[k])(u) for k in range(4)]
    np.testing.assert_allclose(grads, [cn * dn, -sn * dn, -m * sn * cn, dn], rtol=1e-14)
    mp.mp.dps = 30
    ref = float(mp.diff(lambda t: mp.ellipfun("sn", t, m=m), u, 2))
    assert _d2(lambda u: sc.ellipj(u, m)[0], u) == pytest.approx(ref, rel=1e-10)


def _jacobi_ref(k, u, m):
    """mpmath's sn, cn, dn, am at ``(u, m)`` (``am`` by solving ``F(am|m) = u``)."""
    if k == 3:
        return mp.findroot(lambda p: mp.ellipf(p, m) - u, mp.mpf(u))
    return mp.ellipfun("sn cn dn".split()[k], u, m=m)


def _jacobi_derivs(k, u, m):
    """The gradient and Hessian in ``(u, m)`` of output ``k`` by mpmath."""
    def d(nu, nm):
        return float(mp.re(mp.diff(lambda a, b: _jacobi_ref(k, a, b),
                                   (mp.mpf(u), mp.mpf(m)), (nu, nm))))
    return np.array([d(1, 0), d(0, 1)]), np.array([[d(2, 0), d(1, 1)], [d(1, 1), d(0, 2)]])


# u past a quarter period (am beyond pi/2, the whole periods of dF/dm), m close
# to 0 and to 1, and m = 0 and m = 1 themselves: the limit values there
@pytest.mark.parametrize("u, m", [(0.8, 0.6), (5.0, 0.9), (-3.7, 0.05), (10.0, 0.5),
                                  (0.3, 1e-6), (1e-3, 0.4), (0.8, 0.999), (1.5, 1 - 1e-7),
                                  (0.05, 1 - 1e-7), (0.8, 0.0), (7.0, 0.0), (2.5, 1.0),
                                  (0.3, 1.0)])
def test_jacobi_elliptic_functions_in_m_match_mpmath(u, m):
    mp.mp.dps = 40
    x = np.array([u, m])
    for k in range(4):
        if k == 3 and m == 1.0:
            continue  # (am(u|1) = gd(u): checked below by its closed form)
        g_ref, h_ref = _jacobi_derivs(k, u, m)
        f = lambda x, k=k: sc.ellipj(x[0], x[1])[k]  # noqa: E731
        np.testing.assert_allclose(cr.grad(f)(x), g_ref, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(cr.hessian(f)(x), h_ref, rtol=1e-9, atol=1e-14)


def test_jacobi_amplitude_in_m_matches_legendre_form_and_limits():
    u, m = 1.3, 0.7
    sn, cn, dn, ph = sc.ellipj(u, m)
    legendre = (m * sn * cn - dn * (sc.ellipeinc(ph, m) - (1 - m) * u)) / (2 * m * (1 - m))
    assert cr.grad(lambda m: sc.ellipj(u, m)[3])(m) == pytest.approx(legendre, rel=1e-12)
    # m = 0: am = u - m (u - sin u cos u)/4 + O(m^2)
    ref = -(u - math.sin(u) * math.cos(u)) / 4
    assert cr.grad(lambda m: sc.ellipj(u, m)[3])(0.0) == pytest.approx(ref, rel=1e-13)
    # m = 1: am = gd(u) and, from dF/dm = (tan phi sec phi - log(sec phi + tan phi))/4
    # at phi = gd(u), d am/dm = -(sinh u cosh u - u)/(4 cosh u)
    ref = -(math.sinh(u) * math.cosh(u) - u) / (4 * math.cosh(u))
    assert cr.grad(lambda m: sc.ellipj(u, m)[3])(1.0) == pytest.approx(ref, rel=1e-13)


def test_jacobi_elliptic_hvp_matches_finite_differences_of_the_gradient():
    rng = np.random.default_rng(3)
    u, m = rng.uniform(-4, 4, 5), rng.uniform(0.05, 0.95, 5)
    x, v = np.concatenate([u, m]), rng.standard_normal(10)

    def f(x):
        sn, cn, dn, ph = sc.ellipj(x[:5], x[5:])
        return np.sum(sn * cn + dn ** 2 - ph * sn)

    fd = (cr.grad(f)(x + 1e-6 * v) - cr.grad(f)(x - 1e-6 * v)) / 2e-6
    hv = cr.hvp(f, x, v)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)
    h = cr.hessian(f)(x)
    np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h @ v, hv, rtol=1e-10, atol=1e-12)


def test_jacobi_elliptic_in_m_outside_zero_one_is_nan_like_the_value():
    for m in (-0.5, 1.5):
        assert np.isnan(sc.ellipj(0.8, m)[0])
        for k in range(4):
            assert np.isnan(cr.grad(lambda m: sc.ellipj(0.8, m)[k])(m))
            assert np.isnan(_d2(lambda m: sc.ellipj(0.8, m)[k], m))


def test_jacobi_elliptic_in_m_float32_stays_float32():
    m = np.array([0.3, 0.5], np.float32)
    g = cr.grad(lambda m: np.sum(sc.ellipj(np.float32(0.8), m)[2]))(m)
    assert g.dtype == np.float32
    ref = cr.grad(lambda m: np.sum(sc.ellipj(0.8, m)[2]))(m.astype(np.float64))
    np.testing.assert_allclose(g, ref, rtol=1e-5)


@pytest.mark.parametrize("phi, m", [(1e-3, 0.99), (0.05, 1 - 1e-5), (0.5, 1 - 1e-8), (1.2, 1.0),
                                    (1e-3, -0.3), (2.9, 0.7), (-4.0, 0.3), (7.0, 0.0)])
def test_incomplete_elliptic_second_derivative_in_m_matches_mpmath(phi, m):
    """Near ``m = 1`` and at small ``phi`` Legendre's forms cancel; the complex
    step through ``R_D`` does not."""
    mp.mp.dps = 40
    for f, ref in ((sc.ellipkinc, mp.ellipf), (sc.ellipeinc, mp.ellipe)):
        want = float(mp.diff(lambda t: ref(mp.mpf(phi), t), mp.mpf(m), 2))
        assert _d2(lambda m: f(phi, m), m) == pytest.approx(want, rel=1e-12)


def test_lpmv_in_x():
    mp.mp.dps = 30
    for m, v, x in ((0, 2.5, 0.3), (1, 1.7, -0.6), (2, 3.0, 0.85)):
        # SciPy's P_v^m and mpmath's legenp (Ferrers, type 2) share the phase (-1)^m
        ref = mp.diff(lambda t: mp.legenp(v, m, t), x)
        assert cr.grad(lambda x: sc.lpmv(m, v, x))(x) == pytest.approx(float(ref), rel=1e-10)
        ref2 = mp.diff(lambda t: mp.legenp(v, m, t), x, 2)
        assert _d2(lambda x: sc.lpmv(m, v, x), x) == pytest.approx(float(ref2), rel=1e-9)
    with pytest.raises(MissingRuleError, match="degree v"):
        cr.grad(lambda v: sc.lpmv(1, v, 0.3))(1.5)


def test_spheroidal_functions_in_x():
    m, n, c = 1, 2, 1.5
    for name, x in (("pro_ang1", 0.4), ("pro_rad1", 1.6), ("obl_ang1", -0.3),
                    ("obl_rad1", 0.8)):
        f = getattr(sc, name)
        assert cr.grad(lambda x: f(m, n, c, x)[0])(x) == f(m, n, c, x)[1]
        h = _d2(lambda x: f(m, n, c, x)[0], x)
        assert h == pytest.approx(_fd(lambda x: f(m, n, c, x)[1], x), rel=1e-7)
        cv = getattr(sc, name[:3] + "_cv")(m, n, c)
        g = cr.grad(lambda x: getattr(sc, name + "_cv")(m, n, c, cv, x)[1])(x)
        assert g == pytest.approx(_fd(lambda x: f(m, n, c, x)[1], x), rel=1e-7)
    with pytest.raises(MissingRuleError, match="spheroidal parameter c"):
        cr.grad(lambda c: sc.pro_ang1(m, n, c, 0.4)[0])(c)


# -- distributions and inverses ----------------------------------------------------------
def test_chndtr_derivatives_are_noncentral_densities():
    stats = pytest.importorskip("scipy.stats")
    x, k, nc = 1.7, 2.5, 0.9
    assert cr.grad(lambda x: sc.chndtr(x, k, nc))(x) == pytest.approx(
        stats.ncx2.pdf(x, k, nc), rel=1e-12)
    assert cr.grad(lambda nc: sc.chndtr(x, k, nc))(nc) == pytest.approx(
        -stats.ncx2.pdf(x, k + 2, nc), rel=1e-12)
    # at nc = 0, the central densities
    assert cr.grad(lambda x: sc.chndtr(x, k, 0.0))(x) == pytest.approx(
        stats.chi2.pdf(x, k), rel=1e-12)
    assert cr.grad(lambda nc: sc.chndtr(x, k, nc))(0.0) == pytest.approx(
        -stats.chi2.pdf(x, k + 2), rel=1e-12)
    p = sc.chndtr(x, k, nc)
    assert cr.grad(lambda p: sc.chndtrix(p, k, nc))(p) == pytest.approx(
        1 / stats.ncx2.pdf(x, k, nc), rel=1e-9)
    g = cr.grad(lambda x: sc.chndtrinc(x, k, p))(x)
    assert g == pytest.approx(_fd(lambda x: sc.chndtrinc(x, k, p), x), rel=1e-7)
    with pytest.raises(MissingRuleError, match="degrees of freedom"):
        cr.grad(lambda k: sc.chndtr(x, k, nc))(k)


def test_noncentral_inverses_by_the_implicit_function_theorem():
    df, nc, p = 4.0, 0.6, 0.35
    t = sc.nctdtrit(df, nc, p)
    for f, x in ((lambda p: sc.nctdtrit(df, nc, p), p), (lambda nc: sc.nctdtrit(df, nc, p), nc),
                 (lambda t: sc.nctdtrinc(df, p, t), t),
                 (lambda nc: sc.ncfdtri(3.0, 5.0, nc, p), nc)):
        assert cr.grad(f)(x) == pytest.approx(_fd(f, x), rel=1e-7)
        assert _d2(f, x) == pytest.approx(_fd(cr.grad(f), x, 1e-5), rel=1e-6)
    # SciPy's ncfdtrinc is not smooth: no rule
    with pytest.raises(MissingRuleError):
        cr.grad(lambda p: sc.ncfdtrinc(3.0, 5.0, p, 1.2))(0.4)


def test_normal_inverses_in_mean_and_deviation():
    p, s, x, m = 0.3, 1.4, 0.2, -0.5
    z = sc.ndtri(p)
    phi = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    g = cr.grad(lambda p, s, x: sc.nrdtrimn(p, s, x), argnums=(0, 1, 2))(p, s, x)
    np.testing.assert_allclose(g, [-s / phi, -z, 1.0], rtol=1e-12)
    g = cr.grad(lambda m, p, x: sc.nrdtrisd(m, p, x), argnums=(0, 1, 2))(m, p, x)
    np.testing.assert_allclose(g, [-1 / z, -(x - m) / (z * z * phi), 1 / z], rtol=1e-12)
    f = lambda p: sc.nrdtrisd(m, p, x)  # noqa: E731
    assert _d2(f, p) == pytest.approx(_fd(cr.grad(f), p, 1e-5), rel=1e-7)


@pytest.mark.parametrize("lm", [-0.3, 0.0, 0.5, 1.4])
def test_tukey_lambda(lm):
    x = 0.25
    p = sc.tklmbda(x, lm)
    qp = p ** (lm - 1) + (1 - p) ** (lm - 1)
    assert cr.grad(lambda x: sc.tklmbda(x, lm))(x) == pytest.approx(1 / qp, rel=1e-10)
    # in lambda: SciPy computes |lambda| < 1e-4 as 0, so difference over 1e-3
    mp.mp.dps = 30

    def quantile(l):
        return ((p ** l - (1 - p) ** l) / l if l != 0
                else mp.log(p) - mp.log(1 - p))
    q_l = mp.diff(quantile, mp.mpf(lm)) if lm != 0 else (
        (mp.log(p) ** 2 - mp.log(1 - p) ** 2) / 2)
    g = cr.grad(lambda l: sc.tklmbda(x, l))(lm)
    assert g == pytest.approx(float(-q_l / qp), rel=1e-9)
    assert g == pytest.approx(_fd(lambda l: sc.tklmbda(x, l), lm, 1e-3), rel=1e-5)


def test_still_without_a_rule():
    with pytest.raises(MissingRuleError):
        cr.grad(sc.zetac)(2.5)
    with pytest.raises(MissingRuleError):
        cr.grad(lambda x: sc.obl_rad2(1, 2, 1.0, x)[0])(1.5)
    with pytest.raises(MissingRuleError):
        cr.grad(lambda q: sc.mathieu_a(2, q))(1.0)


def test_elliptic_m_derivatives_differentiated_again():
    """``grad`` of ``grad`` goes through the rules of the ``m`` partials: the same
    values as the Hessian, the ``phi``-``m`` cross terms against finite
    differences, and no third derivative in ``m``."""
    for f, x in ((sc.ellipkinc, np.array([2.2, 0.6])), (sc.ellipeinc, np.array([-0.7, 0.3])),
                 (lambda u, m: sc.ellipj(u, m)[1], np.array([3.1, 0.45]))):
        g = lambda x, f=f: f(x[0], x[1])  # noqa: E731
        h = cr.hessian(g)(x)
        dm = lambda x, g=g: cr.grad(g)(x)[1]  # noqa: E731
        np.testing.assert_allclose(cr.grad(dm)(x), h[1], rtol=1e-12)
        e = np.array([1e-6, 0.0])
        assert h[0, 1] == pytest.approx((dm(x + e) - dm(x - e)) / 2e-6, rel=1e-7)
        in_m = lambda m, f=f, u=x[0]: f(u, m)  # noqa: E731
        with pytest.raises(MissingRuleError, match="third derivative"):
            cr.grad(cr.grad(cr.grad(in_m)))(x[1])
