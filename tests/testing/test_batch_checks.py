"""The checkers compare a batch of one direction, and a batch at 0-d inputs
where the op takes them, with the sweeps of one direction at a time: a
batched rule that reads the batch axis of a 0-d value as the value's own is
caught, and so is a rule with an output without a derivative.

The rules here are registered on fresh ``chainrules.primitive`` functions,
so they cannot disturb the built-in library."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.graph import Tape
from chainrules.testing import CheckFailure, check_rrule, check_rule


# -- x * sum(x), with batched methods ------------------------------------------------
@cr.primitive
def times_sum_bad(x):
    return x * np.sum(x)


@cr.primitive
def times_sum_good(x):
    return x * np.sum(x)


def _value_axes(v, batched):
    """The axes of one direction's value (all but the batch axis)."""
    return tuple(range(1, np.ndim(v))) if batched else None


class TimesSum(cr.ReverseRule):
    """y = x s, s = sum(x): J t = t s + x sum(t); J^T g = g s + sum(g x)."""

    batched = True

    def __init__(self, x_id, x, sum_axes):
        self.x_id, self.x, self.s = x_id, x, np.sum(x)
        # sum_axes(v, batched): the axes one direction's sum runs over
        self.sum_axes = sum_axes

    def inputs(self):
        return (self.x_id,)

    def _sum(self, v, batched):
        axes = self.sum_axes(v, batched)
        return np.sum(v) if axes is None else np.sum(v, axis=axes, keepdims=True)

    def _pf(self, t, batched):
        return t * self.s + self.x * self._sum(t, batched)

    def _pb(self, g, batched):
        if isinstance(g, cr.ZeroTangent):
            return 0 * self.x
        return g * self.s + self._sum(g * self.x, batched)

    def _pbt(self, g, gd, t, batched):
        # d/dt of J(x)^T g = g sum(t) + sum(g t)
        out = self._pb(gd, batched)
        if isinstance(g, cr.ZeroTangent) or isinstance(t, cr.ZeroTangent):
            return out
        return out + g * self._sum(t, batched) + self._sum(g * t, batched)

    def pushforward(self, tangents):
        return self._pf(tangents[0], False)

    def pullback(self, g):
        return [(self.x_id, self._pb(g, False))]

    def pullback_with_tangents(self, g, gd, tangents, **_):
        return [(self.x_id, self._pb(g, False), self._pbt(g, gd, tangents[0], False))]

    def pushforward_batched(self, tangents):
        return self._pf(tangents[0], True)

    def pullback_batched(self, G):
        return [(self.x_id, self._pb(G, True))]

    def pullback_with_tangents_batched(self, g, GD, tangents, **_):
        return [(self.x_id, self._pb(g, False), self._pbt(g, GD, tangents[0], True))]


@cr.register(times_sum_bad)
def _(ids, x):
    # a rule written for vectors: one direction's sum over the last axis,
    # which for a 0-d x is the batch axis, mixing the directions
    return times_sum_bad(x), TimesSum(ids[0], x,
                                      lambda v, batched: (-1,) if batched else None)


@cr.register(times_sum_good)
def _(ids, x):
    return times_sum_good(x), TimesSum(ids[0], x, _value_axes)


def test_a_batched_rule_wrong_at_0d_is_caught(rng):
    x = rng.uniform(-1, 1, 3)
    # a vector point alone cannot see the bug: the batched sweep is right there
    good = check_rule(times_sum_good, x, hvp_fast=True)
    assert good.modes == ["rrule", "frule", "hvp", "batched"]
    for check in (lambda: check_rule(times_sum_bad, x, hvp_fast=True),
                  lambda: check_rrule(times_sum_bad, x)):
        with pytest.raises(CheckFailure, match=r"batched pullback vs one direction"):
            check()


