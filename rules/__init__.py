"""The NumPy (and SciPy) rule library, imported as ``chainrules.rules``.

One module per family; importing this package registers every rule.
SciPy families register only when SciPy is installed.
"""

from . import (arithmetic, complex, contractions, decompositions, elementwise, fft,  # noqa: F401
               indexing, linalg, nondiff, reductions, shape, shape_pieces, special,
               statistics,
               scipy_linalg, special_bessel, special_incomplete)
from . import (scipy_integrate, scipy_linalg_schur, scipy_linalg_solvers,  # noqa: F401
               scipy_signal)
from . import array_api, composites, composites_more, composites_stats  # noqa: F401,E402  (compositions of the rules above)
