"""The partials of every derived unary and binary rule of the rule library,
recorded as expressions (``chainrules.elementwise_expr``): each is either
expressible, and then ``evaluate`` reproduces the partial callable bit for
bit and numexpr agrees with it, or it is listed below with the reason it is
not, so that a new rule has to be classified here."""

import itertools
import types

import numpy as np
import pytest

import chainrules.rules  # noqa: F401  (registers the library)
from chainrules import elementwise_expr as ee
from chainrules.registry import DISPATCHERS
from chainrules.rules import arithmetic

# every family, scipy.special's included (they register when it is imported)
chainrules.rules.load_all()

try:
    import numexpr
except ImportError:  # numexpr is optional
    numexpr = None


def _names(prefix, names):
    return [f"{prefix}.{n}" for n in names.split()]


_SS, _SE = "scipy.special", "chainrules.rules.special_elementary"
_SI, _SO = "chainrules.rules.special_integrals", "chainrules.rules.special_odes"
_REASONS = {
    "the partial calls a SciPy function (a ufunc of scipy.special: no expression)":
        _names(_SS, "log_expit gammaln gamma betaln beta i0 i1 i0e i1e loggamma j0 j1 y0 y1 "
               "k0 k1 k0e k1e sindg cosdg binom poch boxcox boxcox1p ber bei ker kei kerp "
               "keip owens_t ellipk ellipe itstruve0 itmodstruve0 it2struve0 tklmbda")
        + _names(_SE, "airy_ai airy_aip airy_bi airy_bip")
        + _names(_SI, "iti0k0_i iti0k0_k itj0y0_j itj0y0_y it2i0k0_k it2j0y0_y itairy_apt "
                 "itairy_bpt itairy_ant itairy_bnt")
        + _names(_SO, "ellipj_sn ellipj_cn ellipj_dn ellipj_ph")
        + _names(_SS, "psi elliprc"),
    "one partial refuses by design: no closed-form derivative in an order, degree, "
    "count or shape parameter (it raises MissingRuleError when that argument is traced)":
        ["_zeta"]
        + _names(_SS, "iv ive jv yv yn kv kve gammaincinv gammainccinv expn hyp0f1 jve yve "
                 "kn struve modstruve pdtr pdtrc pdtri chdtr chdtrc chdtri stdtr stdtrit "
                 "smirnov smirnovi eval_legendre eval_chebyt eval_chebyu eval_chebyc "
                 "eval_chebys eval_sh_legendre eval_sh_chebyt eval_sh_chebyu eval_laguerre "
                 "hankel1 hankel2 hankel1e hankel2e")
        + _names(_SO, "pbdv_d pbdv_dp pbvv_v pbvv_vp pbwa_w pbwa_wp")
        + _names("chainrules.rules.special_elliptic", "ellipkinc_dmm ellipeinc_dmm"),
    "the partial asks its argument for a shape (array_value, np.shape: scalars and "
    "lazy arrays are told apart), and most of them call SciPy as well":
        _names(_SS, "rgamma huber gammainc gammaincc exprel spence inv_boxcox inv_boxcox1p "
               "berp beip ellipkm1 ellipkinc ellipeinc agm kolmogorov kolmogi")
        + _names(_SE, "shichi_shi airye_ai airye_aip airye_bi airye_bip")
        + _names(_SI, "it2i0k0_i it2j0y0_j modfresnelp_f modfresnelm_f")
        + _names("chainrules.rules.special_elliptic", "ellipkinc_dm ellipeinc_dm"),
    "the partial calls np.sinc, a Python function of NumPy (not a ufunc)": [f"{_SE}.sici_si"],
}
_NOT_EXPRESSIBLE = {n: why for why, names in _REASONS.items() for n in names}

