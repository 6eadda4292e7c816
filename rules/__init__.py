"""The NumPy (and SciPy) rule library, imported as ``chainrules.rules``.

One module per family; importing this package registers every rule.
SciPy families register only when SciPy is installed.
"""

from . import (arithmetic, complex, contractions, elementwise, fft, indexing,  # noqa: F401
               linalg, nondiff, reductions, shape, special, scipy_linalg)
