"""Differentiable ``scipy.spatial`` functions, under SciPy's paths:
``chainrules.scipy.spatial.distance`` (``pdist``, ``cdist``, ``squareform``
and the distances between two vectors); requires SciPy."""

from . import distance  # noqa: F401

__all__ = ["distance"]
