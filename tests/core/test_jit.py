"""``cr.jit``: staged plans and their semantics (docs/design.md, "Staged
plans"). Each test says which promise it checks; the registry sweep's
staged-equals-eager check is ``tests/rules/test_jit_sweep.py``."""

import threading
import warnings

import numpy as np
import pytest

import chainrules as cr


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


# -- the contract: every transformation composes -------------------------------------
def test_value_and_grad_is_staged_and_right_at_new_points():
    step = cr.jit(cr.value_and_grad(rosen))
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.normal(size=6)
        v, g = step(x)
        assert v == pytest.approx(rosen(x), rel=1e-14)
        np.testing.assert_allclose(g, _rosen_grad(x), rtol=1e-12)
    assert step.cache_info() == {"signatures": 1, "plans": 1, "eager": 0}


@pytest.mark.parametrize("make, nargs", [
    (lambda f: cr.grad(f), 1),
    (lambda f: cr.hessian(f), 1),
    (lambda f: cr.jacobian(lambda x: np.sin(x) * np.sum(x ** 2)), 1),
    (lambda f: cr.grad(lambda x: np.sum(cr.grad(f)(x) ** 2)), 1),
    (lambda f: (lambda x, v: cr.hvp(f, x, v)), 2),
    (lambda f: (lambda x, v: cr.jvp(f, (x,), (v,))), 2),
    (lambda f: (lambda x, v: cr.vjp(lambda z: np.tanh(z) * z, x)[1](v)), 2),
    (lambda f: (lambda x, v: cr.grad_and_hvp(f, x, v)), 2),
    (lambda f: f, 1),
], ids=["grad", "hessian", "jacobian", "grad-of-grad", "hvp", "jvp", "vjp",
        "grad_and_hvp", "plain"])
