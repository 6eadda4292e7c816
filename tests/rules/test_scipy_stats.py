"""chainrules.scipy.stats: values against scipy.stats (rtol 1e-12, nan and
inf at the same places) over grids that include points outside the support
and parameters outside their domain; gradients with respect to x and every
continuous parameter against finite differences (including the asymptotic
branches); HVPs; finite gradients next to out-of-domain elements; input
kinds; broadcasting; multivariate_normal's singular cases; rvs refusing
traced parameters; the plain SciPy call's error naming the twin.

The rule sweep (tests/rules/test_sweep.py, family ``scipy_stats``) checks
every method on random inputs inside the support in every mode.
"""

import warnings

import numpy as np
import pytest

import chainrules as cr

ss = pytest.importorskip("scipy.stats")
from chainrules.scipy import stats  # noqa: E402

warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

CONT_METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")
X = np.array([-np.inf, -5.0, -2.5, -1.0, -0.3, 0.0, 0.2, 0.5, 0.9, 1.0, 1.7, 3.0, 6.0,
              np.inf, np.nan])
# shape parameters: inside the domain (both sides of every formula switch) and outside
CONTINUOUS = {
    "norm": [()],
    "t": [(0.7,), (1.0,), (3.5,), (40.0,), (150.0,), (np.inf,), (-1.0,), (np.nan,)],
    "gamma": [(0.5,), (1.0,), (2.5,), (300.0,), (-1.0,), (0.0,)],
    "beta": [(0.5, 0.8), (2.0, 3.0), (1.0, 1.0), (0.0, 2.0), (2.0, -1.0)],
    "chi2": [(1.0,), (3.0,), (300.0,), (0.0,)],
    "expon": [()],
    "laplace": [()],
    "logistic": [()],
    "cauchy": [()],
    "lognorm": [(0.5,), (1.2,), (-0.1,)],
    "uniform": [()],
    "invgamma": [(0.5,), (2.0,), (250.0,), (-2.0,)],
}
LOC_SCALE = [(0.0, 1.0), (0.4, 2.5), (-0.2, 0.7), (0.0, -1.0), (0.0, 0.0), (np.nan, 1.0)]

K = np.array([-np.inf, -3, -1, 0, 0.5, 1, 2, 3, 4.7, 5, 6, 10, 30, np.inf, np.nan])
DISCRETE = {
    "poisson": [(0.0,), (0.3,), (2.5,), (12.0,), (-1.0,)],
    "binom": [(5, 0.3), (5, 0.0), (5, 1.0), (10, 0.77), (4.5, 0.3), (-1, 0.3), (5, 1.2)],
    "nbinom": [(2.5, 0.4), (1, 0.9), (7.0, 1.0), (0.0, 0.5), (3.0, 0.0)],
    "geom": [(0.3,), (1.0,), (0.01,), (0.0,), (1.5,)],
    "bernoulli": [(0.0,), (0.3,), (1.0,), (-0.1,)],
}
DISCRETE_METHODS = ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf")


def _same(a, b, rtol=1e-12):
    """Equal to rtol, with nan and +-inf at the same places."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b))
    np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
    fin = np.isfinite(b)
    np.testing.assert_allclose(a[fin], b[fin], rtol=rtol, atol=0)


def _fd(f, x, h=1e-6):
    """Central differences of a scalar function of an array (or a float), the
    step relative to each element's size."""
    x = np.asarray(x, float)
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = step = h * max(1.0, abs(float(x[idx])))
        out[idx] = (f(x + e) - f(x - e)) / (2 * step)
    return out


# -- values -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@pytest.mark.parametrize("method", CONT_METHODS + ("entropy",))
def test_continuous_values_match_scipy(name, method):
    mine, ref = getattr(getattr(stats, name), method), getattr(getattr(ss, name), method)
    for shp in CONTINUOUS[name]:
        for loc, scale in LOC_SCALE:
            args = shp if method == "entropy" else (X,) + shp
            with np.errstate(all="ignore"):
                _same(mine(*args, loc=loc, scale=scale), ref(*args, loc=loc, scale=scale))


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_values_match_scipy(name):
    methods = DISCRETE_METHODS + (("entropy",) if name in ("geom", "bernoulli") else ())
    for method in methods:
        mine, ref = getattr(getattr(stats, name), method), getattr(getattr(ss, name), method)
        for shp in DISCRETE[name]:
            for loc in (0, 2):
                args = shp if method == "entropy" else (K,) + shp
                with np.errstate(all="ignore"):
                    _same(mine(*args, loc=loc), ref(*args, loc=loc))


