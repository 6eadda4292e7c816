"""SciPy's OpenBLAS thread pool while the rule library calls SciPy.

The NumPy and SciPy wheels each bundle an OpenBLAS with its own thread
pool, and after a call a pool's threads keep spinning for a while (about
0.1 s by default). Rules that follow NumPy's BLAS (the user's
``np.linalg.cholesky``, a matmul) with SciPy's (``solve_triangular``,
``trmm``, ``sygst``) then run with up to two spinning threads from the other
pool on a small machine's cores. ``one_thread(fn)`` runs ``fn`` with SciPy's
pool at one thread, restoring the number it had afterwards, so the rule
library's own SciPy calls never wake SciPy's worker threads: NumPy's pool
keeps the cores, at the number of threads the user gave it.

It does something only where SciPy's OpenBLAS is a library of its own
(``separate_pool()``): found among the loaded libraries by
``threadpoolctl`` when it is installed, else (on Linux) in
``/proc/self/maps``. With NumPy and SciPy on one BLAS (conda, a system
OpenBLAS) there is one pool and nothing to limit. ``set_enabled(False)``
switches it off; the environment variable
``CHAINRULES_SCIPY_BLAS_THREADS=keep`` does so at import.

The limit is process-wide while one of our calls runs (OpenBLAS has one
thread count per library): another thread's SciPy call at that moment runs
at one thread too. Calls from several threads share one limit: the first
to enter saves the user's number, the last to leave restores it.
"""

import ctypes
import functools
import os
import sys
import threading

from chainrules.opaque import WrappedNamespace

__all__ = ["one_thread", "LimitedNamespace", "set_enabled", "enabled", "separate_pool"]

# the functions' names in the OpenBLAS builds SciPy's wheels bundle:
# scipy-openblas32 (prefix), scipy-openblas64 (prefix and suffix), plain
_NAMES = (("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))

_ENABLED = os.environ.get("CHAINRULES_SCIPY_BLAS_THREADS", "").strip().lower() != "keep"
_LOCK = threading.Lock()
_depth = 0
_saved = 0


class _Pool:
    """get/set of one OpenBLAS library's thread count, by ctypes."""

    def __init__(self, path, get, put):
        self.path, self.get, self.put = path, get, put


def _openblas_paths():
    """The paths of the OpenBLAS libraries loaded in this process."""
    paths = _paths_by_threadpoolctl()
    return _paths_in_proc_maps() if paths is None else paths


def _paths_by_threadpoolctl():
    """threadpoolctl's list (every platform), or None without it."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    try:
        return [i["filepath"] for i in threadpoolctl.threadpool_info()
                if i.get("internal_api") == "openblas"]
    except Exception:  # pragma: no cover - a threadpoolctl we do not know
        return None


def _paths_in_proc_maps():
    """The libraries mapped into this process whose file name says
    OpenBLAS (Linux); [] elsewhere."""
    if not sys.platform.startswith("linux"):
        return []
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    p = parts[5].strip()
                    if "openblas" in os.path.basename(p).lower() and p not in paths:
                        paths.append(p)
    except OSError:  # pragma: no cover - no procfs
        return []
    return paths


def _owned_by(path, module):
    """Whether ``path`` is a library bundled with the package ``module``
    (inside it, or in the wheel's ``<name>.libs`` beside it)."""
    root = os.path.dirname(os.path.realpath(module.__file__))
    real = os.path.realpath(path)
    return (real.startswith(root + os.sep)
            or real.startswith(root + ".libs" + os.sep))


def _open(path):
    try:
        lib = ctypes.CDLL(path)
    except OSError:  # pragma: no cover - listed but not loadable
        return None
    for get_name, set_name in _NAMES:
        get, put = getattr(lib, get_name, None), getattr(lib, set_name, None)
        if get is not None and put is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            put.restype, put.argtypes = None, [ctypes.c_int]
            return _Pool(path, get, put)
    return None


@functools.cache
def separate_pool():
    """The OpenBLAS bundled with SciPy (a ``_Pool``: a library of its own,
    whatever NumPy's BLAS is), else None (SciPy on a shared or another
    BLAS): looked up once, after SciPy's linalg is loaded."""
    try:
        import scipy.linalg  # noqa: F401 - loads SciPy's BLAS
        import scipy
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return None
    mine = [p for p in _openblas_paths() if _owned_by(p, scipy)]
    return _open(mine[0]) if len(mine) == 1 else None


def set_enabled(flag):
    """Switch the limit on (the default) or off; returns the previous setting."""
    global _ENABLED
    old, _ENABLED = _ENABLED, bool(flag)
    return old


def enabled():
    return _ENABLED


def _enter(pool):
    global _depth, _saved
    with _LOCK:
        if _depth == 0:
            _saved = pool.get()
            if _saved > 1:
                pool.put(1)
        _depth += 1


def _leave(pool):
    global _depth
    with _LOCK:
        _depth -= 1
        if _depth == 0 and _saved > 1:
            pool.put(_saved)


def one_thread(fn):
    """``fn`` called with SciPy's OpenBLAS pool at one thread (see the
    module's docstring); plainly ``fn`` where there is no such pool."""
    @functools.wraps(fn)
    def limited(*args, **kwargs):
        pool = separate_pool() if _ENABLED else None
        if pool is None:
            return fn(*args, **kwargs)
        _enter(pool)
        try:
            return fn(*args, **kwargs)
        finally:
            _leave(pool)

    return limited


class LimitedNamespace(WrappedNamespace):
    """A module whose functions are called through ``one_thread``
    (``scipy.linalg`` for the rules); other attributes are the module's own."""

    def __init__(self, module):
        super().__init__(module, one_thread)
