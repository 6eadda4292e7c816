"""docs/coverage.md is the table ``chainrules.testing.coverage`` generates
from the registry and the specs: regenerated here, it must be identical."""

import os

import numpy as np
import pytest

from chainrules.registry import builtin_ops, op_name
from chainrules.testing import coverage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "coverage.md")

# the scipy families register only when SciPy is installed (the test extras have it)
pytest.importorskip("scipy")


@pytest.fixture(scope="module")
def rows():
    return coverage.coverage_rows()


def _split_audit(page):
    """(the rule table, the NumPy and SciPy versions the page states). The
    sections after the rule table (compositions, twins, scipy.special,
    audit) follow the functions the installed NumPy and SciPy have."""
    head = page.partition("\n## Compositions")[0]
    numpy_v = page.split("Generated against NumPy ", 1)[1].split(":", 1)[0]
    scipy_v = page.split("Generated against SciPy ", 1)[1].split(":", 1)[0]
    return head, (numpy_v, scipy_v)


def test_docs_coverage_page_is_up_to_date(rows):
    with open(PAGE, encoding="utf-8") as f:
        on_disk = f.read()
    made = coverage.coverage_table(rows)
    import scipy

    if _split_audit(on_disk)[1] != (np.__version__, scipy.__version__):
        # another NumPy (another Python's wheels): its audit lists other
        # functions; the registry's tables must still be identical
        made, on_disk = _split_audit(made)[0], _split_audit(on_disk)[0]
    assert made == on_disk, (
        "docs/coverage.md is out of date with the registry and the specs; regenerate it "
        f"with `{coverage.REGENERATE}` (from the repository root) and commit it")


def test_every_builtin_op_listed_once_in_order(rows):
    assert sorted(r["name"] for r in rows) == sorted(op_name(op) for op in builtin_ops())
    assert len({r["name"] for r in rows}) == len(rows)
    assert [(r["family"], r["name"]) for r in rows] == sorted((r["family"], r["name"])
                                                             for r in rows)


def test_families_are_the_registering_modules(rows):
    fam = {r["op"]: r["family"] for r in rows}
    # made by shared helpers (scalar_rule, non_differentiable, linear_rule, defrule)
    # whose __module__ is chainrules.derived / chainrules.registry / rules.linalg
    assert fam[np.sin] == "elementwise"
    assert fam[np.negative] == "arithmetic"
    assert fam[np.argmax] == "nondiff"
    assert fam[np.linalg.matrix_rank] == "linalg"
    assert fam[np.transpose] == "shape"
    assert fam[np.concatenate] == "shape_pieces"
    assert fam[np.sum] == "reductions"
    assert fam[np.einsum] == "contractions"
    import scipy.special
    from chainrules.rules import scipy_linalg

    assert fam[scipy_linalg.expm] == "scipy_linalg"  # registered with linalg.defrule
    assert fam[scipy.special.gammaln] == "special"
    known = {"arithmetic", "elementwise", "complex", "reductions", "statistics",
             "contractions", "shape", "shape_pieces", "indexing", "nondiff", "linalg",
             "decompositions",
             "scipy_linalg", "scipy_linalg_solvers", "scipy_linalg_schur", "scipy_integrate",
             "scipy_signal", "fft", "special", "special_bessel", "special_incomplete",
             "special_elementary", "special_elliptic", "special_distributions",
             "special_integrals", "special_odes", "special_inverses", "scipy_fft",
             "scipy_sparse", "scipy_sparse_linalg", "scipy_quad", "scipy_optimize"}
    # an operation registered by several families (np.matmul: contractions, and
    # scipy_sparse for a sparse right operand) lists them all
    assert {f for v in fam.values() for f in v.split(", ")} <= known
    assert fam[np.matmul] == "contractions, scipy_sparse"


def test_modes_and_dtypes_come_from_the_specs(rows):
    by_op = {r["op"]: r for r in rows}
    assert by_op[np.exp]["modes"] == ["rrule", "frule", "hvp"]
    assert by_op[np.exp]["dtypes"] == ["float64", "float32", "complex128"]
    assert by_op[np.argmax]["modes"] == ["nondiff"]
    assert by_op[np.deg2rad]["dtypes"] == ["float64", "float32"]
    assert all(r["specs"] >= 1 and r["modes"] and r["dtypes"] for r in rows)
    table = coverage.coverage_table(rows)
    assert "| elementwise | `numpy.exp` | rrule, frule, hvp | float64, float32, complex128 |" \
        in table
    assert coverage.REGENERATE in table.splitlines()[2]


def test_command_line_prints_the_table(capsys, rows, monkeypatch):
    monkeypatch.setattr(coverage, "coverage_rows", lambda: rows)
    assert coverage.main([]) == 0
    assert capsys.readouterr().out == coverage.coverage_table(rows)
