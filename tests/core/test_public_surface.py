"""``dir(chainrules)`` lists the API, the rule protocol, the tangent types and
the errors; internal modules stay importable by their full path."""

import importlib

import chainrules as cr

INTERNAL = ["anomaly", "api", "arrays", "broadcast", "derived", "derived_nary", "errors",
            "graph", "jacobians", "registry", "rule", "tangents", "tracing", "transpose"]


def test_dir_shows_the_public_names_only():
    names = dir(cr)
    assert set(cr.__all__) <= set(names)
    for mod in INTERNAL:
        assert mod not in names
    assert not [n for n in names if n.startswith("_") and n != "__version__"]


def test_public_names_resolve_and_internals_import_by_full_path():
    for name in cr.__all__:
        assert getattr(cr, name) is not None
    for mod in INTERNAL:
        assert importlib.import_module(f"chainrules.{mod}").__name__ == f"chainrules.{mod}"
    # the on-demand submodules
    assert cr.scipy.linalg.expm is not None
    assert cr.testing.check_rule is not None
