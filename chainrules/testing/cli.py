"""``python -m chainrules.testing MODULE``: sweep the rules a module registers.

The command imports ``MODULE`` (a dotted module name, or the path of a
``.py`` file), finds the operations whose rules it registered (new ones, and
built-ins it overrode), and runs every one through ``check_rule`` over
Hypothesis examples:

* if the module defines ``SPECS = [RuleSpec(...), ...]`` those specs are
  used (they may also cover operations registered elsewhere);
* a registered operation without a spec gets a default sampler: as many
  float arrays of one small random shape as the function has required
  positional parameters, with values in ``--domain`` (default ``positive``,
  [0.5, 2]).

It prints a table (op, modes checked, examples run, worst relative error,
PASS/FAIL), then the message of each failure, and exits with status 1 when a
check failed, 2 when there was nothing to check, 0 otherwise.

    python -m chainrules.testing examples/my_rules.py --examples 20
"""

import argparse
import importlib
import importlib.util
import inspect
import os
import sys
import time

__all__ = ["main", "sweep"]


def _import(target):
    if target.endswith(".py") or os.path.sep in target or os.path.exists(target):
        path = os.path.abspath(target)
        if not os.path.exists(path):
            raise SystemExit(f"chainrules.testing: no such file: {target}")
        name = os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(target)


def _snapshot():
    from chainrules import registry

    return {op: {sig: id(fn) for sig, fn in d.funcs.items()}
            for op, d in registry.DISPATCHERS.items()}


def _registered_by(before):
    from chainrules import registry

    out = []
    for op, d in registry.DISPATCHERS.items():
        now = {sig: id(fn) for sig, fn in d.funcs.items()}
        if op not in before or now != before[op]:
            out.append(op)
    return out


def _arity(op):
    fn = getattr(op, "__wrapped__", None) or getattr(op, "fn", None) or op
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return getattr(op, "nin", 1)
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
    return max(n, 1)


def _is_nondiff(op):
    from chainrules import registry

    d = registry.DISPATCHERS.get(op)
    return d is not None and all(getattr(fn, "_nondiff", False) for fn in d.funcs.values())


def default_spec(op, domain="positive", dtypes=("float64", "float32")):
    """A ``RuleSpec`` drawing float arrays of one shape for every required
    positional parameter of ``op``."""
    from chainrules.testing import strategies as crs
    from chainrules.testing.specs import RuleSpec

    n = _arity(op)

    def sample(draw, dtype):
        shape = draw(crs.shapes(0, 2, 1, 3))
        return tuple(draw(crs.arrays(dtype, shape, domain)) for _ in range(n)), {}

    modes = frozenset({"nondiff"}) if _is_nondiff(op) else frozenset(
        {"rrule", "frule", "hvp"})
    return RuleSpec(op, sample, tuple(dtypes), modes=modes)


class Row:
    __slots__ = ("label", "dtype", "planned", "modes", "examples", "worst", "error")

    def __init__(self, label, dtype, planned=()):
        self.label = label
        self.dtype = dtype
        self.planned = list(planned)  # the modes the spec asks for
        self.modes = []
        self.examples = 0
        self.worst = 0.0
        self.error = None


def _run_spec(spec, dtype, examples, seed, shrink, hvp_fast):
    import numpy as np
    from hypothesis import Phase, given, settings
    from hypothesis import strategies as st

    from chainrules.testing import check_rule

    row = Row(spec.label, np.dtype(dtype).name, sorted(spec.modes))
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=phases, print_blob=False, suppress_health_check=list(
                  __import__("hypothesis").HealthCheck))
    @given(data=st.data())
    def run(data):
        args, kwargs = spec.args(data.draw, np.dtype(dtype))
        rng = np.random.default_rng(seed + row.examples)
        rep = check_rule(spec.op, *args, call=spec.call, rtol=spec.rtol, atol=spec.atol,
                         modes=spec.modes, hvp_fast=hvp_fast, rng=rng,
                         wrt=getattr(spec, "wrt", None), op_kwargs=kwargs)
        row.examples += 1
        for m in rep.modes:
            if m not in row.modes:
                row.modes.append(m)
        row.worst = max(row.worst, rep.worst)

    try:
        run()
    except Exception as e:  # noqa: BLE001 - every failure goes into the table
        row.error = f"{type(e).__name__}: {e}"
    return row


def sweep(specs, examples=20, seed=0, dtypes=None, shrink=False, hvp_fast=None):
    """Run ``specs`` and return the table rows (one per spec and dtype)."""
    rows = []
    for spec in specs:
        for dtype in (dtypes or spec.dtypes):
            rows.append(_run_spec(spec, dtype, examples, seed, shrink, hvp_fast))
    return rows


def format_table(rows):
    head = ("op", "dtype", "modes checked", "examples", "worst rel err", "result")
    # a failing row names the modes it was checking and shows no error figure
    # when it failed before any example passed (the message has the numbers)
    lines = [(r.label, r.dtype, ",".join(r.modes or (r.planned if r.error else [])) or "-",
              str(r.examples), "-" if r.error and not r.examples else f"{r.worst:.2g}",
              "FAIL" if r.error else "PASS") for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m chainrules.testing",
        description="Check the rules a module registers against finite differences "
                    "(pullback, pushforward, adjoint identity, HVP).")
    parser.add_argument("module", help="module name (pkg.mod) or path of a .py file")
    parser.add_argument("-n", "--examples", type=int, default=20,
                        help="hypothesis examples per op and dtype (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the directions")
    parser.add_argument("--dtype", action="append", dest="dtypes",
                        help="dtype to test (repeatable; default: the spec's dtypes)")
    parser.add_argument("--domain", default="positive",
                        help="domain of the default sampler (a name from "
                             "chainrules.testing.strategies.DOMAINS; default positive)")
    parser.add_argument("-k", dest="select", default=None,
                        help="only ops whose name contains this string")
    parser.add_argument("--shrink", action="store_true",
                        help="let hypothesis shrink failing examples (slower)")
    parser.add_argument("--fast-hvp", action="store_true",
                        help="require pullback_with_tangents (no nested fallback)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="limit OpenBLAS threads (default 1; 0 leaves it alone)")
    opts = parser.parse_args(argv)

    from chainrules.testing.plugin import limit_blas_threads

    if opts.blas_threads:
        limit_blas_threads(opts.blas_threads)

    import chainrules  # noqa: F401  (registers the built-in rules first)

    before = _snapshot()
    module = _import(opts.module)
    ops = _registered_by(before)
    if opts.blas_threads:
        limit_blas_threads(opts.blas_threads)  # libraries the module loaded
    specs = list(getattr(module, "SPECS", None) or [])
    covered = {s.op for s in specs}
    specs += [default_spec(op, opts.domain) for op in ops if op not in covered]
    if opts.select:
        specs = [s for s in specs if opts.select in s.label]
    if not specs:
        print(f"chainrules.testing: {opts.module} registered no rules and has no SPECS; "
              "nothing to check")
        return 2
    t0 = time.perf_counter()
    rows = sweep(specs, opts.examples, opts.seed, opts.dtypes, opts.shrink,
                 True if opts.fast_hvp else None)
    print(format_table(rows))
    failed = [r for r in rows if r.error]
    for r in failed:
        print(f"\nFAIL {r.label} [{r.dtype}] after {r.examples} passing example(s):")
        print("  " + r.error.replace("\n", "\n  "))
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed "
          f"({sum(r.examples for r in rows)} examples, "
          f"{time.perf_counter() - t0:.1f}s)")
    return 1 if failed else 0
