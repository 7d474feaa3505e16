"""Tests of functrans/numpy/_contract.py: dot, matmul, vdot, inner, outer,
tensordot and einsum against NumPy, eagerly and traced.  Values are small
integers, so every dtype's result is exact and compared exactly."""

from __future__ import annotations

import string

import numpy as np
import pytest
from _numpy_checks import same
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
from functrans.backends.numpy import eval_jaxpr
from functrans.core import check_jaxpr
from functrans.errors import AxisError, ShapeError
from functrans.numpy import _contract as fc
from functrans.testing import check_grads

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
dtypes = st.sampled_from(DTYPES)


def values_of(dtype, shape):
    elements = st.booleans() if np.dtype(dtype) == np.bool_ else st.integers(-3, 3)
    return hnp.arrays(dtype, shape, elements=elements)


def assert_same(got, expected):
    assert type(got) is np.ndarray, type(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def check(f, np_f, *args):
    """``f(*args)`` equals ``np_f(*args)`` eagerly and through a checked Jaxpr."""
    expected = np.asarray(np_f(*args))
    assert_same(f(*args), expected)
    jaxpr = ft.make_jaxpr(f)(*args)
    check_jaxpr(jaxpr)
    assert_same(eval_jaxpr(jaxpr, *args)[0], expected)
    return jaxpr


def pair(data, shape_a, shape_b):
    return (data.draw(values_of(data.draw(dtypes), shape_a)),
            data.draw(values_of(data.draw(dtypes), shape_b)))


sides = st.integers(0, 3)

# -- dot, inner, outer, vdot ---------------------------------------------------------------


@given(st.data())
def test_dot(data):
    shape_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    k = shape_a[-1] if shape_a else data.draw(sides)
    rank_b = data.draw(st.integers(0, 3))
    rest = data.draw(hnp.array_shapes(min_dims=max(rank_b - 1, 0), max_dims=max(rank_b - 1, 0),
                                      min_side=0, max_side=3))
    if not shape_a:
        shape_b = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    elif rank_b == 0:
        shape_b = ()
    else:
        shape_b = rest[:-1] + (k,) + rest[-1:] if rank_b >= 2 else (k,)
    a, b = pair(data, shape_a, shape_b)
    check(fc.dot, np.dot, a, b)


@given(st.data())
def test_inner_outer_vdot(data):
    lead_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    lead_b = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    k = data.draw(sides)
    a, b = pair(data, lead_a + (k,), lead_b + (k,))
    check(fc.inner, np.inner, a, b)
    check(fc.outer, np.outer, a, b)
    check(fc.inner, np.inner, a[(0,) * a.ndim] if a.size else a, b)
    if a.dtype != np.complex128:
        check(fc.vdot, np.vdot, a, b.reshape(b.shape[::-1]) if a.size == b.size else a)


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(st.data())
def test_matmul(data):
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    m, k, n = data.draw(sides), data.draw(sides), data.draw(sides)
    vec_a, vec_b = data.draw(st.booleans()), data.draw(st.booleans())
    shape_a = (k,) if vec_a else batch.input_shapes[0] + (m, k)
    shape_b = (k,) if vec_b else batch.input_shapes[1] + (k, n)
    a, b = pair(data, shape_a, shape_b)
    check(fc.matmul, np.matmul, a, b)


def test_matmul_equations():
    def names(a, b):
        return [e.primitive.name for e in ft.make_jaxpr(fc.matmul)(a, b).eqns]

    assert names(np.ones((5, 2, 3)), np.ones((3, 4))) == ["dot_general"]
    assert names(np.ones((2, 3)), np.ones((5, 3, 4))) == ["dot_general", "transpose"]
    assert names(np.ones(3), np.ones((5, 3, 4))) == ["dot_general"]
    assert names(np.ones((5, 2, 3)), np.ones((5, 3, 4))) == ["dot_general"]
    assert names(np.ones((1, 2, 3)), np.ones((5, 3, 4))) == ["broadcast_in_dim", "dot_general"]


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(st.data())
def test_tensordot(data):
    shape_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    n = data.draw(st.integers(0, len(shape_a)))
    summed = data.draw(st.permutations(range(len(shape_a))))[:n]
    free_b = data.draw(hnp.array_shapes(min_dims=0, max_dims=4 - n, min_side=0, max_side=3))
    b_axes = data.draw(st.permutations(range(n + len(free_b))))[:n]
    shape_b = list(free_b)
    for ax_b, ax_a in sorted(zip(b_axes, summed)):
        shape_b.insert(ax_b, shape_a[ax_a])
    a, b = pair(data, shape_a, tuple(shape_b))
    axes = (list(summed), [ax - b.ndim if data.draw(st.booleans()) else ax for ax in b_axes])
    check(lambda a, b: fc.tensordot(a, b, axes), lambda a, b: np.tensordot(a, b, axes), a, b)
    tail = a.shape[len(a.shape) - n :]
    if tail == tuple(shape_b[:n]):
        check(lambda a, b: fc.tensordot(a, b, n), lambda a, b: np.tensordot(a, b, n), a, b)


# -- einsum --------------------------------------------------------------------------------------


@st.composite
def einsum_cases(draw):
    """A random einsum call: 1-3 operands over up to 5 labels, with repeated
    labels (diagonals), size-1 axes that broadcast, ``...`` axes, and an
    implicit or explicit output."""
    labels = string.ascii_letters[draw(st.integers(0, 20)) :][:5]
    sizes = {c: draw(st.integers(0, 3)) for c in labels}
    n = draw(st.integers(1, 3))
    ellipsis = draw(st.booleans())
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=2, max_side=3))
    terms, arrays = [], []
    for i in range(n):
        term = draw(st.lists(st.sampled_from(labels), max_size=4))
        shape = tuple(1 if sizes[c] and term.count(c) == 1 and draw(st.integers(0, 5)) == 0
                      else sizes[c] for c in term)
        if ellipsis:
            term, shape = ["..."] + term, batch.input_shapes[i] + shape
        terms.append("".join(term))
        arrays.append(draw(values_of(draw(dtypes), shape)))
    used = sorted(set("".join(terms)) - {"."})
    if draw(st.booleans()):
        return ",".join(terms), arrays
    out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
    if ellipsis:
        out.insert(draw(st.integers(0, len(out))), "...")
    return ",".join(terms) + "->" + "".join(out), arrays


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(einsum_cases())
def test_einsum(case):
    subscripts, arrays = case
    check(lambda *xs: fc.einsum(subscripts, *xs), lambda *xs: np.einsum(subscripts, *xs),
          *arrays)


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
        ("i...,...", [(3, 2), (2,)]),
        ("...i->i...", [(2, 3, 4)]),
        ("ii->i", [(3, 3)]),
        ("iji->j", [(2, 3, 2)]),
        ("ijij->ji", [(2, 3, 2, 3)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("i,j,k->", [(2,), (3,), (4,)]),
        ("", [()]),
        ("->", [()]),
        ("i,i", [(1,), (3,)]),
        ("ij,j->i", [(2, 3), (1,)]),
    ],
)
def test_einsum_cases(subscripts, shapes):
    arrays = [np.arange(np.prod(s), dtype=np.float64).reshape(s) for s in shapes]
    check(lambda *xs: fc.einsum(subscripts, *xs), lambda *xs: np.einsum(subscripts, *xs),
          *arrays)


