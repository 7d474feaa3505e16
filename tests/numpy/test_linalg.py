"""``functrans.numpy.linalg`` and ``functrans.scipy.linalg``: values against
NumPy and SciPy (eagerly and under ``jit``), derivatives against finite
differences to second order in both modes, ``vmap`` against a Python loop,
and the errors for singular, non-square and non-positive-definite input.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
import functrans.scipy.linalg as fsl
from functrans.errors import DTypeError, LinAlgError
from functrans.testing import check_grads
from functrans.testing import strategies as fts

LA = fnp.linalg
RNG = np.random.default_rng(1234)


def _well_conditioned(rng, shape, dtype=np.float64):
    n = shape[-1]
    a = rng.standard_normal(shape) + n * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _spd(rng, shape, dtype=np.float64):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    out = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return out.astype(dtype)


@st.composite
def matrices(draw, square=True, spd=False, min_side=1):
    lead = draw(fts.shapes(max_rank=2, min_side=1, max_side=2))
    n = draw(st.integers(min_side, 4))
    m = n if square else draw(st.integers(min_side, 4))
    dtype = draw(st.sampled_from([np.float64, np.float64, np.complex128, np.float32]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if spd:
        return _spd(rng, lead + (n, n), dtype)
    if square:
        return _well_conditioned(rng, lead + (n, n), dtype)
    a = rng.standard_normal(lead + (m, n))
    return (a + 1j * rng.standard_normal(a.shape) if np.dtype(dtype).kind == "c" else a).astype(
        dtype)


def _close(got, want, dtype=None):
    dtype = np.asarray(want).dtype if dtype is None else dtype
    tol = 2e-4 if dtype in (np.float32, np.complex64) else 1e-9
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _both(fn, *args, **kwargs):
    """``fn`` eagerly and under ``jit`` (array arguments traced)."""
    eager = fn(*args, **kwargs)
    jitted = ft.jit(lambda *xs: fn(*xs, **kwargs))(*args)
    return eager, jitted


# --------------------------------------------------------------------------
# Values against NumPy
# --------------------------------------------------------------------------


@settings(max_examples=15)
@given(a=matrices(), data=st.data())
def test_lu_based_functions_match_numpy(a, data):
    k = data.draw(st.integers(1, 3))
    b = np.random.default_rng(0).standard_normal(a.shape[:-1] + (k,)).astype(a.dtype)
    for got in _both(LA.solve, a, b):
        _close(got, np.linalg.solve(a, b))
        assert got.dtype == np.linalg.solve(a, b).dtype
    vec = b[(0,) * (a.ndim - 2)][:, 0]
    for got in _both(LA.solve, a, vec):
        _close(got, np.linalg.solve(a, vec))
    for got in _both(LA.inv, a):
        _close(got, np.linalg.inv(a))
    for got in _both(LA.det, a):
        _close(got, np.linalg.det(a))
    for sign, logdet in _both(LA.slogdet, a):
        want = np.linalg.slogdet(a)
        _close(sign, want.sign)
        _close(logdet, want.logabsdet)


@settings(max_examples=15)
@given(a=matrices(spd=True))
def test_cholesky_and_eigh_match_numpy(a):
    for got in _both(LA.cholesky, a):
        _close(got, np.linalg.cholesky(a))
    for got in _both(lambda x: LA.cholesky(x, upper=True), a):
        _close(got, np.linalg.cholesky(a, upper=True))
    for w, v in _both(LA.eigh, a):
        _close(w, np.linalg.eigvalsh(a))
        # Eigenvectors up to phase: they diagonalise a.
        _close(np.conj(np.swapaxes(v, -1, -2)) @ a @ v, w[..., None] * np.eye(a.shape[-1]),
               a.dtype)
    for w in _both(lambda x: LA.eigvalsh(x, UPLO="U"), a):
        _close(w, np.linalg.eigvalsh(a, UPLO="U"))


@settings(max_examples=15)
@given(a=matrices(square=False))
def test_qr_svd_pinv_norms_match_numpy(a):
    for q, r in _both(LA.qr, a):
        want_q, want_r = np.linalg.qr(a)
        _close(q, want_q)
        _close(r, want_r)
    _close(LA.qr(a, mode="r"), np.linalg.qr(a, mode="r"))
    q, r = LA.qr(a, mode="complete")
    _close(q @ r, a, a.dtype)
    for s in _both(lambda x: LA.svd(x, compute_uv=False), a):
        _close(s, np.linalg.svd(a, compute_uv=False))
    for full in (True, False):
        u, s, vh = LA.svd(a, full_matrices=full)
        k = s.shape[-1]
        _close(u[..., :k] * s[..., None, :] @ vh[..., :k, :], a, a.dtype)
        assert u.shape == np.linalg.svd(a, full_matrices=full)[0].shape
    for got in _both(LA.pinv, a):
        _close(got, np.linalg.pinv(a))
    for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        for got in _both(lambda x, o=ord_: LA.norm(x, o, axis=(-2, -1)), a):
            _close(got, np.linalg.norm(a, ord_, axis=(-2, -1)))


@pytest.mark.parametrize("ord_", [None, 2, 1, 0, np.inf, -np.inf, 3, 0.5, -1])
@pytest.mark.parametrize("axis", [None, 0, -1, (0,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norms_match_numpy(ord_, axis, keepdims):
    x = RNG.standard_normal((3, 4)) if axis is not None else RNG.standard_normal(5)
    if axis is None and ord_ is not None and not isinstance(axis, tuple):
        want = np.linalg.norm(x, ord_, keepdims=keepdims)
    else:
        want = np.linalg.norm(x, ord_, axis=axis, keepdims=keepdims)
    got = LA.norm(x, ord_, axis=axis, keepdims=keepdims)
    _close(got, want)
    assert np.shape(got) == np.shape(want)
    z = x + 1j * RNG.standard_normal(x.shape)
    _close(LA.norm(z, ord_, axis=axis, keepdims=keepdims),
           np.linalg.norm(z, ord_, axis=axis, keepdims=keepdims))


def test_norm_defaults_and_keepdims_for_matrices():
    x = RNG.standard_normal((2, 3, 4))
    _close(LA.norm(x), np.linalg.norm(x))
    _close(LA.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True))
    assert LA.norm(x, keepdims=True).shape == (1, 1, 1)
    _close(LA.norm(x, "fro", axis=(2, 0), keepdims=True),
           np.linalg.norm(x, "fro", axis=(2, 0), keepdims=True))
    _close(LA.norm(x[0], np.inf), np.linalg.norm(x[0], np.inf))
    _close(LA.norm(np.arange(4)), np.linalg.norm(np.arange(4)))
    _close(LA.vector_norm(x, ord=3, axis=(0, 2)), np.linalg.vector_norm(x, ord=3, axis=(0, 2)))
    _close(LA.matrix_norm(x, ord="nuc"), np.linalg.matrix_norm(x, ord="nuc"))


def test_products_match_numpy():
    a = RNG.standard_normal((2, 3, 3))
    for n in (0, 1, 2, 5, -1, -3):
        _close(LA.matrix_power(a, n), np.linalg.matrix_power(a, n))
    ints = np.array([[1, 1], [0, 1]])
    assert LA.matrix_power(ints, 3).dtype == np.linalg.matrix_power(ints, 3).dtype
    chain = [RNG.standard_normal(4), RNG.standard_normal((4, 2)), RNG.standard_normal((2, 6)),
             RNG.standard_normal((6, 3)), RNG.standard_normal(3)]
    for lo, hi in ((0, 5), (0, 4), (1, 5), (1, 4), (1, 3)):
        want = np.linalg.multi_dot(chain[lo:hi])
        for got in _both(lambda *xs: LA.multi_dot(list(xs)), *chain[lo:hi]):
            _close(got, want)


def test_lstsq_matches_numpy():
    a = RNG.standard_normal((6, 3))
    for b in (RNG.standard_normal(6), RNG.standard_normal((6, 2))):
        x, res, rank, s = LA.lstsq(a, b)
        wx, wres, wrank, ws = np.linalg.lstsq(a, b)
        _close(x, wx)
        _close(res, wres)
        assert rank == wrank and res.shape == wres.shape
        _close(s, ws)
        jx, jres, jrank, js = ft.jit(LA.lstsq)(a, b)
        _close(jx, wx)
        _close(jres, wres)
        assert int(jrank) == wrank
    deficient = np.column_stack([a[:, 0], a[:, 0], a[:, 1]])
    x, res, rank, _ = LA.lstsq(deficient, b)
    wx, wres, wrank, _ = np.linalg.lstsq(deficient, b)
    _close(x, wx)
    assert rank == wrank == 2 and res.shape == wres.shape == (0,)
    wide = RNG.standard_normal((2, 4))
    _close(LA.lstsq(wide, b[:2])[0], np.linalg.lstsq(wide, b[:2])[0])


def test_svd_hermitian_matches_numpy():
    a = _spd(RNG, (2, 4, 4)) - 3 * np.eye(4)  # indefinite: some negative eigenvalues
    u, s, vh = LA.svd(a, hermitian=True)
    wu, ws, wvh = np.linalg.svd(a, hermitian=True)
    _close(s, ws)
    _close(u * s[..., None, :] @ vh, a)
    _close(LA.svd(a, compute_uv=False, hermitian=True), ws)
    _close(LA.pinv(a, hermitian=True), np.linalg.pinv(a, hermitian=True))


def test_integer_input_becomes_float64_and_float16_is_refused():
    a = np.array([[2, 1], [1, 3]])
    assert LA.det(a).dtype == np.float64 and LA.inv(a).dtype == np.float64
    _close(LA.solve(a, np.array([1, 2])), np.linalg.solve(a, np.array([1, 2])))
    with pytest.raises(DTypeError, match=r"det: array type float16 is unsupported in linalg"):
        LA.det(a.astype(np.float16))


def test_linalg_results_are_numpy_style_named_tuples():
    a = _spd(RNG, (3, 3))
    assert LA.eigh(a).eigenvalues.shape == (3,)
    assert LA.slogdet(a).logabsdet.shape == ()
    assert LA.svd(a).S.shape == (3,) and LA.qr(a).R.shape == (3, 3)
    w, v = ft.jit(LA.eigh)(a)  # a namedtuple is a pytree
    _close(w, np.linalg.eigvalsh(a))


def test_numpy_linalg_calls_on_tracers_dispatch_here():
    a = _spd(RNG, (3, 3))
    _close(ft.jit(np.linalg.det)(a), np.linalg.det(a))
    _close(ft.grad(lambda x: np.linalg.slogdet(x)[1])(a), np.linalg.inv(a).T)
    _close(ft.jit(lambda x: np.linalg.cond(x, "fro"))(a), np.linalg.cond(a, "fro"))
    _close(ft.jit(np.linalg.tensorsolve)(a, a[0]), np.linalg.tensorsolve(a, a[0]))


# --------------------------------------------------------------------------
# The LU primitive and SciPy's solvers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["lapack", "numpy"])
def test_lu_factor_matches_scipy_including_blocks_and_batches(impl):
    """With SciPy the LU is LAPACK's; ``lu_numpy`` is the fallback without it."""
    from functrans.primitives.linalg import lu_numpy, lu_p

    for n in (0, 1, 5, 33, 70):  # 33 and 70: several 32-column panels
        for dtype in (np.float64, np.complex128, np.float32):
            a = RNG.standard_normal((2, n, n))
            if dtype == np.complex128:
                a = a + 1j * RNG.standard_normal(a.shape)
            a = a.astype(dtype)
            lu, piv, perm = lu_p.bind(a) if impl == "lapack" else lu_numpy(a)
            assert lu.dtype == dtype and piv.dtype == perm.dtype == np.int32
            for i in range(2):
                if n:
                    want_lu, want_piv = scipy.linalg.lu_factor(a[i])
                    _close(lu[i], want_lu, dtype)
                    np.testing.assert_array_equal(piv[i], want_piv)
                lower = np.tril(lu[i], -1) + np.eye(n)
                _close(a[i][perm[i]], lower @ np.triu(lu[i]), dtype)


