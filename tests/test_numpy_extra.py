"""``functrans/numpy/_extra.py``: the rest of everyday NumPy.  Values against
NumPy on hypothesis-drawn inputs (eagerly and under ``jit``), derivatives
against finite differences to second order, ``vmap`` against a Python loop,
the scalar types as casts, and the errors NumPy raises.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError, DTypeError
from functrans.testing import check_grads
from functrans.testing import strategies as fts

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))


def _same(got, want, exact=False):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def _eager_and_jit(name, *args, **kwargs):
    """``fnp.<name>`` and ``np.<name>`` on ``args``: eagerly, and under jit
    with the array arguments traced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = getattr(np, name)(*args, **kwargs)
        got = getattr(fnp, name)(*args, **kwargs)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def traced(*xs):
        full = list(args)
        for i, x in zip(arrays, xs):
            full[i] = x
        return getattr(fnp, name)(*full, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted = ft.jit(traced)(*(args[i] for i in arrays))
    return want, got, jitted


def check(name, *args, exact=False, **kwargs):
    want, got, jitted = _eager_and_jit(name, *args, **kwargs)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want) == len(jitted)
        for w, g, j in zip(want, got, jitted):
            _same(g, w, exact)
            _same(j, w, exact)
    else:
        _same(got, want, exact)
        _same(jitted, want, exact)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

UNARY = ["fabs", "sinc", "deg2rad", "rad2deg", "degrees", "radians", "nan_to_num",
         "iscomplex", "isreal", "real", "imag", "conj", "conjugate", "angle"]
BINARY = ["logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "fmod", "heaviside", "isclose"]


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_functions_match_numpy(name, data):
    kinds = ("float64", "float32", "int64", "bool") if name not in ("fabs",) else (
        "float64", "float32", "int32")
    if name == "nan_to_num" or name in ("real", "imag", "conj", "angle"):
        kinds = kinds + ("complex128",)
    dtype = np.dtype(data.draw(st.sampled_from(kinds)))
    special = name in ("nan_to_num", "fabs", "sinc") and dtype.kind in "fc"
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(max_rank=3, max_side=3),
                             min_value=-5, max_value=5, allow_nan=special,
                             allow_infinity=special))
    if name == "sinc" and dtype.kind == "f":
        x = np.where(np.isinf(x), 1.0, x).astype(dtype)
    if name == "sinc" and dtype == np.bool_:
        return
    check(name, x)