#: expressible, but not written for numexpr (name -> dtypes of the inputs, why)
_NOT_NUMEXPR = {
    "scipy.special.wofz": ((np.float64, np.float32), "complex output"),
    f"{_SI}.modfresnelp_k": ((np.float64, np.float32), "complex output"),
    f"{_SI}.modfresnelm_k": ((np.float64, np.float32), "complex output"),
    "numpy.float_power": ((np.float32,), "float_power computes float32 inputs in "
                          "float64, numexpr's power in float32"),
}


def _library_specs():
    """Every unary and binary derived spec in the registry, by rule name, and
    the partials of ``power`` and ``float_power`` (whose registered makers
    wrap the derived ones) and of ``x ** p`` for constant exponents."""
    out = {}
    for d in DISPATCHERS.values():
        for maker in d.funcs.values():
            s = getattr(maker, "spec", None)
            if s is not None and (hasattr(s, "dx") or hasattr(s, "d")):
                assert out.get(s.name, s) is s, f"two specs named {s.name}"
                out[s.name] = s
    for op in (np.power, np.float_power):
        dx, dy, (dxx, dxy, dyy) = arithmetic._power_partials(op)
        out[f"numpy.{op.__name__}"] = types.SimpleNamespace(
            name=f"numpy.{op.__name__}", op=op, dx=dx, dy=dy, dxx=dxx, dxy=dxy, dyy=dyy)
    for p in (0, 1, 2, 3, 0.5, -1.5, 2.5):
        s = arithmetic._PowerSpec(p, "numpy.power")
        name = f"numpy.power(x, {p!r})"
        out[name] = types.SimpleNamespace(name=name, op=lambda x, p=p: x ** p, d=s.d,
                                          d2=s.d2, ratio=s.ratio)
    return out


SPECS = _library_specs()
_RANGES = [(-3, 3), (0.1, 3), (-0.95, 0.95), (1.05, 4)]


def _fields(spec):
    return ee.BINARY_FIELDS if hasattr(spec, "dx") else ee.UNARY_FIELDS


def _sample(spec, dt, n=1000):
    """Arguments from the ranges (one per argument) where the rule's output
    and partials are finite most often, with the output and the partials
    computed by the callables."""
    rng = np.random.default_rng(7)
    best = None
    for ranges in itertools.product(_RANGES, repeat=2 if hasattr(spec, "dx") else 1):
        args = [rng.uniform(lo, hi, n).astype(dt) for lo, hi in ranges]
        with np.errstate(all="ignore"):
            out = spec.op(*args)
            env = dict(zip("xyz", args + [out]))
            refs = {f: d(*env.values()) if callable(d) else d
                    for f in _fields(spec) if (d := getattr(spec, f, None)) is not None}
        score = sum(np.count_nonzero(np.isfinite(v)) for v in [out, *refs.values()])
        if best is None or score > best[0]:
            best = (score, env, refs)
    return best[1], best[2]


def test_every_derived_rule_is_classified():
    unknown = [n for n, s in SPECS.items()
               if ee.expressions(s) is None and n not in _NOT_EXPRESSIBLE]
    assert not unknown, f"not expressible and not listed with a reason: {unknown}"
    wrongly = [n for n in _NOT_EXPRESSIBLE if n in SPECS and ee.expressions(SPECS[n]) is not None]
    assert not wrongly, f"listed as not expressible but expressible: {wrongly}"
    expressible = [n for n, s in SPECS.items() if ee.expressions(s) is not None]
    # 75 registered rules, power and float_power, 7 constant exponents
    assert len(expressible) >= 84, len(expressible)


EXPRESSIBLE = sorted(n for n in SPECS if n not in _NOT_EXPRESSIBLE)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_evaluate_is_the_partial_bit_for_bit(name, dt):
    spec = SPECS[name]
    env, refs = _sample(spec, dt)
    exprs = ee.expressions(spec, {k: v.dtype for k, v in env.items()})
    assert exprs is not None
    for f, ref in refs.items():
        with np.errstate(all="ignore"):
            got = ee.evaluate(exprs[f], env)
        assert np.result_type(got) == np.result_type(ref), (f, got, ref)
        assert np.array_equal(got, ref, equal_nan=True), f
        if np.ndim(ref):
            out = np.empty_like(ref)
            with np.errstate(all="ignore"):
                assert ee.evaluate(exprs[f], env, out=out) is out
            assert np.array_equal(out, ref, equal_nan=True), f


