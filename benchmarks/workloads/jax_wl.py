"""JAX with x64 enabled: eager (op-by-op) and ``jax.jit``.

HVPs are forward-over-reverse (``jax.jvp`` of ``jax.grad``), as the JAX
documentation recommends. Results are waited for inside the timed call.
"""

import os

os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
import numpy as np  # noqa: E402

from common import (LSTM_NAMES, PARAM_NAMES, Bench, chain, gp_nlml, lstm_loss,  # noqa: E402
                    lstm_params, mlp_loss, mlp_params, rosen, tv_loss)

jax.config.update("jax_enable_x64", True)


def setup(threads):
    pass


def version():
    return jax.__version__


def threads():
    return None


def _j(a):
    return jnp.asarray(a)


def _np(a):
    return np.asarray(a)


def build(workload, d, cfg, jit=False):
    shift = cfg["shift"]
    wrap = jax.jit if jit else (lambda f: f)
    ready = jax.block_until_ready
    if workload == "chain":
        x = _j(d["chain_x"])
        vg = wrap(jax.value_and_grad(lambda x: chain(jnp, x)))
        return Bench(lambda: ready(vg(x)), lambda r: {"value": _np(r[0]), "grad": _np(r[1])},
                     "value_and_grad")
    if workload == "mlp_grad":
        p, X, Y = tuple(_j(a) for a in mlp_params(d)), _j(d["X"]), _j(d["Y"])
        vg = wrap(jax.value_and_grad(lambda p, X, Y: mlp_loss(jnp, p, X, Y, shift)))

        def outputs(r):
            return {"value": _np(r[0]), **{k: _np(g) for k, g in zip(PARAM_NAMES, r[1])}}
        return Bench(lambda: ready(vg(p, X, Y)), outputs, "value_and_grad")
    if workload == "rosen_hvp":
        x, v = _j(d["rosen_x"]), _j(d["rosen_v"])
        g = jax.grad(lambda x: rosen(jnp, x))
        hvp = wrap(lambda x, v: jax.jvp(g, (x,), (v,))[1])
        return Bench(lambda: ready(hvp(x, v)), lambda r: {"hvp": _np(r)},
                     "jvp of grad (forward-over-reverse)")
    if workload == "mlp_hvp":
        rest = tuple(_j(a) for a in mlp_params(d)[1:])
        W1, V1, X, Y = _j(d["W1"]), _j(d["V1"]), _j(d["X"]), _j(d["Y"])
        g = jax.grad(lambda W1, rest, X, Y: mlp_loss(jnp, (W1,) + rest, X, Y, shift))

        def hvp(W1, V1, rest, X, Y):
            return jax.jvp(lambda W: g(W, rest, X, Y), (W1,), (V1,))[1]
        hvp = wrap(hvp)
        return Bench(lambda: ready(hvp(W1, V1, rest, X, Y)), lambda r: {"hvp": _np(r)},
                     "jvp of grad (forward-over-reverse)")
    if workload == "lstm_grad":
        p = tuple(_j(a) for a in lstm_params(d))
        X, T = _j(d["lstm_X"]), _j(d["lstm_T"])
        vg = wrap(jax.value_and_grad(lambda p, X, T: lstm_loss(jnp, p, X, T, shift)))

        def outputs(r):
            return {"value": _np(r[0]), **{k: _np(g) for k, g in zip(LSTM_NAMES, r[1])}}
        return Bench(lambda: ready(vg(p, X, T)), outputs, "value_and_grad")
    if workload in ("gp_grad", "gp_hvp"):
        th, v = _j(d["gp_theta"]), _j(d["gp_v"])
        D, y, I = _j(d["gp_D"]), _j(d["gp_y"]), _j(d["gp_I"])

        def f(th, D, y, I):
            return gp_nlml(jnp, jsl, th, D, y, I)
        if workload == "gp_grad":
            vg = wrap(jax.value_and_grad(f))
            return Bench(lambda: ready(vg(th, D, y, I)),
                         lambda r: {"value": _np(r[0]), "grad": _np(r[1])}, "value_and_grad")
        g = jax.grad(f)

        def hvp(th, v, D, y, I):
            return jax.jvp(lambda t: g(t, D, y, I), (th,), (v,))[1]
        hvp = wrap(hvp)
        return Bench(lambda: ready(hvp(th, v, D, y, I)), lambda r: {"hvp": _np(r)},
                     "jvp of grad (forward-over-reverse)")
    if workload == "tv_grad":
        x, fimg = _j(d["tv_x"]), _j(d["tv_f"])
        vg = wrap(jax.value_and_grad(lambda x, f: tv_loss(jnp, x, f)))
        return Bench(lambda: ready(vg(x, fimg)),
                     lambda r: {"value": _np(r[0]), "grad": _np(r[1])}, "value_and_grad")
    raise NotImplementedError(workload)
