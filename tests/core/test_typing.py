"""The typed public API, checked with mypy as a user's code would be:
tests/typing/user_code.py (every call there type-checks, and each call
marked ``# type: ignore[...]`` is an error mypy must report: the project's
configuration warns about unused ignores), and a snippet here whose wrong
call must be reported and whose jitted function must keep its parameters.

One mypy run (its cache in a temporary directory) checks both; skipped
where mypy is not installed (the ``test`` extra installs it)."""

import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy")

ROOT = pathlib.Path(__file__).resolve().parents[2]

SNIPPET = textwrap.dedent('''\
    import numpy as np
    from numpy.typing import NDArray

    import chainrules as cr


    def f(x: NDArray[np.float64]) -> float:
        return float(np.sum(x ** 2))


    step = cr.jit(f)
    reveal_type(step)
    reveal_type(cr.value_and_grad(f))
    reveal_type(cr.checkpoint(f))
    step("not", "an", "array", extra=1)
    ok: float = step(x=np.ones(2))
    ''')


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("typing")
    snippet = tmp / "wrong_call.py"
    snippet.write_text(SNIPPET)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp / "cache"), "--no-error-summary",
         str(ROOT / "tests" / "typing" / "user_code.py"), str(snippet)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()

    def of(name):
        return [ln for ln in lines if pathlib.Path(ln.split(":", 1)[0]).name == name]

    return proc, of


def test_user_code_type_checks(mypy_run):
    proc, of = mypy_run
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 2: mypy itself failed
    assert of("user_code.py") == [], "\n".join(of("user_code.py"))


def test_wrong_call_of_a_jitted_function_is_reported(mypy_run):
    proc, of = mypy_run
    line = SNIPPET.splitlines().index('step("not", "an", "array", extra=1)') + 1
    errors = [ln for ln in of("wrong_call.py") if ": error:" in ln]
    assert proc.returncode == 1
    # every error is on the wrong call, and it is reported for each mistake
    assert errors and all(f"wrong_call.py:{line}:" in ln for ln in errors), "\n".join(errors)
    text = "\n".join(errors)
    assert 'Too many arguments for "__call__" of "Jitted"' in text
    assert 'Unexpected keyword argument "extra"' in text
    assert 'has incompatible type "str"' in text


def test_transformations_keep_the_parameters(mypy_run):
    proc, of = mypy_run
    revealed = [ln.split("Revealed type is ", 1)[1] for ln in of("wrong_call.py")
                if "Revealed type is" in ln]
    assert len(revealed) == 3, of("wrong_call.py")
    jitted, value_and_grad, checkpointed = revealed
    # f's parameter, by name and type, and f's result type
    assert jitted.startswith('"chainrules.jit.Jitted[[x: numpy.ndarray['), jitted
    assert "numpy.float64" in jitted and jitted.endswith(', float]"'), jitted
    assert value_and_grad.startswith('"def (x: numpy.ndarray['), value_and_grad
    assert value_and_grad.endswith('-> tuple[float, Any]"'), value_and_grad
    assert checkpointed.startswith('"def (x: numpy.ndarray['), checkpointed
    assert checkpointed.endswith('-> float"'), checkpointed
