"""The engine's own staged plans: ``cr.hessp`` (value, gradient and
Hessian-vector products as ``cr.jit`` plans) and ``cr.hessian_operator``
(its products as a plan of the sweeps over the recording, where measured
faster).

Plans replay the eager computation's NumPy calls, in an order that may
differ (a replay's scalar arithmetic runs as Python operators): results
equal the eager ones to ``RTOL`` of the largest magnitude (well inside
``cr.jit``'s purity check of 256 ulps); most are bit for bit.
"""

import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import linearization
from chainrules.errors import (GraphFreedError, NonDifferentiableInputError,
                               NonScalarOutputError, TangentShapeError)

scipy_optimize = pytest.importorskip("scipy.optimize")

RTOL = 1e-13


def close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.max(np.abs(b), initial=0.0))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def smooth(x):
    return np.sum(np.tanh(x) ** 2 * np.exp(-x)) + np.log1p(np.sum(x * x))


@pytest.fixture(autouse=True)
def _no_staging_warnings():
    # the engine's plans fall back quietly (warn=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.StagingWarning)
        yield


# -- hessp ---------------------------------------------------------------------------
@pytest.mark.parametrize("f", [rosenbrock, smooth])
def test_hessp_plans_equal_the_eager_path_over_calls(f):
    rng = np.random.default_rng(0)
    h = cr.hessp(f)
    h_eager = cr.hessp(f, staged=False)
    for _ in range(5):  # record, check, replay, replay, replay
        x = rng.standard_normal(7)
        for _ in range(2):
            p = rng.standard_normal(7)
            close(h(x, p), h_eager(x, p))
            close(h(x, p), cr.hvp(f, x, p))
        value, g = h.value_and_grad(x)
        value0, g0 = h_eager.value_and_grad(x)
        close(value, value0)
        assert type(value) is type(value0)
        close(g, g0)
        close(g, cr.grad(f)(x))
    assert h.staged and h.eager_reason is None
    assert h.recordings == 2  # one plan of value_and_grad, one of the product
    assert h_eager.recordings == 5  # one recording per point


def test_hessp_runs_f_only_to_record_and_check_its_plans():
    calls = []

    def f_plain(x):
        return np.sum(np.sin(x) * x ** 2)

    def f(x):
        calls.append(1)
        return f_plain(x)

    h = cr.hessp(f)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(4) for _ in range(6)]
    for k, x in enumerate(xs):
        p = rng.standard_normal(4)
        close(h(x, p), cr.hvp(f_plain, x, p))
        # call 1 records the plan, call 2 checks it against an eager call,
        # the others replay it without running f
        assert len(calls) == min(k + 1, 2)
    calls.clear()
    for k, x in enumerate(xs):
        value, g = h.value_and_grad(x)
        close(g, cr.grad(f_plain)(x))
        assert len(calls) == min(k + 1, 2)
    assert h._hv.jitted.cache_info() == {"signatures": 1, "plans": 1, "eager": 0}
    assert h._vg.jitted.cache_info() == {"signatures": 1, "plans": 1, "eager": 0}
    assert h.recordings == 2


def test_hessp_plan_takes_both_branches_of_a_python_if():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x ** 3)
        return np.sum(np.cos(x) * x)

    h = cr.hessp(f)
    rng = np.random.default_rng(2)
    for k in range(8):
        x = np.abs(rng.standard_normal(3)) * (1 if k % 2 else -1)
        p = rng.standard_normal(3)
        expected = 6 * x * p if k % 2 else (-2 * np.sin(x) - x * np.cos(x)) * p
        close(h(x, p), expected, rtol=1e-12)
        value, g = h.value_and_grad(x)
        close(g, 3 * x ** 2 if k % 2 else np.cos(x) - x * np.sin(x), rtol=1e-12)
    assert h.staged
    assert h._hv.jitted.cache_info()["plans"] == 2  # one variant per branch


