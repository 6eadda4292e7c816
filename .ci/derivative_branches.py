"""Branch coverage of the rule library's derivative code under the rule
sweep: every branch of a pullback, pushforward or pullback_with_tangents
(and of the helpers they are made of) that ``tests/rules/test_sweep.py``
never takes, in the full test tier (``--full``: 12 examples per case).
Derivative code that no sweep reaches is a wrong answer that no test would
notice.

    python .ci/derivative_branches.py            # run the sweep under coverage, list
    python .ci/derivative_branches.py --report   # list from an existing .coverage

Exits 1 when a derivative branch is not taken and not explained in
``EXPLAINED`` below (0 otherwise). Needs coverage.py (``pip install
coverage``).
"""

import argparse
import ast
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: functions holding derivative code, by name: the protocol's methods, the
#: _pb/_pf/_transpose helpers of the rule makers, partials and tangents
DERIVATIVE = re.compile(
    r"pullback|pushforward|with_tangents|transpose|tangent|cotangent|_cot|adjoint|"
    r"_jvp|_vjp|_pbt?$|_pf$|_pbt?_|_pf_|_t[xy]$|_dd?$", re.I)


#: branches the sweep cannot take, by (file, function, the branch's source
#: line): each with why, and what would take it
EXPLAINED = {
    ("rules/reductions.py", "pullback", "if kept is not None and kept[0] is g:  # the seed of a gradient"):
        "WholeSumRule's kept pullback of a gradient's seed: only the engine's gradient "
        "calls pass the seed itself (arguments._SEEDS), never the rule checker's "
        "cotangents; tests/core/test_fixed_cost_paths.py compares it with the general rule",
    ("rules/reductions.py", "pullback", "if g is _SEEDS.get(g.dtype):  # (a 0-d array)"):
        "WholeSumRule's first pullback of a gradient's seed (as the branch above: the "
        "engine's seed only; tests/core/test_fixed_cost_paths.py)",
    ("rules/reductions.py", "pullback", "if len(_SEED_UNIFORMS) >= _MAX_SEED_UNIFORMS:"):
        "the kept seeds' bound, reached after 256 shapes of gradients' seeds "
        "(tests/core/test_fixed_cost_paths.py fills a bound of 2)",
    ("rules/reductions.py", "pullback", "if g.ndim == 0:"):
        "a whole sum's output is 0-d, so every ndarray cotangent the sweep passes is; "
        "a wider one (a direct call) takes LinearRule's pullback",
    ("rules/_linalg_util.py", "pushforward", "if all(is_zero(t) for t in xds):"):
        "no sweep pushes forward a rule whose input tangents are all zero; a direct "
        "rule.pushforward call may",
    ("rules/_linalg_batch.py", "pushforward_batched", "if all(is_zero(t) for t in xds):"):
        "no sweep pushes forward a rule whose input tangents are all zero; a direct "
        "rule.pushforward_batched call may (as pushforward's guard above)",
    ("rules/_linalg_batch.py", "pullback_batched", "if all_zero(G):"):
        "the engine skips a node whose cotangent is structurally zero, and these rules "
        "are not linear (a linear rule's default second order passes ZeroTangent()); a "
        "direct rule.pullback_batched call may",
    ("rules/shape_pieces.py", "pullback_batched",
     "if isinstance(gs, Structural) or all(isinstance(g, Structural) for g in gs):"):
        "every output's cotangent structurally zero: the engine skips such a node (a "
        "structural zero never enters a multi-output node's slots), and the rule checker "
        "tries structural outputs one at a time; a direct call may pass them all",
    ("rules/decompositions.py", "_svd_pb",
     "if k and np.any(sv <= 100 * k * np.finfo(sv.dtype).eps * scale):"):
        "raises DomainError for the singular vectors of a rank-deficient non-square "
        "matrix: the sweep samples where derivatives exist "
        "(tests/rules/test_linalg.py takes it)",
    ("rules/scipy_integrate.py", "pullback", "if is_traced(g):"):
        "refuses a traced cotangent (HvpNotSupported): reached by nested "
        "differentiation only, which these rules do not support",
    ("rules/scipy_integrate.py", "pushforward",
     "if any(is_traced(t) for t in full if t is not None and not is_zero(t)):"):
        "refuses a traced tangent (HvpNotSupported): nested differentiation only",
    ("rules/_linalg_base.py", "project_cotangent",
     'if c.dtype.kind == "c" and x.dtype.kind != "c":'):
        "a complex cotangent for a real input: a real matrix with complex eigenvalues "
        "under eig/eigvals; the sweep samples real spectra (the eigenvalues of a real "
        "matrix cross into complex pairs where they are not differentiable); "
        "tests/rules/test_scipy_linalg_checks.py takes it",
    ("rules/_reduce.py", "expand_cotangent", "if like is not None:"):
        "the reduced input is a lazy (dask) array: the payload sweep's dask cases "
        "(tests/backends) take it, not the rule sweep, which runs on NumPy arrays",
    ("rules/scipy_integrate_second.py", "ode_pullback_with_tangents",
     "if rule.ids[1] is not None:"):
        "refuses traced time points in second order (HvpNotSupported): the sweep's ODE "
        "spec differentiates y0 and the parameters; tests/rules/test_scipy_integrate.py "
        "takes it",
    ("rules/scipy_integrate_second.py", "ode_pullback_with_tangents",
     "if is_traced(g) or is_traced(gd) or any(is_traced(t) for t in tangents):"):
        "refuses a traced cotangent or tangent (HvpNotSupported): nested "
        "differentiation only, which these rules do not support",
    ("rules/scipy_integrate_second.py", "ode_pullback_with_tangents",
     "if gd is None and not moves:              # no second-order term"):
        "no second-order term (the cotangent's tangent and every input tangent zero): "
        "the engine's demand analysis never asks for it and the rule checker's "
        "consistency cases each keep one of them; a direct call may",
    ("rules/scipy_integrate_second.py", "ode_pullback_with_tangents",
     "if n * (1 + nl + npar) <= limit:"):
        "the adjoint path of the second order (systems above SENSITIVITY_MAX_STATE): "
        "the sweep's ODE specs are small, and an adjoint-path HVP spec costs minutes; "
        "tests/rules/test_scipy_integrate.py takes it in every second-order case",
    ("rules/scipy_integrate_second.py", "jacobian_with_tangent", "if tape is None:"):
        "a right-hand side that depends on neither the state nor the parameters "
        "differentiated: the sweep's ODE specs depend on both",
    ("rules/scipy_quad.py", "pullback_with_tangents",
     "if cotangent_tangent is None or is_zero(cotangent_tangent):"):
        "the cotangent and its tangent both structurally zero: the engine skips such a "
        "node; a direct rule.pullback_with_tangents call may pass them",
    ("rules/scipy_sparse_linalg.py", "_fs_pf",
     "if any(i is not None for i in r.ids[1:]):"):
        "function_solve is recorded only for an operator whose matvec closes over a "
        "traced value (a plain operator takes the matrix solves): one parameter is "
        "always traced; a direct call may trace none",
    ("rules/scipy_sparse_linalg.py", "_fs_pb",
     "if any(i is not None for i in r.ids[1:]):"):
        "function_solve is recorded only for an operator whose matvec closes over a "
        "traced value (a plain operator takes the matrix solves): one parameter is "
        "always traced; a direct call may trace none",
    ("rules/_linalg_util.py", "chol_pullback_plain", "if _staged(low):"):
        "staged values (cr.jit) take the BLAS/LAPACK path as one opaque step: "
        "tests/rules/test_jit_sweep.py reaches it, the registry sweep runs on ndarrays",
    ("rules/_linalg_util.py", "chol_tangent_plain", "if _staged(low):"):
        "staged values (cr.jit) take the BLAS/LAPACK path as one opaque step: "
        "tests/rules/test_jit_sweep.py reaches it, the registry sweep runs on ndarrays",
    ("rules/_linalg_util.py", "chol_pullback_with_tangents_plain", "if _staged(low):"):
        "staged values (cr.jit) take the BLAS/LAPACK path as one opaque step: "
        "tests/rules/test_jit_sweep.py reaches it, the registry sweep runs on ndarrays",
    ("rules/scipy_linalg.py", "_cho_factor_pf", "if _cho_keeps_input():"):
        "which side runs depends on the installed SciPy (a copy of the input before "
        "1.18, zeros from 1.18): each SciPy takes one",
}


