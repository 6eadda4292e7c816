"""Definite integrals of a user's integrand, differentiated (registered only
when SciPy is installed); the public twins are ``chainrules.scipy.integrate.quad``,
``quad_vec`` and ``dblquad``.

``integral(a, b, *params, _spec=...)`` is one operation: the integral of
``f(x, *params)`` over ``x`` from ``a`` to ``b`` (a scalar for ``quad``, an
array for ``quad_vec``), computed by SciPy on plain values (``_value=``: the
result the twin already has from SciPy, with its warnings and error
estimate). ``params`` are the leaves of the user's ``args`` followed by the
values being differentiated that the integrand closes over (the twins find
them with ``chainrules.capture.closure_convert``).

* The limits, by the fundamental theorem of calculus: ``dI/db = f(b)``,
  ``dI/da = -f(a)``. The derivative in an infinite limit is refused
  (``DomainError``): it is the integrand's limit at infinity, which an
  evaluation cannot give.
* The parameters: ``dI/dp = integral of df/dp``, under the integral sign
  (the integrand and its derivative continuous in ``(x, p)``, and for
  infinite intervals dominated by an integrable function). The pullback of
  a cotangent ``g`` is the integral of ``vjp`` of the integrand, one vector
  with an entry per parameter entry; the pushforward of tangents ``p'`` is
  the integral of its ``jvp``. Both integrals are this same operation with
  the derived integrand, solved with the caller's ``epsabs``, ``epsrel``,
  ``limit`` and ``points`` by ``scipy.integrate.quad`` when it has one
  entry, else by ``scipy.integrate.quad_vec`` (whose error estimate is the
  2-norm over the entries): the estimated error is at most
  ``max(epsabs, epsrel * |integral|)`` when the solver converges; when it
  does not, an ``IntegrationWarning`` names the derivative's integral, as
  SciPy warns for the value.
* Second order: the pullback and pushforward call ``integral`` again, on
  values that may be traced, so nested differentiation differentiates them
  (the integrand of the integrand's ``vjp`` is differentiated by chainrules
  itself); ``pullback_with_tangents`` is the ``jvp`` of the pullback.
* Staged: SciPy evaluates a derivative's integrand at every quadrature point
  (21 per subinterval for ``quad_vec``) on plain values, with one
  signature. There it is a ``cr.jit`` of the ``vjp`` or ``jvp`` (a plan
  replayed instead of tracing the integrand at each point), kept across
  the integrals of the same integrand (an optimiser's loop) and verified
  against an eager evaluation at the first point of each
  (rules/scipy_integrate_plans.py, under ``QuadSpec.origin``). Each
  ``QuadRule`` is one solve there: its pullback's and pushforward's
  integrals share its plans. On other values (traced ones: a derived
  integrand differentiated again, at second order) a derivative's
  integrand runs eagerly.
"""

import warnings

import numpy as np

from chainrules.errors import DomainError, MissingRuleError
from chainrules.primitives import primitive
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.tangents import ZERO, is_zero
from chainrules.tracing import untraced
from chainrules.user_code import user_stacklevel

from ._util import on_demand_family
from .scipy_integrate_plans import staged

try:
    import scipy.integrate as si
except ImportError:  # pragma: no cover - SciPy is an optional extra
    si = None

_family_loaded = on_demand_family()

__all__ = ["integral", "QuadSpec"]


