"""Views whose existence depends on NumPy's memory layout
(``functrans/numpy/_memory_order.py``): a ufunc's result keeps its
operands' memory order, so ``reshape`` and ``ravel`` of it may copy where
the same call on a C-ordered array makes a view, and the reverse.  NumPy is
the oracle: each program runs on NumPy arrays and under the transforms.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.jit import JitCacheMiss
from functrans.numpy import _memory_order
from functrans.numpy._inplace import InPlaceUpdateError
from functrans.testing import check_grads

pytestmark = pytest.mark.filterwarnings("ignore:.*updates an input of the traced function")

X = np.arange(6.0).reshape(2, 3) / 7
X3 = np.arange(24.0).reshape(2, 3, 4) / 11


def numpy_value(f, *args):
    """``f`` run with NumPy on copies of the arguments (C-ordered, as
    functrans takes inputs to be): the oracle."""
    return f(*[np.array(a, copy=True, order="C") for a in args])


def fortran_result_reshaped(x):
    c = np.swapaxes(x, 0, -1) * 1.0   # F-ordered in NumPy: the reshape copies
    r = c.reshape(-1)
    c += 1.0
    return np.sum(r * r)


def transposed_fortran_result_reshaped(x):
    c = np.swapaxes(x, 0, -1) * 1.0
    d = c.T                           # C-contiguous in NumPy: the reshape is a view
    r = d.reshape(-1)
    c += 1.0
    return np.sum(r * r)


def fortran_result_raveled(x):
    c = np.sin(x.T)
    r = np.ravel(c)
    c[0, 0] = 5.0
    r[1] = -2.0                       # does not reach c
    return np.sum(r * r) + np.sum(c * c)


def fortran_row_raveled(x):
    c = np.exp(x.T) * 0.5             # F-ordered: a row is strided
    row = c[1]
    r = row.ravel()                   # a copy of the row
    c += 1.0
    return np.sum(r * r) + np.sum(row)


def three_d_orders(x):
    c = np.transpose(x, (1, 0, 2)) + 0.0     # order (1, 0, 2) in memory
    a = c.reshape(3, 8)                       # a copy
    b = c[:, 0].reshape(-1)                   # a copy
    e = np.transpose(c, (1, 0, 2)).reshape(2, 12)   # a view
    c *= 2.0
    return np.sum(a * a) + np.sum(b) + np.sum(e * e)


def mixed_operands(x):
    c = x.T * x.T[::-1] + np.where(x.T > 0.2, x.T, 0.0)   # all F-ordered: F
    d = np.swapaxes(x, 0, 1) + np.ones((3, 2))             # F and C: NumPy takes C here
    r, s = c.reshape(-1), d.reshape(-1)
    c -= 1.0
    d -= 1.0
    return np.sum(r * r) + np.sum(s * s)


def copies_in_their_order(x):
    c = np.sin(x.T)
    d = c.copy()                      # C-ordered: its reshape is a view
    e = np.copy(c)                    # K: F-ordered, its reshape a copy
    f = c.copy(order="F")
    rd, re, rf = d.reshape(-1), e.reshape(-1), f.reshape(-1)
    d += 1.0
    e += 2.0
    f += 3.0
    return np.sum(rd * rd) + np.sum(re * re) + np.sum(rf * rf)


def updated_root_keeps_its_order(x):
    c = x.T * 2.0
    c[0] = 1.0                        # an update keeps c's memory: still F
    c += 1.0
    r = c.reshape(-1)
    c *= 3.0
    return np.sum(r * r)


def one_and_zero_d_roots(x):
    v = np.sin(x.T)[:, 0] * 1.0       # 1-d: contiguous in every order
    r = v.reshape(1, -1)
    v += 1.0
    s = np.sum(x.T * 1.0, keepdims=True)   # (1, 1): contiguous in every order
    t = s.reshape(1)
    s += 1.0
    z = (x.T * 1.0)[1, 1, ...]        # 0-d (a view: NumPy's ufuncs give scalars)
    w = z.reshape(1)
    z += 1.0
    m = (x.T * 1.0)[:1]               # 2-d of one row: contiguous in every order
    q = m.reshape(-1)
    m += 1.0
    return np.sum(r * r) + np.sum(t) + np.sum(q * q) + np.sum(w)


PROGRAMS = [fortran_result_reshaped, transposed_fortran_result_reshaped, fortran_result_raveled,
            fortran_row_raveled, mixed_operands, copies_in_their_order,
            updated_root_keeps_its_order, one_and_zero_d_roots]


@pytest.mark.parametrize("f", PROGRAMS)
def test_views_follow_numpys_memory_order(f):
    want = numpy_value(f, X)
    np.testing.assert_allclose(ft.jit(f)(X), want, rtol=1e-13)
    value, _ = ft.value_and_grad(f)(X)
    np.testing.assert_allclose(value, want, rtol=1e-13)
    check_grads(f, (X,), order=1, modes=("rev",), eps=1e-6)
    batch = np.stack([X, X[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(batch), [numpy_value(f, b) for b in batch],
                               rtol=1e-13)


def test_three_axes():
    want = numpy_value(three_d_orders, X3)
    np.testing.assert_allclose(ft.jit(three_d_orders)(X3), want, rtol=1e-13)
    check_grads(three_d_orders, (X3,), order=1, modes=("rev", "fwd"), eps=1e-6)


def test_the_gradient_of_a_copy_made_by_reshape():
    """The repro's gradient: ``r`` holds the values before the update."""
    np.testing.assert_allclose(ft.grad(fortran_result_reshaped)(X), 2 * X, rtol=1e-13)


def test_unknown_order_with_an_update_is_refused_with_the_line_and_the_fix():
    def f(x):
        c = x @ np.eye(3)   # a matrix product: its order is not followed
        r = c.reshape(-1)
        c += 1.0
        return np.sum(r * r)

    with pytest.raises(InPlaceUpdateError, match=(
            r"^f: x \+= v \(at .*test_inplace_layout\.py:\d+\) updates an array that the "
            r"reshape or ravel at .*test_inplace_layout\.py:\d+ shares memory with or not, as "
            r"NumPy lays the f64\[2,3\] array out in memory, which functrans does not know here "
            r".*Say which is meant: \.copy\(\) the reshaped array for a copy, or make the "
            r"array C-ordered with \.copy\(\) before reshaping it for a view$")):
        ft.jit(f)(X)

    def through_a_row(x):
        c = x @ np.eye(3)
        r = c[1].ravel()              # a view of the row if c is C-ordered, else a copy
        r += 1.0
        return np.sum(c)

    with pytest.raises(InPlaceUpdateError, match=r"^through_a_row: x \+= v .* shares memory"):
        ft.jit(through_a_row)(X)

    def as_advised(x):
        c = (x @ np.eye(3)).copy()
        r = c.reshape(-1)
        c += 1.0
        return np.sum(r * r)

    np.testing.assert_allclose(ft.jit(as_advised)(X), numpy_value(as_advised, X), rtol=1e-13)


