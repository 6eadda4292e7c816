"""Plain NumPy programs mixing many rules, against JAX and PyTorch.

Each program is written once against a NumPy-like namespace ``xp``: NumPy
itself for chainrules (plain ``np.*`` calls on traced values), ``jax.numpy``
for JAX, and a thin adapter for PyTorch. In float64 the gradient
(``chainrules.grad``) and the Hessian-vector product (``chainrules.hvp``,
forward-over-reverse, and grad of grad) must agree with JAX
(``jax.grad``, ``jax.jvp`` of ``jax.grad``) and with PyTorch
(``torch.autograd.grad`` with ``create_graph``: double backward) to 1e-10
relative. A peer that is not installed is skipped (CI does not install
them); the Rosenbrock program is also checked against SciPy's closed forms.
"""

import numpy as np
import pytest

import chainrules as cr

RTOL = 1e-10
RNG = np.random.default_rng(20240611)


# -- the programs ---------------------------------------------------------------
def mlp_loss(params, xp, data):
    """3-layer tanh MLP, mean log-softmax cross-entropy (max-shifted)."""
    w1, b1, w2, b2, w3, b3 = params
    x, y = xp.asarray(data["x"]), xp.asarray(data["y"])
    h = xp.tanh(x @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    z = logits - xp.max(logits, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.sum(y * logp) / data["x"].shape[0]


def rosen(params, xp, data):
    """scipy.optimize.rosen, on traceable operations."""
    (x,) = params
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def attention_loss(params, xp, data):
    """Single-head self-attention of a (4, 8) input, softmax over einsum scores."""
    x, wq, wk, wv = params
    q = xp.einsum("td,de->te", x, wq)
    k = xp.einsum("td,de->te", x, wk)
    v = xp.einsum("td,de->te", x, wv)
    s = xp.einsum("te,se->ts", q, k) / np.sqrt(8.0)
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    a = e / xp.sum(e, axis=-1, keepdims=True)
    out = xp.einsum("ts,se->te", a, v)
    return xp.sum(xp.tanh(out) * xp.asarray(data["c"])) + 0.5 * xp.sum(out * out)


def _mlp_problem():
    n, d, h, k = 5, 4, 6, 3
    params = (RNG.standard_normal((d, h)) / 2, 0.1 * RNG.standard_normal(h),
              RNG.standard_normal((h, h)) / 2, 0.1 * RNG.standard_normal(h),
              RNG.standard_normal((h, k)) / 2, 0.1 * RNG.standard_normal(k))
    data = {"x": RNG.standard_normal((n, d)),
            "y": np.eye(k)[RNG.integers(0, k, size=n)]}
    return mlp_loss, params, data


def _rosen_problem():
    return rosen, (RNG.uniform(-1.5, 1.5, size=6),), {}


def _attention_problem():
    params = (RNG.standard_normal((4, 8)),) + tuple(
        RNG.standard_normal((8, 8)) / np.sqrt(8) for _ in range(3))
    return attention_loss, params, {"c": RNG.standard_normal((4, 8))}


PROBLEMS = {"mlp": _mlp_problem(), "rosenbrock": _rosen_problem(),
            "attention": _attention_problem()}
DIRECTIONS = {name: tuple(RNG.standard_normal(p.shape) for p in params)
              for name, (_, params, _) in PROBLEMS.items()}


# -- the peers --------------------------------------------------------------------
class TorchNumpy:
    """The few NumPy spellings the programs use, on torch tensors."""

    def __init__(self, torch):
        self.torch = torch

    def asarray(self, a):
        return self.torch.as_tensor(a, dtype=self.torch.float64)

    def sum(self, x, axis=None, keepdims=False):
        if axis is None:
            return self.torch.sum(x)
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    def max(self, x, axis=None, keepdims=False):
        if axis is None:
            return self.torch.amax(x)
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    def exp(self, x):
        return self.torch.exp(x)

    def log(self, x):
        return self.torch.log(x)

    def tanh(self, x):
        return self.torch.tanh(x)

    def einsum(self, subscripts, *operands):
        return self.torch.einsum(subscripts, *operands)


def jax_grad_hvp(loss, params, data, v):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = pytest.importorskip("jax.numpy")

    def f(p):
        return loss(p, jnp, data)

    @jax.jit  # one compilation instead of one per eager op
    def value_grad_hvp(p, t):
        g, hv = jax.jvp(jax.grad(f), (p,), (t,))  # forward over reverse
        return f(p), g, hv

    value, g, hv = value_grad_hvp(tuple(jnp.asarray(a) for a in params),
                                  tuple(jnp.asarray(a) for a in v))
    return float(value), [np.asarray(a) for a in g], [np.asarray(a) for a in hv]


def torch_grad_hvp(loss, params, data, v):
    torch = pytest.importorskip("torch")
    xp = TorchNumpy(torch)
    p = tuple(torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in params)
    t = tuple(torch.as_tensor(a, dtype=torch.float64) for a in v)
    out = loss(p, xp, data)
    g = torch.autograd.grad(out, p, create_graph=True)
    gv = sum(torch.sum(gi * ti) for gi, ti in zip(g, t))
    hv = torch.autograd.grad(gv, p)
    return (float(out.detach()), [gi.detach().numpy() for gi in g],
            [h.numpy() for h in hv])


PEERS = {"jax": jax_grad_hvp, "torch": torch_grad_hvp}


# -- the comparisons ----------------------------------------------------------------
def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == np.float64, (a.shape, a.dtype, b.shape)
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def _assert_close(ours, theirs, what):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        rel = _rel(a, b)
        assert rel <= RTOL, f"{what}[{i}] relative error {rel:.3g} > {RTOL:g}"


def _np_fun(loss, data):
    def f(p):
        return loss(p, np, data)
    return f


@pytest.fixture(scope="module", params=sorted(PEERS))
def peer(request):
    return request.param


@pytest.fixture(scope="module")
def peer_results(peer):
    return {name: PEERS[peer](loss, params, data, DIRECTIONS[name])
            for name, (loss, params, data) in PROBLEMS.items()}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_value_and_gradient_match_peer(problem, peer, peer_results):
    loss, params, data = PROBLEMS[problem]
    value, g = cr.value_and_grad(_np_fun(loss, data))(params)
    ref_value, ref_g, _ = peer_results[problem]
    assert abs(value - ref_value) <= 1e-12 * abs(ref_value)
    assert isinstance(g, tuple) and len(g) == len(params)
    _assert_close(g, ref_g, f"{problem} gradient vs {peer}")


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_hvp_matches_peer(problem, peer, peer_results):
    loss, params, data = PROBLEMS[problem]
    v = DIRECTIONS[problem]
    g, hv = cr.grad_and_hvp(_np_fun(loss, data), params, v)
    _, ref_g, ref_hv = peer_results[problem]
    _assert_close(g, ref_g, f"{problem} gradient (grad_and_hvp) vs {peer}")
    _assert_close(hv, ref_hv, f"{problem} HVP vs {peer}")
    _assert_close(cr.hvp(_np_fun(loss, data), params, v), ref_hv,
                  f"{problem} hvp vs {peer}")


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_grad_of_grad_matches_peer(problem, peer, peer_results):
    # the pullbacks differentiated again (reverse over reverse)
    loss, params, data = PROBLEMS[problem]
    v = DIRECTIONS[problem]
    f = _np_fun(loss, data)

    def g_dot_v(p):
        return sum(np.sum(gi * vi) for gi, vi in zip(cr.grad(f)(p), v))

    _assert_close(cr.grad(g_dot_v)(params), peer_results[problem][2],
                  f"{problem} grad of grad vs {peer}")


def test_rosenbrock_matches_scipy():
    optimize = pytest.importorskip("scipy.optimize")
    _, (x,), _ = PROBLEMS["rosenbrock"]
    (v,) = DIRECTIONS["rosenbrock"]
    f = _np_fun(rosen, {})
    value, (g,) = cr.value_and_grad(f)((x,))
    assert abs(value - optimize.rosen(x)) <= 1e-14 * optimize.rosen(x)
    assert _rel(g, optimize.rosen_der(x)) <= 1e-13
    (hv,) = cr.hvp(f, (x,), (v,))
    assert _rel(hv, optimize.rosen_hess_prod(x, v)) <= 1e-13
    assert _rel(hv, optimize.rosen_hess(x) @ v) <= 1e-13
