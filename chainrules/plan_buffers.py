"""Buffers a plan keeps between its replays.

A replay makes the same large intermediate arrays at every call, and the
C library's allocator gives their memory back to the system when they are
freed (glibc trims the heap's top and unmaps large blocks), so every call
pays page faults on fresh memory: on a 2-core virtual machine about 2 us
a page, more than the arithmetic on it (Rosenbrock's gradient at 1e5
elements: 1,100 faults and 2.7 ms a replay, against 0.33 ms when the
allocator keeps its memory). A plan therefore keeps, per thread, the
arrays of its *private* large values, those no result of the plan can
reach (not a result, nor read by a step whose result may be a view of it
and reaches one), and later replays compute into them:

* a ufunc call on arrays (``out=`` the array its first replay made);
* a fused region's program (``kernels.run`` with ``kept=(store, step,
  private)``: its private results into the arrays kept for them, its
  intermediates from a scratch list that stays with the plan).

Only values of at least ``KEEP_MIN_BYTES`` are kept: smaller ones come
from the allocator's free lists without a fault. A result handed to the
user is never a kept array, so a later call never writes one a caller
holds. The arrays are per thread (``threading.local``), so two threads
replaying one plan never share one, and a replay of the plan inside its
own replay on one thread (a callback calling it again) takes fresh arrays.
The values computed are the same, bit for bit: the same NumPy calls on
the same operands in the same dtypes, only the memory they write differs.
A plan's kept arrays live as long as the plan (``clear_cache`` of the
jitted function frees them) and the thread. A plan keeps nothing in its
first ``KEEP_AFTER`` replays (a signature called a few times holds no
memory), and all plans' kept arrays together hold at most
``KEEP_BUDGET_BYTES`` (1 GiB; ``held_bytes()`` says how much): beyond it a
replay makes its arrays as it would keeping none, so a function staged for
many signatures (shapes) does not hold an intermediate set for each.
"""

import operator
import os
import threading
import weakref
from math import prod

import numpy as np

from .plan_passes import _FRESH, _defines, _uses
from .staging import Ref

__all__ = ["KEEP_MIN_BYTES", "KEEP_AFTER", "KEEP_BUDGET_BYTES", "keep_buffers", "Kept",
           "held_bytes"]

#: the smallest value a plan keeps an array for between replays
KEEP_MIN_BYTES = 1 << 16
#: the replays of a plan (all threads) before it keeps arrays: a signature
#: called a few times holds no memory
KEEP_AFTER = 4
#: the most memory all plans' kept arrays hold together (every thread):
#: beyond it, a replay makes new arrays as it would without keeping
KEEP_BUDGET_BYTES = 1 << 30

#: whether this process's allocator keeps freed memory for reuse (glibc's
#: trim and mmap thresholds both set, as ``benchmarks/`` sets them: read
#: by glibc at start-up): then a region's whole run on NumPy computes by
#: its generated code, which makes new arrays (no fault to save) at about
#: 2 us less per step than the interpreted program that can take kept
#: arrays for its intermediates (Rosenbrock's HVP at 1e5 without numba:
#: 275 against 347 us)
ALLOCATOR_KEEPS_MEMORY = bool(os.environ.get("MALLOC_TRIM_THRESHOLD_")
                              and os.environ.get("MALLOC_MMAP_THRESHOLD_"))

_held = [0]  # the bytes kept arrays hold now
_held_lock = threading.Lock()


def held_bytes():
    """The memory the kept arrays of all live plans hold, in bytes."""
    return _held[0]


def _refund(held):
    with _held_lock:
        _held[0] -= held[0]
        held[0] = 0


class _Store:
    __slots__ = ("bufs", "scratch", "busy", "held", "__weakref__")

    def __init__(self):
        self.bufs = {}  # (step key, result position) -> array
        self.scratch = {}  # step key -> (list of arrays, bytes charged)
        self.busy = False
        self.held = [0]  # the bytes charged to this store
        weakref.finalize(self, _refund, self.held)

    def charge(self, nbytes):
        """Whether ``nbytes`` more may be kept (``KEEP_BUDGET_BYTES``);
        charged when they may (a negative count refunds)."""
        with _held_lock:
            if nbytes > 0 and _held[0] + nbytes > KEEP_BUDGET_BYTES:
                return False
            _held[0] += nbytes
            self.held[0] += nbytes
        return True