def test_einsum_interleaved_form_and_dtype():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    assert_same(fc.einsum(a, [0, 1], b, [1, 2], [2, 0]), np.einsum(a, [0, 1], b, [1, 2], [2, 0]))
    assert_same(fc.einsum(a, [Ellipsis, 0]), np.einsum(a, [Ellipsis, 0]))
    assert_same(fc.einsum("ij->", a, dtype=np.float32, casting="unsafe"),
                np.einsum("ij->", a, dtype=np.float32, casting="unsafe"))
    with pytest.raises(TypeError, match=r"einsum: cannot cast .* int64 to dtype=float32"):
        fc.einsum("ij->", a, dtype=np.float32)
    bools = a > 2
    assert_same(fc.einsum("ij->i", bools), np.einsum("ij->i", bools))
    assert_same(fc.einsum("ij->j", a.astype(np.int32)), np.einsum("ij->j", a.astype(np.int32)))


def test_einsum_sublists_and_ellipses():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    same(fc.einsum(a, [0, 1, 2], b, [2, 3], [0, 1, 3]),
         np.einsum(a, [0, 1, 2], b, [2, 3], [0, 1, 3]))
    same(fc.einsum(a, [Ellipsis, 2], b, [2, 3], [Ellipsis, 3]),
         np.einsum(a, [Ellipsis, 2], b, [2, 3], [Ellipsis, 3]))
    same(fc.einsum("...ij,jk->...ik", a, b), np.einsum("...ij,jk->...ik", a, b))
    same(fc.einsum("i...->...", a), np.einsum("i...->...", a))
    same(fc.einsum(a, [0, 1, 2]), np.einsum(a, [0, 1, 2]))
    check_grads(lambda x, y: fc.einsum(x, [Ellipsis, 2], y, [2, 3], [Ellipsis, 3]), (a, b))


