"""NumPy's ``out=`` of functions that are not ufuncs (``functrans/numpy/_inplace.py``:
``OUT_FUNCTIONS``, ``write_out``) and ``x.view()`` on traced arrays.  NumPy is the
oracle: the same plain NumPy code runs on NumPy arrays and under jit, value_and_grad
and vmap; the result is written into ``out`` (which is returned itself), cast and
shape-checked by each function's own rule, and seen through every alias of ``out``.
"""

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.numpy._inplace import InPlaceUpdateError
from functrans.testing import check_grads

X = np.array([[0.5, -1.25, 2.0], [3.5, 1.75, -0.5]])


def _into(call):
    """``f(x, o)``: ``call(x, o)`` must return ``o`` itself; ``o`` is returned."""
    def f(x, o):
        o = o.copy()  # a traced array of the function's own (no input updated)
        result = call(x, o)
        assert result is o
        return o
    return f


def _check(call, x, out, rtol=1e-13):
    """``call(x, out)`` under jit gives NumPy's ``out`` (values and dtype)."""
    want = out.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        assert call(x.copy(), want) is want
        got = ft.jit(_into(call))(x, out)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol)


# (call, out shape) for a 2 x 3 float input; out dtypes vary below.
CALLS = {
    "sum": (lambda x, o: np.sum(x, axis=0, out=o), (3,)),
    "sum_keepdims": (lambda x, o: np.sum(x, axis=1, keepdims=True, out=o), (2, 1)),
    "sum_method_positional": (lambda x, o: x.sum(0, None, o), (3,)),
    "prod": (lambda x, o: np.prod(x, axis=1, out=o), (2,)),
    "max": (lambda x, o: np.max(x, axis=0, out=o), (3,)),
    "min": (lambda x, o: np.min(x, out=o), ()),
    "all": (lambda x, o: np.all(x, axis=0, out=o), (3,)),
    "any": (lambda x, o: np.any(x > 1, axis=1, out=o), (2,)),
    "mean": (lambda x, o: np.mean(x, axis=0, out=o), (3,)),
    "var": (lambda x, o: np.var(x, axis=1, out=o), (2,)),
    "median": (lambda x, o: np.median(x, axis=1, out=o), (2,)),
    "cumsum": (lambda x, o: np.cumsum(x, out=o), (6,)),
    "cumprod": (lambda x, o: np.cumprod(x, axis=1, out=o), (2, 3)),
    "cumulative_sum": (lambda x, o: np.cumulative_sum(x, axis=0, out=o), (2, 3)),
    "nansum": (lambda x, o: np.nansum(x, axis=0, out=o), (3,)),
    "nanmax": (lambda x, o: np.nanmax(x, axis=1, out=o), (2,)),
    "nancumsum": (lambda x, o: np.nancumsum(x, axis=1, out=o), (2, 3)),
    "nanmedian": (lambda x, o: np.nanmedian(x, axis=1, out=o), (2,)),
    "trace": (lambda x, o: np.trace(x, out=o), ()),
    "take": (lambda x, o: np.take(x, [4, 0], out=o), (2,)),
}
UNSAFE_DTYPES = [np.float64, np.int64, np.float32, np.bool_]


#: Where NumPy's answer for an out that cannot hold the values depends on its loop
#: (maxima compare the values cast into out's dtype at some calls, not at others;
#: median writes NaN into out where a slice holds one): refused.
LOSSY = {"max", "min", "nanmax", "median"}


