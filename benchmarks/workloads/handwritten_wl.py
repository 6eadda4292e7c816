"""The lower bound: every derivative written out by hand in plain NumPy.

No automatic differentiation: the forward pass keeps what the derivative
needs and the derivative is coded directly (reverse sweep, closed form, or
Pearlmutter's R-operator), the way a careful NumPy programmer would. The
outputs have the same keys as ``common.functional_bench`` so that ``run.py``
checks them against chainrules like any other framework.
"""

import numpy as np
import scipy.linalg as sl

from common import (CHAIN_BLOCKS, LSTM_NAMES, PARAM_NAMES, TV_EPS, TV_LAM, Bench,
                    lstm_params, mlp_params)


def setup(threads):
    pass


def version():
    return np.__version__


def threads():
    return None


# ---------------------------------------------------------------- the chain
SCALE = 1.01 ** CHAIN_BLOCKS   # the 50 constant factors, applied once


def chain_value_and_grad(x):
    """``common.chain`` and its gradient: forward keeping cos(x) of each sin
    input and each tanh output, then the reverse sweep. Every op is
    elementwise, so each step of the sweep is a product of local derivatives;
    the ``* 1.01`` factors are folded into one scalar."""
    saved = []
    for _ in range(CHAIN_BLOCKS):
        c = np.cos(x)
        x = np.tanh(np.sin(x) * 1.01 + 0.1)
        saved.append((c, x))
    value = np.sum(x)
    g = None
    for c, t in reversed(saved):
        d = 1.0 - t * t                  # tanh' = 1 - tanh^2
        g = d if g is None else g * d    # the cotangent of the last tanh is 1
        g *= c                           # sin' = cos
    return value, g * SCALE


# ----------------------------------------------------------------- the MLP
def _softmax(z, shift):
    """exp(z) and its row sums, shifted by the row max if ``shift``."""
    if shift:
        z = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(z)
    return z, e, np.sum(e, axis=1, keepdims=True)


def mlp_value_and_grad(params, X, Y, shift):
    """``common.mlp_loss`` and its gradient w.r.t. the six parameters (not X)."""
    W1, b1, W2, b2, W3, b3 = params
    B = X.shape[0]
    h1 = X @ W1
    h1 += b1
    np.tanh(h1, out=h1)
    h2 = h1 @ W2
    h2 += b2
    np.tanh(h2, out=h2)
    z, e, s = _softmax(h2 @ W3 + b3, shift)
    sy = np.sum(Y, axis=1, keepdims=True)
    value = -np.vdot(Y, z - np.log(s)) / B
    # d loss / d z = (softmax * sum(Y, 1) - Y) / B
    dz = e * (sy / s)
    dz -= Y
    dz *= 1.0 / B
    dW3, db3 = h2.T @ dz, np.sum(dz, axis=0)
    da = dz @ W3.T
    da *= 1.0 - h2 * h2                 # tanh' = 1 - h^2
    dW2, db2 = h1.T @ da, np.sum(da, axis=0)
    da = da @ W2.T
    da *= 1.0 - h1 * h1
    dW1, db1 = X.T @ da, np.sum(da, axis=0)
    return value, (dW1, db1, dW2, db2, dW3, db3)


def mlp_hvp_W1(W1, V1, b1, W2, b2, W3, b3, X, Y, shift):
    """HVP of the MLP loss as a function of W1, in direction V1: forward pass
    with tangents (R{.}), then the reverse pass with the tangents of the
    cotangents, keeping only what R{d loss / d W1} = X^T R{d a1} needs."""
    B = X.shape[0]
    # forward, with tangents
    h1 = X @ W1
    h1 += b1
    np.tanh(h1, out=h1)
    g1 = 1.0 - h1 * h1                  # tanh'(a1)
    rh1 = X @ V1
    rh1 *= g1
    h2 = h1 @ W2
    h2 += b2
    np.tanh(h2, out=h2)
    g2 = 1.0 - h2 * h2
    rh2 = rh1 @ W2
    rh2 *= g2
    _, e, s = _softmax(h2 @ W3 + b3, shift)
    p = e / s                           # softmax
    rz = rh2 @ W3
    rp = rz - np.sum(p * rz, axis=1, keepdims=True)
    rp *= p                             # R{softmax}
    sy = np.sum(Y, axis=1, keepdims=True) * (1.0 / B)
    # reverse: cotangents and their tangents
    dz = p * sy
    dz -= Y * (1.0 / B)
    rdz = rp * sy
    dh2, rdh2 = dz @ W3.T, rdz @ W3.T
    rda2 = rdh2 * g2 - 2.0 * h2 * rh2 * dh2   # R{dh2 * (1 - h2^2)}
    dh2 *= g2                           # da2
    dh1, rdh1 = dh2 @ W2.T, rda2 @ W2.T
    rda1 = rdh1 * g1 - 2.0 * h1 * rh1 * dh1
    return X.T @ rda1