def test_the_0d_point_is_checked_and_counted(rng):
    x = rng.uniform(-1, 1, 3)
    n_vector = check_rule(times_sum_good, x, hvp_fast=True).checks
    n_scalar = check_rule(times_sum_good, np.array(0.7), hvp_fast=True).checks
    # a 0-d input is checked once; a vector input at its point and at 0-d
    assert n_vector > n_scalar
    rep = check_rule(times_sum_good, x, hvp_fast=True)
    assert rep.worst < 1e-12


def test_an_op_without_0d_inputs_is_checked_at_its_own_point(rng):
    # np.linalg.inv refuses a 0-d array: only the matrix point is checked
    a = rng.uniform(-0.3, 0.3, (2, 2)) + 2 * np.eye(2)
    rep = check_rule(np.linalg.inv, a, hvp_fast=True)
    assert rep.modes[-1] in ("batched", "batched(loop)") and rep.worst < 1e-10


def test_every_sweep_runs_a_batch_of_one(monkeypatch, rng):
    seen = {"forward": set(), "backward": set(), "backward_with_tangents": set()}
    for name in seen:
        orig = getattr(Tape, name)

        def spy(self, *args, _orig=orig, _name=name, **kw):
            seen[_name].add(kw.get("batch"))
            return _orig(self, *args, **kw)

        monkeypatch.setattr(Tape, name, spy)
    check_rule(np.sin, rng.uniform(-1, 1, 4), hvp_fast=True, directions=2)
    for name, batches in seen.items():
        assert {1, 2} <= batches, (name, batches)


# -- a rule with an output without a derivative -------------------------------------
def _first(g):
    """The cotangent of the first output (a structural zero is every
    output's)."""
    return g if isinstance(g, cr.ZeroTangent) else g[0]


@cr.primitive
def square_and_sign(x):
    return x * x, np.signbit(x)


class SquareAndSign(cr.ReverseRule):
    """Two outputs: x^2 and an integer-valued flag (recorded without a
    node); the pushforward gives None for the flag, as the unbatched sweeps
    allow."""

    def __init__(self, x_id, x):
        self.x_id, self.x = x_id, x

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        g0 = _first(g)
        if isinstance(g0, cr.ZeroTangent):
            return []
        return [(self.x_id, 2 * self.x * g0)]

    def pushforward(self, tangents):
        return 2 * self.x * tangents[0], None

    def pullback_with_tangents(self, g, gd, tangents, **_):
        g0, gd0, t = _first(g), _first(gd), tangents[0]
        z = cr.ZeroTangent
        c = 0 * self.x if isinstance(g0, z) else 2 * self.x * g0
        cd = 0 * self.x if isinstance(gd0, z) else 2 * self.x * gd0
        if not isinstance(g0, z) and not isinstance(t, z):
            cd = cd + 2 * g0 * t
        return [(self.x_id, c, cd)]


@cr.register(square_and_sign)
def _(ids, x):
    y, s = square_and_sign(x)
    return cr.MultiOutput((y, s)), SquareAndSign(ids[0], x)


def _square_of(x):
    return square_and_sign(x)[0]


@pytest.mark.parametrize("x", [np.array([0.4, -1.3]), np.array([0.6]), np.array(-0.8)],
                         ids=["vector", "size 1", "0-d"])
def test_an_output_without_derivative_in_a_batch_of_one(x):
    rep = check_rule(square_and_sign, x, call=_square_of, hvp_fast=True)
    assert rep.worst < 1e-12
    h = cr.hessian(lambda v: np.sum(_square_of(v) * v))(x)
    n = x.size
    np.testing.assert_allclose(np.reshape(h, (n, n)), np.diag(6 * np.ravel(x)), atol=1e-12)


# -- small points: a crash there fails the check, a refusal skips it -----------------
@cr.primitive
def total_first_axis(x):
    return np.sum(x, axis=0)


@cr.rrule(total_first_axis)
def _(x):
    # written for arrays: at 0-d (NumPy sums a 0-d x over axis 0 to itself)
    # expand_dims makes g 1-d, which broadcast_to cannot fit into x's ()
    def total_first_axis_pullback(g):
        return (np.broadcast_to(np.expand_dims(g, 0), np.shape(x)),)

    return total_first_axis(x), total_first_axis_pullback


