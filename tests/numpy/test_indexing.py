"""Tests of functrans/numpy/_indexing.py: getitem, x.at[...] updates and take,
eagerly and traced, against NumPy on random index tuples."""

from __future__ import annotations

import numpy as np
import pytest
from _bits import bits_equal
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
from functrans.backends.numpy import eval_jaxpr
from functrans.core import check_jaxpr
from functrans.errors import ConcretizationError
from functrans.numpy._indexing import IndexUpdateHelper, getitem, take

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def assert_same(got, expected):
    assert type(got) is np.ndarray, type(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def values_of(dtype, shape):
    elements = st.booleans() if dtype == np.bool_ else st.integers(-9, 9)
    return hnp.arrays(dtype, shape, elements=elements)


# -- a strategy for NumPy index tuples ---------------------------------------------


class Traced:
    """An integer index array that the traced test passes as a Jaxpr input."""

    def __init__(self, value):
        self.value = value


def _entry(draw, d: int, adv_shape, allow_mask: bool):
    kinds = ["slice"] + (["int", "array", "array"] if d else [])
    kind = draw(st.sampled_from(kinds + (["mask"] if allow_mask else [])))
    if kind == "int":
        return draw(st.integers(-d, d - 1))
    if kind == "slice":
        bound = st.none() | st.integers(-d - 2, d + 2)
        step = st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])
        return slice(draw(bound), draw(bound), draw(step))
    if kind == "mask":
        return draw(hnp.arrays(np.bool_, (d,)))
    # A suffix of the shared shape with some axes set to 1 always broadcasts.
    shape = adv_shape[draw(st.integers(0, len(adv_shape))) :]
    shape = tuple(draw(st.sampled_from([n, 1])) for n in shape)
    dtype = draw(st.sampled_from([np.int64, np.int32, np.intp]))
    arr = draw(hnp.arrays(dtype, shape, elements=st.integers(-d, d - 1)))
    return Traced(arr) if draw(st.booleans()) else arr


def _is_int_array(e) -> bool:
    return isinstance(e, Traced) or (isinstance(e, np.ndarray) and e.dtype != np.bool_)


@st.composite
def index_cases(draw, dtypes=DTYPES):
    """(x, idx): an array and a valid NumPy index into it.  ``idx`` mixes ints,
    slices with any step, None, Ellipsis, integer arrays (some marked Traced)
    and at most one boolean mask (then no integer arrays)."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    x = draw(values_of(draw(st.sampled_from(dtypes)), shape))
    ndim = len(shape)
    consumed = draw(st.integers(0, ndim))
    ellipsis = draw(st.booleans())
    before = draw(st.integers(0, consumed)) if ellipsis else consumed
    axes = list(range(before)) + list(range(ndim - (consumed - before), ndim))
    adv_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    mask_axis = draw(st.sampled_from(axes)) if axes and draw(st.integers(0, 4)) == 0 else None
    entries = [_entry(draw, shape[a], adv_shape, a == mask_axis) for a in axes]
    if mask_axis is not None:
        entries = [slice(None) if _is_int_array(e) else e for e in entries]
    if ellipsis:
        entries.insert(before, Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    if len(entries) == 1 and draw(st.booleans()):
        return x, entries[0]  # a bare entry, not a tuple
    return x, tuple(entries)


def concrete(idx):
    if isinstance(idx, tuple):
        return tuple(concrete(e) for e in idx)
    return idx.value if isinstance(idx, Traced) else idx


def traced_parts(idx):
    """The Traced arrays of ``idx`` and a function rebuilding ``idx`` from
    (tracers standing for) them."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    arrays = [e.value for e in entries if isinstance(e, Traced)]

    def rebuild(tracers):
        it = iter(tracers)
        out = tuple(next(it) if isinstance(e, Traced) else e for e in entries)
        return out if isinstance(idx, tuple) else out[0]

    return arrays, rebuild


def run_traced(f, *args):
    jaxpr = ft.make_jaxpr(f)(*args)
    check_jaxpr(jaxpr)
    return jaxpr, eval_jaxpr(jaxpr, *args)


# -- getitem -------------------------------------------------------------------------


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(index_cases())
def test_getitem_matches_numpy(case):
    x, idx = case
    expected = np.asarray(x[concrete(idx)])
    assert_same(getitem(x, concrete(idx)), expected)
    arrays, rebuild = traced_parts(idx)
    _, (out,) = run_traced(lambda x, *arrs: getitem(x, rebuild(arrs)), x, *arrays)
    assert_same(out, expected)


