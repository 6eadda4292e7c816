"""Every axis-taking NumPy function with a rule or a decomposition, on a 0-d
input, with ``axis`` 0, -1, (0,) and an out-of-range 1, with and without
``keepdims``: where NumPy raises, chainrules raises; where NumPy computes,
the traced value equals NumPy's and the gradient matches central finite
differences."""

import inspect
import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.rules as library
from chainrules.registry import DECOMPOSITIONS, builtin_ops, op_name

library.load_all()


def _one_argument_axis_ops():
    out = {}
    for op in list(builtin_ops()) + list(DECOMPOSITIONS):
        if not op_name(op).startswith("numpy."):
            continue
        try:
            params = inspect.signature(op).parameters
        except (TypeError, ValueError):
            continue
        required = [p for p in params.values() if p.default is p.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if "axis" in params and len(required) == 1:
            out[op_name(op)] = op
    return [out[k] for k in sorted(out)]


_OPS = _one_argument_axis_ops()


def _cases():
    for op in _OPS:
        kd = "keepdims" in inspect.signature(op).parameters
        for axis in (0, -1, (0,), 1):
            for keepdims in ((False, True) if kd else (None,)):
                kw = {"axis": axis} if keepdims is None else {"axis": axis,
                                                              "keepdims": keepdims}
                yield pytest.param(op, kw, id=f"{op_name(op)}-{axis}-{keepdims}")


def test_the_audit_covers_the_reductions():
    names = {op_name(op) for op in _OPS}
    assert {"numpy.amax", "numpy.prod", "numpy.cumsum", "numpy.cumprod", "numpy.median",
            "numpy.nanvar", "numpy.sort", "numpy.quantile" if False else "numpy.nanprod",
            "numpy.linalg.norm", "numpy.ptp"} <= names


@pytest.mark.parametrize("op,kw", list(_cases()))
def test_zero_d_axis_forms_as_numpy(op, kw):
    x = np.array(1.5)

    def f(x):
        return np.sum(np.real(op(x, **kw)))

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = op(x, **kw)
        except Exception as e:
            with pytest.raises(type(e)):
                cr.value_and_grad(f)(x)
            return
        value, g = cr.value_and_grad(f)(x)
        traced_out = cr.jvp(lambda x: op(x, **kw), (x,), (np.array(1.0),))[0]
        h = 1e-6
        fd = (f(x + h) - f(x - h)) / (2 * h)
    assert np.shape(traced_out) == np.shape(expected)
    np.testing.assert_allclose(value, np.sum(np.real(expected)), rtol=1e-14)
    if np.issubdtype(np.result_type(expected), np.inexact):
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
