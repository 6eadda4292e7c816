"""The checkers pass correct rules and catch broken ones.

Every broken rule is registered on a fresh ``chainrules.primitive`` so it
cannot disturb the built-in library; each test asserts the specific failure
the checker must report. A checker that passes a wrong rule is a bug.
"""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import (CheckFailure, FiniteDifferenceUnreliable, check_frule,
                                check_grads, check_hvp, check_jvp, check_nondiff,
                                check_rrule, check_rule)


def _x(rng, *shape, lo=-2.0, hi=2.0, dtype=np.float64):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# -- correct rules pass ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_builtin_ops_pass_with_tight_float64_errors(dtype, rng):
    x = _x(rng, 3, 2, dtype=dtype)
    rep = check_rule(np.tanh, x, hvp_fast=True)
    # tanh's rule takes batches of directions itself
    assert rep.modes == ["rrule", "frule", "hvp", "batched"]
    assert rep.checks >= 10
    assert rep.worst < (1e-11 if dtype == np.float64 else 1e-5)


def test_binary_broadcasting_and_keyword_arguments(rng):
    assert check_rule(np.multiply, _x(rng, 2, 3), _x(rng, 3), hvp_fast=True)
    assert check_rule(np.sum, _x(rng, 2, 3), axis=1, keepdims=True, hvp_fast=True)
    assert check_rrule(np.concatenate, [_x(rng, 2), _x(rng, 3)])  # a list argument


def test_complex_holomorphic_builtin(rng):
    z = _x(rng, 3) + 1j * _x(rng, 3)
    assert check_rule(np.exp, z, hvp_fast=True)


def test_call_and_wrt(rng):
    x = _x(rng, 3, 3)
    assert check_rrule(np.transpose, x, call=lambda a: a.T)
    # the float second argument is held constant with wrt
    assert check_rrule(np.multiply, x, 2.5, wrt=0)
    with pytest.raises(ValueError, match="hold no float or complex"):
        check_rrule(np.multiply, x, 2, wrt=(0, 1))
    with pytest.raises(ValueError, match="out of range"):
        check_rrule(np.multiply, x, 2.5, wrt=(0, 3))


@cr.primitive
def good_softplus(x):
    return np.logaddexp(0.0, x)


@cr.rrule(good_softplus)
def _(x):
    def good_softplus_pullback(g):
        return (g / (1 + np.exp(-x)),)
    return good_softplus(x), good_softplus_pullback


def test_correct_closure_rule_passes_all_modes(rng):
    rep = check_rule(good_softplus, _x(rng, 4))
    # a closure rule carries tangents through a jvp of its own pullback: the
    # fast HVP path, checked as such; batches of directions go through the
    # engine's per-direction loop, checked as well
    assert rep.modes == ["rrule", "frule", "hvp", "batched(loop)"]
    assert rep.worst < 1e-10
    assert check_grads(good_softplus, _x(rng, 3), order=2)
    assert check_rule(good_softplus, _x(rng, 4), modes=("hvp",), hvp_fast=True)


@cr.primitive
def good_cube(x):
    return x * x * x


class GoodCube(cr.ReverseRule):
    __slots__ = ("x_id", "x")

    def __init__(self, x_id, x):
        self.x_id, self.x = x_id, x

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, g * 3 * self.x ** 2)]

    def pushforward(self, tangents):
        return tangents[0] * 3 * self.x ** 2

    def pullback_with_tangents(self, g, gd, tangents):
        return [(self.x_id, g * 3 * self.x ** 2,
                 gd * 3 * self.x ** 2 + g * 6 * self.x * tangents[0])]