@pytest.mark.parametrize(
    "idx, n_eqns",
    [
        ((slice(None),), 0),
        ((Ellipsis,), 0),
        ((), 0),
        ((slice(1, 3),), 1),
        ((slice(None, None, -1),), 1),
        ((0,), 2),
        ((None,), 1),
        ((0, None), 1),  # slice already has the shape (1, 5)
        ((slice(3, 0, -2), 1), 3),
        (([0, 2],), 1),
    ],
)
def test_getitem_jaxprs_are_short(idx, n_eqns):
    x = np.arange(20.0).reshape(4, 5)
    jaxpr = ft.make_jaxpr(lambda x: getitem(x, idx))(x)
    assert len(jaxpr.eqns) == n_eqns, jaxpr
    assert_same(eval_jaxpr(jaxpr, x)[0], np.asarray(x[idx]))


@pytest.mark.parametrize(
    "shape, idx",
    [
        ((3,), True),
        ((3,), False),
        ((2, 3), (Ellipsis, True)),
        ((3, 4, 5), (np.array([1, 0]), True, 2)),
        ((3, 4, 5), (slice(None), np.bool_(False), [], 0)),
        ((3, 4), np.array(2)),
        ((3, 4), (np.int32(-1), [])),
        ((2, 3, 4), np.arange(24).reshape(2, 3, 4) > 10),
        ((2, 3, 4), (np.ones((2, 3), bool), 0)),
        ((4, 3, 5), (slice(None), np.array([[True, False, True, True, False]] * 3))),
        ((2, 3, 4), (slice(None), [0, 1], Ellipsis, [1, 0])),  # empty ... splits them
        ((2, 3), (None, [1], Ellipsis, 0)),
    ],
)
def test_getitem_special_entries(shape, idx):
    x = np.arange(np.prod(shape)).reshape(shape)
    expected = np.asarray(x[idx])
    assert_same(getitem(x, idx), expected)
    _, (out,) = run_traced(lambda x: getitem(x, idx), x)
    assert_same(out, expected)


def test_getitem_traced_scalar_index():
    x = np.arange(12.0).reshape(3, 4)
    for i in (np.int64(-1), np.int32(2)):
        _, (out,) = run_traced(lambda x, i: getitem(x, (slice(None), i)), x, i)
        assert_same(out, x[:, i])


def test_getitem_value_carrying_mask_specialises():
    from functrans.core import trace_to_jaxpr

    x = np.arange(5.0)
    closed, _, concretized = trace_to_jaxpr(
        lambda x, m: [getitem(x, m)], [x, x > 2], concrete=True
    )
    assert concretized
    assert_same(eval_jaxpr(closed, x, x > 2)[0], x[x > 2])


# -- errors -----------------------------------------------------------------------------


def test_traced_boolean_mask_is_refused():
    x = np.arange(5.0)
    with pytest.raises(ConcretizationError, match=r"boolean mask.*traced.*where"):
        ft.make_jaxpr(lambda x, m: getitem(x, m))(x, x > 2)


@pytest.mark.parametrize(
    "idx, match",
    [
        ((3,), r"index 3 is out of bounds for axis 0 with size 3"),
        ((0, -6), r"index -6 is out of bounds for axis 1 with size 5"),
        (([0, 7],), r"index 7 is out of bounds for axis 0 with size 3"),
        ((0, 0, 0), r"too many indices for array: array is 2-dimensional, but 3"),
        ((Ellipsis, Ellipsis), r"single ellipsis"),
        ((np.ones(2, bool),), r"boolean index did not match.*axis 0.*size of axis is 3"),
        ((1.5,), r"only integers, slices"),
        (([0, 1], [[0], [1], [2]], 0), r"too many indices"),
        (([0, 1], [0, 1, 2]), r"shape mismatch.*\(2,\) \(3,\)"),
    ],
)
def test_index_errors(idx, match):
    x = np.zeros((3, 5))
    with pytest.raises(IndexError, match=match):
        getitem(x, idx)
    with pytest.raises(IndexError, match=match):
        ft.make_jaxpr(lambda x: getitem(x, idx))(x)


def test_traced_float_index_is_refused():
    with pytest.raises(IndexError, match=r"integer or boolean dtype.*f64\[2\]"):
        ft.make_jaxpr(lambda x, i: getitem(x, i))(np.zeros(3), np.zeros(2))


# -- x.at[idx] ---------------------------------------------------------------------------


def _unique_targets(x, idx) -> bool:
    positions = np.arange(x.size).reshape(x.shape)[idx]
    return np.unique(positions).size == np.size(positions)


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(index_cases(), st.sampled_from(["set", "add", "mul", "min", "max"]), st.data())
def test_at_matches_numpy(case, mode, data):
    x, idx = case
    cidx = concrete(idx)
    shape = np.shape(x[cidx])
    if mode == "set" and not _unique_targets(x, cidx):
        mode = "add"
    shape = shape[data.draw(st.integers(0, len(shape))) :]  # values may broadcast
    v = data.draw(values_of(x.dtype, shape))
    expected = x.copy()
    if mode == "set":
        expected[cidx] = v
    else:
        UFUNC_AT[mode].at(expected, cidx, v)
    got = getattr(IndexUpdateHelper(x)[cidx], mode)(v)
    assert_same(got, expected)
    arrays, rebuild = traced_parts(idx)
    _, (out,) = run_traced(
        lambda x, v, *arrs: getattr(IndexUpdateHelper(x)[rebuild(arrs)], mode)(v), x, v, *arrays
    )
    assert_same(out, expected)


