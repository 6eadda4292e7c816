"""Specs for rules/scipy_linalg_solvers.py (SciPy's matrix-equation solvers),
with batched inputs where the installed SciPy accepts them (1.16 on)."""

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    from chainrules.rules import scipy_linalg_solvers as _sv
except ImportError:  # pragma: no cover
    _sv = None


def _batch(draw, shapes=((), (2,), (1, 2))):
    from chainrules.rules._linalg_util import scipy_takes_batches

    if not scipy_takes_batches():
        return ()
    return draw(st.sampled_from(shapes))


if _sv is not None and hasattr(_sv, "solve_sylvester"):
    def _sylvester_args(draw, dtype):
        bt = _batch(draw)
        m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        a = draw(crs.well_conditioned_matrices(dtype, m, bt))
        b = draw(crs.well_conditioned_matrices(dtype, n, bt))
        q = draw(crs.arrays(dtype, bt + (m, n)))
        return (a, b, q), {}

    def _dlyap_args(draw, dtype):
        bt = _batch(draw)
        n = draw(st.integers(1, 3))
        a = (draw(crs.arrays(dtype, bt + (n, n))) * 0.3).astype(dtype)
        q = draw(crs.arrays(dtype, bt + (n, n)))
        return (a, q), {}

    SPECS += [
        RuleSpec(_sv.solve_sylvester, _sylvester_args, ("float64", "float32", "complex128"),
                 name="scipy.linalg.solve_sylvester"),
        RuleSpec(_sv._solve_discrete_lyapunov, _dlyap_args,
                 ("float64", "float32", "complex128"),
                 name="scipy.linalg.solve_discrete_lyapunov"),
        # q alone (a held constant)
        RuleSpec(_sv._solve_discrete_lyapunov, _dlyap_args, ("float64",), wrt=(1,),
                 name="scipy.linalg.solve_discrete_lyapunov-q"),
    ]

if _sv is not None and hasattr(_sv, "solve_banded"):
    def _banded_args(draw, dtype):
        bt = _batch(draw, ((), (2,)))
        n = draw(st.integers(1, 4))
        lo, up = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        ab = draw(crs.arrays(dtype, bt + (lo + up + 1, n))) * 0.3
        ab[..., up, :] += 2
        # SciPy batches b as (..., n, k); a 1-d b is one unbatched vector
        vec = not bt and draw(st.booleans())
        b = draw(crs.arrays(dtype, (n,) if vec else bt + (n, 2)))
        return (ab.astype(dtype), b), {"_lu": (lo, up)}

    SPECS += [
        RuleSpec(_sv._solve_banded_op, _banded_args, ("float64", "float32", "complex128"),
                 name="scipy.linalg.solve_banded"),
    ]

try:
    from chainrules.rules import scipy_linalg_schur as _sc
except ImportError:  # pragma: no cover
    _sc = None

if _sc is not None and hasattr(_sc, "schur"):
    def _schur_args(draw, dtype):
        """V diag(w) V^-1 with well separated real eigenvalues."""
        bt = _batch(draw, ((), (2,)))
        n = draw(st.integers(1, 4))
        v = draw(crs.well_conditioned_matrices(dtype, n, bt))
        w = np.arange(n) * 1.0 + 0.5
        a = (v * w) @ np.linalg.inv(v)
        output = draw(st.sampled_from(["real", "complex"]))
        # LAPACK's order of the eigenvalues on T's diagonal is not a smooth
        # function of A: a few percent of perturbation can swap two of them,
        # a jump the finite differences then straddle. Sample only where the
        # order holds in a neighbourhood wider than their stencil.
        order = np.argsort(np.argsort(np.diagonal(_sc.schur(a, output=output)[0], 0, -2,
                                                  -1).real, -1), -1)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        size = np.max(np.abs(a))
        for _ in range(6):
            b = a + rng.uniform(-0.08, 0.08, a.shape) * size
            t = np.diagonal(_sc.schur(b, output=output)[0], 0, -2, -1).real
            assume(np.array_equal(np.argsort(np.argsort(t, -1), -1), order))
        return (a.astype(dtype),), {"output": output}

    def _schur_call(a, output):
        t, z = _sc.schur(a, output=output)
        return np.abs(t) ** 2 + np.abs(z) ** 2   # invariant under the phases of Z

    SPECS += [
        RuleSpec(_sc.schur, _schur_args, ("float64", "complex128"), call=_schur_call,
                 name="scipy.linalg.schur"),
    ]