@pytest.mark.parametrize("dtype", UNSAFE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(CALLS))
def test_reductions_write_out_with_numpys_cast(name, dtype):
    call, shape = CALLS[name]
    if name in LOSSY and dtype in (np.int64, np.bool_):
        call(X.copy(), np.zeros(shape, dtype))  # NumPy writes something
        with pytest.raises(TypeError, match=r"out= has dtype (int64|bool), (which does not hold "
                                            r"every float64 value of the result; NumPy compares"
                                            r"|but the float64 array may hold NaN)"):
            ft.jit(_into(call))(X, np.zeros(shape, dtype))
        return
    _check(call, X, np.zeros(shape, dtype), rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_mean_var_and_std_write_their_total_into_out_first_as_numpy():
    # NumPy sums into out, then divides there: an int8 out wraps the total first.
    ints = np.array([[100, 101, 50], [100, 27, 99], [101, 1, 2]], np.int8)
    _check(lambda x, o: np.mean(x, axis=0, out=o), ints, np.zeros(3, np.int8))
    _check(lambda x, o: np.var(x * 3, axis=0, out=o), ints, np.zeros(3, np.int8))
    _check(lambda x, o: np.mean(x, axis=1, where=x > 20, out=o), ints, np.zeros(3, np.int8))
    _check(lambda x, o: np.median(x, axis=0, out=o), ints, np.zeros(3, np.int8))
    wide = np.array([[1e8, 1.0, 3.0], [7.0, 1e-3, -1e8 - 1]])
    for f in (np.mean, np.var, np.std, np.nanmean, np.nanvar, np.nanstd, np.median):
        _check(lambda x, o, f=f: f(x, axis=0, out=o), wide, np.zeros(3, np.float32), rtol=0)
    _check(lambda x, o: np.nanmean(x, axis=0, out=o), ints, np.zeros(3, np.int8))
    _check(lambda x, o: np.max(x, axis=0, out=o), wide, np.zeros(3, np.float32), rtol=0)
    _check(lambda x, o: np.einsum("ij->j", x, out=o), ints, np.zeros(3, np.int64))
    _check(lambda x, o: np.einsum("ij->j", x > 50, out=o), ints, np.zeros(3))
    _check(lambda x, o: np.einsum("ij->j", x + 0.7, out=o, casting="unsafe"), ints,
           np.zeros(3, np.int64))


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "nansum"])
def test_nan_and_complex_inputs(name):
    call, shape = CALLS[name]
    x = X.copy()
    x[0, 1] = np.nan
    _check(call, x, np.zeros(shape))
    _check(call, X + 1j * X[::-1], np.zeros(shape))  # the real part, as NumPy (with its warning)
    _check(call, X + 1j * X[::-1], np.zeros(shape, complex))


SAME_KIND = {
    "std": (lambda x, o: np.std(x, axis=0, out=o), (3,)),
    "ptp": (lambda x, o: np.ptp(x, axis=1, out=o), (2,)),
    "round": (lambda x, o: np.round(x, 1, out=o), (2, 3)),
    "quantile": (lambda x, o: np.quantile(x, 0.3, axis=1, out=o), (2,)),
    "percentile": (lambda x, o: np.percentile(x, [20, 70], axis=0, out=o), (2, 3)),
    "outer": (lambda x, o: np.outer(x[0], x[1], out=o), (3, 3)),
    "concatenate": (lambda x, o: np.concatenate([x, x[:1]], out=o), (3, 3)),
    "stack": (lambda x, o: np.stack([x[0], x[1]], axis=1, out=o), (3, 2)),
    "einsum_unsafe": (lambda x, o: np.einsum("ij->j", x, out=o, casting="unsafe"), (3,)),
}


@pytest.mark.parametrize("name", list(SAME_KIND))
def test_same_kind_functions_take_float32_and_refuse_int_as_numpy(name):
    call, shape = SAME_KIND[name]
    _check(call, X, np.zeros(shape), rtol=1e-13)
    _check(call, X, np.zeros(shape, np.float32), rtol=1e-6)
    if name == "einsum_unsafe":
        return
    with pytest.raises(TypeError):
        call(X.copy(), np.zeros(shape, int))
    with pytest.raises(TypeError, match=r"out= has dtype int64|Cannot cast ufunc '(sqrt|multiply)' "
                                        r"output from dtype\('float64'\) to dtype\('int64'\)"):
        ft.jit(_into(call))(X, np.zeros(shape, int))


def test_functions_that_broadcast_into_out_do_so_as_numpy():
    _check(lambda x, o: np.clip(x[0], 0, 1, out=o), X, np.zeros((2, 3)))
    _check(lambda x, o: np.matmul(x, x.T, out=o), X, np.zeros((4, 2, 2)))
    _check(lambda x, o: np.quantile(x, 0.5, axis=0, out=o), X, np.zeros((2, 3)))
    # round checks that out has as many elements, then broadcasts as its ufuncs do
    for decimals in (0, 1, -1):
        for shape in [(1, 2, 3), (1, 1, 2, 3)]:
            _check(lambda x, o, d=decimals: np.round(x * 7.25, d, out=o), X, np.zeros(shape))
            _check(lambda x, o, d=decimals: np.around(x[0] * 7.25, d, out=o), X,
                   np.zeros(shape[:-2] + (shape[-1],)))


