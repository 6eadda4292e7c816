"""Every script in examples/ runs (with ``--quick`` where it takes it), so
none can rot. Each example asserts its own results."""

import os
import pathlib
import subprocess
import sys

import pytest

# whole programs in subprocesses: the full tier (--full) runs them
pytestmark = pytest.mark.slow

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    text = path.read_text()
    args = ["--quick"] if "--quick" in text else []
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True,
                          text=True, timeout=600, cwd=path.parent.parent,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
