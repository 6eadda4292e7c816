"""What a ``scalar_rule`` keeps is declared (``saves=``) and checked by
evaluating its partials, never read from bytecode: the same on every Python.
"""

import pathlib
import re

import numpy as np
import pytest

import chainrules as cr
import chainrules.rules as library
from chainrules.derived_common import NotKept
from chainrules.registry import DISPATCHERS, lookup, op_name
from chainrules.testing import CheckFailure, check_saves
from chainrules.testing.saves import derived_ops, reads

library.load_all()

_X1 = np.array([0.3, 0.6, 1.7])
_X2 = (np.array([1.5, 2.5, 3.5]), np.array([0.3, 0.6, 1.7]))


def _args(op, types):
    spec = DISPATCHERS[op].funcs[types].spec
    return _X2 if hasattr(spec, "dx") else (_X1,)


_DERIVED = sorted(derived_ops(), key=lambda ot: op_name(ot[0]))


def test_the_library_has_derived_rules_to_check():
    names = {op_name(op) for op, _ in _DERIVED}
    # the rules whose saved values once depended on the interpreter's bytecode
    assert {"numpy.logaddexp", "numpy.logaddexp2", "numpy.sqrt", "scipy.special.i1e",
            "scipy.special.k1e", "scipy.special.gammaincc"} <= names
    assert len(_DERIVED) >= 80


@pytest.mark.parametrize("op,types", _DERIVED, ids=[op_name(o) for o, _ in _DERIVED])
def test_every_derived_rule_keeps_exactly_what_its_partials_read(op, types):
    assert check_saves(op, *_args(op, types))


def test_known_declarations():
    def kept(op, *args):
        return "".join(sorted(reads(op, *args)[0]))

    assert kept(np.tanh, _X1) == "y"
    assert kept(np.exp, _X1) == "y"
    assert kept(np.sin, _X1) == "xy"
    assert kept(np.log, _X1) == "x"
    assert kept(np.sqrt, _X1) == "xy"
    assert kept(np.negative, _X1) == ""
    assert kept(np.logaddexp, *_X2) == "xyz"
    assert kept(np.divide, *_X2) == "yz"
    assert kept(np.arctan2, *_X2) == "xy"


def test_recorded_rule_holds_stand_ins_for_values_it_does_not_keep():
    x = np.array([0.2, 0.4])
    y, rule = lookup(np.tanh, (np.ndarray,))((cr.NodeId(0),), x)
    assert isinstance(rule.x, NotKept) and rule.x.role == "x"
    assert rule.y is y


@pytest.mark.parametrize("f,grad,hess_diag", [
    (lambda x: np.sum(np.logaddexp(x, 2 * x)),
     lambda x: (1 + 2 * np.exp(x)) / (1 + np.exp(x)),
     lambda x: np.exp(x) / (1 + np.exp(x)) ** 2),
    (lambda x: np.sum(np.sqrt(x)), lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x ** -1.5),
    (lambda x: np.sum(2.0 ** x), lambda x: np.log(2) * 2.0 ** x,
     lambda x: np.log(2) ** 2 * 2.0 ** x),
    (lambda x: np.sum(np.logaddexp2(x, 0.5)),
     lambda x: 2.0 ** x / (2.0 ** x + 2.0 ** 0.5),
     lambda x: np.log(2) * 2.0 ** x * 2.0 ** 0.5 / (2.0 ** x + 2.0 ** 0.5) ** 2),
])
def test_rules_once_broken_by_bytecode_against_closed_forms(f, grad, hess_diag):
    x = np.array([0.3, 1.2, 2.0])
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(cr.grad(f)(x), grad(x), rtol=1e-13)
    np.testing.assert_allclose(cr.hvp(f, x, v), hess_diag(x) * v, rtol=1e-12)