class Kept:
    """The stores of one plan's kept arrays, one per thread."""

    __slots__ = ("_local", "calls")

    def __init__(self):
        self._local = threading.local()
        self.calls = 0  # (replays so far, up to KEEP_AFTER: not locked)

    def acquire(self):
        """This thread's store, marked in use; None while the plan has had
        at most ``KEEP_AFTER`` replays, and when a replay of the plan on
        this thread is using it (that replay's arrays are live)."""
        if self.calls <= KEEP_AFTER:
            self.calls += 1
            return None
        loc = self._local
        store = getattr(loc, "store", None)
        if store is None:
            store = loc.store = _Store()
        elif store.busy:
            return None
        store.busy = True
        return store

    def wrap(self, fn):
        """``fn`` (a plan's code, taking the store after its inputs) as a
        function of the inputs alone."""
        acquire = self.acquire

        def run(*dynamic):
            store = acquire()
            try:
                return fn(*dynamic, store)
            finally:
                if store is not None:
                    store.busy = False
        return run


def kept_call(store, key, fn, *args):
    """``fn(*args)`` (a ufunc) into the array this step made at an earlier
    replay on this thread, if any."""
    if store is None:
        return fn(*args)
    b = store.bufs.get(key)
    if b is not None:
        return fn(*args, out=b)
    r = fn(*args)
    if type(r) is np.ndarray and r.base is None and store.charge(r.nbytes):
        store.bufs[key] = r
    return r


class Keep:
    """What a region's run writes into (``kernels.run``'s ``kept``: the
    replay's store, the step's key, the positions ``private``): the arrays
    of the results at positions ``private``, from earlier replays, and a
    scratch list for its intermediates."""

    __slots__ = ("store", "key", "private")

    def __init__(self, store, key, private):
        self.store, self.key, self.private = store, key, private

    def empty(self, j, shape, dtype, order="C"):
        """An array for result ``j``: the one kept for it when it fits,
        else a new one (kept when ``j`` is private)."""
        if j not in self.private:
            return np.empty(shape, dtype, order=order)
        k = (self.key, j)
        store = self.store
        b = store.bufs.get(k)
        if b is None or b.shape != shape or b.dtype != dtype or not (
                b.flags.f_contiguous if order == "F" else b.flags.c_contiguous):
            if b is not None:
                del store.bufs[k]
                store.charge(-b.nbytes)
            b = np.empty(shape, dtype, order=order)
            if store.charge(b.nbytes):
                store.bufs[k] = b
        return b

    @staticmethod
    def fresh():
        """Whether a whole run on NumPy should make new arrays rather than
        take kept ones (``ALLOCATOR_KEEPS_MEMORY``)."""
        return ALLOCATOR_KEEPS_MEMORY

    @property
    def scratch(self):
        """The list a whole run takes its intermediates from and gives them
        back to (``settle`` after the run)."""
        s = self.store.scratch.get(self.key)
        if s is None:
            s = self.store.scratch[self.key] = ([], 0)
        return s[0]

    def settle(self):
        """After a run with ``scratch``: its arrays charged, or dropped when
        the budget has no room for them."""
        store = self.store
        s = store.scratch.get(self.key)
        if s is None:
            return
        pool, charged = s
        now = sum(a.nbytes for a in pool)
        if store.charge(now - charged):
            store.scratch[self.key] = (pool, now)
        else:
            store.charge(-charged)
            del store.scratch[self.key]


