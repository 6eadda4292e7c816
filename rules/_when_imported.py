"""Run a function once a module has been imported, without importing it.

Rule families for a SciPy subpackage register when that subpackage is
imported: a user can only call its functions after importing it, and
``import chainrules`` then pays nothing for subpackages a program never
uses. ``when_imported(name, callback)`` calls ``callback(module)`` at once
when ``name`` is loaded, else right after its import has run. The finder it
puts first on ``sys.meta_path`` finds nothing itself: for a module waited
for it asks the other finders, wraps the loader's ``exec_module`` for that
one run, and leaves the path when nothing is waited for any more. The
module's spec and loader stay its own. A spec found without being run
(``importlib.util.find_spec``) leaves the finder in place for the import
that follows.
"""

import sys
import warnings

__all__ = ["when_imported", "waiting"]

_waiting = {}  # module name -> [(callback, what the callback makes work)]


def _loaded(name):
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def _fire(name, module):
    for callback, what in _waiting.pop(name, ()):
        try:
            callback(module)
        except Exception as exc:  # never fail the module's own import
            warnings.warn(f"chainrules could not register {what} ({exc!r}): {name} will "
                          "refuse traced values", RuntimeWarning, stacklevel=3)
    if not _waiting and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


class _WhenImported:
    """The finder of ``sys.meta_path`` (see the module docstring)."""

    def find_spec(self, name, path=None, target=None):
        if name not in _waiting:
            return None
        for finder in sys.meta_path:
            find = None if finder is self else getattr(finder, "find_spec", None)
            spec = None if find is None else find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            try:
                run(module)
            finally:
                vars(loader).pop("exec_module", None)
            _fire(name, module)

        try:
            loader.exec_module = exec_module
        except AttributeError:  # a loader without instance attributes: no hook
            pass
        return spec


_FINDER = _WhenImported()


def when_imported(name, callback, what):
    """Call ``callback(module)`` for module ``name`` now if it is loaded, else
    once it is imported; ``what``: what the callback registers (named in the
    warning if it fails)."""
    module = _loaded(name)
    if module is not None:
        callback(module)
        return
    _waiting.setdefault(name, []).append((callback, what))
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def waiting():
    """The names of the modules waited for."""
    return sorted(_waiting)
