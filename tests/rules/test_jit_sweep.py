"""Staged equals eager for every rule of the registry sweep.

Each spec's operation is made into a scalar loss of its differentiable
arguments, and ``cr.jit`` of its ``value_and_grad`` (and of its HVP along
a direction, where the spec checks HVPs) is called four times: the first
call records, the second replays and checks against an eager run, the
third replays alone, the fourth replays at other values (perturbed inputs
of the same signature: a guard that sees another value records another
variant). Every result is compared with the eager transformation at the
same values: equal bit for bit (signed zeros included; NaN where eager
has NaN), but for the specs in ``_NOT_BIT_FOR_BIT``, whose rules take
another path for a staged value than for an ndarray: there equal up to
the rounding of another order of operations.
"""

import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import Phase, given, settings, strategies as st

import chainrules as cr
from chainrules.pytree import flatten
from chainrules.testing.specs import FAMILIES, family_specs
from chainrules.testing.plugin import limit_blas_threads

limit_blas_threads(1)

_GAPS = {line.strip() for line in
         (pathlib.Path(__file__).with_name("jit_eager_gaps.txt")).read_text().splitlines()
         if line.strip() and not line.startswith("#")}


#: specs whose staged derivatives may differ from eager ones by rounding:
#: the rule takes another path for a staged value (the spec's label: why).
#: None now: a staged value of an ndarray takes the ndarray's computation
_NOT_BIT_FOR_BIT: dict = {}


def _may_run_eagerly(spec):
    label = spec.label
    return label in _GAPS or label.startswith(("scipy.", "chainrules.scipy",
                                               "chainrules.rules.scipy"))



def _positions(spec, args):
    if spec.wrt is not None:
        return tuple(spec.wrt)
    return tuple(i for i, a in enumerate(args)
                 if isinstance(a, (np.ndarray, np.generic, float, complex))
                 and np.result_type(a).kind in "fc")


def _loss(spec, args, kwargs, pos):
    fn = spec.function()

    def loss(*diff):
        full = list(args)
        for p, v in zip(pos, diff):
            full[p] = v
        out = fn(*full, **kwargs)
        total = 0.0
        for k, leaf in enumerate(flatten(out)[0]):
            if np.result_type(leaf).kind in "fc":
                r = np.real(leaf)
                total = total + (k + 1) * np.sum(r) + 0.5 * np.sum(r * r)
        return total

    return loss


def _assert_close(a, b, dtype, what, exact=True):
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb), what
    rtol = 1e-9 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-4
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (what, x.shape, y.shape)
        assert x.dtype == y.dtype, (what, x.dtype, y.dtype)
        scale = np.max(np.abs(y[np.isfinite(y)]), initial=1.0) if y.size else 1.0
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * scale, equal_nan=True,
                                   err_msg=what)
        if exact and x.dtype.kind in "fc":
            xr = np.stack([np.real(x), np.imag(x)]) if x.dtype.kind == "c" else x
            yr = np.stack([np.real(y), np.imag(y)]) if y.dtype.kind == "c" else y
            differ = ((xr != yr) | (np.signbit(xr) != np.signbit(yr))) \
                & ~(np.isnan(xr) & np.isnan(yr))
            assert not differ.any(), (what, "not bit for bit", xr[differ][:4], yr[differ][:4])


def _perturbed(v, rng):
    if isinstance(v, np.ndarray) and v.dtype.kind in "fc" and v.size:
        # relative: zeros and signs stay (a rule's branches for them are
        # guarded, and checked by the other calls)
        return v * (1 + 1e-3 * rng.standard_normal(v.shape)).astype(v.dtype)
    return v


def _prepare(staged, *args):
    """Run every stage of the passes of the plan of ``staged(*args)`` now
    (a replay runs one per call after the check): the calls after this
    one replay the plan as its code will be."""
    plan = staged.plan(*args)
    if plan is not None:
        plan.prepare()