# ------------------------------------------------------------- Rosenbrock
def rosen_hvp(x, v):
    """HVP of ``common.rosen``, closed form. Each term
    100 (b - a^2)^2 + (1 - a)^2 with a = x[i], b = x[i + 1] has the Hessian
    [[1200 a^2 - 400 b + 2, -400 a], [-400 a, 200]], so the product with
    (va, vb) adds 2 va + 400 (a (3 a va - vb) - b va) at i and
    200 vb - 400 a va at i + 1."""
    a, b, va, vb = x[:-1], x[1:], v[:-1], v[1:]
    u = a * va
    out = np.empty_like(x)
    top = out[:-1]
    np.multiply(u, 3.0, out=top)
    top -= vb
    top *= a
    top -= b * va
    top *= 400.0
    top += 2.0 * va
    out[-1] = 0.0
    u *= -400.0
    u += 200.0 * vb
    out[1:] += u
    return out


# ------------------------------------------------------------------- LSTM
def lstm_value_and_grad(params, X, T, shift):
    """``common.lstm_loss`` and its gradient (backpropagation through time).

    The forward keeps, per step, the gate activations, the cell state and
    its tanh, and the softmax; the reverse sweep carries dh and dc back and
    accumulates the weight gradients from the stacked per-step gate
    cotangents with one product each at the end."""
    Wx, Wh, b, Wo, bo = params
    S, B, V = X.shape
    H = Wh.shape[0]
    scale = 1.0 / (S * B)
    hs = np.zeros((S + 1, B, H))           # hs[t + 1] is the state after step t
    cs = np.zeros((S + 1, B, H))
    acts = np.empty((S, B, 4 * H))         # sigmoid(i, f, o) and tanh(g)
    tcs = np.empty((S, B, H))
    value = 0.0
    dY = np.empty((S, B, V))
    ZX = (X.reshape(S * B, V) @ Wx).reshape(S, B, 4 * H)
    ZX += b
    for t in range(S):
        z = ZX[t] + hs[t] @ Wh
        a = acts[t]
        z[:, :3 * H] *= 0.5                # sigmoid(u) = 0.5 tanh(u / 2) + 0.5
        np.tanh(z, out=a)
        a[:, :3 * H] *= 0.5
        a[:, :3 * H] += 0.5
        np.multiply(a[:, :H], a[:, 3 * H:], out=cs[t + 1])
        cs[t + 1] += a[:, H:2 * H] * cs[t]
        np.tanh(cs[t + 1], out=tcs[t])
        np.multiply(a[:, 2 * H:3 * H], tcs[t], out=hs[t + 1])
        y = hs[t + 1] @ Wo + bo
        if shift:
            y -= np.max(y, axis=1, keepdims=True)
        e = np.exp(y)
        s = np.sum(e, axis=1, keepdims=True)
        value -= np.vdot(T[t], y - np.log(s))
        # d loss / d y = (softmax * sum(T, 1) - T) / (S B)
        dy = dY[t]
        np.multiply(e, np.sum(T[t], axis=1, keepdims=True) / s, out=dy)
        dy -= T[t]
        dy *= scale
    value *= scale
    Hs = hs[1:].reshape(S * B, H)
    dWo = Hs.T @ dY.reshape(S * B, V)
    dbo = dY.sum(axis=(0, 1))
    dH = (dY.reshape(S * B, V) @ Wo.T).reshape(S, B, H)
    dZ = np.empty((S, B, 4 * H))
    dh = np.zeros((B, H))
    dc = np.zeros((B, H))
    for t in range(S - 1, -1, -1):
        a = acts[t]
        i, f, o, g = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
        dh += dH[t]
        tc = tcs[t]
        dc += dh * o * (1.0 - tc * tc)
        dz = dZ[t]
        np.multiply(dh, tc, out=dz[:, 2 * H:3 * H])          # do
        np.multiply(dc, g, out=dz[:, :H])                    # di
        np.multiply(dc, cs[t], out=dz[:, H:2 * H])           # df
        np.multiply(dc, i, out=dz[:, 3 * H:])                # dg
        dz[:, :3 * H] *= a[:, :3 * H] * (1.0 - a[:, :3 * H])  # sigmoid'
        dz[:, 3 * H:] *= 1.0 - g * g                         # tanh'
        dc *= f
        dh = dz @ Wh.T
    dZf = dZ.reshape(S * B, 4 * H)
    dWx = X.reshape(S * B, V).T @ dZf
    dWh = hs[:-1].reshape(S * B, H).T @ dZf
    db = dZf.sum(axis=0)
    return value, (dWx, dWh, db, dWo, dbo)


