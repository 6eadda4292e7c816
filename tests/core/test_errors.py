"""Every documented error: raised, typed, and naming the operation."""

import numpy as np
import pytest

import chainrules as cr


def test_error_hierarchy():
    for e in (cr.MissingRuleError, cr.HvpNotSupported, cr.NonScalarOutputError,
              cr.TangentShapeError, cr.NumericalInstabilityError, cr.UntraceableError,
              cr.EscapedTracerError, cr.NonDifferentiableInputError,
              cr.ComplexOutputError):
        assert issubclass(e, cr.AutodiffError)


def test_non_scalar_output():
    with pytest.raises(cr.NonScalarOutputError, match=r"shape \(2,\)"):
        cr.grad(lambda x: np.sin(x))(np.ones(2))


def test_complex_output():
    with pytest.raises(cr.ComplexOutputError, match="complex"):
        cr.grad(lambda x: np.sum(x * 1j))(np.ones(2))


def test_integer_input_is_refused():
    with pytest.raises(cr.NonDifferentiableInputError, match="int"):
        cr.grad(lambda x: x * 2.0)(3)
    with pytest.raises(cr.NonDifferentiableInputError, match="int64"):
        cr.grad(lambda x: np.sum(x * 2.0))(np.arange(3))


@pytest.mark.parametrize("use", [
    lambda x: np.asarray(x),
    lambda x: np.array(x),
    lambda x: float(x[0]),
    lambda x: x[0].item(),
    lambda x: x.tolist(),
])
def test_conversions_raise(use):
    with pytest.raises(cr.UntraceableError, match="derivative"):
        cr.grad(lambda x: np.sum(use(x)))(np.ones(2))


def test_out_arguments_raise():
    def out_arg(x):
        buf = np.zeros(2)
        np.sin(x, out=buf)
        return np.sum(buf)

    with pytest.raises(cr.UntraceableError, match="out="):
        cr.grad(out_arg)(np.ones(2))

    def plain_iadd(x):
        buf = np.zeros(2)
        buf += x
        return np.sum(buf)

    with pytest.raises(cr.UntraceableError):
        cr.grad(plain_iadd)(np.ones(2))

    def add_at(x):  # a plain buffer cannot hold the derivative
        buf = np.zeros(2)
        np.add.at(buf, [0], x[0])
        return np.sum(buf)

    with pytest.raises(cr.UntraceableError, match="add.at.*zeros_like"):
        cr.grad(add_at)(np.ones(2))


def test_augmented_assignment_rebinds():
    def f(x):
        total = 0.0
        for i in range(3):
            total += x[i] * i
        return total

    np.testing.assert_array_equal(cr.grad(f)(np.ones(3)), [0.0, 1.0, 2.0])


def test_user_arrays_untouched_on_error():
    x = np.array([1.0, 2.0])
    keep = x.copy()
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda x: float(np.sum(x)))(x)
    np.testing.assert_array_equal(x, keep)


def test_escaped_tracer():
    leaked = []

    def f(x):
        leaked.append(x * 2.0)
        return np.sum(x)

    cr.grad(f)(np.ones(2))
    with pytest.raises(cr.EscapedTracerError, match="numpy.sin"):
        np.sin(leaked[0])
    assert leaked[0].shape == (2,)  # harmless queries still work


def test_where_keyword_is_refused():
    with pytest.raises(cr.MissingRuleError, match="where"):
        cr.grad(lambda x: np.sum(np.sin(x, where=x > 0)))(np.ones(2))


def test_control_flow_on_values():
    def f(x):
        if x > 0:
            return x * x
        return -x

    assert cr.grad(f)(2.0) == 4.0
    assert cr.grad(f)(-2.0) == -1.0


def test_function_out_and_where_are_refused():
    with pytest.raises(cr.UntraceableError, match="out="):
        cr.grad(lambda x: np.sum(x, out=np.zeros(())))(np.ones(2))
    with pytest.raises(cr.MissingRuleError, match="where"):
        cr.grad(lambda x: np.sum(x, where=np.array([True, False])))(np.ones(2))
