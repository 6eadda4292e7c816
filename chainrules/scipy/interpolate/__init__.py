"""Differentiable ``scipy.interpolate``: the interpolants with SciPy's names
and signatures, whose data values and query points may be traced (the
sample coordinates stay constants). See each module for the derivative's
convention at breakpoints."""

from ._ppoly import PPoly
from ._bspline import BSpline, make_interp_spline
from ._interp1d import interp1d
from ._fitpack import (bisplev, insert, make_lsq_spline, make_smoothing_spline,
                       pchip_interpolate, spalde, splantider, splder, splev, splint)
from ._polyint import (BarycentricInterpolator, KroghInterpolator, barycentric_interpolate,
                       krogh_interpolate)
from ._nd import RegularGridInterpolator, griddata, interpn
from ._cubic import Akima1DInterpolator, CubicHermiteSpline, CubicSpline, PchipInterpolator

__all__ = ["PPoly", "CubicHermiteSpline", "CubicSpline", "PchipInterpolator",
           "Akima1DInterpolator", "BSpline", "make_interp_spline", "interp1d",
           "RegularGridInterpolator", "interpn", "griddata", "splev", "splder",
           "splantider", "splint", "spalde", "insert", "bisplev", "pchip_interpolate", "make_lsq_spline",
           "make_smoothing_spline", "KroghInterpolator", "BarycentricInterpolator",
           "krogh_interpolate", "barycentric_interpolate"]
