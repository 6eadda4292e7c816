"""chainrules.testing: property-based checks for rules (ours and yours).

>>> import numpy as np
>>> from chainrules.testing import check_rrule
>>> check_rrule(np.sin, np.array([0.1, 0.2]))
True
"""

from . import strategies
from .checks import CheckFailure, check_frule, check_hvp, check_rrule, finite_difference
from .specs import RuleSpec, all_specs

__all__ = ["check_rrule", "check_frule", "check_hvp", "CheckFailure",
           "finite_difference", "strategies", "RuleSpec", "all_specs"]
