"""``import chainrules`` loads NumPy's rules and imports no SciPy module.
scipy.special's families register once ``scipy.special`` is imported
(before or after chainrules, the same rules); the SciPy families whose
subpackages are slow to import (linalg, signal, integrate, and the stats
and optimize they pull in) register when ``chainrules.scipy`` (their entry
point) is imported. All count as built-in then. Each check runs in a fresh
interpreter."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("scipy")

SLOW = ["scipy.linalg", "scipy.signal", "scipy.integrate", "scipy.stats", "scipy.optimize"]


def _run(code):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_loads_no_slow_scipy_subpackage():
    out = _run(f"""
import json, sys
import numpy as np
import scipy.special as sc
# what SciPy's own scipy.special imports (scipy.linalg from SciPy 1.18 on)
# is not chainrules' to avoid
before = set(sys.modules)
import chainrules as cr
loaded = [m for m in {SLOW!r} if m in sys.modules and m not in before]
# scipy.special's ufuncs are differentiable at once (NumPy's protocols)
g = cr.grad(lambda x: np.sum(sc.gammaln(x) * sc.expit(x)))(np.array([1.5, 2.5]))
print(json.dumps({{"loaded": loaded, "g": g.tolist()}}))
""")
    assert out["loaded"] == []
    import numpy as np
    import scipy.special as sc
    x = np.array([1.5, 2.5])
    s = sc.expit(x)
    expected = sc.digamma(x) * s + sc.gammaln(x) * s * (1 - s)
    np.testing.assert_allclose(out["g"], expected, rtol=1e-13)


def test_cholesky_gradient_without_chainrules_scipy():
    """np.linalg's rules reach SciPy's BLAS and triangular solves themselves."""
    out = _run("""
import json
import numpy as np
import chainrules as cr
a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
f = lambda a: np.sum(np.log(np.diagonal(np.linalg.cholesky(a))))
g = cr.grad(f)(a)
h = cr.hvp(f, a, np.eye(3))
print(json.dumps({"g": g.tolist(), "h": h.tolist()}))
""")
    import numpy as np
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    inv = np.linalg.inv(a)
    # f = logdet(a) / 2 from the lower triangle: the cotangent is inv(a)/2 on
    # the diagonal and inv(a) below it
    expected = np.tril(inv, -1) + np.diag(np.diag(inv)) / 2
    np.testing.assert_allclose(out["g"], expected, rtol=1e-12)
    # the HVP against central differences of that closed-form gradient
    def grad(m):
        inv = np.linalg.inv(np.tril(m) + np.tril(m, -1).T)
        return np.tril(inv, -1) + np.diag(np.diag(inv)) / 2
    h = 1e-5
    fd = (grad(a + h * np.eye(3)) - grad(a - h * np.eye(3))) / (2 * h)
    np.testing.assert_allclose(out["h"], fd, rtol=1e-7, atol=1e-9)


def test_chainrules_scipy_registers_its_families_as_builtin():
    out = _run("""
import json
import chainrules
from chainrules.registry import builtin_ops, op_name
before = sorted(op_name(op) for op in builtin_ops())
import chainrules.scipy
from chainrules.scipy import linalg
after = sorted(op_name(op) for op in builtin_ops())
print(json.dumps({"before": before, "after": after,
                  "expm": op_name(linalg.expm)}))
""")
    new = set(out["after"]) - set(out["before"])
    assert set(out["before"]) <= set(out["after"])
    assert out["expm"] in new
    assert any("solve_triangular" in n for n in new)
    assert any("schur" in n for n in new)


def test_load_all_matches_chainrules_scipy():
    out = _run("""
import json
import chainrules, chainrules.rules
from chainrules.registry import builtin_ops, op_name
chainrules.rules.load_all()
a = sorted(op_name(op) for op in builtin_ops())
import chainrules.scipy
b = sorted(op_name(op) for op in builtin_ops())
print(json.dumps({"a": a, "b": b}))
""")
    assert out["a"] == out["b"]


_REGISTRY = """
from chainrules.registry import DISPATCHERS, builtin_ops, op_name
rules = {op_name(op): sorted(f"{sig}: {fn.__module__}.{fn.__qualname__}"
                             for sig, fn in DISPATCHERS[op].funcs.items())
         for op in DISPATCHERS}
builtin = sorted(op_name(op) for op in builtin_ops())
"""


@pytest.mark.parametrize("order", [
    "import scipy.special\nimport chainrules",            # SciPy first: at once
    "import chainrules\nimport scipy.special",            # then: when imported
    "import chainrules\nimport scipy\nscipy.special",    # SciPy's lazy attribute
    "import chainrules\nimport chainrules.rules.special_inverses",  # a family first
], ids=["scipy first", "scipy after", "lazy attribute", "a family first"])
def test_scipy_special_rules_are_the_same_whenever_it_is_imported(order):
    code = """
import json, sys
import chainrules
imports_scipy = any(m == "scipy" or m.startswith("scipy.") for m in sys.modules)
""" if order.startswith("import chainrules") else "imports_scipy = None\n"
    out = _run(code + order + "\n" + _REGISTRY + """
import json
print(json.dumps({"rules": rules, "builtin": builtin, "imports_scipy": imports_scipy}))
""")
    reference = _run("import scipy.special\nimport chainrules\n" + _REGISTRY + """
import json
print(json.dumps({"rules": rules, "builtin": builtin}))
""")
    assert out["imports_scipy"] in (None, False)  # import chainrules imported no SciPy
    assert out["rules"] == reference["rules"]
    assert out["builtin"] == reference["builtin"]
    assert "scipy.special.gammaln" in out["builtin"] and "scipy.special.ndtri" in out["builtin"]


def test_numpy_functions_computed_by_scipy_special_need_no_import_of_it():
    # np.i0 on traced values runs as scipy.special.i0, which it imports
    out = _run("""
import json, sys
import numpy as np
import chainrules as cr
before = "scipy.special" in sys.modules
g = cr.grad(lambda x: np.sum(np.i0(x)))(np.array([0.5, 1.5]))
print(json.dumps({"before": before, "g": g.tolist()}))
""")
    import numpy as np
    import scipy.special as sc
    assert out["before"] is False
    np.testing.assert_allclose(out["g"], sc.i1([0.5, 1.5]), rtol=1e-14)
