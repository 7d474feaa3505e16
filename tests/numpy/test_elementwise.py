"""functrans.numpy elementwise functions against NumPy: eagerly (ndarray results
with NumPy's dtypes and values) and traced (a checked Jaxpr that evaluates to
the same), over random shapes, broadcasting pairs and dtypes."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans
import functrans.numpy as fnp
from functrans.backends.numpy import eval_jaxpr
from functrans.core import check_jaxpr
from functrans.errors import ConcretizationError

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3)


def elements(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "i":
        return st.integers(-20, 20)
    special = st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.0, math.nan, math.inf, -math.inf])
    if dtype.kind == "f":
        return st.floats(-10, 10, width=dtype.itemsize * 8) | special
    return st.complex_numbers(max_magnitude=10) | special


@st.composite
def arrays(draw, shape=SHAPES, dtypes=DTYPES):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    return draw(hnp.arrays(dtype, shape, elements=elements(dtype)))


def assert_same(actual, expected):
    """Same type (ndarray), dtype, shape and values (NaN-aware)."""
    assert type(actual) is np.ndarray, type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    if expected.dtype.kind in "fc":
        rtol = 1e-5 if expected.dtype.itemsize * 8 // (2 if expected.dtype.kind == "c" else 1) \
            == 32 else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def check(fn, np_fn, *args):
    """``fn`` agrees with ``np_fn`` eagerly and traced, or both refuse the input."""
    with np.errstate(all="ignore"):
        try:
            expected = np.asarray(np_fn(*args))
        except (TypeError, ValueError) as e:
            with pytest.raises(TypeError if isinstance(e, TypeError) else ValueError):
                fn(*args)
            with pytest.raises((TypeError, ValueError)):
                eval_jaxpr(functrans.make_jaxpr(fn)(*args), *args)
            return
        assert_same(fn(*args), expected)
        jaxpr = functrans.make_jaxpr(fn)(*args)
        check_jaxpr(jaxpr)
        (out,) = eval_jaxpr(jaxpr, *args)
        assert_same(np.asarray(out), expected)


# fmt: off
UNARY = [
    "negative", "positive", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "sqrt", "cbrt", "square", "reciprocal", "abs",
    "absolute", "sign", "floor", "ceil", "round", "around", "isfinite", "isnan", "isinf",
    "invert", "bitwise_not", "logical_not",
]
BINARY = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "mod", "power", "maximum", "minimum", "arctan2", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
    "logical_and", "logical_or", "logical_xor",
]
# fmt: on


@pytest.mark.parametrize("name", UNARY)
@given(x=arrays())
def test_unary_matches_numpy(name, x):
    if name == "reciprocal" and x.dtype.kind in "bi":
        x = np.where(x == 0, 1, x).astype(x.dtype)  # NumPy's integer 1/0 is undefined
    if name == "log10" and x.dtype.kind == "c":
        x = np.where(np.isfinite(x) & (x != 0), x, 1)  # see the NB in fnp.log10
    check(getattr(fnp, name), getattr(np, name), x)


@pytest.mark.parametrize("name", BINARY)
@given(data=st.data(), shapes=PAIRS)
def test_binary_matches_numpy_with_broadcasting(name, data, shapes):
    x = data.draw(arrays(shapes.input_shapes[0]))
    y = data.draw(arrays(shapes.input_shapes[1]))
    if name == "power" and y.dtype.kind == "i":
        y = np.abs(y) % 4  # NumPy refuses negative integer powers of integers
    check(getattr(fnp, name), getattr(np, name), x, y)


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "divide", "maximum", "power",
                                  "less", "arctan2", "remainder", "logical_and"])
@pytest.mark.parametrize("scalar", [2, 2.5, True, 1 + 2j])
@given(x=arrays(dtypes=[np.int32, np.float32, np.float64, np.bool_]))
def test_python_scalars_stay_weak(name, scalar, x):
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, scalar), lambda a: np_fn(a, scalar), x)
    check(lambda a: fn(scalar, a), lambda a: np_fn(scalar, a), x)


def test_float32_times_python_float_stays_float32():
    jaxpr = functrans.make_jaxpr(lambda x: fnp.multiply(x, 2.0))(np.ones(3, np.float32))
    assert jaxpr.out_avals[0].dtype == np.float32


@given(x=arrays(dtypes=[np.int32, np.float32, np.float64, np.complex128]),
       n=st.integers(-3, 4))
def test_power_with_python_int_is_integer_pow(x, n):
    if x.dtype.kind == "i":
        n = abs(n)
    check(lambda a: fnp.power(a, n), lambda a: np.power(a, n), x)
    jaxpr = functrans.make_jaxpr(lambda a: fnp.power(a, n))(x)
    # np.power's complex square is its complex power, not x * x (np.square's)
    want = "pow" if n == 2 and x.dtype.kind == "c" else "integer_pow"
    assert [e.primitive.name for e in jaxpr.eqns] == [want]


@given(x=arrays(dtypes=[np.int32, np.int64, np.float32, np.float64, np.complex128]),
       decimals=st.integers(-2, 3))
def test_round_decimals(x, decimals):
    if x.dtype.kind == "c" and decimals:
        x = np.where(np.isfinite(x), x, 1)  # see the NB in fnp.round
    check(lambda a: fnp.round(a, decimals), lambda a: np.round(a, decimals), x)


def test_round_of_integers_to_tens_rounds_half_to_even():
    x = np.array([125, 135, -125, 15], np.int32)
    assert_same(fnp.round(x, -1), np.round(x, -1))


@pytest.mark.parametrize("decimals", [308, 309, 400, -308, -309, -400])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_past_float64_range_of_decimals_is_numpys(dtype, decimals):
    # NumPy's scale 10.0**decimals is inf there: NaN, not Python's OverflowError
    x = np.array([1.5, -0.0, 2.0, np.inf], dtype)
    check(lambda a: fnp.round(a, decimals), lambda a: np.round(a, decimals), x)


def test_round_of_integers_past_float64_range_of_decimals_is_refused():
    with pytest.raises(ValueError, match=r"round: decimals=-309 of an array of dtype int64 has no "
                                         r"defined answer .* decimals of -308 or more"):
        fnp.round(np.array([15, -15]), -309)
    x = np.array([15, -15], np.int8)
    assert_same(fnp.round(x, -308), np.round(x, -308))


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4,
                                                max_side=3), data=st.data())
def test_where_three_arguments(shapes, data):
    c, x, y = (data.draw(arrays(s)) for s in shapes.input_shapes)
    check(fnp.where, np.where, c, x, y)


def test_where_keeps_python_scalars_weak():
    c = np.array([True, False])
    y = np.zeros(2, np.float32)
    check(lambda a, b: fnp.where(a, 1.0, b), lambda a, b: np.where(a, 1.0, b), c, y)


def test_where_one_argument_is_eager_only():
    c = np.array([[1, 0], [0, 3]])
    result = fnp.where(c)
    for got, want in zip(result, np.where(c), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ConcretizationError, match="where: the one-argument form"):
        functrans.make_jaxpr(fnp.where)(c)
    with pytest.raises(ValueError, match="where: pass both x and y"):
        fnp.where(c, 1.0)


BOUNDS = st.sampled_from([None, 0, -1.5, 2.5]) | hnp.arrays(np.float64, (3,), elements=st.floats(
    -5, 5))


@given(x=arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=3),
                dtypes=[np.int32, np.float32, np.float64]), lo=BOUNDS, hi=BOUNDS)
def test_clip(x, lo, hi):
    check(lambda a: fnp.clip(a, lo, hi), lambda a: np.clip(a, lo, hi), x)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.uint64])
@pytest.mark.parametrize("lo, hi", [
    (-5, 5), (-5, 300), (-(2 ** 70), 2 ** 70), (-1000, 50), (0, 255), (-5, None), (None, 10 ** 30),
    (300, 400), (-300, -5), (5, -5), (None, -5), (2.5, 7), (np.int64(-5), 5), (-5.0, 5),
])
def test_clip_of_integers_by_python_ints_beyond_the_dtype_follows_numpy2(dtype, lo, hi):
    # NumPy 2: a Python int bound beyond the dtype's range bounds nothing
    # (clip(uint8, -5, 5) is uint8); others follow NEP 50 (an OverflowError).
    x = np.array([0, 3, 100, 127], dtype)
    for fn in (lambda a: fnp.clip(a, lo, hi), lambda a: np.clip(a, lo, hi),
               lambda a: a.clip(lo, hi)):
        try:
            want = np.clip(x, lo, hi)
        except OverflowError:
            with pytest.raises(OverflowError):
                fnp.clip(x, lo, hi)
            with pytest.raises(OverflowError):
                functrans.jit(fn)(x)
            continue
        assert_same(fnp.clip(x, lo, hi), want)
        assert_same(functrans.jit(fn)(x), want)
        assert_same(functrans.vmap(fn)(x[:, None])[:, 0], want)


def test_clip_takes_numpy2_keyword_names():
    x = np.linspace(-2, 2, 5)
    assert_same(fnp.clip(x, min=-1, max=1), np.clip(x, -1, 1))
    unclipped = fnp.clip(x)
    assert_same(unclipped, x)
    assert unclipped is not x


def test_lists_are_arrays_and_may_hold_tracers():
    assert_same(fnp.add([1, 2], [[3], [4]]), np.add([1, 2], [[3], [4]]))
    x = np.array([1.0, 2.0])
    check(lambda a: fnp.sin([a[0], a[1], 3.0]), lambda a: np.sin([a[0], a[1], 3.0]), x)


def test_results_are_arrays_never_numpy_scalars():
    for result in (fnp.sin(1.0), fnp.add(1, 2), fnp.isnan(np.float64(1)), fnp.clip(3, 0, 1)):
        assert type(result) is np.ndarray and result.ndim == 0


def test_aliases_are_the_same_functions():
    assert fnp.abs is fnp.absolute and fnp.mod is fnp.remainder
    assert fnp.true_divide is fnp.divide and fnp.around is fnp.round
    assert fnp.bitwise_not is fnp.invert and fnp.acos is fnp.arccos and fnp.pow is fnp.power


def test_dtype_errors_name_the_operation():
    with pytest.raises(TypeError, match="bitwise_and|and: not defined"):
        functrans.make_jaxpr(lambda x: fnp.bitwise_and(x, x))(np.ones(2))
    with pytest.raises(TypeError, match="positive: not defined for a bool array"):
        fnp.positive(np.ones(2, bool))
    out = np.full(2, 5.0)  # out= writes into a NumPy array as NumPy does
    assert fnp.clip(np.array([-1.0, 3.0]), 0, 1, out) is out and out.tolist() == [0.0, 1.0]


def _same_parts(got, want):
    """Complex arrays equal part by part: NaN where NumPy has NaN, else the
    same value and the same sign of zero."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g) | np.isnan(g), np.signbit(w) | np.isnan(w))


@pytest.mark.parametrize("decimals", [1, 2, -1, 0])
def test_round_of_complex_numbers_rounds_each_part_as_numpy_does(decimals):
    # Scaling by 10**decimals as a complex product gave an infinite part's
    # partner NaN ((inf + 1j) * 10 is inf + nanj), eagerly and under jit.
    z = np.empty(7, np.complex128)
    z.real = [1.0, np.inf, 0.25, -0.04, np.nan, -0.0, 2.55]
    z.imag = [np.nan, 1.0, -np.inf, -0.0, 2.0, np.inf, -0.05]
    for how in (lambda f: f, functrans.jit):
        _same_parts(how(lambda z: fnp.round(z, decimals))(z), np.round(z, decimals))
    z64 = z.astype(np.complex64)
    _same_parts(fnp.round(z64, decimals), np.round(z64, decimals))