def _ulps(err, truth, dt):
    return err / np.spacing(np.maximum(np.abs(truth), np.finfo(dt).tiny).astype(dt)).astype(
        np.float64)


def _truth(spec, env, f, dt):
    """The partial evaluated with the same expression in a wider type
    (float64 for float32, long double for float64), or None when the
    platform's long double is no wider."""
    wide = np.float64 if dt == np.float32 else np.longdouble
    if np.finfo(wide).nmant <= np.finfo(dt).nmant:
        return None
    wenv = {k: v.astype(wide) for k, v in env.items()}
    with np.errstate(all="ignore"):
        return ee.evaluate(ee.expressions(spec, wide)[f], wenv)


@pytest.mark.skipif(numexpr is None, reason="numexpr is not installed")
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_numexpr_agrees_with_the_partial(name, dt):
    """numexpr's result has the partial's dtype and agrees with it within 4
    ulps (measured: 4 at most, both dtypes), or, where the formula cancels
    (sinc, shichi's chi and log_ndtr's second partials, pseudo_huber's,
    float32 power's dxy...), is about as accurate as the partial itself:
    against the expression evaluated in a wider type (long double, float64
    for float32), its worst error is at most three times the partial's worst
    plus 4 ulps (measured: at most 1.94 times, float32 power's dxy)."""
    spec = SPECS[name]
    env, refs = _sample(spec, dt)
    exprs = ee.expressions(spec, {k: v.dtype for k, v in env.items()})
    if dt in _NOT_NUMEXPR.get(name, ((),))[0]:
        with pytest.raises(ee.NotExpressible):
            for f in refs:
                ee.to_numexpr(exprs[f], {})
        return
    for f, ref in refs.items():
        with np.errstate(all="ignore"):
            got = ee.evaluate_numexpr(exprs[f], env)
        assert np.result_type(got) == np.result_type(ref), f
        if exprs[f].op == "const":
            assert got == ref
            continue
        got, ref = np.broadcast_arrays(got, ref)
        assert np.array_equal(np.isnan(got), np.isnan(ref)), f
        fin = np.isfinite(ref)
        assert np.array_equal(got[~fin], ref[~fin], equal_nan=True), f
        rdt = np.result_type(ref).type
        err = _ulps(np.abs(got[fin].astype(np.float64) - ref[fin]), ref[fin], rdt)
        if err.size == 0 or err.max() <= 4:
            continue
        truth = _truth(spec, env, f, rdt)
        assert truth is not None, (f, err.max())
        truth = np.broadcast_to(truth, fin.shape)[fin]
        e_ne = _ulps(np.abs(got[fin] - truth), truth, rdt).max()
        e_np = _ulps(np.abs(ref[fin] - truth), truth, rdt).max()
        assert e_ne <= 3 * e_np + 4, (f, e_ne, e_np)


def test_partials_read_only_the_values_their_rule_keeps():
    """The variables of the recorded partials are among the values the rule
    keeps (``saves=``), so a fused sweep knows what to hold."""
    for name in EXPRESSIBLE:
        spec = SPECS[name]
        if getattr(spec, "saves", None) is None:
            continue
        used = set().union(*(ee.variables(e) for e in ee.expressions(spec).values()
                             if e is not None))
        assert used <= set(spec.saves), (name, used, spec.saves)


# -- the module itself ---------------------------------------------------------------
X64, X32 = ee.placeholder("x", np.float64), ee.placeholder("x", np.float32)