@cr.primitive
def total_rows(x):
    return np.sum(x, axis=1)


@cr.rrule(total_rows)
def _(x):
    # the same pullback; NumPy refuses axis 1 of a 0-d or 1-d x
    def total_rows_pullback(g):
        return (np.broadcast_to(np.expand_dims(g, 1), np.shape(x)),)

    return total_rows(x), total_rows_pullback


def test_an_untyped_crash_at_0d_fails_the_check(rng):
    x = rng.uniform(-1, 1, (3, 2))
    for check in (check_rule, check_rrule):
        with pytest.raises(CheckFailure) as e:
            check(total_first_axis, x)
        msg = str(e.value)
        assert "takes 0-d inputs but differentiating there raised ValueError" in msg
        assert "total_first_axis(float64[])" in msg and "at inputs: " in msg
    # the rule itself is right at the sampled point
    np.testing.assert_allclose(cr.jacobian(total_first_axis)(x),
                               np.eye(2)[:, None, :].repeat(3, axis=1))


def test_an_op_whose_plain_call_refuses_0d_inputs_is_skipped_there(rng):
    x = rng.uniform(-1, 1, (3, 2))
    # the same pullback, never reached at 0-d nor at size 1 ((1,) is 1-d)
    with pytest.raises(ValueError):
        total_rows(np.array(0.5))
    rep = check_rule(total_rows, x)
    assert rep.worst < 1e-12 and rep.modes[-1] == "batched(loop)"
    # at 1 x 1 (the size-1 point of a matrix) NumPy takes it, and so does the rule
    assert check_rule(total_rows, x[:1, :1]).worst < 1e-12


@cr.primitive
def halve(x):
    return x / 2


class Halve(cr.ReverseRule):
    linear = True

    def __init__(self, x_id, refuse):
        self.x_id, self.refuse = x_id, refuse

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        if self.refuse is not None:
            raise self.refuse
        return [(self.x_id, g / 2)]

    def pushforward(self, tangents):
        return tangents[0] / 2


def _register_halve(refusal_at_0d):
    @cr.register(halve)
    def _(ids, x):
        refuse = refusal_at_0d if np.ndim(x) == 0 else None
        return halve(x), Halve(ids[0], refuse)


def test_a_typed_refusal_at_0d_skips_the_point_an_untyped_one_fails(rng):
    x = rng.uniform(-1, 1, 3)
    try:
        _register_halve(cr.MissingRuleError("halve: no rule for a 0-d x; pass a 1-d array"))
        assert check_rule(halve, x).worst < 1e-12
        # a typed error without a message says nothing to the user: not a refusal
        _register_halve(cr.MissingRuleError())
        with pytest.raises(CheckFailure, match="0-d inputs .* raised MissingRuleError"):
            check_rule(halve, x)
        _register_halve(IndexError("tuple index out of range"))
        with pytest.raises(CheckFailure, match="0-d inputs .* raised IndexError"):
            check_rule(halve, x)
    finally:
        _register_halve(None)
    assert check_rule(halve, x).worst < 1e-12


@cr.primitive
def double(x):
    return 2 * x


@cr.rrule(double)
def _(x):
    # a pullback that reads a size-1 cotangent as a number: the sweep gets a
    # float where it needs an array of x's shape (1,)
    def double_pullback(g):
        return (2 * float(np.reshape(g, -1)[0]) if np.shape(x) == (1,) else 2 * g,)

    return double(x), double_pullback


def test_the_size_1_point_is_checked(rng):
    x = rng.uniform(-1, 1, 3)
    assert check_rule(double, np.array(0.3)).worst < 1e-12   # 0-d: nothing smaller
    with pytest.raises(CheckFailure, match="at size-1 inputs"):
        check_rule(double, x)
