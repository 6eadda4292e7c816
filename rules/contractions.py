"""Contractions: matmul (1-D, 2-D and batched), dot."""

import numpy as np

from chainrules.derived import bilinear_rule, unbroadcast

from ._util import ndim_of


def _matmul_tx(g, y, xshape):
    xnd, ynd = len(xshape), ndim_of(y)
    y2, g2 = y, g
    if ynd == 1:
        y2 = np.reshape(y, (-1, 1))
        g2 = np.expand_dims(g2, -1)
    if xnd == 1:
        g2 = np.expand_dims(g2, -2)
    gx = np.matmul(g2, np.swapaxes(y2, -1, -2))
    if xnd == 1:
        return np.reshape(unbroadcast(gx, (1,) + xshape), xshape)
    return unbroadcast(gx, xshape)


def _matmul_ty(g, x, yshape):
    xnd, ynd = ndim_of(x), len(yshape)
    x2, g2 = x, g
    if xnd == 1:
        x2 = np.reshape(x, (1, -1))
    if ynd == 1:
        g2 = np.expand_dims(g2, -1)
    if xnd == 1:
        g2 = np.expand_dims(g2, -2)
    gy = np.matmul(np.swapaxes(x2, -1, -2), g2)
    if ynd == 1:
        return np.reshape(unbroadcast(gy, yshape + (1,)), yshape)
    return unbroadcast(gy, yshape)


bilinear_rule(np.matmul, _matmul_tx, _matmul_ty)