def test_operators_ufuncs_and_where_are_recorded_and_shared():
    x = X64
    e = np.where(x > 0, np.exp(-x) * (x + 1), (x + 1) ** 2)
    assert e.op == "where" and e.args[0].op == "greater"
    assert e.args[1].args[1] is e.args[2].args[0]  # x + 1 is one node
    assert (1 - x).args[0].value == 1 and (1 - x).op == "subtract"
    assert abs(x).op == "absolute" and (-x).op == "negative" and (~(x > 1)).op == "invert"
    with pytest.raises(AttributeError):
        e.op = "add"
    assert ee.variables(e) == {"x"}


@pytest.mark.parametrize("partial", [
    lambda x: scipy_special().gamma(x),  # a ufunc of SciPy
    lambda x: x[0], lambda x: x.shape, lambda x: np.asarray(x), lambda x: float(x),
    lambda x: 1.0 if x > 0 else 2.0, lambda x: math_exp(x), lambda x: np.sum(x),
    lambda x: x @ x, lambda x: x.astype(np.float32), lambda x: np.frexp(x)[0],
    lambda x: x * np.ones(3), lambda x: len(x), lambda x: x // 2,
])
def test_what_placeholders_cannot_record_raises(partial):
    with pytest.raises(ee.NotExpressible):
        with np.errstate(all="ignore"):
            partial(X64)
    spec = types.SimpleNamespace(name="f", d=lambda x, y: partial(x), d2=None, ratio=None)
    assert ee.expressions(spec) is None
    assert "partial d" in ee.explain(spec)


def scipy_special():
    import scipy.special

    return scipy.special


def math_exp(x):
    import math

    return math.exp(x)


def test_dtypes_follow_numpy_promotion():
    assert (X32 * 0.5).dtype == np.float32  # a Python float is weak
    assert (X32 * np.float64(0.5)).dtype == np.float64  # a NumPy scalar is not
    assert np.where(X32 > 0, 1, X32).dtype == np.float32
    assert (X32 > 1).dtype == np.bool_ and (2 * X32 + 1).dtype == np.float32
    x = np.linspace(0.5, 2, 7, dtype=np.float32)
    for e, ref in [(X32 * 0.1 + 1 / X32, x * 0.1 + 1 / x),
                   (np.float64(0.1) * X32, np.float64(0.1) * x),
                   (np.where(X32 > 1, X32 ** 2, -X32), np.where(x > 1, x ** 2, -x))]:
        got = ee.evaluate(e, {"x": x})
        assert got.dtype == ref.dtype and np.array_equal(got, ref)
    with pytest.raises(ee.ExprInputError):
        ee.evaluate(X32 * 2, {"x": x.astype(np.float64)})
    with pytest.raises(ee.ExprInputError):
        ee.evaluate(X32 * 2, {"y": x})


def test_evaluate_reuses_dead_temporaries():
    """tanh's second partial, -2 y (1 - y y): the callable holds three
    arrays at its peak, evaluate two (each intermediate's memory is reused
    once it is dead), and one with ``out=`` (which holds -2 y meanwhile)."""
    import tracemalloc

    spec = SPECS["numpy.tanh"]
    y = np.tanh(np.linspace(-2, 2, 200_000))
    e = ee.expressions(spec)["d2"]
    out = np.empty_like(y)

    def peak(f):
        tracemalloc.start()
        f()
        p = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return p / y.nbytes

    by_callable = peak(lambda: spec.d2(None, y))
    by_evaluate = peak(lambda: ee.evaluate(e, {"y": y}))
    into_out = peak(lambda: ee.evaluate(e, {"y": y}, out=out))
    assert np.array_equal(ee.evaluate(e, {"y": y}), spec.d2(None, y))
    y2 = y.copy()  # out= an input: never holds an intermediate while it is read
    assert np.array_equal(ee.evaluate(e, {"y": y2}, out=y2), spec.d2(None, y))
    assert by_evaluate < 2.1 and into_out < 1.1 and by_evaluate < by_callable - 0.9, (
        by_callable, by_evaluate, into_out)