@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_functions_match_numpy(name, data):
    s1, s2 = data.draw(fts.broadcastable_shapes(2, max_rank=3, max_side=3))
    kinds = ("float64", "float32") if name != "fmod" else ("float64", "int64", "int32")
    d1, d2 = (np.dtype(data.draw(st.sampled_from(kinds))) for _ in range(2))
    special = name in ("logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "isclose")
    x = data.draw(fts.arrays(dtype=d1, shape=s1, min_value=-5, max_value=5,
                             allow_nan=special, allow_infinity=special))
    y = data.draw(fts.arrays(dtype=d2, shape=s2, min_value=-5, max_value=5,
                             allow_nan=special, allow_infinity=special))
    if name == "fmod" and d2.kind == "i":
        y = np.where(y == 0, 3, y).astype(d2)
    if name == "fmod" and d1.kind == "f":
        x = np.where(x == 0, 1.5, x).astype(d1)  # fmod(-0.0, y) keeps the sign of zero
    with np.errstate(all="ignore"):
        check(name, x, y)
    if data.draw(st.booleans()):  # one Python scalar operand, which stays weak
        scalar = 2.5 if name != "fmod" or d1.kind == "f" else 3
        with np.errstate(all="ignore"):
            check(name, x, scalar)


def test_edge_values_of_elementwise_functions():
    inf, nan = math.inf, math.nan
    check("logaddexp", np.array([inf, -inf, inf, nan, 1000.0, -inf]),
          np.array([inf, -inf, -inf, 1.0, 1000.0, 3.0]))
    check("hypot", np.array([inf, 1e300, 0.0, nan, 3.0]), np.array([nan, 1e300, 0.0, inf, -4.0]))
    check("fmax", np.array([nan, 1.0, nan]), np.array([2.0, nan, nan]))
    check("heaviside", np.array([-1.0, 0.0, 1.0, nan]), np.array(0.5))
    check("nan_to_num", np.array([nan, inf, -inf]), nan=1.0, posinf=2.0, neginf=-3.0)
    check("nan_to_num", np.array([complex(nan, inf), complex(-inf, 1.0)]))
    check("sinc", np.array([0.0, 1.0, -2.5, 1e-20]))
    check("isclose", np.array([1.0, inf, nan, -inf]), np.array([1.0 + 1e-9, inf, nan, inf]),
          equal_nan=True)
    assert fnp.allclose(X, X + 1e-10) is True and fnp.allclose(X, X + 1) is False
    assert ft.jit(fnp.allclose)(X, X).dtype == np.bool_


# --------------------------------------------------------------------------
# Shapes, matrices, differences
# --------------------------------------------------------------------------

A3 = RNG.standard_normal((2, 3, 4))

CASES = [
    ("append", (X, Y)), ("append", (X, Y, 0)), ("append", (X, np.ones((3, 1)), 1)),
    ("roll", (X, 2)), ("roll", (X, -1, 1)), ("roll", (X, (1, 5), (0, 1))), ("roll", (X, 3, 0)),
    ("rot90", (X,)), ("rot90", (X, 2)), ("rot90", (X, -1)), ("rot90", (A3, 1, (2, 0))),
    ("rollaxis", (A3, 2)), ("rollaxis", (A3, 0, 3)), ("rollaxis", (A3, -1, 1)),
    ("dsplit", (A3.reshape(2, 2, 6), 3)), ("dsplit", (A3.reshape(2, 2, 6), [1, 4])),
    ("diag", (X,)), ("diag", (X, 1)), ("diag", (X, -2)), ("diag", (X, 7)),
    ("diag", (np.arange(3.0),)), ("diag", (np.arange(3),)), ("diag", (np.arange(3.0), -2)),
    ("diagonal", (A3,)), ("diagonal", (A3, 1, 2, 0)), ("diagonal", (A3, -1, -1, -2)),
    ("trace", (X,)), ("trace", (A3, 1, 1, 2)), ("trace", (np.arange(9).reshape(3, 3),)),
    ("tril", (X,)), ("tril", (A3, -1)), ("triu", (X, 1)), ("triu", (np.arange(3.0),)),
    ("kron", (X, Y[:2, :2])), ("kron", (np.arange(3), X)), ("kron", (A3, np.eye(2))),
    ("cross", (X[:, :3], Y[:, :3])), ("cross", (X[0, :3], Y[:, :3])),
    ("cross", (X[:2, :3], Y[:2, :2].T, -1, 0)), ("cross", (X[:, :3], Y[:, :3], -1, -1, 0)),
    ("cross", (X[:, :2], Y[:, :2])), ("cross", (A3[..., :3], A3[..., 1:], -1, -1, 1)),
    ("diff", (X,)), ("diff", (X, 2, 0)), ("diff", (np.array([True, False, False]),)),
    ("diff", (X, 1, -1, 0.0, np.ones((3, 1)))), ("diff", (np.arange(5), 3)),
    ("gradient", (np.array([1.0, 2, 4, 7, 11]),)), ("gradient", (X,)),
    ("gradient", (X, 2.0)), ("gradient", (X, 1.0, np.array([0.0, 1, 3, 4]))),
    ("gradient", (np.array([1.0, 2, 4, 7, 11]), np.array([0.0, 1, 1.5, 3.5, 4]))),
    ("gradient", (A3,)), ("gradient", (np.arange(6) ** 2,)),
]


@pytest.mark.parametrize("name, args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_shape_matrix_and_difference_functions_match_numpy(name, args):
    check(name, *args)


def test_gradient_keywords_match_numpy():
    f = np.array([1.0, 2, 4, 7, 11, 16])
    x = np.array([0.0, 1, 1.5, 3.5, 4, 6])
    for edge_order in (1, 2):
        check("gradient", f, edge_order=edge_order)
        check("gradient", f, x, edge_order=edge_order)
        check("gradient", X, axis=1, edge_order=edge_order)
        check("gradient", X, 0.5, 2.0, axis=(1, 0), edge_order=edge_order)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "empty"])
