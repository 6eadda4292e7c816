"""Second order by replay: rules without ``pullback_with_tangents`` (class
rules, ``rrule`` closures, ``scalar_rule`` without ``second=``) give HVPs,
Hessians and Hessian operators from one trace of ``f``: the rule is made
again on forward-traced arguments and its pullback differentiated
(``chainrules.second_order``)."""

import numpy as np
import pytest

import chainrules as cr

X = np.array([0.3, -1.2, 0.7])
V = np.array([1.0, 0.5, -2.0])


def _fd_hvp(f, x, v, eps=1e-6):
    g = cr.grad(f)
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


# a class rule of two arguments without pullback_with_tangents: x * sin(y)
xsin = cr.primitive(lambda x, y: x * np.sin(y))


class XSinRule(cr.ReverseRule):
    def __init__(self, ids, x, y):
        self.ids, self.x, self.y = ids, x, y

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def pullback(self, g):
        out = []
        if self.ids[0] is not None:
            out.append((self.ids[0], g * np.sin(self.y)))
        if self.ids[1] is not None:
            out.append((self.ids[1], g * self.x * np.cos(self.y)))
        return out


@cr.register(xsin)
def _xsin_maker(ids, x, y):
    return x * np.sin(y), XSinRule(ids, x, y)


def test_class_rule_replayed_once_per_call_with_the_same_argument_twice():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(xsin(x, x) * x)  # x * sin(x) * x: the same node twice

    hv = cr.hvp(f, X, V)
    assert len(calls) == 1
    # d2/dx2 of x^2 sin x = 2 sin x + 4 x cos x - x^2 sin x
    d2 = 2 * np.sin(X) + 4 * X * np.cos(X) - X ** 2 * np.sin(X)
    np.testing.assert_allclose(hv, d2 * V, rtol=1e-12)
    H = cr.hessian(f)(X)  # the batched sweep: one replay per direction
    np.testing.assert_allclose(H, np.diag(d2), rtol=1e-12)
    op = cr.hessian_operator(f, X)
    np.testing.assert_allclose(op.matmat(np.eye(3)), np.diag(d2), rtol=1e-12)
    assert len(calls) == 3


def test_class_rule_with_a_constant_argument_and_mixed_partials():
    def f(p):
        a, b = p[:2], p[1:]
        return np.sum(xsin(a, b) ** 2) + np.sum(xsin(b, 2.0))

    p = np.array([0.4, 1.1, -0.3])
    np.testing.assert_allclose(cr.hvp(f, p, V), _fd_hvp(f, p, V), rtol=1e-7, atol=1e-9)
    H = cr.hessian(f)(p)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(H @ V, cr.hvp(f, p, V), rtol=1e-12, atol=1e-14)


def test_random_numbers_in_f_are_drawn_once():
    # re-tracing f would draw new numbers and differentiate another function
    rng = np.random.default_rng(3)

    def f(x):
        w = rng.standard_normal(3)
        return np.sum(xsin(w, x) * x)

    hv = cr.hvp(f, X, V)
    w = np.random.default_rng(3).standard_normal(3)
    # d2/dx2 of w sin(x) x = 2 w cos x - w x sin x
    np.testing.assert_allclose(hv, (2 * w * np.cos(X) - w * X * np.sin(X)) * V, rtol=1e-12)


def test_closure_rule_with_a_list_argument():
    mix = cr.primitive(lambda xs: np.sin(xs[0]) * xs[1])

    @cr.rrule(mix)
    def _(xs):
        a, b = xs
        return np.sin(a) * b, lambda g: ([g * np.cos(a) * b, g * np.sin(a)],)

    def f(x):
        return np.sum(mix([x[:2], x[1:]]) ** 2)

    np.testing.assert_allclose(cr.hvp(f, X, V), _fd_hvp(f, X, V), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.hessian(f)(X) @ V, cr.hvp(f, X, V), rtol=1e-12)


polar = cr.primitive(lambda x: (x * np.cos(x), x * np.sin(x)))


