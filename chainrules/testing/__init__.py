"""chainrules.testing: property-based checks for rules (ours and yours).

* checkers: ``check_rrule``, ``check_frule`` (``check_jvp``), ``check_hvp``,
  ``check_rule`` (several modes from one recording), ``check_grads`` (whole
  functions, nested to any order), ``check_nondiff`` and ``check_saves``
  (a ``scalar_rule``'s ``saves=`` against what its partials read); they raise
  ``CheckFailure`` and return a ``CheckReport``;
* finite differences: ``fd_jvp`` and ``fd_jacobian`` (``chainrules.testing.fd``);
* Hypothesis strategies: ``chainrules.testing.strategies``;
* rule specs and the registry sweep: ``RuleSpec``, ``all_specs``;
* a pytest plugin (profiles ``ci`` / ``thorough``, fixtures) and a command
  line, ``python -m chainrules.testing MODULE``.

>>> import numpy as np
>>> from chainrules.testing import check_rrule
>>> bool(check_rrule(np.sin, np.array([0.1, 0.2])))
True
"""

from . import strategies
from .checks import (CheckFailure, CheckReport, FiniteDifferenceUnreliable, adjoint_rtol,
                     check_frule, check_grads, check_hvp, check_jvp, check_nondiff,
                     check_rrule, check_rule, default_rtol, finite_difference)
from .fd import fd_jacobian, fd_jvp
from .saves import check_saves
from .specs import RuleSpec, all_specs

__all__ = ["check_rrule", "check_frule", "check_jvp", "check_hvp", "check_rule",
           "check_grads", "check_nondiff", "check_saves", "CheckFailure", "FiniteDifferenceUnreliable",
           "CheckReport", "default_rtol", "adjoint_rtol", "finite_difference", "fd_jvp",
           "fd_jacobian", "strategies", "RuleSpec", "all_specs"]