def test_scipy_special_rules_once_broken_by_bytecode():
    sc = pytest.importorskip("scipy.special")
    x = np.array([0.4, 1.3])
    # d/dx i1e(x) = i0e(x) - i1e(x) (1/x + sign(x)); k1e' = -k0e - k1e (1/x - 1)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(sc.i1e(x)))(x),
                               sc.i0e(x) - sc.i1e(x) * (1 / x + 1), rtol=1e-12)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(sc.k1e(x)))(x),
                               -sc.k0e(x) - sc.k1e(x) * (1 / x - 1), rtol=1e-12)
    a = 2.5
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(sc.gammaincc(a, x)))(x),
                               -np.exp(-x) * x ** (a - 1) / sc.gamma(a), rtol=1e-12)


def test_undeclared_saves_keep_every_value_and_are_right():
    f = cr.primitive(lambda x: np.tanh(x) * 2)
    cr.scalar_rule(f, lambda x, y: 2 * (1 - (y / 2) ** 2))
    x = np.array([0.1, -0.7])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(f(x)))(x), 2 / np.cosh(x) ** 2)


def test_a_partial_reading_a_value_not_kept_raises_rule_error():
    f = cr.primitive(lambda x: np.tanh(x) + 0)
    cr.scalar_rule(f, lambda x, y: 1 - np.tanh(x) ** 2, saves="y")
    with pytest.raises(cr.RuleError, match=r"read its value 'x'.*add 'x' to its saves="):
        cr.grad(lambda x: np.sum(f(x)))(np.array([0.1, 0.2]))
    with pytest.raises(CheckFailure, match=r"reads \['x'\], which saves= does not keep"):
        check_saves(f, np.array([0.1, 0.2]))


def test_saves_wider_than_needed_fails_the_check():
    f = cr.primitive(lambda x: np.exp(x) + 0)
    cr.scalar_rule(f, lambda x, y: y, saves="xy")
    with pytest.raises(CheckFailure, match=r"keeps \['x'\], which no partial reads"):
        check_saves(f, np.array([0.1, 0.2]))


def test_binary_declaration_is_by_place_not_by_parameter_name():
    f = cr.primitive(lambda a, x: a * np.sin(x) + 0)
    # the partials call their parameters (a, x, out): saves names places x, y, z
    cr.scalar_rule(f, lambda a, x, out: np.sin(x), lambda a, x, out: a * np.cos(x),
                   saves="xy")
    a, x = np.array([1.5, -0.5]), np.array([0.2, 0.9])
    ga, gx = cr.grad(lambda a, x: np.sum(f(a, x)), argnums=(0, 1))(a, x)
    np.testing.assert_allclose(ga, np.sin(x))
    np.testing.assert_allclose(gx, a * np.cos(x))
    assert check_saves(f, a, x)


def test_bad_declarations_fail_at_registration():
    f = cr.primitive(lambda x: x + 0)
    with pytest.raises(TypeError, match=r"saves='w'.*x, y"):
        cr.scalar_rule(f, lambda x, y: 1 + 0 * x, saves="w")
    with pytest.raises(TypeError, match=r"must take 2 positional arguments \(x, y\)"):
        cr.scalar_rule(f, lambda x: 1 + 0 * x)
    g = cr.primitive(lambda x, y, w: x + y + w)
    with pytest.raises(TypeError, match="three or more arguments keeps every value"):
        cr.scalar_rule(g, 1, 1, 1, saves="x")


_ROOT = pathlib.Path(cr.__file__).parent
_SOURCES = sorted(list(_ROOT.rglob("*.py")) + list((_ROOT.parent / "rules").rglob("*.py")))


def test_no_module_reads_bytecode_or_source_text():
    """Behaviour must not depend on the interpreter's bytecode or on source
    text: no module imports ``dis`` or reads code objects or source. (Frames
    are read only to word messages and to name the user's line; those
    places fall back when frames are unavailable.)"""
    reads = r"^\s*(import dis|from dis )|\.co_code|co_varnames|getsource|co_consts|co_names\b"
    pattern = re.compile(reads + r"|__code__", re.M)
    # the ODE plans key a function by its code object's identity and copy a
    # function with other cells: they may name a code object, never read one
    identity_only = re.compile(reads + r"|__code__\s*\.", re.M)
    offenders = [str(p) for p in _SOURCES
                 if (identity_only if p.name == "scipy_integrate_plans.py" else pattern)
                 .search(p.read_text())]
    assert offenders == []
