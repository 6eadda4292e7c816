"""The disk cache of compiled kernels (``kernels``): each kernel's generated
source is written once to ``cache_dir()`` and imported from there, so that
numba's own cache (``cache=True``, beside the source) serves a second
process. A folder that cannot be written gives way to a temporary folder
for this process."""

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading

__all__ = ["cache_dir", "clear_cache", "module", "is_cached"]


def cache_dir():
    """The folder of generated kernels and numba's compiled code:
    ``CHAINRULES_CACHE_DIR``, else ``$XDG_CACHE_HOME/chainrules``, else
    ``~/.cache/chainrules``; kernels go in its ``kernels`` folder."""
    base = os.environ.get("CHAINRULES_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        base = os.path.join(xdg, "chainrules")
    return os.path.join(base, "kernels")


def clear_cache():
    """Remove the cached kernels from disk (those loaded stay in use)."""
    shutil.rmtree(cache_dir(), ignore_errors=True)


_loaded = {}  # source digest -> the compiled dispatcher (or the reason it failed)
_tmp = None


def _writable_dir():
    """The cache folder, made; a temporary one (this process only) when it
    cannot be written."""
    global _tmp
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
        probe = os.path.join(d, f".probe-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
        return d, True
    except OSError:
        if _tmp is None:
            _tmp = tempfile.mkdtemp(prefix="chainrules-kernels-")
        return _tmp, False


def module(source):
    """The module of ``source``, written to the cache folder (once: numba's
    cache checks the file's time stamp) and imported from there."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:24]
    hit = _loaded.get(digest)
    if hit is not None:
        return hit, True
    folder, persistent = _writable_dir()
    path = os.path.join(folder, f"k_{digest}.py")
    cached = os.path.exists(path) and os.path.isdir(os.path.join(folder, "__pycache__")) \
        and any(f.startswith(f"k_{digest}.") and f.endswith(".nbi")
                for f in os.listdir(os.path.join(folder, "__pycache__")))
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(tmp, "w") as fh:
            fh.write(source.replace("cache=CACHE", f"cache={persistent}"))
        os.replace(tmp, path)
    name = f"chainrules_kernel_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    # (in sys.modules: numba's cached code names the module it comes from)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _loaded[digest] = mod.kernel
    return mod.kernel, cached


def is_cached(source):
    """Whether numba's compiled code for ``source`` is on disk already."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:24]
    if digest in _loaded:
        return True
    folder = os.path.join(cache_dir(), "__pycache__")
    try:
        return any(f.startswith(f"k_{digest}.") and f.endswith(".nbi")
                   for f in os.listdir(folder))
    except OSError:
        return False


# -- per-region state ---------------------------------------------------------------------
