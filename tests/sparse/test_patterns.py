"""functrans.sparse patterns are exact where the program says so: the true
nonzero pattern of the dense Hessian on real programs, the declared rules
of each primitive family, colourings and the reach of discarded values."""

import numpy as np
import pytest
import scipy.sparse as sp
from _real_programs import REAL, rosenbrock

import functrans as ft
import functrans.numpy as fnp
import functrans.sparse as fsp
from functrans.sparse import _colouring

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("f, shape", REAL, ids=[f.__name__ for f, _ in REAL])
def test_real_patterns_are_exact(f, shape):
    x = RNG.uniform(0.2, 1.3, shape)
    dense = ft.hessian(f)(x).reshape(x.size, x.size)
    pattern = fsp.hessian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(pattern, dense != 0)
    grad = ft.grad(f)
    jac = ft.jacfwd(grad)(x).reshape(x.size, x.size)
    np.testing.assert_array_equal(fsp.jacobian_sparsity(grad)(x).toarray(), jac != 0)


def hess_pattern(f, n=6):
    return fsp.hessian_sparsity(f)(np.ones(n)).toarray().astype(int)


def test_meetings_follow_each_rows_derivative():
    # mul meets across its operands only; max (piecewise linear) meets nothing;
    # abs gives its own JVP rule instead of a derivative column: conservatively
    # it meets itself.
    assert hess_pattern(lambda x: fnp.sum(x[:-1] * x[1:])).diagonal().sum() == 0
    assert hess_pattern(lambda x: fnp.sum(fnp.maximum(x, 2 * x))).sum() == 0
    np.testing.assert_array_equal(hess_pattern(lambda x: fnp.sum(fnp.abs(x))), np.eye(6))
    assert hess_pattern(lambda x: fnp.sum(x[1:] + x[:-1])).sum() == 0
    # div meets its denominator with itself and with the numerator.
    h = hess_pattern(lambda x: fnp.sum(x[:3] / x[3:]))
    assert h[0, 0] == 0 and h[3, 3] == 1 and h[0, 3] == 1 and h[0, 4] == 0
    np.testing.assert_array_equal(hess_pattern(lambda x: fnp.sum(fnp.sin(x))), np.eye(6))


def test_discarded_elements_add_nothing():
    h = hess_pattern(lambda x: fnp.sum(fnp.sin(x)[:3]))
    np.testing.assert_array_equal(h, np.diag([1, 1, 1, 0, 0, 0]))
    mask = np.array([True, False] * 3)
    h = hess_pattern(lambda x: fnp.sum(fnp.where(mask, fnp.exp(x), 2.0 * x)))
    np.testing.assert_array_equal(h, np.diag(mask.astype(int)))


def test_structural_rules():
    x = np.ones(6)
    jac = lambda f: fsp.jacobian_sparsity(f)(x).toarray().astype(int)  # noqa: E731
    np.testing.assert_array_equal(jac(lambda v: fnp.cumsum(v)), np.tril(np.ones((6, 6))))
    np.testing.assert_array_equal(jac(lambda v: fnp.cumsum(v[::-1])[::-1]),
                                  np.triu(np.ones((6, 6))))
    np.testing.assert_array_equal(jac(lambda v: v[np.array([5, 0, 0])]),
                                  np.eye(6)[[5, 0, 0]])
    scattered = jac(lambda v: fnp.at(np.zeros(4))[np.array([1, 1, 3])].add(v[:3]))
    np.testing.assert_array_equal(scattered, [[0] * 6, [1, 1, 0, 0, 0, 0], [0] * 6,
                                              [0, 0, 1, 0, 0, 0]])
    overwritten = jac(lambda v: v.at[2].set(0.0))
    np.testing.assert_array_equal(overwritten, np.diag([1, 1, 0, 1, 1, 1]))
    np.testing.assert_array_equal(jac(lambda v: v.reshape(2, 3).T.reshape(6)),
                                  np.eye(6)[[0, 3, 1, 4, 2, 5]])
    np.testing.assert_array_equal(jac(lambda v: fnp.prod(v.reshape(2, 3), axis=1)),
                                  np.kron(np.eye(2), np.ones(3)))
    # An index computed from the input: every element, conservatively.
    assert jac(lambda v: v[fnp.argmax(v)].reshape(1)).sum() == 6


def test_dot_general_terms_and_known_zeros():
    a = np.diag([1.0, 0.0, 2.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(fsp.jacobian_sparsity(lambda v: a @ v)(np.ones(6)).toarray(),
                                  a != 0)
    # x . x meets each element with itself only (term by term, not row x column).
    np.testing.assert_array_equal(hess_pattern(lambda v: fnp.dot(v, v)), np.eye(6))
    h = hess_pattern(lambda v: fnp.sum(v[:3, None] * v[None, 3:]))
    assert h[:3, 3:].all() and not h[:3, :3].any()


def test_colourings():
    p = fsp.hessian_sparsity(rosenbrock)(np.ones(1000))
    assert _colouring.hessian_colouring(p).max() + 1 == 3
    # Irregular: the greedy rounds give a valid colouring, with as few colours
    # as a sequential greedy colouring in natural order (29 here; 17 columns
    # share one row, so no colouring has fewer than 17).
    rng = np.random.default_rng(3)
    a = sp.random(400, 400, density=0.01, random_state=rng) != 0
    a = sp.csr_array(a + a.T + sp.identity(400, dtype=bool))
    colours = _colouring.column_colouring(a)
    _colouring.check_column_colouring(a, colours)
    assert 17 <= colours.max() + 1 <= 29
    bad = np.zeros(400, np.int64)
    with pytest.raises(RuntimeError, match="share a colour"):
        _colouring.check_column_colouring(a, bad)
    with pytest.raises(RuntimeError, match="not a star colouring"):
        _colouring.star_recovery(a, bad)


def test_repr_and_plan():
    h = fsp.hessian(rosenbrock)
    assert "not called yet" in repr(h)
    h(np.ones(10))
    text = repr(h)
    assert "10 x 10 pattern, 28 nonzeros" in text and "3 colours" in text, text
    plan = h.plan(np.ones(10))
    assert plan.n_colours == 3 and plan.mode == "fwd-over-rev"




def test_tridiagonal_three_colours_and_mode_choice():
    plan = fsp.hessian(rosenbrock).plan(np.ones(1000))
    assert plan.n_colours == 3
    # One output of many inputs: reverse mode needs one colour.
    j = fsp.jacobian(lambda x: fnp.sum(x ** 2).reshape(1) + x[:1])
    assert j.plan(np.ones(50)).mode == "rev" and j.plan(np.ones(50)).n_colours == 1
    assert fsp.jacobian(lambda x: x ** 2).plan(np.ones(50)).mode == "fwd"




def test_spy():
    text = fsp.spy(fsp.hessian_sparsity(rosenbrock)(np.ones(8)), rows=8, cols=8)
    assert text.splitlines()[0] == "##......" and text.splitlines()[-1] == "......##"


def test_dense_rows_get_colours_of_their_own():
    def arrows(x):  # x[0] and x[-1] meet every element: two dense rows
        return x[0] * fnp.sum(fnp.sin(x[1:])) + x[-1] * fnp.sum(x[:-1] ** 2) + fnp.sum(x ** 4)

    x = RNG.uniform(0.2, 1.0, 60)
    h = fsp.hessian(arrows)
    assert h.plan(x).n_colours == 3  # a distance-2 colouring needs 60
    np.testing.assert_allclose(h(x).toarray(), ft.hessian(arrows)(x), rtol=1e-12, atol=1e-12)