def test_exactly_singular_matrices_are_found_as_numpy_finds_them():
    """LAPACK's LU (the one NumPy uses) decides which matrices have a zero pivot."""
    m = np.arange(1.0, 10.0).reshape(3, 3)  # singular; rounding could hide it
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(m)
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix"):
        LA.inv(m)
    assert LA.det(m) == np.linalg.det(m) == 0.0


def test_lu_of_a_singular_matrix_factorises_and_det_is_zero():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    lu, piv = fsl.lu_factor(a)
    assert np.any(np.diag(lu) == 0)
    assert LA.det(a) == 0.0
    sign, logdet = LA.slogdet(a)
    assert sign == 0.0 and logdet == -np.inf


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_matches_scipy(trans, lower, unit_diagonal):
    a = _well_conditioned(RNG, (4, 4), np.complex128)
    for b in (RNG.standard_normal(4), RNG.standard_normal((4, 2)) + 1j):
        want = scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                             unit_diagonal=unit_diagonal)
        for got in _both(lambda x, y: fsl.solve_triangular(x, y, trans=trans, lower=lower,
                                                           unit_diagonal=unit_diagonal), a, b):
            _close(got, want)


def test_cho_and_lu_solvers_match_scipy():
    a = _spd(RNG, (4, 4))
    b = RNG.standard_normal((4, 3))
    for lower in (False, True):
        c, low = fsl.cho_factor(a, lower=lower)
        wc, _ = scipy.linalg.cho_factor(a, lower=lower)
        mask = np.tril(np.ones((4, 4), bool)) if lower else np.triu(np.ones((4, 4), bool))
        _close(np.where(mask, c, 0), np.where(mask, wc, 0))
        _close(fsl.cho_solve((c, low), b), scipy.linalg.cho_solve((wc, lower), b))
        _close(fsl.cho_solve((c, low), b[:, 0]), np.linalg.solve(a, b[:, 0]))
    g = _well_conditioned(RNG, (4, 4), np.complex128)
    factors = fsl.lu_factor(g)
    for trans in (0, 1, 2):
        want = scipy.linalg.lu_solve(scipy.linalg.lu_factor(g), b, trans=trans)
        _close(fsl.lu_solve(factors, b, trans=trans), want)
        _close(ft.jit(lambda lu, p, y, t=trans: fsl.lu_solve((lu, p), y, trans=t))(*factors, b),
               want)


