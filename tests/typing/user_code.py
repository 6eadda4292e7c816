"""Code written against chainrules' public API as a user writes it, for the
type checker only (``python -m mypy`` checks it with the package; pytest
does not collect it: tests/core/test_typing.py runs mypy on it).

Each ``# type: ignore[code]`` below marks a call that is wrong and must be
reported: mypy runs with ``warn_unused_ignores``, so a transformation that
stopped checking its arguments (its result typed ``Any``) fails the check.
The other lines must type-check as they are, and the annotated assignments
say what each call returns.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

import chainrules as cr
import chainrules.numpy as cnp
from chainrules import pytree
from chainrules.testing import CheckReport, check_grads, check_rrule, fd_jvp


def loss(x: NDArray[np.float64], scale: float = 1.0) -> float:
    return float(np.sum(np.tanh(x) ** 2) * scale)


x = np.array([0.5, -1.0])

# -- transformations keep the function's parameters ----------------------------------
g: Callable[[NDArray[np.float64], float], Any] = cr.grad(loss)
cr.grad(loss)(x, scale=2.0)
cr.grad(loss)(x, scaling=2.0)  # type: ignore[call-arg]
cr.grad(loss)("x")  # type: ignore[arg-type]

value, grad_x = cr.value_and_grad(loss)(x)
v: float = value
cr.value_and_grad(loss)()  # type: ignore[call-arg]

cr.jacobian(np.sin)(x)
cr.grad(lambda a: np.sum(np.sin(a)))(x)
cr.checkpoint(np.tanh)(x)
cr.jit(np.sin)(x)  # ufuncs: NumPy types them with overloads; they keep no signature
cr.hessian(loss)(x, 3.0)
cr.hessian(loss)(x, "3")  # type: ignore[arg-type]

# -- jit: the staged function has the function's signature and result ----------------
step = cr.jit(loss)
r: float = step(x)
step(x=x)
step(x, scale=0.5)
step("not", "an", "array", extra=1)  # type: ignore[call-arg, arg-type]
step(y=x)  # type: ignore[call-arg]
info: dict[str, int] = step.cache_info()
reasons: list[str] = step.eager_reasons()
step.clear_cache()
plan = step.plan(x)
if plan is not None:
    print(plan.source)

vg = cr.jit(cr.value_and_grad(loss))
val: float = vg(x)[0]
vg(x, 1.0, 2.0)  # type: ignore[call-arg]


@cr.jit
def decorated(a: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    return a * n


d: NDArray[np.float64] = decorated(x, 2)
decorated(x, "2")  # type: ignore[arg-type]


@cr.jit(static_argnums=1)
def with_static(a: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    return a ** n


with_static(x, 3)
with_static(x)  # type: ignore[call-arg]

# -- checkpoint, as a function and as a decorator -------------------------------------
block = cr.checkpoint(loss)
b: float = block(x)
block(x, 1.0, 2.0)  # type: ignore[call-arg]


@cr.checkpoint(policy="dots")
def layer(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.tanh(a)


la: NDArray[np.float64] = layer(x)
cr.checkpoint(loss, policy="sometimes")  # type: ignore[call-overload]
cr.checkpoint_sequential([np.tanh, np.sin], x, segments=1)

# -- vjp, jvp, hvp, linearizations -----------------------------------------------------
out, f_vjp = cr.vjp(np.sin, x)
cot: tuple[Any, ...] = f_vjp(np.ones(2))
batch: tuple[Any, ...] = f_vjp.many(np.ones((3, 2)))
out_aux, f_vjp_aux, aux = cr.vjp(lambda a: (np.sum(a), "aux"), x, has_aux=True)
primal_out, tangent_out = cr.jvp(np.sin, (x,), (np.ones(2),))
hv = cr.hvp(loss, x, np.ones(2))
gr, hv2 = cr.grad_and_hvp(loss, x, np.ones(2))
frozen: NDArray[np.float64] = cr.stop_gradient(x)
lin_out, f_jvp = cr.linearize(np.sin, x)
f_jvp(np.ones(2))
f_jvp.many(np.ones((3, 2)))
f_jvp.free()
g_lin, hvp_fn = cr.linearize_grad(loss, x)
hvp_fn(np.ones(2))
hvp_fn.many(np.ones((3, 2)))
f_at_x = hvp_fn.value
hvp_fn.free()
hvp_fn.flush()  # type: ignore[attr-defined]
h = cr.hessp(loss)
hp = h(x, np.ones(2))
vg_at_x = h.value_and_grad(x)
n_recordings: int = h.recordings
cr.hessp(loss, staged="yes")  # type: ignore[arg-type]
H = cr.hessian_operator(loss, x)

# -- rules ---------------------------------------------------------------------------
softsign = cr.primitive(lambda a: a / (1 + np.abs(a)))
cr.scalar_rule(softsign, lambda a, y: 1 / (1 + np.abs(a)) ** 2, saves="x")
cr.scalar_rule(softsign, 0, second=0)
cr.scalar_rule(softsign, lambda a, y: a, saves=3)  # type: ignore[arg-type]


def cube_impl(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return a ** 3


cube = cr.primitive(cube_impl)
c: NDArray[np.float64] = cube(x)
cube(x, x)  # type: ignore[call-arg]


class CubeRule(cr.ReverseRule):
    def __init__(self, x_id: cr.NodeId, a: NDArray[np.float64]) -> None:
        self.x_id, self.a = x_id, a

    def inputs(self) -> tuple[cr.NodeId, ...]:
        return (self.x_id,)

    def pullback(self, g: Any) -> list[tuple[cr.NodeId, Any]]:
        return [(self.x_id, g * 3 * self.a ** 2)]


@cr.register(cube)
def _cube_maker(ids: tuple[cr.NodeId | None, ...], a: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], CubeRule]:
    assert ids[0] is not None
    return a ** 3, CubeRule(ids[0], a)


@cr.rrule(softsign)
def _softsign_rule(a: NDArray[np.float64]) -> tuple[Any, Callable[[Any], tuple[Any]]]:
    y = a / (1 + np.abs(a))
    return y, lambda g: (g / (1 + np.abs(a)) ** 2,)


bucket = cr.non_differentiable(cr.primitive(lambda a: np.floor(a * 4)))
bucket(x)

# -- the engine, for people building their own array types ----------------------------
tape = cr.Tape()
node: cr.NodeId = tape.leaf(x)
grads: cr.Gradients = tape.backward([node], [np.ones(2)])
g0 = grads.get(node)
tans: list[Any] = tape.forward({node: np.ones(2)})
zero = cr.ZeroTangent()
same: NDArray[np.float64] = zero + x
no = cr.NoTangent()

# -- contexts ----------------------------------------------------------------------------
with cr.detect_anomaly():
    on: bool = cr.is_anomaly_enabled()
previous: bool = cr.set_anomaly_mode(False)
with cr.fusion(False, threads=1, kernels="always"):
    pass
with cr.fusion(kernels="sometimes"):  # type: ignore[arg-type]
    pass

# -- pytrees and chainrules.numpy ---------------------------------------------------------
leaves, treedef = pytree.flatten({"w": x, "b": 0.5})
tree = pytree.unflatten(treedef, leaves)
vec, unravel = pytree.ravel(tree)
n_elements: int = vec.size
m = cnp.array([[x[0], 1.0], [0.0, x[1]]])
cnp.index_update(m, (0, 1), 2.0)
cnp.full(3, 1.0, dtype=np.float32)

# -- chainrules.testing ----------------------------------------------------------------------
report: CheckReport = check_rrule(np.sin, x, rtol=1e-8)
check_rrule(np.sin, x, rtol="tight")  # type: ignore[arg-type]
assert check_grads(loss, x, order=1)
fd_value = fd_jvp(np.sin, (x,), (np.ones(2),)).value