# (call, out) that NumPy refuses, each with the exception type NumPy raises.
REFUSED = [
    (lambda x, o: np.sum(x, axis=0, out=o), np.zeros((1, 3)), ValueError),
    (lambda x, o: np.sum(x, out=o), np.zeros(1), ValueError),
    (lambda x, o: np.cumsum(x, out=o), np.zeros((2, 3)), ValueError),
    (lambda x, o: np.concatenate([x, x], out=o), np.zeros((2, 6)), ValueError),
    (lambda x, o: np.dot(x, x.T, out=o), np.zeros((2, 2), np.float32), ValueError),
    (lambda x, o: np.dot(x, x.T, out=o), np.zeros((2, 3)), ValueError),
    (lambda x, o: np.argmax(x, axis=0, out=o), np.zeros(3), TypeError),
    (lambda x, o: np.take(x, [1], out=o), np.zeros(1, complex), TypeError),
    (lambda x, o: np.nanmean(x, axis=0, out=o), np.zeros(3, int), TypeError),
    (lambda x, o: np.einsum("ij->j", x, out=o), np.zeros(3, np.float32), TypeError),
    (lambda x, o: np.concatenate([x, x], out=o, dtype=float), np.zeros((4, 3)), TypeError),
    (lambda x, o: np.sum(x, out=o), [0.0], TypeError),
    (lambda x, o: np.round(x, 1, out=o), np.zeros((2, 3, 1)), ValueError),  # not broadcastable
    (lambda x, o: np.round(x, 1, out=o), np.zeros((4, 3)), ValueError),  # another size
]


@pytest.mark.parametrize("k", range(len(REFUSED)))
def test_out_numpy_refuses_is_refused_with_its_exception_type(k):
    call, out, error = REFUSED[k]
    with pytest.raises(error):
        call(X.copy(), np.array(out, copy=True) if type(out) is not list else out)

    def f(x):
        o = fnp.asarray(out) + 0 * x[0, 0] if type(out) is not list else out
        return call(x, o.astype(np.asarray(out).dtype) if type(out) is not list else o)

    with pytest.raises(error, match=r"out= (has|must)|pass out= or dtype=|out=\): "
                                    r"non-broadcastable output operand"):
        ft.jit(f)(X)


def test_error_texts():
    with pytest.raises(ValueError, match=r"f: sum: out= has shape \(1, 3\), but the result has "
                                         r"shape \(3,\) \(at .*\); NumPy refuses this too: pass an "
                                         r"out of the result's shape \(keepdims=True"):
        ft.jit(_into(CALLS["sum"][0]), )(X, np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"dot: out= has dtype float32, but the result has dtype "
                                         r"float64; NumPy's dot accepts only an out of the "
                                         r"result's dtype"):
        ft.jit(_into(lambda x, o: np.dot(x, x.T, out=o)))(X, np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match=r"argmax: out= has dtype float64, which NumPy's argmax "
                                        r"refuses for indices \(int64\); pass an out of dtype "
                                        r"int64"):
        ft.jit(_into(lambda x, o: np.argmax(x, axis=0, out=o)))(X, np.zeros(3))
    with pytest.raises(TypeError, match=r"sum: out= must be an array \(NumPy says: return arrays "
                                        r"must be of ArrayType\), got a list"):
        ft.jit(lambda x: np.sum(x, out=[0.0]))(X)
    with pytest.raises(ValueError, match=r"f: round: out= has shape \(4, 3\), but the result "
                                         r"has shape \(2, 3\) \(at .*\); NumPy refuses an out of "
                                         r"another size too \(invalid output shape\): pass an out "
                                         r"of 6 elements"):
        ft.jit(_into(lambda x, o: np.round(x, 1, out=o)))(X, np.zeros((4, 3)))
    with pytest.raises(TypeError, match=r"concatenate: pass out= or dtype=, not both"):
        ft.jit(_into(lambda x, o: np.concatenate([x], out=o, dtype=float)))(X, X)


