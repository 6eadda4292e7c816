"""Compiled kernels (``chainrules.kernels``): a staged plan's fused region
as one compiled loop, checked three ways against the eager sweeps (every
rule on its own) and the plan's NumPy program.

The bound: operations whose NumPy result is correctly rounded (``+ - * /``,
``sqrt``, ``x ** 2``, comparisons, ``maximum``, ``where``, ``sign``, ...)
equal NumPy's bit for bit in a kernel, on every input including NaN,
infinities and signed zeros (``test_exact_operations_equal_numpy_bit_for_bit``).
Transcendental functions come from the compiler's math library and agree
with NumPy's to ``FUNCTION_ULPS`` units in the last place; a kernel's
derivative results then agree with the NumPy program's, and with the eager
sweeps, within the fused sweeps' bound (``test_fusion.BOUND_ULPS``).
"""

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings

import chainrules as cr
from chainrules import elementwise_expr as ee
from chainrules import fused_sweeps as fusion
from chainrules import kernel_scatter, kernels
from chainrules.testing.plugin import tier

from test_elementwise_expr import EXPRESSIBLE, SPECS, _sample
# (fusion at every size, as in test_fusion: the thresholds are for speed)
from test_fusion import (_agree, chain_case, chains, setup_module,  # noqa: F401
                         teardown_module)

_HAVE_NUMBA = kernels.available()
needs_numba = pytest.mark.skipif(not _HAVE_NUMBA, reason="numba is not installed")

#: measured at most 1 (float64) and 1 (float32) over the sampled ranges
FUNCTION_ULPS = 4




@pytest.fixture(autouse=True, scope="module")
def _cache_dir(tmp_path_factory):
    # the kernels this module compiles go to a folder of its own
    old = os.environ.get("CHAINRULES_CACHE_DIR")
    os.environ["CHAINRULES_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    yield
    if old is None:
        del os.environ["CHAINRULES_CACHE_DIR"]
    else:
        os.environ["CHAINRULES_CACHE_DIR"] = old


def _kernel_calls():
    return sum(r["kernel_calls"] for r in kernels.stats())


def _prepared(jitted, *args):
    """``jitted(*args)`` recorded, and every stage of its plan's passes run
    (a replay runs one per call after the check): the calls after replay
    the plan's final programs."""
    jitted(*args)
    jitted.plan(*args).prepare()


def _staged(call, args, mode):
    """``call(*args)`` staged: recorded, prepared (every stage of the plan's
    passes run), checked, replayed twice, in ``mode`` (the values are
    arguments: what a plan computes from closed-over arrays alone is folded
    at recording)."""
    jitted = cr.jit(call, warn=False)
    with cr.fusion(kernels=mode):
        out = [jitted(*args)]
        jitted.plan(*args).prepare()
        out += [jitted(*args) for _ in range(3)]
    return out[-1], jitted


def _has_region(jitted, args):
    """Whether the plan of ``jitted`` on ``args`` runs a fused region."""
    plan = jitted.plan(*args)
    return plan is not None and any(v is kernels.run or v is kernel_scatter.run
                                    for v in plan.namespace.values())


def _three(call, args, where, compiled=True, wide_args=None, **agree):
    """Eager unfused, the plan's NumPy program and its compiled kernels
    agree; ``compiled``: a kernel ran (for calls whose regions it takes).
    ``wide_args``: ``args`` in a wider dtype, whose eager unfused result is
    what a result that cancels is compared with (the kernels' math library
    and NumPy's differ by an ulp or two, and a chain can amplify that)."""
    with cr.fusion(False):
        plain = call(*args)
        if wide_args is not None:
            agree["truth"] = call(*wide_args)
    numpy_plan, _ = _staged(call, args, False)
    before = _kernel_calls()
    kernel_plan, jitted = _staged(call, args, "always")
    _agree(numpy_plan, plain, where + " (NumPy plan)", **agree)
    _agree(kernel_plan, numpy_plan, where + " (kernel against NumPy plan)", **agree)
    _agree(kernel_plan, plain, where + " (kernel against eager)", **agree)
    if compiled and _HAVE_NUMBA and _has_region(jitted, args):
        assert _kernel_calls() > before, (where, kernels.stats()[-3:])
    return kernel_plan


# -- single operations against NumPy ------------------------------------------------------
_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-310, -1e-310, 1e300, -1e300,
                     np.inf, -np.inf, np.nan, 3.0, 7.25, -0.75, 1e-8])
