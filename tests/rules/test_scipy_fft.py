"""scipy.fft on traced values: chainrules' backend of scipy.fft and the twins
in chainrules.scipy.fft. Values and dtypes against SciPy's own for every
transform, norm, DCT/DST type, padding, truncation and axes; derivatives with
the rule checkers; plain calls untouched (under SciPy's backend control too);
the backend registered when scipy.fft is imported after chainrules."""

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

sf = pytest.importorskip("scipy.fft")

import chainrules as cr  # noqa: E402
from chainrules.errors import UntraceableError  # noqa: E402
from chainrules.rules import scipy_fft as traced  # noqa: E402
from chainrules.scipy import fft as cf  # noqa: E402
from chainrules.testing import check_grads, check_hvp, check_rule  # noqa: E402

NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn",
       "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_1D = ["dct", "idct", "dst", "idst"]
REAL_ND = ["dctn", "idctn", "dstn", "idstn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ALL = ONE_D + N_D + REAL_1D + REAL_ND + ["fftshift", "ifftshift"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _inputs(shape, seed=0):
    """Real and complex inputs in every precision SciPy keeps apart."""
    rng = _rng(seed)
    r = rng.standard_normal(shape)
    c = r + 1j * rng.standard_normal(shape)
    return [r, c, r.astype(np.float32), c.astype(np.complex64), r.astype(np.float16),
            r.astype(np.longdouble)]


def _traced_value(f, x):
    """``f(x)`` computed on a traced ``x``."""
    out, _ = cr.vjp(f, x)
    return out


def _agree(name, kwargs, x):
    """The traced call gives SciPy's value and dtype, or SciPy's kind of error."""
    f = getattr(sf, name)
    try:
        ref = f(x, **kwargs)
    except Exception as exc:  # noqa: BLE001  (the traced call must fail alike)
        with pytest.raises(type(exc)):
            _traced_value(lambda x: f(x, **kwargs), x)
        return
    got = _traced_value(lambda x: f(x, **kwargs), x)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (name, kwargs, x.dtype)
    tol = 3e-6 if ref.dtype in (np.float32, np.complex64) else 1e-12
    scale = np.abs(ref).max() if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale,
                               err_msg=f"{name} {kwargs} {x.dtype}")


# -- values ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_ffts_match_scipy(name):
    for x in _inputs((3, 6)) + _inputs((5,)) + _inputs((1,)):
        for norm in NORMS:
            for n in (None, 1, 4, 9):
                for axis in (-1, 0):
                    _agree(name, dict(n=n, axis=axis, norm=norm), x)


@pytest.mark.parametrize("name", N_D)
def test_n_dimensional_ffts_match_scipy(name):
    cases = [{}, {"s": (3, 4)}, {"s": (5,), "axes": (0,)}, {"axes": (0, -1)},
             {"s": (-1, 7), "axes": (1, 0)}, {"axes": ()}, {"s": (2, 2), "axes": (0, 0)}]
    for x in _inputs((3, 4, 5)) + _inputs((2, 3)) + _inputs((1,)):
        for norm in NORMS:
            for kwargs in cases:
                _agree(name, dict(kwargs, norm=norm), x)


@pytest.mark.slow  # every combination of options: the full tier (--full)
@pytest.mark.parametrize("name", REAL_1D)
def test_dct_dst_of_every_type_match_scipy(name):
    for x in _inputs((3, 6)) + _inputs((4,)) + _inputs((1,)) + _inputs((2,)):
        for type_ in (1, 2, 3, 4, 5):
            for norm in NORMS:
                for n in (None, 2, 7):
                    for orthogonalize in (None, True, False):
                        _agree(name, dict(type=type_, n=n, axis=0, norm=norm,
                                          orthogonalize=orthogonalize), x)


@pytest.mark.slow  # every combination of options: the full tier (--full)
@pytest.mark.parametrize("name", REAL_ND)
def test_n_dimensional_dct_dst_match_scipy(name):
    cases = [{}, {"s": (3, 4)}, {"axes": (0, -1)}, {"s": (-1, 6), "axes": (2, 0)},
             {"axes": ()}]
    for x in _inputs((3, 4, 5)) + _inputs((2,)):
        for type_ in (1, 2, 3, 4):
            for norm in NORMS:
                for kwargs in cases:
                    for orthogonalize in (None, False):
                        _agree(name, dict(kwargs, type=type_, norm=norm,
                                          orthogonalize=orthogonalize), x)


