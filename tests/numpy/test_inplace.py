"""NumPy's in-place semantics on traced arrays (``functrans/numpy/_inplace.py``).

NumPy is the oracle: every program below is plain NumPy code, run once on
NumPy arrays and once under each transform; values must agree, derivatives
must match finite differences (``check_grads``), ``vmap`` must equal a loop.
A generated-program test mixes views, aliases and updates at random.  The
refusals are checked by their error texts.
"""

import copy
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

# Updating an input warns (tested below); the programs here do it on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:.*updates an input of the traced function")


def numpy_value(f, *args):
    """``f`` run on copies of the arguments with NumPy: the oracle."""
    return f(*[np.array(a, copy=True) for a in args])


# -- the forms, as plain NumPy programs of one float array --------------------------------


def view_update(x):
    head = x[:2]
    head *= 3.0
    return np.sum(x ** 2)


def alias_update(x):
    y = x
    y += 1.0
    return np.sum(x * y)


def aliases_in_containers(x):
    box = {"a": x, "l": [x[1:]]}
    box["l"][0] -= 0.5
    box["a"] *= 2.0
    return np.sum(box["l"][0] * x[:-1]) + x[0]


def strided_views(x):
    a = x[::2]
    b = x[::-1]
    a += b[:a.size] * 0.5     # b is another view of the same array
    c = x[1::3]
    c **= 2
    return np.sum(x * np.arange(1.0, x.size + 1)) + np.sum(a) + np.sum(b)


def reshape_transpose_ravel(x):
    m = x.reshape(2, 3)
    t = m.T
    t[0] += 10.0           # column 0 of m, elements 0 and 3 of x
    r = np.ravel(m)
    r[-1] *= t[2, 1]       # t[2, 1] is x[5] after the updates above
    s = np.swapaxes(m, 0, 1)
    s[1:] /= 2.0
    return np.sum(x * x) + np.sum(m) + np.sum(t) + np.sum(r * s.T.ravel())


def transposed_reshape_is_a_copy(x):
    v = x.reshape(2, 3).T.reshape(-1)    # a copy in NumPy: x stays as it is
    v += 100.0
    w = x.reshape(2, 3).T[::-1]          # a view: x changes
    w[0] *= v[1]
    return np.sum(x ** 2) + np.sum(v)


def fancy_index_is_a_copy(x):
    y = x[[0, 2]]
    y += 5.0
    x[1:3] *= y                          # a view: x changes
    z = x[np.array([True, False] * 3)]   # a boolean mask: a copy too
    z *= 2.0
    return np.sum(x * x) + np.sum(y)


