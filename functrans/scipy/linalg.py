"""``functrans.scipy.linalg``: SciPy's triangular, Cholesky and LU solvers and
the matrix exponential, differentiable and batchable over leading axes.

The solvers are the primitives of ``primitives/linalg.py`` (``cholesky``,
``lu``, ``triangular_solve``), so ``cho_solve(cho_factor(a), b)`` and
``lu_solve(lu_factor(a), b)`` differentiate through the factors without
factorising again.  ``expm`` is Higham's scaling and squaring with a
degree-13 Pade approximant, written with ``functrans.numpy`` operations, so
it is differentiable by composition.  No SciPy is needed.

NB: ``cho_factor`` returns the factor with zeros in the other triangle
(SciPy leaves whatever was there); ``check_finite`` and ``overwrite_*``
are accepted and ignored (arrays are never written into).

>>> import numpy as np
>>> import functrans.scipy.linalg as fsl
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> fsl.cho_solve(fsl.cho_factor(a), np.array([2.0, 1.0]))
array([0.5, 0. ])
"""

from __future__ import annotations

import math

import numpy as np

from functrans.core import bind
from functrans.numpy import _contract, _elementwise, _reductions, _shape
from functrans.numpy._shape import _broadcast_to, _reshape
from functrans.numpy._util import asarray, is_traced
from functrans.numpy.linalg import (
    _conj_t,
    _matrix,
    lu_solve_factors,
    right_hand_side,
    solve,
)
from functrans.primitives import elementwise as ew
from functrans.primitives import linalg as la

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "expm"]

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _trans(name: str, trans) -> int:
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"{name}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}") from None


def _rhs(name: str, a, b):
    """``b`` as a stack of matrices with ``a``'s leading axes (both broadcast),
    and whether it was a vector."""
    a, b, vector, batch = right_hand_side(name, a, b)
    return _broadcast_to(a, batch + tuple(a.shape[-2:])), b, vector, batch


def _unrhs(x, vector: bool, batch):
    return _reshape(x, batch + (x.shape[-2],)) if vector else x


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, check_finite: bool = True):
    """``scipy.linalg.solve_triangular``: ``op(a) x = b`` reading one triangle
    of ``a`` (``op`` from ``trans``: 0/'N' none, 1/'T' transpose, 2/'C'
    conjugate transpose).  A zero on the diagonal raises LinAlgError.

    >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
    array([1., 2.])
    """
    t = _trans("solve_triangular", trans)
    a = _matrix("solve_triangular", a)
    a, b, vector, batch = _rhs("solve_triangular", a, b)
    x = la.triangular_solve(a, b, lower=bool(lower), transpose_a=t > 0, conjugate_a=t == 2,
                            unit_diagonal=bool(unit_diagonal))
    return _unrhs(x, vector, batch)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``scipy.linalg.cho_factor``: ``(c, lower)`` with ``c`` the Cholesky
    factor of ``a`` read from its lower (upper) triangle: ``a = c c^H`` when
    ``lower``, else ``a = c^H c``."""
    a = _matrix("cho_factor", a)
    if lower:
        return bind(la.cholesky_p, a), True
    return _conj_t(bind(la.cholesky_p, _conj_t(a))), False


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """``scipy.linalg.cho_solve``: ``x`` with ``a x = b`` from ``cho_factor(a)``:
    two triangular solves."""
    c, lower = c_and_lower
    c = _matrix("cho_solve", c)
    c, b, vector, batch = _rhs("cho_solve", c, b)
    if lower:   # a = L L^H
        y = la.triangular_solve(c, b, lower=True)
        x = la.triangular_solve(c, y, lower=True, transpose_a=True, conjugate_a=True)
    else:       # a = U^H U
        y = la.triangular_solve(c, b, lower=False, transpose_a=True, conjugate_a=True)
        x = la.triangular_solve(c, y, lower=False)
    return _unrhs(x, vector, batch)


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``scipy.linalg.lu_factor``: ``(lu, piv)``, the packed factors of ``P A =
    L U`` (unit ``L`` below the diagonal) and LAPACK's row interchanges
    (0-based, int32).  Square matrices only."""
    a = _matrix("lu_factor", a)
    lu, pivots, _ = bind(la.lu_p, a)
    return lu, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b: bool = False, check_finite: bool = True):
    """``scipy.linalg.lu_solve``: ``x`` with ``op(a) x = b`` from
    ``lu_factor(a)``; ``trans`` as in ``solve_triangular``.

    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lu_solve(lu_factor(a), np.array([5.0, 6.0]))
    array([-4. ,  4.5])
    """
    lu, piv = lu_and_piv
    t = _trans("lu_solve", trans)
    lu = _matrix("lu_solve", lu)
    piv = asarray(piv)
    perm = bind(la.lu_pivots_to_permutation_p, piv, permutation_size=lu.shape[-1])
    lu, b, vector, batch = _rhs("lu_solve", lu, b)
    perm = _broadcast_to(perm, batch + (lu.shape[-1],))
    return _unrhs(lu_solve_factors(lu, perm, b, t), vector, batch)