def escaping(steps, outputs, is_region_call):
    """The values whose memory a result of the plan may share: the results,
    and every value read by a step (other than a call known to make new
    arrays) whose results are escaping. ``is_region_call(step)``: whether
    a step runs a fused region's program (a scatter's too), whose results
    are new arrays but for those that are one of its values."""
    esc = set()
    _uses(outputs, esc)
    for step in reversed(steps):
        if step[0] != "call":
            continue
        _, fn, args, kwargs, out = step[:5]
        made = set()
        _defines(out, made)
        if not (made & esc):
            if out is None and not (isinstance(fn, np.ufunc) or fn is operator.setitem
                                    or _is_ufunc_at(fn)):
                # a call made for its effect (a write): what it reads may
                # be kept by what it writes into
                _uses(args, esc)
                _uses(kwargs, esc)
            continue
        if is_region_call(step):
            if out is None:  # (its results added into an array of its values)
                continue
            program, env = args[0], args[1]
            # a region's result given as one of its values is that value
            for j, kind in enumerate(program.kinds):
                if kind == "var" and j < len(out) and type(out[j]) is Ref \
                        and out[j].i in esc:
                    v = env.get(program.reads[j][0])
                    if type(v) is Ref:
                        esc.add(v.i)
            continue
        if "out" not in kwargs and (isinstance(fn, np.ufunc) or fn in _FRESH):
            continue  # (a new array: a reduction's axis, keepdims, dtype change nothing)
        _uses(args, esc)
        _uses(kwargs, esc)
    return esc


def _is_ufunc_at(fn):
    # ``np.add.at`` and its kind: they add the values read into their target
    return getattr(fn, "__name__", None) == "at" and isinstance(
        getattr(fn, "__self__", None), np.ufunc)


def keep_buffers(steps, inputs, outputs, meta, is_region_call):
    """``(steps, store)``: the steps with the calls that make private values
    of at least ``KEEP_MIN_BYTES`` writing into kept arrays, and the index
    of the value that holds the replay's store (an input after the plan's
    own; None when nothing is kept)."""
    least = KEEP_MIN_BYTES
    big = {i for i, (dtype, shape) in meta.items()
           if shape and prod(shape) * dtype.itemsize >= least}
    if not big:
        return steps, None
    esc = None
    new = []
    store = None
    for k, step in enumerate(steps):
        if step[0] == "call" and len(step) == 5:
            _, fn, args, kwargs, out = step
            made = set()
            _defines(out, made)
            region = is_region_call(step)
            if region:  # (its results: the broadcast shape of its values)
                made = set()
                _uses(args[1], made)
            if made & big:
                if esc is None:
                    esc = escaping(steps, outputs, is_region_call)
                    store = 1 + max([max(inputs, default=-1)] + [
                        i for s in steps if s[0] == "call" for i in _all_refs(s)])
                s = Ref(store)
                if (type(out) is Ref and out.i not in esc and isinstance(fn, np.ufunc)
                        and not kwargs and _plain_operands(args, meta)):
                    new.append(("call", kept_call, (s, (k, 0), fn) + tuple(args), {}, out))
                    continue
                if region and (out is None or type(out) in (tuple, list)):
                    program = args[0]
                    # (a scatter's or grid's results summed into an array)
                    inner = args[3].skip if len(args) > 3 else ()
                    outs = [None] * len(program.outs) if out is None else out
                    ok = [program.kinds[j] == "step" and (
                        j in inner or o is None or type(o) is Ref and o.i not in esc)
                          for j, o in enumerate(outs)]
                    # (results of one slot are one array: private if all are)
                    slots = {}
                    for j, o in enumerate(ok):
                        slots[program.outs[j]] = slots.get(program.outs[j], True) and o
                    private = frozenset(j for j, o in enumerate(ok)
                                        if o and slots[program.outs[j]])
                    if private and _plain_env(args[1], meta):
                        new.append(("call", fn, args, {"kept": (s, k, private)}, out))
                        continue
        new.append(step)
    if store is None or len(new) == len(steps) and all(a is b for a, b in zip(new, steps)):
        return steps, None
    return new, store


def _all_refs(step):
    acc = set()
    _uses(step[2], acc)
    _uses(step[3], acc)
    _defines(step[4], acc)
    return acc


def _plain_operands(args, meta):
    """Operands the recording knows (their dtypes and shapes), none a
    container: the call makes an array of one dtype and shape at every
    replay (NumPy 2 picks dtypes by dtypes alone, NEP 50)."""
    for a in args:
        t = type(a)
        if t is Ref:
            m = meta.get(a.i)
            if m is None:
                return False
        elif t in (tuple, list, dict):
            return False
    return True


def _plain_env(env, meta):
    for v in env.values():
        if type(v) is Ref:
            m = meta.get(v.i)
            if m is None:
                return False
    return True