SCALE = 1.0


def test_hessp_with_a_global_that_changes_still_answers_right():
    def f(x):
        return np.sum(SCALE * x ** 3)

    global SCALE
    h = cr.hessp(f)
    rng = np.random.default_rng(3)
    try:
        for k in range(5):
            SCALE = 1.0 + k  # rebound before every point
            x, p = rng.standard_normal(3), rng.standard_normal(3)
            close(h(x, p), 6 * SCALE * x * p, rtol=1e-12)
            value, g = h.value_and_grad(x)
            close(g, 3 * SCALE * x ** 2, rtol=1e-12)
            close(value, np.sum(SCALE * x ** 3), rtol=1e-12)
    finally:
        SCALE = 1.0
    # the check of the second call found the plan impure: recordings per point since
    assert not h.staged and "differed" in h.eager_reason


def test_hessp_with_random_draws_inside_still_answers_right():
    rng_f = np.random.default_rng(4)
    mirror = np.random.default_rng(4)

    def f(x):
        w = rng_f.uniform(0.5, 1.5, x.shape)
        return np.sum(w * x ** 2)

    h = cr.hessp(f)
    rng = np.random.default_rng(5)
    for _ in range(5):
        # every call runs f's body once: the recording, the check's eager
        # call, then (the plan gave up) one recording per point
        x, p = rng.standard_normal(4), rng.standard_normal(4)
        w = mirror.uniform(0.5, 1.5, x.shape)
        close(h(x, p), 2 * w * p, rtol=1e-12)
    assert not h.staged and "differed" in h.eager_reason
    # the recording path shares one recording per point: one draw
    x = rng.standard_normal(4)
    value, g = h.value_and_grad(x)
    w = mirror.uniform(0.5, 1.5, x.shape)
    close(g, 2 * w * x, rtol=1e-12)
    close(h(x, np.ones(4)), 2 * w, rtol=1e-12)


@pytest.mark.parametrize("method", ["trust-krylov", "Newton-CG", "trust-ncg"])
def test_minimize_with_plans_matches_the_old_path_and_scipys_derivatives(method):
    from scipy.optimize import minimize, rosen_der, rosen_hess_prod

    n = 30
    x0 = np.zeros(n)
    # (tolerances tight enough that rounding does not decide where a run stops)
    opts = {"maxiter": 1000, **({"xtol": 1e-10} if method == "Newton-CG" else {"gtol": 1e-9})}
    h = cr.hessp(rosenbrock)
    res = minimize(h.value_and_grad, x0, jac=True, hessp=h, method=method, options=opts)
    h0 = cr.hessp(rosenbrock, staged=False)
    res0 = minimize(h0.value_and_grad, x0, jac=True, hessp=h0, method=method, options=opts)
    ref = minimize(lambda x: (rosenbrock(x), rosen_der(x)), x0, jac=True,
                   hessp=rosen_hess_prod, method=method, options=opts)
    assert res.success and res0.success and ref.success, (res.message, res0.message)
    assert h.staged and h.recordings == 2
    assert res.nhev > 10 * h.recordings
    assert h0.recordings >= res0.nit  # without plans: one recording per point
    np.testing.assert_allclose(res.x, res0.x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.x, ref.x, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.x, np.ones(n), rtol=0, atol=1e-6)


def test_hessp_float32():
    f = smooth
    h = cr.hessp(f)
    rng = np.random.default_rng(6)
    for _ in range(4):
        x = rng.standard_normal(5).astype(np.float32)
        p = rng.standard_normal(5)  # float64: cast to x's dtype, as before
        hv = h(x, p)
        assert hv.dtype == np.float32
        close(hv, cr.hessp(f, staged=False)(x, p), rtol=1e-6)
        value, g = h.value_and_grad(x)
        assert type(value) is np.float32 and g.dtype == np.float32
        close(g, cr.grad(f)(x), rtol=1e-6)
    assert h.staged and h._hv.jitted.cache_info()["plans"] == 1