@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.5, 3.0, 40.0, 500.0])
def test_expm_matches_scipy(scale):
    a = RNG.standard_normal((3, 3)) * scale
    want = scipy.linalg.expm(a)
    for got in _both(fsl.expm, a):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    batch = RNG.standard_normal((2, 3, 3)) * scale
    want = np.stack([scipy.linalg.expm(m) for m in batch])
    np.testing.assert_allclose(ft.jit(fsl.expm)(batch), want, rtol=1e-10,
                               atol=1e-12 * np.abs(want).max())


def test_expm_of_complex_and_known_cases():
    rot = np.array([[0.0, -1.0], [1.0, 0.0]]) * (math.pi / 2)
    _close(fsl.expm(rot), np.array([[0.0, -1.0], [1.0, 0.0]]))
    z = _well_conditioned(RNG, (3, 3), np.complex128) * 0.3
    _close(fsl.expm(z), scipy.linalg.expm(z))


# --------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------

A = _well_conditioned(RNG, (2, 3, 3))
SPD = _spd(RNG, (2, 3, 3))
B = RNG.standard_normal((2, 3, 2))
TALL, WIDE = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 4))
AC = _well_conditioned(RNG, (3, 3), np.complex128)

GRAD_CASES = {
    "solve": (LA.solve, (A, B)),
    "solve_vector": (LA.solve, (A[0], B[0, :, 0])),
    "inv": (LA.inv, (A,)),
    "det": (LA.det, (A,)),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, (A,)),
    "cholesky": (LA.cholesky, (SPD,)),
    "cholesky_upper": (lambda a: LA.cholesky(a, upper=True), (SPD[0],)),
    "eigh": (lambda a: tuple(LA.eigh(a)), (SPD,)),
    "eigvalsh": (LA.eigvalsh, (SPD,)),
    "qr_tall": (lambda a: tuple(LA.qr(a)), (TALL,)),
    "qr_wide": (lambda a: tuple(LA.qr(a)), (WIDE,)),
    "qr_square_complete": (lambda a: tuple(LA.qr(a, mode="complete")), (A[0],)),
    "svd_tall": (lambda a: tuple(LA.svd(a, full_matrices=False)), (TALL,)),
    "svd_wide": (lambda a: tuple(LA.svd(a, full_matrices=False)), (WIDE,)),
    "svd_square_full": (lambda a: tuple(LA.svd(a)), (A[0],)),
    "svdvals": (lambda a: LA.svd(a, compute_uv=False), (WIDE,)),
    "pinv": (LA.pinv, (TALL,)),
    "lstsq": (lambda a, b: LA.lstsq(a, b)[0], (TALL, RNG.standard_normal(4))),
    "matrix_power": (lambda a: LA.matrix_power(a, 3), (A,)),
    "matrix_power_negative": (lambda a: LA.matrix_power(a, -2), (A[0],)),
    "multi_dot": (lambda a, b, c: LA.multi_dot([a, b, c]), (TALL, A[0], WIDE)),
    "norm_fro": (LA.norm, (A,)),
    "norm_nuc": (lambda a: LA.norm(a, "nuc"), (TALL,)),
    "norm_2": (lambda a: LA.norm(a, 2), (TALL,)),
    "norm_p3": (lambda v: LA.norm(v, 3), (RNG.standard_normal(5),)),
    "solve_triangular": (lambda a, b: fsl.solve_triangular(a, b, lower=True), (A[0], B[0])),
    "solve_triangular_trans": (lambda a, b: fsl.solve_triangular(a, b, trans="T"), (A[0], B[0])),
    "cho_solve": (lambda a, b: fsl.cho_solve(fsl.cho_factor(a), b), (SPD[0], B[0])),
    "lu_solve": (lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=1), (A[0], B[0])),
    "expm": (fsl.expm, (0.7 * A[0],)),
    "complex_solve": (LA.solve, (AC, AC[:, :2] * 1j)),
    "complex_inv": (LA.inv, (AC,)),
    "complex_det": (LA.det, (AC,)),
    "complex_cholesky": (LA.cholesky, (_spd(RNG, (3, 3), np.complex128),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_slogdet_gradient_of_a_batch_of_spd_matrices_is_the_inverse_transpose():
    spd = _spd(RNG, (5, 4, 4))
    got = ft.grad(lambda a: fnp.sum(LA.slogdet(a).logabsdet))(spd)
    np.testing.assert_allclose(got, np.swapaxes(np.linalg.inv(spd), -1, -2), rtol=1e-10,
                               atol=1e-12)
    got = ft.jit(ft.grad(lambda a: fnp.sum(LA.slogdet(a)[1])))(spd)
    np.testing.assert_allclose(got, np.swapaxes(np.linalg.inv(spd), -1, -2), rtol=1e-10,
                               atol=1e-12)


def test_det_gradient_is_the_cofactor_matrix():
    a = A[0]
    np.testing.assert_allclose(ft.grad(LA.det)(a), np.linalg.det(a) * np.linalg.inv(a).T,
                               rtol=1e-10)


def test_newton_with_solve_of_hessian_and_grad_converges_under_jit():
    q = _spd(np.random.default_rng(7), (4, 4))
    c = np.array([1.0, -2.0, 0.5, 3.0])

    def f(x):  # strictly convex
        return 0.5 * x @ q @ x - c @ x + fnp.sum(fnp.exp(0.3 * x)) + 0.1 * fnp.sum(x ** 4)

    @ft.jit
    def newton_step(x):
        return x - LA.solve(ft.hessian(f)(x), ft.grad(f)(x))

    x = np.zeros(4)
    for _ in range(12):
        x = newton_step(x)
    assert np.linalg.norm(ft.grad(f)(x)) < 1e-12
    assert newton_step.cache_info().misses == 1  # traced once, reused


@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")
def test_eigh_and_svd_at_degenerate_points_have_finite_value_derivatives():
    """Repeated eigenvalues and singular values: the values' derivatives stay
    right (the trace, the nuclear norm), only the vectors' are undefined."""
    eye = np.eye(3)
    np.testing.assert_allclose(ft.grad(lambda a: fnp.sum(LA.eigvalsh(a)))(eye), eye)
    np.testing.assert_allclose(ft.grad(lambda a: LA.norm(a, "nuc"))(eye), eye)
    v = ft.jacfwd(lambda a: LA.eigh(a).eigenvectors)(eye)
    assert np.isnan(v).any()


def test_pinv_derivative_at_repeated_singular_values():
    """The closed form needs constant rank, not distinct singular values."""
    check_grads(LA.pinv, (2.0 * np.eye(3)[:, :2],), order=2, atol=1e-5, rtol=1e-5)


def test_unsupported_derivatives_say_why():
    with pytest.raises(NotImplementedError, match=r"full_matrices=True of a non-square"):
        ft.jacfwd(lambda a: LA.svd(a)[0])(TALL)
    with pytest.raises(NotImplementedError, match=r"mode='complete' for a tall matrix"):
        ft.jacfwd(lambda a: LA.qr(a, mode="complete")[0])(TALL)


# --------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------

VMAP_CASES = {
    "solve": (LA.solve, (A, B), (0, 0)),
    "solve_shared_matrix": (LA.solve, (A[0], B), (None, 0)),
    "solve_shared_rhs": (LA.solve, (A, B[0]), (0, None)),
    "solve_moved_axes": (LA.solve, (np.moveaxis(A, 0, 2), np.moveaxis(B, 0, 1)), (2, 1)),
    "inv": (LA.inv, (A,), (0,)),
    "det": (LA.det, (np.moveaxis(A, 0, 1),), (1,)),
    "slogdet": (lambda a: tuple(LA.slogdet(a)), (A,), (0,)),
    "cholesky": (LA.cholesky, (SPD,), (0,)),
    "eigvalsh": (LA.eigvalsh, (SPD,), (0,)),
    "qr": (lambda a: LA.qr(a).R, (np.stack([TALL, TALL + 1]),), (0,)),
    "svdvals": (lambda a: LA.svd(a, compute_uv=False), (np.stack([WIDE, WIDE * 2]),), (0,)),
    "norm": (lambda a: LA.norm(a, 2), (A,), (0,)),
    "solve_triangular": (lambda a, b: fsl.solve_triangular(a, b), (A, B[0]), (0, None)),
    "expm": (fsl.expm, (0.5 * A,), (0,)),
    "grad_logdet": (ft.grad(lambda a: LA.slogdet(a)[1]), (SPD,), (0,)),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    f, args, in_axes = VMAP_CASES[name]
    got = ft.vmap(f, in_axes=in_axes)(*args)
    size = args[0].shape[in_axes[0]] if in_axes[0] is not None else args[1].shape[in_axes[1]]
    rows = [f(*(x if ax is None else np.take(x, i, axis=ax) for x, ax in zip(args, in_axes)))
            for i in range(size)]
    if isinstance(got, tuple):
        for g, col in zip(got, zip(*rows)):
            _close(g, np.stack(col))
    else:
        _close(got, np.stack(rows))


def test_vmap_of_jacobian_of_solve():
    jac = ft.vmap(ft.jacrev(lambda b, a: LA.solve(a, b)), in_axes=(0, None))(B[..., 0], A[0])
    np.testing.assert_allclose(jac, np.broadcast_to(np.linalg.inv(A[0]), (2, 3, 3)),
                               rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


@pytest.mark.parametrize("how", ["eager", "jit", "vmap"])
def test_singular_matrices_raise_linalg_error_when_run(how):
    for fn in (LA.inv, lambda a: LA.solve(a, np.ones(2))):
        with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix"):
            if how == "eager":
                fn(SINGULAR)
            elif how == "jit":
                ft.jit(fn)(SINGULAR)
            else:
                ft.vmap(fn)(np.stack([np.eye(2), SINGULAR]))
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix"):
        fsl.solve_triangular(np.array([[1.0, 0.0], [1.0, 0.0]]), np.ones(2), lower=True)


def test_derivatives_at_a_singular_matrix_raise_instead_of_giving_nan():
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix"):
        ft.grad(LA.det)(SINGULAR)


def test_not_positive_definite_raises():
    with pytest.raises(np.linalg.LinAlgError, match=r"not positive definite"):
        LA.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(np.linalg.LinAlgError, match=r"not positive definite"):
        ft.jit(LA.cholesky)(-np.eye(2))


@pytest.mark.parametrize("fn", [LA.det, LA.inv, LA.slogdet, LA.cholesky, LA.eigh,
                                lambda a: LA.solve(a, np.ones(2)), fsl.expm, fsl.lu_factor])
def test_non_square_input_raises_clearly(fn):
    with pytest.raises(LinAlgError, match=r"last two dimensions of the array must be square, "
                                          r"got shape \(2, 3\)"):
        fn(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match=r"at least two-dimensional"):
        fn(np.ones(3))
    with pytest.raises(LinAlgError, match=r"must be square"):
        ft.jit(fn)(np.ones((2, 3)))


def test_bad_orders_and_arguments_raise():
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.norm: ord='fro' is not a vector norm"):
        LA.norm(np.ones(3), "fro")
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.norm: ord=3 is not a matrix norm"):
        LA.norm(np.ones((3, 3)), 3)
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.norm: ord='nuc' is not a vector norm"):
        LA.norm(np.ones((3, 3)), "nuc", axis=0)
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.norm: axis=\(0, 0\) names axis 0 twice"):
        LA.norm(np.ones((3, 3)), axis=(0, 0))
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.norm: axis=\(0, 1, 2\) names 3 axes of "
                                         r"an array of shape \(2, 2, 2\)"):
        LA.norm(np.ones((2, 2, 2)), axis=(0, 1, 2))
    with pytest.raises(LinAlgError, match=r"solve: b of shape \(3,\) does not match"):
        LA.solve(np.eye(2), np.ones(3))
    with pytest.raises(TypeError, match=r"^fnp\.linalg\.matrix_power: the exponent must be an "
                                        r"int, got 1\.5"):
        LA.matrix_power(np.eye(2), 1.5)
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.eigh: UPLO must be 'L' .* or 'U' .*, "
                                         r"got 'X'"):
        LA.eigh(np.eye(2), UPLO="X")
    with pytest.raises(ValueError, match=r"qr: unrecognized mode 'economic'"):
        LA.qr(np.eye(2), mode="economic")
    with pytest.raises(ValueError, match=r"trans must be 0, 1, 2"):
        fsl.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match=r"^fnp\.linalg\.pinv: both rtol= and rcond= were "
                                         r"given"):
        LA.pinv(np.eye(2), rcond=1e-3, rtol=1e-3)


# --------------------------------------------------------------------------
# det, slogdet at NaN and inf; cond; tensorsolve
# --------------------------------------------------------------------------


def _same_special_values(got, want):
    """Equal to a few ulps where finite, and the same NaN, infinities and signs of zero."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got) & ~np.isnan(got),
                                  np.signbit(want) & ~np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def _with_special_entries():
    rng = np.random.default_rng(7)
    for n in (2, 3):
        a = rng.standard_normal((n, n))
        for base in (a, np.triu(a)):
            for value in (np.nan, np.inf, -np.inf, 0.0):
                for i in range(n):
                    for j in range(n):
                        m = base.copy()
                        m[i, j] = value
                        yield m


SPECIAL = list(_with_special_entries()) + [
    np.array([[np.nan, 0.0], [0.0, 0.0]]),   # a zero pivot after a NaN one: NumPy's det is 0
    np.array([[0.0, np.nan], [0.0, 1.0]]),
    np.array([[1.0, 2.0], [2.0, 4.0]]),      # singular after a row interchange: +0.0, not -0.0
]


@pytest.mark.parametrize("how", ["eager", "jit", "vmap"])
def test_det_and_slogdet_of_matrices_holding_nan_and_inf_match_numpy(how):
    for n in (2, 3):
        stack = np.stack([m for m in SPECIAL if m.shape == (n, n)])
        with np.errstate(all="ignore"):
            want_det, want_slog = np.linalg.det(stack), np.linalg.slogdet(stack)
        wrap = {"eager": lambda f: f, "jit": ft.jit, "vmap": ft.vmap}[how]
        _same_special_values(wrap(LA.det)(stack), want_det)
        sign, logabsdet = wrap(lambda a: tuple(LA.slogdet(a)))(stack)
        _same_special_values(sign, want_slog.sign)
        _same_special_values(logabsdet, want_slog.logabsdet)


@pytest.mark.parametrize("how", ["eager", "jit", "vmap"])
def test_inv_and_solve_of_matrices_holding_nan_and_inf_match_numpy(how):
    # The triangular solves after the LU meet the infinities: solved through
    # gesv, the triangle's own factorisation multiplied its zeros by them and
    # every entry was NaN (inv([[2, inf], [0.3, 3]]) has [0, -0] below).
    wrap = {"eager": lambda f: f, "jit": ft.jit,
            "vmap": lambda f: lambda a, *b: ft.vmap(f)(a[None], *[v[None] for v in b])[0]}[how]
    checked = 0
    for m in SPECIAL:
        b = np.linspace(-1.0, 2.0, len(m))
        with np.errstate(all="ignore"):
            try:
                want_inv, want_solve = np.linalg.inv(m), np.linalg.solve(m, b)
            except np.linalg.LinAlgError:
                with pytest.raises(np.linalg.LinAlgError):
                    wrap(LA.inv)(m)
                continue
            _same_special_values(wrap(LA.inv)(m), want_inv)
            _same_special_values(wrap(LA.solve)(m, b), want_solve)
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("name", ["eigvalsh", "eigh", "cholesky"])
def test_a_tangent_s_unread_triangle_never_reaches_the_derivative(name):
    # eigh and cholesky read the lower triangle only: a tangent holding inf or
    # NaN above the diagonal must give the tangent with zeros there, not the
    # NaN of 0 * inf (the rules picked the diagonal out as x * I).
    a = np.array([[2.0, 0.3, 0.1], [0.3, 3.0, -0.2], [0.1, -0.2, 4.0]])
    fn = {"eigvalsh": LA.eigvalsh, "eigh": lambda m: LA.eigh(m)[0], "cholesky": LA.cholesky}[name]
    lower = np.tril(np.arange(1.0, 10.0).reshape(3, 3))
    want = ft.jvp(fn, (a,), (lower,))[1]
    for junk in (np.inf, -np.inf, np.nan):
        t = lower + np.triu(np.full((3, 3), junk), 1)
        got = ft.jvp(fn, (a,), (t,))[1]
        np.testing.assert_array_equal(got, want)


COND_ORDERS = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.parametrize("p", COND_ORDERS, ids=str)
def test_cond_matches_numpy_for_every_order(p):
    rng = np.random.default_rng(3)
    cases = [rng.standard_normal((3, 3)), rng.standard_normal((2, 2, 4, 4)),
             np.eye(3), rng.standard_normal((3, 3)).astype(np.float32),
             (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))),
             np.array([[2, 1], [1, 3]]), np.array([[1.0, np.nan], [0.0, 1.0]])]
    if p in (None, 2, -2):
        cases += [rng.standard_normal((4, 2)), rng.standard_normal((2, 2, 3))]
    for a in cases:
        try:
            want = np.linalg.cond(a, p)
        except np.linalg.LinAlgError:  # NumPy's svd of a NaN matrix
            with pytest.raises(np.linalg.LinAlgError):
                LA.cond(a, p)
            continue
        for got in _both(LA.cond, a, p=p):
            assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=1e-4 if a.dtype == np.float32 else 1e-10)


@settings(max_examples=15)
@given(a=matrices(), p=st.sampled_from(COND_ORDERS))
def test_cond_of_drawn_stacks_matches_numpy(a, p):
    want = np.linalg.cond(a, p)
    for got in _both(LA.cond, a, p=p):
        assert got.dtype == want.dtype
        _close(got, want)


@pytest.mark.parametrize("p", COND_ORDERS, ids=str)
def test_cond_of_a_singular_matrix_is_inf_not_an_error(p):
    stack = np.stack([np.array([[1.0, 0.0], [3.0, 0.0]]), np.zeros((2, 2)),
                      np.array([[4.0, 1.0], [1.0, 3.0]])])
    want_last = np.linalg.cond(stack[2], p)
    for got in _both(LA.cond, stack, p=p):
        if p == -2:  # 1 / cond: 0 for a singular matrix, and inf for 0 / 0
            np.testing.assert_array_equal(got[:2], [0.0, np.inf])
        else:
            np.testing.assert_array_equal(got[:2], [np.inf, np.inf])
        np.testing.assert_allclose(got[2], want_last, rtol=1e-12)
    _close(ft.vmap(lambda m: LA.cond(m, p))(stack), LA.cond(stack, p))
    if p not in ("nuc",):  # NumPy's nuclear norm of its NaN inverse raises instead
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(LA.cond(stack, p)[:2], np.linalg.cond(stack[:2], p))


@pytest.mark.parametrize("p", COND_ORDERS, ids=str)
def test_cond_derivatives_and_vmap(p):
    a = _well_conditioned(np.random.default_rng(5), (2, 3, 3))
    check_grads(lambda a: LA.cond(a, p), (a,), order=2, modes=("fwd", "rev"), atol=1e-5,
                rtol=1e-5)
    _close(ft.vmap(lambda m: LA.cond(m, p))(a), [np.linalg.cond(m, p) for m in a])


def test_cond_of_a_rectangular_matrix_has_the_singular_values_derivative():
    a = np.random.default_rng(6).standard_normal((4, 3))
    check_grads(LA.cond, (a,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    # d(s0 / s2) = (u0 v0^T s2 - u2 v2^T s0) / s2^2
    want = (np.outer(u[:, 0], vh[0]) * s[2] - np.outer(u[:, 2], vh[2]) * s[0]) / s[2] ** 2
    np.testing.assert_allclose(ft.grad(LA.cond)(a), want, rtol=1e-10, atol=1e-12)


def test_cond_errors_name_the_order_shape_and_emptiness():
    with pytest.raises(ValueError, match=r"cond: p=3 is not a matrix norm order; use None"):
        LA.cond(np.eye(2), 3)
    with pytest.raises(np.linalg.LinAlgError, match=r"must be square, got shape \(2, 3\)"):
        LA.cond(np.ones((2, 3)), 1)
    with pytest.raises(np.linalg.LinAlgError, match=r"cond is not defined on empty arrays"):
        LA.cond(np.ones((0, 0)))
    assert LA.cond(np.ones((0, 2, 2))).shape == (0,)
    # the derivative at a singular matrix solves with its factors, as det's
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix"):
        ft.grad(lambda a: LA.cond(a, 1))(SINGULAR)


TENSOR_A = np.eye(6).reshape(6, 2, 3) * 4 + RNG.standard_normal((6, 2, 3))
TENSOR_B = RNG.standard_normal(6)


def test_tensorsolve_matches_numpy_with_and_without_axes():
    for got in _both(LA.tensorsolve, TENSOR_A, TENSOR_B):
        _close(got, np.linalg.tensorsolve(TENSOR_A, TENSOR_B))
    moved = np.moveaxis(TENSOR_A, 0, 2)
    for got in _both(LA.tensorsolve, moved, TENSOR_B, axes=(0, 1)):
        assert got.shape == (2, 3)
        _close(got, np.linalg.tensorsolve(moved, TENSOR_B, axes=(0, 1)))
    a4 = np.eye(6).reshape(2, 3, 2, 3) + 0.1 * RNG.standard_normal((2, 3, 2, 3))
    b2 = RNG.standard_normal((2, 3))
    _close(LA.tensorsolve(a4, b2), np.linalg.tensorsolve(a4, b2))
    _close(LA.tensorsolve(np.array([2.0]), np.array([3.0])),
           np.linalg.tensorsolve(np.array([2.0]), np.array([3.0])))


def test_tensorsolve_derivatives_and_vmap():
    check_grads(LA.tensorsolve, (TENSOR_A, TENSOR_B), order=2, modes=("fwd", "rev"),
                atol=1e-5, rtol=1e-5)
    check_grads(lambda a, b: LA.tensorsolve(a, b, axes=(0, 1)), (np.moveaxis(TENSOR_A, 0, 2),
                TENSOR_B), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    stack_a, stack_b = np.stack([TENSOR_A, TENSOR_A + 1]), np.stack([TENSOR_B, -TENSOR_B])
    _close(ft.vmap(LA.tensorsolve)(stack_a, stack_b),
           [np.linalg.tensorsolve(x, y) for x, y in zip(stack_a, stack_b)])


def test_tensorsolve_of_a_system_that_is_not_square_says_so():
    with pytest.raises(np.linalg.LinAlgError, match=r"unknowns have shape \(3,\) \(3 of them\), "
                       r"so a needs 3 \* 3 entries"):
        LA.tensorsolve(np.ones((2, 3)), np.ones(2))


# --------------------------------------------------------------------------
# Empty arrays and integer inputs, against NumPy's value, dtype and shape
# --------------------------------------------------------------------------


def _same(got, want):
    """``got`` is NumPy's ``want``: value, dtype and shape."""
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (got, want)
    np.testing.assert_array_equal(got, want)


def _eager_jit_vmap(fn, x):
    """``fn(x)`` eagerly, under ``jit`` and as ``vmap`` over a stack of two
    (that stack's rows each ``fn(x)``), for comparison with NumPy."""
    stacked = ft.vmap(fn)(np.stack([x, x]))
    return fn(x), ft.jit(fn)(x), stacked


EMPTY_NORMS = [  # (shape, ord, axis): NumPy's norm is 0 for each
    ((0,), np.inf, None), ((0,), np.inf, 0), ((2, 0), np.inf, 1), ((0, 3), np.inf, None),
    ((0, 0), np.inf, None), ((3, 0), 1, None), ((0, 0), 1, None), ((0, 3), 2, None),
    ((3, 0), 2, None), ((0, 0), 2, None), ((0, 3), 1, None), ((3, 0), np.inf, None),
    ((2, 0, 3), np.inf, (1, 2)), ((3, 0, 2), 1, (0, 1)), ((0, 3, 2), 2, (1, 0)),
    ((0, 3), "nuc", None), ((0, 3), None, None), ((0, 3), "fro", (0, 1)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64, np.int64, np.bool_])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize(("shape", "ord_", "axis"), EMPTY_NORMS, ids=str)
def test_norms_of_empty_arrays_are_numpys_zero(shape, ord_, axis, keepdims, dtype):
    x = np.zeros(shape, dtype)
    want = np.linalg.norm(x, ord_, axis, keepdims)
    got, jitted, stacked = _eager_jit_vmap(lambda v: LA.norm(v, ord_, axis, keepdims), x)
    _same(got, want)
    _same(jitted, want)
    _same(stacked, np.stack([want, want]))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int32])