def test_a_numpy_out_while_tracing_is_the_clear_inplace_error():
    with pytest.raises(InPlaceUpdateError, match=r"g: sum\(..., out=\) \(at .*\) would write a "
                                                 r"traced value into a numpy.ndarray"):
        def g(x):
            return np.sum(x, axis=0, out=np.zeros(3))
        ft.jit(g)(X)


def test_the_brief_example_and_aliases_of_out():
    def f(x):
        buf = np.zeros(3) * x[0]
        alias = buf[::2]
        whole = buf.reshape(1, 3)
        r = np.sum(x.reshape(2, 3), axis=0, out=buf)
        assert r is buf
        return buf, alias * 1, whole * 1

    x = np.arange(6.0)
    for got, want in zip(ft.jit(f)(x), f(x)):
        np.testing.assert_array_equal(got, want)

    def into_view(x):
        buf = np.zeros((2, 3)) * x[0]
        np.cumsum(x[:3], out=buf[1])
        np.max(x.reshape(2, 3), axis=0, out=buf[0, :])
        return buf

    np.testing.assert_array_equal(ft.jit(into_view)(x), into_view(x))


ALIASING = {
    "cumsum_into_itself": lambda y: np.cumsum(y, out=y),
    "cumsum_reversed_into_itself": lambda y: np.cumsum(y[::-1], out=y),
    "sum_into_first_row": lambda y: np.sum(y.reshape(3, 2), axis=0, out=y[:2]),
    "sum_into_column": lambda y: np.sum(y.reshape(3, 2), axis=1, out=y.reshape(3, 2)[:, 0]),
    "ptp_maxima_then_minima": lambda y: np.ptp(y.reshape(2, 3), axis=0, out=y[1:4]),
    "dot_into_operand": lambda y: np.dot(y[:4].reshape(2, 2), y[:4].reshape(2, 2),
                                         out=y[:4].reshape(2, 2)),
}


