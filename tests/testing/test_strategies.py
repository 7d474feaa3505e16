"""``functrans.testing.strategies`` draws what it promises."""

from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from functrans import tree_util
from functrans.testing import strategies as fts


def test_importing_functrans_does_not_import_hypothesis():
    code = ("import sys, functrans, functrans.testing; "
            "assert 'hypothesis' not in sys.modules, 'hypothesis was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_docstring_examples_run():
    failed, attempted = doctest.testmod(fts, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failed == 0


@given(fts.shapes())
def test_default_shapes(shape):
    assert isinstance(shape, tuple) and 0 <= len(shape) <= 4
    assert all(isinstance(d, int) and 0 <= d <= 5 for d in shape)


@given(fts.shapes(min_rank=2, max_rank=3, min_side=1, max_side=2))
def test_bounded_shapes(shape):
    assert 2 <= len(shape) <= 3 and all(1 <= d <= 2 for d in shape)


@given(fts.dtypes())
def test_default_dtypes(dtype):
    assert isinstance(dtype, np.dtype) and dtype.name in fts.DEFAULT_DTYPES


@pytest.mark.parametrize("kinds, names", [
    (("float",), {"float32", "float64"}),
    (("int", "bool"), {"int32", "int64", "bool"}),
    ((np.float16, "complex128"), {"float16", "complex128"}),
    ("uint", {"uint8", "uint32"}),
])
def test_dtype_kinds(kinds, names):
    @given(fts.dtypes(kinds=kinds))
    def check(dtype):
        assert dtype.name in names

    check()


def test_dtypes_needs_a_kind():
    with pytest.raises(ValueError, match="at least one dtype"):
        fts.dtypes(kinds=())


@given(fts.arrays())
def test_arrays_draw_dtype_and_shape(x):
    assert type(x) is np.ndarray and x.dtype.name in fts.DEFAULT_DTYPES and x.ndim <= 4
    if x.dtype.kind in "fc":
        assert np.isfinite(x).all()


@given(fts.arrays(dtype=np.float32, shape=(3, 2), min_value=0.1, max_value=0.7))
def test_float32_bounds_are_rounded_inwards(x):
    assert x.shape == (3, 2) and x.dtype == np.float32
    assert (x >= np.float32(0.1)).all() and (x <= np.float32(0.7)).all()


@given(fts.arrays(dtype=st.sampled_from(["int32", "int64"]), min_value=-2.5, max_value=3.5))
def test_integer_bounds(x):
    assert ((-2 <= x) & (x <= 3)).all()


@given(fts.arrays(dtype=np.complex128, shape=4, min_value=-1, max_value=1))
def test_complex_bounds_apply_to_both_parts(x):
    assert x.shape == (4,)
    assert (np.abs(x.real) <= 1).all() and (np.abs(x.imag) <= 1).all()


@given(fts.arrays(dtype=np.float64, shape=(20,), min_value=0, max_value=1, allow_nan=True,
                  allow_infinity=True))
def test_nan_and_infinity_come_in_addition_to_the_range(x):
    finite = x[np.isfinite(x)]
    assert ((0 <= finite) & (finite <= 1)).all()


@given(fts.arrays(dtype=bool, shape=fts.shapes(max_rank=2), min_value=3, max_value=4))
def test_bool_arrays_ignore_bounds(x):
    assert x.dtype == bool


@given(fts.arrays(dtype=np.int32, elements=st.just(7), shape=(2,)))
def test_elements_replace_the_value_rules(x):
    assert x.tolist() == [7, 7]


@given(fts.broadcastable_shapes(num_shapes=3))
def test_broadcastable_shapes_broadcast(shapes):
    assert isinstance(shapes, tuple) and len(shapes) == 3
    out = np.broadcast_shapes(*shapes)
    assert len(out) <= 4


@given(fts.pytrees(max_depth=2))
def test_pytrees(tree):
    def depth(t):
        if isinstance(t, (list, tuple)):
            return 1 + max(map(depth, t), default=0)
        if isinstance(t, dict):
            return 1 + max(map(depth, t.values()), default=0)
        assert t is None or isinstance(t, np.ndarray)
        return 0

    assert depth(tree) <= 2
    assert all(isinstance(x, np.ndarray) for x in tree_util.tree_leaves(tree))


@given(fts.pytrees(leaves=st.integers(), max_depth=0))
def test_pytrees_of_depth_0_are_leaves_or_none(tree):
    assert tree is None or isinstance(tree, int)
