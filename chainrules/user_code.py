"""Where the user's code is on the stack: the first frame outside
chainrules (the core and the rule library), NumPy and SciPy. Anomaly mode
records it for each operation, and NumPy's floating-point warnings are
re-issued there. Only the file names of the frames decide, never how many
internal frames there are, so the answer does not depend on how the library
calls itself."""

import importlib.util
import os
import sys

__all__ = ["is_internal", "user_stacklevel"]


def _package_dir(name):
    """The directory of package ``name``, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # pragma: no cover - a broken install
        return None
    if spec is None or not spec.origin:
        return None
    return os.path.dirname(os.path.abspath(spec.origin))


def _internal_dirs():
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    # the rule library lives in its own directory (found without importing
    # it: the core never imports the rule library)
    for name in ("chainrules.rules", "numpy", "scipy"):
        d = _package_dir(name)
        if d is not None:
            dirs.add(d)
    return tuple(d + os.sep for d in dirs)


_dirs = None
_internal_code = {}  # code object -> bool, so each stack walk is cheap


def is_internal(code):
    """Whether a code object belongs to chainrules, NumPy or SciPy."""
    r = _internal_code.get(code)
    if r is None:
        global _dirs
        if _dirs is None:
            _dirs = _internal_dirs()
        fn = code.co_filename
        if not os.path.isabs(fn):
            fn = os.path.abspath(fn)
        r = fn.startswith(_dirs) or code.co_filename.startswith("<frozen")
        _internal_code[code] = r
    return r


def user_stacklevel():
    """The ``stacklevel`` with which ``warnings.warn``, called by the caller
    of this function, names the first frame outside chainrules, NumPy and
    SciPy (1, the caller itself, when the whole stack is internal)."""
    try:
        f = sys._getframe(2)
    except (AttributeError, ValueError):  # no frames to read
        return 1
    level = 2
    while f is not None:
        if not is_internal(f.f_code):
            return level
        f = f.f_back
        level += 1
    return 1