@pytest.mark.skipif(numexpr is None, reason="numexpr is not installed")
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_numexpr_rewrites_are_exact(dt):
    """sign, maximum, minimum, fmax, fmin, isnan, isfinite, isinf and the
    rest, written with numexpr's operations, agree with NumPy bit for bit,
    signed zeros and NaNs included."""
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0, 3.0]
    a, b = (np.array(v, dtype=dt) for v in zip(*itertools.product(special, repeat=2)))
    x, y = ee.placeholder("x", dt), ee.placeholder("y", dt)
    env = {"x": a, "y": b}
    with np.errstate(all="ignore"):
        for uf in (np.sign, np.isnan, np.isfinite, np.isinf, np.square, np.reciprocal,
                   np.absolute, np.negative, np.sqrt):
            _same_bits(ee.evaluate_numexpr(uf(x), env), uf(a), uf)
    for uf in (np.maximum, np.minimum, np.fmax, np.fmin, np.add, np.greater_equal):
        # (fmax and fmin of 0.0 and -0.0: NumPy's own zero varies with the length)
        with np.errstate(all="ignore"):
            _same_bits(ee.evaluate_numexpr(uf(x, y), env), uf(a, b), uf,
                       signs=uf not in (np.fmax, np.fmin))
    _same_bits(ee.evaluate_numexpr((x > 0) & ~(y < 1), env), (a > 0) & ~(b < 1), "bool")


def _same_bits(got, ref, what, signs=True):
    assert got.dtype == ref.dtype, what
    assert np.array_equal(got, ref, equal_nan=True), what
    if ref.dtype.kind == "f" and signs:
        assert np.array_equal(np.signbit(got), np.signbit(ref)), what


def test_numexpr_strings_and_their_constants():
    assert ee.to_numexpr(1 - X64 * X64) == "((1) - (x * x))"
    assert ee.to_numexpr(X64 * 0.1) == "(x * (0.1))"  # a double, as NumPy's
    with pytest.raises(ee.NotExpressible, match="constants="):
        ee.to_numexpr(X32 * 0.1)  # a literal would be double, NumPy's is float32
    consts = {}
    assert ee.to_numexpr(X32 * 0.1 + X32 ** 2 + np.sqrt(X32) * 0.1, consts) == (
        "(((x * k0) + (x ** (2))) + (sqrt(x) * k0))")
    assert consts == {"k0": np.float32(0.1)} and type(consts["k0"]) is np.float32
    for e in (np.log2(X64), np.hypot(X64, X64), np.cbrt(X64), np.copysign(X64, 1.0),
              np.floor(X64), np.float_power(X32, 2.0)):
        with pytest.raises(ee.NotExpressible):
            ee.to_numexpr(e, {})
    with pytest.raises(ee.NotExpressible):
        ee.to_numexpr(ee.placeholder("x", np.complex128) * 2, {})


@pytest.mark.skipif(numexpr is None, reason="numexpr is not installed")
def test_numexpr_float32_keeps_float32():
    x = np.linspace(0.1, 3, 1001, dtype=np.float32)
    e = (X32 * 0.1 - 1 / X32) * np.exp(-X32 * 0.5)
    got, ref = ee.evaluate_numexpr(e, {"x": x}), ee.evaluate(e, {"x": x})
    assert got.dtype == ref.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=4 * np.finfo(np.float32).eps, atol=0)


