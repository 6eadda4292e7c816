"""The rule coverage table: every built-in operation, the family that
registers it, and what the registry sweep checks for it.

    python -m chainrules.testing.coverage                          # print it
    python -m chainrules.testing.coverage --write docs/coverage.md

The table is generated from the registry (``builtin_ops()``, named with
``op_name``) and the rule specs (``chainrules/testing/specs/*.py``):

* family: the ``chainrules.rules`` module whose import registered the rule.
  Most makers are built by shared helpers (``scalar_rule``,
  ``non_differentiable``, ``linalg.defrule``, ...), so a maker's
  ``__module__`` names the helper, not the family. The registration site is
  therefore recorded once, in a fresh interpreter that watches the
  registry's dispatchers while ``chainrules`` is imported: the family is the
  innermost module being imported at that moment (a later
  registration for the same signature replaces the earlier one, as in the
  registry). A maker registered outside any import falls back to its
  ``__module__``.
* modes and dtypes: the union over the op's specs.

``tests/testing/test_coverage_table.py`` regenerates the table and fails
when ``docs/coverage.md`` differs, so the page cannot drift.
"""

import argparse
import json
import subprocess
import sys

__all__ = ["coverage_rows", "coverage_table", "main", "REGENERATE", "AUDIT_HEADING",
           "SCIPY_AUDIT_HEADING"]

#: the heading of the section that depends on the installed NumPy's version
BATCHED_HEADING = "## Batches of directions"
AUDIT_HEADING = "## NumPy functions without a rule"
#: the heading of the section that depends on the installed SciPy's version
SCIPY_AUDIT_HEADING = "## SciPy functions without a twin"

REGENERATE = "python -m chainrules.testing.coverage --write docs/coverage.md"

MODE_ORDER = ("rrule", "frule", "hvp", "nondiff")
DTYPE_ORDER = ("float64", "float32", "complex128", "complex64")

MODE_NOTES = {
    "rrule": "pullback against finite differences, the adjoint identity with the "
             "pushforward, raw cotangent kinds, zeros, no mutation",
    "frule": "pushforward against finite differences",
    "hvp": "the fast HVP path (`pullback_with_tangents`) against finite differences "
           "of the gradient",
    "nondiff": "returns plain values; its arguments keep their trace",
}


def _type_key(types):
    return [f"{t.__module__}.{t.__qualname__}" for t in types]


# Runs in a fresh interpreter: sys.argv[1] is the parent's sys.path (JSON).
# Prints {"file": chainrules.__file__, "sites": [[op_name, type_key, family], ...]}.
# The modules being imported are tracked by wrapping the loaders of
# chainrules' modules (a meta path finder), and registrations by wrapping
# multipledispatch's Dispatcher.add: no frame or bytecode is read.
_SITES_SCRIPT = r"""
import importlib.abc, json, sys
sys.path[:] = json.loads(sys.argv[1])
from multipledispatch import Dispatcher

importing, sites = [], {}
SKIP = ("chainrules.registry", "chainrules.derived")

class Track(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if not name.startswith("chainrules"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            importing.append(name)
            try:
                run(module)
            finally:
                importing.pop()
        spec.loader.exec_module = exec_module
        return spec

add = Dispatcher.add

def watched_add(self, signature, func):
    family = next((m for m in reversed(importing) if m not in SKIP), None)
    types = tuple(f"{t.__module__}.{t.__qualname__}" for t in signature[:-1])
    sites[(self.name, types)] = family
    return add(self, signature, func)

sys.meta_path.insert(0, Track())
Dispatcher.add = watched_add
try:
    import chainrules
    import chainrules.rules
    chainrules.rules.load_all()
finally:
    Dispatcher.add = add
print(json.dumps({"file": chainrules.__file__,
                  "sites": [[k[0], list(k[1]), v] for k, v in sites.items()]}))
"""


