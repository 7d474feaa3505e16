"""Map-reduce kernels of the native tier: reductions folded into the loop of
the elementwise group computing their operand, bit for bit NumPy's results
(float sums in NumPy's pairwise order, integer sums wrapping, the first
position of an extreme or of a NaN), and the reductions that stay NumPy
calls."""

import numpy as np
import pytest
from _bits import bits_equal
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import native
from functrans.backends.native import reducers
from functrans.core import lookup_primitive

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")


def _program(f, *args) -> str:
    return str(ft.jit(f, compiler="native").lower(*args)._entry.compiled.jaxpr)


def _tiers(f, *args):
    return ft.jit(f, compiler="numpy")(*args), ft.jit(f, compiler="native")(*args)


def _mixed(n, dtype, seed):
    """Terms of very different magnitudes (any other order of summation
    rounds differently), with NaN, inf and -0.0 in some draws."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)).astype(dtype)
    return x


def _mapped_sum(x):
    return fnp.sum(x * 1.5 + x * x)


# -- float sums in NumPy's order --------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 136, 257, 1000, 100_003])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_float_sum_is_numpys_pairwise_sum(n, dtype):
    assert "reduce_sum" not in _program(_mapped_sum, np.zeros(n, dtype))
    for seed in range(3):
        x = _mixed(n, dtype, seed)
        got = ft.jit(_mapped_sum, compiler="native")(x)
        assert bits_equal(got, np.sum(x * dtype(1.5) + x * x))
        assert bits_equal(got, ft.jit(_mapped_sum)(x))


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, -0.0])
def test_a_float_sum_with_special_terms(special):
    def f(x):
        return fnp.sum(x * 2.0 + x)  # keeps -0.0, NaN and inf terms

    for n in (1, 9, 300):
        x = _mixed(n, np.float64, n)
        x[n // 3] = special
        assert bits_equal(*_tiers(f, x))
    zeros = np.full(20, -0.0)
    assert bits_equal(*_tiers(f, zeros))  # NumPy's sum of -0.0 terms is +0.0
    assert bits_equal(*_tiers(f, np.array([np.inf, -np.inf, 1.0])))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 2**32 - 1))
def test_float_sums_of_random_lengths(n, seed):
    x = _mixed(n, np.float64, seed)
    assert bits_equal(ft.jit(_mapped_sum, compiler="native")(x), np.sum(x * 1.5 + x * x))


def test_a_numpy_summing_in_another_order_keeps_float_sums_numpy_calls(monkeypatch):
    from functrans.backends.native import reductions

    assert reductions.numpy_sums_pairwise()
    monkeypatch.setattr(reductions, "numpy_sums_pairwise", lambda: False)
    x = np.linspace(-1, 1, 50)
    assert "reduce_sum" in _program(_mapped_sum, x)
    assert bits_equal(*_tiers(_mapped_sum, x))


def test_float_sums_over_some_axes_and_float_extremes_stay_numpy_calls():
    x = _mixed(24, np.float64, 0).reshape(4, 6)
    for f in (lambda x: fnp.sum(x * 2.0 + 1.0, axis=1), lambda x: fnp.sum(x * 2.0 + 1.0),
              lambda x: fnp.max(x * 2.0 + 1.0), lambda x: fnp.prod(x * 2.0 + 1.0)):
        program = _program(f, x)
        assert "reduce" in program
        assert bits_equal(*_tiers(f, x))


# -- integers, bools, all/any ---------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 1, (0, 2), ()])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_integer_sums_and_products_wrap_as_numpys(axis, dtype):
    rng = np.random.default_rng(5)
    if dtype is np.bool_:
        x = rng.integers(0, 2, (3, 4, 5)).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (3, 4, 5), dtype=dtype, endpoint=True)

    def total(x):
        return fnp.sum(x * x + x, axis=axis)

    def product(x):
        return fnp.prod(x * x + x, axis=axis)

    for f in (total, product):
        assert "reduce" not in _program(f, x)
        assert bits_equal(*_tiers(f, x))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.bool_])
@pytest.mark.parametrize("axis", [None, 0])
def test_integer_maxima_and_minima(dtype, axis):
    rng = np.random.default_rng(6)
    x = rng.integers(0, 2, (6, 7)).astype(bool) if dtype is np.bool_ else \
        rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (6, 7), dtype=dtype)
    for f in (lambda x: fnp.max(x & x, axis=axis), lambda x: fnp.min(x | x, axis=axis)):
        assert "reduce" not in _program(f, x)
        assert bits_equal(*_tiers(f, x))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_all_and_any_of_comparisons(axis):
    x = np.array([[np.nan, 1.0, -0.0], [0.0, -0.0, 2.0], [-0.0, 0.0, -0.0]])
    for f in (lambda x: fnp.all(x * 2.0 + x >= 0.0, axis=axis),
              lambda x: fnp.any(x * 2.0 + x != x, axis=axis)):
        assert "reduce" not in _program(f, x)
        assert bits_equal(*_tiers(f, x))


def test_the_table_of_reducers_agrees_with_the_reductions_declarations():
    # The native tier keys its reductions by name: each name is a declared
    # primitive whose impl is the listed ufunc's reduction, and combining
    # the identity with a term gives the term's reduction.
    assert all(lookup_primitive(name).name == name for name in reducers.FOLDED)
    for name, ufunc in {**reducers.UFUNCS, **reducers.LOGICAL}.items():
        prim = lookup_primitive(name)
        for dtype in (np.bool_, np.int8, np.uint16, np.int64, np.float64):
            x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
            if dtype == np.int64:
                x[1, :2] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
            got = prim.impl(x, axes=(0,))
            assert np.array_equal(got, ufunc.reduce(x, axis=0)), (name, dtype)
            if not np.issubdtype(got.dtype, np.inexact) or name in ("reduce_sum", "reduce_prod"):
                start = np.array(reducers.identity(name, got.dtype)).astype(got.dtype)
                assert np.array_equal(ufunc(start, x.astype(got.dtype)),
                                      x.astype(got.dtype) if name in reducers.UFUNCS
                                      else x.astype(bool)), (name, dtype)


def test_reductions_over_empty_axes_give_the_identity():
    x = np.zeros((0, 3), np.int64)
    for f in (lambda x: fnp.sum(x * 2 + 1, axis=0), lambda x: fnp.prod(x * 2 + 1, axis=0),
              lambda x: fnp.sum(x * 2 + 1), lambda x: fnp.all(x * 2 + 1, axis=0)):
        assert bits_equal(*_tiers(f, x))
    assert bits_equal(*_tiers(lambda x: fnp.sum(x * 2.0 + 1.0), np.zeros(0)))


# -- argmax / argmin ------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_and_argmin_take_the_first_extreme_or_the_first_nan(name, axis):
    rows = [[1.0, 3.0, 3.0, -1.0], [np.nan, 2.0, np.nan, 5.0], [0.0, -0.0, -0.0, 0.0],
            [-np.inf, np.inf, -np.inf, np.inf], [2.0, 2.0, np.nan, 7.0]]
    x = np.array(rows)

    def f(x):
        return getattr(fnp, name)(x * 2.0 + x, axis=axis)

    assert "arg" not in _program(f, x)
    assert bits_equal(*_tiers(f, x))
    ints = np.array([[3, 1, 3, 0], [-2, -2, 5, 5]], np.int32)
    assert bits_equal(*_tiers(lambda x: getattr(fnp, name)(x * 2 + 1, axis=axis), ints))
    flags = np.array([[False, True, True], [False, False, False]])
    assert bits_equal(*_tiers(lambda x: getattr(fnp, name)(x & x, axis=axis), flags))


def test_argmax_of_a_vector():
    x = _mixed(1000, np.float64, 3)
    x[[10, 500]] = x.max() * 4
    assert bits_equal(*_tiers(lambda x: fnp.argmax(x * 2.0 + 1.0), x))


# -- the group around the reduction -------------------------------------------------------------


def test_the_groups_other_results_are_still_written():
    def f(x):
        y = x * 2.0 + 1.0
        return fnp.sum(y * y), y

    x = _mixed(300, np.float64, 4)
    assert "reduce_sum" not in _program(f, x)
    for a, b in zip(*_tiers(f, x)):
        assert bits_equal(a, b)


def test_a_mapped_array_read_elsewhere_keeps_the_reduction_a_numpy_call():
    def f(x):
        y = x * 2.0 + 1.0
        return fnp.sum(y), y  # y is written: NumPy sums it

    x = _mixed(300, np.float64, 5)
    assert "reduce_sum" in _program(f, x)
    for a, b in zip(*_tiers(f, x)):
        assert bits_equal(a, b)