def test_pad_matches_numpy(mode):
    want = np.pad(X, ((1, 2), (3, 0)), mode=mode)
    if mode == "empty":
        want = np.pad(X, ((1, 2), (3, 0)))  # our "empty" is zeros
    _same(fnp.pad(X, ((1, 2), (3, 0)), mode=mode), want)
    _same(ft.jit(lambda x: fnp.pad(x, ((1, 2), (3, 0)), mode=mode))(X), want)
    if mode != "empty":
        check("pad", np.arange(3.0), (7, 5), mode=mode)  # pads wider than the array
        check("pad", np.arange(4), 2, mode=mode)
    check("pad", X, 1, mode="constant", constant_values=((1, 2), (3, 4)))
    check("pad", np.arange(3), (1, 1), constant_values=7.9)


def test_pad_with_a_traced_constant_is_differentiable():
    g = ft.grad(lambda c: fnp.sum(fnp.pad(X, 1, constant_values=c)))(0.5)
    np.testing.assert_allclose(g, np.pad(X, 1, constant_values=1.0).size - X.size)


def test_r_and_c_match_numpy():
    a, b = np.array([1, 2]), np.array([3.0, 4.0])
    _same(fnp.r_[a, 0, 4:6], np.r_[a, 0, 4:6])
    _same(fnp.r_[-1:1:5j, b], np.r_[-1:1:5j, b])
    _same(fnp.r_["0,2", a, b], np.r_["0,2", a, b])
    _same(fnp.r_["-1", X, Y], np.r_["-1", X, Y])
    _same(fnp.c_[a, b], np.c_[a, b])
    _same(fnp.c_[X, Y], np.c_[X, Y])
    _same(ft.jit(lambda x, y: fnp.r_[x, 1.0, y])(a.astype(float), b), np.r_[a, 1.0, b])
    g = ft.grad(lambda x: fnp.sum(fnp.c_[x, 2 * x] ** 2))(b)
    np.testing.assert_allclose(g, 10 * b)


# --------------------------------------------------------------------------
# Sorting, searching, selecting
# --------------------------------------------------------------------------


@settings(max_examples=20)
@given(data=st.data())
def test_sort_and_argsort_match_numpy(data):
    dtype = data.draw(st.sampled_from(["float64", "float32", "int64", "bool", "complex128"]))
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(min_rank=1, max_rank=3, max_side=4),
                             min_value=-3, max_value=3, allow_nan=dtype.startswith("f")))
    axis = data.draw(st.sampled_from([None, 0, -1]))
    check("sort", x, axis, exact=True)
    check("argsort", x, axis, kind="stable", exact=True)
    if axis is not None and x.shape[axis]:
        kth = data.draw(st.integers(0, x.shape[axis] - 1))
        got = fnp.partition(x, kth, axis)
        want = np.partition(x, kth, axis)
        np.testing.assert_array_equal(np.take(got, kth, axis), np.take(want, kth, axis))
        idx = fnp.argpartition(x, kth, axis)
        np.testing.assert_array_equal(np.take(np.take_along_axis(x, idx, axis), kth, axis),
                                      np.take(want, kth, axis))


@settings(max_examples=20)
@given(data=st.data())
def test_searchsorted_matches_numpy(data):
    a = np.sort(data.draw(fts.arrays(dtype=np.float64, shape=(data.draw(st.integers(0, 6)),),
                                     min_value=-3, max_value=3, allow_nan=True)))
    v = data.draw(fts.arrays(dtype=np.float64, shape=fts.shapes(max_rank=2, max_side=3),
                             min_value=-4, max_value=4, allow_nan=True))
    for side in ("left", "right"):
        check("searchsorted", a, v, side=side)
    sorter = np.argsort(-a)
    check("searchsorted", -a, v, sorter=sorter)