@pytest.mark.parametrize("name", ["fft", "rfft", "dct", "fftn", "rfftn", "dctn", "irfftn"])
def test_zero_dimensional_inputs_behave_as_in_scipy(name):
    for x in _inputs(()):
        _agree(name, {}, x)


def test_invalid_arguments_raise_as_in_scipy():
    x = _rng().standard_normal((3, 4))
    for name, kwargs in [("fft", {"norm": "bogus"}), ("fft", {"plan": object()}),
                         ("fft", {"n": 0}), ("fftn", {"axes": (0, 5)}),
                         ("fftn", {"s": (2, 2, 2, 2)}), ("fftn", {"s": (2, 2), "axes": (0,)}),
                         ("rfftn", {"axes": ()}), ("rfft", {"axis": 2}),
                         ("dct", {"type": 0}), ("dct", {"type": 1, "n": 1})]:
        _agree(name, kwargs, x)
    _agree("rfft", {}, x + 1j)  # x must be a real sequence


# -- derivatives ------------------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS[1:])
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_fft_derivatives(name, norm):
    rng = _rng(1)
    x = rng.standard_normal((4, 6))
    if name not in REAL_INPUT:
        x = x + 1j * rng.standard_normal((4, 6))
    check_rule(getattr(sf, name), x, norm=norm)
    if name in ONE_D:  # padding and truncation, along the first axis
        check_rule(getattr(sf, name), x, n=7, axis=0, norm=norm)
        check_rule(getattr(sf, name), x, n=3, norm=norm)
    else:
        check_rule(getattr(sf, name), x, s=(5, 4), axes=(1, 0), norm=norm)


@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft", "fftn", "irfftn"])
def test_derivatives_at_real_inputs_of_complex_transforms(name):
    check_rule(getattr(sf, name), _rng(2).standard_normal((3, 5)), norm="ortho")


@pytest.mark.parametrize("norm", NORMS[1:])
@pytest.mark.parametrize("type_", [1, 2, 3, 4])
@pytest.mark.parametrize("name", REAL_1D + REAL_ND)
def test_dct_dst_derivatives(name, type_, norm):
    rng = _rng(3)
    x = rng.standard_normal((3, 5))
    one = name in REAL_1D
    check_rule(getattr(sf, name), x, type=type_, norm=norm)
    check_rule(getattr(sf, name), x, type=type_, norm=norm, orthogonalize=norm != "ortho",
               **({"n": 7, "axis": 0} if one else {"s": (4, 3), "axes": (1, 0)}))
    z = x + 1j * rng.standard_normal((3, 5))
    check_rule(getattr(sf, name), z, type=type_, norm=norm)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shift_derivatives(name):
    check_rule(getattr(sf, name), _rng(4).standard_normal((3, 5)), axes=1)


@pytest.mark.parametrize("name, kwargs", [
    ("rfft", {"norm": "ortho"}), ("hfft", {"n": 9}), ("irfftn", {"s": (4, 6)}),
    ("dct", {"type": 1}), ("idst", {"type": 3, "norm": "ortho"}),
    ("dctn", {"type": 4, "norm": "forward"})])
def test_hvp_of_nonlinear_functions_of_transforms(name, kwargs):
    rng = _rng(5)
    x = rng.standard_normal((3, 5))
    if name in ("hfft", "irfftn"):
        x = x + 1j * rng.standard_normal((3, 5))
    f = getattr(sf, name)
    check_hvp(f, x, call=lambda x, **kw: np.abs(f(np.sin(x), **kw)) ** 3, **kwargs)
    check_grads(lambda x: np.sum(np.cos(f(x, **kwargs)).real), x, order=2)


