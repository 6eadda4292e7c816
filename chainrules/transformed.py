"""The functions the transformations return (``grad(f)``, ``value_and_grad``,
``jacobian``, ``hessian``, ``checkpoint``): callables named after ``f``
that pickle as the transformation applied again to ``f``, so that
``multiprocessing.Pool(...).map(chainrules.grad(f), xs)`` works under the
spawn start method when ``f`` itself pickles (a module-level function).
"""

import functools
import pickle

from .fp_warnings import at_user_line

__all__ = ["Transformed"]


def _rebuild(transform, f, args, kwargs):
    return transform(f, *args, **kwargs)


class Transformed(functools.partial):
    """``transform(f, *args, **kwargs)`` as a callable object: calls run
    ``call``; ``__name__``, ``__qualname__``, ``__doc__`` and
    ``__wrapped__`` are ``f``'s; pickling stores ``(transform, f, args,
    kwargs)`` and rebuilds it on loading.

    A ``functools.partial`` of ``call`` (with NumPy's floating-point
    warnings at the user's line, ``fp_warnings``) without arguments of its
    own: calling it is a call of ``call`` with no Python frame between."""

    def __new__(cls, call, transform, f, args=(), kwargs=None, redirects=False):
        # redirects: ``call`` redirects NumPy's floating-point warnings
        # itself (as ``at_user_line`` does), in its own frame
        self = super().__new__(cls, call if redirects else at_user_line(call))
        self._recipe = (transform, f, tuple(args), dict(kwargs or {}))
        functools.update_wrapper(self, f, updated=())
        return self

    def __repr__(self):
        transform, f = self._recipe[:2]
        return f"<{transform.__name__} of {getattr(f, '__qualname__', f)!r}>"

    def __get__(self, obj, objtype=None):
        # a transformed function stored as a class attribute binds like one
        return self if obj is None else functools.partial(self, obj)

    def __reduce__(self):
        transform, f, args, kwargs = self._recipe
        name = getattr(f, "__qualname__", None) or repr(f)
        if "<lambda>" in name or "<locals>" in name:
            raise pickle.PicklingError(
                f"chainrules.{transform.__name__} of {name} cannot be pickled: {name} is a "
                "lambda or a function defined inside another function, which pickle "
                "cannot send to another process. Define it with def at the top level of "
                "a module and pass that function to chainrules." + transform.__name__)
        return _rebuild, (transform, f, args, kwargs)
