"""Every Python block of the README runs as written (the front page is the
first code a new user copies)."""

import pathlib
import re

import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code):
    if "dask" in code:
        pytest.importorskip("dask.array")
    if "distributed" in code:
        pytest.importorskip("dask.distributed")
    namespace = {}
    exec(compile(code, str(README), "exec"), namespace)
    if "grad" in namespace:  # the cluster example: a gradient of the right shape
        assert np.shape(namespace["grad"]) == (10,)
        assert np.all(np.isfinite(namespace["grad"]))