def test_values_broadcast_parameters_against_x():
    x = np.linspace(0.1, 3.0, 4)
    a = np.array([[0.5], [2.0], [-1.0]])
    scale = np.array([[[1.0]], [[2.0]]])
    for m in CONT_METHODS:
        out = getattr(stats.gamma, m)(x, a, scale=scale)
        assert out.shape == (2, 3, 4)
        _same(out, getattr(ss.gamma, m)(x, a, scale=scale))
    _same(stats.norm.entropy(loc=[0.0, 1.0], scale=[[1.0], [2.0]]),
          ss.norm.entropy(loc=[0.0, 1.0], scale=[[1.0], [2.0]]))
    _same(stats.binom.pmf(np.arange(4)[:, None], [3, 5], 0.3),
          ss.binom.pmf(np.arange(4)[:, None], [3, 5], 0.3))


def test_keywords_positional_and_frozen_forms_agree():
    x = np.array([0.3, 1.1, 2.5])
    ref = ss.gamma.logpdf(x, 2.0, loc=0.1, scale=1.5)
    _same(stats.gamma.logpdf(x, 2.0, 0.1, 1.5), ref)
    _same(stats.gamma.logpdf(x, a=2.0, loc=0.1, scale=1.5), ref)
    _same(stats.gamma(2.0, loc=0.1, scale=1.5).logpdf(x), ref)
    _same(stats.gamma(2.0, scale=1.5).entropy(), ss.gamma(2.0, scale=1.5).entropy())
    _same(stats.poisson(2.5).pmf(np.arange(4)), ss.poisson(2.5).pmf(np.arange(4)))
    with pytest.raises(TypeError, match="chainrules.scipy.stats.gamma.logpdf"):
        stats.gamma.logpdf(x)                                   # a is required
    with pytest.raises(TypeError):
        stats.norm.logpdf(x, 0.0, 1.0, 3.0)                    # too many
    with pytest.raises(AttributeError, match="no differentiable 'ppf'"):
        stats.norm.ppf


def test_multivariate_normal_values_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    full = a @ a.T + 0.5 * np.eye(3)
    b = rng.normal(size=(3, 2))
    rank2 = b @ b.T
    mean = np.array([0.1, -0.2, 0.3])
    on_support = mean + rng.normal(size=(4, 2)) @ b.T
    for x in (rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(2, 5, 3))):
        for m in ("logpdf", "pdf"):
            mine, ref = getattr(stats.multivariate_normal, m), getattr(ss.multivariate_normal, m)
            _same(mine(x, mean, full), ref(x, mean, full))
            _same(mine(x, mean, full, allow_singular=True),
                  ref(x, mean, full, allow_singular=True))
            _same(mine(x, mean, [1.0, 2.0, 3.0]), ref(x, mean, [1.0, 2.0, 3.0]))
            _same(mine(x, mean, 2.5), ref(x, mean, 2.5))
            _same(mine(x, cov=full), ref(x, cov=full))
            for xx in (x, on_support):
                _same(mine(xx, mean, rank2, allow_singular=True),
                      ref(xx, mean, rank2, allow_singular=True))
                _same(mine(xx, mean, [1.0, 0.0, 2.0], allow_singular=True),
                      ref(xx, mean, [1.0, 0.0, 2.0], allow_singular=True))
    for x in (0.3, np.array([0.3, 1.2, -2.0])):                  # one dimension
        _same(stats.multivariate_normal.logpdf(x, 0.5, 2.0),
              ss.multivariate_normal.logpdf(x, 0.5, 2.0))
        _same(stats.multivariate_normal.logpdf(x), ss.multivariate_normal.logpdf(x))
        _same(stats.multivariate_normal.pdf(x, cov=[[2.0]]),
              ss.multivariate_normal.pdf(x, cov=[[2.0]]))
    for cov in (full, rank2, np.array([1.0, 0.0, 2.0]), 3.0):
        _same(stats.multivariate_normal.entropy(mean, cov),
              ss.multivariate_normal.entropy(mean, cov))
    frozen = stats.multivariate_normal(mean, full)
    _same(frozen.logpdf(on_support), ss.multivariate_normal(mean, full).logpdf(on_support))
    _same(frozen.entropy(), ss.multivariate_normal(mean, full).entropy())