@cr.register(good_cube)
def _(ids, x):
    return good_cube(x), GoodCube(ids[0], x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_correct_class_rule_passes_with_fast_hvp(dtype, rng):
    rep = check_rule(good_cube, _x(rng, 2, 2, dtype=dtype), hvp_fast=True)
    assert rep.modes == ["rrule", "frule", "hvp", "batched(loop)"]


@cr.primitive
def scale_by(x, k):
    return x * k


@cr.rrule(scale_by)
def _(x, k):
    def scale_by_pullback(g):
        return g * k, cr.NoTangent()
    return scale_by(x, k), scale_by_pullback


def test_integer_argument_gets_notangent(rng):
    assert check_rrule(scale_by, _x(rng, 3), 3)


@cr.primitive
def two_outputs(x):
    return np.sin(x), np.cos(x)


@cr.rrule(two_outputs)
def _(x):
    def two_outputs_pullback(gs):
        gs_sin, gs_cos = gs
        out = 0 * x
        if not isinstance(gs_sin, cr.ZeroTangent):
            out = out + gs_sin * np.cos(x)
        if not isinstance(gs_cos, cr.ZeroTangent):
            out = out - gs_cos * np.sin(x)
        return (out,)
    return two_outputs(x), two_outputs_pullback


def test_multi_output_closure_rule(rng):
    assert check_rrule(two_outputs, _x(rng, 3), adjoint=False)


def test_check_grads_whole_functions_to_third_order(rng):
    def f(x, y):
        return {"a": np.sin(x) * y, "b": np.sum(np.exp(x) ** 2)}

    rep = check_grads(f, _x(rng, 3), _x(rng, 3), order=3)
    assert "vjp(order 3)" in rep.modes and "jvp(order 3)" in rep.modes
    assert rep.worst < 1e-9


def test_nondiff_check(rng):
    assert check_nondiff(np.argmax, _x(rng, 4))
    with pytest.raises(CheckFailure, match="returned a traced value"):
        check_nondiff(np.sin, _x(rng, 4))


# -- broken rules are caught ------------------------------------------------------------
@cr.primitive
def bad_sign(x):
    return np.sin(x)


@cr.rrule(bad_sign)
def _(x):
    def bad_sign_pullback(g):
        return (-g * np.cos(x),)          # wrong sign
    return bad_sign(x), bad_sign_pullback


def test_wrong_sign_is_caught(rng):
    with pytest.raises(CheckFailure, match="pullback vs finite differences") as e:
        check_rrule(bad_sign, _x(rng, 3))
    msg = str(e.value)
    # the message names the op, the argument, the direction and both numbers
    assert "bad_sign(float64[3])" in msg and "direction #0" in msg
    assert "rule:" in msg and "finite differences:" in msg and "relative error" in msg
    with pytest.raises(CheckFailure, match="pushforward vs finite differences"):
        check_frule(bad_sign, _x(rng, 3))   # the derived pushforward is wrong too


@cr.primitive
def bad_broadcast(x, y):
    return x * y


@cr.rrule(bad_broadcast)
def _(x, y):
    def bad_broadcast_pullback(g):
        return g * y, g * x               # no reduction to the shapes of x and y
    return bad_broadcast(x, y), bad_broadcast_pullback


def test_missing_broadcast_reduction_is_caught(rng):
    with pytest.raises(CheckFailure, match=r"shape \(2, 3\) for an input of shape "
                                           r"\(3,\).*unbroadcast"):
        check_rrule(bad_broadcast, _x(rng, 2, 3), _x(rng, 3))


@cr.primitive
def bad_hvp(x):
    return x * x * x


class BadHvpRule(GoodCube):
    __slots__ = ()

    def pullback_with_tangents(self, g, gd, tangents):
        return [(self.x_id, g * 3 * self.x ** 2, gd * 3 * self.x ** 2)]  # 2nd-order term missing


@cr.register(bad_hvp)
def _(ids, x):
    return bad_hvp(x), BadHvpRule(ids[0], x)


def test_wrong_hvp_term_is_caught(rng):
    x = _x(rng, 3)
    assert check_rrule(bad_hvp, x)        # first order is right
    with pytest.raises(CheckFailure, match="HVP"):
        check_hvp(bad_hvp, x)


@cr.primitive
def mutating(x):
    return np.exp(x)


@cr.rrule(mutating)
def _(x):
    y = np.exp(x)

    def mutating_pullback(g):
        np.multiply(x, 1.0001, out=x)     # writes into the input
        return (g * y,)
    return y, mutating_pullback


def test_mutating_pullback_is_caught(rng):
    with pytest.raises(CheckFailure, match="mutated an input"):
        check_rrule(mutating, _x(rng, 3))


@cr.primitive
def mutating_g(x):
    return 2 * x


@cr.rrule(mutating_g)
def _(x):
    def mutating_g_pullback(g):
        g *= 2                            # writes into the cotangent it was given
        return (g,)
    return mutating_g(x), mutating_g_pullback


def test_pullback_modifying_its_cotangent_is_caught(rng):
    with pytest.raises(CheckFailure, match="modified the cotangent"):
        check_rrule(mutating_g, _x(rng, 3))


@cr.primitive
def bad_dtype(x):
    return np.sin(x)


@cr.rrule(bad_dtype)
def _(x):
    def bad_dtype_pullback(g):
        return ((g * np.cos(x)).astype(np.float64),)   # float32 must stay float32
    return bad_dtype(x), bad_dtype_pullback


def test_wrong_dtype_is_caught_before_projection(rng):
    assert check_rrule(bad_dtype, _x(rng, 3))          # float64: fine
    with pytest.raises(CheckFailure, match="dtype float64 for an input of dtype float32"):
        check_rrule(bad_dtype, _x(rng, 3, dtype=np.float32))
    # the engine itself projects, so the gradient alone would not show it
    g = cr.grad(lambda x: np.sum(bad_dtype(x)))(_x(rng, 3, dtype=np.float32))
    assert g.dtype == np.float32


@cr.primitive
def abs2(z):
    return np.real(z * np.conj(z))


@cr.rrule(abs2)
def _(z):
    def abs2_pullback(g):
        return (2 * g * z,)               # forgot the conjugate: 2 g conj(z)
    return abs2(z), abs2_pullback


@cr.primitive
def square_c(z):
    return z * z


@cr.rrule(square_c)
def _(z):
    def square_c_pullback(g):
        return (np.conj(2 * z) * g,)      # PyTorch's convention, not ours
    return square_c(z), square_c_pullback


def test_forgotten_or_extra_conjugate_is_caught(rng):
    z = _x(rng, 3) + 1j * _x(rng, 3)
    with pytest.raises(CheckFailure, match="pullback vs finite differences"):
        check_rrule(abs2, z)
    with pytest.raises(CheckFailure, match="pullback vs finite differences"):
        check_rrule(square_c, z)
    assert check_rrule(square_c, _x(rng, 3))           # real inputs cannot tell


@cr.primitive
def complex_cot(x):
    return 3 * x


@cr.rrule(complex_cot)
def _(x):
    def complex_cot_pullback(g):
        return (g * (3 + 0j),)            # complex cotangent for a real input
    return complex_cot(x), complex_cot_pullback


def test_complex_cotangent_for_real_input_is_caught(rng):
    with pytest.raises(CheckFailure, match="complex128 for an input of dtype float64"):
        check_rrule(complex_cot, _x(rng, 3))


@cr.primitive
def bad_pushforward(x):
    return np.exp(x)


class BadPushforward(GoodCube):
    __slots__ = ()

    def pullback(self, g):
        return [(self.x_id, g * np.exp(self.x))]

    def pushforward(self, tangents):
        return tangents[0] * np.exp(self.x) * 1.001     # slightly wrong


@cr.register(bad_pushforward)
def _(ids, x):
    return bad_pushforward(x), BadPushforward(ids[0], x)


def test_wrong_pushforward_breaks_the_adjoint_identity(rng):
    x = _x(rng, 3)
    with pytest.raises(CheckFailure, match="adjoint identity"):
        check_rrule(bad_pushforward, x)
    with pytest.raises(CheckFailure, match="pushforward vs finite differences"):
        check_jvp(bad_pushforward, x)


# A float32 dot product with a direction orthogonal to the gradient cancels:
# J u is rounding noise, small against |J| |u|, the scale its rounding error is
# relative to. The pushforward check measures against that scale, like the
# reverse check, so a correct rule passes and an error above it is caught.
_C = np.random.default_rng(3).standard_normal(64).astype(np.float32)


@cr.primitive
def dot_c(x, bias):
    return np.dot(x, _C)


class DotC(cr.ReverseRule):
    __slots__ = ("x_id", "bias")

    def __init__(self, x_id, bias):
        self.x_id, self.bias = x_id, bias

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, g * _C)]

    def pushforward(self, tangents):
        u = tangents[0]
        return np.dot(u, _C) + np.float32(self.bias * np.linalg.norm(u) * np.linalg.norm(_C))