def test_sort_and_fill_keep_the_order_of_the_array():
    def f(x):
        c = x.T * 1.0
        c.sort()                      # in place: c keeps its memory (F)
        e = c + 0.0                   # F too
        r = e.reshape(-1)             # a copy
        d = x.T.T * 1.0
        d.fill(2.0)                   # C, still
        g = d * x
        s = g.reshape(-1)             # a view
        e += 1.0
        g += x
        return np.sum(r * r) + np.sum(s * s)

    np.testing.assert_allclose(ft.jit(f)(X), numpy_value(f, X), rtol=1e-13)


def test_unknown_order_without_an_update_traces_as_before():
    def f(x):
        c = x @ np.eye(3)
        r = c.reshape(-1)
        return np.sum(r * r)

    np.testing.assert_allclose(ft.jit(f)(X), numpy_value(f, X), rtol=1e-13)
    check_grads(f, (X,), order=1, modes=("rev",), eps=1e-6)


# -- the rules, against NumPy ---------------------------------------------------------------


def _order(a):
    """NumPy's memory order of ``a``: its axes of two or more elements, the
    slowest first."""
    return tuple(i for i in np.argsort([-abs(s) for s in a.strides], kind="stable")
                 if a.shape[i] > 1)


CASES = {
    "negative of a transpose": lambda a: -np.transpose(a, (2, 0, 1)),
    "sum of two orders": lambda a: a.transpose(1, 0, 2) + a.transpose(1, 2, 0).transpose(0, 2, 1),
    "F and broadcast": lambda a: _fortran(a) + a[0],
    "where": lambda a: np.where(a.T > 0.5, a.T, a[0].T[..., None] * 0.0),
    "astype": lambda a: a.transpose(2, 0, 1).astype(np.float32),
    "power": lambda a: a.T ** 2,
    "slices and flips": lambda a: a.transpose(1, 2, 0)[::-1, 1:, ::2] * 1.0,
    "broadcast of a row": lambda a: a.transpose(0, 2, 1) * np.arange(3.0),
    "where, F then C": lambda a: np.where(a > 0.5, _fortran(a), a),
    "where, C then F": lambda a: np.where(a > 0.5, a, _fortran(a)),
    "where, F condition": lambda a: np.where(_fortran(a) > 0.5, a, 1.0),
    "subtract, C then F": lambda a: a - _fortran(a),
    "subtract, F then C": lambda a: _fortran(a) - a,
    "astype C": lambda a: _fortran(a).astype(np.float32, order="C"),
    "astype F": lambda a: a.astype(np.float32, order="F"),
    "astype A of F": lambda a: _fortran(a).astype(np.float32, order="A"),
    "astype A of another order": lambda a: a.transpose(1, 0, 2).astype(np.float32, order="A"),
    "copy A of F": lambda a: _fortran(a).copy(order="A"),
    "copy F of the same dtype": lambda a: a.astype(a.dtype, order="F"),
    "cumsum of F": lambda a: np.cumsum(_fortran(a), 1),
    "cumprod of a transpose": lambda a: np.cumprod(a.transpose(2, 0, 1), 0),
    "sort of F": lambda a: np.sort(_fortran(a), axis=1),
    "sort of a transpose": lambda a: np.sort(a.transpose(1, 0, 2)),
    "argsort of F (C-ordered indices)": lambda a: np.argsort(_fortran(a), axis=0),
    "sum over an axis of F": lambda a: np.sum(_fortran(a), axis=1),
    "sum over two axes of a transpose": lambda a: np.sum(a.transpose(2, 0, 1), axis=(0, 2)),
    "max keeping the axis of a transpose": lambda a: np.max(a.transpose(1, 2, 0), axis=1,
                                                             keepdims=True),
    "mean of a permutation": lambda a: np.mean(a.transpose(2, 0, 1), axis=1),
    "all of F": lambda a: np.all(_fortran(a) > 0.5, axis=2),
    "argmax of F (C-ordered indices)": lambda a: np.argmax(_fortran(a), axis=1),
    "searchsorted of F (C-ordered indices)": lambda a: np.searchsorted(
        np.linspace(0.0, 1.0, 5), _fortran(a)),
}


def _fortran(a):
    """``a`` in Fortran order, made as traced code can make it."""
    return (a.transpose(2, 1, 0) * 1.0).copy().transpose(2, 1, 0)


@pytest.mark.parametrize("name", CASES)
def test_memory_order_rules_agree_with_numpy(name):
    f = CASES[name]
    seen = {}

    def traced(x):
        out = f(x)
        seen["order"] = _memory_order.root_order(out)
        return out

    ft.jit(traced)(X3)
    want = _order(f(X3.copy()))
    got = tuple(a for a in seen["order"] if f(X3).shape[a] > 1)
    assert got == want


# -- generated programs ----------------------------------------------------------------------

#: Steps making arrays of any memory order, views of them, and updates.
STEPS = [
    lambda a: a.T * 1.0, lambda a: np.swapaxes(a, 0, -1) + 0.5, lambda a: np.sin(a.T),
    lambda a: a.reshape(-1), lambda a: np.ravel(a), lambda a: a.T, lambda a: a[::-1],
    lambda a: a[1:], lambda a: a[0] if a.ndim > 1 else a[::2], lambda a: a.copy(),
    lambda a: np.copy(a), lambda a: a.reshape(a.shape[::-1]), lambda a: a * a.T.T,
]


def run_program(steps, x):
    arrays = [x]
    for make, i, j, c in steps:
        a = arrays[i % len(arrays)]
        if make and a.size:
            arrays.append(STEPS[j % len(STEPS)](a))
        elif a.size:
            a += c
            a[..., 0] *= 1.0 + 0.1 * c
    return sum(np.sum(a * a) * (1 + 0.1 * n) for n, a in enumerate(arrays))


programs = st.lists(
    st.tuples(st.booleans(), st.integers(0, 20), st.integers(0, 50),
              st.floats(-1.5, 1.5, allow_nan=False).map(lambda c: round(c, 2))),
    min_size=1, max_size=10)


@settings(max_examples=60)
@given(programs)
def test_generated_programs_follow_numpys_memory_order(steps):
    def f(x):
        return run_program(steps, x)

    want = numpy_value(f, X)
    try:
        got = ft.jit(f)(X)
    except InPlaceUpdateError as e:
        assert "shares memory with or not" in str(e)
        return
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(f, (X,), order=1, modes=("rev",), eps=1e-6)


# -- the memory order of the inputs ----------------------------------------------------------


def input_reshaped_then_updated(x):
    r = x.reshape(-1)                 # a view of a C-ordered x, a copy of an F-ordered one
    x += 1.0
    return np.sum(r * r)


def input_written_through_its_reshape(x):
    r = x.reshape(-1)
    r[0] = 100.0                      # reaches x only where r is a view
    return np.sum(x * x)


def _numpy_on(f, x):
    """``f`` run by NumPy on a copy of ``x`` in ``x``'s own memory order."""
    return f(x.copy(order="K"))