def test_every_transformation_composes(make, nargs):
    F = make(rosen)
    staged = cr.jit(F)
    rng = np.random.default_rng(1)
    for _ in range(4):
        args = tuple(rng.normal(size=4) for _ in range(nargs))
        got, want = staged(*args), F(*args)
        for a, b in zip(cr.pytree.flatten(got)[0], cr.pytree.flatten(want)[0]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert staged.cache_info()["eager"] == 0


def test_decorator_forms_and_static_arguments():
    @cr.jit
    def f(x):
        return np.sum(x ** 2)

    @cr.jit(static_argnums=(1,))
    def g(x, mode):
        return np.sum(x) if mode == "sum" else np.max(x)

    x = np.arange(3.0)
    assert f(x) == 5.0
    assert g(x, "sum") == 3.0 and g(x, "max") == 2.0 and g(x, "sum") == 3.0
    assert g.cache_info()["signatures"] == 2
    with pytest.raises(TypeError, match="hashable"):
        g(x, ["unhashable"])
    h = cr.jit(lambda x, *, scale: x * scale, static_argnames="scale")
    np.testing.assert_array_equal(h(x, scale=2.0), 2 * x)
    np.testing.assert_array_equal(h(x, scale=3.0), 3 * x)
    assert h.cache_info()["signatures"] == 2


# -- 1. signatures ---------------------------------------------------------------------
def test_a_new_shape_dtype_or_structure_records_a_new_plan():
    f = cr.jit(cr.grad(lambda p: np.sum(p["w"] ** 2) + np.sum(p["b"])))
    p = {"w": np.ones(3), "b": np.ones(2)}
    f(p)
    f({"w": np.ones(4), "b": np.ones(2)})
    out = f({"w": np.ones(3, np.float32), "b": np.ones(2, np.float32)})
    assert out["w"].dtype == np.float32
    f({"w": np.ones(3), "b": np.ones(2), "c": 1.0})
    assert f.cache_info()["signatures"] == 4


@pytest.mark.parametrize("x", [0.5, 2, np.float64(0.5), np.float32(0.5), np.array(0.5),
                               np.zeros(0), np.ones(1), np.ones(3, np.float32),
                               np.array([1 + 2j, 3 - 1j])],
                         ids=["float", "int", "np.float64", "np.float32", "0-d", "empty",
                              "size-1", "float32", "complex"])
def test_input_kinds(x):
    F = cr.value_and_grad(lambda x: np.sum(np.abs(x) ** 2 + np.sin(np.real(x))))
    staged = cr.jit(F)
    for k in range(3):
        y = x * (k + 1) if not isinstance(x, int) else x + k
        if isinstance(y, int):
            y = float(y)  # an integer argument has no gradient
        got, want = staged(y), F(y)
        for a, b in zip(cr.pytree.flatten(got)[0], cr.pytree.flatten(want)[0]):
            assert np.shape(a) == np.shape(b) and np.result_type(a) == np.result_type(b)
            np.testing.assert_allclose(a, b, rtol=1e-6)
    assert staged.cache_info()["eager"] == 0


def test_cache_is_bounded_least_recently_used():
    f = cr.jit(lambda x: x * 2, cache_size=8)
    for n in range(1, 300):
        f(np.ones(n))
    assert f.cache_info()["signatures"] == 8
    f(np.ones(299))
    assert f.cache_info()["signatures"] == 8


def test_results_are_never_written_by_a_later_call():
    step = cr.jit(cr.value_and_grad(lambda x: np.sum(x * 0.0 + 1.0)))
    x = np.ones(3)
    kept = [step(x)[1] for _ in range(4)]
    for g in kept:
        g += 7.0  # the user writes into the result
    np.testing.assert_array_equal(step(x)[1], np.zeros(3))
    const = cr.jit(lambda x: (x * 2, np.ones(2)))
    first = [const(x)[1] for _ in range(3)]
    first[2][:] = -1.0
    np.testing.assert_array_equal(const(x)[1], np.ones(2))


def test_threads_calling_one_jitted_function():
    step = cr.jit(cr.value_and_grad(rosen))
    x0 = np.linspace(-1, 1, 5)
    step(x0), step(x0)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(50):
            x = rng.normal(size=5)
            v, g = step(x)
            if not (np.isclose(v, rosen(x)) and np.allclose(g, _rosen_grad(x))):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- 2. replay runs no user Python -----------------------------------------------------
def test_replays_run_none_of_the_functions_python():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.tanh(x) ** 2)

    step = cr.jit(cr.value_and_grad(f))
    for k in range(10):
        step(np.ones(3) * k)
    assert len(calls) == 2  # the recording and the check's eager call
    src = str(step.plan(np.ones(3)))
    assert "def " in src and "tanh" in src


# -- 3. control flow on values is guarded ----------------------------------------------
def test_both_branches_of_a_value_if():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x ** 3)
        return np.sum(np.sin(x))

    g = cr.jit(cr.grad(f))
    for s in [1.0, -1.0, 1.0, -1.0, 2.0, -2.0]:
        x = np.array([0.5, 0.25]) * s
        want = 3 * x ** 2 if s > 0 else np.cos(x)
        np.testing.assert_allclose(g(x), want, rtol=1e-14)
    assert g.cache_info()["plans"] == 2


def test_a_loop_whose_trip_count_comes_from_a_value():
    def f(x, n):
        s = 0.0
        for i in range(int(n)):
            s = s + np.sum(x) * i
        return s

    g = cr.jit(cr.grad(f))
    for n in [3, 3, 4, 3, 5, 4]:
        np.testing.assert_allclose(g(np.ones(2), n), np.full(2, n * (n - 1) / 2))


def test_item_and_float_conversions_are_guarded():
    def f(x):
        scale = float(np.max(x))  # a Python float taken of a value
        return np.sum(x) * scale

    g = cr.jit(f, max_variants=3)
    with pytest.warns(cr.StagingWarning, match="guards keep failing"):
        for k in range(6):
            x = np.arange(3.0) + k
            assert g(x) == pytest.approx(np.sum(x) * np.max(x))
    assert g.cache_info()["eager"] == 1