def test_multivariate_normal_raises_like_scipy():
    rng = np.random.default_rng(1)
    b = rng.normal(size=(3, 2))
    x, mean = rng.normal(size=3), np.zeros(3)
    a = rng.normal(size=(3, 3))
    indefinite = a + a.T
    cases = [(b @ b.T, {}), (np.array([1.0, 0.0, 2.0]), {}), (-np.eye(3), {}),
             (np.diag([1.0, -1.0, 2.0]), {"allow_singular": True}),
             (np.array([1.0, -1.0, 2.0]), {"allow_singular": True}),
             (np.ones((2, 3)), {}), (np.ones((3, 3, 3)), {}),
             (np.eye(3) * 1e-30 + np.diag([1.0, 1.0, 0.0]), {})]
    if np.min(np.linalg.eigvalsh(indefinite)) < 0:
        cases.append((indefinite, {}))
    for cov, kw in cases:
        with pytest.raises(Exception) as theirs:
            ss.multivariate_normal.logpdf(x, mean, cov, **kw)
        with pytest.raises(type(theirs.value)) as mine:
            stats.multivariate_normal.logpdf(x, mean, cov, **kw)
        assert str(mine.value) == str(theirs.value)
    # a nearly singular covariance that Cholesky accepts: SciPy's threshold decides
    v = np.diag([1.0, 1.0, 1e-12])
    with pytest.raises(np.linalg.LinAlgError):
        ss.multivariate_normal.logpdf(x, mean, v)
    with pytest.raises(np.linalg.LinAlgError):
        stats.multivariate_normal.logpdf(x, mean, v)


def test_dirichlet_values_and_errors_match_scipy():
    alpha = np.array([0.7, 2.0, 3.5])
    for x in (np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3]),
              np.array([[0.2, 0.1], [0.3, 0.6], [0.5, 0.3]]), np.array([[0.2, 0.1], [0.3, 0.6]]),
              np.array([0.0, 0.4, 0.6])[::-1]):
        for m in ("logpdf", "pdf"):
            _same(getattr(stats.dirichlet, m)(x, alpha), getattr(ss.dirichlet, m)(x, alpha))
    _same(stats.dirichlet.entropy(alpha), ss.dirichlet.entropy(alpha))
    _same(stats.dirichlet(alpha).logpdf([0.2, 0.3]), ss.dirichlet(alpha).logpdf([0.2, 0.3]))
    for x, a in [([0.2, 0.3, 0.6], alpha), ([0.0, 0.5, 0.5], alpha), ([0.2, 0.8], [1, -1, 2.0]),
                 ([0.2, 0.3, 0.1, 0.4], alpha), ([-0.2, 0.7, 0.5], alpha),
                 ([0.2, 0.3], [[1.0, 2.0, 3.0]])]:
        with pytest.raises(ValueError) as theirs:
            ss.dirichlet.logpdf(np.array(x), np.array(a))
        with pytest.raises(ValueError, match=".") as mine:
            stats.dirichlet.logpdf(np.array(x), np.array(a))
        assert str(mine.value) == str(theirs.value)