# --------------------------------------------------------------------- GP
def _gp_parts(theta, D, y):
    ell2, sf2, sn2 = np.exp(2.0 * theta)
    E = np.exp(D * (-0.5 / ell2))
    E *= sf2                                # the signal part of K
    K = E.copy()
    K.flat[::K.shape[0] + 1] += sn2
    L = np.linalg.cholesky(K)
    alpha = sl.cho_solve((L, True), y)
    value = (0.5 * np.dot(y, alpha) + np.sum(np.log(np.diagonal(L)))
             + 0.5 * y.shape[0] * np.log(2 * np.pi))
    return value, ell2, sn2, E, L, alpha


def gp_value_and_grad(theta, D, y, I):
    """``common.gp_nlml`` and its gradient, the textbook way:
    d/dθ = ½ tr((K⁻¹ − α αᵀ) ∂K/∂θ) with α = K⁻¹ y and K⁻¹ from the Cholesky
    factor (LAPACK potri: only one triangle is computed)."""
    value, ell2, sn2, E, L, alpha = _gp_parts(theta, D, y)
    Kinv, info = sl.lapack.dpotri(L, lower=1)
    Kinv = np.tril(Kinv) + np.tril(Kinv, -1).T
    W = Kinv
    W -= np.outer(alpha, alpha)             # K⁻¹ − α αᵀ
    WE = W * E
    grad = np.array([0.5 * np.vdot(WE, D) / ell2,       # ∂K/∂log ℓ = E ∘ D / ℓ²
                     np.sum(WE),                         # ∂K/∂log σf = 2 E
                     sn2 * np.trace(W)])                 # ∂K/∂log σn = 2 σn² I
    return value, grad


# --------------------------------------------------------------------- TV
def tv_value_and_grad(x, f):
    """``common.tv_loss`` and its gradient: the slice differences pulled back
    by adding into shifted views of one gradient array."""
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    r = dx * dx
    r += dy * dy
    r += TV_EPS
    np.sqrt(r, out=r)
    res = x - f
    value = np.sum(r) + (0.5 * TV_LAM) * np.vdot(res, res)
    dx /= r
    dy /= r
    g = res
    g *= TV_LAM
    g[1:, :-1] += dx
    g[:-1, 1:] += dy
    dx += dy
    g[:-1, :-1] -= dx
    return value, g


def build(workload, d, cfg):
    shift = cfg["shift"]
    if workload == "chain":
        x = d["chain_x"]
        return Bench(lambda: chain_value_and_grad(x),
                     lambda r: {"value": r[0], "grad": r[1]}, "hand-written reverse")
    if workload == "mlp_grad":
        p, X, Y = mlp_params(d), d["X"], d["Y"]

        def outputs(r):
            return {"value": r[0], **dict(zip(PARAM_NAMES, r[1]))}
        return Bench(lambda: mlp_value_and_grad(p, X, Y, shift), outputs,
                     "hand-written reverse")
    if workload == "rosen_hvp":
        x, v = d["rosen_x"], d["rosen_v"]
        return Bench(lambda: rosen_hvp(x, v), lambda r: {"hvp": r},
                     "hand-written closed form")
    if workload == "mlp_hvp":
        W1, b1, W2, b2, W3, b3 = mlp_params(d)
        V1, X, Y = d["V1"], d["X"], d["Y"]
        return Bench(lambda: mlp_hvp_W1(W1, V1, b1, W2, b2, W3, b3, X, Y, shift),
                     lambda r: {"hvp": r}, "hand-written R-op")
    if workload == "lstm_grad":
        p, X, T = lstm_params(d), d["lstm_X"], d["lstm_T"]

        def outputs(r):
            return {"value": r[0], **dict(zip(LSTM_NAMES, r[1]))}
        return Bench(lambda: lstm_value_and_grad(p, X, T, shift), outputs,
                     "hand-written backpropagation through time")
    if workload == "gp_grad":
        theta, D, y, I = d["gp_theta"], d["gp_D"], d["gp_y"], d["gp_I"]
        return Bench(lambda: gp_value_and_grad(theta, D, y, I),
                     lambda r: {"value": r[0], "grad": r[1]},
                     "hand-written trace formula")
    if workload == "tv_grad":
        x, f = d["tv_x"], d["tv_f"]
        return Bench(lambda: tv_value_and_grad(x, f),
                     lambda r: {"value": r[0], "grad": r[1]}, "hand-written reverse")
    raise NotImplementedError(workload)
