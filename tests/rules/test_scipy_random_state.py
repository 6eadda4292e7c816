"""SciPy functions that draw from NumPy's global random state (the norm
estimates of ``scipy.sparse.linalg.onenormest``, which choose the scaling
and degree of ``scipy.linalg.logm`` and ``expm_multiply``): the rule
library calls them at a fixed state, so that their results and derivatives
are functions of the input alone (a staged replay equals an eager call) and
the caller's random stream is left where it was."""

import warnings

import numpy as np
import pytest

import chainrules as cr

pytest.importorskip("scipy")

from chainrules.scipy import linalg as csl  # noqa: E402
from chainrules.scipy.sparse import linalg as cspl  # noqa: E402

# a point of the jit sweep where SciPy's logm gave one of two results, by
# the state of np.random (the estimate chose another number of roots)
_A = np.array([[1.817652590417234, 0.3245021445136395, -0.18841383137009837,
                -0.2920426051212505],
               [0.1273924188059141, 2.145610985763518, 0.19997898785119705,
                -0.03197485446013593],
               [-0.05060880651791218, -0.32534844405308716, 1.6475249325636139,
                0.24957813108284893],
               [0.12388588609455545, 0.2997786090450158, -0.12296037896830808,
                2.063803479388881]])


def _loss(a):
    y = csl.logm(a)
    return np.sum(y) + 0.5 * np.sum(y * y)


def _bits(out):
    return b"".join(np.asarray(v).tobytes() for v in cr.pytree.flatten(out)[0])


def _next_draw(seed):
    np.random.seed(seed)
    return np.random.random()


def test_logm_and_its_derivatives_do_not_depend_on_np_random():
    vg = cr.value_and_grad(_loss)
    hvp = lambda a, v: cr.hvp(_loss, a, v)  # noqa: E731
    v = np.ones_like(_A)
    seen = set()
    for seed in range(8):
        np.random.seed(seed)
        seen.add(_bits(vg(_A)) + _bits(hvp(_A, v)) + csl.logm(_A).tobytes())
        # the caller's stream is where it was
        assert np.random.random() == _next_draw(seed)
    assert len(seen) == 1


def test_staged_logm_equals_eager_whatever_the_random_state():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a SciPy family may run eagerly)
        vg = cr.value_and_grad(_loss)
        staged = cr.jit(vg)
        staged_hvp = cr.jit(lambda a, v: cr.hvp(_loss, a, v))
        for seed in range(6):
            np.random.seed(seed)
            want, want_h = vg(_A), cr.hvp(_loss, _A, _A)
            np.random.seed(seed + 100)
            assert _bits(staged(_A)) == _bits(want)
            assert _bits(staged_hvp(_A, _A)) == _bits(want_h)


def test_expm_multiply_leaves_the_random_stream():
    import scipy.sparse as sp

    # (at 100 rows SciPy estimates norms with random vectors)
    a = sp.random(100, 100, density=0.4, random_state=1, format="csr") * 3.0
    b = np.ones(100)
    np.random.seed(5)
    out = cspl.expm_multiply(a, b)
    assert np.random.random() == _next_draw(5)
    np.random.seed(6)
    assert cspl.expm_multiply(a, b).tobytes() == out.tobytes()