def test_vector_and_matrix_norm_of_empty_arrays_are_numpys_zero(dtype):
    for shape in [(0,), (2, 0)]:
        x = np.zeros(shape, dtype)
        for got in _both(lambda v: LA.vector_norm(v, ord=np.inf, axis=-1, keepdims=True), x):
            _same(got, np.linalg.vector_norm(x, ord=np.inf, axis=-1, keepdims=True))
    for shape in [(0, 3), (3, 0), (0, 0), (2, 0, 3)]:
        x = np.zeros(shape, dtype)
        for ord_ in [1, 2, np.inf]:
            for got in _both(LA.matrix_norm, x, ord=ord_):
                _same(got, np.linalg.matrix_norm(x, ord=ord_))


@pytest.mark.parametrize(("shape", "ord_"), [
    ((0,), -np.inf), ((0, 3), -np.inf), ((0, 0), -1), ((3, 0), -1), ((0, 3), -2), ((3, 0), -2),
])
def test_norms_of_empty_arrays_with_no_value_refuse_as_numpy_does(shape, ord_):
    x = np.zeros(shape)
    with pytest.raises(ValueError):
        np.linalg.norm(x, ord_)
    text = (rf"fnp\.linalg: the ord={ord_!r} norm of an array of shape {re.escape(str(shape))} "
            rf"is a minimum over no entries, which has no value .* use ord={-ord_!r}")
    for how in (LA.norm, ft.jit(LA.norm, static_argnums=1)):
        with pytest.raises(ValueError, match=text):
            how(x, ord_)
    if x.ndim == 2:
        with pytest.raises(ValueError, match=text):
            LA.matrix_norm(x, ord=ord_)
    else:
        with pytest.raises(ValueError, match=text):
            LA.vector_norm(x, ord=ord_)