class QuadSpec:
    """What ``integral`` integrates: ``func(x, *params)``, a scalar
    (``vector=False``, solved by ``quad``) or an array (``quad_vec``), and
    the tolerances its derivatives' integrals are solved to (``epsabs``,
    ``epsrel``, ``limit``, ``points``). ``name`` names it in messages.
    ``origin``: ``(the user's function, a hashable of how ``func`` wraps
    it)``, under which the staged derivatives of ``func`` are kept across
    integrals (rules/scipy_integrate_plans.py), ``(func, None)`` by
    default; ``staged=False``: its derivatives' integrands are evaluated
    eagerly (an integrand that solves an integral itself at each point)."""

    __slots__ = ("func", "vector", "opts", "name", "shape", "origin", "staged")

    def __init__(self, func, vector, opts, name, shape=None, origin=None, staged=True):
        self.func, self.vector, self.name, self.shape = func, vector, name, shape
        self.opts = {k: v for k, v in opts.items() if v is not None}
        self.origin = (func, None) if origin is None else origin
        self.staged = staged

    def solve(self, a, b, params):
        """The integral on plain values: by ``quad`` for a scalar integrand
        or an array one known to hold one entry (``shape``), else by
        ``quad_vec``. Parameters narrower than float64 are widened: SciPy
        integrates in float64, and an integrand rounded to float32 keeps it
        from reaching the tolerances (it would subdivide up to ``limit`` and
        warn)."""
        params = tuple(_widened(p) for p in params)
        if not self.vector:
            return np.float64(self._quad(self.func, a, b, params))
        if self.shape is not None and int(np.prod(self.shape, dtype=int)) == 1:
            def one_entry(x, *ps):
                return np.ravel(self.func(x, *ps))[0]
            return np.reshape(np.float64(self._quad(one_entry, a, b, params)), self.shape)
        res, _, info = si.quad_vec(self.func, a, b, args=params, full_output=True, **self.opts)
        if not info.success:
            warnings.warn(si.IntegrationWarning(
                f"{self.name}: {info.message} (the integral was not computed to "
                f"epsabs={self.opts.get('epsabs')}, epsrel={self.opts.get('epsrel')})"),
                stacklevel=user_stacklevel())
        return np.asarray(res, dtype=float)

    def _quad(self, func, a, b, params):
        """``scipy.integrate.quad``'s value, its warnings naming this integral
        and issued at the user's line."""
        keep = {k: v for k, v in self.opts.items() if k in ("epsabs", "epsrel", "limit",
                                                              "points")}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = si.quad(func, a, b, args=params, **keep)[0]
        level = user_stacklevel()
        for w in caught:
            if issubclass(w.category, si.IntegrationWarning):
                warnings.warn(si.IntegrationWarning(f"{self.name}: {w.message}"),
                              stacklevel=level)
            else:
                warnings.warn(w.message, w.category, stacklevel=level)
        return y

    def derived(self, rule, key, make, what, shape):
        """The spec of the integrand ``make(rule, key[1])`` derived from this
        one (its derivative's, an array of ``shape``; ``key`` names the
        derivative in ``origin``), solved to the same tolerances."""
        opts = {k: v for k, v in self.opts.items() if k in ("epsabs", "epsrel", "limit",
                                                              "points")}
        func = _at_points(rule, key, make) if self.staged else make(rule, key[1])
        return QuadSpec(func, True, opts, f"{self.name} ({what})", shape,
                        (self.origin[0], (self.origin[1], key)), self.staged)


def _widened(p):
    dt = getattr(p, "dtype", None)
    if dt is not None and dt.kind == "f" and dt.itemsize < 8:
        return np.asarray(p, dtype=np.float64)
    return p


def _solved(a, b, params, spec, value):
    return value if value is not None else spec.solve(float(a), float(b), params)


@primitive
def integral(a, b, *params, _spec, _value=None):
    """The integral of ``_spec.func(x, *params)`` over ``x`` from ``a`` to
    ``b`` (``_value``: the result, when the caller has it from SciPy)."""
    return _solved(a, b, params, _spec, _value)


def _real_float(v):
    """Whether a value (a parameter, a limit) has a real derivative."""
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return np.dtype(dt).kind == "f"
    return isinstance(v, float)


def _limit_value(v, spec, which):
    """A differentiated limit's plain value, refused when infinite."""
    x = float(untraced(v))
    if not np.isfinite(x):
        raise DomainError(
            f"{spec.name}: the derivative with respect to the {which} limit {x} does not "
            "exist as an evaluation of the integrand (it is the integrand's limit at "
            "infinity); hold the infinite limit constant (chainrules.stop_gradient, or pass "
            "np.inf rather than a traced value)")
    return v


def _with(params, pidx, values):
    full = list(params)
    for k, v in zip(pidx, values):
        full[k] = v
    return full