@pytest.mark.parametrize("name", list(ALIASING))
def test_out_aliasing_an_input_gives_numpys_buffered_answer(name):
    call = ALIASING[name]

    def f(x):
        y = x * 1.0
        call(y)
        return y

    x = np.array([0.5, -1.25, 2.0, 3.5, 1.5, -2.0])
    np.testing.assert_allclose(ft.jit(f)(x), f(x.copy()), rtol=1e-13)
    check_grads(f, (x,), order=1, modes=("fwd", "rev"), eps=1e-6)
    xs = np.stack([x, x[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(xs), [f(r) for r in xs], rtol=1e-13)


UNBUFFERED = {
    "concatenate": lambda y: np.concatenate([y[1:], y[:1]], out=y),
    "stack": lambda y: np.stack([y[:3], y[3:]], out=y.reshape(2, 3)),
}


@pytest.mark.parametrize("name", list(UNBUFFERED))
def test_out_overlapping_an_input_where_numpys_order_shows_is_refused(name):
    def f(x):
        y = x * 1.0
        UNBUFFERED[name](y)
        return y

    with pytest.raises(InPlaceUpdateError, match=rf"f: {name}\(..., out=\) \(at .*\) writes into "
                                                 r"an array that shares memory with one of its "
                                                 r"inputs, and NumPy's answer then depends on the "
                                                 rf"order its {name} reads and writes in"):
        ft.jit(f)(np.arange(6.0))
    # Disjoint parts of one array are fine.
    def g(x):
        y = x * 1.0
        np.concatenate([y[:2], y[2:3]], out=y[3:])
        np.stack([y[:1], y[1:2]], out=y[4:].reshape(2, 1))
        return y

    np.testing.assert_array_equal(ft.jit(g)(np.arange(6.0)), g(np.arange(6.0)))


def test_empty_arrays():
    _check(lambda x, o: np.sum(x, axis=0, out=o), np.zeros((0, 3)), np.ones(3))
    _check(lambda x, o: np.cumsum(x, out=o), np.zeros(0), np.ones(0))
    _check(lambda x, o: np.prod(x, axis=1, out=o), np.zeros((2, 0)), np.zeros(2))


def test_derivatives_and_vmap_through_out():
    def f(x):
        buf = np.zeros((2, 3)) * x[0, 0]
        np.cumsum(x, axis=1, out=buf)
        m = np.zeros(3) * x[0, 0]
        np.mean(buf * x, axis=0, out=m)
        c = np.zeros((3, 3)) * x[0, 0]
        np.outer(m, x[1], out=c)
        return np.sum(c ** 2) + np.sum(np.sort(x, axis=None) * np.arange(6))

    check_grads(f, (X,), order=2, modes=("fwd", "rev"), eps=1e-6)
    value, grad = ft.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X.copy()), rtol=1e-13)
    assert grad.shape == X.shape
    xs = np.stack([X, X[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(xs), [f(r) for r in xs], rtol=1e-13)


def test_out_is_returned_and_written_on_concrete_arrays_too():
    out = np.zeros(3, np.float32)
    assert fnp.sum(X, axis=0, out=out) is out
    np.testing.assert_allclose(out, np.sum(X, axis=0), rtol=1e-6)
    out = np.zeros((2, 2))
    assert fnp.linalg.multi_dot([X, X.T], out=out) is out
    np.testing.assert_allclose(out, X @ X.T, rtol=1e-13)


# -- x.view() -----------------------------------------------------------------------------


def test_view_of_a_traced_array_shares_its_updates():
    def f(x):
        y = x * 1.0
        v = y.view()
        v[0] = 10.0
        w = y.view(type(y))
        y[1] += 5.0
        u = y[1:].view(np.ndarray)
        u *= 2.0
        s = y.view(y.dtype)
        return y, v, w, u, s

    x = np.array([0.5, -1.25, 2.0, 3.5])
    for got, want in zip(ft.jit(f)(x), f(x.copy())):
        np.testing.assert_array_equal(got, want)
    # y is [10, 2 (x1 + 5), 2 x2, 2 x3], seen four times and u once more (without y[0])
    g = ft.grad(lambda x: sum(np.sum(t) for t in f(x)))(x)
    np.testing.assert_allclose(g, [0.0, 10.0, 10.0, 10.0])
    check_grads(lambda x: sum(np.sum(t * t) for t in f(x)), (x,), order=1, eps=1e-6)
    xs = np.stack([x, x * 2])
    np.testing.assert_array_equal(ft.vmap(lambda x: f(x)[3])(xs), [f(r)[3] for r in xs])


def test_view_of_a_scalar_is_a_copy_and_of_a_0d_array_a_view():
    def f(x):
        s = x.sum()
        t = s.view()
        a = fnp.array(x[0])
        b = a.view()
        b[...] = 7.0
        return s, t, a

    x = np.array([0.5, 2.0])
    for got, want in zip(ft.jit(f)(x), f(x.copy())):
        np.testing.assert_array_equal(got, want)


def test_view_as_a_type_that_is_no_ndarray_is_refused_clearly():
    with pytest.raises(TypeError, match=r"x.view\(type=list\): type must be an ndarray type"):
        ft.jit(lambda x: x.view(type=list))(np.zeros(2))


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind in "fc" else a


ROUND_VALUES = np.array([-15.0, 125.73, -5356693.5, 9470809.6, 0.0125, -0.35, 6404.2265, 3e4,
                         -6.1e4, 2.5])


@pytest.mark.parametrize("x_dtype", [np.float64, np.float32, np.float16, np.int64, np.int8,
                                     np.bool_])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 3])
def test_round_into_out_rounds_in_outs_dtype_as_numpy(x_dtype, out_dtype, decimals):
    # NumPy scales x into out, then rounds and scales back there: a float64
    # array into a float32 out is not the rounded array cast, -15 at
    # decimals=-2 is -0.0 in a float out, a float16 out overflows where
    # x * 10**decimals does, and a bool array takes any decimals into a float out.
    x = (ROUND_VALUES if x_dtype is not np.bool_ else ROUND_VALUES > 0)
    x = np.clip(x, -128, 127).astype(x_dtype) if x_dtype is np.int8 else x.astype(x_dtype)
    want = np.zeros(x.shape, out_dtype)
    with np.errstate(over="ignore"):
        np.round(x, decimals, out=want)
        got = ft.jit(_into(lambda x, o: np.round(x, decimals, out=o)))(x, np.zeros_like(want))
        eager = fnp.round(x, decimals, out=np.zeros_like(want))
    assert got.dtype == want.dtype and eager.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(_bits(eager), _bits(want))