@pytest.mark.parametrize(("ord_", "x"), [
    (np.inf, np.array([0.5, -2.0, 1.5])), (np.inf, TALL), (1, TALL), (2, TALL),
    (np.inf, np.array([1.0 + 2.0j, -0.5j, 0.3])),
])
def test_norm_derivatives_where_the_array_is_not_empty_are_unchanged(ord_, x):
    check_grads(lambda v: LA.norm(v, ord_), (x,), order=2, modes=("fwd", "rev"), atol=1e-5,
                rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float16, np.float32,
                                   np.complex64])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0), (0, 2, 2)])
def test_pinv_of_empty_matrices_keeps_numpys_dtype(shape, dtype):
    x = np.zeros(shape, dtype)
    if dtype == np.float16 and 0 not in shape[-2:]:
        # No matrices, but each would be 2 x 2: the SVD refuses float16, as NumPy's does.
        with pytest.raises(TypeError, match="float16 is unsupported"):
            np.linalg.pinv(x)
        with pytest.raises(DTypeError, match=r"pinv: array type float16 is unsupported"):
            LA.pinv(x)
        return
    want = np.linalg.pinv(x)
    for got in _both(LA.pinv, x):
        _same(got, want)
    _same(ft.vmap(LA.pinv)(np.stack([x, x])), np.stack([want, want]))
    _same(LA.pinv(x, hermitian=True), np.linalg.pinv(x, hermitian=True))
    with pytest.raises(ValueError, match="both rtol= and rcond= were given"):
        LA.pinv(x, 0.1, rtol=0.1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64, np.int64])
