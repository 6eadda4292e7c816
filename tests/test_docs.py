"""The manual: every public name has a docstring example that runs, the
table of public names lists them all, and the site builds in strict mode
(when MkDocs is installed: ``pip install -e ".[docs]"``)."""

import doctest
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import chainrules as cr

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _public():
    return [(name, getattr(cr, name)) for name in cr.__all__]


@pytest.mark.parametrize("name, obj", _public(), ids=[n for n, _ in _public()])
def test_public_name_has_a_running_example(name, obj):
    doc = obj.__doc__ or ""
    assert ">>>" in doc, f"chainrules.{name} has no example in its docstring"
    test = doctest.DocTestParser().get_doctest(doc, {"np": np, "cr": cr}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_table_of_public_names_lists_every_name():
    table = _hooks().public_names_table()
    for name in cr.__all__:
        assert f"| `{name}` |" in table
    assert (ROOT / "docs" / "api-index.md").read_text().count(_hooks().MARKER) == 1


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert pages
    missing = [p for p in pages if p not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    exe = shutil.which("mkdocs") or sys.executable
    cmd = [exe] if exe.endswith("mkdocs") else [exe, "-m", "mkdocs"]
    r = subprocess.run(cmd + ["build", "--strict", "-q", "-d", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "site" / "reference" / "api" / "index.html").exists()
