"""Sparsity rules of linear algebra, sort and custom_vjp: the pattern never
misses a nonzero of the Jacobian or Hessian functrans computes (compared on
random inputs), is tighter than dense where it should be (one block per
matrix of a stack, one block per right-hand side column, a triangle, a lane),
and the sparse derivatives equal the dense ones."""


import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
import functrans.scipy.linalg as fsl
import functrans.sparse as fsp
from functrans import sparse
from functrans.scipy.linalg import solve_triangular

RNG = np.random.default_rng(3)


def spd_stack(seed, members=3, n=4):
    a = np.random.default_rng(seed).normal(size=(members, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def lower_stack(seed, members=3, n=4):
    a = np.tril(np.random.default_rng(seed).normal(size=(members, n, n)))
    return a + n * np.eye(n)


RHS = RNG.normal(size=(3, 4, 2))

#: (function, input maker, what the pattern must leave out: a mask over the
#: raveled Jacobian that is structurally zero).
MATRIX = {
    "cholesky": (fnp.linalg.cholesky, spd_stack),
    "solve": (lambda a: fnp.linalg.solve(a, RHS), spd_stack),
    "inv": (fnp.linalg.inv, spd_stack),
    "det": (fnp.linalg.det, spd_stack),
    "slogdet": (lambda a: fnp.linalg.slogdet(a)[1], spd_stack),
    "eigvalsh": (fnp.linalg.eigvalsh, spd_stack),
    "eigh_vectors": (lambda a: fnp.linalg.eigh(a)[1] ** 2, spd_stack),
    "qr_r": (lambda a: fnp.linalg.qr(a)[1], lambda s: RNG.normal(size=(3, 4, 4))),
    "svdvals": (fnp.linalg.svdvals, lambda s: RNG.normal(size=(3, 4, 4))),
    "solve_triangular": (lambda a: fsl.solve_triangular(a, RHS, lower=True), lower_stack),
}


def jacobian_dense(f, x):
    return np.asarray(ft.jacrev(f)(x)).reshape(-1, x.size)


def member_blocks(rows_per_member, cols_per_member, members=3):
    """The mask of the entries linking one matrix of the stack to another."""
    r = np.repeat(np.arange(members), rows_per_member)
    c = np.repeat(np.arange(members), cols_per_member)
    return r[:, None] != c[None, :]


@pytest.mark.parametrize("name", list(MATRIX))
@pytest.mark.parametrize("seed", [0, 1])
def test_matrix_patterns_cover_the_jacobian_one_block_per_matrix(name, seed):
    f, make = MATRIX[name]
    x = make(seed)
    dense = jacobian_dense(f, x)
    pattern = fsp.jacobian_sparsity(f)(x).toarray()
    missing = (dense != 0) & ~pattern
    assert not missing.any(), f"{name} misses {np.argwhere(missing)[:5]}"
    across = member_blocks(dense.shape[0] // 3, x.size // 3)
    assert not (pattern & across).any()  # matrices of the stack stay apart
    scale = max(1.0, float(np.abs(dense).max()))
    got = fsp.jacobian(f, mode="rev")(x).toarray()
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=1e-12 * scale)


def test_triangles_and_columns_are_kept_apart():
    a = lower_stack(2)
    chol = fsp.jacobian_sparsity(fnp.linalg.cholesky)(spd_stack(2)).toarray()
    upper = np.triu(np.ones((4, 4), bool), 1).ravel()
    rows_upper = np.tile(upper, 3)
    assert not chol[rows_upper].any()  # the factor's upper triangle is zero
    assert not chol[:, np.tile(upper, 3)].any()  # the operand's upper triangle is not read
    b = RNG.normal(size=(4, 2))
    solve_b = fsp.jacobian_sparsity(lambda v: fsl.solve_triangular(a[0], v, lower=True))(b)
    column = np.arange(8) % 2
    assert not (solve_b.toarray() & (column[:, None] != column[None, :])).any()
    unit = fsp.jacobian_sparsity(
        lambda m: fsl.solve_triangular(m, b, lower=True, unit_diagonal=True))(a[0]).toarray()
    assert not unit[:, np.eye(4, dtype=bool).ravel()].any()  # a unit diagonal is not read


HESSIANS = {
    "cholesky": (lambda a: fnp.sum(fnp.linalg.cholesky(a) ** 3), spd_stack),
    "slogdet": (lambda a: fnp.sum(fnp.linalg.slogdet(a)[1]), spd_stack),
    "solve_rhs": (lambda b: fnp.sum(fnp.linalg.solve(spd_stack(5), b) ** 2),
                  lambda s: RNG.normal(size=(3, 4, 2))),
    "triangular": (lambda a: fnp.sum(fsl.solve_triangular(a, RHS, lower=True) ** 2),
                   lower_stack),
    "eigvalsh": (lambda a: fnp.sum(fnp.linalg.eigvalsh(a) ** 3), spd_stack),
    "sort": (lambda x: fnp.sum(fnp.sort(x, axis=1) * np.arange(5.0) ** 2) + fnp.sum(x ** 3),
             lambda s: np.random.default_rng(s).normal(size=(3, 5))),
}


@pytest.mark.parametrize("name", list(HESSIANS))
@pytest.mark.parametrize("seed", [0, 1])
def test_hessians_cover_and_equal_the_dense_ones(name, seed):
    f, make = HESSIANS[name]
    x = make(seed)
    dense = np.asarray(ft.hessian(f)(x)).reshape(x.size, x.size)
    pattern = fsp.hessian_sparsity(f)(x).toarray()
    missing = (dense != 0) & ~pattern
    assert not missing.any(), f"{name} misses {np.argwhere(missing)[:5]}"
    assert pattern.sum() < x.size ** 2
    scale = max(1.0, float(np.abs(dense).max()))
    np.testing.assert_allclose(fsp.hessian(f)(x).toarray(), dense, rtol=1e-12,
                               atol=1e-12 * scale)


def test_sort_moves_lane_elements_and_meets_nothing():
    x = RNG.normal(size=(3, 5))
    jac = fsp.jacobian_sparsity(lambda v: fnp.sort(v, axis=1))(x).toarray()
    lane = np.repeat(np.arange(3), 5)
    np.testing.assert_array_equal(jac, lane[:, None] == lane[None, :])
    hess = fsp.hessian_sparsity(lambda v: fnp.sum(fnp.sort(v, axis=0) * np.arange(15.0)
                                                  .reshape(3, 5)))(x)
    assert hess.nnz == 0  # piecewise linear: no second derivative
    order = fsp.jacobian_sparsity(lambda v: fnp.argsort(v, axis=0) * v)(x).toarray()
    np.testing.assert_array_equal(order, np.eye(15, dtype=bool))  # the order is constant


@ft.custom_vjp
def straight_through(x):
    return fnp.round(x)


straight_through.defvjp(lambda x: (fnp.round(x), ()), lambda res, g: (g,))


@ft.custom_vjp
def scaled_sin(x, y):
    return fnp.sin(x) * y


scaled_sin.defvjp(lambda x, y: (fnp.sin(x) * y, (fnp.cos(x), y)),
                  lambda res, g: (g * res[0] * res[1], None))


def test_custom_vjp_patterns_are_the_backward_rules():
    x = RNG.uniform(0.2, 1.0, 6)
    # The primal rounds (zero derivative); the rule passes the cotangent on.
    f = lambda v: straight_through(v[1:] * v[:-1])  # noqa: E731
    pattern = fsp.jacobian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(pattern, np.eye(5, 6, dtype=bool) | np.eye(5, 6, 1, dtype=bool))
    dense = jacobian_dense(f, x)
    assert not ((dense != 0) & ~pattern).any()
    np.testing.assert_allclose(fsp.jacobian(f, mode="rev")(x).toarray(), dense, rtol=1e-12)
    # No cotangent for y: the result does not depend on it through the rule.
    g = lambda v: scaled_sin(v[:3], v[3:])  # noqa: E731
    np.testing.assert_array_equal(fsp.jacobian_sparsity(g)(x).toarray(),
                                  np.eye(3, 6, dtype=bool))
    np.testing.assert_allclose(fsp.jacobian(g, mode="rev")(x).toarray(), jacobian_dense(g, x),
                               rtol=1e-12)
    # Second order is not read from the rule: every differentiated input meets.
    h = fsp.hessian_sparsity(lambda v: fnp.sum(g(v)))(x).toarray()
    assert h[:, :6].all() and h[:6].all()


@ft.custom_vjp
def self_adjoint(x):
    return x + fnp.concatenate([x[1:], x[:1]]) + fnp.concatenate([x[-1:], x[:-1]])


self_adjoint.defvjp(lambda x: (self_adjoint(x), ()), lambda res, g: (self_adjoint(g),))


def test_custom_vjp_whose_rule_calls_itself_is_conservative():
    x = RNG.normal(size=5)
    pattern = fsp.jacobian_sparsity(self_adjoint)(x).toarray()
    assert pattern.all()  # rules nested past the depth: every element on every element
    np.testing.assert_allclose(fsp.jacobian(self_adjoint, mode="rev")(x).toarray(),
                               jacobian_dense(self_adjoint, x), rtol=1e-12)


# -- sparsity rules never miss a nonzero -----------------------------------------------


def _spd(rng, n=4):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _no_missed_jacobian(f, x):
    pattern = sparse.jacobian_sparsity(f)(x).toarray()
    dense = np.asarray(ft.jacfwd(f)(x)).reshape(-1, x.size)
    assert not ((dense != 0) & ~pattern).any(), np.argwhere((dense != 0) & ~pattern)


def _no_missed_hessian(f, x):
    pattern = sparse.hessian_sparsity(f)(x).toarray()
    dense = np.asarray(ft.hessian(f)(x)).reshape(x.size, x.size)
    assert not ((dense != 0) & ~pattern).any(), np.argwhere((dense != 0) & ~pattern)


_B = np.array([0.5, -1.0, 2.0, 0.25])
_LINALG = {
    "solve": lambda a: fnp.linalg.solve(a, _B),
    "cholesky": fnp.linalg.cholesky,
    "inv": fnp.linalg.inv,
    "det": fnp.linalg.det,
    "slogdet": lambda a: fnp.linalg.slogdet(a)[1],
    "eigvalsh": lambda a: fnp.linalg.eigh(a)[0],
    "eigvecs": lambda a: fnp.linalg.eigh(a)[1],
    "qr_r": lambda a: fnp.linalg.qr(a)[1],
    "qr_q": lambda a: fnp.linalg.qr(a)[0],
    "svdvals": lambda a: fnp.linalg.svd(a, compute_uv=False),
}


@pytest.mark.parametrize("name", sorted(_LINALG))
def test_linalg_patterns_cover_dense_derivatives(name):
    rng = np.random.default_rng(3)
    f = _LINALG[name]
    for _ in range(2):
        a = _spd(rng)
        _no_missed_jacobian(f, a)
        _no_missed_hessian(lambda a: fnp.sum(f(a) ** 3), a)
    _no_missed_jacobian(f, np.stack([_spd(rng), _spd(rng)]))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_patterns_cover_dense_derivatives(lower, trans, unit):
    rng = np.random.default_rng(4)
    a = _spd(rng)
    a = np.tril(a) if lower else np.triu(a)
    b = rng.normal(size=(4, 2))

    def solve(a, b):
        return solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit)

    _no_missed_jacobian(lambda b: solve(a, b), b)
    _no_missed_jacobian(lambda a: solve(a, b), a)
    _no_missed_hessian(lambda a: fnp.sum(solve(a, b) ** 2), a)


def test_sort_patterns_of_stacked_inputs_cover_dense_derivatives():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 4))
    _no_missed_jacobian(lambda x: fnp.sort(fnp.stack([x, 2 * x]), axis=0), x)
    _no_missed_jacobian(lambda x: fnp.sort(x * x, axis=1), x)
    _no_missed_jacobian(lambda x: x[0][fnp.argsort(x[1])], x)
    _no_missed_hessian(lambda x: fnp.sum(fnp.sort(x, axis=0)[0] * fnp.sort(x, axis=0)[1]), x)


@ft.custom_vjp
def _reversing(x):
    return fnp.sin(x)


def _reversing_fwd(x):
    return fnp.sin(x), (fnp.cos(x), x[::-1])


def _reversing_bwd(res, ct):
    cos, flipped = res  # the bwd mixes positions through a saved, flipped value
    return (cos * ct + 1e-3 * flipped * fnp.sum(ct),)


_reversing.defvjp(_reversing_fwd, _reversing_bwd)


def test_custom_vjp_pattern_uses_saved_values():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    pattern = sparse.jacobian_sparsity(_reversing)(x).toarray()
    dense = np.asarray(ft.jacrev(_reversing)(x))
    assert not ((dense != 0) & ~pattern).any()
    _no_missed_hessian(lambda x: fnp.sum(_reversing(x)), x)