def test_at_never_mutates_and_get_reads():
    x = np.arange(6.0)
    before = x.copy()
    y = IndexUpdateHelper(x)[1:3].set(0.0)
    assert_same(x, before)
    assert_same(y, np.array([0.0, 0.0, 0.0, 3.0, 4.0, 5.0]))
    assert_same(IndexUpdateHelper(x)[[4, 0]].get(), np.array([4.0, 0.0]))


def test_at_repeated_indices_accumulate():
    x = np.ones(4)
    idx = np.array([0, 0, 3, 0])
    assert_same(IndexUpdateHelper(x)[idx].add(1.0), np.array([4.0, 1.0, 1.0, 2.0]))
    assert_same(IndexUpdateHelper(x)[idx].mul(2.0), np.array([8.0, 1.0, 1.0, 2.0]))
    _, (out,) = run_traced(lambda x, i: IndexUpdateHelper(x)[i].add(1.0), x, idx)
    assert_same(out, np.array([4.0, 1.0, 1.0, 2.0]))


def test_at_values_take_the_array_dtype_and_drop_leading_unit_axes():
    x = np.zeros((2, 3), np.int32)
    assert_same(IndexUpdateHelper(x)[0].set(np.array([[1.7, 2.2, 3.9]])),
                np.array([[1, 2, 3], [0, 0, 0]], np.int32))
    with pytest.raises(TypeError, match=r"complex values.*int32"):
        IndexUpdateHelper(x)[0].set(1j)
    with pytest.raises(ValueError, match=r"values of shape \(2,\) do not broadcast.*\(3,\)"):
        IndexUpdateHelper(x)[0].set(np.ones(2))


@pytest.mark.parametrize("mode", ["set", "add"])
def test_at_with_advanced_indices_split_by_empty_ellipsis(mode):
    x = np.arange(24.0).reshape(2, 3, 4)
    idx = (slice(None), [0, 1], Ellipsis, [1, 0])
    v = np.arange(4.0).reshape(2, 2) * 10  # NumPy's order: advanced axis first
    expected = x.copy()
    if mode == "set":
        expected[idx] = v
    else:
        np.add.at(expected, idx, v)
    assert_same(getattr(IndexUpdateHelper(x)[idx], mode)(v), expected)
    _, (out,) = run_traced(lambda x, v: getattr(IndexUpdateHelper(x)[idx], mode)(v), x, v)
    assert_same(out, expected)


def test_at_with_scalar_boolean_index_keeps_shape():
    x = np.arange(3.0)
    expected = x.copy()
    expected[True] = 5.0
    assert_same(IndexUpdateHelper(x)[True].set(5.0), expected)


# -- take -----------------------------------------------------------------------------------


@settings(max_examples=200)  # cheap, and the space of cases is large
@given(st.data())
def test_take_matches_numpy(data):
    x = data.draw(values_of(data.draw(st.sampled_from(DTYPES)),
                            hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)))
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    n = x.size if axis is None else x.shape[axis]
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    span = st.integers(-n, n - 1) if mode == "raise" else st.integers(-3 * n, 3 * n)
    idx_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    idx = data.draw(hnp.arrays(np.int64, idx_shape, elements=span))
    expected = np.asarray(np.take(x, idx, axis=axis, mode=mode))
    assert_same(take(x, idx, axis=axis, mode=mode), expected)
    _, (out,) = run_traced(lambda x, i: take(x, i, axis=axis, mode=mode), x, idx)
    assert_same(out, expected)


def test_take_errors():
    with pytest.raises(IndexError, match=r"take: index 4 is out of bounds for axis 0 with size 3"):
        take(np.zeros(3), [4])
    with pytest.raises(ValueError, match=r"mode must be 'raise', 'wrap' or 'clip'"):
        take(np.zeros(3), [0], mode="nearest")


# -- the basic-index parse cache ---------------------------------------------------


@pytest.mark.parametrize("first", [0, 1])
def test_basic_index_cache_keeps_bools_floats_and_numpy_ints_apart(first):
    x = np.arange(6.0).reshape(2, 3)
    ok = [1, np.int64(1), True, slice(1, None), slice(True, None), (None, 1)]
    ops = ok if first == 0 else ok[::-1]
    for idx in ops:
        got = ft.jit(lambda x, idx=idx: x[idx])(x)
        assert bits_equal(got, x[idx]), idx
    for bad in (1.0, slice(1.0, None)):
        with pytest.raises((IndexError, TypeError)):
            x[bad]
        with pytest.raises((IndexError, TypeError), match="float|integer"):
            ft.jit(lambda x, bad=bad: x[bad])(x)