@pytest.mark.parametrize("rhs", [(), (2,), (0,)], ids=["vector", "two_columns", "no_columns"])
@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
def test_lstsq_of_empty_matrices_matches_numpy_eagerly_under_jit_and_vmap(shape, rhs, dtype):
    a = np.zeros(shape, dtype)
    b = (np.arange(1, shape[0] * math.prod(rhs) + 1) - 2.5).reshape(shape[:1] + rhs)
    want = np.linalg.lstsq(a, b)
    eager = LA.lstsq(a, b)
    assert type(eager[2]) is np.int32
    for got in (eager, ft.jit(LA.lstsq)(a, b)):
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    stacked = ft.vmap(LA.lstsq)(np.stack([a, a]), np.stack([b, -b]))
    other = np.linalg.lstsq(a, -b)
    for g, w, v in zip(stacked, want, other, strict=True):
        _same(g, np.stack([w, v]))


def test_lstsq_rank_is_numpys_int32():
    a, b = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0, 2.0])
    rank = LA.lstsq(a, b)[2]
    assert type(rank) is type(np.linalg.lstsq(a, b)[2]) is np.int32 and rank == 2
    _same(ft.jit(LA.lstsq)(a, b)[2], np.int32(2))
    _same(ft.jit(LA.lstsq)(a[:, :1].repeat(2, 1), b)[2], np.int32(1))


