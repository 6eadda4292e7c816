"""The NumPy (and SciPy) rule library, imported as ``chainrules.rules``.

One module per family; importing this package registers the NumPy families
and ``scipy.special``'s (SciPy's ufuncs reach traced values through NumPy's
protocols). The families of ``scipy.linalg``, ``scipy.signal`` and
``scipy.integrate`` register when imported: by ``chainrules.scipy`` (their
only entry points) or ``load_all()``. SciPy families register only when
SciPy is installed. ``scipy.fft`` dispatches to a backend of chainrules for
traced values (``scipy_fft``), registered once ``scipy.fft`` is imported.
"""

from . import (arithmetic, complex, contractions, decompositions, elementwise, fft,  # noqa: F401
               indexing, linalg, nondiff, reductions, shape, shape_pieces, special,
               statistics,
               special_bessel, special_incomplete, special_elementary,
               special_elliptic, special_distributions, special_integrals,
               special_odes, special_inverses)
from . import array_api, composites, composites_more, composites_stats  # noqa: F401,E402  (compositions of the rules above)
# scipy.fft's transforms as compositions of the rules above, reached through
# a backend of scipy.fft registered when scipy.fft is imported (this imports
# no SciPy module)
from . import scipy_fft  # noqa: F401,E402


_ON_DEMAND = ("scipy_linalg", "scipy_linalg_compose", "scipy_linalg_schur",
              "scipy_linalg_solvers", "scipy_signal", "scipy_integrate")


def load_all():
    """Import every rule family, the ones loaded on demand included (for
    tables and sweeps over the whole library)."""
    import importlib

    for name in _ON_DEMAND:
        importlib.import_module(f"{__name__}.{name}")