class PolarRule(cr.ReverseRule):
    """Two outputs; a pushforward but no pullback_with_tangents."""

    def __init__(self, i, x):
        self.i, self.x = i, x

    def inputs(self):
        return (self.i,)

    def _d(self):
        x = self.x
        return np.cos(x) - x * np.sin(x), np.sin(x) + x * np.cos(x)

    def pullback(self, g):
        dc, ds = self._d()
        total = 0
        for gk, dk in zip(g, (dc, ds)):
            if not isinstance(gk, cr.ZeroTangent):
                total = total + gk * dk
        return [(self.i, total)] if not isinstance(total, int) else []

    def pushforward(self, tangents):
        dc, ds = self._d()
        return (tangents[0] * dc, tangents[0] * ds)


@cr.register(polar)
def _polar_maker(ids, x):
    return cr.MultiOutput((x * np.cos(x), x * np.sin(x))), PolarRule(ids[0], x)


def test_two_output_class_rule_replayed_with_a_tuple_cotangent():
    def f(x):
        c, s = polar(x)
        return np.sum(c * s) + np.sum(c)

    np.testing.assert_allclose(cr.hvp(f, X, V), _fd_hvp(f, X, V), rtol=1e-7, atol=1e-9)

    def only_second(x):  # the first output's cotangent is a structural zero
        return np.sum(polar(x)[1] ** 2)

    np.testing.assert_allclose(cr.hvp(only_second, X, V), _fd_hvp(only_second, X, V),
                               rtol=1e-7, atol=1e-9)


def test_scalar_rule_without_second_is_replayed():
    softplus = cr.primitive(lambda x: np.log1p(np.exp(x)))
    cr.scalar_rule(softplus, lambda x, y: 1 / (1 + np.exp(-x)))

    def f(x):
        return np.sum(softplus(x) * x)

    sig = 1 / (1 + np.exp(-X))
    d2 = 2 * sig + X * sig * (1 - sig)  # d2/dx2 of x softplus(x)
    np.testing.assert_allclose(cr.hvp(f, X, V), d2 * V, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(f)(X), np.diag(d2), rtol=1e-12)


def test_a_pullback_that_cannot_be_differentiated_again_names_the_rule():
    opaque = cr.primitive(lambda x: x ** 3)

    class OpaqueRule(cr.ReverseRule):
        def __init__(self, i, x):
            self.i, self.x = i, x

        def inputs(self):
            return (self.i,)

        def pullback(self, g):
            return [(self.i, np.asarray(g) * 3 * self.x ** 2)]

    @cr.register(opaque)
    def _(ids, x):
        return x ** 3, OpaqueRule(ids[0], x)

    f = lambda x: np.sum(opaque(x))  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(X), 3 * X ** 2)
    with pytest.raises(cr.HvpNotSupported, match="OpaqueRule.*pullback_with_tangents"):
        cr.hvp(f, X, V)


def test_rule_checker_checks_the_replay():
    from chainrules.testing import check_rule
    report = check_rule(xsin, np.array([0.2, 0.9]), np.array([1.3, -0.4]),
                        modes=("rrule", "hvp"))
    assert "hvp" in report.modes and "hvp(nested)" not in report.modes


def test_a_maker_that_draws_random_numbers_is_not_replayed():
    # the replay must make the same operation again; a maker with its own
    # random numbers would make another one, so it is refused by name
    rng = np.random.default_rng(0)
    noisy = cr.primitive(lambda x: x ** 2)

    class NoisyRule(cr.ReverseRule):
        def __init__(self, i, x, w):
            self.i, self.x, self.w = i, x, w

        def inputs(self):
            return (self.i,)

        def pullback(self, g):
            return [(self.i, g * 2 * self.w * self.x)]

    @cr.register(noisy)
    def _(ids, x):
        w = rng.uniform(1, 2)
        return w * x ** 2, NoisyRule(ids[0], x, w)

    f = lambda x: np.sum(noisy(x))  # noqa: E731
    with pytest.raises(cr.HvpNotSupported, match="NoisyRule.*another output"):
        cr.hvp(f, X, V)
