"""SciPy's array-API mode (SCIPY_ARRAY_API=1, which scikit-learn asks its
users to set): importing chainrules works and scipy.special's ufuncs, which
SciPy then wraps in Python functions asking for the arguments' namespace,
differentiate. Each check runs in a fresh interpreter with the variable set
(SciPy reads it once, at import)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("scipy")


def _run(code):
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_special_ufuncs_differentiate_in_array_api_mode():
    out = _run("""
import json
import numpy as np
import scipy.special as sc
import chainrules as cr
from chainrules.registry import op_name
wrapped = not isinstance(sc.gammaln, np.ufunc)
x = np.array([1.5, 2.5])
g = cr.grad(lambda x: np.sum(sc.gammaln(x) * sc.expit(x) + sc.erf(x) * x))(x)
hv = cr.hvp(lambda x: np.sum(sc.log_ndtr(x)), x, np.ones(2))
mixed = cr.grad(lambda x: np.sum(sc.xlogy(x, np.array([2.0, 3.0]))))(x)
print(json.dumps({"wrapped": wrapped, "g": g.tolist(), "hv": hv.tolist(),
                  "mixed": mixed.tolist(), "name": op_name(getattr(sc.erf, "__wrapped__", sc.erf))}))
""")
    import scipy.special as sc
    x = np.array([1.5, 2.5])
    s = sc.expit(x)
    expected = (sc.digamma(x) * s + sc.gammaln(x) * s * (1 - s) + sc.erf(x)
                + 2 / np.sqrt(np.pi) * np.exp(-x * x) * x)
    np.testing.assert_allclose(out["g"], expected, rtol=1e-12)
    h = 1e-5
    d1 = lambda t: np.exp(-t * t / 2 - sc.log_ndtr(t)) / np.sqrt(2 * np.pi)  # noqa: E731
    np.testing.assert_allclose(out["hv"], (d1(x + h) - d1(x - h)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(out["mixed"], np.log([2.0, 3.0]), rtol=1e-14)
    assert out["name"] == "scipy.special.erf"


def test_plain_scipy_function_names_its_twin_in_array_api_mode():
    out = _run("""
import json
import numpy as np
import scipy.signal
import chainrules as cr
try:
    cr.grad(lambda x: np.sum(scipy.signal.convolve(x, np.ones(2))))(np.ones(3))
    msg = ""
except cr.UntraceableError as e:
    msg = str(e)
print(json.dumps({"msg": msg}))
""")
    assert "chainrules.scipy.signal.convolve" in out["msg"]
