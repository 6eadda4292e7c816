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