_EXACT_UNARY = ["negative", "positive", "absolute", "fabs", "square", "sqrt", "reciprocal",
                "sign", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite",
                "logical_not", "conjugate"]
_EXACT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax",
                 "fmin", "greater", "less", "equal", "not_equal", "greater_equal",
                 "less_equal", "logical_and", "logical_or", "copysign"]
_FUNCTIONS = ["exp", "expm1", "log", "log1p", "log2", "log10", "exp2", "sin", "cos", "tan",
              "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
              "arctanh", "cbrt"]


def _region_values(exprs, env):
    """The kernel's values of ``exprs`` on ``env`` (every variable an array
    of one shape), called directly: also where it made a NaN or infinity."""
    program = ee.Program(exprs)
    region = kernels._Region(program, ("a",) * len(program.variables),
                             next(iter(env.values())).shape)
    inputs = [env[name] for _, name, _ in program.variables]
    kernels._compile(region, inputs)
    assert region.kernel, region.reason
    outs = [np.empty(region.shape, dt) for dt in kernels._step_out_dtypes(program)]
    region.kernel(0, region.shape[0], *inputs, *outs)
    return outs, program(env, False)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        assert np.array_equal(nan, np.isnan(b))
        return np.array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8)) or \
            np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])) and \
            np.array_equal(a[~nan], b[~nan])
    return np.array_equal(a, b)


@needs_numba
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_exact_operations_equal_numpy_bit_for_bit(dt):
    x = ee.placeholder("x", dt)
    y = ee.placeholder("y", dt)
    with np.errstate(over="ignore"):  # (1e300 is infinite in float32)
        xs = np.repeat(_SPECIAL, _SPECIAL.size).astype(dt)
        ys = np.tile(_SPECIAL, _SPECIAL.size).astype(dt)
    exprs = tuple(getattr(np, name)(x) for name in _EXACT_UNARY) + tuple(
        getattr(np, name)(x, y) for name in _EXACT_BINARY) + (
        x ** 2, x ** 0.5, x ** -1, x ** 1, np.where(x > y, x, y * 2.0),
        x * 0.1, 0.1 - x, x / 3.0, (x + y) * (x - y) / 7.0)
    with np.errstate(all="ignore"):
        got, want = _region_values(exprs, {"x": xs, "y": ys})
    names = _EXACT_UNARY + _EXACT_BINARY + ["**2", "**0.5", "**-1", "**1", "where",
                                            "x*0.1", "0.1-x", "x/3", "(x+y)(x-y)/7"]
    outs = iter(got)
    for name, w in zip(names, want):
        g = next(outs)
        assert g.dtype == np.asarray(w).dtype, name
        assert _same_bits(g, w), (name, xs[g != w], ys[g != w], g[g != w], w[g != w])


@needs_numba
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_functions_within_a_few_ulps(dt):
    x = ee.placeholder("x", dt)
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(-0.99, 0.99, 400), rng.uniform(1.01, 30, 400),
                         np.array([0.0, -0.0, np.inf, -np.inf, np.nan])]).astype(dt)
    exprs = tuple(getattr(np, name)(x) for name in _FUNCTIONS) + (
        np.arctan2(x, x * 0.5 - 1), np.hypot(x, 2.0 - x), np.power(np.abs(x), 1.5), x ** 3)
    with np.errstate(all="ignore"):
        got, want = _region_values(exprs, {"x": xs})
    eps = np.finfo(dt).eps
    for name, g, w in zip(_FUNCTIONS + ["arctan2", "hypot", "power", "**3"], got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype, name
        assert np.array_equal(np.isnan(g), np.isnan(w)), name
        fin = np.isfinite(w)
        assert np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]), name
        err = np.abs(g[fin].astype(np.float64) - w[fin]) / np.maximum(
            np.abs(w[fin].astype(np.float64)), np.finfo(dt).tiny)
        assert np.max(err, initial=0) <= FUNCTION_ULPS * eps, (name, np.max(err) / eps)


