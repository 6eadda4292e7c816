"""Staged plans against eager calls where only the plan fuses: from
``fused_sweeps.MIN_SIZE_STAGED`` (4096) elements a recording fuses its
sweeps into regions, and the plan's passes fuse chains and merge regions,
while eager sweeps fuse from ``fused_sweeps.MIN_SIZE`` (65536). There the
staged results may round otherwise than eager ones; they must agree within
the fused sweeps' bound (``test_fusion._agree``: ``BOUND_ULPS`` units of
the dtype's epsilon relative to the largest magnitude), at every call: the
recording, the check (the recorded steps), each replay after a stage of
the passes, and the compiled code."""

import numpy as np
import pytest

import chainrules as cr
from chainrules import fused_sweeps, plan as plan_mod

from test_fusion import _agree


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _chain(x):
    y = np.tanh(0.7 * x + 0.1)
    return np.sum(np.sin(y) * y + np.exp(-y * y))


def _softplus_fit(x):
    z = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)
    return np.sum((z - 0.3) ** 2) + 0.5 * np.sum(x * x)


FUNCTIONS = {"rosenbrock": _rosen, "tanh/sin chain": _chain, "softplus fit": _softplus_fit}
TRANSFORMS = {
    "value_and_grad": lambda f: cr.value_and_grad(f),
    "hvp": lambda f: (lambda x, v: cr.hvp(f, x, v)),
}


def test_the_sizes_are_where_only_plans_fuse():
    assert fused_sweeps.MIN_SIZE_STAGED <= 5000 < 65535 < fused_sweeps.MIN_SIZE


@pytest.mark.parametrize("n", [5000, 20000, 65535])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", list(FUNCTIONS))
@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_staged_agrees_with_eager_within_the_fused_bound(tname, fname, dtype, n,
                                                        monkeypatch):
    monkeypatch.setattr(plan_mod, "COMPILE_AFTER", 4)
    rng = np.random.default_rng(n)
    xs = [(1.0 + 0.3 * rng.standard_normal(n)).astype(dtype) for _ in range(3)]
    v = np.cos(np.arange(n)).astype(dtype)
    call = TRANSFORMS[tname](FUNCTIONS[fname])
    args = (lambda x: (x,)) if tname == "value_and_grad" else (lambda x: (x, v))
    staged = cr.jit(call, strict=True)
    _agree(staged(*args(xs[0])), call(*args(xs[0])), where="the recording")
    plan = staged.plan(*args(xs[0]))
    # the recording, the check, a replay after each stage, the code written
    # and compiled a segment a call, then replays of the code
    calls = 2 + plan._stages.left + plan_mod.COMPILE_AFTER
    k = 0
    while k < calls or plan._fn is None and k < calls + plan.segments + 1:
        x = xs[k % len(xs)]
        got = staged(*args(x))
        want = call(*args(x))
        _agree(got, want, where=(tname, fname, np.dtype(dtype).name, n, k))
        k += 1
    assert plan._stages.left == 0 and plan._fn is not None
    for x in xs:
        _agree(staged(*args(x)), call(*args(x)), where="the code")