@cr.register(dot_c)
def _(ids, x, bias):
    return dot_c(x, bias), DotC(ids[0], bias)


@pytest.mark.parametrize("reverse_first", [True, False])
def test_cancelling_float32_pushforward_is_judged_against_the_map_scale(reverse_first):
    from chainrules.testing.rule_check import RuleCheck

    rng = np.random.default_rng(4)
    x = rng.standard_normal(64).astype(np.float32)
    r = rng.standard_normal(64)
    u = (r - _C * (_C @ r) / (_C @ _C)).astype(np.float32)   # orthogonal to the gradient
    assert abs(float(u.astype(float) @ _C)) < 1e-6 * np.linalg.norm(u) * np.linalg.norm(_C)

    def checker(bias):
        c = RuleCheck(dot_c, (x, bias), {}, wrt=0, directions=3)
        c.us[0] = [u]
        if reverse_first:
            c.rrule(adjoint=False)   # the pullback alone; the pushforward is judged below
        return c

    checker(0.0).frule()                              # correct: passes
    with pytest.raises(CheckFailure, match="pushforward vs finite differences"):
        checker(1e-3).frule()                         # 1e-3 of |J| |u| off: caught


def test_a_hessian_that_vanishes_is_judged_against_the_second_order_scale():
    # the 1.5-norm of one element is |x|: the exact Hessian is zero and the
    # float32 HVP is rounding noise, asymmetric and far from the finite
    # differences in relative terms, small against |J^T w| / max(|x|, 1)
    x = np.array([0.16760114], np.float32)
    rep = check_hvp(np.linalg.norm, x, ord=1.5, axis=-1)
    assert rep.modes == ["hvp"]
    check_hvp(np.linalg.norm, np.linspace(-2.0, 2.0, 8).reshape(8, 1), ord=3.0, axis=1)