def _zeros_of(p):
    # (read without np.asarray: a staged value is not converted)
    v = untraced(p)
    dt = getattr(v, "dtype", None)
    dt = np.result_type(v) if dt is None else np.dtype(dt)
    return np.zeros(getattr(v, "shape", ()), dtype=dt if dt.kind == "f" else np.float64)


def _plain(x, args):
    """Whether a derived integrand's arguments are plain values a plan takes
    (SciPy's point and parameters: arrays of numbers, Python and NumPy
    numbers), not traced ones."""
    for a in (x, *args):
        t = type(a)
        if t is np.ndarray:
            if a.dtype.kind not in "biuf":
                return False
        elif not (t is float or t is int or isinstance(a, (np.floating, np.integer))):
            return False
    return True


def _at_points(rule, key, make):
    """The integrand ``make(rule, key[1])`` as SciPy calls it, point by
    point: on plain values the plan of ``rule``'s solve
    (``scipy_integrate_plans.staged``, looked up at each point, as its first
    point's check replaces it), on others eagerly."""
    eager = make(rule, key[1])

    def integrand(x, *args):
        if _plain(x, args):
            return staged(rule, key, make)(x, *args)
        return eager(x, *args)

    integrand.__name__ = integrand.__qualname__ = eager.__name__
    return integrand


def _vjp_of(rule, what):
    return _vjp_integrand(rule.spec.func, *what)


def _jvp_of(rule, what):
    return _jvp_integrand(rule.spec.func, *what)


def _vjp_integrand(func, pidx, nparams):
    """``h(x, *params, g)``: the cotangent ``g`` pulled back through
    ``func(x, *params)`` to ``params[pidx]``, as one vector."""
    from chainrules.api import vjp

    def quad_vjp_integrand(x, *rest):
        params, g = rest[:nparams], rest[nparams]
        _, back = vjp(lambda *ps: func(x, *_with(params, pidx, ps)),
                      *[params[k] for k in pidx])
        cots = back(g)
        return np.concatenate([np.ravel(_zeros_of(params[k]) if is_zero(c) else c)
                               for k, c in zip(pidx, cots)])
    return quad_vjp_integrand


def _jvp_integrand(func, pidx, nparams, shape):
    """``h(x, *params, *tangents)``: the tangent of ``func(x, *params)``
    along the tangents of ``params[pidx]``."""
    from chainrules.api import jvp

    def quad_jvp_integrand(x, *rest):
        params, dps = rest[:nparams], rest[nparams:]
        out, t = jvp(lambda *ps: func(x, *_with(params, pidx, ps)),
                     tuple(params[k] for k in pidx), tuple(dps))
        return np.zeros(shape) if is_zero(t) else t
    return quad_jvp_integrand


def _like(c, v):
    """The cotangent ``c`` in the floating dtype of its input ``v`` (float32
    stays float32)."""
    dt = np.asarray(untraced(v)).dtype
    if dt.kind == "f" and np.dtype(getattr(c, "dtype", np.float64)) != dt:
        return np.asarray(c).astype(dt) if not hasattr(c, "astype") else c.astype(dt)
    return c


def _pullback(rule, live, a, b, params, g):
    """``[(position, cotangent), ...]`` of the integral over ``a..b`` of
    ``rule.spec.func(x, *params)`` for the cotangent ``g``; positions 0 and
    1 are the limits, ``2 + k`` the parameter ``k``, for the positions in
    ``live``."""
    spec = rule.spec
    out = []
    if 1 in live:
        fb = spec.func(_limit_value(b, spec, "upper"), *params)
        out.append((1, _like(np.sum(g * fb), b)))
    if 0 in live:
        fa = spec.func(_limit_value(a, spec, "lower"), *params)
        out.append((0, _like(-np.sum(g * fa), a)))
    pidx = [k for k in range(len(params)) if 2 + k in live]
    if pidx:
        total = sum(int(np.prod(np.shape(params[k]), dtype=int)) for k in pidx)
        dspec = spec.derived(rule, ("integrand_vjp", (tuple(pidx), len(params))), _vjp_of,
                             "its derivative", (total,))
        v = integral(a, b, *params, g, _spec=dspec)
        off = 0
        for k in pidx:
            shp = np.shape(params[k])
            size = int(np.prod(shp, dtype=int))
            out.append((2 + k, _like(np.reshape(v[off:off + size], shp), params[k])))
            off += size
    return out


