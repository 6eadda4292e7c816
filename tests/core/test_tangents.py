import dataclasses

import numpy as np
import pytest

from chainrules import pytree
from chainrules.tangents import (NoTangent, ZeroTangent, add, from_vector, inner,
                                 random_like, scale, to_vector, zeros_like)


def test_singletons():
    assert ZeroTangent() is ZeroTangent()
    assert NoTangent() is NoTangent()
    assert ZeroTangent() is not NoTangent()
    assert repr(ZeroTangent()) == "ZeroTangent()"


def test_zero_is_free_in_arithmetic():
    a = np.array([1.0, 2.0])
    z = ZeroTangent()
    assert (z + a) is a and (a + z) is a
    assert (z * a) is z and (a * z) is z and (3.0 * z) is z
    assert -z is z
    assert add(z, a) is a and add(a, z) is a and add(z, z) is z


def test_no_tangent_adds_as_zero():
    # as the engine accumulates it: a cotangent added to "no derivative" is
    # that cotangent (ChainRulesCore's NoTangent() + b == b)
    a = np.ones(2)
    assert add(NoTangent(), a) is a and add(a, NoTangent()) is a
    assert (NoTangent() + a) is a and (a + NoTangent()) is a
    assert add(NoTangent(), NoTangent()) is NoTangent()
    assert add(NoTangent(), ZeroTangent()) is NoTangent()
    assert add(ZeroTangent(), NoTangent()) is NoTangent()
    assert (NoTangent() * a) is NoTangent() and -NoTangent() is NoTangent()
    assert (NoTangent() - a == -a).all() and (a - NoTangent()) is a


def test_add_scale_inner_arrays_and_scalars():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_array_equal(add(a, b), [4.0, 1.0])
    np.testing.assert_array_equal(scale(a, 2.0), [2.0, 4.0])
    assert inner(a, b) == 1.0
    assert inner(2.0, 3.0) == 6.0
    # the real dual pairing: Re(sum(a * b)), no conjugate
    assert inner(1 + 2j, 3 - 1j) == pytest.approx(5.0)
    assert inner(ZeroTangent(), a) == 0.0


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


def test_pytree_algebra():
    t1 = {"a": np.ones(2), "b": (np.float64(2.0), [np.zeros((1, 2))])}
    t2 = {"a": np.full(2, 3.0), "b": (np.float64(1.0), [np.ones((1, 2))])}
    s = add(t1, t2)
    np.testing.assert_array_equal(s["a"], [4.0, 4.0])
    assert s["b"][0] == 3.0
    np.testing.assert_array_equal(s["b"][1][0], [[1.0, 1.0]])
    assert inner(t1, t2) == pytest.approx(6.0 + 2.0 + 0.0)
    p = Params(np.array([1.0, 2.0]), 3.0)
    q = scale(p, 2.0)
    assert isinstance(q, Params) and q.b == 6.0


def test_zeros_like_and_integers():
    assert zeros_like(np.arange(3)) is NoTangent()
    assert zeros_like(3) is NoTangent()
    assert zeros_like(True) is NoTangent()
    z = zeros_like(np.ones((2, 2), np.float32))
    assert z.dtype == np.float32 and not z.any()


def test_random_like_dtypes():
    rng = np.random.default_rng(0)
    r = random_like(np.ones(3, np.float32), rng)
    assert r.dtype == np.float32 and r.shape == (3,)
    c = random_like(np.ones(2, np.complex128), rng)
    assert c.dtype == np.complex128 and np.all(c.imag != 0)
    assert random_like(np.arange(2), rng) is NoTangent()


def test_vector_roundtrip():
    t = {"x": np.array([[1.0, 2.0]]), "z": np.array([1 + 2j]), "s": 4.0}
    v, rebuild = to_vector(t)
    assert v.dtype == np.float64
    np.testing.assert_array_equal(v, [1.0, 2.0, 1.0, 2.0, 4.0])
    back = rebuild(v * 2)
    np.testing.assert_array_equal(back["x"], [[2.0, 4.0]])
    assert back["z"][0] == 2 + 4j and back["s"] == 8.0
    again = from_vector(v, t)
    np.testing.assert_array_equal(again["x"], t["x"])


def test_pytree_flatten_unflatten_namedtuple_and_dataclass():
    from collections import namedtuple

    P = namedtuple("P", "a b")
    tree = [P(1, {"k": 2}), Params(np.zeros(1), 5.0), None]
    leaves, td = pytree.flatten(tree)
    assert leaves[:2] == [1, 2] and leaves[-1] is None
    back = pytree.unflatten(td, leaves)
    assert isinstance(back[0], P) and back[0].b == {"k": 2}
    assert isinstance(back[1], Params) and back[1].b == 5.0