def test_round_into_an_integer_out_is_numpys_answer_or_its_refusal():
    ints = np.array([-15, 25, 100, 7], np.int64)
    for x, decimals, out in [(ints, 0, np.zeros(4, np.int16)), (ints, 2, np.zeros(4, np.int8)),
                             (ints, -1, np.zeros(4, np.int64)), (ints * 1.5, 1, np.zeros(4, int)),
                             (ints, 1, np.zeros(4, np.uint8))]:
        try:
            want = np.round(x, decimals, out=out.copy())
        except TypeError as error:
            with pytest.raises(TypeError, match=r"Cannot cast ufunc '(divide|multiply)' output|"
                                                r"cannot cast array data from dtype\('int64'\) to "
                                                r"dtype\('uint8'\) according to the rule "
                                                r"'same_kind' \(at .*\), as NumPy's round says"):
                ft.jit(_into(lambda x, o, d=decimals: np.round(x, d, out=o)))(x, out)
            assert "divide" in str(error) or "multiply" in str(error) or "uint8" in str(error)
            continue
        got = ft.jit(_into(lambda x, o, d=decimals: np.round(x, d, out=o)))(x, out)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_round_into_out_under_vmap_is_the_loop():
    def f(x):
        o = x.astype(np.float32)  # a traced array of the function's own
        np.round(x, 1, out=o)
        return o

    x = np.array([[125.73, -7037352.35806993], [136646.34705497, -7434992.49353808]])
    want = np.stack([f(row) for row in x])
    np.testing.assert_array_equal(_bits(ft.vmap(f)(x)), _bits(want))
    np.testing.assert_array_equal(_bits(want), _bits(np.round(x, 1, out=np.zeros(x.shape,
                                                                                  np.float32))))


@pytest.mark.parametrize("call", [
    lambda x, o, w: np.add(x, 1.0, out=o, where=w),
    lambda x, o, w: fnp.multiply(x, 2.0, out=o, where=w),
    lambda x, o, w: np.copyto(o, x, where=w),
])
def test_where_of_another_dtype_than_bool_is_refused_as_numpy(call):
    x = np.arange(3.0)
    for where in [np.array([1, 0, 1]), np.array([1.0, 0.0, 2.0]), np.array([1, 0, 1], np.int8)]:
        with pytest.raises(TypeError, match=r"according to the rule 'safe'"):
            call(x, np.zeros(3), where)
        with pytest.raises(TypeError, match=r"cannot cast array data from dtype\('(int64|float64|"
                                            r"int8)'\) to dtype\('bool'\) according to the rule "
                                            r"'safe' \(at .*\), as NumPy says of where=: pass a "
                                            r"bool array"):
            ft.jit(lambda x, o, w: (call(x, o, w), o)[1])(x, np.zeros(3), where)
    # a Python or NumPy scalar, or a list, is converted to bool, as NumPy converts it
    for where in [1, 0.0, np.int8(1), [1, 0, 2], [True, False, True]]:
        want = np.zeros(3)
        call(x, want, where)
        got = ft.jit(lambda x, o, w=where: (call(x, o, w), o)[1])(x, np.zeros(3))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name, call", [
    ("clip", lambda x, o: np.clip(x, 0, 1, out=o)),
    ("trunc", lambda x, o: np.fix(x, out=o)),
])
def test_casting_errors_of_clip_and_fix_name_numpys_ufunc(name, call):
    with pytest.raises(TypeError) as numpy_error:
        call(np.arange(3.0), np.zeros(3, np.int8))
    with pytest.raises(TypeError) as error:
        ft.jit(_into(call))(np.arange(3.0), np.zeros(3, np.int8))
    assert str(error.value).startswith(str(numpy_error.value))  # its text (str failed before)
    assert f"Cannot cast ufunc '{name}' output from dtype('float64') to dtype('int8')" in str(
        error.value)