def _registration_sites():
    """{(op_name, type key): module that registered it}, from a fresh import."""
    import chainrules

    proc = subprocess.run([sys.executable, "-c", _SITES_SCRIPT, json.dumps(sys.path)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("chainrules.testing.coverage: importing chainrules in a fresh "
                           "interpreter failed:\n" + proc.stderr)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["file"] != chainrules.__file__:
        raise RuntimeError(f"chainrules.testing.coverage: the fresh interpreter imported "
                           f"{out['file']}, not {chainrules.__file__}")
    return {(name, tuple(types)): fam for name, types, fam in out["sites"]}


def _short_family(module):
    for prefix in ("chainrules.rules.", "chainrules."):
        if module and module.startswith(prefix):
            return module[len(prefix):]
    return module or "?"


def _ordered(items, order):
    items = set(items)
    return [x for x in order if x in items] + sorted(items - set(order))


def coverage_rows():
    """One dict per built-in operation (op, name, family, modes, dtypes,
    specs), sorted by family then name."""
    from chainrules.registry import DISPATCHERS, builtin_ops, op_name
    from chainrules.rules import load_all
    from chainrules.testing.specs import all_specs

    load_all()
    sites = _registration_sites()
    specs = all_specs()
    rows = []
    for op in builtin_ops():
        name = op_name(op)
        families = set()
        for sig, maker in DISPATCHERS[op].funcs.items():
            module = sites.get((name, tuple(_type_key(sig[:-1]))))
            families.add(_short_family(module or getattr(maker, "__module__", None)))
        mine = [s for s in specs if s.op is op]
        rows.append({
            "op": op,
            "name": name,
            "family": ", ".join(sorted(families)),
            "modes": _ordered((m for s in mine for m in s.modes), MODE_ORDER),
            "dtypes": _ordered((str(d) for s in mine for d in s.dtypes), DTYPE_ORDER),
            "specs": len(mine),
        })
    rows.sort(key=lambda r: (r["family"], r["name"]))
    return rows


def _cell(text):
    return text.replace("|", "\\|")


def coverage_table(rows=None):
    """The Markdown page (a string ending in a newline)."""
    if rows is None:
        rows = coverage_rows()
    families = {}
    for r in rows:
        fam = families.setdefault(r["family"], [0, 0])
        fam[0] += 1
        fam[1] += r["specs"]
    lines = [
        "# Rule coverage",
        "",
        f"<!-- Generated file: do not edit. Regenerate with `{REGENERATE}`. -->",
        "",
        "This page is generated from the rule registry (`chainrules.registry.builtin_ops()`)",
        "and the rule specs (`chainrules/testing/specs/*.py`) by `chainrules/testing/coverage.py`.",
        "Do not edit it by hand; regenerate it with",
        "",
        "```",
        REGENERATE,
        "```",
        "",
        "`tests/testing/test_coverage_table.py` fails when it is out of date.",
        "",
        "Every operation below is run by the registry sweep (`tests/rules/test_sweep.py`)",
        "through the checkers of its modes, over Hypothesis-drawn shapes, for each dtype listed:",
        "",
    ]
    lines += [f"- **{m}**: {MODE_NOTES[m]}" for m in MODE_ORDER]
    lines += [
        "",
        "*family* is the module of `chainrules.rules` that registers the rule; *specs* is",
        "the number of `RuleSpec`s (sampling regimes) for the operation.",
        "",
        f"{len(rows)} operations in {len(families)} families, "
        f"{sum(r['specs'] for r in rows)} specs.",
        "",
        "| family | operations | specs |",
        "|---|---:|---:|",
    ]
    lines += [f"| {_cell(f)} | {n} | {s} |" for f, (n, s) in sorted(families.items())]
    lines += [
        "",
        "| family | op | modes | dtypes | specs |",
        "|---|---|---|---|---:|",
    ]
    for r in rows:
        lines.append(f"| {_cell(r['family'])} | `{_cell(r['name'])}` | "
                     f"{', '.join(r['modes']) or '—'} | {', '.join(r['dtypes']) or '—'} | "
                     f"{r['specs']} |")
    lines += (_compositions_section() + _twins_section() + _special_section()
              + _batched_section() + _audit_section() + _scipy_audit_section())
    return "\n".join(lines) + "\n"


def _compositions_section():
    """The operations that run as compositions of rules, with their specs."""
    from chainrules.registry import DECOMPOSITIONS, op_name

    from .specs import all_specs

    counts = {}
    for spec in all_specs():
        counts[spec.op] = counts.get(spec.op, 0) + 1
    names = sorted((op_name(op), counts.get(op, 0)) for op in DECOMPOSITIONS)
    lines = ["", "## Compositions", "",
             "These run as NumPy calls on the traced values (`chainrules.registry.decompose`),",
             "each step recorded by its own rule; *specs* > 0 means the registry sweep checks",
             "the whole composition in every mode.", "",
             "| op | specs |", "|---|---:|"]
    lines += [f"| `{_cell(n)}` | {c} |" for n, c in names]
    return lines


def _twins_section():
    """Specs of functions that are neither rules nor NumPy compositions: the
    differentiable SciPy twins (``chainrules.scipy.stats``, ...), written as
    NumPy code on traced values and checked as a whole."""
    from chainrules.registry import DECOMPOSITIONS, builtin_ops

    from .specs import FAMILIES, family_specs

    known = set(builtin_ops()) | set(DECOMPOSITIONS)
    rows = []
    for fam in FAMILIES:
        for spec in family_specs(fam):
            if spec.op not in known:
                rows.append((fam, spec.label, ", ".join(_ordered(spec.modes, MODE_ORDER)),
                             ", ".join(spec.dtypes)))
    if not rows:
        return []
    lines = ["", "## SciPy twins", "",
             "Python-level SciPy functions rewritten as NumPy code on traced values",
             "(`chainrules.scipy.*`); the registry sweep checks each as a whole.", "",
             "| family | function | modes | dtypes |", "|---|---|---|---|"]
    lines += [f"| {_cell(f)} | `{_cell(n)}` | {m} | {d} |" for f, n, m, d in rows]
    return lines


def _special_section():
    """Every ufunc of ``scipy.special`` with a float64 loop: a rule, a
    composition of rules, or none; and the arguments without a derivative,
    with the reason, from the rule modules' ``NO_RULE`` tables."""
    try:
        import numpy as np
        import scipy.special as sc
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return []
    import importlib

    from chainrules.registry import DECOMPOSITIONS, DISPATCHERS

    names = sorted(n for n in dir(sc) if isinstance(getattr(sc, n), np.ufunc)
                   and any("d" in t.split("->")[0] for t in getattr(sc, n).types))
    status = {}
    for n in names:
        f = getattr(sc, n)
        status[n] = ("rule" if f in DISPATCHERS else
                     "composition" if f in DECOMPOSITIONS else "**no rule**")
    counts = {s: sum(1 for v in status.values() if v == s) for s in set(status.values())}
    reasons = []
    for mod in ("special", "special_bessel", "special_incomplete", "special_elementary",
                "special_distributions"):
        table = getattr(importlib.import_module(f"chainrules.rules.{mod}"), "NO_RULE", {})
        reasons += sorted(table.items())
    import scipy

    lines = ["", "## scipy.special ufuncs", "",
             f"Generated against SciPy {scipy.__version__}: "
             f"{len(names)} ufuncs with a float64 loop; "
             + ", ".join(f"{counts[s]} {s.strip('*')}" for s in sorted(counts)) + ". "
             "A rule differentiates every argument with a closed-form derivative; the",
             "arguments without one raise `MissingRuleError` naming them (second table).", "",
             "| function | derivative |", "|---|---|"]
    lines += [f"| `scipy.special.{n}` | {status[n]} |" for n in names]
    if reasons:
        lines += ["", "| functions (arguments) | why there is no derivative |", "|---|---|"]
        lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in reasons]
    return lines


def _batched_section():
    """Which rule classes take a batch of directions themselves (the fast
    path of Jacobians, Hessians and ``matmat``) and which the engine calls
    once per direction, from the classes defined in the core and the rule
    library."""
    import importlib
    import inspect
    import pkgutil

    import chainrules
    import chainrules.rules as library
    from chainrules.rule import ReverseRule

    mods = [importlib.import_module(f"chainrules.{m.name}")
            for m in pkgutil.iter_modules(chainrules.__path__) if not m.ispkg]
    mods += [importlib.import_module(f"chainrules.rules.{m.name}")
             for m in pkgutil.iter_modules(library.__path__)]
    classes = {}
    for mod in mods:
        for name, cls in vars(mod).items():
            if (inspect.isclass(cls) and issubclass(cls, ReverseRule) and cls is not ReverseRule
                    and cls.__module__ == mod.__name__):
                classes[f"{mod.__name__.replace('chainrules.', '')}.{name}"] = cls

    def kind(cls):
        b = inspect.getattr_static(cls, "batched", False)
        if isinstance(b, property):
            return "when its maps have batched forms"
        return "batched" if b else "per direction"

    lines = ["", BATCHED_HEADING, "",
             "Jacobians, Hessians, `hessian_operator(...).matmat` and the `.many` spellings",
             "sweep chunks of directions as one batch. Rule classes marked *batched* take",
             "the batch themselves; *per direction* ones are called once per direction by",
             "the engine (`chainrules/sweep_batch.py`), which is as correct and slower.",
             "Linear and bilinear rules take batches when their registration gives batched",
             "forms (`numpy.sum`, `numpy.mean`, basic indexing, `numpy.multiply`,",
             "`numpy.matmul`); wrappers (casts) when the rule they wrap does. The registry",
             "sweep checks every rule both ways (mode `batched` or `batched(loop)`).",
             "", "| rule class | batches |", "|---|---|"]
    lines += [f"| `{n}` | {kind(c)} |" for n, c in sorted(classes.items())]
    return lines


def _audit_section():
    """The NumPy audit: functions with no rule, each with its reason."""
    import numpy as np

    from .numpy_audit import JUSTIFIED, audit_rows

    rows = [(m, n) for m, n, s in audit_rows() if s in ("justified", "uncovered")]
    lines = ["", AUDIT_HEADING, "",
             "Every public function of `numpy`, `numpy.linalg` and `numpy.fft` not covered",
             "above, with the reason it needs no rule (`chainrules/testing/numpy_audit.py`;",
             "`tests/testing/test_numpy_audit.py` fails for any function left unexplained).",
             f"Generated against NumPy {np.__version__}: NumPy adds and removes functions",
             "between releases.",
             "", "| function | reason |", "|---|---|"]
    lines += [f"| `{m}.{n}` | {_cell(JUSTIFIED.get(n, '**not covered**'))} |"
              for m, n in rows]
    return lines


def _scipy_audit_section():
    """The SciPy audit: per module, how its Python-level functions are
    covered; the functions traced as they are; the others with their reason
    (the methods of the scipy.stats distributions grouped by method)."""
    try:
        import scipy
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return []
    from .scipy_audit import AS_IS, audit_rows, reason

    rows = audit_rows()
    kinds = ("twin", "rule", "as is")
    lines = ["", SCIPY_AUDIT_HEADING, "",
             "Every public Python-level function (not a ufunc) of `scipy.special`,",
             "`scipy.linalg`, `scipy.signal`, `scipy.integrate`, `scipy.optimize` and",
             "`scipy.spatial.distance`, and every public method of the `scipy.stats`",
             "distributions that `chainrules.scipy.stats` has, has a twin in `chainrules.scipy`,",
             "is reached through a rule, traces as it is, or is listed below with the reason it",
             "is not covered (`chainrules/testing/scipy_audit.py`;",
             "`tests/testing/test_scipy_audit.py` fails for any function left unexplained).",
             f"Generated against SciPy {scipy.__version__}.", "",
             "| module | functions | twins | rules | traced as is | not covered |",
             "|---|---:|---:|---:|---:|---:|"]
    for mod in dict.fromkeys(m for m, _, _ in rows):
        status = [s for m, _, s in rows if m == mod]
        counts = [sum(s == k for s in status) for k in kinds]
        rest = len(status) - sum(counts)
        lines.append(f"| `{mod}` | {len(status)} | " + " | ".join(map(str, counts))
                     + f" | {rest} |")
    lines += ["", "| function | why it traces as it is |", "|---|---|"]
    lines += [f"| `{m}.{n}` | {_cell(AS_IS[f'{m}.{n}'])} |" for m, n, s in rows
              if s == "as is"]
    lines += ["", "| function | reason |", "|---|---|"]
    by_method = {}
    for m, n, s in rows:
        if s not in kinds and m == "scipy.stats":
            dist, method = n.split(".")
            by_method.setdefault(method, []).append(dist)
        elif s not in kinds:
            lines.append(f"| `{m}.{n}` | {_cell(reason(m, n))} |")
    for method, dists in sorted(by_method.items()):
        lines.append(f"| `scipy.stats.<dist>.{method}` for {', '.join(dists)} | "
                     f"{_cell(reason('scipy.stats', method))} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m chainrules.testing.coverage",
        description="Print (or write) the rule coverage table of the built-in rules.")
    parser.add_argument("--write", metavar="PATH",
                        help="write the table to PATH (e.g. docs/coverage.md) "
                             "instead of printing it")
    args = parser.parse_args(argv)
    text = coverage_table()
    if args.write:
        with open(args.write, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print(f"wrote {args.write}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
