"""The core's layers import one way only.

Every import in a core module, at module level or inside a function, is an
edge of the import graph; the graph must have no cycle, and each module may
import only modules of its own layer or below (docs/design.md draws the layers):

errors, arrays, pytree -> tangents -> rule -> registry -> sweep_common ->
sweep_reverse, sweep_forward -> graph (the engine: the tape and its sweeps)
-> tracing -> derived rules, transpose -> api and the rest.

The engine knows rules and tangents, never traced values or anomaly
internals (anomaly detection and the pullback transposition plug in through
``chainrules.graph.HOOKS``), and no core module imports the rule library.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

import chainrules

PKG = pathlib.Path(chainrules.__file__).parent

LAYERS = [
    {"errors", "arrays", "pytree", "array_methods", "guards", "user_code", "fp_warnings",
     "transformed", "staging", "staging_tables", "staging_operators", "opaque", "plan", "plan_passes", "plan_stages",
     "plan_join", "plan_batch", "plan_buffers"},
    {"tangents"},
    {"rule"},
    {"registry"},
    {"ufunc_methods"},
    {"sweep_common", "sweep_batch"},
    {"sweep_reverse", "sweep_forward"},
    {"graph"},
    {"tracing"},
    {"arguments", "copies", "broadcast", "capture", "derived", "derived_common", "derived_linear",
     "elementwise_expr", "program_code", "elementwise_threads", "elementwise_chunks", "kernels",
     "kernel_cache",
     "kernel_scatter", "kernel_grid", "kernel_source", "fusion_code", "fused_region", "fused_sweeps", "derived_nary", "primitives", "transpose"},
    {"anomaly", "api", "jacobians", "linearization", "checkpoint", "numpy", "twin_hints",
     "second_order", "writes", "writes_buffers", "writes_views",
     "plan_regions", "plan_grid", "plan_merge", "jit"},
]
LAYER = {m: k for k, mods in enumerate(LAYERS) for m in mods}


def _imports(mod):
    """The chainrules modules imported anywhere in ``chainrules/<mod>.py``."""
    tree = ast.parse((PKG / f"{mod}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
                if base is None:  # from . import x
                    out.update(a.name for a in node.names)
                else:
                    out.add(base.split(".")[0])
            elif node.module and node.module.startswith("chainrules."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("chainrules."):
                    out.add(a.name.split(".")[1])
    return out - {mod}


def test_core_modules_import_only_lower_layers():
    bad = []
    for mod, k in LAYER.items():
        for dep in _imports(mod):
            if dep in ("rules", "scipy", "testing"):
                bad.append(f"{mod} imports chainrules.{dep}, which sits above the core")
            elif dep in LAYER and LAYER[dep] > k:
                bad.append(f"{mod} (layer {k}) imports {dep} (layer {LAYER[dep]})")
    assert not bad, "\n".join(bad)


def _assert_acyclic(graph):
    """``graph`` (module -> the modules it imports) has no cycle."""
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path + [m])
        state[m] = "open"
        for d in sorted(graph[m]):
            visit(d, path + [m])
        state[m] = "done"

    for m in sorted(graph):
        visit(m, [])


def test_core_import_graph_has_no_cycle():
    _assert_acyclic({m: {d for d in _imports(m) if d in LAYER} for m in LAYER})


def test_every_core_module_is_in_a_layer():
    core = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert core <= set(LAYER), f"modules without a layer: {sorted(core - set(LAYER))}"


@pytest.mark.parametrize("upto", range(1, len(LAYERS) - 2))
def test_each_layer_imports_alone(upto):
    """Importing the modules of the lowest ``upto`` layers, with the package's
    __init__ bypassed, loads no module of a higher layer."""
    mods = sorted(m for m in LAYER if LAYER[m] < upto)
    code = f"""
import importlib.util, sys, types
pkg = types.ModuleType("chainrules"); pkg.__path__ = [{str(PKG)!r}]
sys.modules["chainrules"] = pkg
for m in {mods!r}:
    importlib.import_module("chainrules." + m)
print(sorted(k.split(".")[1] for k in sys.modules if k.startswith("chainrules.")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(eval(out))
    assert loaded == set(mods), f"importing {mods} also loaded {sorted(loaded - set(mods))}"


def _package_imports(path, package):
    """The chainrules subpackages and core modules imported anywhere in a
    module of ``package`` (``rules``, ``scipy``, ``testing``)."""
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: within the package itself
                continue
            if node.module and node.module.startswith("chainrules."):
                out.add(node.module.split(".")[1])
            elif node.module == "chainrules":
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("chainrules."):
                    out.add(a.name.split(".")[1])
    return out


@pytest.mark.parametrize("package,refused", [
    ("rules", {"scipy", "testing"}),      # the rule library: the core only
    ("scipy", {"testing"}),               # the SciPy twins: the core and the rules
])
def test_upper_packages_import_downward(package, refused):
    root = PKG.parent / "rules" if package == "rules" else PKG / package
    bad = [f"{p.relative_to(root.parent)} imports chainrules.{d}"
           for p in sorted(root.rglob("*.py")) for d in _package_imports(p, package)
           if d in refused]
    assert not bad, "\n".join(bad)


def _relative_imports(path):
    """``(module, names)`` of each relative import in a rule module,
    deferred (inside a function) ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.append((node.module, [a.name for a in node.names]))
    return out


def test_rule_modules_share_public_names_without_cycles():
    """The rule library's modules import each other's public names only (a
    module's underscore names are its own; shared helpers live in a shared
    module under public names), and their imports, deferred ones included,
    form no cycle."""
    root = PKG.parent / "rules"
    graph, private = {}, []
    for p in sorted(root.glob("*.py")):
        deps = set()
        for module, names in _relative_imports(p):
            if module is None:  # from . import family
                deps.update(names)
                continue
            deps.add(module)
            private += [f"{p.name} imports {n} from {module}" for n in names
                        if n.startswith("_") and not n.startswith("__")]
        graph[p.stem] = deps & {q.stem for q in root.glob("*.py")}
    assert not private, "\n".join(private)
    _assert_acyclic(graph)