def test_a_boolean_mask_guards_the_shape():
    f = cr.jit(cr.grad(lambda x: np.sum(x[x > 0] ** 2)))
    for x in [np.array([1.0, -1.0, 2.0]), np.array([1.0, 1.0, 2.0]),
              np.array([-1.0, -1.0, 2.0])]:
        np.testing.assert_allclose(f(x), np.where(x > 0, 2 * x, 0.0))


# -- 4. purity ------------------------------------------------------------------------------
def test_random_draws_inside_f_make_it_eager_with_one_warning():
    f = cr.jit(lambda x: np.sum(x * np.random.normal(size=x.shape)))
    with pytest.warns(cr.StagingWarning, match="differed from an eager call"):
        for _ in range(4):
            f(np.ones(3))
    assert f.cache_info() == {"signatures": 1, "plans": 0, "eager": 1}
    strict = cr.jit(lambda x: np.sum(x * np.random.normal(size=x.shape)), strict=True)
    strict(np.ones(3))
    with pytest.raises(cr.StagingError, match="differed"):
        strict(np.ones(3))


def test_a_closed_over_array_changed_in_place_is_seen():
    W = np.ones(3)
    g = cr.jit(cr.grad(lambda x: np.sum(W * x ** 2)))
    x = np.ones(3)
    np.testing.assert_allclose(g(x), 2 * W)
    np.testing.assert_allclose(g(x), 2 * W)
    W[:] = [1.0, 2.0, 3.0]  # a batch buffer refilled in a training loop
    np.testing.assert_allclose(g(x), 2 * W)


# -- 5. what eager does works under jit, or runs eagerly with a reason ------------
def test_errors_at_replay_are_the_eager_ones():
    f = cr.jit(cr.grad(lambda a: np.sum(np.linalg.solve(a, np.ones(2)))))
    good = np.eye(2) * 2
    f(good), f(good), f(good)
    with pytest.raises(np.linalg.LinAlgError):
        f(np.zeros((2, 2)))
    np.testing.assert_allclose(f(good), cr.grad(lambda a: np.sum(np.linalg.solve(
        a, np.ones(2))))(good))


def test_domain_errors_raised_by_rules_at_new_values():
    F = cr.grad(lambda x: np.linalg.norm(np.diag(x), ord="nuc"))
    f = cr.jit(F)
    x = np.array([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_allclose(f(x), F(x))
    y = np.array([0.0, 2.0])
    try:
        want = F(y)
    except cr.AutodiffError as e:
        with pytest.raises(type(e)):
            f(y)
    else:
        np.testing.assert_allclose(f(y), want)


def test_conversion_to_a_plain_array_runs_eagerly_with_a_reason():
    f = cr.jit(lambda x: np.sum(np.asarray(x) ** 2))
    with pytest.warns(cr.StagingWarning, match="converted to a plain array"):
        assert f(np.ones(3)) == 3.0
    assert f(np.ones(3) * 2) == 12.0
    assert f.eager_reasons()[0].count("test_jit.py") == 1  # names the user's line
    strict = cr.jit(lambda x: np.sum(np.asarray(x) ** 2), strict=True)
    with pytest.raises(cr.StagingError, match="plain array"):
        strict(np.ones(3))


def test_a_write_into_an_argument_runs_eagerly():
    def f(x):
        x += 1.0
        return np.sum(x)

    g = cr.jit(f)
    x = np.zeros(3)
    with pytest.warns(cr.StagingWarning, match="argument"):
        assert g(x) == 3.0
    np.testing.assert_array_equal(x, np.ones(3))  # as the plain call does
    assert g(x) == 6.0


def test_writes_into_buffers_made_inside_f():
    def f(x):
        out = np.zeros_like(x)
        out[0] = x[1] * 2
        out[1:] += x[:-1]
        return np.sum(out ** 2)

    g = cr.jit(cr.grad(f))
    for k in range(4):
        x = np.arange(3.0) + k
        np.testing.assert_allclose(g(x), cr.grad(f)(x))
    assert g.cache_info()["eager"] == 0


def test_has_aux_argnums_and_keywords():
    def loss(w, b, X):
        r = X @ w + b
        return np.sum(r ** 2), {"mean": np.mean(r)}

    F = cr.value_and_grad(loss, argnums=(0, 1), has_aux=True)
    f = cr.jit(F)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 3))
    for _ in range(3):
        w, b = rng.normal(size=3), rng.normal()
        (v, aux), (gw, gb) = f(w, b, X=X)
        (v2, aux2), (gw2, gb2) = F(w, b, X=X)
        assert v == pytest.approx(v2) and aux["mean"] == pytest.approx(aux2["mean"])
        np.testing.assert_allclose(gw, gw2)
        assert gb == pytest.approx(gb2)


