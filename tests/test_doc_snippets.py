"""Every Python block of the README and of the manual runs as written: the
front page and the guides are the first code a new user copies. The blocks
of one page run in order in one namespace (a later block may use an earlier
one's names). A block preceded by an ``<!-- not run: why -->`` comment (a
summary of signatures, a block that needs 8 GB) is skipped."""

import pathlib
import re

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
_BLOCK = re.compile(r"(<!-- not run:[^>]*-->\n)?```python\n(.*?)```", re.S)


def _blocks(page):
    return [(bool(skip), code) for skip, code in _BLOCK.findall(page.read_text())]


RUN = [p for p in PAGES if any(not skip for skip, _ in _blocks(p))]


def test_the_pages_have_runnable_blocks():
    names = {p.relative_to(ROOT).as_posix() for p in RUN}
    assert {"README.md", "docs/index.md", "docs/guide/higher-order.md"} <= names


@pytest.mark.parametrize("page", RUN, ids=[p.relative_to(ROOT).as_posix() for p in RUN])
def test_page_blocks_run(page):
    blocks = _blocks(page)
    if any("dask" in code for skip, code in blocks if not skip):
        pytest.importorskip("dask.distributed")
    namespace = {"__name__": "doc_snippet"}
    for k, (skip, code) in enumerate(blocks):
        if skip:
            continue
        try:
            exec(compile(code, f"{page.name} block {k}", "exec"), namespace)
        except Exception as e:  # name the block in the failure
            raise AssertionError(f"{page.relative_to(ROOT)} block {k} failed: "
                                 f"{type(e).__name__}: {e}") from e
    if page.name == "README.md":
        # the cluster example: a gradient of the right shape
        assert np.shape(namespace["grad"]) == (10,)
        assert np.all(np.isfinite(namespace["grad"]))
