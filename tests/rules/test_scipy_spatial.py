"""chainrules.scipy.spatial.distance: values equal SciPy's (traced and plain,
every metric, weighted or not, float32 kept); every function and metric
through check_rule (pullback, pushforward, HVP against finite differences)
and whole losses through check_grads; SciPy's defaults for V and VI
differentiated through the points; 1-row and empty pdist/cdist; the defined
derivatives at the non-differentiable points (equal points, ties, zero
coordinates and vectors, 0/0 terms); errors (out=, metrics, keywords); and
the plain SciPy call naming its twin.

The registry sweep (tests/rules/test_sweep.py, family ``scipy_spatial``)
runs the same specs over more examples."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainrules as cr

sd = pytest.importorskip("scipy.spatial.distance")
from chainrules.scipy.spatial import distance as cd  # noqa: E402
from chainrules.testing import check_grads, check_rule  # noqa: E402
from chainrules.testing.specs import scipy_spatial as specs  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.normal(size=(5, 3))
Y = RNG.normal(size=(4, 3))
W = RNG.uniform(0.5, 2.0, 3)
V = RNG.uniform(0.5, 2.0, 3)
VI = np.linalg.inv(np.cov(np.vstack([X, Y]).T)).T
VECTOR = ["braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine",
          "euclidean", "minkowski", "sqeuclidean"]
# metric, keyword arguments: every metric, with and without its parameter
CASES = ([(m, {}) for m in sorted(specs.METRICS)]
         + [(m, {"w": W}) for m in VECTOR]
         + [("minkowski", {"p": p}) for p in specs.P_VALUES]
         + [("minkowski", {"p": p, "w": W}) for p in (0.7, 3.0, np.inf)]
         + [("seuclidean", {"V": V}), ("mahalanobis", {"VI": VI})])


def _traced(f, *args):
    """The value of ``f`` computed on traced arguments."""
    return cr.vjp(f, *args)[0]


def _fd_grad(f, x, h=1e-6):
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = h
        out[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return out


# -- values ------------------------------------------------------------------------------
@pytest.mark.parametrize("metric, kw", CASES, ids=[f"{m}-{sorted(k)}" for m, k in CASES])
def test_pdist_cdist_values_equal_scipy(metric, kw):
    ref_p, ref_c = sd.pdist(X, metric, **kw), sd.cdist(X, Y, metric, **kw)
    np.testing.assert_allclose(_traced(lambda a: cd.pdist(a, metric, **kw), X), ref_p,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(_traced(lambda a: cd.cdist(a, Y, metric, **kw), X), ref_c,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(_traced(lambda b: cd.cdist(X, b, metric, **kw), Y), ref_c,
                               rtol=1e-13, atol=1e-15)
    # plain inputs: SciPy's own results
    np.testing.assert_array_equal(cd.pdist(X, metric, **kw), ref_p)
    np.testing.assert_array_equal(cd.cdist(X, Y, metric, **kw), ref_c)


@pytest.mark.parametrize("metric", VECTOR)
@pytest.mark.parametrize("weighted", [False, True])
def test_vector_distances_equal_scipy(metric, weighted):
    kw = {"w": W} if weighted else {}
    for u, v in [(X[0], Y[0]), (X[1], X[1] + 1e-3), (np.abs(X[2]), np.abs(Y[1]))]:
        ref = getattr(sd, metric)(u, v, **kw)
        got = _traced(lambda a: getattr(cd, metric)(a, v, **kw), u)
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14)
        assert getattr(cd, metric)(u, v, **kw) == ref


def test_parametrised_vector_distances_equal_scipy():
    u, v = X[0], Y[0]
    for p in specs.P_VALUES:
        np.testing.assert_allclose(_traced(lambda a: cd.minkowski(a, v, p), u),
                                   sd.minkowski(u, v, p), rtol=1e-13)
    np.testing.assert_allclose(_traced(lambda a: cd.seuclidean(a, v, V), u),
                               sd.seuclidean(u, v, V), rtol=1e-13)
    np.testing.assert_allclose(_traced(lambda a: cd.mahalanobis(a, v, VI), u),
                               sd.mahalanobis(u, v, VI), rtol=1e-13)
    np.testing.assert_allclose(_traced(lambda a: cd.correlation(a, v, W, centered=False), u),
                               sd.correlation(u, v, W, centered=False), rtol=1e-13)


def test_squareform_values_equal_scipy():
    y = sd.pdist(X)
    np.testing.assert_array_equal(_traced(cd.squareform, y), sd.squareform(y))
    m = sd.squareform(y)
    np.testing.assert_array_equal(_traced(cd.squareform, m), y)
    np.testing.assert_array_equal(_traced(lambda a: cd.squareform(a, force="tovector"), m), y)
    for empty in (np.zeros(0), np.zeros((1, 1)), np.zeros((0, 0))):
        np.testing.assert_array_equal(_traced(cd.squareform, empty), sd.squareform(empty))


def test_float32_stays_float32():
    x32, y32 = X.astype(np.float32), Y.astype(np.float32)
    for metric, kw in CASES:
        for f, args in ((cd.pdist, (x32,)), (cd.cdist, (x32, y32))):
            plain = f(*args, metric, **kw)
            traced = _traced(lambda a: f(a, *args[1:], metric, **kw), args[0])
            assert plain.dtype == traced.dtype == np.float32, metric
            ref = getattr(sd, f.__name__)(*args, metric, **kw)
            np.testing.assert_allclose(traced, ref, rtol=2e-5, atol=1e-6)
    for metric in VECTOR:
        assert getattr(cd, metric)(x32[0], y32[0]).dtype == np.float32
        assert _traced(lambda a: getattr(cd, metric)(a, y32[0]), x32[0]).dtype == np.float32


# -- derivatives -------------------------------------------------------------------------
@pytest.mark.parametrize("spec", specs.SPECS, ids=lambda s: s.label)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_check_rule_every_function_and_metric(spec, dtype):
    """Pullback and pushforward against finite differences, the adjoint
    identity and the HVP, for each function and metric (a few examples
    here; the registry sweep runs more)."""
    @settings(max_examples=4, deadline=None, database=None, derandomize=True)
    @given(st.data())
    def run(data):
        args, kw = spec.args(data.draw, np.dtype(dtype))
        check_rule(spec.op, *args, call=spec.call, op_kwargs=kw, hvp_fast=True)

    run()


def test_whole_losses_to_second_order():
    x = np.array([[0.4, 1.9, -0.7], [1.0, 0.45, -2.2], [1.65, 1.2, -1.35],
                  [2.3, 2.6, -0.45]])
    target = np.linspace(1.0, 2.0, 6)

    def stress(x):     # multidimensional scaling
        return np.sum((cd.pdist(x) - target) ** 2)

    check_grads(stress, x, order=2)
    check_grads(lambda x: np.sum(cd.squareform(cd.pdist(x, "cityblock")) ** 2), x, order=2)
    check_grads(lambda a, b: cd.cdist(a, b, "minkowski", p=3.0), x[:2], x[2:], order=2)
    check_grads(lambda u, vi: cd.mahalanobis(u, x[0], vi), x[1], VI, order=2)


def test_defaults_of_V_and_VI_are_differentiated_through_the_points():
    x = RNG.normal(size=(6, 2))
    for metric in ("seuclidean", "mahalanobis"):
        g = cr.grad(lambda a: np.sum(cd.pdist(a, metric) ** 2))(x)
        np.testing.assert_allclose(g, _fd_grad(lambda a: np.sum(sd.pdist(a, metric) ** 2), x),
                                   rtol=1e-6, atol=1e-7)
        g = cr.grad(lambda a: np.sum(cd.cdist(a, x[4:], metric)))(x[:4])
        np.testing.assert_allclose(
            g, _fd_grad(lambda a: np.sum(sd.cdist(a, x[4:], metric)), x[:4]), rtol=1e-6,
            atol=1e-7)


def test_hvp_of_a_pairwise_loss_matches_finite_differences_of_the_gradient():
    x = RNG.normal(size=(4, 3))
    v = RNG.normal(size=(4, 3))
    for metric, kw in [("euclidean", {}), ("correlation", {"w": W}), ("canberra", {}),
                       ("minkowski", {"p": 1.5})]:
        loss = lambda a: np.sum(np.sin(cd.pdist(a, metric, **kw)))  # noqa: E731
        h = 1e-5
        fd = (cr.grad(loss)(x + h * v) - cr.grad(loss)(x - h * v)) / (2 * h)
        np.testing.assert_allclose(cr.hvp(loss, x, v), fd, rtol=1e-6, atol=1e-7)


# -- one row, no pairs ---------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # SciPy: the variance of one row
@pytest.mark.parametrize("metric", sorted(set(specs.METRICS) - {"mahalanobis"}))
def test_one_row_and_no_pairs(metric):
    one = np.array([[0.3, -1.2, 0.8]])
    out, back = cr.vjp(lambda a: cd.pdist(a, metric), one)
    assert out.shape == (0,) and sd.pdist(one, metric).shape == (0,)
    np.testing.assert_array_equal(back(np.zeros(0))[0], np.zeros_like(one))
    np.testing.assert_array_equal(cr.grad(lambda a: np.sum(cd.pdist(a, metric)))(one),
                                  np.zeros_like(one))
    assert cr.hvp(lambda a: np.sum(cd.pdist(a, metric)), one, one).shape == one.shape
    none = np.zeros((0, 3))
    out = _traced(lambda a: cd.cdist(a, one, metric), none)
    assert out.shape == (0, 1) == sd.cdist(none, one, metric).shape
    out = _traced(lambda a: cd.pdist(a, metric), none)
    assert out.shape == (0,)
    check_rule(cd.pdist, one.astype(np.float32), metric)


def test_mahalanobis_needs_more_points_than_dimensions_as_in_scipy():
    for x in (np.ones((1, 3)), RNG.normal(size=(3, 3))):
        with pytest.raises(ValueError, match="too small"):
            cr.grad(lambda a: np.sum(cd.pdist(a, "mahalanobis")))(x)
        with pytest.raises(ValueError, match="too small"):
            sd.pdist(x, "mahalanobis")
    assert _traced(lambda a: cd.pdist(a, "mahalanobis", VI=np.eye(3)), np.ones((1, 3))).shape \
        == (0,)


# -- the non-differentiable points -------------------------------------------------------
def test_equal_points_have_derivative_zero_as_the_norm_rule():
    u = np.array([0.4, -1.0, 2.0])
    # the convention of the core rules: np.linalg.norm at the zero vector
    np.testing.assert_array_equal(cr.grad(lambda x: np.linalg.norm(x))(np.zeros(3)), 0.0)
    for f in (lambda a: cd.euclidean(a, u), lambda a: cd.minkowski(a, u, 3.0),
              lambda a: cd.minkowski(a, u, 0.5), lambda a: cd.minkowski(a, u, 3.0, W),
              lambda a: cd.euclidean(a, u, W), lambda a: cd.seuclidean(a, u, V),
              lambda a: cd.mahalanobis(a, u, VI), lambda a: cd.cityblock(a, u),
              lambda a: cd.chebyshev(a, u)):
        assert f(u.copy()) == 0.0
        np.testing.assert_array_equal(cr.grad(f)(u.copy()), 0.0)
        np.testing.assert_array_equal(cr.hvp(f, u.copy(), np.ones(3)), 0.0)
    # sqeuclidean is smooth: gradient 0, Hessian 2 I
    np.testing.assert_array_equal(cr.grad(lambda a: cd.sqeuclidean(a, u))(u.copy()), 0.0)
    np.testing.assert_array_equal(cr.hvp(lambda a: cd.sqeuclidean(a, u), u.copy(), np.ones(3)),
                                  2.0)
    # traced weights and variances: the root of a zero sum has derivative 0
    g = cr.grad(lambda a, w: cd.euclidean(a, u, w), argnums=(0, 1))(u.copy(), W)
    np.testing.assert_array_equal(g[0], 0.0)
    np.testing.assert_array_equal(g[1], 0.0)


def test_duplicate_rows_contribute_nothing():
    x = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.5], [2.0, -1.0]])
    for metric in ("euclidean", "seuclidean", "cityblock", "chebyshev", "canberra"):
        g = cr.grad(lambda a: np.sum(cd.pdist(a, metric, **({"V": V[:2]} if metric ==
                                                           "seuclidean" else {}))))(x)
        assert np.all(np.isfinite(g)), metric
    # euclidean: the duplicate pair adds 0, the others their unit vectors
    g = cr.grad(lambda a: np.sum(cd.pdist(a)))(x)
    i, j = np.triu_indices(4, 1)
    ref = np.zeros_like(x)
    for a, b in zip(i, j):
        d = x[a] - x[b]
        n = np.linalg.norm(d)
        if n:
            ref[a] += d / n
            ref[b] -= d / n
    np.testing.assert_allclose(g, ref, rtol=1e-14)


def test_ties_and_zero_coordinates_follow_abs_and_max():
    v = np.zeros(3)
    u = np.array([2.0, -2.0, 1.0])
    # chebyshev: the tied maxima share the derivative evenly, as np.max's rule
    np.testing.assert_allclose(cr.grad(lambda a: cd.chebyshev(a, v))(u), [0.5, -0.5, 0.0])
    np.testing.assert_allclose(cr.grad(lambda a: cd.chebyshev(a, v))(u),
                               cr.grad(lambda a: np.max(np.abs(a)))(u))
    # cityblock at an equal coordinate: |x|' = 0 at 0, as np.abs's rule
    u = np.array([1.5, 0.0, -0.5])
    np.testing.assert_array_equal(cr.grad(lambda a: cd.cityblock(a, v))(u), [1.0, 0.0, -1.0])
    # minkowski p < 1: the zero coordinate gets 0, the others their derivative
    g = cr.grad(lambda a: cd.minkowski(a, v, 0.5))(u)
    assert g[1] == 0.0
    np.testing.assert_allclose(g[[0, 2]], _fd_grad(
        lambda t: sd.minkowski(np.array([t[0], 0.0, t[1]]), v, 0.5), u[[0, 2]]), rtol=1e-7)
    # braycurtis and canberra at equal coordinates
    for name in ("braycurtis", "canberra"):
        a0 = np.array([1.0, 2.0, 3.0])
        b0 = np.array([1.0, 1.0, 2.0])
        g = cr.grad(lambda a: getattr(cd, name)(a, b0))(a0)
        h = _fd_grad(lambda t: getattr(sd, name)(np.array([1.0, *t]), b0), a0[1:])
        np.testing.assert_allclose(g[1:], h, rtol=1e-7)
        assert np.isfinite(g[0])


def test_zero_vectors_and_zero_denominators():
    z, u = np.zeros(3), np.array([1.0, -2.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("cosine", "correlation"):
            f = getattr(cd, name)
            # SciPy's nan, and no derivative through it
            assert np.isnan(_traced(lambda a: f(a, u), z)) and np.isnan(getattr(sd, name)(z, u))
            np.testing.assert_array_equal(cr.grad(lambda a: f(a, u))(z), 0.0)
            np.testing.assert_array_equal(cr.grad(lambda b: f(z, b))(u), 0.0)
        # braycurtis of u and -u: SciPy's inf / nan
        assert _traced(lambda a: cd.braycurtis(a, -u), u) == sd.braycurtis(u, -u) == np.inf
        np.testing.assert_array_equal(cr.grad(lambda a: cd.braycurtis(a, -u))(u), 0.0)
        # a zero row in pdist: its pairs are nan; masking them leaves the other
        # pairs' derivatives finite and exact
        x = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0]])

        def masked(a):
            d = cd.pdist(a, "cosine")
            return np.sum(np.where(np.isnan(d), 0.0, d))
        np.testing.assert_array_equal(np.isnan(cd.pdist(x, "cosine")), [True, True, False])
        g = cr.grad(masked)(x)
        ref = cr.grad(lambda a: cd.cosine(a[1], a[2]))(x)
        np.testing.assert_allclose(g, ref, rtol=1e-14)
    # canberra: a 0/0 term is left out, as SciPy's nansum, with derivative 0
    a0, b0 = np.array([0.0, 1.0, 2.0]), np.array([0.0, 3.0, 1.0])
    assert _traced(lambda a: cd.canberra(a, b0), a0) == sd.canberra(a0, b0)
    g = cr.grad(lambda a: cd.canberra(a, b0))(a0)
    assert g[0] == 0.0
    np.testing.assert_allclose(
        g[1:], _fd_grad(lambda t: sd.canberra(np.array([0.0, *t]), b0), a0[1:]), rtol=1e-7)


def test_squareform_reads_the_upper_triangle():
    m = sd.squareform(sd.pdist(X[:4]))
    g = cr.grad(lambda a: np.sum(cd.squareform(a) * np.arange(6.0)))(m)
    assert np.all(np.tril(g) == 0) and np.all(np.triu(g, 1)[np.triu_indices(4, 1)]
                                                == np.arange(6.0))
    y = sd.pdist(X[:4])
    g = cr.grad(lambda a: np.sum(cd.squareform(a) * np.arange(16.0).reshape(4, 4)))(y)
    i, j = np.triu_indices(4, 1)
    np.testing.assert_array_equal(g, 4 * i + j + 4 * j + i)


@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "size 1"])
def test_squareform_of_one_distance(shape):
    # SciPy reads a 0-d X as the condensed vector of one distance (a 2 x 2 matrix)
    y = np.full(shape, 0.7)
    np.testing.assert_array_equal(_traced(cd.squareform, y), sd.squareform(y))
    for force in ("no", "tomatrix"):
        jac = cr.jacobian(lambda a: cd.squareform(a, force=force))(y)
        np.testing.assert_array_equal(np.reshape(jac, (2, 2)), [[0.0, 1.0], [1.0, 0.0]])
    # the two entries' cubes: 2 y^3, Hessian 12 y
    h = cr.hessian(lambda a: np.sum(cd.squareform(a) ** 3))(y)
    np.testing.assert_allclose(h, np.reshape(12 * 0.7, shape + shape), rtol=1e-15)
    if shape == ():
        with pytest.raises(ValueError, match="not a distance matrix"):
            cr.grad(lambda a: np.sum(cd.squareform(a, force="tovector")))(y)
    assert check_rule(cd.squareform, y).worst < 1e-9


# -- calling conventions and errors ---------------------------------------------------------
def test_metric_aliases_and_callables():
    ref = sd.pdist(X, "chebyshev")
    for name in ("ChebyShev", "cheb", "chebychev", "ch"):
        np.testing.assert_allclose(_traced(lambda a: cd.pdist(a, name), X), ref)
    # SciPy's own distance functions and these twins are the vectorised metrics
    for f in (sd.chebyshev, cd.chebyshev):
        np.testing.assert_allclose(_traced(lambda a: cd.pdist(a, f), X), ref)
    np.testing.assert_allclose(_traced(lambda a: cd.cdist(a, Y, sd.minkowski, p=3.0), X),
                               sd.cdist(X, Y, "minkowski", p=3.0))
    # any other callable is called on each pair of traced rows, as SciPy calls it
    f = lambda u, v, s=1.0: s * np.sum(np.tanh(u - v) ** 2)  # noqa: E731
    np.testing.assert_allclose(_traced(lambda a: cd.pdist(a, f, s=2.0), X),
                               sd.pdist(X, f, s=2.0), rtol=1e-14)
    np.testing.assert_allclose(_traced(lambda a: cd.cdist(a, Y, f), X), sd.cdist(X, Y, f),
                               rtol=1e-14)
    check_rule(cd.pdist, X[:3], f)
    assert _traced(lambda a: cd.pdist(a, f), X[:1]).shape == (0,)


def test_out_is_refused_on_traced_points_and_works_on_plain_ones():
    out = np.empty(10)
    with pytest.raises(cr.UntraceableError, match="out="):
        cr.grad(lambda a: np.sum(cd.pdist(a, out=out)))(X)
    with pytest.raises(cr.UntraceableError, match="out="):
        cr.grad(lambda a: np.sum(cd.cdist(a, Y, out=np.empty((5, 4)))))(X)
    assert cd.pdist(X, out=out) is out
    np.testing.assert_array_equal(out, sd.pdist(X))


def test_errors_match_scipy():
    grad = lambda f, x=X: cr.grad(lambda a: np.sum(f(a)))(x)  # noqa: E731
    with pytest.raises(ValueError, match="Unknown Distance Metric"):
        grad(lambda a: cd.pdist(a, "nope"))
    with pytest.raises(cr.MissingRuleError, match="hamming.*stop_gradient"):
        grad(lambda a: cd.pdist(a, "hamming"))
    with pytest.raises(TypeError, match="string identifier"):
        grad(lambda a: cd.pdist(a, 3))
    with pytest.raises(TypeError, match="takes no keyword argument p"):
        grad(lambda a: cd.pdist(a, "euclidean", p=3))
    with pytest.raises(ValueError, match="p must be greater than 0"):
        grad(lambda a: cd.pdist(a, "minkowski", p=0))
    with pytest.raises(cr.MissingRuleError, match="constant p"):
        cr.grad(lambda p: cd.minkowski(X[0], Y[0], p))(3.0)
    with pytest.raises(ValueError, match="non-negative"):
        grad(lambda a: cd.pdist(a, "cityblock", w=-W))
    with pytest.raises(ValueError, match="same size"):
        grad(lambda a: cd.pdist(a, "cityblock", w=W[:2]))
    with pytest.raises(ValueError, match="2-dimensional"):
        grad(lambda a: cd.pdist(a), X[0])
    with pytest.raises(ValueError, match="same number of columns"):
        grad(lambda a: cd.cdist(a, Y[:, :2]))
    with pytest.raises(ValueError, match="1-D"):
        grad(lambda a: cd.euclidean(a, Y[:2]), X[:2])
    with pytest.raises(ValueError, match="Variance vector V"):
        grad(lambda a: cd.pdist(a, "seuclidean", V=V[:2]))
    with pytest.raises(ValueError, match="symmetric"):
        grad(lambda a: cd.squareform(a), RNG.normal(size=(3, 3)))
    with pytest.raises(ValueError, match="binomial coefficient"):
        grad(lambda a: cd.squareform(a), np.ones(4))
    with pytest.raises(TypeError, match="real"):
        cr.vjp(lambda a: cd.euclidean(a, Y[0]), X[0] + 0j)


@pytest.mark.parametrize("name", cd.__all__)
def test_plain_scipy_call_names_the_twin(name):
    calls = {"pdist": lambda a: sd.pdist(a), "cdist": lambda a: sd.cdist(a, Y[:, :2]),
             "squareform": lambda a: sd.squareform(a[:2, :2] * 0, checks=False),
             "seuclidean": lambda a: sd.seuclidean(a[0], a[1], np.ones(2)),
             "mahalanobis": lambda a: sd.mahalanobis(a[0], a[1], np.eye(2))}
    call = calls.get(name, lambda a: getattr(sd, name)(a[0], a[1]))
    with pytest.raises(cr.UntraceableError,
                       match=rf"call chainrules\.scipy\.spatial\.distance\.{name} instead"):
        cr.grad(lambda a: np.sum(call(a)))(X[:3, :2])
