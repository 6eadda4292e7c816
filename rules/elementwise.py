"""Elementwise functions of one argument, one line each."""

import numpy as np

from chainrules.derived import scalar_rule

scalar_rule(np.sin, lambda x, y: np.cos(x), second=lambda x, y: -y)
scalar_rule(np.cos, lambda x, y: -np.sin(x), second=lambda x, y: -y)
scalar_rule(np.exp, lambda x, y: y, second=lambda x, y: y)
scalar_rule(np.log, lambda x, y: 1 / x, second=lambda x, y: -1 / x**2)
scalar_rule(np.tanh, lambda x, y: 1 - y**2, second=lambda x, y: -2 * y * (1 - y**2))
scalar_rule(np.sqrt, lambda x, y: 0.5 / y, second=lambda x, y: -0.25 / (y * x))