@pytest.mark.parametrize("f", [input_reshaped_then_updated, input_written_through_its_reshape])
@pytest.mark.parametrize("order", ["C", "F"])
def test_an_input_has_the_memory_order_of_its_array(f, order):
    x = np.array(X, order=order)
    want = _numpy_on(f, x)
    assert ft.jit(f)(x) == pytest.approx(want, rel=1e-12)
    assert ft.value_and_grad(f)(x)[0] == pytest.approx(want, rel=1e-12)
    assert ft.vjp(f, x)[0] == pytest.approx(want, rel=1e-12)


def test_jit_traces_again_a_call_whose_input_is_in_another_order():
    """The program jit caches for f64[2,3] took its input to be C-ordered; a
    call with an F-ordered array of that type is traced at that array, a
    miss, and that program is cached by the layout; the C-ordered calls
    around it keep their program."""
    jitted = ft.jit(input_reshaped_then_updated)
    c, f = np.array(X, order="C"), np.array(X, order="F")
    got = [jitted(c), jitted(f), jitted(c), jitted(f)]
    want = [_numpy_on(input_reshaped_then_updated, a) for a in (c, f, c, f)]
    assert got == pytest.approx(want, rel=1e-12)
    assert want[0] != pytest.approx(want[1])  # the two orders give different answers
    info = jitted.cache_info()
    assert (info.hits, info.misses, info.entries) == (2, 2, 2)
    assert [t.signature for t in info.tiers] == ["f64[2,3]", "f64[2,3] in F order"]
    # Each layout has a program of its own: transposed, sliced with a step.
    t = np.array(X3.transpose(1, 2, 0), order="C").transpose(2, 0, 1)
    s = (np.arange(48.0).reshape(2, 3, 8) / 11)[:, :, ::2]
    jitted3 = ft.jit(input_reshaped_then_updated)
    assert jitted3(t) == pytest.approx(_numpy_on(input_reshaped_then_updated, t), rel=1e-12)
    assert jitted3(t) == pytest.approx(_numpy_on(input_reshaped_then_updated, t), rel=1e-12)
    with pytest.raises(InPlaceUpdateError, match="sliced with a step"):
        jitted3(s)
    info = jitted3.cache_info()
    assert (info.hits, info.misses, info.entries) == (1, 3, 2)
    assert [x.signature for x in info.tiers] == [
        "f64[2,3,4]", "f64[2,3,4] with axes (1, 2, 0) from the slowest to the fastest in memory"]


def test_jit_under_a_transform_follows_the_layout_of_its_tracers():
    """Called under grad or vmap, a jitted function's inputs are tracers laid
    out as their traces say: C-ordered ones run the cached program (no
    compilation per call), others are traced at them (the program taking
    them to be C-ordered gave another number)."""
    jitted = ft.jit(input_reshaped_then_updated)
    c, f = np.array(X), np.asfortranarray(X)
    for _ in range(3):
        assert ft.value_and_grad(jitted)(c)[0] == pytest.approx(
            _numpy_on(input_reshaped_then_updated, c), rel=1e-12)
    assert jitted.cache_info().misses == 1
    for x in (f, f, c):
        assert ft.value_and_grad(jitted)(x)[0] == pytest.approx(
            _numpy_on(input_reshaped_then_updated, x), rel=1e-12)
    got = ft.vmap(jitted, in_axes=2)(LAYOUTS["F"]())
    np.testing.assert_allclose(got, _loop(input_reshaped_then_updated, LAYOUTS["F"], 2),
                               rtol=1e-12)


def test_jit_explains_a_miss_for_another_memory_layout():
    jitted = ft.jit(input_reshaped_then_updated, explain_cache_misses=True)
    with pytest.warns(JitCacheMiss, match=r"first call"):
        jitted(X)
    with pytest.warns(JitCacheMiss, match=r"memory layout of \[0\]\[0\]: f64\[2,3\] in F "
                      r"order\); compiled in") as w:
        jitted(np.asfortranarray(X))
    assert [m.filename for m in w if m.category is JitCacheMiss] == [__file__]


def test_an_input_sliced_with_gaps_is_refused_where_its_order_decides():
    x = (np.arange(12.0).reshape(2, 6) / 7)[:, :3]   # rows 48 bytes apart, 24 bytes used
    with pytest.raises(InPlaceUpdateError, match="an argument sliced with a step has gaps"):
        ft.jit(input_reshaped_then_updated)(x)
    with pytest.raises(InPlaceUpdateError, match="reshape or ravel at"):
        ft.grad(input_reshaped_then_updated)(x)
    # Without an update, nothing depends on it.
    assert ft.jit(lambda x: np.sum(x.reshape(-1) ** 2))(x) == pytest.approx(np.sum(x ** 2))



B3 = np.arange(240.0).reshape(4, 6, 10) / 7

#: Arrays with gaps (or negative strides), each made anew from a fresh base.
GAPPED = {
    "step on the last axis": lambda b: b[:, :, ::3],
    "step on the middle axis": lambda b: b[:, ::2],
    "reversed": lambda b: b[::-1],
    "reversed last axis": lambda b: b[:, :, ::-1],
    "F-ordered, two steps": lambda b: np.asfortranarray(b)[:, ::2, ::3],
    "transposed, reversed with a step": lambda b: b.transpose(2, 0, 1)[::-1, :, ::-2],
    "a block": lambda b: b[1:3, 2:5, 3:9],
}


def ufunc_of_input_reshaped(x):
    y = np.sin(x) + x                 # allocated in the order of x's strides
    r = y.T.reshape(-1)
    y += 1.0
    return np.sum(r * np.arange(r.size))


@pytest.mark.parametrize("make", GAPPED.values(), ids=list(GAPPED))
def test_a_ufunc_s_result_of_an_input_with_gaps_follows_its_strides(make):
    """NumPy allocates a ufunc's result of a strided input in the order of
    its strides: followed (it was refused as an order not known), while
    the input's own reshape stays NumPy's decision by its strides."""
    want = ufunc_of_input_reshaped(make(B3.copy()))
    for transform in (ft.jit, lambda f: lambda x: ft.value_and_grad(f)(x)[0],
                      lambda f: lambda x: ft.vmap(f)(x[None])[0]):
        got = transform(ufunc_of_input_reshaped)(make(B3.copy()))
        assert got == pytest.approx(want, rel=1e-13)
        with pytest.raises(InPlaceUpdateError, match="shares memory with or not"):
            transform(input_reshaped_then_updated)(make(B3.copy()))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("how", ["copy", "astype"])
def test_a_copy_in_an_order_numpy_does_not_know_is_refused_at_every_shape(shape, how):
    def f(a):
        return a.copy(order="Q") if how == "copy" else a.astype(np.float32, order="Q")

    with pytest.raises(ValueError):
        f(np.ones(shape))
    with pytest.raises(ValueError, match=r"f: order must be one of .*\(got 'Q'\)"):
        ft.jit(f)(np.ones(shape))


# -- the memory layout of vmap's members ----------------------------------------------------


def ufunc_result_reshaped(x):
    """The repro: ``x * 1.0`` keeps ``x``'s order, so whether ``r`` sees the
    update depends on the member's layout."""
    y = x * 1.0
    r = y.reshape(-1)
    y += 1.0
    return np.sum(r * np.arange(r.size))