def _run(case, data):
    spec, dtype = case
    args, kwargs = spec.args(data.draw, dtype)
    pos = _positions(spec, args)
    if not pos:
        pytest.skip("no differentiable argument")
    loss = _loss(spec, args, kwargs, pos)
    exact = spec.label not in _NOT_BIT_FOR_BIT
    x0 = tuple(args[p] for p in pos)
    vg = cr.value_and_grad(loss, argnums=tuple(range(len(pos))))
    rng = np.random.default_rng(0)
    x1 = tuple(_perturbed(v, rng) for v in x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # domain warnings, StagingWarning
        staged = cr.jit(vg)
        for k, xs in enumerate((x0, x0, x0, x1)):
            try:
                want = vg(*xs)
            except cr.AutodiffError as e:
                with pytest.raises(type(e)):
                    staged(*xs)
                continue
            _assert_close(staged(*xs), want, dtype, f"{spec.label} value_and_grad, call {k}",
                          exact)
            if k == 1:
                _prepare(staged, *xs)
        info = staged.cache_info()
        assert _may_run_eagerly(spec) or info["eager"] == 0 and info["plans"] >= 1, (
            f"{spec.label}: value_and_grad not staged: {staged.eager_reasons()}")
        if "hvp" in spec.modes and isinstance(x0[0], np.ndarray):
            rest = x0[1:]

            def hvp(x, v):
                return cr.hvp(lambda z: loss(z, *rest), x, v)

            staged_hvp = cr.jit(hvp)
            v = np.ones_like(x0[0]) if x0[0].size else x0[0]
            for k, x in enumerate((x0[0], x0[0], x0[0], x1[0])):
                try:
                    want = hvp(x, v)
                except cr.AutodiffError:
                    continue
                _assert_close(staged_hvp(x, v), want, dtype, f"{spec.label} hvp, call {k}",
                              exact)
                if k == 1:
                    _prepare(staged_hvp, x, v)
            info = staged_hvp.cache_info()
            assert _may_run_eagerly(spec) or info["eager"] == 0, (
                f"{spec.label}: hvp not staged: {staged_hvp.eager_reasons()}")


#: examples per case: one in the fast tier, four in the full tier (staged
#: results an ulp from eager's showed at some draws only)
_EXAMPLES = max(1, settings.default.max_examples // 3)


#: staged results are compared with eager ones bit for bit: the joined
#: products (matrix_power's gradient) are checked within their bound elsewhere
pytestmark = pytest.mark.usefixtures("without_joined_products")


def _family_test(specs):
    cases = [(spec, np.dtype(d)) for spec in specs for d in spec.dtypes
             if not spec.skip and ("rrule" in spec.modes or "hvp" in spec.modes)]

    # one test function per family, as in the registry sweep (Hypothesis
    # lengthens a test function's settings chain with each call)
    @pytest.mark.parametrize("case", cases, ids=[f"{s.label}-{d.name}" for s, d in cases])
    @settings(phases=[Phase.explicit, Phase.reuse, Phase.generate],
              max_examples=_EXAMPLES, deadline=None)
    @given(data=st.data())
    def test_staged_equals_eager(case, data):
        _run(case, data)

    return test_staged_equals_eager


for _fam in FAMILIES:
    _specs = family_specs(_fam)
    if _specs:
        globals()[f"test_staged_{_fam}"] = _family_test(_specs)
del _fam, _specs


def test_complex_scalar_cotangents_are_projected_as_eager():
    # NumPy multiplies two complex scalars in its scalar arithmetic and a
    # 0-d array in the ufunc's loop (an ulp apart in about 40% of products);
    # eager code projects a complex scalar cotangent to a 0-d array, and the
    # plan does so too: the gradient of polyval at a complex scalar, found
    # by the sweep's thorough profile, is bit for bit eager's at every call
    p = np.array([0.38738615 + 0.88606204j, -0.6511415 + 1.16744907j,
                  -1.29832294 + 0.30161152j, -1.36746635 + 0.6491143j])
    x = np.complex128(0.3873861514710077 - 0.6511415032672279j)

    def loss(p, x):
        r = np.real(np.polyval(p, x))
        return np.sum(r) + 0.5 * np.sum(r * r)

    f = cr.grad(loss, argnums=(0, 1))
    want = f(p, x)
    staged = cr.jit(f)
    for call in range(4):
        got = staged(p, x)
        if call == 2:
            _prepare(staged, p, x)
        _assert_close(got, want, np.complex128, f"call {call}")