def test_float32_stays_float32():
    x = _rng(6).standard_normal(8).astype(np.float32)
    f = lambda x: np.sum(np.abs(sf.rfft(x)) ** 2) + np.sum(sf.dct(x, type=3) ** 2)
    out, _ = cr.vjp(lambda x: sf.fft(x), x)
    assert out.dtype == np.complex64
    assert cr.grad(f)(x).dtype == np.float32
    check_rule(sf.fft, x)
    check_rule(sf.dct, x, type=2, norm="ortho")


# -- the closed forms ---------------------------------------------------------------------
def test_unchanged_scipy_fft_code_differentiates_parseval():
    # the half spectrum of rfft counts every frequency but 0 and n/2 once
    # instead of twice: sum |X_k|^2 = (n |x|^2 + X_0^2 + X_{n/2}^2) / 2
    x = _rng(7).standard_normal(8)
    g = cr.grad(lambda x: np.sum(np.abs(sf.rfft(x)) ** 2))(x)
    alternating = (-1.0) ** np.arange(8)
    expected = 8 * x + np.sum(x) + np.sum(alternating * x) * alternating
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    for norm, scale in [(None, 8.0), ("ortho", 1.0), ("forward", 1 / 8)]:
        g = cr.grad(lambda x: np.sum(np.abs(sf.fft(x, norm=norm)) ** 2))(x)
        np.testing.assert_allclose(g, 2 * scale * x, rtol=1e-12)


def test_orthonormal_dct_and_dst_preserve_the_norm():
    x = _rng(8).standard_normal(7)
    for f in (sf.dct, sf.dst, sf.idct, sf.idst):
        for type_ in (1, 2, 3, 4):
            g = cr.grad(lambda x: np.sum(f(x, type=type_, norm="ortho") ** 2))(x)
            np.testing.assert_allclose(g, 2 * x, rtol=1e-12, err_msg=f"{f.__name__} {type_}")


def test_power_spectrum_hvp_is_the_gram_matrix():
    x, v = _rng(9).standard_normal((2, 6))
    h = cr.hvp(lambda x: np.sum(np.abs(sf.rfft(x)) ** 2), x, v)
    r = np.fft.rfft(np.eye(6), axis=0)
    np.testing.assert_allclose(h, 2 * np.real(r.conj().T @ r) @ v, rtol=1e-10)


def test_jvp_of_a_linear_transform_is_the_transform():
    x, v = _rng(10).standard_normal((2, 4, 5))
    out, tangent = cr.jvp(lambda x: sf.dctn(x, type=2, norm="ortho"), (x,), (v,))
    np.testing.assert_allclose(tangent, sf.dctn(v, type=2, norm="ortho"), rtol=1e-12,
                               atol=1e-14)


def test_lists_of_traced_values_and_overwrite_x():
    x = _rng(11).standard_normal(4)
    keep = x.copy()
    g = cr.grad(lambda a, b: np.sum(np.abs(sf.fft([a, b, a], overwrite_x=True,
                                                  workers=2)) ** 2), argnums=(0, 1))(
        x[0], x[1])
    # |fft(y)|^2 sums to 3 |y|^2: a appears twice
    np.testing.assert_allclose(g, (12 * x[0], 6 * x[1]), rtol=1e-12)
    cr.grad(lambda x: np.sum(sf.dct(x, overwrite_x=True) ** 2))(x)
    np.testing.assert_array_equal(x, keep)


# -- plain calls and SciPy's backend control -------------------------------------------
def test_plain_calls_are_passed_on_to_scipy():
    x = _rng(12).standard_normal((4, 8))
    assert traced.BACKEND.__ua_function__(sf.fft, (x,), {}) is NotImplemented
    assert traced.BACKEND.__ua_function__(sf.fht, (x[0], 0.1, 0.0), {}) is NotImplemented
    for name in ALL:
        f = getattr(sf, name)
        kwargs = {} if name.endswith("shift") else {"workers": 2, "overwrite_x": False}
        ref = f(x, **kwargs)
        with sf.skip_backend(cf.backend):
            np.testing.assert_array_equal(ref, f(x, **kwargs))
        with sf.set_backend("scipy"):
            np.testing.assert_array_equal(ref, f(x, **kwargs))
        with sf.set_backend("scipy", only=True):
            np.testing.assert_array_equal(ref, f(x, **kwargs))
        with sf.set_backend(cf.backend):  # put first, it still passes plain calls on
            np.testing.assert_array_equal(ref, f(x, **kwargs))
        np.testing.assert_array_equal(ref, getattr(cf, name)(x, **kwargs))
    assert sf.fft([1, 2]).dtype == np.complex128
    ref = sf.dct(x)  # (overwrite_x lets SciPy write into its argument: a copy)
    np.testing.assert_array_equal(sf.dct(x.copy(), workers=-1, overwrite_x=True), ref)


