"""NumPy's scalars on traced values (``functrans/numpy/_scalars.py``): most
0-d results are immutable scalars in NumPy (``s += 1`` rebinds ``s``, aliases
keep the old value, ``s[...] = v`` is a TypeError), while views, copies of
0-d arrays, ``np.array(s)`` and 0-d array inputs are 0-d arrays, updated in
place.  Every program is plain NumPy code, run with NumPy as the oracle and
under jit, value_and_grad and vmap.
"""

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

X = np.array([0.5, -1.25, 2.0, 3.5])


def numpy_value(f, *args):
    return f(*[np.array(a, copy=True) for a in args])


def check_transforms(f, x=X, grads=True):
    """``f``'s value under jit, value_and_grad and vmap (against a loop) is
    NumPy's; its derivatives match finite differences."""
    want = numpy_value(f, x)
    got = ft.jit(f)(x)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    xs = np.stack([x, x[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(xs), [numpy_value(f, r) for r in xs], rtol=1e-13)
    if grads:
        value, _ = ft.value_and_grad(f)(x)
        np.testing.assert_allclose(value, want, rtol=1e-13)
        check_grads(f, (x,), order=1, modes=("fwd", "rev"), eps=1e-6)
        check_grads(ft.jit(f), (x,), order=1, modes=("rev",), eps=1e-6)


# -- scalars are immutable ------------------------------------------------------------------


def alias_of_a_sum(x):
    s = np.sum(x)          # a numpy.float64
    saved = s
    s += 1.0               # s = s + 1.0: saved keeps the sum
    return saved * 10 + s


def reshape_of_a_scalar(x):
    s = np.sum(x) * 1.0
    t = s.reshape(1)       # a new array: a scalar has no memory to share
    s += 1.0
    return t[0] * 10 + s


def views_of_a_scalar(x):
    s = np.dot(x, x)
    a, b, c = s[...], np.copy(s), np.squeeze(s)
    a += 1.0               # a and b are new 0-d arrays, c a scalar
    b *= 2.0
    c -= 3.0
    return s + 10 * a + 100 * b + 1000 * c


def accumulator(x):
    acc = np.sum(x)
    first = acc
    for i in range(x.size):
        acc += x[i] * acc
        acc *= 0.5
    return acc + first


def item_of_a_vector(x):
    y = x * 1.0
    y[0] *= 2.0            # an update of y, not of a scalar
    y[1] += y[0]
    item = y[2]            # a scalar: later updates of y leave it
    y[2] += 5.0
    return np.sum(y * y) + item


def products_and_reductions(x):
    d = np.dot(x, x)
    m = x @ x
    n = np.linalg.norm(x)
    keep = (d, m, n)
    d += 1.0
    m *= 2.0
    n /= 3.0
    return sum(keep) + d + m + n


def scalar_copy_is_a_scalar(x):
    s = np.max(x)
    c = s.copy()
    alias = c
    c += 1.0
    return alias + c + s


@pytest.mark.parametrize("f", [alias_of_a_sum, reshape_of_a_scalar, views_of_a_scalar,
                               accumulator, item_of_a_vector, products_and_reductions,
                               scalar_copy_is_a_scalar])
def test_scalars_are_immutable_as_in_numpy(f):
    check_transforms(f)


@pytest.mark.parametrize("f", [alias_of_a_sum, accumulator, products_and_reductions])
def test_second_order_transforms_agree(f):
    h = ft.hessian(f)(X)
    np.testing.assert_allclose(h, ft.jacfwd(ft.jacrev(f))(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ft.jit(ft.hessian(f))(X), h, rtol=1e-10, atol=1e-12)
    check_grads(f, (X,), order=2, modes=("fwd", "rev"), eps=1e-5, rtol=1e-4, atol=1e-4)


def test_the_repro_values():
    x = np.arange(3.0)
    assert alias_of_a_sum(x) == ft.jit(alias_of_a_sum)(x) == 34.0
    assert reshape_of_a_scalar(x) == ft.jit(reshape_of_a_scalar)(x) == 34.0
    np.testing.assert_array_equal(ft.grad(alias_of_a_sum)(x), [11.0, 11.0, 11.0])


def test_an_integer_scalar_plus_a_float_is_a_float_as_numpy():
    def f(x):
        s = np.sum(x)          # numpy.int64
        saved = s
        s += 1.5               # s = s + 1.5: float64, no casting error
        return s, saved

    x = np.arange(4)
    want = f(x)
    got = ft.jit(f)(x)
    assert [np.result_type(g) for g in got] == [np.float64, np.int64]
    assert [g.item() for g in got] == [w.item() for w in want] == [7.5, 6]


def test_float32_scalars_stay_float32():
    def f(x):
        s = np.sum(x)
        s *= 2.0
        return s

    x = X.astype(np.float32)
    assert ft.jit(f)(x).dtype == np.float32 == np.result_type(f(x))


def test_no_warning_for_a_scalar_input_rebound():
    def f(a, x):
        b = a
        a += np.sum(x)         # a Python float: a is rebound, b keeps 2.0
        return a * b

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ft.jit(f)(2.0, X) == f(2.0, X)
        assert ft.grad(f)(2.0, X) == pytest.approx(4.0 + np.sum(X))
        assert ft.grad(f)(np.float64(2.0), X) == pytest.approx(4.0 + np.sum(X))


# -- 0-d arrays are mutable -----------------------------------------------------------------


def zero_d_views(x):
    a = x[1, ...]          # a 0-d view of x
    alias = a
    a += 1.0
    b = x[:1].reshape(())  # views too
    b *= 3.0
    c = np.squeeze(x[2:3])
    c -= alias
    return np.sum(x * x) + alias + b + c


def array_of_a_scalar(x, xp=np):
    s = np.sum(x)
    a = xp.array(s)        # a 0-d array
    alias = a
    a += 1.0
    a[...] *= 2.0
    c = a.copy()           # a 0-d array too
    c_alias = c
    c += x[0]
    t = a.astype(np.float64)
    t_alias = t
    t -= 1.0
    return s + 10 * alias + 100 * c_alias + 1000 * t_alias


def scalars_of_a_zero_d_array(x):
    a = np.copy(np.sum(x))
    items = [a[()], np.nan_to_num(a), np.flip(a), a + 0.0]   # numpy.float64 each
    aliases = list(items)
    for item in items:
        item += 1.0
    return a + sum(aliases) * 10


def flip_of_a_zero_d_array_is_a_scalar(x):
    a = np.copy(np.sum(x))
    f = np.flip(a)         # numpy.float64: a copy
    alias = f
    f += 1.0
    return a + 10 * alias


@pytest.mark.filterwarnings("ignore:.*updates an input of the traced function")
@pytest.mark.parametrize("f", [zero_d_views, flip_of_a_zero_d_array_is_a_scalar,
                               scalars_of_a_zero_d_array])
def test_zero_d_arrays_are_updated_in_place_as_in_numpy(f):
    check_transforms(f)


@pytest.mark.parametrize("name", ["array", "asarray", "copy"])
def test_array_of_a_scalar_is_a_zero_d_array(name):
    # np.array and np.asarray do not dispatch to a traced value: the traced
    # program calls functrans.numpy's, the oracle NumPy's of the same name.
    def f(x, xp=np):
        s = np.sum(x)
        a = getattr(xp, name)(s)    # a new 0-d array: s stays a scalar
        alias = a
        a += 1.0
        a[...] *= 2.0
        return s + 10 * alias

    want = f(X.copy())
    assert ft.jit(lambda x: f(x, fnp))(X) == want
    traced = lambda x: array_of_a_scalar(x, fnp)  # noqa: E731
    want = array_of_a_scalar(X.copy())
    assert ft.jit(traced)(X) == want
    assert ft.value_and_grad(traced)(X)[0] == want
    xs = np.stack([X, X[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(traced)(xs), [array_of_a_scalar(r) for r in xs],
                               rtol=1e-13)
    check_grads(traced, (X,), order=1, modes=("fwd", "rev"), eps=1e-6)


def test_zero_d_array_inputs_are_arrays():
    def f(a, x):
        b = a
        a += np.sum(x)         # a 0-d array: b sees the update
        return a * b

    a = np.array(2.0)
    want = f(a.copy(), X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ft.jit(f)(a, X) == want
        value, grad = ft.value_and_grad(f)(a, X)
    assert value == want
    assert grad == pytest.approx(2 * (2.0 + np.sum(X)))
    assert want != f(2.0, X)   # a Python float is a scalar: b keeps 2.0


def test_jit_tells_a_numpy_scalar_argument_from_a_zero_d_array():
    """``np.float64(2.0)`` and ``np.array(2.0)`` have one type for a trace
    (f64[]), but ``a += 1`` rebinds the scalar and updates the array: one
    jitted function called with both, in turn, gives NumPy's answer each time."""
    def f(a):
        b = a
        a += 1.0
        return b * 10 + a

    jitted = ft.jit(f)
    args = [np.float64(2.0), np.array(2.0), np.float64(2.0), np.array(2.0), 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [jitted(a) for a in args]
    assert got == [f(a.copy() if isinstance(a, np.ndarray) else a) for a in args]
    assert got[:2] == [23.0, 33.0]


# -- writes into a scalar are refused, as NumPy refuses them -------------------------------


def item_assignment(x):
    s = np.sum(x)
    s[...] = 1.0
    return s


def out_argument(x):
    s = np.sum(x)
    np.add(x[0], 1.0, out=s)
    return s


def update_through_an_item(x):
    s = np.sum(x)
    s[...] += 1.0
    return s


@pytest.mark.parametrize("f, numpy_says", [
    (item_assignment, "'numpy.float64' object does not support item assignment"),
    (update_through_an_item, "'numpy.float64' object does not support item assignment"),
    (out_argument, "return arrays must be of ArrayType"),
])
def test_writes_into_a_scalar_raise_numpys_type_error(f, numpy_says):
    with pytest.raises(TypeError, match=numpy_says):
        f(X.copy())
    for transform in (ft.jit, ft.grad):
        with pytest.raises(TypeError) as info:
            transform(f)(X)
        message = str(info.value)
        assert message.startswith(f"{f.__name__}: ")
        assert numpy_says in message
        assert "test_inplace_scalars.py" in message  # the user's line
        assert "s = np.copy(s)" in message


@pytest.mark.parametrize("write", [
    lambda s: s.fill(1.0),
    lambda s: s.resize(2),
    lambda s: np.copyto(s, 1.0),
])
def test_other_writes_into_a_scalar_are_refused(write):
    # NumPy refuses copyto too; fill and resize write into a temporary copy,
    # leaving the scalar as it was (fill, resize): refused, never dropped.
    def f(x):
        s = np.sum(x)
        write(s)
        return s

    with pytest.raises(TypeError, match=r"f: .* value that NumPy holds as a numpy.float64 "
                                        r"scalar, which cannot be changed in place"):
        ft.jit(f)(X)


def test_broadcast_of_a_scalar_is_read_only_as_in_numpy():
    def f(x):
        b = np.broadcast_to(np.sum(x), (3,))
        b[0] = 1.0
        return b

    with pytest.raises(ValueError, match="read-only"):
        f(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        ft.jit(f)(X)


@pytest.mark.parametrize("make", [
    lambda x: np.where(x[0] > 0, np.sum(x), 1.0),
    lambda x: np.select([x[0] > 0], [np.sum(x)]),
    lambda x: np.tensordot(x, x, 1),
    lambda x: np.roll(np.sum(x), 0),
    lambda x: np.tile(np.max(x), ()),
    lambda x: np.cov(x),
    lambda x: np.piecewise(np.sum(x), [True], [lambda s: s * 2.0]),
    lambda x: np.copy(np.sum(x))[...],
])
def test_functions_whose_zero_d_results_are_arrays(make):
    def f(x):
        a = make(x)            # a 0-d array in NumPy
        alias = a
        a += 1.0
        return alias * 10

    check_transforms(f)


def test_vmap_over_a_1d_array_maps_numpy_scalars():
    """NumPy's loop over a 1-d array gets scalars (``x[i]``): ``a += 1``
    rebinds each, and an alias keeps the old value; vmap's function gets
    them too.  Over a 2-d array each member is an array, updated in place."""
    def f(a):
        b = a
        a += 1.0
        return b * 10 + a

    v = np.arange(3.0)
    np.testing.assert_array_equal(ft.vmap(f)(v), [f(e) for e in v])
    np.testing.assert_array_equal(ft.vmap(ft.grad(f))(v), [11.0, 11.0, 11.0])
    m = np.arange(6.0).reshape(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(ft.vmap(f)(m), [f(r.copy()) for r in m])