# -- gradients -----------------------------------------------------------------------------
# (distribution, method, x, shapes, loc, scale): points inside the support, with the
# asymptotic branches of the entropies and of t's log-gamma ratio
GRAD_CASES = [
    ("norm", "logpdf", [-1.3, 0.4, 2.2], (), 0.3, 1.7),
    ("norm", "logcdf", [-9.0, 0.4, 2.2], (), 0.3, 1.7),
    ("t", "logpdf", [-1.3, 0.4, 2.2], ([2.5, 60.0, 400.0],), 0.3, 1.7),
    ("t", "entropy", None, ([2.5, 60.0, 400.0],), 0.3, 1.7),
    ("gamma", "logpdf", [0.5, 1.4, 3.2], ([0.7, 3.0, 400.0],), 0.1, 1.2),
    ("gamma", "entropy", None, ([0.7, 3.0, 400.0],), 0.1, 1.2),
    ("beta", "logpdf", [0.2, 0.5, 0.8], ([0.7, 3.0, 2.0], [1.5, 0.8, 2.0]), 0.0, 1.0),
    ("beta", "entropy", None, ([0.7, 3.0, 6e6, 2.0], [1.5, 0.8, 7e6, 5e7]), 0.0, 1.0),
    ("chi2", "logpdf", [0.5, 1.4, 3.2], ([1.5, 5.0, 3.0],), 0.1, 1.2),
    ("chi2", "entropy", None, ([1.5, 5.0, 400.0],), 0.1, 1.2),
    ("invgamma", "logpdf", [0.5, 1.4, 3.2], ([1.5, 5.0, 3.0],), 0.1, 1.2),
    ("invgamma", "entropy", None, ([1.5, 5.0, 300.0],), 0.1, 1.2),
    ("expon", "logcdf", [0.2, 0.6, 4.0], (), 0.1, 1.2),
    ("laplace", "logsf", [-2.0, 0.4, 3.0], (), 0.1, 1.2),
    ("logistic", "logpdf", [-2.0, 0.4, 3.0], (), 0.1, 1.2),
    ("cauchy", "logpdf", [-3.0, 0.4, 1.9], (), 0.1, 1.2),
    ("cauchy", "logsf", [-3.0, 0.4, 1.9], (), 0.1, 1.2),
    ("lognorm", "logcdf", [0.3, 1.4, 3.2], ([0.5, 1.2, 0.8],), 0.1, 1.2),
    ("uniform", "logsf", [0.3, 0.6, 1.0], (), 0.1, 1.2),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[f"{c[0]}.{c[1]}" for c in GRAD_CASES])