@needs_numba
def test_bool_and_integer_values_keep_numpy_semantics():
    b = ee.placeholder("b", np.bool_)
    c = ee.placeholder("c", np.bool_)
    i = ee.placeholder("i", np.int64)
    x = ee.placeholder("x", np.float64)
    exprs = (np.add(b, c) * x, np.multiply(b, c) + x, np.maximum(b, c) * 1.5,
             np.where(b, i * 3, i - 7) * x, np.sign(i) * x, np.absolute(i) + 0.5)
    rng = np.random.default_rng(1)
    env = {"b": rng.random(64) > 0.5, "c": rng.random(64) > 0.3,
           "i": rng.integers(-5, 5, 64), "x": rng.standard_normal(64)}
    got, want = _region_values(exprs, env)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.asarray(w).dtype
    with pytest.raises(kernels.NotCompilable, match="integer power"):
        kernels.kernel_source(ee.Program((i ** 2 * x,)), ("a", "a"))


def test_complex_programs_are_not_compiled():
    z = ee.placeholder("z", np.complex128)
    program = ee.Program((z * z,))
    with pytest.raises(kernels.NotCompilable, match="complex"):
        kernels.kernel_source(program, ("a",))


# -- plans: every expressible rule of the library inside a region -------------------------
@needs_numba
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_library_rule_three_ways(name, dt, request):
    if tier(request.config) == "fast" and EXPRESSIBLE.index(name) % 6:
        pytest.skip("a sample of the rules in the fast tier; --full runs every one")
    spec = SPECS[name]
    env, _ = _sample(spec, dt, n=48)
    args = tuple([env["x"]] + ([env["y"]] if hasattr(spec, "dx") else []))
    rng = np.random.default_rng(3)
    w = rng.uniform(0.5, 1.5, args[0].shape).astype(dt)
    ts = tuple(rng.standard_normal(a.shape).astype(dt) for a in args)
    op = spec.op

    def loss(a):
        return np.sum(np.real(w * op(*a)) * 0.75)

    with np.errstate(all="ignore"):
        if np.result_type(op(*args)) != dt:
            pytest.skip("a result of another dtype (outside a region)")
        _three(lambda a: cr.value_and_grad(loss)(a), (args,), "grad", infinite_inputs=True)
        _three(lambda a, t: cr.hvp(loss, a, t), (args, ts), "hvp", infinite_inputs=True)


# -- plans: random elementwise chains -----------------------------------------------------
@needs_numba
@settings(max_examples=25, deadline=None)
@given(chains())
# a chain of cos and tanh whose HVP cancels: the kernels' cos and NumPy's
# differ by an ulp, 18 ulps of the result's scale once amplified
@example(chain=((5,), (1,), "f64", [("sub", 0), ("cos", 0), ("cos", 0), ("cube", 0),
                                     ("scale", 0), ("cos", 0), ("shift", 0), ("square", 0),
                                     ("tanh", 0), ("sub", 9)], None, 0))
def test_random_chains_three_ways(chain):
    shape, yshape, dt, draw, x, y, special, f = chain_case(chain)
    with np.errstate(all="ignore"):
        out = f(x, y)
        tx, ty, w = draw(shape), draw(yshape), draw(out.shape)
        infinite = special is not None and np.isinf(special)
        wide = {np.float32: np.float64, np.float64: np.longdouble,
                np.complex128: np.clongdouble}[dt]
        wx, wy, wtx, wty, ww = (np.asarray(v, dtype=wide) for v in (x, y, tx, ty, w))
        if dt == np.complex128:
            _three(lambda x, y, tx, ty: cr.jvp(f, (x, y), (tx, ty)), (x, y, tx, ty), "jvp",
                   compiled=False, wide_args=(wx, wy, wtx, wty), infinite_inputs=infinite)
            return

        def loss(p, w):
            return np.sum(w * f(*p))

        _three(lambda p, w: cr.grad(loss)(p, w), ((x, y), w), "grad", compiled=False,
               wide_args=((wx, wy), ww), infinite_inputs=infinite)
        _three(lambda p, t, w: cr.hvp(lambda q: loss(q, w), p, t), ((x, y), (tx, ty), w),
               "hvp", compiled=False, wide_args=((wx, wy), (wtx, wty), ww),
               infinite_inputs=infinite)


# -- what a kernel keeps of NumPy's behaviour ---------------------------------------------
def _rosen(x):
    a = x[:-1]
    return np.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)


