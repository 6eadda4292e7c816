"""Every public function of numpy, numpy.linalg and numpy.fft has a rule, is
a composition of rules, or is justified in chainrules.testing.numpy_audit."""

from chainrules.testing.numpy_audit import JUSTIFIED, audit_rows, uncovered


def test_no_public_numpy_function_is_left_uncovered():
    assert uncovered() == []


def test_the_audit_sees_the_whole_library():
    rows = audit_rows()
    status = {f"{m}.{n}": s for m, n, s in rows}
    assert status["numpy.sin"] == "rule" and status["numpy.median"] == "composition"
    assert status["numpy.zeros"] == "justified"
    assert sum(s == "rule" for s in status.values()) > 200
    assert all(reason for reason in JUSTIFIED.values())


def test_the_in_place_writes_are_recorded_not_composed():
    # np.put, np.putmask, np.place and np.fill_diagonal reach
    # chainrules.writes_buffers before any composition is looked up: none is
    # registered for them, and the audit's reason names the module
    import numpy as np

    from chainrules.registry import DECOMPOSITIONS
    from chainrules.tracing import SPECIAL_FUNCTIONS

    for name in ("put", "putmask", "place", "fill_diagonal"):
        f = getattr(np, name)
        assert f in SPECIAL_FUNCTIONS and f not in DECOMPOSITIONS
        assert "writes_buffers" in JUSTIFIED[name]
        assert dict(((m, n), s) for m, n, s in audit_rows())[("numpy", name)] == "justified"