def test_gradients_wrt_every_parameter_match_finite_differences(case):
    name, method, x, shapes, loc, scale = case
    fn = getattr(getattr(stats, name), method)
    args = [np.asarray(v, float) for v in ((x,) if x is not None else ()) + shapes]
    args += [np.float64(loc), np.float64(scale)]
    w = np.linspace(0.5, 1.5, np.size(fn(*args)))

    def f(*a):
        return np.sum(w * fn(*a[:-2], loc=a[-2], scale=a[-1]))

    grads = cr.grad(f, argnums=tuple(range(len(args))))(*args)
    for i, (a, g) in enumerate(zip(args, grads)):
        def fi(v, i=i):
            full = list(args)
            full[i] = v
            return f(*full)
        np.testing.assert_allclose(g, _fd(fi, a), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{name}.{method}: argument {i}")


@pytest.mark.parametrize("name, args", [
    ("poisson", ([0, 2, 5], [0.5, 2.0, 4.0])),
    ("binom", ([0, 2, 5], 7, [0.2, 0.5, 0.9])),
    ("nbinom", ([0, 2, 5], [0.7, 2.5, 4.0], [0.2, 0.5, 0.9])),
    ("geom", ([1, 2, 5], [0.2, 0.5, 0.9])),
    ("bernoulli", ([0, 1, 1], [0.2, 0.5, 0.9])),
])
def test_discrete_gradients_match_finite_differences(name, args):
    d = getattr(stats, name)
    k, rest = np.asarray(args[0]), [np.asarray(a) for a in args[1:]]
    cont = [i for i, a in enumerate(rest) if a.dtype.kind == "f"]
    methods = ("pmf", "logpmf") + (("cdf", "logcdf", "sf", "logsf", "entropy")
                                   if name in ("geom", "bernoulli") else ())
    for m in methods:
        fn = getattr(d, m)
        # bernoulli's sf is 0 at k = 1 (logsf -inf)
        kk = 0 * k if (name, m) in (("bernoulli", "sf"), ("bernoulli", "logsf")) else k
        for i in cont:
            def f(v, m=m, i=i, kk=kk):
                full = list(rest)
                full[i] = v
                return np.sum(fn(*full) if m == "entropy" else fn(kk, *full))
            np.testing.assert_allclose(cr.grad(f)(rest[i]), _fd(f, rest[i]), rtol=1e-6,
                                       atol=1e-9, err_msg=f"{name}.{m}")


def test_hessians_match_finite_differences_of_the_gradient():
    x = np.array([-0.4, 0.9, 2.1])

    def nll(theta):
        return -np.sum(stats.t.logpdf(x, theta[0], loc=theta[1], scale=np.exp(theta[2])))

    theta = np.array([3.0, 0.2, -0.1])
    h = cr.hessian(nll)(theta)
    fd = np.stack([_fd(lambda v, j=j: cr.grad(nll)(v)[j], theta) for j in range(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-14)
    v = np.array([0.3, -1.0, 0.5])
    np.testing.assert_allclose(cr.hvp(nll, theta, v), h @ v, rtol=1e-10)


def test_multivariate_normal_gradients():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    mean = rng.normal(size=3)
    x = rng.normal(size=(4, 3))

    def f(x, mean, cov, allow_singular=False):
        return np.sum(stats.multivariate_normal.logpdf(x, mean, cov,
                                                       allow_singular=allow_singular))

    gx, gm, gc = cr.grad(f, argnums=(0, 1, 2))(x, mean, cov)
    # exact: d/dx = -cov^-1 (x - mean); d/dcov (lower triangle read by Cholesky)
    prec = np.linalg.inv(cov)
    np.testing.assert_allclose(gx, -(x - mean) @ prec, rtol=1e-10)
    np.testing.assert_allclose(gm, np.sum((x - mean) @ prec, axis=0), rtol=1e-10)
    sym = 0.5 * (-len(x) * prec + prec @ (x - mean).T @ (x - mean) @ prec)
    np.testing.assert_allclose(gc + gc.T - np.diag(np.diag(gc)), 2 * sym - np.diag(np.diag(sym)),
                               rtol=1e-9)
    # the eigendecomposition path agrees (the cotangent of a symmetric function)
    gx2, gm2, gc2 = cr.grad(lambda *a: f(*a, allow_singular=True), argnums=(0, 1, 2))(
        x, mean, cov)
    np.testing.assert_allclose(gx2, gx, rtol=1e-9)
    np.testing.assert_allclose(gm2, gm, rtol=1e-9)
    np.testing.assert_allclose(gc2 + gc2.T, gc + gc.T, rtol=1e-8, atol=1e-12)
    # diagonal and scalar covariances
    var = np.array([0.5, 1.5, 2.0])
    g = cr.grad(lambda v: f(x, mean, v))(var)
    np.testing.assert_allclose(g, _fd(lambda v: f(x, mean, v), var), rtol=1e-7)
    g = cr.grad(lambda s: f(x, mean, s))(1.7)
    np.testing.assert_allclose(g, _fd(lambda s: f(x, mean, s), 1.7), rtol=1e-7)
    # entropy: d/dcov log det = cov^-1
    ge = cr.grad(lambda c: stats.multivariate_normal.entropy(cov=c))(cov)
    np.testing.assert_allclose(ge + ge.T, prec, rtol=1e-9)


def test_multivariate_normal_singular_gradients_are_finite_and_correct():
    rng = np.random.default_rng(3)
    b = rng.normal(size=(3, 2))
    cov = b @ b.T
    mean = np.zeros(3)
    x = rng.normal(size=(5, 2)) @ b.T                    # on the support
    g = cr.grad(lambda m: np.sum(stats.multivariate_normal.logpdf(
        x, m, cov, allow_singular=True)))(mean)
    pinv = np.linalg.pinv(cov)
    np.testing.assert_allclose(g, np.sum(x @ pinv, axis=0), rtol=1e-7, atol=1e-9)
    # a repeated eigenvalue (a degenerate spectrum) gives the same gradient as Cholesky
    c = 2.0 * np.eye(3)
    y = rng.normal(size=(4, 3))
    ga = cr.grad(lambda c: np.sum(stats.multivariate_normal.logpdf(
        y, mean, c, allow_singular=True)))(c)
    gb = cr.grad(lambda c: np.sum(stats.multivariate_normal.logpdf(y, mean, c)))(c)
    assert np.all(np.isfinite(ga))
    np.testing.assert_allclose(ga + ga.T, gb + gb.T, rtol=1e-9, atol=1e-12)
    # a diagonal covariance with a zero variance: points off the support get -inf
    out = stats.multivariate_normal.logpdf(y, mean, [1.0, 0.0, 2.0], allow_singular=True)
    assert np.all(np.isneginf(out))
    gy = cr.grad(lambda v: np.sum(stats.multivariate_normal.logpdf(
        np.array([[0.3, 0.0, -1.0]]), mean, v, allow_singular=True)))(np.array([1.0, 0.0, 2.0]))
    assert np.all(np.isfinite(gy))


def test_dirichlet_gradients():
    alpha = np.array([0.7, 2.0, 3.5])
    x = np.array([[0.2, 0.1], [0.3, 0.6]])               # the third row is 1 - sum
    for f, v in [(lambda a: np.sum(stats.dirichlet.logpdf(x, a)), alpha),
                 (lambda a: stats.dirichlet.entropy(a), alpha),
                 (lambda y: np.sum(stats.dirichlet.logpdf(y, alpha)), x)]:
        np.testing.assert_allclose(cr.grad(f)(v), _fd(f, v), rtol=1e-6, atol=1e-9)


# -- out of the domain ---------------------------------------------------------------------
def _masked_loss(out, valid):
    return np.sum(out[valid])


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_out_of_domain_elements_leave_the_other_gradients_finite(name):
    d = getattr(stats, name)
    nshapes = len(CONTINUOUS[name][0])
    inside = {"beta": 0.4, "uniform": 0.4}.get(name, 0.9)
    x = np.array([inside, -3.0, inside, 7.0, inside, inside])
    shapes = [np.array([1.5, 1.5, -1.0, 1.5, 1.5, 1.5]) for _ in range(nshapes)]
    scale = np.array([1.0, 1.0, 1.0, 1.0, -1.0, 0.0])
    for m in CONT_METHODS:
        with np.errstate(all="ignore"):
            ref = getattr(ss, name)
            want = getattr(ref, m)(x, *shapes, loc=0.0, scale=scale)
        got = getattr(d, m)(x, *shapes, loc=0.0, scale=scale)
        _same(got, want)
        valid = np.isfinite(got)
        if name in ("t", "gamma", "chi2", "invgamma", "beta") and m in ("cdf", "logcdf", "sf",
                                                                            "logsf"):
            continue              # derivatives of gammainc/betainc: rules/special.py
        gx, gs = cr.grad(lambda x, s: _masked_loss(getattr(d, m)(x, *shapes, loc=0.0, scale=s),
                                                   valid), argnums=(0, 1))(x, scale)
        assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gs)), (m, gx, gs)
        assert np.all(gx[~valid] == 0) and np.all(gs[~valid] == 0)
        # and the valid elements' gradients are those computed without the others
        vx, vs = cr.grad(lambda x, s: np.sum(getattr(d, m)(
            x, *[a[valid] for a in shapes], loc=0.0, scale=s)), argnums=(0, 1))(
                x[valid], scale[valid])
        np.testing.assert_allclose(gx[valid], vx, rtol=1e-14)
        np.testing.assert_allclose(gs[valid], vs, rtol=1e-14)
        if nshapes:
            ga = cr.grad(lambda a: _masked_loss(getattr(d, m)(x, a, *shapes[1:], loc=0.0,
                                                              scale=scale), valid))(shapes[0])
            assert np.all(np.isfinite(ga)) and np.all(ga[~valid] == 0)


@pytest.mark.parametrize("name, bad", [("poisson", (np.array([2.0, -1.0, 3.0]),)),
                                       ("geom", (np.array([0.3, 1.5, 0.6]),)),
                                       ("bernoulli", (np.array([0.3, -0.5, 0.6]),)),
                                       ("nbinom", (np.array([2.0, 0.0, 3.0]),
                                                   np.array([0.4, 0.4, 1.2]))),
                                       ("binom", (np.array([5, 5, 5]),
                                                  np.array([0.3, 1.5, 0.6])))])
def test_discrete_out_of_domain_parameters(name, bad):
    d, ref = getattr(stats, name), getattr(ss, name)
    k = np.array([1, 1, 2])
    for m in ("pmf", "logpmf"):
        got = getattr(d, m)(k, *bad)
        _same(got, getattr(ref, m)(k, *bad))
        valid = np.isfinite(got)
        i = len(bad) - 1                                  # the last parameter is continuous
        g = cr.grad(lambda v: _masked_loss(getattr(d, m)(k, *bad[:i], v), valid))(bad[i])
        assert np.all(np.isfinite(g)) and np.all(g[~valid] == 0)


@pytest.mark.parametrize("spec", __import__(
    "chainrules.testing.specs.scipy_stats", fromlist=["PENDING_SPECS"]).PENDING_SPECS,
    ids=lambda s: s.label)
def test_pending_specs_sample_inside_the_support(spec):
    """The cdfs waiting for gammainc/gammaincc/betainc rules: their samples give
    finite values, and differentiating either works (then it is checked) or
    names the missing ufunc rule."""
    from hypothesis import given, settings, strategies as st

    from chainrules.testing import check_rule

    @settings(max_examples=3, deadline=None, database=None, derandomize=True)
    @given(st.data())
    def run(data):
        args, kw = spec.args(data.draw, np.dtype("float64"))
        out = spec.function()(*args, **kw)
        assert np.all(np.isfinite(out))
        try:
            check_rule(spec.op, *args, call=spec.call, wrt=spec.wrt, op_kwargs=kw,
                       modes=("rrule",), directions=1)
        except cr.MissingRuleError as e:
            assert any(f"scipy.special.{u} " in str(e)
                       for u in ("gammainc", "gammaincc", "betainc")), str(e)

    run()


# -- input kinds ----------------------------------------------------------------------------
def test_input_kinds():
    # Python floats and NumPy scalars give NumPy scalars, as SciPy
    for x in (0.7, np.float64(0.7), np.array(0.7)):
        out = stats.norm.logpdf(x, 0.1, 2.0)
        assert isinstance(out, np.float64) and out == ss.norm.logpdf(x, 0.1, 2.0)
    assert isinstance(stats.poisson.pmf(2, 1.5), np.float64)
    assert isinstance(stats.multivariate_normal.logpdf([0.1, 0.2], [0, 0], 1.0), np.float64)
    # size-1 and empty arrays
    assert stats.gamma.pdf(np.array([1.5]), 2.0).shape == (1,)
    assert stats.gamma.pdf(np.zeros((0, 3)), 2.0).shape == (0, 3)
    assert stats.poisson.logpmf(np.zeros((0,), int), 2.0).shape == (0,)
    # lists
    _same(stats.beta.cdf([0.2, 0.6], [1.5, 2.0], 3.0), ss.beta.cdf([0.2, 0.6], [1.5, 2.0], 3.0))
    # float32 stays float32 (SciPy returns float64), with float32 accuracy
    x32 = np.array([0.3, 1.2, 2.5], np.float32)
    for name, shapes in [("norm", ()), ("gamma", (np.float32(2.0),)),
                         ("lognorm", (np.float32(0.7),))]:
        for m in CONT_METHODS:
            out = getattr(getattr(stats, name), m)(x32, *shapes, loc=np.float32(0.1))
            assert out.dtype == np.float32, (name, m)
            np.testing.assert_allclose(out, getattr(getattr(ss, name), m)(
                x32, *shapes, loc=0.1), rtol=2e-5)
        g = cr.grad(lambda x: np.sum(getattr(getattr(stats, name), "logpdf")(x, *shapes)))(x32)
        assert g.dtype == np.float32
    assert stats.poisson.logpmf([1, 2], np.float32(2.0)).dtype == np.float32
    # gradients with respect to Python floats and 0-d arrays
    assert cr.grad(lambda s: stats.norm.logpdf(1.0, 0.0, s))(2.0) == pytest.approx(-0.375)
    assert cr.grad(lambda m: stats.norm.logpdf(1.0, m))(np.array(0.0)) == pytest.approx(1.0)


# -- rvs -------------------------------------------------------------------------------------
def test_rvs_calls_scipy_on_plain_values_and_refuses_traced_parameters():
    np.testing.assert_array_equal(stats.norm.rvs(1.0, 2.0, size=4, random_state=3),
                                  ss.norm.rvs(1.0, 2.0, size=4, random_state=3))
    np.testing.assert_array_equal(stats.gamma(2.0).rvs(size=3, random_state=1),
                                  ss.gamma(2.0).rvs(size=3, random_state=1))
    np.testing.assert_array_equal(
        stats.multivariate_normal.rvs([0.0, 1.0], np.eye(2), size=3, random_state=2),
        ss.multivariate_normal.rvs([0.0, 1.0], np.eye(2), size=3, random_state=2))
    with pytest.raises(cr.UntraceableError, match=r"loc \+ scale \* eps"):
        cr.grad(lambda m: np.sum(stats.norm.rvs(loc=m, size=3)))(0.5)
    with pytest.raises(cr.UntraceableError, match="reparameterised"):
        cr.grad(lambda a: np.sum(stats.gamma.rvs(a, size=3)))(2.0)
    with pytest.raises(cr.UntraceableError, match="cholesky"):
        cr.grad(lambda m: np.sum(stats.multivariate_normal.rvs(m, np.eye(2))))(np.zeros(2))
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda p: np.sum(stats.poisson.rvs(p, size=2)))(2.0)

    # the reparameterised form is differentiable
    eps = ss.norm.rvs(size=5, random_state=0)
    g = cr.grad(lambda t: np.sum(stats.norm.logpdf(t[0] + np.exp(t[1]) * eps)))(
        np.array([0.2, -0.3]))
    assert np.all(np.isfinite(g))