def member_reshaped(x):
    r = x.reshape(-1)
    x += 1.0
    return np.sum(r * np.arange(r.size))


A3 = np.arange(24.0).reshape(2, 3, 4) / 7

#: Makers of fresh arrays (the oracle's loop writes into them) in each layout.
LAYOUTS = {
    "C": lambda: A3.copy(),
    "F": lambda: np.asfortranarray(A3),
    "transposed": lambda: np.ascontiguousarray(A3.transpose(2, 0, 1)).transpose(1, 2, 0),
    "step": lambda: np.repeat(A3, 2, axis=2)[:, :, ::2],
}


def _member(x, axis, i):
    return x[(slice(None),) * axis + (i,)]


def _loop(f, make, axis):
    """NumPy's loop over the members of a fresh array, as NumPy's indexing
    gives them (strided views): the oracle."""
    x = make()
    return np.array([f(_member(x, axis % x.ndim, i)) for i in range(x.shape[axis])])


def _vmap_sum(f, axis):
    return lambda x: np.sum(ft.vmap(f, in_axes=axis)(x))


TRANSFORMS = {
    "vmap": lambda f, axis: ft.vmap(f, in_axes=axis),
    "jit(vmap)": lambda f, axis: ft.jit(ft.vmap(f, in_axes=axis)),
    "vmap(jit)": lambda f, axis: ft.vmap(ft.jit(f), in_axes=axis),
    "vmap(grad)": lambda f, axis: lambda x: ft.vmap(ft.value_and_grad(f), in_axes=axis)(x)[0],
    "grad(vmap)": lambda f, axis: lambda x: ft.value_and_grad(_vmap_sum(f, axis))(x)[0],
    "jit(grad(vmap))": lambda f, axis: ft.jit(
        lambda x: ft.value_and_grad(_vmap_sum(f, axis))(x)[0]),
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("f", [ufunc_result_reshaped, member_reshaped])
def test_vmap_members_have_the_layout_of_numpys_loop(f, axis, layout, transform):
    """Each member is laid out as NumPy's ``x[i]`` / ``x[:, i]`` is: the
    result equals the loop's, or the update that would tell a view from a
    copy is refused, never another number.  Refused only where the member
    itself is reshaped and has gaps (NumPy's reshape of a strided view
    decides by its strides); a ufunc's result of it is dense in its order."""
    want = _loop(f, LAYOUTS[layout], axis)
    try:
        got = TRANSFORMS[transform](f, axis)(LAYOUTS[layout]())
    except InPlaceUpdateError as e:
        assert "shares memory with or not" in str(e)
        member = _member(LAYOUTS[layout](), axis % 3, 0)
        assert f is member_reshaped
        assert not (member.flags.c_contiguous or member.flags.f_contiguous)
        return
    if transform.startswith("jit(grad") or transform == "grad(vmap)":
        want = np.sum(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("f", [ufunc_result_reshaped, member_reshaped])
def test_vmap_over_an_axis_whose_members_are_dense(f):
    """Members that are C- or F-ordered arrays follow NumPy whatever the
    argument's order: the cases the loop decides, each answered (the two
    orders give different answers)."""
    for make, axis in [(LAYOUTS["F"], 2), (LAYOUTS["F"], -1), (LAYOUTS["C"], 0),
                       (LAYOUTS["transposed"], 2)]:
        want = _loop(f, make, axis)
        for transform in TRANSFORMS.values():
            got = transform(f, axis)(make())
            np.testing.assert_allclose(np.sum(got), np.sum(want), rtol=1e-13)
    assert np.sum(_loop(f, LAYOUTS["F"], 2)) != pytest.approx(np.sum(_loop(f, LAYOUTS["C"], 0)))


def test_vmap_members_in_pytrees_and_unmapped_arguments():
    def f(p, q):
        return ufunc_result_reshaped(p["a"]) + member_reshaped(p["b"]) + ufunc_result_reshaped(q)

    def loop(p, q, axes):
        return [f({"a": _member(p["a"], axes[0], i), "b": _member(p["b"], axes[1], i)}, q)
                for i in range(4)]

    def make():
        return {"a": LAYOUTS["F"](), "b": LAYOUTS["transposed"]()}, np.asfortranarray(A3[0])

    want = loop(*make(), (2, 2))
    for transform in (lambda g: g, ft.jit):
        got = transform(ft.vmap(f, in_axes=({"a": 2, "b": -1}, None)))(*make())
        np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("layout", ["C", "F", "transposed"])
@pytest.mark.parametrize("axes", [(0, 0), (0, 1), (2, 1), (-1, -1), (1, 0)])
def test_nested_vmap_members_are_members_of_members(layout, axes):
    x4 = {"C": np.arange(120.0).reshape(2, 3, 4, 5) / 7}
    x4["F"] = np.asfortranarray(x4["C"])
    x4["transposed"] = np.ascontiguousarray(x4["C"].transpose(3, 2, 0, 1)).transpose(2, 3, 1, 0)
    outer, inner = axes

    def loop():
        x = x4[layout].copy(order="K")
        return [[ufunc_result_reshaped(_member(e, inner % 3, j)) for j in range(e.shape[inner])]
                for e in (_member(x, outer % 4, i) for i in range(x.shape[outer]))]

    for transform in (lambda g: g, ft.jit):
        got = transform(ft.vmap(ft.vmap(ufunc_result_reshaped, in_axes=inner),
                                in_axes=outer))(x4[layout].copy(order="K"))
        np.testing.assert_allclose(got, loop(), rtol=1e-13)


def test_jit_of_vmap_traces_again_for_members_in_another_layout():
    """jit's trace took its argument to be C-ordered and its members with it
    (along axis 2, members with gaps, whose ufunc results are C-ordered):
    an F-ordered call is traced at its array, once, and a C-ordered one
    keeps the first program."""
    jitted = ft.jit(ft.vmap(ufunc_result_reshaped, in_axes=2))
    for make in (LAYOUTS["C"], LAYOUTS["F"], LAYOUTS["F"], LAYOUTS["C"]):
        assert jitted(make()) == pytest.approx(_loop(ufunc_result_reshaped, make, 2), rel=1e-13)
    info = jitted.cache_info()
    assert (info.hits, info.misses, info.entries) == (2, 2, 2)
    assert np.sum(_loop(ufunc_result_reshaped, LAYOUTS["C"], 2)) != pytest.approx(
        np.sum(_loop(ufunc_result_reshaped, LAYOUTS["F"], 2)))


def test_a_member_with_gaps_reshaped_and_updated_is_refused():
    """x[:, i] of a C-ordered x has gaps: NumPy's reshape of it is a view or a
    copy by its strides, which functrans does not follow; an update that
    would tell them apart is refused, naming both lines."""
    with pytest.raises(InPlaceUpdateError, match=(
            r"^member_reshaped: x \+= v \(at .*test_inplace_layout\.py:\d+\) updates an array "
            r"that the reshape or ravel at .*test_inplace_layout\.py:\d+ shares memory with or "
            r"not, as NumPy lays the f64\[2,4\] array out in memory")):
        ft.vmap(member_reshaped, in_axes=1)(A3)
    # Without the update, nothing depends on it.
    np.testing.assert_allclose(ft.vmap(lambda x: np.sum(x.reshape(-1) ** 2), in_axes=1)(A3),
                               np.sum(A3 ** 2, axis=(0, 2)), rtol=1e-13)


def _drawn_array(data):
    """A fresh array of a drawn shape, laid out in memory in a drawn order of
    its axes, sliced with drawn steps (gaps) and reversals."""
    shape = data.draw(st.lists(st.integers(1, 3), min_size=2, max_size=4), label="shape")
    order = data.draw(st.permutations(range(len(shape))), label="memory order")
    steps = data.draw(st.lists(st.sampled_from([1, 1, 2, -1]), min_size=len(shape),
                               max_size=len(shape)), label="steps")
    full = [d * abs(s) for d, s in zip(shape, steps)]
    values = np.arange(float(np.prod(full))).reshape([full[a] for a in order]) / 7

    def make():
        x = values.copy().transpose(np.argsort(order))
        return x[tuple(slice(None, None, s) for s in steps)]

    return make


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_drawn_vmaps_equal_numpys_loop_or_refuse(data):
    make = _drawn_array(data)
    ndim = make().ndim
    axis = data.draw(st.integers(-ndim, ndim - 1), label="in_axes")
    f = data.draw(st.sampled_from([ufunc_result_reshaped, member_reshaped,
                                   ufunc_of_input_reshaped]), label="f")
    want = _loop(f, make, axis)
    for transform in ("vmap", "jit(vmap)", "grad(vmap)"):
        try:
            got = TRANSFORMS[transform](f, axis)(make())
        except InPlaceUpdateError:
            assert f is member_reshaped  # a ufunc's result has a known order
            continue
        np.testing.assert_allclose(got, np.sum(want) if "grad" in transform else want,
                                   rtol=1e-13)


#: Views of an enclosing function's array handed to a nested transform.
VIEWS = {
    "columns": lambda a: a[:, :3],
    "transposed": lambda a: a.T,
    "a row": lambda a: a[1],
    "a column": lambda a: a[:, 1],
    "reversed": lambda a: a[::-1],
    "swapped, with a step": lambda a: a.transpose(1, 0, 2)[:, ::2],
    "rows of a reshape": lambda a: a.reshape(12, 5)[2:8],
    "a plane": lambda a: a[:, :, 2],
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=list(VIEWS))
@pytest.mark.parametrize("f", [input_reshaped_then_updated, ufunc_of_input_reshaped])
def test_a_nested_transform_of_a_view_has_the_view_s_layout(f, view):
    """An enclosing function's view handed to a nested transform (grad, jit,
    vmap) is laid out as NumPy makes it, gaps included: taken from its
    proxy, cut to two elements an axis, ``x[:, :3]`` looked contiguous and
    the update reached the reshape (94 where NumPy gives 79)."""
    x = np.arange(60.0).reshape(3, 4, 5) / 7
    want = f(view(x.copy()))
    for inner in (lambda g: lambda a: ft.value_and_grad(g)(a)[0], ft.jit,
                  lambda g: lambda a: ft.vmap(g)(a[None])[0]):
        try:
            got = ft.value_and_grad(lambda a, inner=inner: inner(f)(view(a)))(x)[0]
        except InPlaceUpdateError:
            assert f is input_reshaped_then_updated  # its own reshape of a view with gaps
            member = view(x)
            assert not (member.flags.c_contiguous or member.flags.f_contiguous)
            continue
        assert got == pytest.approx(want, rel=1e-13)


# -- creation functions follow their prototype's layout ------------------------------------


def _reshaped_then_updated(make, xp):
    """``y = make(x)``, ``r = y.reshape(-1)``, ``y += 1``: ``r`` sees the update
    only where NumPy's ``y`` is C-ordered (its reshape a view)."""
    def f(x):
        y = make(xp, x)
        r = y.reshape(-1)
        y += 1.0
        return xp.sum(r * x.T.reshape(-1))

    return f


CREATIONS = {
    "ones_like of a transpose": lambda xp, x: xp.ones_like(x.T),
    "zeros_like of a transpose": lambda xp, x: xp.zeros_like(x.T),
    "full_like of a transpose": lambda xp, x: xp.full_like(x.T, 2.0),
    "full_like, traced fill": lambda xp, x: xp.full_like(x.T, x[0, 0]),
    "ones_like, order C": lambda xp, x: xp.ones_like(x.T, order="C"),
    "ones_like, order F": lambda xp, x: xp.ones_like(x.T.T, order="F"),
    "ones_like, order A": lambda xp, x: xp.ones_like(x.T, order="A"),
    "ones_like, order A of a reversal": lambda xp, x: xp.ones_like(x.T[::-1], order="A"),
    "ones_like, a shape of other axes": lambda xp, x: xp.ones_like(x.T, shape=(3, 1, 2)),
    "full_like, traced fill, order F": lambda xp, x: xp.full_like(x, x[0, 0], order="F"),
    "array of a transpose": lambda xp, x: xp.array(x.T),
    "array, order C": lambda xp, x: xp.array(x.T, order="C"),
    "array, order A": lambda xp, x: xp.array(x.T, order="A"),
    "array, another dtype": lambda xp, x: xp.array(x.T, dtype=xp.float32),
    "asarray, order F": lambda xp, x: xp.asarray(x * 1.0, order="F"),
    "asarray, order C of a transpose": lambda xp, x: xp.asarray(x.T, order="C"),
    "asarray, order F of a transpose": lambda xp, x: xp.asarray(x.T, order="F"),
    "full of a traced value": lambda xp, x: xp.full((3, 2), x[0, 0]),
    "ascontiguousarray of a transpose": lambda xp, x: xp.ascontiguousarray(x.T),
    "asfortranarray": lambda xp, x: xp.asfortranarray(x * 1.0),
    "asfortranarray of a transpose": lambda xp, x: xp.asfortranarray(x.T),
    "require C of a transpose": lambda xp, x: xp.require(x.T, requirements="C"),
    "require F": lambda xp, x: xp.require(x * 1.0, requirements=["F", "A"]),
    "ascontiguousarray of a 0-d array": lambda xp, x: xp.ascontiguousarray(
        xp.sum(x, keepdims=True).reshape(()) * xp.ones((3, 2))),
}


@pytest.mark.parametrize("name", CREATIONS)
def test_creation_functions_lay_out_their_results_as_numpy(name):
    f = _reshaped_then_updated(CREATIONS[name], fnp)
    want = numpy_value(_reshaped_then_updated(CREATIONS[name], np), X)
    assert ft.jit(f)(X) == pytest.approx(want, rel=1e-12)
    assert ft.value_and_grad(f)(X)[0] == pytest.approx(want, rel=1e-12)
    check_grads(f, (X,), order=1, modes=("rev",), eps=1e-6)


def test_the_reported_ones_like():
    def f(x):
        y = np.ones_like(x.T)
        r = y.reshape(-1)
        y += 1.0
        return np.sum(r * x.T.reshape(-1))

    x = np.arange(6.0).reshape(2, 3)
    assert f(x.copy()) == 15.0
    assert ft.jit(f)(x) == 15.0
    np.testing.assert_array_equal(ft.grad(f)(x), np.ones((2, 3)))


def test_a_like_function_of_an_array_of_unknown_layout_refuses_the_telling_update():
    def f(x):
        y = np.ones_like(x @ np.eye(3))  # its order is not followed
        r = y.reshape(-1)
        y += 1.0
        return np.sum(r)

    with pytest.raises(InPlaceUpdateError, match=r"^f: x \+= v .* shares memory with or not"):
        ft.jit(f)(X)

    def without_update(x):
        y = np.ones_like(x @ np.eye(3))
        return np.sum(y.reshape(-1) * x.reshape(-1))

    assert ft.jit(without_update)(X) == pytest.approx(np.sum(X))


@pytest.mark.parametrize("fn", [np.ones_like, np.zeros_like, np.empty_like])
def test_like_functions_refuse_an_order_numpy_does_not_know(fn):
    with pytest.raises(ValueError):
        fn(X, order="Q")
    with pytest.raises(ValueError, match=r"_like: order must be one of .*\(got 'Q'\)"):
        ft.jit(lambda x: fn(x, order="Q"))(X)


def test_require_refuses_what_it_cannot_follow():
    with pytest.raises(ValueError, match=r"require: requirements \['O', 'W'\] .* not "
                       r"supported: .* Make a copy that has them"):
        ft.jit(lambda x: fnp.require(x, requirements="WO"))(X)
    with pytest.raises(ValueError, match="Cannot specify both"):
        ft.jit(lambda x: fnp.require(x, requirements="CF"))(X)
    with pytest.raises(KeyError):
        np.require(X, requirements="Q")
    with pytest.raises(KeyError, match="unknown requirements"):
        ft.jit(lambda x: fnp.require(x, requirements="Q"))(X)


def test_ascontiguousarray_of_a_zero_d_array_is_a_view_of_it():
    def f(xp, x):
        a = xp.array(x[0, 0])           # a 0-d array
        v = xp.ascontiguousarray(a)     # shape (1,), a view of a
        v += 1.0
        s = xp.ascontiguousarray(x[1, 1])   # a new array of a scalar
        s += 1.0
        return a * 10.0 + x[1, 1] + s[0]

    want = numpy_value(lambda x: f(np, x), X)
    assert ft.jit(lambda x: f(fnp, x))(X) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("make", [
    lambda xp, z: xp.ones_like(z.real, order="A"),
    lambda xp, z: xp.array(z.real, order="A"),
    lambda xp, z: z.real.copy(order="A"),
], ids=["ones_like", "array", "copy"])
def test_order_a_of_the_real_part_of_a_fortran_complex_array_is_c(make):
    """``.real`` of a complex array has gaps (a stride of two floats), so it
    is Fortran-contiguous in no layout, and order='A' gives C order."""
    def f(xp, z):
        y = make(xp, z)
        r = y.reshape(-1)
        y += 1.0
        return r

    z = np.asfortranarray(X * (1 + 1j))
    want = f(np, z.copy(order="K"))
    np.testing.assert_array_equal(ft.jit(lambda z: f(fnp, z))(z), want)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_reduction_over_an_empty_axis_has_numpys_layout(order):
    """The layout rule of a reduction reduces a model of its operand, so an
    axis of length 0 is reduced as NumPy reduces it (indexing it failed)."""
    def f(x):
        y = np.sum(x, axis=1)
        r = y.reshape(-1)
        y += 1.0
        return r

    x = np.zeros((2, 0, 3), order=order)
    np.testing.assert_array_equal(ft.jit(f)(x), f(x.copy(order="K")))
    np.testing.assert_array_equal(ft.jit(lambda a, v: fnp.searchsorted(a, v))(
        np.array([]), np.zeros((2, 2))), np.zeros((2, 2), int))


# -- the memory layout of a loop body's inputs (functrans.lax) ------------------------------


def _scan_ys(f, reverse=False):
    return lambda xs: ft.lax.scan(lambda c, x: (c, f(x)), 0.0, xs, reverse=reverse)[1]


SCANS = {
    "scan": _scan_ys,
    "scan(reverse)": lambda f: _scan_ys(f, reverse=True),
    "jit(scan)": lambda f: ft.jit(_scan_ys(f)),
    "grad(scan)": lambda f: lambda xs: ft.value_and_grad(lambda a: np.sum(_scan_ys(f)(a)))(xs)[0],
    "vmap(scan)": lambda f: lambda xs: ft.vmap(_scan_ys(f))(xs[None])[0],
    "scan(vmap)": lambda f: _scan_ys(lambda x: np.sum(ft.vmap(f)(x[None])))
}


@pytest.mark.parametrize("transform", SCANS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("f", [ufunc_result_reshaped, member_reshaped])
def test_scan_members_have_the_layout_of_numpys_loop(f, layout, transform):
    """``scan``'s body gets each ``xs[i]`` laid out as NumPy's ``for x in
    xs`` gets it (a strided view of an F-ordered or transposed ``xs``): the
    loop's answer, or the update that would tell a view from a copy is
    refused where the member itself is reshaped and has gaps (or, under
    ``vmap``, where its view ``x[None]`` is mapped: a view of an array with
    gaps is not followed)."""
    want = _loop(f, LAYOUTS[layout], 0)
    try:
        got = SCANS[transform](f)(LAYOUTS[layout]())
    except InPlaceUpdateError as e:
        assert "shares memory with or not" in str(e)
        member = LAYOUTS[layout]()[0]
        assert f is member_reshaped or transform == "scan(vmap)"
        assert not (member.flags.c_contiguous or member.flags.f_contiguous)
        return
    np.testing.assert_allclose(got, np.sum(want) if "grad" in transform else want, rtol=1e-13)


def test_the_reported_scan():
    def w(np, x):
        y = x * 1.0
        r = y.reshape(-1)
        y += 1.0
        return np.sum(r)

    xs = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    want = [w(np, xs[i]) for i in range(2)]
    assert want == [66.0, 210.0]
    for transform in (lambda g: g, ft.jit):
        got = transform(lambda a: ft.lax.scan(lambda c, x: (c, w(fnp, x)), 0.0, a)[1])(xs)
        np.testing.assert_array_equal(got, want)
    value = ft.value_and_grad(
        lambda a: np.sum(ft.lax.scan(lambda c, x: (c, w(fnp, x)), 0.0, a)[1]))(xs)[0]
    assert value == sum(want)


def carry_reshaped(c, keep, xp=fnp):
    """A step whose ``r`` sees the update only where ``c``'s copy is C-ordered;
    ``keep`` makes the next carry, in a layout of its choosing."""
    y = c * 1.0
    r = y.reshape(-1)
    y += 1.0
    return keep(xp, c), np.sum(r * np.arange(r.size))


#: How a step makes its next carry: keeping its layout, or changing it.
KEEPS = {
    "as is": lambda xp, c: c * 0.5,
    "in C order": lambda xp, c: xp.ascontiguousarray(c * 0.5),
    "in F order": lambda xp, c: xp.asfortranarray(c * 0.5),
}


def _carry_loop(keep, init, n):
    c, ys = init, []
    for _ in range(n):
        c, y = carry_reshaped(c, keep, np)
        ys.append(y)
    return c, np.array(ys)


CARRY_LOOPS = {
    "scan": lambda keep, init, n: ft.lax.scan(
        lambda c, _: carry_reshaped(c, keep), init, None, length=n),
    "scan(reverse)": lambda keep, init, n: ft.lax.scan(
        lambda c, _: carry_reshaped(c, keep), init, None, length=n, reverse=True),
    "jit(scan)": lambda keep, init, n: ft.jit(lambda a: ft.lax.scan(
        lambda c, _: carry_reshaped(c, keep), a, None, length=n))(init),
    "fori_loop": lambda keep, init, n: ft.lax.fori_loop(
        0, n, lambda i, cy: (carry_reshaped(cy[0], keep)[0],
                             cy[1] + carry_reshaped(cy[0], keep)[1]), (init, 0.0)),
    "jit(fori_loop) traced bounds": lambda keep, init, n: ft.jit(lambda a, m: ft.lax.fori_loop(
        0, m, lambda i, cy: (carry_reshaped(cy[0], keep)[0],
                             cy[1] + carry_reshaped(cy[0], keep)[1]), (a, 0.0)))(init, n),
    "while_loop": lambda keep, init, n: ft.lax.while_loop(
        lambda s: s[2] < n,
        lambda s: (carry_reshaped(s[0], keep)[0], s[1] + carry_reshaped(s[0], keep)[1],
                   s[2] + 1), (init, 0.0, 0))[:2],
    "grad(scan)": lambda keep, init, n: ft.value_and_grad(lambda a: np.sum(ft.lax.scan(
        lambda c, _: carry_reshaped(c, keep), a, None, length=n)[1]))(init)[0],
}


@pytest.mark.parametrize("loop", CARRY_LOOPS)
@pytest.mark.parametrize("keep", KEEPS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_loop_carries_have_the_layout_of_numpys_loop(layout, keep, loop):
    """A carry is laid out in each iteration as the last one's output: as the
    initial value where the body keeps its layout, else not known, and the
    update that would tell a view from a copy is refused.  Never another
    number than NumPy's loop.  (A row of the transposed or step-sliced
    array has gaps, which no result of the body keeps.)"""
    c, ys = _carry_loop(KEEPS[keep], LAYOUTS[layout]()[0], 3)
    want = {"scan": (c, ys), "scan(reverse)": (c, ys[::-1]), "jit(scan)": (c, ys),
            "grad(scan)": np.sum(ys)}.get(loop, (c, np.sum(ys)))
    try:
        got = CARRY_LOOPS[loop](KEEPS[keep], LAYOUTS[layout]()[0], 3)
    except InPlaceUpdateError as e:
        assert "shares memory with or not" in str(e)
        init = LAYOUTS[layout]()[0]
        gaps = not (init.flags.c_contiguous or init.flags.f_contiguous)
        assert gaps or {"as is": False, "in C order": layout == "F",
                        "in F order": layout == "C"}[keep]
        return
    if loop == "grad(scan)":
        assert got == pytest.approx(want, rel=1e-13)
        return
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)


@pytest.mark.parametrize("keep, answered", [("as is", True), ("in C order", False)])
def test_while_loop_s_condition_sees_the_carry_as_the_body_leaves_it(keep, answered):
    """``cond_fun`` reads the carry of every iteration: laid out as the
    initial value where the body keeps it, else refused where it tells."""
    def cond(s):
        y = s[0] * 1.0
        r = y.reshape(-1)
        y += 1.0
        return r[1] < 3.0

    def step(xp, c):
        return KEEPS[keep](xp, c) * 4.0 + 0.25

    c, n = np.asfortranarray(A3[0]), 0
    while cond((c, n)):
        c, n = step(np, c), n + 1
    init = (np.asfortranarray(A3[0]), 0)
    if answered:
        assert ft.lax.while_loop(cond, lambda s: (step(fnp, s[0]), s[1] + 1), init)[1] == n
    else:
        with pytest.raises(InPlaceUpdateError, match="shares memory with or not"):
            ft.lax.while_loop(cond, lambda s: (step(fnp, s[0]), s[1] + 1), init)


def test_a_loop_that_reads_no_layout_is_traced_once_as_before():
    """Layouts are only followed where the body reads them: a body that
    changes its carry's layout but never reshapes and updates is traced
    once, into the program a C-ordered carry gives."""
    calls = []

    def step(c, x):
        calls.append(1)
        return c @ np.eye(4) * x[0, 0], np.sum(x.reshape(-1))

    def run(c, xs):
        return ft.lax.scan(step, c, xs)

    f_program = ft.make_jaxpr(run)(np.asfortranarray(A3[0]), np.asfortranarray(A3))
    assert len(calls) == 1
    c_program = ft.make_jaxpr(run)(A3[0].copy(), A3.copy())
    assert str(f_program) == str(c_program)
    # Where it reads the carry's layout and changes it, it is traced again.
    calls.clear()
    with pytest.raises(InPlaceUpdateError):
        ft.lax.scan(lambda c, x: (step(c, x)[0], carry_reshaped(c, KEEPS["as is"])[1]),
                    np.asfortranarray(A3[0]), A3)
    assert len(calls) == 2


def test_jit_of_scan_traces_again_for_xs_in_another_layout():
    jitted = ft.jit(_scan_ys(ufunc_result_reshaped))
    for make in (LAYOUTS["C"], LAYOUTS["F"], LAYOUTS["F"], LAYOUTS["C"]):
        np.testing.assert_allclose(jitted(make()), _loop(ufunc_result_reshaped, make, 0),
                                   rtol=1e-13)
    info = jitted.cache_info()
    assert (info.hits, info.misses, info.entries) == (2, 2, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_loop_body_closing_over_an_array_has_its_layout(layout):
    """A loop-invariant array the body closes over is the array itself: its
    own layout, concrete or traced by an enclosing transform."""
    def body(a):
        def step(c, _):
            return c + ufunc_result_reshaped(a), None
        return ft.lax.scan(step, 0.0, None, length=2)[0]

    want = 2 * ufunc_result_reshaped(LAYOUTS[layout]())
    assert body(LAYOUTS[layout]()) == pytest.approx(want, rel=1e-13)
    assert ft.value_and_grad(body)(LAYOUTS[layout]())[0] == pytest.approx(want, rel=1e-13)
    assert ft.jit(body)(LAYOUTS[layout]()) == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("f", [ufunc_result_reshaped, member_reshaped])
def test_cond_branches_get_their_operands_layouts(f, layout):
    """A branch of ``cond`` or ``switch`` gets the operand itself: its layout,
    as NumPy's call of the branch does (C-ordered was assumed)."""
    x = LAYOUTS[layout]()[0]
    want = f(LAYOUTS[layout]()[0])
    for run in (lambda a: ft.lax.cond(True, f, f, a), lambda a: ft.lax.switch(1, [f, f], a),
                ft.jit(lambda a: ft.lax.cond(a[0, 0] >= 0, f, f, a))):
        try:
            got = run(LAYOUTS[layout]()[0])
        except InPlaceUpdateError:
            assert f is member_reshaped and not (x.flags.c_contiguous or x.flags.f_contiguous)
            continue
        assert got == pytest.approx(want, rel=1e-13)


def reshaped_and_updated(xp, a):
    """What NumPy's ``a.reshape(-1)`` sees of ``a += 1``: a view's sum, or a
    copy's."""
    r = a.reshape(-1)
    a += 1.0
    return xp.sum(r * np.arange(r.size))


def _scan_then_probe(xp, scan, keep, init, xs):
    c, ys = scan(lambda c, x: (keep(xp, c + x), x * 2.0), init, xs)
    # (An empty array's update is refused, though no element could tell.)
    return (reshaped_and_updated(xp, ys) if ys.size else 0.0) + 10 * reshaped_and_updated(xp, c)


def _numpy_scan(f, init, xs):
    c, ys = init, []
    for x in xs:
        c, y = f(c, x)
        ys.append(y)
    return c, np.stack(ys) if ys else np.zeros((0, *init.shape))


@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
@pytest.mark.parametrize("n", [0, 2])
@pytest.mark.parametrize("keep", KEEPS)
@pytest.mark.parametrize("layout", ["C", "F"])
def test_scan_results_have_the_layout_of_numpys_loop(layout, keep, n, transform):
    """``scan``'s ys are stacked as ``np.stack`` of the loop's ys (here C
    ones, so C order) and its final carry is laid out as the last output of the body (the
    initial value where it ran no step): a reshape of either then an update
    gives NumPy's loop's answer, or is refused where the carry's layout is
    not known, never another number."""
    init = LAYOUTS[layout]()[0].copy(order="K")
    xs = np.ones((n, 3, 4))
    want = _scan_then_probe(np, _numpy_scan, KEEPS[keep], init.copy(order="K"), xs)
    def probe(a, b):
        return _scan_then_probe(fnp, ft.lax.scan, KEEPS[keep], a, b)

    run = {"jit": ft.jit(probe),
           "grad": lambda a, b: ft.value_and_grad(probe)(a, b)[0],
           "vmap": lambda a, b: ft.vmap(probe, in_axes=(None, 0))(a, b[None])[0]}[transform]
    try:
        got = run(init, xs)
    except InPlaceUpdateError as e:
        assert "shares memory with or not" in str(e)
        assert n and keep != "as is"  # a body changing the carry's layout: not known
        return
    assert got == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("keep", KEEPS)
@pytest.mark.parametrize("layout", ["C", "F"])
def test_while_loop_and_cond_results_have_the_layout_of_numpys_code(layout, keep):
    """``while_loop``'s result is its initial value or its body's output, and
    ``cond``'s either branch's: laid out as those where they agree (NumPy's
    code returns one of them), else not known and refused."""
    init = LAYOUTS[layout]()[0].copy(order="K")

    def loop(xp, a, n, while_loop):
        return reshaped_and_updated(xp, while_loop(lambda c: c[1] < n, lambda c: (
            KEEPS[keep](xp, c[0] + 1.0), c[1] + 1), (a, 0))[0])

    def branch(xp, a, cond):
        return reshaped_and_updated(xp, cond(a[0, 0] > 0, lambda b: KEEPS[keep](xp, b),
                                             lambda b: b * 2.0, a))

    def numpy_while(cond, body, c):
        while cond(c):
            c = body(c)
        return c

    for n in (0, 2):
        want = loop(np, init.copy(order="K"), n, numpy_while)
        for pred in (True, False):
            a = init.copy(order="K") - (0 if pred else 1)
            want_b = branch(np, a.copy(order="K"), lambda p, t, f, b: t(b) if p else f(b))
            try:
                got_b = ft.jit(lambda b: branch(fnp, b, ft.lax.cond))(a)
            except InPlaceUpdateError:
                assert {"as is": False, "in C order": layout == "F",
                        "in F order": layout == "C"}[keep]
            else:
                assert got_b == pytest.approx(want_b, rel=1e-13)
        try:
            got = ft.jit(lambda a, m: loop(fnp, a, m, ft.lax.while_loop))(init, n)
        except InPlaceUpdateError:
            assert {"as is": False, "in C order": layout == "F",
                    "in F order": layout == "C"}[keep]
            continue
        assert got == pytest.approx(want, rel=1e-13)


#: Steps whose ys NumPy stacks in their own order (np.stack allocates in its
#: operands' order, the new axis slowest).
YS = {
    "the member": lambda xp, x: x,
    "a ufunc's result": lambda xp, x: x * 1.0,
    "transposed": lambda xp, x: x.T * 1.0,
    "in C order": lambda xp, x: xp.ascontiguousarray(x * 1.0),
}


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("y", YS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scan_stacks_its_ys_as_np_stack_does(layout, y, n):
    """``ys.reshape(-1)`` then ``ys += 1`` gives the answer of NumPy's loop
    with ``np.stack`` of its ys (F-ordered for F-ordered ys), or is refused
    where the ys' own layout is not known; never another number."""
    xs = LAYOUTS[layout]()[:n]

    def run(xp, scan, a):
        ys = scan(lambda c, x: (c, YS[y](xp, x)), 0.0, a)[1]
        return reshaped_and_updated(xp, ys)

    want = run(np, _numpy_scan, xs.copy(order="K"))
    try:
        got = ft.jit(lambda a: run(fnp, ft.lax.scan, a))(xs)
    except InPlaceUpdateError:
        assert layout in ("transposed", "step") and y != "in C order"
        return
    assert got == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_a_carry_whose_layout_alternates(layout, n):
    """``(c * x[0, 0]).T`` alternates C, F, C ... (or F, C, F ...): a body
    reading it is refused where it runs twice or more, and where it runs
    once or never (its output never comes back) it gives NumPy's answer."""
    init = LAYOUTS[layout]()[0, :3, :3].copy(order="K")
    xs = np.ones((n, 3, 3))

    def step(xp):
        return lambda c, x: ((c * x[0, 0]).T, reshaped_and_updated(xp, c * 1.0))

    c, ys = _numpy_scan(step(np), init.copy(order="K"), xs)
    for run in (lambda a, b: ft.lax.scan(step(fnp), a, b),
                ft.jit(lambda a, b: ft.lax.scan(step(fnp), a, b))):
        try:
            got_c, got_ys = run(init, xs)
        except InPlaceUpdateError:
            assert n > 1
            continue
        np.testing.assert_allclose(got_c, c, rtol=1e-13)
        np.testing.assert_allclose(got_ys, ys.reshape(n), rtol=1e-13)
