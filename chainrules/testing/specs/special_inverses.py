"""Specs for rules/special_inverses.py (scipy.special; empty without SciPy)."""

import numpy as np

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.testing.specs.special_elementary import args_in

try:
    import scipy
    import scipy.special as sc
except ImportError:  # pragma: no cover
    scipy = sc = None

F = ("float64", "float32")
#: whether this SciPy solves nctdtrit (nctdtr(df, nc, t) = p for t) to
#: rounding: SciPy 1.17 and 1.18 do, to about 1e-11; SciPy 1.15's cdflib
#: only to a few parts in 1e9, in steps finite differences cannot resolve
_SOLVED_TO_ROUNDING = scipy is not None and tuple(
    int(p) for p in scipy.__version__.split(".")[:2]) >= (1, 17)
_COARSE_NCT = ("this SciPy solves nctdtrit only to a few parts in 1e9, too coarsely for "
               "finite differences to check its derivative (SciPy 1.17 on solve it to "
               "rounding)")


def _solved(forward, params, u_domain, place):
    """Arguments of an inverse in a noncentrality or point: the parameters
    ``params`` (intervals, in order), a probability ``q`` in [0.2, 0.8] and
    ``u_domain`` for the value the inverse returns; the point is
    ``forward(*params, u, q)`` so that the inverse lands inside ``u_domain``.
    ``place(params, q, point)`` orders the arguments."""
    def sample(draw, dtype):
        shapes = draw(crs.broadcastable_shapes(len(params) + 2, 0, 2))
        ps = [draw(crs.arrays(dtype, s, d)) for d, s in zip(params, shapes)]
        u = draw(crs.arrays(dtype, shapes[-2], u_domain))
        q = draw(crs.arrays(dtype, shapes[-1], (0.2, 0.8)))
        point = np.asarray(forward(*ps, u, q)).astype(dtype)
        return place(ps, q, point), {}
    return sample


def _nrdtrisd(draw, dtype):
    """``p`` at least 0.1 away from 1/2, where ``ndtri(p) = 0``."""
    sm, sp, sx = draw(crs.broadcastable_shapes(3, 0, 2))
    return (draw(crs.arrays(dtype, sm, "real")),
            draw(crs.arrays(dtype, sp, (0.1, 0.9), avoid=(0.5,))),
            draw(crs.arrays(dtype, sx, "real"))), {}


def _tklmbda(draw, dtype):
    """``x`` in [-0.8, 0.8] (inside the support ``|x| < 1/l`` for ``l <= 1``),
    ``l`` in [-0.5, 1] at least 0.1 from 0 (SciPy computes ``|l| < 1e-4`` as
    ``l = 0``)."""
    sx, sl = draw(crs.broadcastable_shapes(2, 0, 2))
    return (draw(crs.arrays(dtype, sx, (-0.8, 0.8))),
            draw(crs.arrays(dtype, sl, (-0.5, 1.0), avoid=(0.0,)))), {}


SPECS = []
if sc is not None:
    _DF, _NC = (0.6, 5.0), (0.3, 3.0)
    SPECS = [
        RuleSpec(sc.chndtr, args_in((0.3, 4.0), _DF, _NC), F, wrt=(0, 2)),
        RuleSpec(sc.chndtrix, args_in("prob", _DF, _NC), F, wrt=(0, 2)),
        # chndtrinc(x, df, p) with x = chndtrix(q, df, nc), p = q
        RuleSpec(sc.chndtrinc,
                 _solved(lambda df, nc, q: sc.chndtrix(q, df, nc), [_DF], _NC,
                         lambda ps, q, x: (x, ps[0], q)), F, wrt=(0, 2)),
        RuleSpec(sc.nctdtrit, args_in((2.0, 6.0), (-1.0, 1.0), "prob"), F, wrt=(1, 2),
                 skip=None if _SOLVED_TO_ROUNDING else _COARSE_NCT),
        # nctdtrinc solves nctdtr(df, nc, t) = p to about 1e-11
        *(RuleSpec(sc.nctdtrinc,
                   _solved(lambda df, nc, q: sc.nctdtrit(df, nc, q), [(2.0, 6.0)], (-1.0, 1.0),
                           lambda ps, q, t: (ps[0], q, t)), (dt,), wrt=(1, 2), rtol=rtol)
          for dt, rtol in (("float64", 1e-7), ("float32", None))),
        RuleSpec(sc.ncfdtri, args_in((2.0, 6.0), (3.0, 8.0), _NC, "prob"), F, wrt=(2, 3)),
        RuleSpec(sc.nrdtrimn, args_in("prob", "positive", "real"), F),
        RuleSpec(sc.nrdtrisd, _nrdtrisd, F),
        RuleSpec(sc.tklmbda, _tklmbda, F),
    ]