def setitem_forms(x):
    x[0] = x[1] * 2.0
    x[1:] += x[:-1]       # overlapping operands: NumPy reads the old x[:-1]
    x[[2, 3]] = x[[3, 2]]
    x[-1] = 7
    x[x.size // 2:] *= x[0]
    return np.sum(np.sin(x))


def repeated_indices(x):
    x[[0, 0, 2]] += x[1] * x[3]     # x[0] gets one addition, as in NumPy
    x[[1, 1]] = x[[2, 3]]           # the last write wins
    return np.sum(x * x * np.arange(1.0, 7.0))


def local_array_becomes_traced(x):
    y = np.ones(3) * 0.0      # a NumPy array...
    y = y + x[:3]             # ...rebound to a traced one
    y[1] = x[4] ** 2
    y[2] += x[5]
    z = x.copy()
    z[0] = 0.0                # a copy: x is unchanged
    return np.sum(y * z[:3]) + np.sum(x)


def out_arguments(x):
    np.multiply(x, 2.0, out=x)
    np.add(x[:3], x[3:], out=x[3:])
    np.sin(x[:2], out=x[:2])
    mask = np.array([True, False, True, False, True, False])
    np.add(x, 10.0, out=x, where=mask)
    fnp.subtract(x, 1.0, out=x)
    np.clip(x, -1.5, 12.0, out=x)
    x[:3].clip(0.0, 1.0, out=x[:3])
    return np.sum(x * x)


def ufunc_at_forms(x):
    np.add.at(x, [0, 0, 1], x[2])
    np.subtract.at(x, [3, 3], 0.25)
    np.multiply.at(x, [4, 4], 2.0)
    np.maximum.at(x, [5], 1.0)
    return np.sum(x * x)


def numpy_write_functions(x):
    np.copyto(x[1:], x[:-1])               # overlapping: the old values are copied
    np.put(x, [0, 5], [x[3] * 2.0])        # values repeated
    np.place(x, np.array([0, 1, 0, 1, 0, 0], bool), [3.0, x[2]])
    np.putmask(x, np.arange(6) % 3 == 0, x * 10.0)
    np.copyto(x, 0.5, where=np.arange(6) == 2)
    return np.sum(x * x)


def methods(x):
    y = x.copy()
    y.sort()
    z = x[:3]
    z.fill(x[5])                   # through a view: x[:3] all become x[5]
    f = x.reshape(2, 3)
    f.flat[[1, 4]] = x[0] * 3.0
    f.flat = f.flat[2] + np.arange(6.0) * 0   # every element
    w = x.copy()
    w.resize(8, refcheck=False)
    return np.sum(y * np.arange(6.0)) + np.sum(x) + np.sum(w * w) + f.flat[3]


def more_views(x):
    a = np.atleast_2d(x)                   # (1, 6): a view
    a[0, ::5] = 1.0
    r = np.reshape(x, (3, 2), copy=True)   # a copy
    r += 50.0
    first, second = np.split(x, 2)
    second -= first
    row = np.unstack(x.reshape(2, 3))[1]
    row *= 0.5
    np.moveaxis(x.reshape(2, 3, 1), 0, -1)[1] += 2.0
    return np.sum(x * x) + np.sum(r)


def sort_through_view(x):
    x[::-1].sort()     # sorts x descending
    return np.sum(x * np.arange(6.0))


def dtype_rules(x):
    y = x.astype(np.float32)
    y += x                  # a float64 operand: y stays float32
    y *= 2
    z = (x * 100).astype(np.int64)
    z //= 3
    z[0] = 2.9              # assignment casts unsafely: 2
    return np.sum(y) + np.sum(z * x)


def matmul_in_place(x):
    m = x.reshape(2, 3)[:, :2]          # a view: the product is written into x
    m @= np.array([[1.0, 2.0], [3.0, 4.0]])
    return np.sum(x * x)


PROGRAMS = [view_update, alias_update, aliases_in_containers, strided_views,
            reshape_transpose_ravel, transposed_reshape_is_a_copy, fancy_index_is_a_copy,
            setitem_forms, repeated_indices, local_array_becomes_traced, out_arguments,
            ufunc_at_forms,
            numpy_write_functions, methods, more_views, sort_through_view, dtype_rules,
            matmul_in_place]

X = np.array([0.3, -1.2, 0.7, 2.1, -0.4, 1.6])
X.flags.writeable = False  # a NumPy run of a program must never reach it


def pure(f):
    """``f`` on a copy of its argument: ``check_grads`` also runs it on NumPy
    arrays, which the programs write into."""
    return lambda x: f(np.array(x, copy=True) if isinstance(x, np.ndarray) else x)


def test_the_issue_examples():
    value, grad = ft.value_and_grad(view_update)(np.array([1.0, 2.0, 3.0]))
    assert value == 54.0
    np.testing.assert_array_equal(grad, [18.0, 36.0, 6.0])
    assert ft.jit(alias_update)(np.array([1.0, 2.0, 3.0])) == 29.0


@pytest.mark.parametrize("f", PROGRAMS)
def test_values_follow_numpy(f):
    want = numpy_value(f, X)
    np.testing.assert_allclose(ft.jit(f)(X), want, rtol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, _ = ft.value_and_grad(f)(X)
    np.testing.assert_allclose(value, want, rtol=1e-13)
    np.testing.assert_allclose(ft.vmap(f)(np.stack([X, X[::-1]])),
                               [want, numpy_value(f, X[::-1])], rtol=1e-13)


@pytest.mark.parametrize("f", [f for f in PROGRAMS if f is not dtype_rules])  # integer steps
def test_derivatives_match_finite_differences(f):
    check_grads(pure(f), (X,), order=1, modes=("fwd", "rev"), eps=1e-6)
    check_grads(ft.jit(f), (X,), order=1, modes=("rev",), eps=1e-6)


@pytest.mark.parametrize("f", [view_update, reshape_transpose_ravel, local_array_becomes_traced,
                               out_arguments, numpy_write_functions])
def test_second_order_and_jacobians(f):
    check_grads(pure(f), (X,), order=2, modes=("fwd", "rev"), eps=1e-5, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ft.hessian(f)(X), ft.jacfwd(ft.jacrev(f))(X), rtol=1e-10,
                               atol=1e-12)
    g = ft.grad(f)
    np.testing.assert_allclose(ft.jacfwd(g)(X), ft.jacrev(g)(X), rtol=1e-10, atol=1e-12)
    v = np.linspace(-1.0, 1.0, X.size)
    out, tangent = ft.jvp(f, (X,), (v,))
    _, pullback = ft.vjp(f, X)
    np.testing.assert_allclose(out, numpy_value(f, X), rtol=1e-13)
    np.testing.assert_allclose(tangent, np.dot(pullback(1.0)[0], v), rtol=1e-10, atol=1e-12)


def test_vector_valued_update_under_jacobians():
    def f(x):
        y = x.copy()
        y[1:] *= x[:-1]
        return y

    np.testing.assert_allclose(ft.jacfwd(f)(X), ft.jacrev(f)(X), rtol=1e-13)
    np.testing.assert_allclose(ft.jit(ft.jacrev(f))(X), ft.jacfwd(f)(X), rtol=1e-13)
    check_grads(f, (X,), order=2, eps=1e-5, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**="])
def test_every_arithmetic_augmented_operator_on_a_view(op):
    src = f"def f(x):\n    v = x[1::2]\n    v {op} 1.5\n    return np.sum(x * x) + np.sum(v)\n"
    scope = {"np": np}
    exec(src, scope)  # noqa: S102 -- one program per operator
    f = scope["f"]
    x = np.array([0.3, 1.2, 2.7, 3.1, 0.4, 1.6])
    want = numpy_value(f, x)
    np.testing.assert_allclose(ft.jit(f)(x), want, rtol=1e-13)
    np.testing.assert_allclose(ft.vmap(f)(np.stack([x, x + 1])),
                               [want, numpy_value(f, x + 1)], rtol=1e-13)
    if op not in ("//=", "%="):  # piecewise constant or with jumps: finite differences mislead
        check_grads(pure(f), (x,), order=1, eps=1e-6)


@pytest.mark.parametrize("op", ["&=", "|=", "^=", "<<=", ">>=", "+=", "//=", "%=", "*="])
def test_integer_augmented_operators(op):
    src = (f"def f(x):\n    v = x[::2]\n    v {op} 3\n    w = x.reshape(2, 3).T\n"
           f"    w[0] {op} x[1]\n    return x\n")
    scope = {"np": np}
    exec(src, scope)  # noqa: S102
    f = scope["f"]
    x = np.array([5, 12, 7, 1, 9, 30])
    want = numpy_value(f, x)
    np.testing.assert_array_equal(ft.jit(f)(x), want)
    np.testing.assert_array_equal(ft.vmap(f)(np.stack([x, x + 2])),
                                  [want, numpy_value(f, x + 2)])


def test_matmul_in_place_on_a_traced_array():
    def f(a, b):
        c = a
        c @= b
        return a

    a, b = np.arange(6.0).reshape(2, 3), np.arange(9.0).reshape(3, 3) / 7
    np.testing.assert_allclose(ft.jit(f)(a, b), numpy_value(f, a, b), rtol=1e-13)
    check_grads(lambda a, b: f(a.copy(), b), (a, b), order=1, eps=1e-6)


def test_the_caller_array_is_not_changed_and_a_warning_names_the_line():
    def bump(x):
        x += 1.0
        return x * 2.0

    x = np.array([1.0, 2.0])
    with pytest.warns(UserWarning, match=r"bump: x \+= v at .*test_inplace\.py:\d+ updates an "
                                         r"input of the traced function \(f64\[2\]\)\. The rest "
                                         r"of the function sees the update, but the caller's "
                                         r"array is not changed"):
        out = ft.jit(bump)(x)
    np.testing.assert_array_equal(out, [4.0, 6.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(ft.grad(lambda v: bump(v).sum())(x), [2.0, 2.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_updating_a_copy_does_not_warn():
    def f(x):
        y = x.copy()
        y += 1.0
        z = np.copy(x)
        z[0] = 3.0
        w = fnp.array(x)
        w *= 2.0
        return y + z + w + x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(ft.jit(f)(X), numpy_value(f, X))


def test_copies_are_new_arrays():
    def f(x):
        copies = [x.copy(), copy.copy(x), copy.deepcopy(x), np.copy(x), x.astype(x.dtype),
                  x.flatten(), fnp.array(x), +x, np.positive(x), fnp.asarray(x, copy=True)]
        for c in copies:
            c *= 2.0
        return [x, *copies]

    got, want = ft.jit(f)(X), numpy_value(f, X)
    np.testing.assert_array_equal(got[0], X)
    np.testing.assert_array_equal(got, want)


def test_results_that_are_new_arrays_in_numpy_are_never_the_argument():
    def f(x):
        outs = [np.concatenate([x]), np.hstack([x]), np.vstack([x])[0], np.tile(x, 1),
                np.repeat(x, 1), np.roll(x, 0), np.nan_to_num(x), np.stack([x])[0],
                np.column_stack([x])[:, 0]]
        for o in outs:
            o += 1
        r = np.rot90(x.reshape(2, 3))   # a view in NumPy
        r[0, 0] = -5.0
        return [x, *outs]

    for x in (X, np.arange(6)):
        got, want = ft.jit(f)(x), numpy_value(f, x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_traced_boolean_mask_assignment_of_a_scalar():
    def f(x):
        y = x.copy()
        y[y > 0.5] = 0.5           # the mask is known only when the program runs
        z = x * 2.0
        z[x < 0] = x[0]           # a traced 0-d value
        return y, z

    got = ft.jit(f)(X)
    for g, w in zip(got, numpy_value(f, X)):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(ft.vmap(f)(np.stack([X, -X]))[1][1], f(-X)[1])
    check_grads(lambda x: sum(np.sum(o * o) for o in f(x)), (X,), order=1, eps=1e-6)


def test_int_array_plus_float_raises_numpys_casting_error():
    def f(x):
        n = (x * 10).astype(np.int64)
        n += 1.5
        return n

    with pytest.raises(np._core._exceptions.UFuncTypeError) as numpy_error:
        f(X.copy())
    with pytest.raises(np._core._exceptions.UFuncTypeError) as traced:
        ft.jit(f)(X)
    assert str(traced.value) == str(numpy_error.value) == (
        "Cannot cast ufunc 'add' output from dtype('float64') to dtype('int64') with "
        "casting rule 'same_kind'")
    assert "test_inplace.py" in traced.value.__notes__[0]


#: Writes of a concrete value NumPy refuses: a Python integer out of the array's
#: range (every way of writing one), a Python float NaN or infinity into integers.
NUMPY_REFUSED_WRITES = {
    "setitem": (lambda n: n.__setitem__(0, -1), OverflowError),
    "setitem_list": (lambda n: n.__setitem__(slice(0, 2), [300, 1]), OverflowError),
    "ellipsis": (lambda n: n.__setitem__(Ellipsis, 256), OverflowError),
    "fill": (lambda n: n.fill(-1), OverflowError),
    "put": (lambda n: np.put(n, [0], 300), OverflowError),
    "place": (lambda n: np.place(n, [True, False] * 3, [-1]), OverflowError),
    "putmask": (lambda n: np.putmask(n, n > 0, -1), OverflowError),
    "copyto": (lambda n: np.copyto(n, -1, casting="unsafe"), OverflowError),
    "nan": (lambda n: n.__setitem__(0, float("nan")), ValueError),
    "inf": (lambda n: n.__setitem__(0, float("inf")), OverflowError),
}


@pytest.mark.parametrize("name", NUMPY_REFUSED_WRITES)
def test_values_numpy_cannot_write_are_refused_as_numpy_refuses_them(name):
    write, error = NUMPY_REFUSED_WRITES[name]

    def f(x):
        n = (abs(x) * 10).astype(np.uint8)
        write(n)
        return n

    with pytest.raises(error) as numpy_error:
        f(X.copy())
    with pytest.raises(error) as traced:
        ft.jit(f)(X)
    assert str(traced.value).startswith(f"{numpy_error.value} (at ")
    assert "test_inplace.py" in str(traced.value)
    assert str(traced.value).endswith(", as NumPy says: write a value that a uint8 array can hold")


def test_a_python_integer_out_of_range_through_flat_is_refused():
    def f(x):
        n = (abs(x) * 10).astype(np.uint8)
        n.flat[0] = 999
        return n

    with pytest.raises(ValueError, match="Error setting single item of array"):
        f(X.copy())  # NumPy's text here; functrans names the value's range
    with pytest.raises(OverflowError, match="^Python integer 999 out of bounds for uint8 "):
        ft.jit(f)(X)


def test_array_values_are_cast_as_numpy_casts_them():
    def f(x):
        n = (abs(x) * 10).astype(np.uint8)
        n[:2] = np.array([300, -1])  # an array's values wrap, as in NumPy
        n[2] = np.int64(258)
        np.copyto(n[3:], np.array([np.nan]), casting="unsafe")
        np.put(n, [4], [2.9])
        return n

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's NaN cast
        want = f(X.copy())
        got = ft.jit(f)(X)
    np.testing.assert_array_equal(got[:5], want[:5])
    assert got.dtype == np.uint8


def test_place_and_putmask_take_a_mask_of_the_arrays_size_in_any_shape():
    def f(x):
        m = x.copy().reshape(2, 3)
        np.place(m, X > 0, [7.0, 8.0])  # a flat mask of six elements
        np.putmask(m, np.arange(6) % 2 == 0, -x)
        return m

    np.testing.assert_array_equal(ft.jit(f)(X), numpy_value(f, X))
    check_grads(f, (X,), order=1)


@pytest.mark.parametrize("write", [
    lambda m, x: np.place(m, [True, False, True], [7.0]),
    lambda m, x: np.putmask(m, x[:3] > 0, 7.0),
], ids=["place", "putmask"])
def test_place_and_putmask_refuse_a_mask_of_another_size_as_numpy(write):
    def f(x):
        m = x.reshape(2, 3).copy()
        write(m, x)
        return m

    with pytest.raises(ValueError, match="mask and data must be the same size"):
        f(X.copy())
    with pytest.raises(ValueError, match=(
            r"^f: (place|putmask)\((arr|a), mask, (vals|values)\) \(at .*test_inplace\.py:\d+\): "
            r"mask and data must be the same size, as NumPy says; the mask has 3 elements, "
            r"the array 6\. Broadcast the mask first \(np\.broadcast_to\(mask, a\.shape\)\)$")):
        ft.jit(f)(X)


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_put_with_no_index_changes_nothing(mode):
    def f(x):
        y = x.copy()
        np.put(y, [], [], mode=mode)
        return y

    np.testing.assert_array_equal(ft.jit(f)(X), numpy_value(f, X))
    np.testing.assert_array_equal(ft.jit(f)(X[:0]), numpy_value(f, X[:0]))


def test_float32_updated_by_float64_stays_float32():
    def f(x):
        y = x.astype(np.float32)
        y[1:] -= x[:-1]
        np.add(y, x, out=y)
        return y

    got = ft.jit(f)(X)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, numpy_value(f, X))


def test_python_branches_on_updated_values_outside_jit():
    def f(x):
        y = x.copy()
        y[0] = -y[1]
        if y[0] > 0:          # the value after the update decides the branch
            y *= 2.0
        v = y[1:]
        v += 1.0
        return np.sum(y * y)

    x = np.array([1.0, -2.0, 3.0])
    value, grad = ft.value_and_grad(f)(x)
    assert value == numpy_value(f, x) == 74.0
    np.testing.assert_array_equal(grad, [0.0, -28.0, 28.0])


def test_in_place_updates_inside_control_flow_bodies():
    def body(i, c):
        c[i] += 1.0
        v = c[::2]
        v *= 2.0
        return c

    def f(x):
        return ft.lax.fori_loop(0, 3, body, x.copy())

    def numpy_f(x):
        c = x.copy()
        for i in range(3):
            c = body(i, c)
        return c

    np.testing.assert_allclose(ft.jit(f)(X), numpy_f(X), rtol=1e-13)
    check_grads(lambda x: f(x).sum(), (X,), order=1, eps=1e-6)


@pytest.mark.parametrize("f", [reshape_transpose_ravel, setitem_forms, out_arguments])
def test_native_tier(f):
    pytest.importorskip("numba", reason="the native tier needs numba (the native extra)")
    np.testing.assert_allclose(ft.jit(f, compiler="native")(X), numpy_value(f, X), rtol=1e-13)


def test_threads_keep_their_own_bookkeeping():
    results, errors = {}, []

    def work(k):
        try:
            x = X + k
            results[k] = (ft.jit(reshape_transpose_ravel)(x), ft.grad(setitem_forms)(x))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, (value, grad) in results.items():
        np.testing.assert_allclose(value, numpy_value(reshape_transpose_ravel, X + k),
                                   rtol=1e-13)
        np.testing.assert_allclose(grad, ft.grad(setitem_forms)(X + k), rtol=1e-13)


def test_programs_without_updates_trace_as_before():
    # A regression guard: views are recorded on the tracers only, so a program
    # without updates traces to the Jaxpr it gave before updates existed.
    def f(x):
        a = x[1:]
        b = x.reshape(2, 3).T
        a2 = a[::2]
        return a.sum() + b[0].sum() + a2.sum() + x.ravel()[1]

    assert str(ft.make_jaxpr(f)(X)) == """\
{ lambda ; a:f64[6]. let
    b:f64[5] = slice[limit_indices=(6,) start_indices=(1,) strides=(1,)] a
    c:f64[2,3] = reshape[new_sizes=(2, 3)] a
    d:f64[3,2] = transpose[permutation=(1, 0)] c
    e:f64[3] = slice[limit_indices=(5,) start_indices=(0,) strides=(2,)] b
    f:f64[] = reduce_sum[axes=(0,)] b
    g:f64[1,2] = slice[limit_indices=(1, 2) start_indices=(0, 0) strides=(1, 1)] d
    h:f64[2] = squeeze[dimensions=(0,)] g
    i:f64[] = reduce_sum[axes=(0,)] h
    j:f64[] = add f i
    k:f64[] = reduce_sum[axes=(0,)] e
    l:f64[] = add j k
    m:f64[1] = slice[limit_indices=(2,) start_indices=(1,) strides=(1,)] a
    n:f64[] = squeeze[dimensions=(0,)] m
    o:f64[] = add l n
  in (o,) }"""



#: Edge cases, each a function of ``X`` returning what it updated: empty
#: views, negative steps, integer values into floats, bool arrays, a 0-d view,
#: NaN, -0.0, float16 and uint8 (wrapping) arrays, and every kind of view.
EDGE_CASES = {
    "empty": lambda x: (lambda v: (v.__iadd__(1.0), x)[1])(x[3:3]),
    "negstep": lambda x: (x[::-2].__imul__(2.0), x)[1],
    "int_in_float": lambda x: (x.__setitem__(slice(0,2), np.array([1,2])), x)[1],
    "bool_arr": lambda x: (lambda b: (b.__ior__(True), b)[1])(x > 2),
    "0d": lambda x: (lambda s: (s.__iadd__(1.0), x)[1])(x[...,0]),
    "nan": lambda x: (x.__imul__(np.nan), x)[1],
    "neg0": lambda x: (x[:1].__imul__(-0.0), x)[1],
    "f16": lambda x: (lambda h: (h.__iadd__(x), h)[1])(x.astype(np.float16)),
    "uint8_add": lambda x: (lambda h: (h.__iadd__(250), h)[1])(x.astype(np.uint8)),
    "ellipsis_set": lambda x: (x.__setitem__(Ellipsis, 3.0), x)[1],
    "none_view": lambda x: (x[None, 1:].__iadd__(1.0), x)[1],
     "2d_T_setitem": lambda x: (lambda m: (m.T.__setitem__((slice(None), 0), -1.0), m)[1])(
        x.reshape(2, 3)),
    "flip": lambda x: (np.flip(x).__setitem__(0, 9.0), x)[1],
    "squeeze": lambda x: (np.squeeze(x.reshape(1, 6)).__setitem__(2, 9.0), x)[1],
    "expand": lambda x: (np.expand_dims(x, 0).__setitem__((0, 2), 9.0), x)[1],
    "swap": lambda x: (x.reshape(2,3).swapaxes(0,1).__setitem__((2, 1), 9.0), x)[1],
    "transpose_axes": lambda x: (x.reshape(1,2,3).transpose(2,0,1).__setitem__((0,0,1), 9.0), x)[1],
    "ravel_of_view": lambda x: (x.reshape(2,3)[:, ::2].ravel().__setitem__(0, 9.0), x)[1],
    "reshape_of_slice": lambda x: (x[2:].reshape(2,2).__setitem__((1,1), 9.0), x)[1],
    "ravel_of_strided_1d": lambda x: (np.ravel(x[::2]).__setitem__(0, 9.0), x)[1],
    "ravel_of_contiguous_1d": lambda x: (np.ravel(x[2:]).__setitem__(0, 9.0), x)[1],
    "reshape_of_strided": lambda x: (x[::2].reshape(3,1).__setitem__((1,0), 9.0), x)[1],
}


@pytest.mark.parametrize("name", EDGE_CASES)
def test_edge_cases_follow_numpy(name):
    f = EDGE_CASES[name]
    want, got = numpy_value(f, np.arange(6.0)), ft.jit(f)(np.arange(6.0))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# -- refusals ---------------------------------------------------------------------------------


def test_numpy_buffer_cannot_hold_a_traced_value():
    def add_into_buffer(x):
        y = np.zeros(6)
        y += x
        return y.sum()

    for transform in (ft.jit, ft.grad):
        with pytest.raises((TypeError, ValueError), match=(
                r"^add_into_buffer: numpy.add\(\.\.\., out=\) \(at .*test_inplace\.py:\d+\) "
                r"would write a traced value into a numpy.ndarray, which cannot hold one \(the "
                r"update would be lost\)\. Make the array a traced value instead: write "
                r"y = y \+ x rather than y \+= x")):
            transform(add_into_buffer)(X)

    def set_buffer(x):
        y = np.zeros(6)
        y[0] = x[0]
        return y

    with pytest.raises(ValueError) as e:
        ft.grad(lambda v: set_buffer(v).sum())(X)
    assert "(buf[i] = x) ends up here too" in str(e.value.__cause__)

    def copy_into_buffer(x):
        y = np.zeros(6)
        np.copyto(y, x)
        return y

    with pytest.raises((TypeError, ValueError), match=r"copyto\(dst, src\) \(at .*\) would write a "
                                                 r"traced value into a numpy.ndarray"):
        ft.jit(copy_into_buffer)(X)


def test_read_only_views_are_refused_as_numpy_refuses_them():
    def through_diagonal(x):
        d = x.reshape(2, 3).diagonal()
        d += 1.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        through_diagonal(X.copy())
    with pytest.raises((TypeError, ValueError), match=(
            r"^through_diagonal: x \+= v writes through a view of a traced array \(at "
            r".*test_inplace\.py:\d+\), but NumPy makes this view read-only \(assignment "
            r"destination is read-only\)\. Write into a copy \(\.copy\(\)\), or update the "
            r"array it was made from$")):
        ft.jit(through_diagonal)(X)

    def through_broadcast(x):
        b = np.broadcast_to(x, (2, 6))
        b[0, 0] = 1.0
        return x

    with pytest.raises((TypeError, ValueError), match="read-only"):
        ft.jit(through_broadcast)(X)


def test_view_with_a_traced_index_is_refused_but_read_consistently():
    def f(x, i):
        m = x.reshape(2, 3)
        row = m[i]
        x[0] = 100.0          # row is refreshed: it sees the update
        return row.sum()

    # A traced integer stands for a Python or NumPy integer (a view in NumPy;
    # a 0-d integer array index would make a copy).
    np.testing.assert_allclose(ft.jit(f)(X, 0), f(X.copy(), 0), rtol=1e-13)
    np.testing.assert_allclose(ft.jit(f)(X, 1), f(X.copy(), np.int64(1)), rtol=1e-13)

    def g(x, i):
        row = x.reshape(2, 3)[i]
        row += 1.0
        return x

    with pytest.raises((TypeError, ValueError), match=(
            r"^g: x \+= v writes through a view of a traced array \(at .*\), but it was made "
            r"with a traced integer index .* Write x = x\.at\[i\]\.set\(v\)")):
        ft.jit(g)(X, 1)


def test_complex_real_and_imag_views_are_refused():
    def f(z):
        r = z.real
        r += 1.0
        return z

    with pytest.raises((TypeError, ValueError), match=r"writes through \.real/\.imag of a complex "
                                                 r"traced array are not supported\. Write "
                                                 r"x = new_real \+ 1j \* x\.imag"):
        ft.jit(f)(X + 1j)


def test_a_real_arrays_real_part_is_a_writable_view_and_its_imag_read_only():
    """NumPy: a real array's ``.real`` is a writable view of it; its ``.imag``
    a read-only array of zeros."""
    def f(a):
        y = a * 1.0
        r = y.real
        r += 1.0
        y.real[0] = -5.0
        y *= 2.0
        return y, r

    x = np.arange(4.0)
    for got, want in zip(ft.jit(f)(x), f(x.copy())):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ft.grad(lambda a: fnp.sum(f(a)[1] * a))(x), [-10, 6, 10, 14])

    def g(a):
        y = a * 1.0
        y.imag[0] = 1.0
        return y

    with pytest.raises(ValueError, match="read-only"):
        g(x.copy())
    with pytest.raises((TypeError, ValueError), match=r"^g: x\[idx\] = v writes through a view "
                       r"of a traced array \(at .*\), but NumPy makes this view read-only"):
        ft.jit(g)(x)


def test_an_enclosing_transforms_array_is_refused():
    def outer(x):
        def inner(y):
            x[0] = y          # x belongs to outer's trace
            return y * 2.0
        return ft.grad(inner)(x[1])

    with pytest.raises((TypeError, ValueError), match=(
            r"outer: x\[idx\] = v \(at .*test_inplace\.py:\d+\) updates a traced f64\[6\] "
            r"array, but the array belongs to the enclosing traced function 'outer', and a "
            r"nested transform's function cannot write into it\. Return the new value")):
        ft.jit(outer)(X)


def test_resize_refuses_negative_sizes_and_an_enclosing_array():
    def shrink(x):
        y = x.copy()
        y.resize(-1)
        return y

    with pytest.raises(ValueError, match="negative dimensions not allowed"):
        shrink(X.copy())
    with pytest.raises(ValueError, match=(
            r"^shrink: x\.resize\(-1\) at .*test_inplace\.py:\d+: negative dimensions not "
            r"allowed, as NumPy says; give every size$")):
        ft.jit(shrink)(X)

    def outer(x):
        y = x * 2.0

        def inner(z):
            y.resize(2)
            return z.sum()

        ft.grad(inner)(x)
        return y

    with pytest.raises(ft.numpy._inplace.InPlaceUpdateError, match=(
            r"^outer: x\.resize\(shape\) \(at .*test_inplace\.py:\d+\) updates a traced "
            r"f64\[6\] array, but the array belongs to the enclosing traced function 'outer'")):
        ft.jit(outer)(X)


def test_unsupported_ufunc_at_and_resize_of_a_view():
    def f(x):
        np.divide.at(x, [0], 2.0)
        return x

    with pytest.raises((TypeError, ValueError), match=(
            r"numpy.divide.at\(a, indices, b\) \(at .*\) is not supported on traced arrays: "
            r"only numpy.add.at, numpy.subtract.at, numpy.multiply.at, numpy.minimum.at, "
            r"numpy.maximum.at are")):
        ft.jit(f)(X)

    def g(x):
        v = x[:3]
        v.resize(2)
        return v

    with pytest.raises(ValueError, match="cannot resize an array that references or is "
                                         "referenced by another array"):
        ft.jit(g)(X)


# -- generated programs ----------------------------------------------------------------------

#: View-making steps: each a function of one array that NumPy answers with a
#: view (or, for reshape of a non-contiguous view, a copy: NumPy decides).
VIEWS = [
    lambda a: a[::2], lambda a: a[::-1], lambda a: a[1:], lambda a: a.T,
    lambda a: a.reshape(-1), lambda a: np.ravel(a), lambda a: a[None],
    lambda a: a[..., ::-1], lambda a: a.reshape(a.shape[::-1]), lambda a: np.swapaxes(a, 0, -1),
    lambda a: a[0] if a.ndim > 1 else a[1::3],
]
#: Steps that make copies.
COPIES = [lambda a: a.copy(), lambda a: a[[0]], lambda a: a * 1.0, lambda a: np.sort(a, None)]


def _update(kind: int, a, b, c: float):
    """One in-place update of ``a`` by a value made from ``b`` (any shape)."""
    s = np.sum(b) * 0.1
    if a.size == 0:
        return
    if kind == 0:
        a += s * c
    elif kind == 1:
        a *= 1.0 + 0.1 * c
    elif kind == 2:
        a[...] = np.sin(a) + s
    elif kind == 3:
        a.flat[0] = s + c
    elif kind == 4:
        np.multiply(a, c, out=a)
    elif kind == 5:
        a[-1] -= s
    else:
        np.copyto(a, a * 0.5 + c)


def run_program(steps, x):
    arrays = [x]
    for kind, i, j, k, c in steps:
        a = arrays[i % len(arrays)]
        if kind == "view" and a.size:
            arrays.append(VIEWS[k % len(VIEWS)](a))
        elif kind == "copy" and a.size:
            arrays.append(COPIES[k % len(COPIES)](a))
        elif kind == "update":
            _update(k % 7, a, arrays[j % len(arrays)], c)
    return sum(np.sum(a * a) * (1 + 0.1 * n) for n, a in enumerate(arrays))


programs = st.lists(
    st.tuples(st.sampled_from(["view", "view", "copy", "update", "update"]),
              st.integers(0, 20), st.integers(0, 20), st.integers(0, 50),
              st.floats(-1.5, 1.5, allow_nan=False).map(lambda c: round(c, 2))),
    min_size=1, max_size=10)

X2 = np.array([[0.3, -1.2, 0.7], [2.1, -0.4, 1.6]])
X2.flags.writeable = False


@given(programs)
def test_generated_programs_under_grad_jit_and_vmap(steps):
    def f(x):
        return run_program(steps, x)

    want = numpy_value(f, X2)
    np.testing.assert_allclose(ft.jit(f)(X2), want, rtol=1e-12)
    check_grads(pure(f), (X2,), order=1, modes=("rev",), eps=1e-6)
    check_grads(ft.jit(f), (X2,), order=1, modes=("fwd",), eps=1e-6)
    batch = np.stack([X2, X2[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(batch), [numpy_value(f, b) for b in batch],
                               rtol=1e-12)


@settings(max_examples=4)  # a Numba compile each: a few seconds
@given(programs)
def test_generated_programs_in_the_native_tier(steps):
    pytest.importorskip("numba", reason="the native tier needs numba (the native extra)")

    def f(x):
        return run_program(steps, x)

    np.testing.assert_allclose(ft.jit(f, compiler="native")(X2), numpy_value(f, X2),
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("exponent", [0.5, 2, -1])
def test_power_in_place_takes_numpys_fast_scalar_powers(dtype, exponent):
    """``x **= 0.5`` is NumPy's ``x ** 0.5`` (sqrt: NaN at -inf, -0.0 at -0.0,
    where float16's power gives +inf and 0.0), in place."""
    def f(x):
        y = x.copy()
        y **= exponent
        return y

    x = np.array([-np.inf, -0.0, 0.0, 4.0, np.nan, -1.0, np.inf], dtype)
    with np.errstate(all="ignore"):
        expected = f(x)
        got = ft.jit(f)(x)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(expected.real))
    np.testing.assert_array_equal(got, expected)