class QuadRule(ReverseRule):
    """The rule of ``integral``: limits by the fundamental theorem, parameters
    by differentiating under the integral sign."""

    __slots__ = ("ids", "a", "b", "params", "spec", "shape", "plans")

    def __init__(self, ids, a, b, params, spec, shape):
        self.ids, self.a, self.b, self.params, self.spec, self.shape = \
            ids, a, b, params, spec, shape
        self.plans = {}  # the staged derivatives' integrands of this integral

    @property
    def name(self):
        return self.spec.name

    @property
    def origin(self):
        return self.spec.origin

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _live(self):
        return [k for k, i in enumerate(self.ids) if i is not None]

    def pullback(self, g):
        return [(self.ids[k], c) for k, c in
                _pullback(self, self._live(), self.a, self.b, self.params, g)]

    def pushforward(self, tangents):
        live = self._live()
        tan = dict(zip(live, tangents))
        spec, params = self.spec, self.params
        out = np.zeros(self.shape)
        db, da = tan.get(1), tan.get(0)
        if db is not None and not is_zero(db):
            out = out + spec.func(_limit_value(self.b, spec, "upper"), *params) * db
        if da is not None and not is_zero(da):
            out = out - spec.func(_limit_value(self.a, spec, "lower"), *params) * da
        pidx = [k for k in range(len(params)) if 2 + k in tan and not is_zero(tan[2 + k])]
        if pidx:
            jspec = spec.derived(self, ("integrand_jvp", (tuple(pidx), len(params), self.shape)),
                                 _jvp_of, "its tangent", self.shape)
            out = out + integral(self.a, self.b, *params, *[tan[2 + k] for k in pidx],
                                 _spec=jspec)
        return out

    def pullback_with_tangents(self, cotangent, cotangent_tangent, tangents):
        """The ``jvp`` of the pullback along the inputs' tangents and the
        cotangent's: the pullback's integrals are ``integral`` again, whose
        pushforward integrates the ``jvp`` of the ``vjp`` integrand."""
        from chainrules.api import jvp

        live = self._live()
        if cotangent is None or is_zero(cotangent):
            # the pullback is linear in the cotangent: its tangent is the
            # pullback of the cotangent's tangent
            if cotangent_tangent is None or is_zero(cotangent_tangent):
                return []
            return [(i, ZERO, c) for i, c in self.pullback(cotangent_tangent)]
        vals = [self.a, self.b, *self.params]
        prim = [vals[k] for k in live] + [cotangent]
        tans = [_zeros_of(p) if t is None or is_zero(t) else t
                for p, t in zip(prim, list(tangents) + [cotangent_tangent])]

        def pulled_back(*xs):
            full = _with(vals, live, xs[:-1])
            got = dict(_pullback(self, live, full[0], full[1], full[2:], xs[-1]))
            return tuple(got[k] for k in live)

        c, cd = jvp(pulled_back, tuple(prim), tuple(tans))
        return [(self.ids[k], ck, cdk) for k, ck, cdk in zip(live, c, cd)]


def _integral_maker(ids, a, b, *params, _spec, _value=None):
    pv = [untraced(p) for p in params]
    value = _solved(untraced(a), untraced(b), pv, _spec, _value)
    ids = list(ids)
    for k, v in enumerate((a, b) + params):
        if type(ids[k]) is tuple:
            raise MissingRuleError(f"{_spec.name}: a sequence argument holding traced "
                                   "values is not differentiated; pass its arrays as "
                                   "separate arguments")
        if ids[k] is None:
            continue
        if np.iscomplexobj(untraced(v)):
            raise MissingRuleError(
                f"{_spec.name}: complex arguments ({type(untraced(v)).__name__} of dtype "
                f"{np.asarray(untraced(v)).dtype}) are not differentiated; pass the real "
                "and imaginary parts as separate real arguments")
        if not _real_float(untraced(v)):
            ids[k] = None  # integers and booleans get no derivative
    return value, QuadRule(tuple(ids), a, b, params, _spec, np.shape(value))


if si is not None:
    register(integral)(_integral_maker)

_family_loaded()
