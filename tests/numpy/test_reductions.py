"""functrans.numpy reductions and scans against NumPy: every axis form (None,
int, negative, tuple), keepdims, dtype= and ddof, eagerly and traced."""

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
from functrans.errors import AxisError
from functrans.testing import check_grads

# NumPy warns about empty slices and ddof >= n; the values are still compared.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


def elements(dtype):
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "i":
        return st.integers(-5, 5)
    special = st.sampled_from([0.0, 1.0, -1.0, math.nan, math.inf])
    if dtype.kind == "f":
        return st.floats(-10, 10, width=dtype.itemsize * 8) | special
    return st.complex_numbers(max_magnitude=10) | special


@st.composite
def arrays(draw, dtypes=DTYPES, shape=SHAPES):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    return draw(hnp.arrays(dtype, draw(shape), elements=elements(dtype)))


@st.composite
def axes(draw, ndim, tuples=True):
    """None, an int (maybe negative) or, where allowed, a tuple of distinct axes."""
    if ndim == 0:
        return None
    single = st.integers(-ndim, ndim - 1)
    choices = st.none() | single
    if tuples:
        choices |= st.lists(single, unique_by=lambda a: a % ndim, max_size=ndim).map(tuple)
    return draw(choices)


def assert_same(actual, expected):
    assert type(actual) is np.ndarray, type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        single = expected.dtype in (np.float32, np.complex64)
        np.testing.assert_allclose(actual, expected, rtol=1e-5 if single else 1e-10,
                                   atol=1e-6 if single else 1e-12, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def check(fn, np_fn, x):
    """``fn(x)`` agrees with ``np_fn(x)`` eagerly and traced, or both refuse."""
    with np.errstate(all="ignore"):
        try:
            expected = np.asarray(np_fn(x))
        except ValueError:  # an empty max/min/argmax: both must refuse
            with pytest.raises(ValueError):
                fn(x)
            with pytest.raises(ValueError):
                functrans.make_jaxpr(fn)(x)
            return
        assert_same(fn(x), expected)
        jaxpr = functrans.make_jaxpr(fn)(x)
        check_jaxpr(jaxpr)
        (out,) = eval_jaxpr(jaxpr, x)
        assert_same(np.asarray(out), expected)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "amax", "amin",
                                  "all", "any"])
@given(data=st.data(), x=arrays(), keepdims=st.booleans())
def test_reductions_over_any_axes(name, data, x, keepdims):
    axis = data.draw(axes(x.ndim))
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis=axis, keepdims=keepdims),
          lambda a: np_fn(a, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@given(data=st.data(), x=arrays(dtypes=[np.bool_, np.int32, np.float32, np.float64]),
       dtype=st.sampled_from([np.int32, np.int64, np.float32, np.float64, np.complex128]))
def test_accumulator_dtype(name, data, x, dtype):
    axis = data.draw(axes(x.ndim))
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis, dtype), lambda a: np_fn(a, axis, dtype), x)


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data(), x=arrays(), ddof=st.sampled_from([0, 1, 2, 0.5]),
       keepdims=st.booleans())
def test_var_std(name, data, x, ddof, keepdims):
    axis = data.draw(axes(x.ndim))
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis, ddof=ddof, keepdims=keepdims),
          lambda a: np_fn(a, axis, ddof=ddof, keepdims=keepdims), x)


@pytest.mark.parametrize("name", ["var", "std"])
@given(x=arrays(dtypes=[np.int32, np.float64]))
def test_var_std_dtype(name, x):
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, dtype=np.float32), lambda a: np_fn(a, dtype=np.float32), x)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data(), x=arrays(dtypes=[np.bool_, np.int32, np.float32, np.float64]),
       keepdims=st.booleans())
def test_arg_reductions(name, data, x, keepdims):
    axis = data.draw(axes(x.ndim, tuples=False))
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis, keepdims=keepdims),
          lambda a: np_fn(a, axis, keepdims=keepdims), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@given(data=st.data(), x=arrays(),
       dtype=st.sampled_from([None, np.int64, np.float32, np.complex128]))
def test_cumulative(name, data, x, dtype):
    if x.dtype.kind == "c" and dtype in (np.int64, np.float32):
        dtype = None  # NumPy discards the imaginary part with a warning
    axis = data.draw(axes(x.ndim, tuples=False))
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis, dtype), lambda a: np_fn(a, axis, dtype), x)


@st.composite
def masks(draw, shape):
    """A ``where=`` mask for an array of ``shape``: full, or one that broadcasts."""
    full = draw(st.booleans())
    mask_shape = shape if full else tuple(draw(st.sampled_from([1, n])) for n in shape)
    return draw(hnp.arrays(np.bool_, mask_shape))


@pytest.mark.parametrize("name", ["sum", "prod"])
@given(data=st.data(), x=arrays(), keepdims=st.booleans(),
       initial=st.sampled_from([None, 2, -1.5, 0.5]), masked=st.booleans())
def test_sum_prod_with_where_and_initial(name, data, x, keepdims, initial, masked):
    axis = data.draw(axes(x.ndim))
    where = data.draw(masks(x.shape)) if masked else True
    kw = {"axis": axis, "keepdims": keepdims, "where": where}
    kw.update({} if initial is None else {"initial": initial})
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, **kw), lambda a: np_fn(a, **kw), x)


@pytest.mark.parametrize("name", ["mean", "var", "std"])
@given(data=st.data(), x=arrays(), keepdims=st.booleans(), ddof=st.sampled_from([0, 1]))
def test_mean_var_std_with_where(name, data, x, keepdims, ddof):
    axis = data.draw(axes(x.ndim))
    kw = {"axis": axis, "keepdims": keepdims, "where": data.draw(masks(x.shape))}
    kw.update({} if name == "mean" else {"ddof": ddof})
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, **kw), lambda a: np_fn(a, **kw), x)


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data(), x=arrays(dtypes=[np.int32, np.float32, np.float64, np.complex128]),
       masked=st.booleans())