@cr.primitive
def bad_primal(x):
    return np.sin(x)


@cr.rrule(bad_primal)
def _(x):
    def bad_primal_pullback(g):
        return (g * np.cos(x),)
    return np.sin(x) + 1e-6, bad_primal_pullback


def test_wrong_primal_is_caught(rng):
    with pytest.raises(CheckFailure, match="primal output 0 vs the plain call"):
        check_rrule(bad_primal, _x(rng, 3))


@cr.primitive
def stateful(x):
    return 2 * x


@cr.rrule(stateful)
def _(x):
    calls = []

    def stateful_pullback(g):
        calls.append(1)
        return (g * 2 * len(calls),)      # different on the second call
    return stateful(x), stateful_pullback


def test_pullback_that_differs_on_a_second_call_is_caught(rng):
    with pytest.raises(CheckFailure):
        check_rrule(stateful, _x(rng, 3), directions=1)


@cr.primitive
def bad_int(x, n):
    return x * n


@cr.rrule(bad_int)
def _(x, n):
    def bad_int_pullback(g):
        return g * n, g * x               # a cotangent for the integer n
    return bad_int(x, n), bad_int_pullback


def test_integer_argument_without_notangent_is_caught(rng):
    with pytest.raises(CheckFailure, match="integer/bool value: return NoTangent"):
        check_rrule(bad_int, _x(rng, 3), 2)


@cr.primitive
def bad_multi(x):
    return np.sin(x), np.cos(x)


@cr.rrule(bad_multi)
def _(x):
    def bad_multi_pullback(gs):
        # np.multiply does not accept ZeroTangent() (operators would)
        return (np.multiply(gs[0], np.cos(x)) - np.multiply(gs[1], np.sin(x)),)
    return bad_multi(x), bad_multi_pullback


def test_multi_output_rule_without_structural_zeros_is_caught(rng):
    with pytest.raises(CheckFailure, match="ZeroTangent"):
        check_rrule(bad_multi, _x(rng, 3), adjoint=False)


@cr.primitive
def stopped_second_order(x):
    return np.sin(x)


@cr.rrule(stopped_second_order)
def _(x):
    def stopped_pullback(g):
        return (g * np.cos(cr.stop_gradient(x)),)   # right value, wrong derivative
    return stopped_second_order(x), stopped_pullback


def test_check_grads_catches_wrong_second_order(rng):
    x = _x(rng, 3)
    assert check_grads(stopped_second_order, x, order=1)
    with pytest.raises(CheckFailure, match=r"vjp of|jvp of"):
        check_grads(stopped_second_order, x, order=2)
    with pytest.raises(CheckFailure, match="HVP"):
        check_hvp(stopped_second_order, x)


def test_inputs_at_a_jump_are_refused_not_passed():
    with pytest.raises(FiniteDifferenceUnreliable, match="kink, jump or singularity"):
        check_rrule(np.floor, np.array([0.9999999, 1.5]))


def test_tolerance_override_and_report(rng):
    x = _x(rng, 3)
    # a rule that is wrong by 1e-6 relative passes only with a loose rtol
    with pytest.raises(CheckFailure):
        check_rrule(bad_pushforward, x)
    rep = check_rrule(bad_sign, x, rtol=10.0, adjoint=False)
    assert rep.worst > 0.5 and rep.checks >= 3
    assert "rrule" in repr(rep)


def test_a_composition_may_round_its_primal_in_another_order():
    # np.interp through its decomposition at a point where fp0 + slope (x - xp0)
    # cancels to 9e-5: it differs from NumPy's C code by 1.1e-16, an ulp of
    # the inputs, which the primal check allows (and nothing larger)
    xp = np.array([1.4399637714234965, 2.4671214826292114])
    fp = np.array([-0.5352541607213923, 0.6037611574366157])
    x = np.array([[1.9227377177801845]])
    assert check_rule(np.interp, x, xp, fp, wrt=(0, 2))
