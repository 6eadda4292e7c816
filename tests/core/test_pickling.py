"""The functions the transformations return pickle when ``f`` does (a
module-level function), so they map over a process pool under the spawn
start method; a lambda or a nested function gives a clear PicklingError."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import chainrules as cr


def loss(x):
    return np.sum(np.sin(x) * x ** 2)


def _grad(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x)


@pytest.mark.parametrize("make,check", [
    (lambda: cr.grad(loss), lambda g, x: np.testing.assert_allclose(g(x), _grad(x))),
    (lambda: cr.value_and_grad(loss),
     lambda g, x: np.testing.assert_allclose(g(x)[1], _grad(x))),
    (lambda: cr.jacobian(loss), lambda g, x: np.testing.assert_allclose(g(x), _grad(x))),
    (lambda: cr.hessian(loss),
     lambda g, x: np.testing.assert_allclose(np.diag(g(x)), np.diag(cr.hessian(loss)(x)))),
    (lambda: cr.grad(loss, argnums=(0,)),
     lambda g, x: np.testing.assert_allclose(g(x)[0], _grad(x))),
    (lambda: cr.checkpoint(loss), lambda g, x: np.testing.assert_allclose(g(x), loss(x))),
])
def test_round_trip(make, check):
    g = make()
    h = pickle.loads(pickle.dumps(g))
    assert h.__name__ == "loss" and h.__wrapped__ is loss
    check(h, np.array([0.3, -1.2, 2.0]))


@pytest.mark.parametrize("f", [lambda x: np.sum(x), None])
def test_lambda_and_nested_function_give_a_clear_error(f):
    if f is None:
        def f(x):
            return np.sum(x)
    with pytest.raises(pickle.PicklingError, match="top level of a module"):
        pickle.dumps(cr.grad(f))


def test_pool_map_under_spawn(tmp_path):
    script = tmp_path / "pool_grad.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import numpy as np
        import chainrules as cr

        def f(x):
            return np.sum(np.tanh(x) ** 2)

        if __name__ == "__main__":
            xs = [np.full(3, v) for v in (0.1, 0.5)]
            with mp.get_context("spawn").Pool(2) as pool:
                got = pool.map(cr.grad(f), xs)
            want = [cr.grad(f)(x) for x in xs]
            assert all(np.array_equal(a, b) for a, b in zip(got, want)), (got, want)
            print("ok", len(got))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok 2"
