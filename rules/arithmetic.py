"""Arithmetic with broadcasting: add, subtract, multiply, divide, power, ..."""

import numpy as np

from chainrules.derived import bilinear_rule, scalar_rule, unbroadcast

# add and subtract: constant partials, so no multiplication and no saved values
scalar_rule(np.add, 1, 1, second=(0, 0, 0))
scalar_rule(np.subtract, 1, -1, second=(0, 0, 0))
scalar_rule(np.negative, -1, second=0)
scalar_rule(np.positive, 1, second=0)


def _multiply_tx(g, y, xshape):
    return unbroadcast(g * y, xshape)


def _multiply_ty(g, x, yshape):
    return unbroadcast(g * x, yshape)


bilinear_rule(np.multiply, _multiply_tx, _multiply_ty)

scalar_rule(
    np.true_divide,
    lambda x, y, z: 1 / y,
    lambda x, y, z: -z / y,
    second=(0, lambda x, y, z: -1 / y**2, lambda x, y, z: 2 * z / y**2),
)


def _power_dx(x, y, z):
    # y * x**(y-1), written so that x == 0 with y >= 1 gives a finite value
    return y * np.power(x, y - 1)


def _power_dy(x, y, z):
    # log(x) * z; where z == 0 (x == 0, y > 0) the derivative in y is 0
    safe = np.where(x == 0, 1, x)
    return np.where(x == 0, 0, z * np.log(safe))


def _power_dxx(x, y, z):
    return y * (y - 1) * np.power(x, y - 2)


def _power_dxy(x, y, z):
    safe = np.where(x == 0, 1, x)
    return np.power(x, y - 1) * (1 + y * np.log(safe))


def _power_dyy(x, y, z):
    safe = np.where(x == 0, 1, x)
    return np.where(x == 0, 0, z * np.log(safe) ** 2)


scalar_rule(np.power, _power_dx, _power_dy, second=(_power_dxx, _power_dxy, _power_dyy))
scalar_rule(np.square, lambda x, y: 2 * x, second=2)
