"""chainrules in one page: gradients and Hessian-vector products of plain NumPy.

Run: python examples/quickstart.py
"""

import numpy as np

import chainrules as cr


def loss(params, x, y):
    """A two-layer network with a squared-error loss, in plain NumPy."""
    W1, b1, W2 = params["W1"], params["b1"], params["W2"]
    h = np.tanh(x @ W1 + b1)
    pred = h @ W2
    return np.mean((pred - y) ** 2)


rng = np.random.default_rng(0)
x = rng.standard_normal((32, 3))
y = np.sin(x.sum(axis=1, keepdims=True))
params = {"W1": 0.5 * rng.standard_normal((3, 8)), "b1": np.zeros(8),
          "W2": 0.5 * rng.standard_normal((8, 1))}

# 1. value and gradient: the gradient has the structure of params
value, g = cr.value_and_grad(loss)(params, x, y)
print(f"loss = {value:.6f}")
print("gradient shapes:", {k: v.shape for k, v in g.items()})

# 2. a few steps of gradient descent
for step in range(200):
    value, g = cr.value_and_grad(loss)(params, x, y)
    params = {k: params[k] - 0.1 * g[k] for k in params}
print(f"loss after 200 steps = {value:.6f}")

# 3. derivatives nest: d^2/dx^2 sin(x) = -sin(x)
print("grad(grad(sin))(0.5) =", cr.grad(cr.grad(np.sin))(0.5), " -sin(0.5) =", -np.sin(0.5))

# 4. Hessian-vector product, forward-over-reverse, checked against the closed form
A = rng.standard_normal((4, 4))
v = rng.standard_normal(4)
hv = cr.hvp(lambda z: 0.5 * z @ A @ z, rng.standard_normal(4), v)
print("hvp of 0.5 z^T A z:", hv, " expected:", 0.5 * (A + A.T) @ v)
assert np.allclose(hv, 0.5 * (A + A.T) @ v)

# 5. forward mode
out, tangent = cr.jvp(np.exp, (np.array([0.0, 1.0]),), (np.array([1.0, 1.0]),))
print("jvp of exp:", tangent)
