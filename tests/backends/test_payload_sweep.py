"""The rule sweep with payloads other than ndarray: dask arrays (random
chunkings) and ``Refusing`` (a CuPy-like array that refuses np.asarray).

For every spec: the primal is evaluated on the payload; if the payload's own
library cannot compute the operation, the case is skipped (that is the
backend's limit, not a derivative's). Otherwise ``vjp``, ``jvp`` and (where
the spec checks HVPs) ``hvp`` must run on the payload, return the payload's
type, compute nothing while differentiating (dask), and equal the NumPy
results.
"""

import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import chainrules as cr
from chainrules.testing import all_specs

from .payloads import ImplicitConversionError, Refusing, to_numpy

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

SPECS = [s for s in all_specs() if "rrule" in s.modes and "float64" in s.dtypes]
_GAPS_FILE = pathlib.Path(__file__).with_name("known_gaps.txt")
KNOWN_GAPS = {line.strip() for line in _GAPS_FILE.read_text().splitlines()
              if line.strip() and not line.startswith("#")}


def _id(spec):
    return spec.label


class _ComputedError(AssertionError):
    pass


class _NoCompute(dask.callbacks.Callback):
    def _start(self, dsk):
        raise _ComputedError("dask computed while differentiating")


def _chunked(draw, x):
    chunks = tuple(draw(st.integers(1, max(1, n))) if n else 1 for n in x.shape)
    return da.from_array(x, chunks=chunks or ())


def _payload(kind, draw, x):
    if kind == "dask":
        return _chunked(draw, x)
    return Refusing(x)


def _like(kind, x, ref):
    if kind == "dask":
        return da.from_array(x, chunks=ref.chunks) if isinstance(ref, da.Array) else \
            da.from_array(x)
    return Refusing(x)


def _is_payload(kind, v):
    if kind == "dask":
        return isinstance(v, da.Array)
    return type(v) is Refusing


def _wrt(spec, args):
    if spec.wrt is not None:
        return tuple(spec.wrt)
    return tuple(i for i, a in enumerate(args)
                 if isinstance(a, np.ndarray) and a.dtype.kind in "fc")


def _leaves(v):
    return [leaf for leaf in cr.pytree.flatten(v)[0]]


def _cases():
    out, seen = [], {}
    for spec in SPECS:
        for kind in ("dask", "refusing"):
            cid = f"{_id(spec)}-{kind}"
            n = seen.get(cid, 0)
            seen[cid] = n + 1
            cid = cid if n == 0 else f"{cid}{n}"
            marks = [pytest.mark.xfail(strict=False, reason=f"known gap ({_GAPS_FILE.name})")] \
                if cid in KNOWN_GAPS else []
            out.append(pytest.param(spec, kind, id=cid, marks=marks))
    return out


def _payload_test(cases):
    # several test functions of at most _CHUNK cases: Hypothesis lengthens a
    # test function's settings chain by one level per call, so one function
    # over every case would reach Python's recursion limit
    @pytest.mark.parametrize("spec, kind", cases)
    @settings(max_examples=2, phases=[Phase.explicit, Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    @given(data=st.data())
    def test_payload(spec, kind, data):
        _sweep_case(spec, kind, data)

    return test_payload


_CHUNK = 300
_ALL = _cases()
for _k in range(0, len(_ALL), _CHUNK):
    globals()[f"test_payload_{_k // _CHUNK}"] = _payload_test(_ALL[_k:_k + _CHUNK])
del _k


def _sweep_case(spec, kind, data):
    args, kwargs = spec.args(data.draw, np.dtype("float64"))
    wrt = _wrt(spec, args)
    if not wrt:
        pytest.skip("nothing to differentiate")
    fn = spec.function()
    pay = list(args)
    for i in wrt:
        pay[i] = _payload(kind, data.draw, args[i])

    def f_of(arglist):
        def f(*w):
            full = list(arglist)
            for i, v in zip(wrt, w):
                full[i] = v
            return fn(*full, **kwargs)
        return f

    try:
        with (_NoCompute() if kind == "dask" else _Null()):
            ref_out = f_of(pay)(*[pay[i] for i in wrt])
        if any(not _is_payload(kind, o) for o in _leaves(ref_out)
               if isinstance(o, (np.ndarray, Refusing)) or hasattr(o, "dask")):
            pytest.skip("the payload library returns another array type here")
    except _ComputedError:
        pytest.skip("the payload library computes this op eagerly")
    except (ImplicitConversionError, NotImplementedError, TypeError, ValueError,
            AttributeError) as e:
        pytest.skip(f"the payload library cannot compute this op: {type(e).__name__}")
    f_np, f_pay = f_of(args), f_of(pay)
    w_np = [args[i] for i in wrt]
    w_pay = [pay[i] for i in wrt]
    out_np, pb_np = cr.vjp(f_np, *w_np)
    rng = np.random.default_rng(0)
    cots = [rng.standard_normal(np.shape(o)).astype(np.result_type(o))
            for o in _leaves(out_np)]
    cot_np = cr.pytree.unflatten(cr.pytree.flatten(out_np)[1], cots)
    # tangents and cotangents chunked like their primals (dask's FFT, say,
    # needs one chunk along its axis, and the primal was given that)
    cot_pay = cr.pytree.unflatten(cr.pytree.flatten(out_np)[1],
                                  [_like(kind, c, o) for c, o in zip(cots, _leaves(ref_out))])
    tans = [rng.standard_normal(np.shape(w)) for w in w_np]
    tans_pay = [_like(kind, t, w) for t, w in zip(tans, w_pay)]
    ctx = _NoCompute() if kind == "dask" else _Null()
    with ctx:
        out_pay, pb_pay = cr.vjp(f_pay, *w_pay)
        g_pay = pb_pay(cot_pay)
        _, t_pay = cr.jvp(f_pay, w_pay, tans_pay)
    g_np = pb_np(cot_np)
    _, t_np = cr.jvp(f_np, w_np, tans)
    for a, b in zip(_leaves(g_pay), _leaves(g_np)):
        if isinstance(b, np.ndarray) and b.size:
            assert _is_payload(kind, a), f"cotangent of type {type(a).__name__}"
        np.testing.assert_allclose(to_numpy(a), b, rtol=1e-9, atol=1e-12)
    for a, b in zip(_leaves(t_pay), _leaves(t_np)):
        np.testing.assert_allclose(to_numpy(a), b, rtol=1e-9, atol=1e-12)
    if "hvp" in spec.modes and len(_leaves(out_np)) == 1 and len(wrt) == 1:
        cot1 = _leaves(cot_pay)[0]

        def loss_np(w):
            return np.sum(np.real(_leaves(f_np(w))[0] * cots[0]))

        def loss_pay(w):
            return np.sum(np.real(_leaves(f_pay(w))[0] * cot1))
        with ctx:
            h_pay = cr.hvp(loss_pay, w_pay[0], tans_pay[0])
        h_np = cr.hvp(loss_np, w_np[0], tans[0])
        np.testing.assert_allclose(to_numpy(h_pay), h_np, rtol=1e-8, atol=1e-10)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False