def test_scipy_backend_first_refuses_and_names_the_twin():
    x = _rng(13).standard_normal(6)
    f = lambda x: np.sum(np.abs(sf.rfft(x)) ** 2)
    with sf.set_backend("scipy"):
        with pytest.raises(UntraceableError, match=r"chainrules\.scipy\.fft\.rfft"):
            cr.grad(f)(x)
        g = cr.grad(lambda x: np.sum(np.abs(cf.rfft(x)) ** 2))(x)
        with sf.set_backend(cf.backend):
            np.testing.assert_allclose(cr.grad(f)(x), g)
    np.testing.assert_allclose(cr.grad(f)(x), g)


def test_a_global_backend_tried_first_refuses_until_chainrules_backend_is_set():
    x = _rng(14).standard_normal(6)
    f = lambda x: np.sum(sf.dct(x) ** 2)
    sf.set_global_backend("scipy")  # SciPy's, tried before the registered ones
    try:
        with pytest.raises(UntraceableError, match=r"chainrules\.scipy\.fft\.dct"):
            cr.grad(f)(x)
        with sf.set_backend(cf.backend):
            g = cr.grad(f)(x)
    finally:
        sf.set_global_backend("scipy", try_last=True)  # SciPy's default
    np.testing.assert_allclose(g, cr.grad(f)(x))


# -- the fast Hankel transform ----------------------------------------------------------
HANKEL = [dict(dln=0.1, mu=0.0), dict(dln=0.05, mu=1.5, offset=0.3, bias=0.4),
          dict(dln=0.2, mu=-0.5, offset=0.1, bias=-0.3)]


@pytest.mark.parametrize("name", ["fht", "ifht"])
def test_hankel_transforms_match_scipy(name):
    f = getattr(sf, name)
    r = _rng(17).standard_normal((2, 3, 8))
    for x in (r, r[0, 0, :7], r.astype(np.float32), r[0].astype(np.float16)):
        for kw in HANKEL:
            ref = f(x, **kw)
            got = _traced_value(lambda x: f(x, **kw), x)
            assert got.dtype == ref.dtype and got.shape == ref.shape, (name, kw, x.dtype)
            tol = 1e-12 if ref.dtype == np.float64 else 3e-6
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
    # the keyword spelling of the array argument reaches the backend too
    kw = {"a" if name == "fht" else "A": r}
    np.testing.assert_allclose(_traced_value(lambda x: f(**{**kw, list(kw)[0]: x},
                                                         dln=0.1, mu=0.5), r),
                               f(r, 0.1, 0.5), rtol=1e-12)
    with pytest.raises(TypeError):
        _traced_value(lambda x: f(x, 0.1, 0.0), r + 1j * r)


@pytest.mark.parametrize("name", ["fht", "ifht"])
def test_hankel_transforms_are_their_own_transposes(name):
    # the matrix of the transform along the last axis is symmetric: the
    # gradient of <w, f(a)> is f(w), and the Jacobian is SciPy's matrix
    f = getattr(sf, name)
    for n in (7, 8):
        eye = np.eye(n)
        for kw in HANKEL:
            m = np.stack([f(e, **kw) for e in eye], axis=1)
            np.testing.assert_allclose(cr.jacobian(lambda a: f(a, **kw))(np.ones(n)), m,
                                       rtol=1e-12, atol=1e-14 * np.abs(m).max())
            w = _rng(n).standard_normal(n)
            g = cr.grad(lambda a: np.sum(w * f(a, **kw)))(np.ones(n))
            np.testing.assert_allclose(g, m.T @ w, rtol=1e-12)
            np.testing.assert_allclose(g, f(w, **kw), rtol=1e-12)


