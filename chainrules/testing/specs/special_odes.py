"""Specs for rules/special_odes.py (scipy.special; empty without SciPy)."""

from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.testing.specs.special import order_first, unary
from chainrules.testing.specs.special_elementary import args_in

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")
F64 = ("float64",)
_FIRST = frozenset({"rrule", "frule"})


def _mathieu(kind):
    """An integer order (from 1 for ``se``), ``q`` in [0, 2] and ``x`` in
    degrees in [-170, 170] (angular) or in [0.1, 1.5] (modified: SciPy's
    series lose digits beyond)."""
    first = 1 if "sem" in kind else 0
    angular = kind in ("cem", "sem")

    def sample(draw, dtype):
        m = draw(st.integers(first, 3))
        q = float(draw(crs.arrays("float64", (), (0.0, 2.0))))
        x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)),
                            (-170.0, 170.0) if angular else (0.1, 1.5)))
        return (m, q, x), {}
    return sample


def _spheroidal(name):
    """Integer ``m`` and ``n >= m``, ``c`` in [0.5, 2] (``cv`` from ``pro_cv`` or
    ``obl_cv`` for the ``*_cv`` forms) and ``x`` in [-0.8, 0.8] (angular),
    [1.2, 2.5] (prolate radial) or [0.3, 2.5] (oblate radial)."""
    x_domain = ((-0.8, 0.8) if "ang" in name else
                (1.2, 2.5) if name.startswith("pro") else (0.3, 2.5))
    cv_of = getattr(sc, f"{name[:3]}_cv")

    def sample(draw, dtype):
        m = draw(st.integers(0, 2))
        n = m + draw(st.integers(0, 2))
        c = float(draw(crs.arrays("float64", (), (0.5, 2.0))))
        x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), x_domain))
        cv = (float(cv_of(m, n, c)),) if name.endswith("_cv") else ()
        return (m, n, c, *cv, x), {}
    return sample


def _phi_m(draw, dtype):
    """``phi`` in [-4, 4] (past +-pi/2) and ``m`` in [-0.8, 0.95]."""
    sp, sm = draw(crs.broadcastable_shapes(2, 0, 2))
    phi = draw(crs.arrays(dtype, sp, (-4.0, 4.0)))
    return (phi, draw(crs.arrays(dtype, sm, (-0.8, 0.95)))), {}


def _lpmv(draw, dtype):
    m = draw(st.integers(-2, 2))
    v = float(draw(crs.arrays("float64", (), (0.0, 3.5))))
    return (m, v, draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), "unit"))), {}


SPECS = []
if sc is not None:
    import chainrules.rules.special_elliptic as se
    import chainrules.rules.special_odes as so

    _ORDERS = [-0.6, 0.0, 1.0, 1.5, 2.3]
    SPECS = [
        RuleSpec(so.pbdv_d, order_first(_ORDERS, "real"), F, wrt=(1,)),
        RuleSpec(so.pbdv_dp, order_first(_ORDERS, "real"), F, wrt=(1,)),
        # SciPy 1.17's float32 loops of pbvv and the Mathieu functions return NaN
        RuleSpec(so.pbvv_v, order_first(_ORDERS, "real"), F64, wrt=(1,)),
        RuleSpec(so.pbvv_vp, order_first(_ORDERS, "real"), F64, wrt=(1,)),
        # |x| < 0.9: the float32 loop loses digits where W is small
        RuleSpec(so.pbwa_w, order_first([-2.3, 0.0, 1.0, 3.0], "unit"), F, wrt=(1,)),
        RuleSpec(so.pbwa_wp, order_first([-2.3, 0.0, 1.0, 3.0], "unit"), F, wrt=(1,)),
        RuleSpec(sc.pbdv, order_first(_ORDERS, "real"), F64, wrt=(1,)),
        RuleSpec(sc.pbvv, order_first(_ORDERS, "real"), F64, wrt=(1,)),
        RuleSpec(sc.pbwa, order_first([0.0, 1.0], "real"), F64, wrt=(1,)),
        *(RuleSpec(f, _mathieu(kind), F64, wrt=(2,))
          for kind, pair in so.MATHIEU.items() for f in pair),
        *(RuleSpec(getattr(sc, f"mathieu_{kind}"), _mathieu(kind), F64, wrt=(2,))
          for kind in so.MATHIEU),
        # u past the first quarter period (am beyond pi/2), m in both arguments;
        # m away from 0 and 1, where SciPy switches to first-order expansions
        *(RuleSpec(f, args_in((-4.0, 4.0), (0.02, 0.95)), F, wrt=(0, 1))
          for f in (so.ellipj_sn, so.ellipj_cn, so.ellipj_dn, so.ellipj_ph)),
        RuleSpec(sc.ellipj, args_in((-4.0, 4.0), (0.02, 0.95)), F64, wrt=(0, 1)),
        # the m partials of ellipkinc and ellipeinc (primitives, so that their
        # derivatives use the closed forms): no third derivative in m, so HVPs
        # in phi only
        *(RuleSpec(f, _phi_m, F, modes=_FIRST, wrt=(0, 1))
          for f in (se.ellipkinc_dm, se.ellipeinc_dm)),
        *(RuleSpec(f, _phi_m, F, wrt=(0,)) for f in (se.ellipkinc_dm, se.ellipeinc_dm)),
        *(RuleSpec(f, _phi_m, F, modes=_FIRST, wrt=(0,))
          for f in (se.ellipkinc_dmm, se.ellipeinc_dmm)),
        RuleSpec(sc.lpmv, _lpmv, F, wrt=(2,)),
        # (no spec of the spheroidal ufuncs themselves: SciPy 1.17's float32
        # loops do not return, and the dtype sweep calls them on float32;
        # tests/rules/test_special_tail.py checks the compositions)
        *(RuleSpec(f, _spheroidal(name), F, wrt=(4 if name.endswith("_cv") else 3,))
          for name, pair in so.SPHEROIDAL.items() for f in pair),
    ]
