"""The float64-scalar shortcuts of the makers, the pullbacks and the
sweep (NumPy's scalar arithmetic in place of a ufunc call, dtypes and
shapes taken from the types, add_at's path for ``x[i]``), against the
general paths they skip, bit for bit: every shortcut is switched off by
patching the names it tests, and the results must not move."""

import itertools
import operator
import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.derived as derived
import chainrules.derived_common as common
import chainrules.derived_linear as derived_linear
import chainrules.graph as graph
import chainrules.sweep_common as sweep_common
import chainrules.sweep_reverse as sweep_reverse
import chainrules.tracing as tracing
from chainrules.array_methods import ArrayMethods
from chainrules.rules import arithmetic
from chainrules.rules import complex as complex_rules
from chainrules.rules import nondiff

VALUES = [0.0, -0.0, 1.0, -1.5, 0.1, 3.0, 1e308, -1e308, 5e-324, np.inf, -np.inf, np.nan,
          2.0 ** 53, 7, -3, 2 ** 53, 2 ** 60]


def _bits(v):
    return type(v), np.asarray(v).dtype, np.asarray(v).tobytes()


@pytest.mark.parametrize("ufunc", sorted(common.SCALAR_OPERATORS, key=lambda u: u.__name__))
def test_scalar_operators_give_the_ufuncs_results(ufunc):
    op = common.SCALAR_OPERATORS[ufunc]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in itertools.product(VALUES, VALUES):
            for x, y in ((np.float64(a), b), (a, np.float64(b)),
                         (np.float64(a), np.float64(b))):
                if not common.f64_operands(x, type(x), y, type(y)):
                    assert type(x) is int or type(y) is int  # (2 ** 60: too large)
                    continue
                assert _bits(op(x, y)) == _bits(ufunc(x, y)), (ufunc, x, y)


def test_unary_scalar_operators_give_the_ufuncs_results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ufunc, op in common.UNARY_SCALAR_OPERATORS.items():
            for v in VALUES:
                x = np.float64(v)
                assert _bits(op(x)) == _bits(ufunc(x)), (ufunc, x)
        for v in VALUES:
            x = np.float64(v)
            assert _bits(abs(x)) == _bits(np.absolute(x))
            assert _bits(x * x) == _bits(np.square(x))
            assert _bits(complex_rules._sign(x)) == _bits(np.sign(x))
        for bits in (0x7FF0000000000001, 0xFFF8000000000123):  # NaNs keep their payloads
            x = np.array([bits], np.uint64).view(np.float64)[0]
            assert _bits(complex_rules._sign(x)) == _bits(np.sign(x))


def test_scalar_comparisons_give_the_ufuncs_results():
    for ufunc, (compare, swapped) in nondiff._COMPARISONS.items():
        for a, b in itertools.product(VALUES, VALUES):
            for x, y in ((np.float64(a), b), (a, np.float64(b))):
                if common.f64_operands(x, type(x), y, type(y)):
                    got = compare(x, y) if type(x) is np.float64 else swapped(y, x)
                    assert _bits(got) == _bits(ufunc(x, y)), (ufunc, x, y)


def test_product_of_a_0d_array_is_the_ufuncs():
    for a, b in itertools.product(VALUES, VALUES):
        g = np.asarray(np.float64(a))
        if type(b) is int and abs(b) > 2 ** 53:
            continue
        with np.errstate(all="ignore"):
            assert _bits(common.product(g, b)) == _bits(g * b)
            assert _bits(common.product(g, np.float64(b))) == _bits(g * np.float64(b))


class _Never:
    """A type that no value has: the shortcuts testing against it never run."""


def _general(monkeypatch):
    """Switch the float64-scalar shortcuts off."""
    never = lambda *args: False  # noqa: E731
    monkeypatch.setattr(derived, "f64_operands", never)
    monkeypatch.setattr(derived_linear, "f64_operands", never)
    plain = lambda g, d: g * d  # noqa: E731
    for mod in (common, derived, arithmetic):
        monkeypatch.setattr(mod, "product", plain)
    for mod in (derived, derived_linear, graph, sweep_reverse, arithmetic, complex_rules):
        monkeypatch.setattr(mod, "_f64", _Never)
    monkeypatch.setattr(sweep_common, "_F64", object())
    # abs(x) through NumPy's ufunc call, as np.absolute(x)
    monkeypatch.setattr(tracing.Traced, "__abs__", ArrayMethods.__abs__)


FUNCTIONS = [
    lambda x: 0.26 * (x[0] ** 2 + x[1] ** 2) - 0.48 * x[0] * x[1],
    lambda x: -x[0] * x[1] * (72 - 2 * x[0] - 2 * x[1]),
    lambda x: -(-x[0] ** 2.0 + 5 * x[0] - 6) / (x[1] ** 2 + 1),
    lambda x: abs(x[0] + 50.0 * (1.0 - 2.0 * x[1])) + np.negative(x[1]) / 3.0,
    lambda x: np.square(x[0]) - x[1] * x[1] + (x[0] - 2 ** 60) + 1e308 * x[1],
    lambda x: max(abs(x)) + np.maximum(x[0], 0.0) + (x[0] >= x[1]) * x[1],
    lambda x: np.sum(x * x[0]) + x[1] / x[0],
    # float64 cotangents summed over fan-out, through binary, unary and
    # constant-partial rules, and abs of a float64 scalar by both calls
    lambda x: (lambda a: a * a + a * 3.0 + np.sin(a) / a - abs(a) * np.abs(-a))(x[0] * x[1]),
    lambda x: np.arctan2(x[0], x[1]) * np.cos(x[0]) + abs(np.tanh(x[1])) ** 3 - x[0] ** 0.5,
    lambda x: np.hypot(x[1], 2.0) * x[0] + abs(x[0]) * np.float64(2.5) + 2.5 * abs(x[1]),
]
POINTS = [np.array([1.5, -0.7]), np.array([0.0, -0.0]), np.array([-2.0, 3.0]),
          np.array([1e-320, 1e300])]


def _results():
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f, x in itertools.product(FUNCTIONS, POINTS):
            v, g = cr.value_and_grad(f)(x)
            out.append((_bits(v), _bits(g), _bits(cr.hvp(f, x, np.ones_like(x)))))
            s = np.float64(x[0])
            out.append(_bits(cr.grad(lambda t: f(np.stack([t, t * 0.5])))(s)))
    return out


def test_shortcuts_agree_with_the_general_paths(monkeypatch):
    fast = _results()
    _general(monkeypatch)
    assert _results() == fast