def test_module_imports_and_writes_strings_without_numexpr():
    import subprocess
    import sys

    code = ("import sys; sys.modules['numexpr'] = None\n"
            "import numpy as np\n"
            "from chainrules import elementwise_expr as ee\n"
            "x = ee.placeholder('x', np.float64)\n"
            "print(ee.to_numexpr(np.where(x > 0, np.tanh(x), 0.5 * x)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "where((x > (0)), tanh(x), ((0.5) * x))"


@pytest.mark.skipif(numexpr is None, reason="numexpr is not installed")
def test_half_integer_powers_keep_numpys_values_at_infinity():
    """numexpr turns a literal exponent p + 1/2 into products and a sqrt
    (NaN at -inf, where pow is inf): such an exponent is passed as a named
    constant instead."""
    a = np.array([-np.inf, -0.0, 0.0, 4.0, np.inf])
    for e in (X64 ** 2.5, np.power(X64, -1.5), X64 ** 0.5, X64 ** 3):
        consts = {}
        with np.errstate(all="ignore"):
            _same_bits(ee.evaluate_numexpr(e, {"x": a}), ee.evaluate(e, {"x": a}), e)
        assert ("k0" in ee.to_numexpr(e, consts)) == (e.args[1].value in (2.5, -1.5))


def test_evaluate_broadcasts_binary_partials():
    spec = SPECS["numpy.arctan2"]
    x, y = np.linspace(-1, 1, 3)[:, None], np.linspace(0.5, 2, 4)
    env = {"x": x, "y": y, "z": np.arctan2(x, y)}
    for f, e in ee.expressions(spec).items():
        ref = getattr(spec, f)(x, y, env["z"])
        out = np.empty((3, 4))
        assert np.array_equal(ee.evaluate(e, env), ref)
        assert ee.evaluate(e, env, out=out) is out and np.array_equal(out, ref)


def test_scratch_buffers_carry_over_between_calls():
    """``scratch``: the intermediates one call made serve the next call on
    values of the same shapes (a block of the same data); results and an
    ``out`` given are never left there."""
    x, y = ee.placeholder("x", np.float64), ee.placeholder("y", np.float64)
    s = ee.apply(np.sin, (x,))
    program = ee.Program((ee.apply(np.add, (ee.apply(np.multiply, (s, y)),
                                            ee.apply(np.exp, (s,)))),))
    rng = np.random.default_rng(5)
    envs = [{"x": rng.standard_normal(50), "y": rng.standard_normal(50)} for _ in range(3)]
    scratch = []
    (r0,) = program(envs[0], False, into=[np.empty(50)], scratch=scratch)
    assert scratch and all(type(a) is np.ndarray and a.shape == (50,) for a in scratch)
    made = {id(a) for a in scratch}
    for env in envs[1:]:
        dest = np.empty(50)
        (r,) = program(env, False, into=[dest], scratch=scratch)
        assert r is dest and np.array_equal(r, program(env, False)[0])
        assert {id(a) for a in scratch} == made  # nothing new was allocated
    (r,) = program(envs[0], False, scratch=scratch)  # a result of its own
    assert np.array_equal(r, r0)
    assert not any(np.shares_memory(x, a) for x in (r, r0) for a in scratch)
    # values of another shape: allocated as usual, still right
    small = {"x": np.linspace(0, 1, 7), "y": np.linspace(1, 2, 7)}
    assert np.array_equal(program(small, False, scratch=scratch)[0], program(small, False)[0])
    out = np.empty(50)
    program(envs[0], False, out=out, scratch=scratch)
    assert not any(a is out for a in scratch)


def test_expressions_and_programs_pickle():
    # (a program goes to dask's worker processes; its nodes come back interned)
    import pickle

    x = ee.placeholder("x", np.float32)
    e = np.where(x > 0, np.sin(x) * 0.1, x ** 2) + np.float32(3)
    assert pickle.loads(pickle.dumps(e)) is e
    p = pickle.loads(pickle.dumps(ee.Program((e, x))))
    v = np.arange(-2, 3, dtype=np.float32)
    got = p({"x": v})
    np.testing.assert_array_equal(got[0], ee.evaluate(e, {"x": v}))
    assert got[0].dtype == np.float32 and got[1] is v