def test_under_an_enclosing_transformation_jit_runs_eagerly():
    inner = cr.jit(lambda x: np.sin(x) * x)
    g = cr.grad(lambda x: np.sum(inner(x)))
    x = np.linspace(0, 1, 3)
    np.testing.assert_allclose(g(x), np.cos(x) * x + np.sin(x))
    assert inner.cache_info()["signatures"] == 0


def test_dask_arrays_are_never_computed():
    da = pytest.importorskip("dask.array")
    f = cr.jit(cr.grad(lambda x: np.sum(x ** 2)))
    x = da.ones(4, chunks=2)
    g = f(x)
    assert isinstance(g, da.Array)
    np.testing.assert_allclose(g.compute(), 2 * np.ones(4))


def test_anomaly_mode_runs_eagerly_and_names_the_op():
    f = cr.jit(cr.grad(lambda x: np.sum(np.log(x))))
    f(np.ones(2)), f(np.ones(2))
    with cr.detect_anomaly(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cr.NumericalInstabilityError, match="log"):
            f(np.array([0.0, 1.0]))


def test_checkpoint_inside_jit():
    body = cr.checkpoint(lambda x: np.tanh(np.sin(x) * 2))
    F = cr.grad(lambda x: np.sum(body(x) ** 2))
    f = cr.jit(F)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cr.StagingWarning)
        for k in range(3):
            x = np.linspace(0, 1, 4) + k
            np.testing.assert_allclose(f(x), F(x), rtol=1e-12)


def test_sums_of_scalars_accumulated_in_a_python_loop():
    # each term is a NumPy scalar: the sweep must not write into one
    def f(x):
        x = x[0]
        y = 0.0
        for k in range(1, 6):
            y += k * np.sin((k + 1) * x + k)
        return -y

    F = cr.value_and_grad(f)
    g = cr.jit(F)
    for k in range(4):
        x = np.array([0.3 + k])
        (v, d), (v2, d2) = g(x), F(x)
        assert v == v2
        np.testing.assert_array_equal(d, d2)
    assert g.cache_info() == {"signatures": 1, "plans": 1, "eager": 0}


def test_floating_point_warnings_of_a_replay_name_the_callers_line():
    f = cr.jit(cr.grad(lambda x: np.sum(np.log(x))))
    f(np.ones(2)), f(np.ones(2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = f(np.array([0.0, 1.0]))
    assert g[0] == np.inf and g[1] == 1.0
    assert seen and all(w.category is RuntimeWarning for w in seen)
    assert {w.filename for w in seen} == {__file__}


@pytest.mark.parametrize("x", [np.array(2.0), 2.0, np.float32(2.0), np.array([2.0])],
                         ids=["0-d", "float", "float32", "size-1"])
def test_results_have_the_eager_kinds(x):
    # a NumPy scalar where eager gives one, a 0-d array where eager gives one
    for fun in (cr.value_and_grad(lambda y: y ** 3), cr.grad(lambda y: y ** 3),
                lambda y: cr.hvp(lambda z: z ** 3, y, y), cr.hessian(lambda y: y ** 3),
                cr.jacobian(lambda y: y ** 3)):
        want = fun(x)
        j = cr.jit(fun)
        for _ in range(3):
            got = j(x)
            assert repr(got) == repr(want)