@pytest.mark.parametrize("x", [np.zeros(0), np.zeros(3, np.int64), np.array([0, 2, 0]),
                               np.array([False, True]), np.array(0.0), np.array(-1.5),
                               np.array([0.0, np.nan])], ids=repr)
def test_matrix_rank_of_a_vector_or_scalar_is_numpys(x):
    want = np.linalg.matrix_rank(x)
    got = LA.matrix_rank(x)
    assert type(got) is type(want) is int and got == want
    _same(ft.jit(LA.matrix_rank)(x), np.intp(want))
    _same(ft.vmap(LA.matrix_rank)(np.stack([x, np.zeros_like(x)])),
          np.array([want, 0], np.intp))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3), (2, 3)])
def test_matrix_rank_hermitian_of_non_square_matrices_refuses_as_numpy_does(shape):
    x = np.zeros(shape)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.matrix_rank(x, hermitian=True)
    for how in (LA.matrix_rank, ft.jit(LA.matrix_rank, static_argnames="hermitian")):
        with pytest.raises(LinAlgError, match=r"matrix_rank: the last two dimensions of the "
                                              r"array must be square"):
            how(x, hermitian=True)
    for square in [(0, 0), (2, 0, 0)]:
        _same(LA.matrix_rank(np.zeros(square), hermitian=True),
              np.linalg.matrix_rank(np.zeros(square), hermitian=True))


