"""Second-order optimisation with SciPy, using chainrules' gradients and
Hessian operators (Hessian-vector products, no Hessian matrix).

1. A hand-written Newton method for L2-regularised logistic regression:
   each step records the loss once (``cr.hessian_operator``), solves
   ``H p = -g`` with ``scipy.sparse.linalg.cg`` (every CG iteration is one
   forward-over-reverse sweep over that recording) and checks curvature
   with ``eigsh``.
2. ``scipy.optimize.minimize(method="trust-krylov")`` on the Rosenbrock
   function in 1,000 dimensions with ``hessp`` from ``cr.hessp``, which
   records the function once per point however many products the solver
   asks for there.

Run: ``python examples/newton_hvp.py`` (a few seconds).
"""

import time

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.linalg import cg, eigsh

import chainrules as cr

# -- 1. Newton-CG by hand on logistic regression ------------------------------------
rng = np.random.default_rng(0)
n_samples, n_features = 2000, 50
X = rng.standard_normal((n_samples, n_features))
w_true = rng.standard_normal(n_features)
y = np.where(X @ w_true + 0.5 * rng.standard_normal(n_samples) > 0, 1.0, -1.0)
lam = 1e-2


def loss(w):
    margins = y * (X @ w)
    return np.mean(np.log(1.0 + np.exp(-margins))) + 0.5 * lam * np.sum(w * w)


t0 = time.perf_counter()
w = np.zeros(n_features)
for it in range(20):
    H = cr.hessian_operator(loss, w)        # records loss once at w
    g = H.grad                              # the gradient came with the recording
    gnorm = np.linalg.norm(g)
    print(f"newton {it:2d}  loss {H.value:.10f}  |grad| {gnorm:.2e}")
    if gnorm < 1e-10:
        break
    step, info = cg(H, -g, rtol=min(0.5, np.sqrt(gnorm)) * 1e-2)
    w = w + step
H = cr.hessian_operator(loss, w)
top = eigsh(H, k=1, which="LA", return_eigenvectors=False)[0]
bottom = eigsh(H, k=1, which="SA", return_eigenvectors=False)[0]
print(f"logistic regression: {it} Newton steps in {time.perf_counter() - t0:.2f} s; "
      f"Hessian spectrum at the optimum in [{bottom:.4f}, {top:.4f}] "
      f"(smallest >= lambda = {lam}: strictly convex; condition {top / bottom:.1f})")
acc = np.mean(np.sign(X @ w) == y)
print(f"training accuracy {acc:.3f}")


# -- 2. trust-krylov on Rosenbrock in 1,000 dimensions ---------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


x0 = np.random.default_rng(1).uniform(0.0, 2.0, 1000)
h = cr.hessp(rosenbrock)
t0 = time.perf_counter()
res = minimize(h.value_and_grad, x0, jac=True, hessp=h, method="trust-krylov",
               options={"gtol": 1e-8})
print(f"\nrosenbrock 1000-d trust-krylov: success={res.success} in {res.nit} iterations, "
      f"{time.perf_counter() - t0:.2f} s; f = {res.fun:.2e}, "
      f"max |x - 1| = {np.max(np.abs(res.x - 1)):.2e}")
print(f"{res.nhev} Hessian-vector products from {h.recordings} recordings of f")