def test_var_std_with_a_given_mean(name, data, x, masked):
    axis = data.draw(axes(x.ndim))
    where = data.draw(masks(x.shape)) if masked else True
    with np.errstate(all="ignore"):
        m = np.mean(x, axis=axis, keepdims=True, where=where) + 0.25
    fn, np_fn = getattr(fnp, name), getattr(np, name)
    check(lambda a: fn(a, axis, mean=m, where=where), lambda a: np_fn(a, axis, mean=m, where=where),
          x)


def test_where_initial_and_mean_are_differentiated():
    x = np.array([[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]])
    w = np.array([[True, False, True], [False, True, True]])
    for f in (lambda a: fnp.sum(a ** 2, axis=1, where=w, initial=0.5),
              lambda a: fnp.prod(a, axis=0, where=w, initial=2.0),
              lambda a: fnp.mean(fnp.sin(a), axis=1, where=w),
              lambda a: fnp.var(a, axis=1, where=w, ddof=1),
              lambda a: fnp.std(a, axis=0, where=w[::-1]),
              lambda a: fnp.std(a, axis=1, keepdims=True, mean=fnp.mean(a, 1, keepdims=True) * 0.5),
              lambda a: fnp.var(a[0], mean=a[1, :1])):
        check_grads(f, (x,), order=2)
    # a left-out position gets no derivative, a NaN there included
    x_nan = np.where(w, x, np.nan)
    for fn in (fnp.sum, fnp.mean, fnp.var, fnp.std):
        g = functrans.grad(lambda a, fn=fn: fnp.sum(fn(a, axis=1, where=w)))(x_nan)
        assert np.all(g[~w] == 0) and np.all(np.isfinite(g))


def test_std_of_a_slice_with_one_kept_position_has_derivative_zero():
    # sqrt'(0) * 0 would be NaN; the deviation of a lone element is identically 0
    x = np.array([[1.0, 5.0, 2.0], [3.0, 4.0, 6.0]])
    w = np.array([[True, False, False], [True, True, False]])
    g = functrans.grad(lambda a: fnp.sum(fnp.std(a, axis=1, where=w)))(x)
    np.testing.assert_allclose(g, [[0.0, 0.0, 0.0], [-1.0, 1.0, 0.0]] * np.array([[1], [0.5]]))


def test_mean_of_integers_is_float64():
    assert_same(fnp.mean(np.arange(5, dtype=np.int32)), np.mean(np.arange(5, dtype=np.int32)))


def test_mean_of_float32_stays_float32_when_traced():
    jaxpr = functrans.make_jaxpr(lambda x: fnp.mean(x, axis=0))(np.ones((3, 2), np.float32))
    assert jaxpr.out_avals[0].dtype == np.float32


def test_lists_reduce():
    assert_same(fnp.sum([[1, 2], [3, 4]], axis=1), np.array([3, 7]))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "var", "argmax", "cumsum", "all"])
def test_bad_axis_names_the_function(name):
    x = np.ones((2, 3))
    with pytest.raises(AxisError, match=f"^{name}: axis 2 is out of bounds"):
        getattr(fnp, name)(x, axis=2)
    with pytest.raises(AxisError, match=f"{name}: axis -3 is out of bounds"):
        functrans.make_jaxpr(lambda a: getattr(fnp, name)(a, axis=-3))(x)


def test_repeated_axis_is_refused():
    with pytest.raises(AxisError, match="sum: repeated axis"):
        fnp.sum(np.ones((2, 3)), axis=(1, -1))


def test_out_of_concrete_arrays_is_written_as_numpy_writes_it():
    out = np.ones(())
    assert fnp.sum(np.array([0.5, 2.0]), out=out) is out and out == 2.5
    ints = np.zeros(2, int)
    assert fnp.cumsum(np.array([0.5, 2.0]), out=ints) is ints
    np.testing.assert_array_equal(ints, np.cumsum(np.array([0.5, 2.0]), out=np.zeros(2, int)))


def test_numpy_functions_dispatch_on_tracers():
    x = np.arange(6.0).reshape(2, 3)

    def f(a):
        return np.sum(a, axis=0) + np.mean(a, axis=0, keepdims=True) + np.max(a) + np.std(a)

    jaxpr = functrans.make_jaxpr(f)(x)
    names = {e.primitive.name for e in jaxpr.eqns}
    assert {"reduce_sum", "reduce_max", "sqrt"} <= names
    (out,) = eval_jaxpr(jaxpr, x)
    assert_same(np.asarray(out), f(x))


_ROWS = np.array([[1.0, 0.0, np.nan], [0.0, 0.0, 2.0]])


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("where, kw", [
    (np.array([True, False, True]), {}),
    (np.array([[False, True, False], [False, False, False]]), {"axis": 1}),
    (np.array([False, True, True]), {"axis": 0, "keepdims": True}),
], ids=["all-axes", "axis1", "axis0-keepdims"])
def test_all_and_any_take_numpys_where(name, where, kw):
    # where= was refused with Python's "unexpected keyword argument".
    def ours(x):
        return getattr(fnp, name)(x, where=where, **kw)

    want = getattr(np, name)(_ROWS, where=where, **kw)
    for got in (ours(_ROWS), functrans.jit(ours)(_ROWS)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    row_mask = where[-1] if where.ndim > 1 else where
    np.testing.assert_array_equal(
        functrans.vmap(lambda r: getattr(fnp, name)(r, where=row_mask))(_ROWS),
        [getattr(np, name)(r, where=row_mask) for r in _ROWS])