def test_hessp_0d_and_list_points_keep_their_result_types():
    for staged in (True, False):
        h = cr.hessp(lambda x: x ** 3, staged=staged)
        for _ in range(3):
            hv = h(2.0, 1.0)
            assert type(hv) is np.ndarray and hv.shape == () and hv == 12.0
            value, g = h.value_and_grad(2.0)
            assert value == 8.0 and type(g) is np.ndarray and g == 12.0
        h = cr.hessp(rosenbrock, staged=staged)
        for _ in range(3):
            close(h([0.5, 1.0, 2.0], [1.0, 0.0, 0.0]),
                  cr.hvp(rosenbrock, np.array([0.5, 1.0, 2.0]), np.array([1.0, 0.0, 0.0])))


@pytest.mark.parametrize("staged", [True, False])
def test_hessp_errors_are_the_same_with_and_without_plans(staged):
    x = np.array([0.5, 1.0, 2.0])
    h = cr.hessp(smooth, staged=staged)
    for _ in range(3):
        with pytest.raises(TangentShapeError, match="complex direction"):
            h(x, np.ones(3) + 1j)
        with pytest.raises(ValueError, match="reshape"):
            h(x, np.ones(4))
        with pytest.raises(NonDifferentiableInputError, match="complex dtype"):
            cr.hessp(smooth, staged=staged)(x + 1j, np.ones(3))
        with pytest.raises(NonDifferentiableInputError, match="int64"):
            cr.hessp(smooth, staged=staged)(np.array([1, 2, 3]), np.ones(3))
        with pytest.raises(NonScalarOutputError):
            cr.hessp(np.square, staged=staged)(x, np.ones(3))
        with pytest.raises(NonScalarOutputError):
            cr.hessp(np.square, staged=staged).value_and_grad(x)
        # hessp takes arrays: a pytree point is converted as np.array does
        with pytest.raises(NonDifferentiableInputError, match="object"):
            cr.hessp(lambda t: np.sum(t["a"] ** 3), staged=staged)({"a": x}, {"a": x})
        close(h(x, np.ones((3, 1))), cr.hvp(smooth, x, np.ones(3)))


def test_hessp_in_anomaly_mode_records_per_point():
    h = cr.hessp(smooth)
    x = np.array([0.5, 1.0])
    with cr.detect_anomaly():
        for k in range(3):
            close(h(x + k, np.ones(2)), cr.hvp(smooth, x + k, np.ones(2)))
    assert h.recordings == 3 and h._hv is None


# -- hessian_operator --------------------------------------------------------------
def _products(H, f, x, k, rng, rtol=RTOL):
    ref = cr.hessian(f)(x.astype(np.float64)) if x.dtype != np.float64 else None
    for _ in range(k):
        v = rng.standard_normal(x.size)
        hv = H @ v
        assert hv.dtype == np.float64 and hv.shape == (x.size,)
        if ref is None:
            close(hv, cr.hvp(f, x, v.reshape(x.shape)).reshape(-1), rtol)
        else:
            close(hv, ref @ v, rtol)


def test_hessian_operator_products_run_as_a_plan_after_a_measured_start(monkeypatch):
    # (whether the plan is kept is measured: keep it whatever the timings)
    monkeypatch.setattr(linearization, "MIN_GAIN", 0.0)
    rng = np.random.default_rng(7)
    x = rng.uniform(0.0, 2.0, (4, 5))
    H = cr.hessian_operator(rosenbrock, x.reshape(-1))
    staged = H._products
    n_start = linearization.STAGE_AFTER
    _products(H, rosenbrock, x.reshape(-1), n_start, rng)
    assert staged.plan is None and len(staged.sweep_times) == n_start
    _products(H, rosenbrock, x.reshape(-1), 2 + linearization.PROBE_CALLS + 5, rng)
    assert staged.use_plan is True
    assert len(staged.plan_times) == linearization.PROBE_CALLS
    assert staged.plan.recordings == 1 and staged.plan.eager is None
    assert staged.plan.jitted.cache_info() == {"signatures": 1, "plans": 1, "eager": 0}


