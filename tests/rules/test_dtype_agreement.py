"""Every spec of the rule library, on float32, float64, complex64, complex128
and integer inputs: the traced output has NumPy's dtype and shape.

The arguments are drawn as the spec draws them (its first dtype) and then
cast to the dtype under test (an integer cast of one argument leaves the
others traced). Where NumPy refuses the cast input, there is nothing to
agree with and the case passes on; where NumPy computes, the traced call must
compute the same dtype and shape, or raise a chainrules error (an op without
a rule for that dtype); any other exception is a failure. This catches a
rule whose traced result is complex where NumPy's is real (``np.nanvar`` of
complex input) or float64 where NumPy keeps float32.
"""

import warnings

import numpy as np
import pytest
from hypothesis import Phase, given, settings, strategies as st

import chainrules as cr
from chainrules import pytree
from chainrules.testing.specs import FAMILIES, family_specs
from chainrules.testing.plugin import limit_blas_threads

limit_blas_threads(1)

DTYPES = ("float32", "float64", "complex64", "complex128", "int64")


def _is_float_array(a):
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind in "fc"


def _cast(args, dtype):
    """The arguments with every float or complex leaf cast to ``dtype``; for
    an integer dtype, only the first such leaf (the rest stay traced)."""
    leaves, td = pytree.flatten(list(args))
    out, done = [], False
    for leaf in leaves:
        if _is_float_array(leaf) and not done:
            if np.dtype(dtype).kind == "c" or leaf.dtype.kind != "c":
                out.append(np.asarray(leaf).astype(dtype) if isinstance(leaf, np.ndarray)
                           else np.dtype(dtype).type(leaf))
            else:  # complex spec values to a real dtype: their real part
                out.append(np.real(leaf).astype(dtype))
            done = np.dtype(dtype).kind == "i"
        else:
            out.append(leaf)
    return pytree.unflatten(td, out)


def _outputs(v):
    # a Python float (SciPy's vector distances return one) is a float64 scalar
    return [np.float64(leaf) if type(leaf) is float else leaf
            for leaf in pytree.flatten(v)[0] if hasattr(leaf, "dtype") or type(leaf) is float]


def _agree(spec, data, dtype):
    base = np.dtype(spec.dtypes[0])
    args, kwargs = spec.args(data.draw, base)
    args = _cast(args, dtype)
    fn = spec.function()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = fn(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args],
                          **kwargs)
        except Exception:
            return  # NumPy refuses this input: nothing to agree with
        traced_pos = [i for i, a in enumerate(args)
                      if any(_is_float_array(leaf) for leaf in pytree.flatten(a)[0])]
        if not traced_pos or "nondiff" in spec.modes:
            return

        def f(*xs):
            full = list(args)
            for i, x in zip(traced_pos, xs):
                full[i] = x
            return fn(*full, **kwargs)

        try:
            got, _ = cr.vjp(f, *[args[i] for i in traced_pos])
        except cr.AutodiffError:
            return  # a typed refusal (no rule for this dtype) is not a wrong answer
    exp, out = _outputs(expected), _outputs(got)
    assert len(exp) == len(out), f"{spec.label}: {len(out)} outputs, NumPy {len(exp)}"
    for e, o in zip(exp, out):
        assert np.result_type(o) == np.result_type(e) and np.shape(o) == np.shape(e), (
            f"{spec.label} on {dtype}: traced {np.result_type(o)}{list(np.shape(o))}, "
            f"NumPy {np.result_type(e)}{list(np.shape(e))}")


def _family_test(specs):
    cases = [(spec, d) for spec in specs for d in DTYPES
             if "nondiff" not in spec.modes]

    @pytest.mark.parametrize("case", cases, ids=[f"{s.label}-{d}" for s, d in cases])
    @settings(max_examples=2, phases=[Phase.explicit, Phase.reuse, Phase.generate])
    @given(data=st.data())
    def test_dtype_and_shape_as_numpy(case, data):
        spec, dtype = case
        _agree(spec, data, dtype)

    return test_dtype_and_shape_as_numpy


for _fam in FAMILIES:
    _specs = family_specs(_fam)
    if _specs:
        globals()[f"test_dtypes_{_fam}"] = _family_test(_specs)
del _fam, _specs


def test_nanvar_and_nanstd_of_complex_are_real():
    z = np.array([1 + 2j, 3 - 1j, np.nan, 0.5j])
    for op in (np.nanvar, np.nanstd):
        out, pull = cr.vjp(op, z)
        assert out.dtype == op(z).dtype == np.float64
        np.testing.assert_allclose(out, op(z), rtol=1e-14)
    sc = pytest.importorskip("scipy.special")
    g = cr.grad(lambda z: sc.zeta(3.0, np.nanvar(z) + 1))(z)
    assert g.dtype == np.complex128