@pytest.mark.parametrize(("shape", "ind"), [((4, 6, 8, 3), 2), ((24, 8, 3), 1), ((2, 3, 6), 2),
                                            ((3, 3), 1), ((1, 1, 1), 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64])
def test_tensorinv_matches_numpy(shape, ind, dtype):
    # Integer entries, diagonally dominant: invertible in every dtype.
    a = np.rint(4 * _well_conditioned(RNG, (math.prod(shape[ind:]),) * 2)).reshape(shape)
    a = a.astype(dtype) * (1 - 0.5j if dtype == np.complex128 else 1)
    want = np.linalg.tensorinv(a, ind)
    for got in _both(LA.tensorinv, a, ind=ind):
        _close(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape
    _close(ft.jit(lambda x: np.linalg.tensorinv(x, ind))(a), want)  # NumPy's own name traces
    if dtype == np.float64:
        check_grads(lambda x: LA.tensorinv(x, ind), (a,), order=1, modes=("fwd", "rev"),
                    atol=1e-5, rtol=1e-5)
        _close(ft.vmap(lambda x: LA.tensorinv(x, ind))(np.stack([a, 2 * a])),
               np.stack([want, want / 2]))


@pytest.mark.parametrize(("shape", "ind", "numpy_error", "match"), [
    ((0, 0), 1, ValueError, r"a of shape \(0, 0\) has no entries in its axes after ind=1"),
    ((2, 2), 2, np.linalg.LinAlgError,
     r"a of shape \(2, 2\) is no square system at ind=2: its first 2 axes hold 4 entries and "
     r"the others 1"),
    ((4, 2, 2), 0, ValueError, r"ind=0, but it counts a's leading axes"),
])
def test_tensorinv_refuses_what_numpy_refuses_and_says_why(shape, ind, numpy_error, match):
    with pytest.raises(numpy_error):
        np.linalg.tensorinv(np.ones(shape), ind)
    with pytest.raises(numpy_error, match=r"fnp\.linalg\.tensorinv: " + match):
        LA.tensorinv(np.ones(shape), ind)


@pytest.mark.parametrize(("a_shape", "b_shape", "match"), [
    ((3, 0), (3,), r"b of shape \(3,\) has 3 entries, but a of shape \(3, 0\) .* has 0 "
                   r"equations; b needs one entry per equation"),
    ((2, 3, 6), (1, 1), r"b of shape \(1, 1\) has 1 entries, but a of shape \(2, 3, 6\) .* "
                        r"has 6 equations"),
])
def test_tensorsolve_of_a_b_of_the_wrong_size_names_b(a_shape, b_shape, match):
    a, b = np.ones(a_shape), np.ones(b_shape)
    with pytest.raises(ValueError):  # NumPy's LinAlgError or its solve's ValueError
        np.linalg.tensorsolve(a, b)
    for how in (LA.tensorsolve, ft.jit(LA.tensorsolve)):
        with pytest.raises(np.linalg.LinAlgError, match=r"fnp\.linalg\.tensorsolve: " + match):
            how(a, b)


@pytest.mark.parametrize(("a_shape", "b_shape"), [((0, 0), (0,)), ((2, 0, 0), (2, 0)),
                                                  ((0, 0, 0), (0,)), ((3, 0), (0,))])
def test_tensorsolve_of_empty_systems_matches_numpy(a_shape, b_shape):
    a, b = np.zeros(a_shape, np.int64), np.zeros(b_shape, np.int64)
    want = np.linalg.tensorsolve(a, b)
    for got in _both(LA.tensorsolve, a, b):
        _same(got, want)


@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "cholesky", "eigh", "eigvalsh",
                                  "svd", "qr", "cond", "matrix_rank"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (0, 3), (0, 0)], ids=str)
def test_a_bad_shape_is_refused_before_an_unsupported_dtype_as_in_numpy(name, shape):
    x = np.zeros(shape, np.float16)
    try:
        want = getattr(np.linalg, name)(x)
    except (np.linalg.LinAlgError, TypeError) as e:
        error = type(e) if isinstance(e, np.linalg.LinAlgError) else TypeError
    else:
        assert name == "matrix_rank" and x.ndim == 1  # a vector's rank needs no linalg
        _same(LA.matrix_rank(x), want)
        return
    for how in (getattr(LA, name), ft.jit(getattr(LA, name))):
        with pytest.raises(error) as info:
            how(x)
        assert name in str(info.value)