def _functions(path):
    tree = ast.parse(path.read_text())
    return [(n.lineno, n.end_lineno, n.name) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def uncovered(report):
    """[(file, line, target, enclosing functions)] of derivative branches
    not taken, from coverage's JSON report."""
    out = []
    for name, data in sorted(report["files"].items()):
        missing = data.get("missing_branches", [])
        if not missing:
            continue
        path = pathlib.Path(name)
        if not path.is_absolute():
            path = ROOT / path
        funcs = _functions(path)
        lines = path.read_text().splitlines()
        for line, target in missing:
            chain = [n for a, b, n in sorted(funcs) if a <= line <= b]
            if any(DERIVATIVE.search(n) for n in chain):
                rel = str(path.relative_to(ROOT))
                why = EXPLAINED.get((rel, chain[-1], lines[line - 1].strip()))
                out.append((rel, line, target, "/".join(chain), why))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true",
                        help="read the existing .coverage instead of running the sweep")
    args = parser.parse_args(argv)
    py = sys.executable
    if not args.report:
        subprocess.run([py, "-m", "coverage", "erase"], cwd=ROOT, check=True)
        # the full tier (12 examples per case): the fast tier's 3 examples
        # do not reach every branch
        run = subprocess.run([py, "-m", "coverage", "run", "--branch", "--source=rules",
                              "-m", "pytest", "-q", "-p", "no:cacheprovider", "--full",
                              "tests/rules/test_sweep.py"], cwd=ROOT)
        if run.returncode != 0:
            return run.returncode
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "coverage.json"
        subprocess.run([py, "-m", "coverage", "json", "-q", "-o", str(out)], cwd=ROOT,
                       check=True)
        report = json.loads(out.read_text())
    rows = uncovered(report)
    totals = report["totals"]
    open_rows = [r for r in rows if r[4] is None]
    print(f"rules/ under the sweep: {totals['covered_branches']} of "
          f"{totals['num_branches']} branches taken; derivative branches not taken: "
          f"{len(rows)}, of which explained: {len(rows) - len(open_rows)}")
    for file, line, target, chain, why in rows:
        where = "exit" if target < 0 else f"line {target}"
        print(f"  {file}:{line} -> {where}  in {chain}" + (f"\n      ({why})" if why else
                                                          "  NOT EXPLAINED"))
    stale = stale_explanations()
    for key in stale:
        print(f"  stale EXPLAINED entry (no such line in that function): {key}")
    return 1 if open_rows or stale else 0


def stale_explanations():
    """The ``EXPLAINED`` keys whose line is not in their function any more
    (an explanation of a branch that was rewritten must go with it)."""
    stale = []
    for rel, func, text in EXPLAINED:
        path = ROOT / rel
        lines = path.read_text().splitlines()
        spans = [(a, b) for a, b, n in _functions(path) if n == func]
        if not any(lines[k - 1].strip() == text for a, b in spans for k in range(a, b + 1)):
            stale.append((rel, func, text))
    return stale


if __name__ == "__main__":
    sys.exit(main())
