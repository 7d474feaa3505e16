"""``jacfwd``, ``jacrev`` and ``hessian``: agreement of the two modes on random
programs (and with finite differences), pytree inputs and outputs (nested
blocks, as in JAX), argnums, has_aux, chunk_size, and Hessians against
closed forms.
"""

from __future__ import annotations

import numpy as np
import pytest
from _op_chains import NOT_SMOOTH, program, programs
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import strategies as fts
from functrans.tree_util import tree_map, tree_structure

# Every test runs twice: as written, and with each transformed function jitted.
pytestmark = pytest.mark.usefixtures("transform_mode")


def close(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def jacobian_by_differences(f, x, eps=1e-6):
    """Central differences, one input element at a time: shape out + in."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    out_shape = np.shape(f(x))
    if not cols:
        return np.zeros(out_shape + x.shape)
    return np.moveaxis(np.stack(cols), 0, -1).reshape(out_shape + x.shape)


# --------------------------------------------------------------------------
# Forward and reverse mode agree
# --------------------------------------------------------------------------


@settings(max_examples=60)
@given(prog=programs())
def test_jacfwd_equals_jacrev_on_random_programs(prog):
    ops, x0, w = prog
    f = program(ops)
    fwd = ft.jacfwd(f, argnums=(0, 1))(x0, w)
    rev = ft.jacrev(f, argnums=(0, 1))(x0, w)
    # A float32 round trip rounds tangents and cotangents differently.
    tol = 1e-6 if "float32_round_trip" in ops else 1e-10
    for a, b in zip(fwd, rev):
        close(a, b, rtol=tol, atol=tol)
    assert fwd[0].shape == x0.shape + x0.shape and fwd[1].shape == x0.shape + w.shape
    if not NOT_SMOOTH & set(ops):
        close(fwd[0], jacobian_by_differences(lambda x: f(x, w), x0), rtol=1e-5, atol=1e-5)
        close(fwd[1], jacobian_by_differences(lambda w: f(x0, w), w), rtol=1e-5, atol=1e-5)


@settings(max_examples=15)
@given(x=fts.arrays(dtype=np.float64, shape=fts.shapes(max_rank=2, max_side=3),
                    min_value=-2, max_value=2))
def test_jacobians_of_an_elementwise_function_are_diagonal(x):
    def f(x):
        return np.sin(x) * x

    want = np.diag((np.cos(x) * x + np.sin(x)).reshape(-1)).reshape(x.shape + x.shape)
    close(ft.jacfwd(f)(x), want)
    close(ft.jacrev(f)(x), want)


def test_jacobian_of_a_scalar_function_and_of_scalar_input():
    x = np.array([1.0, 2.0, 3.0])
    close(ft.jacfwd(lambda x: fnp.sum(x ** 2))(x), 2 * x)
    close(ft.jacrev(lambda x: fnp.sum(x ** 2))(x), 2 * x)
    close(ft.jacfwd(lambda t: np.array([1.0, 2.0]) * t ** 2)(3.0), [6.0, 12.0])
    close(ft.jacrev(lambda t: np.array([1.0, 2.0]) * t ** 2)(3.0), [6.0, 12.0])
    close(ft.jacfwd(lambda x: x ** 2)(np.zeros(0)), np.zeros((0, 0)))
    close(ft.jacrev(lambda x: x ** 2)(np.zeros(0)), np.zeros((0, 0)))


# --------------------------------------------------------------------------
# Pytrees, argnums, has_aux
# --------------------------------------------------------------------------


def _tree_f(p):
    return {"y": p["a"] * 2.0, "z": (fnp.sum(p["b"]) * p["a"],)}


def test_pytree_inputs_and_outputs_give_nested_blocks():
    p = {"a": np.array([1.0, -2.0]), "b": np.arange(6.0).reshape(2, 3)}
    for jac in (ft.jacfwd, ft.jacrev):
        j = jac(_tree_f)(p)
        # Output structure outside, input structure inside, as in JAX.
        assert tree_structure(j, is_leaf=lambda x: isinstance(x, np.ndarray)) == tree_structure(
            {"y": {"a": 0, "b": 0}, "z": ({"a": 0, "b": 0},)})
        close(j["y"]["a"], 2.0 * np.eye(2))
        close(j["y"]["b"], np.zeros((2, 2, 3)))
        close(j["z"][0]["a"], np.sum(p["b"]) * np.eye(2))
        close(j["z"][0]["b"], np.broadcast_to(p["a"][:, None, None], (2, 2, 3)))


def test_argnums_tuples():
    def f(x, y, z):
        return x * y ** 2 + z

    x, y, z = np.array([1.0, 2.0]), np.array([3.0, -1.0]), 5.0
    for jac in (ft.jacfwd, ft.jacrev):
        jx, jz = jac(f, argnums=(0, 2))(x, y, z)
        close(jx, np.diag(y ** 2))
        close(jz, [1.0, 1.0])
        (jy,) = jac(f, argnums=(1,))(x, y, z)
        close(jy, np.diag(2 * x * y))
        close(jac(f, argnums=1)(x, y, z), np.diag(2 * x * y))
        close(jac(f, argnums=-1)(x, y, z), [1.0, 1.0])


def test_has_aux():
    def f(x):
        return x ** 3, {"norm": fnp.sum(x ** 2), "x": x}

    x = np.array([1.0, 2.0])
    for jac in (ft.jacfwd, ft.jacrev):
        j, aux = jac(f, has_aux=True)(x)
        close(j, np.diag(3 * x ** 2))
        close(aux["norm"], 5.0)
        close(aux["x"], x)
    h, aux = ft.hessian(lambda x: (fnp.sum(x ** 3), x * 2.0), has_aux=True)(x)
    close(h, np.diag(6 * x))
    close(aux, 2 * x)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 100, None])
def test_chunk_size_gives_the_same_result(chunk_size):
    x = np.linspace(-1.0, 1.0, 7)
    w = np.linspace(0.5, 2.0, 7 * 4).reshape(4, 7)

    def f(x):
        return np.tanh(w @ x) * fnp.sum(x ** 2)

    want_fwd = jacobian_by_differences(f, x)
    close(ft.jacfwd(f, chunk_size=chunk_size)(x), want_fwd, rtol=1e-6, atol=1e-7)
    close(ft.jacrev(f, chunk_size=chunk_size)(x), ft.jacfwd(f)(x), rtol=1e-12)
    h = ft.hessian(lambda x: fnp.sum(f(x)), chunk_size=chunk_size)(x)
    close(h, ft.hessian(lambda x: fnp.sum(f(x)))(x), rtol=1e-12)
    # Pytree inputs are chunked across leaves too.
    p = {"a": np.array([1.0, -2.0]), "b": np.arange(6.0).reshape(2, 3)}
    chunked = ft.jacfwd(_tree_f, chunk_size=chunk_size)(p)
    tree_map(lambda a, b: close(a, b), chunked, ft.jacfwd(_tree_f)(p))
    chunked = ft.jacrev(_tree_f, chunk_size=chunk_size)(p)
    tree_map(lambda a, b: close(a, b), chunked, ft.jacrev(_tree_f)(p))


def test_bad_chunk_size():
    with pytest.raises(ValueError, match=r"jacfwd\(<lambda>\): chunk_size must be a positive int "
                                         r"or None, got 0"):
        ft.jacfwd(lambda x: x, chunk_size=0)(np.ones(2))
    with pytest.raises(ValueError, match=r"jacrev\(<lambda>\): chunk_size must be a positive"):
        ft.jacrev(lambda x: x, chunk_size=-1)(np.ones(2))


def test_jacobian_of_an_integer_input_is_refused():
    with pytest.raises(TypeError, match=r"jacrev\(<lambda>\): argument 0 has integer or bool type "
                                        r"i64\[3\]"):
        ft.jacrev(lambda x: x * 1.0)(np.arange(3))


# --------------------------------------------------------------------------
# Hessians
# --------------------------------------------------------------------------


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The closed form of the chained Rosenbrock function's Hessian."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * x[i]
    return h


@settings(max_examples=20)
@given(x=fts.arrays(dtype=np.float64, shape=st.integers(2, 6).map(lambda n: (n,)),
                    min_value=-2, max_value=2))
def test_hessian_of_rosenbrock(x):
    h = ft.hessian(rosenbrock)(x)
    close(h, rosenbrock_hessian(x), rtol=1e-12, atol=1e-9)
    close(h, h.T, rtol=1e-12, atol=1e-12)
    close(ft.jacfwd(ft.jacrev(rosenbrock))(x), h, rtol=1e-12, atol=1e-9)
    close(ft.jacrev(ft.jacfwd(rosenbrock))(x), h, rtol=1e-12, atol=1e-9)
    close(ft.jacrev(ft.jacrev(rosenbrock))(x), h, rtol=1e-12, atol=1e-9)


def test_hessian_of_a_function_of_a_matrix():
    a = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])

    def f(x):  # x: (2, 3); f = sum((x @ a)**2)
        return fnp.sum((x @ a) ** 2)

    x = np.arange(6.0).reshape(2, 3) / 5
    h = ft.hessian(f)(x)
    # d2f / dx_ij dx_kl = 2 delta_ik (a a^T)_jl
    want = 2.0 * np.einsum("ik,jl->ijkl", np.eye(2), a @ a.T)
    close(h, want, rtol=1e-12)
    assert h.shape == (2, 3, 2, 3)
    close(h.reshape(6, 6), h.reshape(6, 6).T)


def test_hessian_with_pytree_input_and_argnums():
    def f(p, c):
        return fnp.sum(p["u"] ** 2 * p["v"]) * c

    p = {"u": np.array([1.0, 2.0]), "v": np.array([3.0, -1.0])}
    h = ft.hessian(f)(p, 2.0)
    close(h["u"]["u"], 2.0 * np.diag(2 * p["v"]))
    close(h["u"]["v"], 2.0 * np.diag(2 * p["u"]))
    close(h["v"]["u"], 2.0 * np.diag(2 * p["u"]))
    close(h["v"]["v"], np.zeros((2, 2)))
    # Blocks nest like JAX's: the gradient's structure (p, c) outside, each
    # of its leaves holding the input structure (p, c).
    h_p, h_c = ft.hessian(f, argnums=(0, 1))(p, 2.0)
    close(h_p["u"][0]["u"], 2.0 * np.diag(2 * p["v"]))
    close(h_p["u"][0]["v"], 2.0 * np.diag(2 * p["u"]))
    close(h_p["u"][1], 2 * p["u"] * p["v"])
    close(h_p["v"][1], p["u"] ** 2)
    close(h_c[0]["u"], 2 * p["u"] * p["v"])
    close(h_c[0]["v"], p["u"] ** 2)
    close(h_c[1], 0.0)


def test_integer_and_bool_outputs_have_zero_blocks_in_the_inputs_dtype():
    """jacfwd and jacrev agree on an output without a derivative: zeros of
    the input's dtype (jacfwd gave the output's integer dtype before)."""
    def f(x):
        return {"i": (x * 2).astype(np.int32), "b": x > 1, "x": x ** 2}

    x = np.float32([1.0, 2.0, 3.0])
    for transform in (lambda g: g, ft.jit):
        fwd, rev = transform(ft.jacfwd(f))(x), transform(ft.jacrev(f))(x)
        for key in ("i", "b"):
            for jac in (fwd[key], rev[key]):
                assert jac.dtype == np.float32 and jac.shape == (3, 3)
                np.testing.assert_array_equal(jac, 0)
        np.testing.assert_array_equal(fwd["x"], rev["x"])
