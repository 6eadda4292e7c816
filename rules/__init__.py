"""The NumPy rule library, imported as ``chainrules.rules``.

One module per family; importing this package registers every rule.
"""

from . import arithmetic, contractions, elementwise, reductions, shape  # noqa: F401