@needs_numba
def test_rosenbrock_hvp_runs_compiled_and_agrees():
    x = np.linspace(-1.2, 1.1, 500)
    v = np.cos(np.arange(500.0))
    out = _three(lambda x, v: cr.hvp(_rosen, x, v), (x, v), "hvp")
    assert _has_region(cr.jit(lambda x, v: cr.hvp(_rosen, x, v)), (x, v))
    np.testing.assert_allclose(out, cr.hessian(_rosen)(x) @ v, rtol=1e-12, atol=1e-9)


@needs_numba
def test_an_overflow_warns_as_numpy_does():
    # the kernel sees the infinity it made and the NumPy program runs again:
    # NumPy's warning, once, and its values
    def f(x):
        return np.sum(np.exp(x) * x)

    x = np.linspace(0.0, 800.0, 64)
    h = cr.jit(lambda x: cr.grad(f)(x), warn=False)
    with cr.fusion(kernels="always"):
        for _ in range(3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                h(x)
        with pytest.warns(RuntimeWarning, match="overflow") as rec:
            got = h(x)
    assert all(w.filename == __file__ for w in rec), [w.filename for w in rec]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, np.exp(x) * x + np.exp(x))
    with np.errstate(over="raise"), cr.fusion(kernels="always"):
        with pytest.raises(FloatingPointError):
            h(x)


def test_without_numba_the_numpy_program_runs(monkeypatch):
    monkeypatch.setattr(kernels, "_numba", False)
    x = np.linspace(-1.2, 1.1, 300)
    v = np.sin(np.arange(300.0))
    before = len(kernels.stats())
    with cr.fusion(False):
        plain = cr.hvp(_rosen, x, v)
    got, _ = _staged(lambda x, v: cr.hvp(_rosen, x, v), (x, v), "always")
    _agree(got, plain, "hvp")
    assert len(kernels.stats()) == before  # no region was even considered