def test_select_take_along_axis_and_static_properties():
    check("select", [X > 0, Y > 0], [X, Y], -1.0)
    check("select", [X > 0], [1], 0)
    check("select", [X > 0, X < -1], [X.astype(np.float32), 2.0])
    _same(fnp.take_along_axis(X, np.argsort(X, 1), 1), np.take_along_axis(X, np.argsort(X, 1), 1))
    check("take_along_axis", X, np.array([[0], [3], [-1]]), 1)
    check("take_along_axis", X, np.array([[0, 2, 1, 1]]), 0)
    check("take_along_axis", X, np.array([5, 0]), None)
    assert fnp.ndim(X) == 2 and fnp.shape(X) == (3, 4) and fnp.size(X, 1) == 4
    assert ft.jit(lambda x: np.ndim(x) + np.size(x) + len(x))(X) == 2 + 12 + 3


# --------------------------------------------------------------------------
# einsum's interleaved form, casts, Python builtins on tracers
# --------------------------------------------------------------------------


def test_einsum_sublists_and_ellipses():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 5))
    _same(fnp.einsum(a, [0, 1, 2], b, [2, 3], [0, 1, 3]),
          np.einsum(a, [0, 1, 2], b, [2, 3], [0, 1, 3]))
    _same(fnp.einsum(a, [Ellipsis, 2], b, [2, 3], [Ellipsis, 3]),
          np.einsum(a, [Ellipsis, 2], b, [2, 3], [Ellipsis, 3]))
    _same(fnp.einsum("...ij,jk->...ik", a, b), np.einsum("...ij,jk->...ik", a, b))
    _same(fnp.einsum("i...->...", a), np.einsum("i...->...", a))
    _same(fnp.einsum(a, [0, 1, 2]), np.einsum(a, [0, 1, 2]))
    check_grads(lambda x, y: fnp.einsum(x, [Ellipsis, 2], y, [2, 3], [Ellipsis, 3]), (a, b))


def test_scalar_types_are_numpys_and_astype_casts_traced_values():
    """The scalar types are NumPy's own (tests/numpy/test_dtype_objects.py);
    ``astype`` is the cast of traced values that ``fnp.float32(x)`` cannot be."""
    for name in ("float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool_",
                 "complex64", "complex128"):
        t = getattr(fnp, name)
        want = getattr(np, name)
        assert t is want
        assert np.zeros(2, dtype=t).dtype == np.dtype(want)
        assert fnp.zeros(2, dtype=t).dtype == np.dtype(want)
        got = ft.jit(lambda x, t=t: x.astype(t))(np.array([1.5, -2.0]))
        assert got.dtype == np.dtype(want)
        _same(got, np.array([1.5, -2.0]).astype(want))
        assert type(t(1.5)) is want  # eager: NumPy's own scalar
        with pytest.raises(ConcretizationError, match=r"x\.astype\(functrans\.numpy\.float32\)"):
            ft.jit(lambda x, t=t: t(x))(np.array([1.5, -2.0]))
    assert ft.grad(lambda x: x.astype(fnp.float32) * 2.0)(1.0) == 2.0
    assert ft.jit(lambda x: x.astype(fnp.int32))(X).dtype == np.int32
    assert fnp.float32([1, 2]).dtype == np.float32


def test_python_len_sum_and_max_on_tracers():
    assert ft.jit(lambda x: len(x) * x[0, 0])(X) == 3 * X[0, 0]
    np.testing.assert_allclose(ft.jit(lambda x: sum([x, 2 * x, x ** 2]))(X), 3 * X + X ** 2)
    assert ft.grad(lambda t: sum([t, t * 2, t ** 2]))(3.0) == 9.0
    # max() compares in Python: it works where values are known (eager autodiff
    # retraces with values), and under jit asks for fnp.maximum instead.
    assert ft.grad(lambda t: max([t, t * 2, t ** 2]))(3.0) == 6.0
    with pytest.raises(ConcretizationError, match=r"bool\(\) needs a concrete value"):
        ft.jit(lambda t: max([t, t * 2]))(3.0)
    assert ft.jit(lambda t: fnp.max(fnp.stack([t, t * 2])))(3.0) == 6.0


