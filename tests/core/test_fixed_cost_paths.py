"""The shortcuts that keep a small gradient call cheap, against the general
paths they skip, value for value.

``fuse`` returns before reading its context for a tape of 0-d values and 1-d
ones too short to be a region's root; the rule of ``np.sum(x)`` of an ndarray
(``WholeSumRule``) pulls a 0-d cotangent back without its keyword call, and
a gradient's seed to one kept zero-stride array per shape and dtype; the
plain reverse loop adds a second cotangent into a new array itself; a
gradient call of one argument skips ``Tape.free``'s call. Each is compared
here with what the general path gives.
"""

from math import prod

import numpy as np
import pytest

import chainrules.fused_sweeps as fusion
from chainrules.graph import Tape
from chainrules.rule import node_ids
from chainrules.sweep_common import MULTI
from chainrules.tracing import Traced

DTYPES = [np.float64, np.float32, np.complex128]
SHAPES = [(), (0,), (1,), (3,), (2, 3)]


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    assert np.result_type(a) == np.result_type(b)
    assert np.shape(a) == np.shape(b)
    np.testing.assert_array_equal(a, b)


def _value(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v, dtype)


def _traced(x):
    tape = Tape(x)
    return tape, Traced(x, node_ids(0), tape)


# -- fuse on small tapes ---------------------------------------------------------
def _tape_of(shapes, multi=False):
    """A tape of elementwise rules, one per shape, each reading the last
    (broadcast against its own leaf), and a multi-output node first."""
    tape = Tape()
    outs = []
    prev = None
    if multi:
        a = Traced(np.eye(2), tape.leaf(np.eye(2)), tape)
        w, _ = np.linalg.eigh(a)
        prev = np.sum(w)
    for s in shapes:
        x = _value(s, np.float64)
        t = Traced(x, tape.leaf(x), tape)
        y = np.sin(t) * np.cos(t)
        prev = y if prev is None else y * np.sum(prev)
        outs.append(prev)
    tape.active = False
    return tape, (prev.node,)


def _reference(tape, second_order, staged):
    """Whether ``fuse`` looks for regions: the test before the shortcut."""
    m = fusion.MIN_SIZE_SECOND if second_order else fusion.MIN_SIZE
    if staged:
        m = min(m, fusion.MIN_SIZE_STAGED)
    return any(s is MULTI or prod(s) >= m for s in set(tape.shapes))


@pytest.mark.parametrize("shapes", [[(3,)], [()], [(4,), ()], [(5,)], [(2, 2)], [(1, 5)],
                                    [(3,)] * 12, [(3,), (4,)] * 10, [(2,), (5,)] * 10,
                                    [(0,)], [(0, 7)]])
@pytest.mark.parametrize("sizes", [(4, 4, 4), (5, 2, 100), (1, 1, 1), (0, 0, 0),
                                   (2, 3, 9), (100, 100, 4)])
@pytest.mark.parametrize("multi", [False, True])
def test_fuse_looks_for_regions_when_a_node_may_be_a_root(shapes, sizes, multi, monkeypatch):
    monkeypatch.setattr(fusion, "MIN_SIZE", sizes[0])
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", sizes[1])
    monkeypatch.setattr(fusion, "MIN_SIZE_STAGED", sizes[2])
    seen = []
    find = fusion.find_regions
    monkeypatch.setattr(fusion, "find_regions",
                        lambda *a, **k: seen.append(1) or find(*a, **k))
    for second_order in (False, True):
        for staged in (False, True):
            tape, outs = _tape_of(shapes, multi)
            seen.clear()
            if staged:
                with fusion.recording():
                    fusion.fuse(tape, outs, second_order=second_order)
            else:
                fusion.fuse(tape, outs, second_order=second_order)
            assert bool(seen) == _reference(tape, second_order, staged), (second_order,
                                                                           staged)


def test_fuse_on_a_long_tape_of_small_values_fuses_nothing(monkeypatch):
    called = []
    monkeypatch.setattr(fusion, "find_regions", lambda *a, **k: called.append(1) or [])
    tape, outs = _tape_of([(16,)] * 40)
    assert len(tape.shapes) > fusion._FEW_NODES
    assert fusion.fuse(tape, outs) == 0 and not called
    monkeypatch.setattr(fusion, "MIN_SIZE", 16)
    fusion.fuse(tape, outs)
    assert called


def test_fused_gradients_are_found_from_the_threshold(monkeypatch):
    # a region is fused at MIN_SIZE exactly, and not one element below
    monkeypatch.setattr(fusion, "MIN_SIZE", 8)
    f = lambda x: np.sum(np.sin(x) * np.cos(x) * x)  # noqa: E731
    for n, fused in ((7, 0), (8, 1)):
        tape, t = _traced(np.linspace(0.1, 1.0, n))
        out = f(t)
        tape.active = False
        assert (fusion.fuse(tape, (out.node,)) > 0) == bool(fused), n