def test_hankel_transforms_differentiate_to_second_order():
    a = _rng(18).standard_normal((2, 9))
    for kw in HANKEL:
        assert check_grads(lambda a: np.sum(np.sin(sf.fht(a, **kw)) * sf.ifht(a, **kw)), a)
        assert check_hvp(cf.fht, a, kw["dln"], kw["mu"], kw.get("offset", 0.0),
                         kw.get("bias", 0.0), wrt=(0,))
    # ifht undoes fht (away from a singular transform): so do their derivatives
    g = cr.grad(lambda a: np.sum(sf.ifht(sf.fht(a, 0.1, 0.5), 0.1, 0.5) ** 2))(a)
    np.testing.assert_allclose(g, 2 * a, rtol=1e-9)


def test_hankel_transforms_refuse_traced_parameters():
    a = _rng(19).standard_normal(8)
    for args in ((0.1, 0.5), (0.5, 0.1)):
        with pytest.raises(cr.MissingRuleError, match="first argument only"):
            cr.grad(lambda p: np.sum(sf.fht(a, p, args[1])))(args[0])
    with pytest.raises(cr.MissingRuleError, match="first argument only"):
        cr.grad(lambda b: np.sum(sf.ifht(a, 0.1, 0.5, bias=b)))(0.2)


def test_twins_have_scipys_signatures():
    for name in ALL + ["fht", "ifht"]:
        assert inspect.signature(getattr(cf, name)) == inspect.signature(
            getattr(sf, name)), name
        assert name in traced.TRANSFORMS
        assert inspect.signature(traced.TRANSFORMS[name]) == inspect.signature(
            getattr(sf, name)), name


def test_twins_differentiate_whatever_the_backend():
    x = _rng(16).standard_normal((3, 4))
    with sf.set_backend("scipy", only=True):
        g = cr.grad(lambda x: np.sum(cf.idctn(x, type=1) ** 2))(x)
    np.testing.assert_allclose(g, cr.grad(lambda x: np.sum(sf.idctn(x, type=1) ** 2))(x))


# -- registration ----------------------------------------------------------------------
def _run(code):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_backend_registers_when_scipy_fft_is_imported_after_chainrules():
    out = _run("""
import importlib.util, json, sys
import numpy as np
import chainrules as cr
loaded = "scipy.fft" in sys.modules
importlib.util.find_spec("scipy.fft")     # found, not imported: still waiting
import scipy
g = cr.grad(lambda x: np.sum(np.abs(scipy.fft.rfft(x)) ** 2))(np.arange(4.0))
from chainrules.rules._when_imported import waiting
hook = [name for name in waiting() if name == "scipy.fft"]
print(json.dumps({"loaded": loaded, "g": g.tolist(), "hook": hook,
                  "loader": type(scipy.fft.__spec__.loader).__name__,
                  "patched": "exec_module" in vars(scipy.fft.__spec__.loader)}))
""")
    # the half-spectrum Parseval of test_unchanged_scipy_fft_code_differentiates_parseval
    np.testing.assert_allclose(out.pop("g"), [4.0, 12.0, 12.0, 20.0], rtol=1e-12)
    assert out == {"loaded": False, "hook": [], "loader": "SourceFileLoader",
                   "patched": False}


def test_backend_registers_when_scipy_fft_was_imported_before_chainrules():
    out = _run("""
import json, sys
import numpy as np
import scipy.fft
import chainrules as cr
g = cr.grad(lambda x: np.sum(scipy.fft.dst(x, type=4, norm="ortho") ** 2))(np.ones(3))
from chainrules.rules._when_imported import waiting
print(json.dumps({"g": g.tolist(), "hook": [n for n in waiting() if n == "scipy.fft"]}))
""")
    np.testing.assert_allclose(out["g"], [2.0, 2.0, 2.0], rtol=1e-12)  # orthogonal
    assert out["hook"] == []  # registered at once: nothing waits for scipy.fft