# -- the plain SciPy call names the twin -------------------------------------------------
def _hint_cases():
    out = []
    for name in CONTINUOUS:
        shp = tuple(float(v) for v in np.atleast_1d(CONTINUOUS[name][0])) if \
            CONTINUOUS[name][0] else ()
        x = 0.4
        for m in CONT_METHODS:
            out.append((name, m, lambda v, n=name, m=m, s=shp, x=x:
                        getattr(getattr(ss, n), m)(x, *s, loc=v)))
        out.append((name, "entropy", lambda v, n=name, s=shp:
                    getattr(getattr(ss, n), "entropy")(*s, scale=v)))
    disc = {"poisson": (2.0,), "binom": (5, 0.3), "nbinom": (2.5, 0.4), "geom": (0.3,),
            "bernoulli": (0.3,)}
    for name, shp in disc.items():
        for m in DISCRETE_METHODS + (("entropy",) if name in ("geom", "bernoulli") else ()):
            def call(v, n=name, m=m, s=shp):
                s = s[:-1] + (v,)                         # the last parameter traced
                return getattr(getattr(ss, n), m)(*s) if m == "entropy" else \
                    getattr(getattr(ss, n), m)(1, *s)
            out.append((name, m, call))
    mvn = ss.multivariate_normal
    out += [("multivariate_normal", "logpdf", lambda v: mvn.logpdf(v, [0.0, 0.0])),
            ("multivariate_normal", "pdf", lambda v: mvn.pdf([0.1, 0.2], v)),
            ("multivariate_normal", "entropy", lambda v: mvn.entropy(v, [1.0, 2.0])),
            ("dirichlet", "logpdf", lambda v: ss.dirichlet.logpdf([0.2, 0.8], v + 1)),
            ("dirichlet", "pdf", lambda v: ss.dirichlet.pdf([0.2, 0.8], v + 1)),
            ("dirichlet", "entropy", lambda v: ss.dirichlet.entropy(v + 1))]
    return out


HINTS = _hint_cases()


@pytest.mark.parametrize("name, method, call", HINTS,
                         ids=[f"{n}.{m}" for n, m, _ in HINTS])
def test_plain_scipy_error_names_the_twin(name, method, call):
    arg = np.array([0.5, 0.6]) if name in ("multivariate_normal", "dirichlet") else 0.5
    if name == "dirichlet":
        arg = np.array([0.5, 0.6])
    with pytest.raises(cr.UntraceableError,
                       match=f"chainrules.scipy.stats.{name}.{method} instead"):
        cr.grad(lambda v: np.sum(call(v)))(arg)
    assert callable(getattr(getattr(stats, name), method))


def test_frozen_scipy_error_names_the_twin():
    with pytest.raises(cr.UntraceableError, match="chainrules.scipy.stats.norm.logpdf "):
        cr.grad(lambda v: ss.norm(0.0, 1.0).logpdf(v))(0.5)
    with pytest.raises(cr.UntraceableError,
                       match="chainrules.scipy.stats.multivariate_normal instead"):
        cr.grad(lambda v: ss.multivariate_normal(v).logpdf([0.0, 0.0]))(np.zeros(2))