# -- expm --------------------------------------------------------------------------------

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152
#: Squarings done when the norm is traced (unknown while tracing): enough for
#: a 1-norm up to ``_THETA13 * 2**16``; larger norms give NaN rather than a
#: wrong result.
MAX_SQUARINGS = 16


def _pade13(a):
    b = _PADE13
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), tuple(a.shape))
    mm = _contract.matmul
    a2 = mm(a, a)
    a4 = mm(a2, a2)
    a6 = mm(a4, a2)

    def comb(*terms):
        out = None
        for coef, x in terms:
            term = _elementwise.multiply(coef, x)
            out = term if out is None else _elementwise.add(out, term)
        return out

    u_inner = _elementwise.add(mm(a6, comb((b[13], a6), (b[11], a4), (b[9], a2))),
                               comb((b[7], a6), (b[5], a4), (b[3], a2), (b[1], eye)))
    u = mm(a, u_inner)
    v = _elementwise.add(mm(a6, comb((b[12], a6), (b[10], a4), (b[8], a2))),
                         comb((b[6], a6), (b[4], a4), (b[2], a2), (b[0], eye)))
    return u, v


def expm(A):
    """``scipy.linalg.expm``: the matrix exponential of the matrices in the
    last two axes, by scaling and squaring with a degree-13 Pade
    approximant (Higham 2005); differentiable by composition.  With a traced
    ``A`` at most ``MAX_SQUARINGS`` squarings are done (1-norms up to about
    350000; beyond, NaN).

    >>> expm(np.array([[0.0, 1.0], [0.0, 0.0]]))
    array([[1., 1.],
           [0., 1.]])
    """
    a = _matrix("expm", A)
    if a.shape[-1] == 0:
        return _elementwise.add(a, 0.0)
    norm = _reductions.max(_reductions.sum(ew.abs(a), axis=-2), axis=-1)   # 1-norm
    ratio = _elementwise.divide(norm, _THETA13)
    s = _elementwise.maximum(0.0, _elementwise.ceil(_elementwise.log2(
        _elementwise.where(_elementwise.greater(ratio, 0), ratio, 1.0))))
    traced = is_traced(a)
    squarings = MAX_SQUARINGS if traced else int(np.max(s, initial=0))
    s_mat = _reshape(s, tuple(s.shape) + (1, 1))
    scaled = _elementwise.multiply(a, _shape._convert(
        _elementwise.exp2(_elementwise.negative(s_mat)), a.dtype))
    u, v = _pade13(scaled)
    r = solve(_elementwise.subtract(v, u), _elementwise.add(v, u))
    zero = np.zeros((), r.dtype)
    for k in range(squarings):
        # Members that are done square zeros instead (no overflow, no NaN).
        more = _elementwise.greater(s_mat, k)
        live = _elementwise.where(more, r, zero)
        r = _elementwise.where(more, _contract.matmul(live, live), r)
    if traced:
        r = _elementwise.where(_elementwise.greater(s_mat, MAX_SQUARINGS), math.nan, r)
    return r