@needs_numba
def test_threads_split_a_kernel_without_changing_results(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_WORK", 0)
    x = np.linspace(-1.2, 1.1, 4001)
    v = np.cos(np.arange(4001.0))
    with cr.fusion(threads=1):
        one, _ = _staged(lambda x, v: cr.hvp(_rosen, x, v), (x, v), "always")
    with cr.fusion(threads=2):
        two, _ = _staged(lambda x, v: cr.hvp(_rosen, x, v), (x, v), "always")
    np.testing.assert_array_equal(one, two)


@needs_numba
def test_the_mode_is_per_context():
    x = np.linspace(-1.2, 1.1, 700)
    seen = {}

    def worker():
        seen["mode"] = kernels.mode()

    with cr.fusion(kernels=False):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert kernels.mode() == "off"
    assert seen["mode"] == kernels.mode() != "off"
    with pytest.raises(ValueError, match="kernels must be"):
        with cr.fusion(kernels="sometimes"):
            pass
    assert cr.grad(_rosen)(x).shape == x.shape


@needs_numba
def test_auto_mode_compiles_a_hot_region_and_drops_a_slow_one(monkeypatch):
    kernels._forget()
    for name in ("COMPILE_SECONDS", "CACHED_SECONDS", "INIT_SECONDS"):
        monkeypatch.setattr(kernels, name, 0.0)
    monkeypatch.setattr(kernels, "MIN_GAIN", 1e9)  # no kernel can be fast enough
    x = np.linspace(-1.2, 1.1, 600)
    v = np.cos(np.arange(600.0))
    h = cr.jit(lambda x, v: cr.hvp(_rosen, x, v), warn=False)
    with cr.fusion(kernels=True):
        _prepared(h, x, v)
        for _ in range(kernels.MIN_CALLS + kernels.PROBE_CALLS + 2):
            h(x, v)
    (row,) = kernels.stats()
    assert row["compiled"] is False and row["reason"].startswith("slower than NumPy")
    # a program whose kernel lost runs NumPy without looking at its inputs
    looked = []
    real = kernels._classify
    monkeypatch.setattr(kernels, "_classify", lambda *a: looked.append(1) or real(*a))
    with cr.fusion(kernels=True):
        h(x, v)
    assert not looked
    monkeypatch.setattr(kernels, "_classify", real)
    kernels._forget()
    monkeypatch.setattr(kernels, "MIN_GAIN", 0.0)  # any kernel is kept
    h = cr.jit(lambda x, v: cr.hvp(_rosen, x, v), warn=False)
    with cr.fusion(kernels=True):
        _prepared(h, x, v)
        for _ in range(kernels.MIN_CALLS + kernels.PROBE_CALLS + 2):
            got = h(x, v)
    (row,) = kernels.stats()
    assert row["compiled"] is True and row["calls"] == kernels.MIN_CALLS
    with cr.fusion(False):
        _agree(got, cr.hvp(_rosen, x, v), "hvp")


@needs_numba
def test_a_plan_with_stages_left_compiles_no_kernel():
    # the programs of a plan whose passes have stages left are not the ones
    # its later replays run: they run as NumPy programs, even where every
    # program is compiled at once
    kernels._forget()
    x = np.linspace(-1.2, 1.1, 600)
    v = np.cos(np.arange(600.0))
    h = cr.jit(lambda x, v: cr.hvp(_rosen, x, v), warn=False)
    with cr.fusion(kernels="always"):
        for _ in range(4):  # recorded, checked, two stages
            got = h(x, v)
        assert kernels.stats() == []
        h.plan(x, v).prepare()
        want = got
        got = h(x, v)
    assert kernels.stats() and all(row["compiled"] for row in kernels.stats())
    with cr.fusion(False):
        _agree(got, cr.hvp(_rosen, x, v), "hvp")
        _agree(want, cr.hvp(_rosen, x, v), "hvp")


@needs_numba
def test_a_cold_program_is_only_timed(monkeypatch):
    # before a program has spent the time a compile needs, its calls run
    # the NumPy program, timed, and nothing else (its inputs are not even
    # classified: a call costs two clock reads)
    kernels._forget()
    monkeypatch.setattr(kernels, "CACHED_SECONDS", 1e9)
    looked = []
    real = kernels._classify
    monkeypatch.setattr(kernels, "_classify", lambda *a: looked.append(1) or real(*a))
    x = np.linspace(-1.2, 1.1, 600)
    v = np.cos(np.arange(600.0))
    h = cr.jit(lambda x, v: cr.hvp(_rosen, x, v), warn=False)
    with cr.fusion(kernels=True):
        for k in range(10):
            got = h(x, v)
            if k == 0:
                h.plan(x, v).prepare()  # (every stage of the plan's passes run now)
    assert not looked and kernels.stats() == []
    assert kernels._warm and all(w.calls == 9 and w.state == "cold"
                                 for w in kernels._warm.values())
    with cr.fusion(False):
        _agree(got, cr.hvp(_rosen, x, v), "hvp")


@needs_numba
def test_a_second_process_loads_the_kernel_from_disk(tmp_path):
    script = (
        "import time, numpy as np, chainrules as cr\n"
        "from chainrules import kernels, fused_sweeps as fs\n"
        "fs.MIN_SIZE = fs.MIN_SIZE_SECOND = fs.MIN_NONLINEAR = 0\n"
        "x = np.linspace(-1.2, 1.1, 300); v = np.cos(np.arange(300.0))\n"
        "def rosen(x):\n"
        "    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)\n"
        "import pathlib\n"
        "cache = pathlib.Path(kernels.cache_dir()) / '__pycache__'\n"
        "print(cache.exists() and any(p.suffix == '.nbi' for p in cache.iterdir()))\n"
        "h = cr.jit(lambda x, v: cr.hvp(rosen, x, v))\n"
        "with cr.fusion(kernels='always'):\n"
        "    h(x, v); h.plan(x, v).prepare()\n"
        "    for _ in range(3): h(x, v)\n"
        "print(kernels.stats()[0]['compiled'])\n")
    env = dict(os.environ, CHAINRULES_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    assert first == ["False", "True"] and second == ["True", "True"], (first, second)
    assert any(p.suffix == ".nbi" for p in (tmp_path / "kernels" / "__pycache__").iterdir())
    os.environ["CHAINRULES_CACHE_DIR"], old = str(tmp_path), os.environ[
        "CHAINRULES_CACHE_DIR"]
    try:
        kernels.clear_cache()
        assert not (tmp_path / "kernels").exists()
    finally:
        os.environ["CHAINRULES_CACHE_DIR"] = old


@needs_numba
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_strided_2d_regions_run_compiled(dt):
    # total variation: every value of the region a strided view of the image
    def tv(x):
        dx = x[1:, :-1] - x[:-1, :-1]
        dy = x[:-1, 1:] - x[:-1, :-1]
        return np.sum(np.sqrt(dx * dx + dy * dy + 1e-2))

    x = np.random.default_rng(5).standard_normal((30, 41)).astype(dt)
    v = np.random.default_rng(6).standard_normal((30, 41)).astype(dt)
    _three(lambda x: cr.grad(tv)(x), (x,), "grad")
    _three(lambda x, v: cr.hvp(tv, x, v), (x, v), "hvp")
    assert any(r["layout"] == "N" and r["kernel_calls"] for r in kernels.stats())
    # F-ordered values: one run of elements in Fortran order
    xf = np.asfortranarray(x)
    _three(lambda x: cr.grad(lambda a: np.sum(np.tanh(a) * a))(x), (xf,), "grad, F order")


@needs_numba
def test_auto_mode_compiles_a_strided_2d_region(monkeypatch):
    # (the tiered path writes the loop nest of the region's dimensions, as
    # "always" does)
    kernels._forget()
    for name in ("COMPILE_SECONDS", "CACHED_SECONDS", "INIT_SECONDS", "MIN_GAIN"):
        monkeypatch.setattr(kernels, name, 0.0)

    def tv(x):
        dx = x[1:, :-1] - x[:-1, :-1]
        dy = x[:-1, 1:] - x[:-1, :-1]
        return np.sum(np.sqrt(dx * dx + dy * dy + 1e-2))

    x = np.random.default_rng(5).standard_normal((30, 41))
    v = np.random.default_rng(6).standard_normal((30, 41))
    h = cr.jit(lambda x, v: cr.hvp(tv, x, v), warn=False)
    with cr.fusion(kernels=True):
        _prepared(h, x, v)
        for _ in range(kernels.MIN_CALLS + kernels.PROBE_CALLS + 2):
            got = h(x, v)
    rows = [r for r in kernels.stats() if r["layout"] == "N"]
    assert rows and all(r["compiled"] and r["kernel_calls"] for r in rows), rows
    with cr.fusion(False):
        _agree(got, cr.hvp(tv, x, v), "hvp")


@needs_numba
def test_chunks_of_a_dask_array_run_compiled_in_the_callers_mode(monkeypatch):
    da = pytest.importorskip("dask.array")
    # (the default every other thread sees: "always", so "off" must come
    # from the caller's context)
    monkeypatch.setattr(kernels, "_from_environment", lambda: "always")
    import dask

    def loss(x):
        d = x - 0.5
        return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2)

    xn = np.random.default_rng(3).random(4000)
    x = da.from_array(xn, chunks=1000)
    v = da.ones(4000, chunks=1000)
    with cr.fusion(False):
        expect = cr.hvp(loss, xn, np.ones(4000))
    for mode, compiled in [(False, False), ("always", True)]:
        kernels._forget()
        with cr.fusion(kernels=mode):
            got = cr.hvp(loss, x, v)
        # (computed outside the context: dask's threads do not carry it)
        with dask.config.set(scheduler="threads"):
            got = got.compute()
        ran = sum(r["kernel_calls"] for r in kernels.stats())
        assert (ran > 0) is compiled, (mode, kernels.stats())
        _agree(got, expect, f"dask hvp, kernels={mode}")
    # (a distributed scheduler pickles the chunks' function)
    import pickle
    with cr.fusion(kernels="always"):
        runner = pickle.loads(pickle.dumps(kernels.chunk_runner()))
    assert runner.mode == "always"


@needs_numba
def test_a_kernel_reports_a_non_finite_value_that_no_result_shows():
    # exp(800) overflows; 1 / inf is 0 and maximum(-inf, 0) is 0: the
    # results are finite, so the NaN/infinity test must see the
    # intermediate; x * x + 1 carries its overflow to the result
    x = ee.placeholder("x", np.dtype(float))
    e = ee.apply(np.exp, (x,))
    cases = [(ee.apply(np.divide, (ee.constant(1.0), e)), 800.0),
             (ee.apply(np.maximum, (ee.apply(np.negative, (e,)), ee.constant(0.0))), 800.0),
             (ee.apply(np.add, (ee.apply(np.multiply, (x, x)), ee.constant(1.0))), 1e200)]
    for expr, big in cases:
        region = kernels._Region(ee.Program((expr,)), ("a",), (3,))
        kernels._compile(region, [np.ones(3)])
        assert region.kernel, region.reason
        out = np.empty(3)
        assert not region.kernel(0, 3, np.array([1.0, 2.0, 3.0]), out)
        assert region.kernel(0, 3, np.array([1.0, big, 3.0]), out), (expr, out)
