"""The NumPy (and SciPy) rule library, imported as ``chainrules.rules``.

One module per family; importing this package registers the NumPy families.
``scipy.special``'s families register once ``scipy.special`` is imported
(at once when it already is; its ufuncs reach traced values through
NumPy's protocols, and a program can call them only after importing it),
so ``import chainrules`` does not pay for importing SciPy. The families of
``scipy.linalg``, ``scipy.signal`` and ``scipy.integrate`` register when
imported: by ``chainrules.scipy`` (their only entry points) or
``load_all()``. SciPy families register only when SciPy is installed.
``scipy.fft`` dispatches to a backend of chainrules for traced values
(``scipy_fft``), registered once ``scipy.fft`` is imported.
"""

import importlib

from . import (arithmetic, complex, contractions, decompositions, elementwise, fft,  # noqa: F401
               indexing, linalg, nondiff, reductions, shape, shape_pieces, statistics)
from ._when_imported import when_imported

#: the families of scipy.special, in the order they register
_SPECIAL = ("special", "special_bessel", "special_incomplete", "special_elementary",
            "special_elliptic", "special_distributions", "special_integrals", "special_odes",
            "special_inverses")


def _load_special(module=None):
    for name in _SPECIAL:
        importlib.import_module(f"{__name__}.{name}")


when_imported("scipy.special", _load_special, "its scipy.special rules")
# x @ A with a plain scipy.sparse matrix A: registered once scipy.sparse is imported
when_imported("scipy.sparse", lambda module: importlib.import_module(f"{__name__}.scipy_sparse"),
              "its scipy.sparse products")
from . import array_api, composites, composites_more, composites_stats  # noqa: F401,E402  (compositions of the rules above)
# scipy.fft's transforms as compositions of the rules above, reached through
# a backend of scipy.fft registered when scipy.fft is imported (this imports
# no SciPy module)
from . import scipy_fft  # noqa: F401,E402


_ON_DEMAND = ("scipy_linalg", "scipy_linalg_compose", "scipy_linalg_schur",
              "scipy_linalg_solvers", "scipy_signal", "scipy_integrate", "scipy_quad",
              "scipy_sparse", "scipy_sparse_linalg", "scipy_optimize")


def load_all():
    """Import every rule family, the ones loaded on demand included (for
    tables and sweeps over the whole library)."""
    _load_special()
    for name in _ON_DEMAND:
        importlib.import_module(f"{__name__}.{name}")