def test_hessian_operator_keeps_the_sweeps_where_the_plan_does_not_pay(monkeypatch):
    monkeypatch.setattr(linearization, "MIN_GAIN", 1e9)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(6)
    H = cr.hessian_operator(smooth, x)
    _products(H, smooth, x, linearization.STAGE_AFTER + 2 + linearization.PROBE_CALLS + 3, rng)
    assert H._products.use_plan is False and H._products.plan is None


def test_hessian_operator_float32_and_pytree_points(monkeypatch):
    monkeypatch.setattr(linearization, "MIN_GAIN", 0.0)
    rng = np.random.default_rng(9)
    x = rng.standard_normal(6).astype(np.float32)
    H = cr.hessian_operator(smooth, x)
    _products(H, smooth, x, linearization.STAGE_AFTER + 2 + linearization.PROBE_CALLS + 3, rng,
              rtol=1e-5)
    assert H._products.use_plan is True and H._products.plan.eager is None
    f = lambda t: np.sum(t["a"] ** 3) + np.sum(t["a"] * t["b"][0])  # noqa: E731
    H = cr.hessian_operator(f, {"a": np.ones(3), "b": [np.arange(3.0)]})
    assert H._products is None  # a pytree point keeps the sweeps
    for _ in range(12):
        np.testing.assert_array_equal(H @ np.arange(6.0), [3.0, 10.0, 17.0, 0.0, 1.0, 2.0])


GAIN = 1.0


def test_hessian_operator_with_an_impure_rule_still_answers_right():
    @cr.primitive
    def scaled_cube(x):
        return x ** 3  # (its pullback, read at each sweep, scales by GAIN)

    @cr.rrule(scaled_cube)
    def _(x):
        return scaled_cube(x), lambda g: g * GAIN * 3 * x ** 2

    def f(x):
        return np.sum(scaled_cube(x))

    global GAIN
    x = np.array([0.5, -1.0, 2.0])
    H = cr.hessian_operator(f, x)
    try:
        for k in range(linearization.STAGE_AFTER + 2 + linearization.PROBE_CALLS + 3):
            GAIN = 1.0 + k  # read by the pullback at each sweep
            v = np.array([1.0, 2.0, 3.0]) + k
            close(H @ v, 6 * GAIN * x * v, rtol=1e-12)
    finally:
        GAIN = 1.0
    assert H._products.use_plan is False  # the check found the plan impure


def test_hessian_operator_cg_solve_and_free(monkeypatch):
    from scipy.sparse.linalg import cg

    monkeypatch.setattr(linearization, "MIN_GAIN", 0.0)
    rng = np.random.default_rng(10)
    x = 1.0 + 0.01 * rng.standard_normal(30)
    H = cr.hessian_operator(rosenbrock, x)
    dense = cr.hessian(rosenbrock)(x)
    b = dense @ np.ones(30)
    iterations = []
    sol, info = cg(H, b, rtol=1e-12, maxiter=500, callback=iterations.append)
    assert info == 0
    assert len(iterations) > linearization.STAGE_AFTER + 2 + linearization.PROBE_CALLS
    assert H._products.use_plan is True
    np.testing.assert_allclose(dense @ sol, b, rtol=1e-8, atol=1e-8 * np.max(np.abs(b)))
    H.free()
    with pytest.raises(GraphFreedError):
        H @ np.ones(30)


def test_hessian_operator_in_anomaly_mode_runs_the_sweeps():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(4)
    H = cr.hessian_operator(smooth, x)
    with cr.detect_anomaly():
        _products(H, smooth, x, 16, rng)
    assert H._products.plan is None
