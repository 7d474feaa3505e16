"""Derivatives of x.at[idx].mul/min/max where index arrays repeat a position:
closed forms, finite differences, and agreement between the transforms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

IDX = np.array([0, 2, 0, 0, 3])


def mul_at(x, v):
    return fnp.at(x)[IDX].mul(v)


def max_at(x, v):
    return fnp.at(x)[IDX].max(v)


def min_at(x, v):
    return fnp.at(x)[IDX].min(v)


def test_mul_through_a_repeated_index_closed_form():
    x, v = np.array([2.0, 7.0, 5.0, 1.5]), np.array([2.0, 3.0, -1.5, 4.0, 0.5])
    jx, jv = ft.jacrev(mul_at, argnums=(0, 1))(x, v)
    p0 = 2.0 * -1.5 * 4.0  # the updates at position 0
    np.testing.assert_allclose(jx, np.diag([p0, 1.0, 3.0, 0.5]))
    expected_v = np.zeros((4, 5))
    expected_v[0, [0, 2, 3]] = [x[0] * -1.5 * 4.0, x[0] * 2.0 * 4.0, x[0] * 2.0 * -1.5]
    expected_v[2, 1], expected_v[3, 4] = x[2], x[3]
    np.testing.assert_allclose(jv, expected_v)


@pytest.mark.parametrize("v0, expected", [
    ((0.0, 3.0, 4.0), (2.0 * 12.0, 0.0, 0.0)),  # one zero: only its factor survives
    ((0.0, 0.0, 4.0), (0.0, 0.0, 0.0)),  # two zeros: every factor is 0
    ((-0.0, 3.0, 4.0), (2.0 * 12.0, 0.0, 0.0)),
])
def test_mul_through_a_repeated_index_with_zero_updates(v0, expected):
    x = np.array([2.0, 7.0, 5.0, 1.5])
    v = np.array([v0[0], 1.0, v0[1], v0[2], 1.0])
    g = ft.grad(lambda v: mul_at(x, v)[0])(v)
    np.testing.assert_array_equal(g[[0, 2, 3]], expected)


def test_max_and_min_share_ties_among_the_winners():
    x = np.array([3.0, 0.0, 0.0, 0.0])
    v = np.array([3.0, 1.0, 1.0, 3.0, 1.0])  # position 0: x, v0 and v3 tie
    gx, gv = ft.grad(lambda x, v: max_at(x, v)[0], argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, [1 / 3, 0, 0, 0])
    np.testing.assert_allclose(gv, [1 / 3, 0, 0, 1 / 3, 0])
    v = np.array([5.0, 1.0, 4.0, 9.0, 1.0])  # v3 wins alone
    gx, gv = ft.grad(lambda x, v: max_at(x, v)[0], argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [0, 0, 0, 0])
    np.testing.assert_array_equal(gv, [0, 0, 0, 1, 0])
    gx, gv = ft.grad(lambda x, v: min_at(x, v)[0], argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [1, 0, 0, 0])  # x (3) stays the minimum
    np.testing.assert_array_equal(gv, [0, 0, 0, 0, 0])


def test_max_ties_between_signed_zeros_and_nan():
    x = np.array([0.0, np.nan, 1.0, 1.0])
    v = np.array([-0.0, 2.0, -1.0, 0.0, 3.0])  # -0.0 ties with 0.0 at position 0
    gx, gv = ft.grad(lambda x, v: fnp.sum(max_at(x, v)), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, [1 / 3, 1, 0, 0])  # the NaN passes through untouched
    np.testing.assert_allclose(gv, [1 / 3, 1, 0, 1 / 3, 1])
    v = v.copy()
    v[2] = np.nan  # a NaN update makes position 0 NaN: it alone made the result
    gx, gv = ft.grad(lambda x, v: max_at(x, v)[0], argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [0, 0, 0, 0])
    np.testing.assert_array_equal(gv, [0, 0, 1, 0, 0])


def test_unique_positions_keep_exact_factors():
    x, v = np.array([2.0, 7.0]), np.array([np.inf, 3.0])
    jv = ft.jacfwd(lambda v: fnp.at(x)[np.array([1, 0])].mul(v))(v)
    np.testing.assert_array_equal(jv, [[0.0, 2.0], [7.0, 0.0]])


def test_an_infinite_operand_where_no_update_lands_keeps_a_zero_derivative():
    x = np.array([np.inf, 2.0, -np.inf])
    for f in (lambda v: fnp.at(x)[np.array([1, 1])].mul(v),
              lambda v: fnp.at(x)[np.array([1, 1])].max(v)):
        jv = ft.jacrev(f)(np.array([3.0, 4.0]))
        assert np.isfinite(jv).all() and (jv[[0, 2]] == 0).all()


def _distinct(values):
    """Values spaced apart, so that no two meeting at a position tie."""
    return np.asarray(values) + 0.37 * np.arange(len(values))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.floats(-3, 3), min_size=5, max_size=5),
       st.lists(st.floats(0.5, 2.0), min_size=4, max_size=4),
       st.sampled_from([mul_at, max_at, min_at]))
def test_finite_differences_and_transform_identities(v, x, f):
    x, v = np.array(x), np.array(v)
    if f is not mul_at:
        v = _distinct(v)
    check_grads(f, (x, v), order=1, modes=("fwd", "rev"))
    jf = ft.jacfwd(f, argnums=(0, 1))(x, v)
    jr = ft.jacrev(f, argnums=(0, 1))(x, v)
    jj = ft.jit(ft.jacrev(f, argnums=(0, 1)))(x, v)
    for a, b, c in zip(jf, jr, jj):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, c, rtol=1e-12, atol=1e-12)


def test_vmap_of_the_gradient_equals_a_loop():
    xs = np.array([[2.0, 1.0, 3.0, 0.5], [1.0, -2.0, 0.5, 4.0]])
    vs = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [0.5, -1.0, 0.0, 2.0, 1.5]])
    for f in (mul_at, max_at, min_at):
        g = ft.grad(lambda x, v, f=f: fnp.sum(f(x, v) ** 2), argnums=1)
        batched = ft.vmap(g)(xs, vs)
        np.testing.assert_allclose(batched, [g(x, v) for x, v in zip(xs, vs)])


@pytest.mark.parametrize("mode, ufunc", [("add", np.add), ("mul", np.multiply),
                                         ("min", np.minimum), ("max", np.maximum)])
def test_updates_broadcast_over_repeated_index_rows(mode, ufunc):
    """Each broadcast update counts once per position it reaches: NumPy's
    ufunc.at itself dropped updates broadcast over repeated rows of an index
    (np.add.at(zeros(1), zeros((2, 2), int), [1.0, 2.0]) adds 3, not 6, in
    NumPy 2.4), which the value took while the derivatives counted all."""
    idx = np.zeros((2, 2), np.int32)
    x = np.array([0.3])
    for u in (np.array([1.5, 2.0]), np.array([[1.0, 2.0], [-1.0, 2.0]]), np.array(1.5)):
        want = x.copy()
        ufunc.at(want, idx, np.broadcast_to(u, (2, 2)))
        f = lambda x, u: getattr(fnp.at(x)[idx], mode)(u)  # noqa: E731
        np.testing.assert_allclose(f(x, u), want, rtol=1e-15)
        np.testing.assert_allclose(ft.jit(f)(x, u), want, rtol=1e-15)
    if mode == "add":
        check_grads(f, (x, np.array([1.5, 2.0])), order=2)