def test_einsum_jaxpr_is_one_contraction():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    jaxpr = ft.make_jaxpr(lambda a, b: fc.einsum("ij,jk->ik", a, b))(a, b)
    assert [e.primitive.name for e in jaxpr.eqns] == ["dot_general"]


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, shapes, error, match",
    [
        (fc.matmul, [(2, 3), (4, 5)], ShapeError,
         r"matmul: shapes \(2, 3\) and \(4, 5\) do not match.*size 3.*size 4"),
        (fc.matmul, [(2, 2, 3), (3, 3, 4)], ShapeError, r"matmul: shapes .* do not broadcast"),
        (fc.matmul, [(), (3,)], ShapeError, r"matmul: operand 0 is 0-d"),
        (fc.dot, [(2, 3), (4,)], ShapeError, r"dot: shapes \(2, 3\) and \(4,\) are not aligned"),
        (fc.inner, [(3,), (4,)], ShapeError, r"inner: shapes .* not aligned"),
        (fc.vdot, [(3,), (4,)], ShapeError, r"vdot: .* same number of elements"),
        (lambda a, b: fc.tensordot(a, b, 3), [(2, 3), (3, 4)], ValueError,
         r"cannot sum over 3 axes"),
        (lambda a, b: fc.tensordot(a, b, ([0], [5])), [(2, 3), (3, 4)], AxisError,
         r"tensordot: axis 5 is out of bounds"),
        (lambda a, b: fc.tensordot(a, b, ([0], [0])), [(2, 3), (3, 4)], ShapeError,
         r"not aligned: axis 0 of the first has size 2"),
        (lambda a, b: fc.einsum("ij,jk", a, b), [(2, 3), (4, 5)], ShapeError,
         r"subscript 'j' has sizes 3 and 4"),
        (lambda a, b: fc.einsum("ij,j", a), [(2, 3), ()], ValueError, r"name 2 operands"),
        (lambda a, b: fc.einsum("ijk,j", a, b), [(2, 3), (3,)], ValueError,
         r"operand 0 has 2 axes"),
        (lambda a, b: fc.einsum("ij,j->k", a, b), [(2, 3), (3,)], ValueError,
         r"output subscript 'k'.* is in no input"),
        (lambda a, b: fc.einsum("...j,j->j", a, b), [(2, 3), (3,)], ValueError,
         r"has no '...'"),
        (lambda a, b: fc.einsum("i1,i", a, b), [(2, 3), (2,)], ValueError,
         r"invalid subscript '1'"),
        (lambda a, b: fc.einsum("ii,i", a, b), [(2, 3), (2,)], ShapeError,
         r"subscript 'i' has sizes 2 and 3"),
    ],
)
def test_errors(f, shapes, error, match):
    args = [np.ones(s) for s in shapes]
    with pytest.raises(error, match=match):
        f(*args)
    with pytest.raises(error, match=match):
        ft.make_jaxpr(f)(*args)


def test_vdot_conjugates_a_complex_first_argument():
    a, b = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j])
    np.testing.assert_allclose(fc.vdot(a, b), np.vdot(a, b))
    np.testing.assert_allclose(fc.vdot(b.real, a), np.vdot(b.real, a))
