"""Bessel functions of ``scipy.special`` (registered only with SciPy).

Derivatives in the argument ``x`` from the recurrences

* ``J_v' = (J_{v-1} - J_{v+1}) / 2``, the same for ``Y_v``;
* ``K_v' = -(K_{v-1} + K_{v+1}) / 2``;
* the scaled ``kve(v, x) = exp(x) K_v(x)``: ``kve' = kve - (kve_{v-1} + kve_{v+1}) / 2``

and their second derivatives by applying the recurrence twice. The order
``v`` (``n`` of ``yn``) is a constant: asking for its derivative raises
``MissingRuleError`` (no closed form). The modified ``iv``/``ive``/``i0``...
are in ``rules/special.py``.
"""

import numpy as np

from ._util import no_derivative, on_demand_family

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()


def _register():
    from chainrules.derived import scalar_rule

    def first_kind(f):
        # f(v, x) with J-type recurrence (J, Y): f' = (f_{v-1} - f_{v+1}) / 2
        def d(v, x, z):
            return (f(v - 1, x) - f(v + 1, x)) / 2

        def dd(v, x, z):
            return (f(v - 2, x) - 2 * z + f(v + 2, x)) / 4
        return d, dd

    nov = no_derivative("scipy.special Bessel functions", "the order v")
    for f in (sc.jv, sc.yv):
        d, dd = first_kind(f)
        scalar_rule(f, nov, d, second=(nov, 0, dd), saves="xyz")
    # yn(n, x): integer order, same recurrence through yv
    d, dd = first_kind(sc.yv)
    scalar_rule(sc.yn, nov, d, second=(nov, 0, dd), saves="xyz")

    scalar_rule(sc.j0, lambda x, y: -sc.j1(x), second=lambda x, y: (sc.jv(2, x) - y) / 2,
                saves="xy")
    scalar_rule(sc.j1, lambda x, y: (sc.j0(x) - sc.jv(2, x)) / 2,
                second=lambda x, y: (sc.jv(3, x) - 3 * y) / 4, saves="xy")
    scalar_rule(sc.y0, lambda x, y: -sc.y1(x), second=lambda x, y: (sc.yv(2, x) - y) / 2,
                saves="xy")
    scalar_rule(sc.y1, lambda x, y: (sc.y0(x) - sc.yv(2, x)) / 2,
                second=lambda x, y: (sc.yv(3, x) - 3 * y) / 4, saves="xy")

    # modified, second kind
    def kv_d(v, x, z):
        return -(sc.kv(v - 1, x) + sc.kv(v + 1, x)) / 2

    def kv_dd(v, x, z):
        return (sc.kv(v - 2, x) + 2 * z + sc.kv(v + 2, x)) / 4

    def kve_d(v, x, z):
        return z - (sc.kve(v - 1, x) + sc.kve(v + 1, x)) / 2

    def kve_dd(v, x, z):
        return ((sc.kve(v - 2, x) + 2 * z + sc.kve(v + 2, x)) / 4
                - (sc.kve(v - 1, x) + sc.kve(v + 1, x)) + z)

    scalar_rule(sc.kv, nov, kv_d, second=(nov, 0, kv_dd), saves="xyz")
    scalar_rule(sc.kve, nov, kve_d, second=(nov, 0, kve_dd), saves="xyz")
    scalar_rule(sc.k0, lambda x, y: -sc.k1(x), second=lambda x, y: (sc.kv(2, x) + y) / 2,
                saves="xy")
    scalar_rule(sc.k1, lambda x, y: -(sc.k0(x) + sc.kv(2, x)) / 2,
                second=lambda x, y: (sc.kv(3, x) + 3 * y) / 4, saves="xy")
    scalar_rule(sc.k0e, lambda x, y: y - sc.k1e(x), second=lambda x, y: kve_dd(0, x, y), saves="xy")
    scalar_rule(sc.k1e, lambda x, y: kve_d(1, x, y), second=lambda x, y: kve_dd(1, x, y),
                saves="xy")


if sc is not None:
    _register()

_family_loaded()