# --------------------------------------------------------------------------
# Derivatives and batching
# --------------------------------------------------------------------------

POS = np.abs(X) + 0.5
GRAD_CASES = {
    "fabs": (fnp.fabs, (POS,)),
    "sinc": (fnp.sinc, (X,)),
    "logaddexp": (fnp.logaddexp, (X, Y)),
    "logaddexp2": (fnp.logaddexp2, (X, Y)),
    "fmax": (fnp.fmax, (X, Y)),
    "hypot": (fnp.hypot, (X, Y)),
    "fmod": (fnp.fmod, (X * 3, POS)),
    "deg2rad": (fnp.deg2rad, (X,)),
    "heaviside": (lambda y: fnp.heaviside(np.array([-1.0, 0.0, 2.0]), y), (X[0, :3],)),
    "nan_to_num": (fnp.nan_to_num, (X,)),
    "angle": (fnp.angle, (X + 1j * Y,)),
    "append": (lambda a, b: fnp.append(a, b, 0), (X, Y)),
    "pad_reflect": (lambda a: fnp.pad(a, ((2, 1), (0, 3)), mode="reflect"), (X,)),
    "pad_constant": (lambda a: fnp.pad(a, 2, constant_values=1.5), (X,)),
    "roll": (lambda a: fnp.roll(a, (1, -2), (0, 1)), (X,)),
    "rot90": (fnp.rot90, (X,)),
    "diag": (lambda v: fnp.diag(v, -1), (X[0],)),
    "diagonal": (lambda a: fnp.diagonal(a, 1, 0, 2), (A3,)),
    "trace": (fnp.trace, (X,)),
    "tril": (lambda a: fnp.tril(a, 1), (X,)),
    "triu": (fnp.triu, (A3,)),
    "kron": (fnp.kron, (X[:2, :2], Y[:2, :3])),
    "cross": (fnp.cross, (X[:, :3], Y[:, :3])),
    "diff": (lambda a: fnp.diff(a, 2), (X,)),
    "gradient": (lambda a: fnp.gradient(a, axis=1, edge_order=2), (X,)),
    "gradient_coords": (lambda a, x: fnp.gradient(a, x, axis=1),
                        (X, np.array([0.0, 1.0, 3.0, 4.5]))),
    "sort": (lambda a: fnp.sort(a, 0), (X,)),
    "partition": (lambda a: fnp.partition(a, 1), (X,)),
    "select": (lambda a, b: fnp.select([a > 0, b > 0], [a * b, b], a), (X, Y)),
    "take_along_axis": (lambda a: fnp.take_along_axis(a, np.argsort(X, 1), 1), (X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_derivatives_at_the_awkward_points():
    # logaddexp splits a tie evenly; its second derivative there is 1/4.
    assert ft.grad(fnp.logaddexp)(1.0, 1.0) == 0.5
    assert ft.grad(ft.grad(fnp.logaddexp))(1.0, 1.0) == 0.25
    # sinc at 0: value 1, slope 0, curvature -pi^2/3, all exact.
    assert fnp.sinc(0.0) == 1.0
    assert ft.grad(fnp.sinc)(0.0) == 0.0
    np.testing.assert_allclose(ft.grad(ft.grad(fnp.sinc))(0.0), -(math.pi ** 2) / 3)
    np.testing.assert_allclose(ft.hessian(lambda x: fnp.sum(fnp.sinc(x)))(np.zeros(2)),
                               -(math.pi ** 2) / 3 * np.eye(2))
    # fmod's derivative in x1 is 1, also at 0; in x2 it is -trunc(x1 / x2).
    assert ft.grad(fnp.fmod)(0.0, 2.0) == 1.0
    assert ft.grad(fnp.fmod, argnums=1)(-7.0, 2.0) == 3.0
    # sort moves the tangent with the values; argsort has none.
    assert list(ft.jvp(fnp.sort, (np.array([3.0, 1.0]),), (np.array([10.0, 20.0]),))[1]) == \
        [20.0, 10.0]
    assert ft.jacfwd(lambda x: fnp.argsort(x).astype(float))(np.array([3.0, 1.0])).sum() == 0


VMAP_CASES = {
    "sort": (lambda a: fnp.sort(a), (X,), 0),
    "argsort": (lambda a: fnp.argsort(a), (X,), 1),
    "diag": (fnp.diag, (X,), 0),
    "diagonal": (lambda a: fnp.diagonal(a, 1), (A3,), 2),
    "trace": (fnp.trace, (A3,), 1),
    "tril": (fnp.tril, (A3,), 0),
    "kron": (lambda a: fnp.kron(a, np.eye(2)), (X,), 0),
    "cross": (lambda a: fnp.cross(a, np.array([0.0, 1.0, 2.0])), (X[:, :3],), 0),
    "diff": (fnp.diff, (X,), 1),
    "gradient": (fnp.gradient, (X,), 0),
    "pad": (lambda a: fnp.pad(a, 2, mode="wrap"), (X,), 0),
    "roll": (lambda a: fnp.roll(a, 1), (X,), 0),
    "searchsorted": (lambda v: fnp.searchsorted(np.array([-1.0, 0.0, 1.0]), v), (X,), 1),
    "logaddexp": (lambda a: fnp.logaddexp(a, 0.3), (X,), 0),
    "sinc": (fnp.sinc, (X,), 1),
    "grad_sinc": (ft.grad(lambda a: fnp.sum(fnp.sinc(a))), (X,), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    f, args, axis = VMAP_CASES[name]
    got = ft.vmap(f, in_axes=axis)(*args)
    want = np.stack([f(np.take(args[0], i, axis)) for i in range(args[0].shape[axis])])
    _same(got, want)


def test_searchsorted_traced_sorted_array_under_vmap():
    a = np.sort(RNG.standard_normal((3, 5)), axis=1)
    v = RNG.standard_normal((3, 2))
    got = ft.vmap(fnp.searchsorted)(a, v)
    _same(got, np.stack([np.searchsorted(a[i], v[i]) for i in range(3)]))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_errors_match_numpy():
    with pytest.raises(ValueError, match=r"dsplit only works on arrays of 3 or more"):
        fnp.dsplit(X, 2)
    with pytest.raises(ValueError, match=r"Axes must be different"):
        fnp.rot90(X, axes=(0, 0))
    with pytest.raises(ValueError, match=r"len\(axes\) must be 2"):
        fnp.rot90(X, axes=(0,))
    with pytest.raises(ValueError, match=r"Input must be 1- or 2-d"):
        fnp.diag(A3)
    with pytest.raises(ValueError, match=r"incompatible dimensions for cross product"):
        fnp.cross(X, Y)
    with pytest.raises(ValueError, match=r"order must be non-negative"):
        fnp.diff(X, -1)
    with pytest.raises(ValueError, match=r"Shape of array too small"):
        fnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(ValueError, match=r"index can't contain negative values"):
        fnp.pad(X, -1)
    with pytest.raises(NotImplementedError, match=r"pad: mode 'median' is not supported"):
        fnp.pad(X, 1, mode="median")
    with pytest.raises(ValueError, match=r"list of cases must be same length"):
        fnp.select([X > 0], [X, Y])
    with pytest.raises(TypeError, match=r"invalid entry 0 in condlist: should be boolean"):
        fnp.select([X], [Y])
    with pytest.raises(ValueError, match=r"side must be 'left' or 'right'"):
        fnp.searchsorted(np.arange(3), 1, side="middle")
    with pytest.raises(ValueError, match=r"kth\(=5\) out of bounds \(4\)"):
        fnp.partition(X, 5)
    with pytest.raises(DTypeError, match=r"fabs: not defined for operands of type c128"):
        fnp.fabs(np.array([1j]))
    with pytest.raises(ConcretizationError, match=r"roll: the shift must be concrete"):
        ft.jit(lambda x, s: fnp.roll(x, s))(X, 1)
    with pytest.warns(DeprecationWarning, match=r"2-dimensional vectors are deprecated"):
        fnp.cross(X[:, :2], Y[:, :2])
