"""``functrans.numpy.linalg``: NumPy's linear algebra, differentiable and batchable.

Every function has ``numpy.linalg``'s signature and results and works on
stacks of matrices in the last two axes.  They are built from a few
primitives of ``primitives/linalg.py``: ``lu``, ``triangular_solve``,
``cholesky``, ``eigh``, ``qr`` and ``svd``; ``solve``, ``inv``, ``det`` and
``slogdet`` are an LU factorisation plus triangular solves, so their
derivatives (which are again triangular solves with the same factors) never
factorise a second time.

Derivatives follow the standard results, and where those need it:

* ``eigh``: distinct eigenvalues (the eigenvectors' derivative is NaN at a
  repeated eigenvalue; the eigenvalues' derivative is always right).
* ``svd``: distinct nonzero singular values for ``u`` and ``vh``;
  ``compute_uv=False`` (and so the 2-norm and nuclear norm) needs neither;
  ``full_matrices=True`` of a non-square matrix has no derivative.
* ``qr``: full column rank; ``mode='complete'`` of a tall matrix has no
  derivative.
* ``det``/``slogdet``/``solve``/``inv`` at a singular matrix: the value is
  NumPy's where NumPy gives one, but a derivative (which solves with the
  factors) raises ``numpy.linalg.LinAlgError``; so does that of ``cond``
  for ``p`` other than None, 2 and -2 (its value there is inf).
* ``pinv`` (and ``lstsq``): the derivative of the pseudo-inverse at constant
  rank, which needs no distinct singular values.
* ``norm``: the 2-norm (and the Frobenius norm) of a zero vector has the
  zero subgradient, at every order (``_root_of_squares``).

Like NumPy's, functions read only the lower triangle of the matrix given to
``cholesky`` and ``eigh`` (``UPLO='L'``), and their derivatives are those of
that Hermitian matrix.  Singular matrices make ``solve`` and ``inv`` raise
``numpy.linalg.LinAlgError`` when they run: a zero pivot of the LU
factorisation, which is LAPACK's getrf (the routine behind NumPy's solve)
when SciPy is installed and a NumPy implementation otherwise.  Bad shapes
raise ``functrans.errors.LinAlgError`` (a subclass) at once.

At NaN and inf entries ``det`` and ``slogdet`` give NumPy's values: both
read the same LAPACK factors, and a zero pivot makes the determinant 0 (sign
0, ``logabsdet`` -inf) whatever NaN the rest holds.  ``solve`` and ``inv``
can give NaN where NumPy gives some finite entries: they apply the row
interchanges as a product with a permutation matrix (``0 * inf`` is NaN) and
solve each triangle with a general solver, where NumPy's getrs permutes rows
and substitutes, so an infinite entry does not reach every result there.
Finite inputs are unaffected.

>>> import numpy as np
>>> import functrans as ft
>>> import functrans.numpy as fnp
>>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> fnp.linalg.solve(a, np.array([1.0, 2.0]))
array([0.09090909, 0.63636364])
>>> ft.grad(lambda a: fnp.linalg.slogdet(a).logabsdet)(a)   # inv(a).T
array([[ 0.27272727, -0.09090909],
       [-0.09090909,  0.36363636]])
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any, NamedTuple

import numpy as np

from functrans.core import array_module, bind
from functrans.custom_derivatives import custom_jvp
from functrans.errors import DTypeError, LinAlgError, ShapeError
from functrans.numpy import _contract, _elementwise, _matrices, _reductions, _shape, _sorting
from functrans.numpy._shape import _broadcast_shape, _broadcast_to, _reshape
from functrans.numpy._util import asarray, is_traced, normalize_axis
from functrans.primitives import elementwise as ew
from functrans.primitives import linalg as la

__all__ = [
    "solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "qr", "svd",
    "svdvals", "pinv", "lstsq", "matrix_power", "multi_dot", "norm", "vector_norm",
    "matrix_norm", "matrix_transpose", "cond", "tensorsolve", "tensorinv", "LinAlgError",
    "cross", "diagonal", "matmul", "matrix_rank", "outer", "tensordot", "trace", "vecdot",
]  # fmt: skip


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# -- argument checks -----------------------------------------------------------------


def _matrix(name: str, a, square: bool = True):
    """``a`` as an array of float32/64 or complex64/128 matrices: bools and
    integers become float64, as in NumPy; anything else is refused.  The
    shape is checked first, as NumPy does (a float16 vector is a LinAlgError)."""
    a = asarray(a)
    if a.ndim < 2:
        raise LinAlgError(
            f"{name}: {a.ndim}-dimensional array given; the array must be at least "
            "two-dimensional (a matrix or a stack of matrices)"
        )
    if square and a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"{name}: the last two dimensions of the array must be square, got shape "
            f"{tuple(a.shape)}"
        )
    if a.dtype.kind in "biu":
        return _shape._convert(a, np.float64)
    if a.dtype not in la._LINALG_DTYPES:
        raise DTypeError(
            f"{name}: array type {a.dtype} is unsupported in linalg; convert it with "
            ".astype(np.float64) first"
        )
    return a


def _common(a, b):
    """Both (inexact) operands in their common dtype."""
    dtype = np.result_type(a.dtype, b.dtype)
    return _shape._convert(a, dtype), _shape._convert(b, dtype)


def _swap(x):
    return _shape.swapaxes(x, -1, -2)


def _conj_t(x):
    return _swap(_elementwise_conj(x))


def _elementwise_conj(x):
    return ew.conj(x) if x.dtype.kind == "c" else x


def _eye_like(a):
    """Identity matrices of ``a``'s shape and dtype, on ``a``'s device (an
    eager GPU call refuses host arrays mixed in)."""
    n, batch = a.shape[-1], tuple(a.shape[:-2])
    eye = la._constant_for(a, np.eye(n, dtype=a.dtype))
    return array_module((eye,)).broadcast_to(eye, batch + (n, n)) if batch else eye


# -- LU-based: solve, inv, det, slogdet ----------------------------------------------


def lu_solve_factors(lu, perm, b, trans: int = 0):
    """Solve with the factors of ``P A = L U`` (``trans``: 0 for ``A x = b``,
    1 for ``A^T x = b``, 2 for ``A^H x = b``); ``b`` has the matrices'
    leading axes.  Used by ``solve`` and ``scipy.linalg.lu_solve``."""
    l, u = la.lu_factors(lu)
    p = la.permutation_matrix(perm, lu.dtype)
    if trans == 0:
        y = la.triangular_solve(l, la.matmul(p, b), lower=True, unit_diagonal=True)
        return la.triangular_solve(u, y, lower=False)
    conj = trans == 2
    y = la.triangular_solve(u, b, lower=False, transpose_a=True, conjugate_a=conj)
    y = la.triangular_solve(l, y, lower=True, transpose_a=True, conjugate_a=conj,
                            unit_diagonal=True)
    return la.matmul(la.mT(p), y)


def right_hand_side(name: str, a, b):
    """``(a, b, vector, batch)``: ``a`` and ``b`` in their common dtype, ``b`` as
    a stack of matrices broadcast to the leading axes ``batch`` shared with
    ``a`` (``a`` itself is not broadcast), and whether ``b`` was a vector."""
    b = asarray(b)
    if b.dtype.kind in "biu":
        b = _shape._convert(b, np.float64)
    a, b = _common(a, b)
    n = a.shape[-1]
    given = tuple(b.shape)
    vector = b.ndim == 1
    if vector:
        b = _reshape(b, (b.shape[0], 1))
    if b.ndim < 2 or b.shape[-2] != n:
        raise LinAlgError(
            f"{name}: b of shape {given} does not match a of shape {tuple(a.shape)}: "
            f"b needs {n} rows"
        )
    batch = _broadcast_shape(name, tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return a, _broadcast_to(b, batch + tuple(b.shape[-2:])), vector, batch


def solve(a, b):
    """``numpy.linalg.solve``: ``x`` with ``a @ x == b``; ``b`` is a vector when it
    is 1-d, else a stack of matrices, batch axes broadcast.  An LU factorisation
    and two triangular solves; a singular ``a`` raises LinAlgError when run.

    >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([[2.0], [2.0]]))
    array([[1. ],
           [0.5]])
    """
    a = _matrix("solve", a)
    a, b, vector, batch = right_hand_side("solve", a, b)
    n = a.shape[-1]
    lu, _, perm = bind(la.lu_p, a)
    lu = _broadcast_to(lu, batch + (n, n))
    perm = _broadcast_to(perm, batch + (n,))
    x = lu_solve_factors(lu, perm, b)
    return _reshape(x, batch + (n,)) if vector else x


def inv(a):
    """``numpy.linalg.inv``: ``solve(a, I)``; a singular ``a`` raises LinAlgError.

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    a = _matrix("inv", a)
    return solve(a, _eye_like(a))


def _lu_diagonal(a):
    """U's diagonal of ``a``'s LU factorisation, whether it holds a zero (a
    singular matrix: LAPACK's getrf reports the first zero pivot, and NumPy
    then gives ``det = 0`` and ``slogdet = (0, -inf)`` whatever else the
    factors hold, NaN included), and the sign of the row interchanges."""
    lu, pivots, _ = bind(la.lu_p, a)
    n = a.shape[-1]
    rows = la._constant_for(pivots, np.arange(n, dtype=np.int32))
    swaps = _reductions.sum(_elementwise.not_equal(pivots, rows), -1)
    parity = ew.select(ew.eq(ew.rem(swaps, 2), 1), -1.0, 1.0)
    # A gather, not la.diagonal's sum of lu * I: an infinite factor off the
    # diagonal would make that sum NaN.
    diag = _matrices.diagonal(lu, 0, -2, -1)
    singular = _reductions.any(ew.eq(diag, 0), axis=-1)
    return diag, singular, _shape._convert(parity, a.dtype)


def det(a):
    """``numpy.linalg.det``: the product of U's diagonal from an LU
    factorisation, signed by the row interchanges; 0 where U has a zero
    pivot, as NumPy gives (even where NaN or inf fills the rest).

    >>> det(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array(-2.)
    """
    a = _matrix("det", a)
    diag, singular, parity = _lu_diagonal(a)
    return ew.select(singular, np.zeros((), a.dtype),
                     ew.mul(parity, _reductions.prod(diag, axis=-1)))


def slogdet(a):
    """``numpy.linalg.slogdet``: ``(sign, logabsdet)`` with ``det = sign *
    exp(logabsdet)``; a singular matrix gives ``(0, -inf)``.  As in NumPy, a
    NaN on U's diagonal leaves the sign that of the other pivots and makes
    ``logabsdet`` NaN.

    >>> slogdet(np.array([[1.0, 2.0], [3.0, 4.0]]))
    SlogdetResult(sign=array(-1.), logabsdet=array(0.69314718))
    """
    a = _matrix("slogdet", a)
    diag, singular, parity = _lu_diagonal(a)
    size = ew.abs(diag)
    # log(0) = -inf without NumPy's divide-by-zero warning: NumPy's slogdet
    # gives (0, -inf) for a singular matrix quietly.
    zero = ew.eq(size, 0)
    safe = ew.select(zero, np.ones((), size.dtype), size)
    logabsdet = ew.select(singular, np.array(-np.inf, size.dtype),
                          _reductions.sum(ew.log(safe), axis=-1))
    if a.dtype.kind == "c":
        unit = ew.select(zero, np.zeros((), a.dtype), ew.div(diag, safe))
    else:
        # NumPy flips the sign at each negative pivot, so a NaN pivot keeps it.
        unit = ew.select(ew.lt(diag, 0), -np.ones((), a.dtype), np.ones((), a.dtype))
    sign = ew.select(singular, np.zeros((), a.dtype),
                     ew.mul(parity, _reductions.prod(unit, axis=-1)))
    return SlogdetResult(sign, logabsdet)


# -- cholesky, eigh, qr, svd -------------------------------------------------------------


def cholesky(a, /, *, upper: bool = False):
    """``numpy.linalg.cholesky``: ``L`` lower triangular with ``a = L L^H``
    (``U = L^H`` with ``upper=True``), reading only the lower (upper)
    triangle; a matrix that is not positive definite raises LinAlgError.

    >>> cholesky(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[2., 0.],
           [1., 1.]])
    """
    a = _matrix("cholesky", a)
    if upper:
        return _conj_t(bind(la.cholesky_p, _conj_t(a)))
    return bind(la.cholesky_p, a)


def _eigh(name: str, a, UPLO: str):
    """Eigenvalues and eigenvectors of the Hermitian matrix of one triangle
    of ``a``; errors name the caller, ``name``."""
    a = _matrix(name, a)
    if UPLO not in ("L", "U"):
        raise ValueError(f"fnp.linalg.{name}: UPLO must be 'L' (read the lower triangle) or "
                         f"'U' (the upper one), got {UPLO!r}")
    # The Hermitian matrix of a's upper triangle is that of a^H's lower one.
    return bind(la.eigh_p, a if UPLO == "L" else _conj_t(a))


def eigh(a, UPLO: str = "L"):
    """``numpy.linalg.eigh``: eigenvalues (ascending) and eigenvectors of the
    Hermitian matrix given by one triangle of ``a``.

    >>> eigh(np.array([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    array([1., 2.])
    """
    w, v = _eigh("eigh", a, UPLO)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str = "L"):
    """``numpy.linalg.eigvalsh``: the eigenvalues of ``eigh``, ascending."""
    return _eigh("eigvalsh", a, UPLO)[0]


_QR_MODES = ("reduced", "complete", "r", "raw")


def qr(a, mode: str = "reduced"):
    """``numpy.linalg.qr``: ``a = Q R`` with orthonormal columns in ``Q`` and
    upper triangular ``R``; ``mode`` is 'reduced', 'complete' or 'r'.

    >>> q, r = qr(np.array([[3.0, 0.0], [4.0, 5.0]]))
    >>> np.allclose(q @ r, [[3.0, 0.0], [4.0, 5.0]])
    True
    """
    if mode not in _QR_MODES:
        raise ValueError(f"qr: unrecognized mode {mode!r}; use one of {_QR_MODES[:3]}")
    if mode == "raw":
        raise NotImplementedError(
            "qr: mode='raw' (LAPACK's Householder reflectors) is not supported; use "
            "mode='reduced' or 'complete'"
        )
    a = _matrix("qr", a, square=False)
    q, r = bind(la.qr_p, a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """``numpy.linalg.svd``: ``a = U diag(S) Vh`` with singular values
    descending; only ``S`` with ``compute_uv=False``.  ``hermitian=True``
    takes them from ``eigh``, as NumPy does.

    >>> svd(np.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    array([4., 3.])
    """
    a = _matrix("svd", a, square=hermitian)
    if hermitian:
        return _hermitian_svd(a, compute_uv)
    if not compute_uv:
        (s,) = bind(la.svd_p, a, full_matrices=False, compute_uv=False)
        return s
    u, s, vh = bind(la.svd_p, a, full_matrices=bool(full_matrices), compute_uv=True)
    return SVDResult(u, s, vh)


def _hermitian_svd(a, compute_uv: bool):
    w, v = bind(la.eigh_p, a)
    s = ew.abs(w)
    if not compute_uv:
        return _shape.flip(_sorting.sort(s, axis=-1), -1)
    order = _shape.flip(_sorting.argsort(s, axis=-1), -1)
    sgn = _sorting.take_along_axis(ew.sign(w), order, axis=-1)
    s = _sorting.take_along_axis(s, order, axis=-1)
    cols = _broadcast_to(_shape.expand_dims(order, -2), tuple(v.shape))
    u = _sorting.take_along_axis(v, cols, axis=-1)
    vh = _conj_t(ew.mul(u, _shape.expand_dims(_shape._convert(sgn, u.dtype), -2)))
    return SVDResult(u, s, vh)


def svdvals(x, /):
    """``numpy.linalg.svdvals``: the singular values, descending."""
    return svd(x, compute_uv=False)


# -- pinv, lstsq ---------------------------------------------------------------------------

_NO_VALUE = object()


def _pinv_cutoff(a, rcond, rtol):
    if rcond is None:
        if rtol is _NO_VALUE:
            return 1e-15
        if rtol is None:
            return max(a.shape[-2:]) * np.finfo(a.dtype).eps
        return rtol
    if rtol is not _NO_VALUE:
        raise ValueError("fnp.linalg.pinv: both rtol= and rcond= were given; they are two names "
                         "for the cutoff, so pass one")
    return rcond


def _per_matrix(cutoff):
    """A cutoff (a scalar, or one per matrix of a stack) aligned with the
    singular values' last axis; a scalar stays 0-d, so that it combines
    with device arrays as NumPy scalars do."""
    cutoff = asarray(cutoff)
    return _shape.expand_dims(cutoff, -1) if cutoff.ndim else cutoff


def _pinv_value(a, rcond, hermitian):
    u, s, vh = svd(_elementwise_conj(a), full_matrices=False, hermitian=hermitian)
    rcond = np.asarray(rcond)
    cutoff = _elementwise.multiply(_per_matrix(rcond),
                                   _reductions.max(s, axis=-1, keepdims=True))
    large = _elementwise.greater(s, cutoff)
    one = np.ones((), s.dtype)
    s_inv = ew.select(large, ew.div(one, ew.select(large, s, one)), np.zeros((), s.dtype))
    scaled = ew.mul(_shape.expand_dims(_shape._convert(s_inv, u.dtype), -1), _swap(u))
    return la.matmul(_swap(vh), scaled)


@functools.cache
def _pinv_with_jvp():
    pinv_ = custom_jvp(_pinv_value, nondiff_argnums=(1, 2))

    @pinv_.defjvp
    def pinv_jvp(rcond, hermitian, primals, tangents):
        """The derivative of the pseudo-inverse where the rank is locally
        constant: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P."""
        (a,), (da,) = primals, tangents
        p = pinv_(a, rcond, hermitian)
        m, n = a.shape[-2:]
        dah, ph = _conj_t(da), _conj_t(p)
        mm = la.matmul
        term1 = ew.neg(mm(mm(p, da), p))
        term2 = mm(mm(mm(p, ph), dah), ew.sub(np.eye(m, dtype=a.dtype), mm(a, p)))
        term3 = mm(mm(mm(ew.sub(np.eye(n, dtype=a.dtype), mm(p, a)), dah), ph), p)
        return p, ew.add(ew.add(term1, term2), term3)

    return pinv_


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=_NO_VALUE):
    """``numpy.linalg.pinv``: the Moore-Penrose pseudo-inverse from the SVD,
    singular values below ``rcond * max(s)`` taken as zero (NumPy's default
    ``rcond`` is 1e-15).  Its derivative is the closed form at constant rank.

    >>> pinv(np.array([[1.0, 0.0], [0.0, 0.0]]))
    array([[1., 0.],
           [0., 0.]])
    """
    a = asarray(a)
    if a.ndim >= 2 and 0 in a.shape[-2:]:
        # NumPy gives the empty (n, m) matrices in a's own dtype: it returns
        # before converting integers and bools (or refusing float16) for the SVD.
        _pinv_cutoff(a, rcond, rtol)
        m, n = a.shape[-2:]
        return np.zeros(tuple(a.shape[:-2]) + (n, m), a.dtype)
    a = _matrix("pinv", a, square=False)
    cutoff = _pinv_cutoff(a, rcond, rtol)
    if is_traced(cutoff):
        raise TypeError("pinv: rcond/rtol must be concrete, not a traced value")
    cutoff = np.asarray(cutoff, dtype=np.float64)
    return _pinv_with_jvp()(a, float(cutoff) if cutoff.ndim == 0 else cutoff, bool(hermitian))


def lstsq(a, b, rcond=None):
    """``numpy.linalg.lstsq``: ``(x, residuals, rank, s)`` for the least-squares
    solution of ``a @ x = b`` of minimal norm (from the pseudo-inverse, with
    singular values below ``rcond * max(s)`` taken as zero; ``rcond``
    defaults to machine precision times ``max(m, n)``).

    ``residuals`` holds the squared residual norms when ``a`` has full column
    rank and ``m > n``, else it is empty; a traced ``a`` has no known rank,
    so it then always holds them when ``m > n``.  ``rank`` is NumPy's int32
    (a 0-d int32 array when traced).  An empty ``a`` gives NumPy's results from
    its shapes alone, under ``jit`` too.

    >>> x, res, rank, s = lstsq(np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]),
    ...                         np.array([1.0, 2.0, 2.0]))
    >>> x, rank
    (array([1.16666667, 0.5       ]), np.int32(2))
    """
    a = _matrix("lstsq", a, square=False)
    b = asarray(b)
    if b.dtype.kind in "biu":
        b = _shape._convert(b, np.float64)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise LinAlgError(
            f"lstsq: a must be 2-d and b 1-d or 2-d, got shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    a, b = _common(a, b)
    m, n = a.shape
    if b.shape[0] != m:
        raise LinAlgError(f"fnp.linalg.lstsq: a of shape {tuple(a.shape)} has {m} rows, but b "
                          f"of shape {tuple(b.shape)} has {b.shape[0]}; b needs one row per "
                          "row of a")
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    if rcond is None:
        rcond = np.finfo(a.dtype).eps * max(m, n)
    s = svd(a, compute_uv=False)
    # An empty a has an empty pseudo-inverse, so x is zeros (n > 0) or empty,
    # and its rank is 0: full column rank when n == 0, so with m > 0 the
    # residuals are b's squared norms, as NumPy gives.  All of that follows
    # from the shapes, so it holds under jit too.
    x = _contract.matmul(pinv(a, rcond), b)
    rank = _reductions.sum(_elementwise.greater(s, ew.mul(rcond, _max_or_zero(s, 0))),
                           dtype=np.int32)  # LAPACK's rank, an int32 in NumPy
    traced = is_traced(a, b)
    full_rank = traced or int(rank) == n
    if m > n and full_rank:
        r = _elementwise.subtract(b, _contract.matmul(a, x))
        squares = ew.real(ew.mul(ew.conj(r), r)) if r.dtype.kind == "c" else ew.mul(r, r)
        resids = _reductions.sum(squares, axis=0)
        if b.ndim == 1:
            resids = _reshape(resids, (1,))
    else:
        resids = np.zeros((0,), real)
    if not traced:
        rank = np.int32(int(rank))  # int() first: a CuPy array converts only that way
    return x, resids, rank, s


# -- products -----------------------------------------------------------------------------


def matrix_power(a, n):
    """``numpy.linalg.matrix_power``: ``a`` multiplied by itself ``n`` times
    (by squaring); ``n < 0`` inverts first, ``n == 0`` gives the identity.

    >>> matrix_power(np.array([[1, 1], [0, 1]]), 3)
    array([[1, 3],
           [0, 1]])
    """
    a = asarray(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"fnp.linalg.matrix_power: the exponent must be an int, got {n!r}; for "
                        "a fractional power of a symmetric matrix use eigh") from None
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"matrix_power: expected a stack of square matrices, got shape {tuple(a.shape)}"
        )
    if n == 0:
        return _eye_like(a).copy()
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while True:
        if n & 1:
            result = power if result is None else _contract.matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = _contract.matmul(power, power)


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The optimal parenthesisation of a matrix chain (dynamic programming,
    as in NumPy's multi_dot): ``split[i][j]`` for the product of i..j."""
    k = len(dims) - 1
    cost: list[list[float]] = [[0.0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s
    return split


def multi_dot(arrays, *, out=None):
    """``numpy.linalg.multi_dot``: the product of a chain of matrices in the
    cheapest order; the first may be a row vector and the last a column
    vector (1-d).

    >>> multi_dot([np.ones(2), np.eye(2), np.ones(2)])
    array(2.)
    """
    xs = [asarray(x) for x in arrays]
    if len(xs) < 2:
        raise ValueError(f"fnp.linalg.multi_dot: got {len(xs)} array(s), but it multiplies two "
                         "or more; use the array itself, or fnp.dot")
    first_1d, last_1d = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_1d:
        xs[0] = _reshape(xs[0], (1, xs[0].shape[0]))
    if last_1d:
        xs[-1] = _reshape(xs[-1], (xs[-1].shape[0], 1))
    for i, x in enumerate(xs):
        if x.ndim != 2:
            raise LinAlgError(f"multi_dot: array {i} has {x.ndim} dimensions; 2 are needed "
                              "(1 for the first and last)")
    split = _chain_order([xs[0].shape[0]] + [x.shape[1] for x in xs])

    def product(i, j):
        if i == j:
            return xs[i]
        s = split[i][j]
        return _contract.dot(product(i, s), product(s + 1, j))

    result = product(0, len(xs) - 1)
    if first_1d and last_1d:
        return _reshape(result, ())
    if first_1d:
        return _reshape(result, (result.shape[1],))
    if last_1d:
        return _reshape(result, (result.shape[0],))
    return result


matrix_transpose = _shape.matrix_transpose
matmul = _contract.matmul
tensordot = _contract.tensordot
vecdot = _contract.vecdot


# -- norm ------------------------------------------------------------------------------------


def _abs2(x):
    return ew.real(ew.mul(ew.conj(x), x)) if x.dtype.kind == "c" else ew.mul(x, x)


def _root_of_squares(squares):
    """``sqrt`` of a sum of squares, and 0 (the zero subgradient) where that
    sum is 0: at the origin ``sqrt``'s infinite derivative meets the zero
    derivative of the squares, and the ``select`` makes the derivative a
    strong zero there instead of ``0 * inf`` (docs/autodiff.md).  The value
    is ``sqrt``'s everywhere (a NaN sum is not 0, so it stays NaN)."""
    return ew.select(ew.eq(squares, 0), np.zeros((), squares.dtype), _elementwise.sqrt(squares))


def _vector_norm(x, ord, axis: tuple[int, ...], keepdims: bool):
    r = _reductions
    if ord is None or ord == 2:
        return _root_of_squares(r.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"fnp.linalg.norm: ord={ord!r} is not a vector norm; use None or 2, 1, "
                         "inf, -inf, 0 or a real p ('fro' and 'nuc' are matrix norms: give two "
                         "axes)")
    if ord == math.inf:
        return _max_or_zero(ew.abs(x), axis, keepdims)
    if ord == -math.inf:
        return _min_or_refuse(ew.abs(x), axis, keepdims, ord=ord, shape=tuple(x.shape))
    if ord == 0:
        real = np.dtype(x.dtype.char.lower()) if x.dtype.kind == "c" else x.dtype
        return r.sum(_shape._convert(_elementwise.not_equal(x, 0), real), axis=axis,
                     keepdims=keepdims)
    if ord == 1:
        return r.sum(ew.abs(x), axis=axis, keepdims=keepdims)
    try:
        p = float(ord)
    except (TypeError, ValueError):
        raise ValueError(f"fnp.linalg.norm: ord={ord!r} is not a vector norm; use None or 2, 1, "
                         "inf, -inf, 0 or a real p") from None
    total = r.sum(_elementwise.power(ew.abs(x), p), axis=axis, keepdims=keepdims)
    return _elementwise.power(total, 1.0 / p)


def _max_or_zero(x, axis, keepdims: bool = False):
    """The max of nonnegative ``x`` (absolute values, their sums, singular
    values) over ``axis``, and 0 where that is empty: NumPy's norm reduces
    with ``initial=0`` there, so that the inf-, 1- and 2-norms of an empty
    array are 0.  A non-empty max of nonnegative numbers is unchanged by 0,
    so the plain max (and its derivative) is kept there; the min of -inf,
    -1 and -2 has no such value and stays refused, as in NumPy."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    empty = any(x.shape[ax] == 0 for ax in axes)
    return _reductions.max(x, axis=axis, keepdims=keepdims, initial=0 if empty else None)


def _min_or_refuse(x, axis, keepdims: bool = False, *, ord, shape: tuple[int, ...]):
    """The min of ``x`` over ``axis`` for the -inf, -1 and -2 norms of an
    array of ``shape``; over an empty axis it has no value (NumPy refuses it
    too), and the refusal names the norm rather than the min inside it."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if any(x.shape[ax] == 0 for ax in axes):
        raise ShapeError(
            f"fnp.linalg: the ord={ord!r} norm of an array of shape {shape} is a minimum over "
            "no entries, which has no value (NumPy refuses it too); check the size first, or "
            f"use ord={-ord!r}, which is 0 for an empty array"
        )
    return _reductions.min(x, axis=axis, keepdims=keepdims)


def _svd_norm(x, row: int, col: int, reduce):
    y = _shape.moveaxis(x, (row, col), (-2, -1))
    return reduce(svd(y, compute_uv=False), axis=-1)


def _matrix_norm(x, ord, axis: tuple[int, int], keepdims: bool):
    r = _reductions
    row, col = (normalize_axis("norm", ax, x.ndim) for ax in axis)
    if row == col:
        raise ValueError(f"fnp.linalg.norm: axis={tuple(axis)} names axis {row} twice; a matrix "
                         "norm needs two different axes")
    given = tuple(x.shape)
    smallest = functools.partial(_min_or_refuse, ord=ord, shape=given)
    if ord == 2:
        out = _svd_norm(x, row, col, _max_or_zero)
    elif ord == -2:
        out = _svd_norm(x, row, col, smallest)
    elif ord in (1, -1):
        sums = r.sum(ew.abs(x), axis=row)
        out = (_max_or_zero if ord == 1 else smallest)(sums, axis=col - (col > row))
    elif ord in (math.inf, -math.inf):
        sums = r.sum(ew.abs(x), axis=col)
        out = (_max_or_zero if ord > 0 else smallest)(sums, axis=row - (row > col))
    elif ord is None or ord in ("fro", "f"):
        out = _root_of_squares(r.sum(_abs2(x), axis=(row, col)))
    elif ord == "nuc":
        out = _svd_norm(x, row, col, r.sum)
    else:
        raise ValueError(f"fnp.linalg.norm: ord={ord!r} is not a matrix norm; use None or "
                         "'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        out = _reshape(out, tuple(shape))
    return out


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """``numpy.linalg.norm``: vector norms (``ord`` None/2, 1, inf, -inf, 0 or
    any real p) over one axis, matrix norms ('fro', 'nuc', 1, -1, 2, -2, inf,
    -inf) over two; with ``axis=None``, the vector 2-norm of the flattened
    array for ``ord=None``, else the norm of a 1-d or 2-d ``x``.

    >>> norm(np.array([3.0, 4.0])), norm(np.eye(2), "nuc")
    (array(5.), array(2.))
    """
    x = asarray(x)
    if x.dtype.kind in "biu":
        x = _shape._convert(x, np.float64)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            out = _root_of_squares(_reductions.sum(_abs2(_reshape(x, (x.size,)))))
            return _reshape(out, (1,) * x.ndim) if keepdims else out
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError(
                f"fnp.linalg.norm: axis must be None, an int or a tuple of ints, got {axis!r}"
            ) from None
    if len(axis) == 1:
        return _vector_norm(x, ord, (normalize_axis("norm", axis[0], x.ndim),), keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError(f"fnp.linalg.norm: axis={axis} names {len(axis)} axes of an array of shape "
                     f"{tuple(x.shape)}; a norm is over one axis (a vector norm) or two (a "
                     "matrix norm)")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """``numpy.linalg.vector_norm``: the ``ord`` vector norm over ``axis`` (all
    axes, flattened, when None)."""
    x = asarray(x)
    if x.dtype.kind in "biu":
        x = _shape._convert(x, np.float64)
    if axis is None:
        flat = _reshape(x, (x.size,))
        out = _vector_norm(flat, ord, (0,), False)
        return _reshape(out, (1,) * x.ndim) if keepdims else out
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(normalize_axis("vector_norm", ax, x.ndim) for ax in axes)
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """``numpy.linalg.matrix_norm``: the ``ord`` norm of the matrices in the
    last two axes."""
    x = asarray(x)
    if x.dtype.kind in "biu":
        x = _shape._convert(x, np.float64)
    return _matrix_norm(x, ord, (-2, -1), keepdims)



# -- cond, tensorsolve -----------------------------------------------------------------------

_COND_ORDERS = (None, 1, -1, 2, -2, math.inf, -math.inf, "fro", "nuc")


def _ratio(num, den):
    """``num / den`` of nonnegative numbers, with NumPy's ``x / 0`` (inf, or
    NaN for ``0 / 0``) but without its divide-by-zero warning."""
    zero = ew.eq(den, 0)
    inf_or_nan = ew.select(ew.eq(num, 0), np.array(np.nan, num.dtype),
                           np.array(np.inf, num.dtype))
    return ew.select(zero, inf_or_nan, ew.div(num, ew.select(zero, np.ones((), den.dtype), den)))


def _inverse_or_nan(a):
    """``inv(a)`` and whether each matrix was singular (a zero pivot), without
    raising: a singular matrix is replaced by the identity before solving, and
    its entry is masked by the caller (NumPy's cond takes ``inv`` under
    ``errstate(all='ignore')``, where a singular matrix gives NaN)."""
    lu, pivots, perm = bind(la.lu_p, a)
    singular = _reductions.any(ew.eq(_matrices.diagonal(lu, 0, -2, -1), 0), axis=-1)
    eye = _eye_like(a)
    lu = ew.select(_shape.expand_dims(singular, (-2, -1)), eye, lu)
    return lu_solve_factors(lu, perm, eye), singular


def cond(x, p=None):
    """``numpy.linalg.cond``: the condition number ``norm(x, p) * norm(inv(x), p)``
    of each matrix in the last two axes; for ``p`` None, 2 or -2 the ratio of
    the extreme singular values (``x`` may then be rectangular).  A singular
    matrix gives inf, not an error, unless ``x`` holds NaN (then NaN), as in
    NumPy.  Derivatives are those of the norms (of the singular values for
    ``p`` None, 2, -2) wherever the matrix is invertible.

    >>> cond(np.array([[1.0, 0.0], [0.0, 4.0]])), cond(np.array([[1.0, 2.0], [2.0, 4.0]]), 1)
    (array(4.), array(inf))
    """
    if not any(p is q or (q is not None and type(p) is not bool and p == q)
               for q in _COND_ORDERS):
        raise ValueError(f"fnp.linalg.cond: p={p!r} is not a matrix norm order; use None, 2, -2, "
                         "1, -1, inf, -inf, 'fro' or 'nuc'")
    x = asarray(x)
    if x.size == 0 and math.prod(x.shape[-2:]) == 0:  # NumPy's first check
        raise LinAlgError(f"fnp.linalg.cond: the matrices of shape {tuple(x.shape)} are empty, "
                          "and cond is not defined on empty arrays")
    x = _matrix("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        big, small = s[..., 0], s[..., -1]
        r = _ratio(small, big) if p == -2 else _ratio(big, small)
    else:
        inverse, singular = _inverse_or_nan(x)
        r = ew.mul(norm(x, p, axis=(-2, -1)), norm(inverse, p, axis=(-2, -1)))
        r = ew.select(singular, np.array(np.nan, r.dtype), r)
    # NumPy turns a NaN condition number into inf unless x itself holds NaN.
    nan_x = _reductions.any(_elementwise.isnan(x), axis=(-2, -1))
    to_inf = _elementwise.logical_and(_elementwise.isnan(r), _elementwise.logical_not(nan_x))
    return ew.select(to_inf, np.array(np.inf, r.dtype), r)


def tensorsolve(a, b, axes=None):
    """``numpy.linalg.tensorsolve``: ``x`` with ``tensordot(a, x, x.ndim) == b``,
    where ``x`` has the shape of ``a``'s trailing axes after ``axes`` (if
    given) are moved to the end; ``solve`` of ``a`` reshaped to a square
    matrix, so its derivatives are ``solve``'s.

    >>> a = np.eye(6).reshape(2, 3, 6)
    >>> tensorsolve(a, np.arange(6.0).reshape(2, 3)).shape
    (6,)
    """
    a, b = asarray(a), asarray(b)
    if axes is not None:
        order = list(range(a.ndim))
        for k in axes:
            order.remove(normalize_axis("tensorsolve", k, a.ndim))
            order.append(normalize_axis("tensorsolve", k, a.ndim))
        a = _shape.transpose(a, tuple(order))
    # NumPy's a.shape[-(a.ndim - b.ndim):], which is all of a.shape when the
    # ranks are equal.
    x_shape = tuple(a.shape[-(a.ndim - b.ndim):])
    n = math.prod(x_shape)
    if a.size != n * n:
        raise LinAlgError(
            f"fnp.linalg.tensorsolve: a of shape {tuple(a.shape)} (after moving axes={axes} to "
            f"the end) and b of shape {tuple(b.shape)} do not make a square system: the "
            f"unknowns have shape {x_shape} ({n} of them), so a needs {n} * {n} entries; "
            "a's leading axes must hold as many entries as its trailing ones"
        )
    # NumPy's rule above takes an empty a with no unknowns ((3, 0) too) as the
    # 0 x 0 system: b must then be empty as well.
    if b.size != n:
        raise LinAlgError(
            f"fnp.linalg.tensorsolve: b of shape {tuple(b.shape)} has {b.size} entries, but "
            f"a of shape {tuple(a.shape)} (after moving axes={axes} to the end) has {n} "
            "equations; b needs one entry per equation"
        )
    x = solve(_reshape(a, (n, n)), _reshape(b, (b.size,)))
    return _reshape(x, x_shape)


def tensorinv(a, ind=2):
    """``numpy.linalg.tensorinv``: the inverse of ``a`` under ``tensordot``
    over its first ``ind`` axes, of shape ``a.shape[ind:] + a.shape[:ind]``:
    ``inv`` of ``a`` reshaped to a square matrix (as NumPy reshapes it), so
    its derivatives are ``inv``'s.

    >>> a = np.eye(6).reshape(6, 2, 3)
    >>> tensorinv(a, ind=1).shape
    (2, 3, 6)
    """
    a = asarray(a)
    try:
        ind = operator.index(ind)
    except TypeError:
        raise TypeError(f"fnp.linalg.tensorinv: ind must be an int, got {ind!r}") from None
    if ind <= 0:
        raise ValueError(f"fnp.linalg.tensorinv: ind={ind}, but it counts a's leading axes "
                         "(those that the inverse's tensordot sums over); pass 1 or more")
    n = math.prod(a.shape[ind:])
    if n == 0:
        raise ValueError(
            f"fnp.linalg.tensorinv: a of shape {tuple(a.shape)} has no entries in its axes "
            f"after ind={ind}, so it is no square system (NumPy cannot reshape it either); its "
            f"inverse would be the empty array of shape {tuple(a.shape[ind:] + a.shape[:ind])}"
        )
    if a.size != n * n:
        raise LinAlgError(
            f"fnp.linalg.tensorinv: a of shape {tuple(a.shape)} is no square system at "
            f"ind={ind}: its first {ind} axes hold {a.size // n} entries and the others {n}; "
            "choose ind so that both hold as many"
        )
    inverse = inv(_reshape(a, (n, n)))
    return _reshape(inverse, tuple(a.shape[ind:]) + tuple(a.shape[:ind]))


# -- the array API's versions of NumPy's functions -----------------------------------------
# (numpy.linalg has the same: the axes are the last ones, and the keywords are keyword-only)


def cross(x1, x2, /, *, axis=-1):
    """``numpy.linalg.cross``: cross products of the 3-vectors along ``axis``.

    >>> cross(np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    array([1., 0., 0.])
    """
    a, b = asarray(x1), asarray(x2)
    for x in (a, b):
        if x.ndim == 0 or x.shape[normalize_axis("linalg.cross", axis, x.ndim)] != 3:
            raise LinAlgError(
                f"fnp.linalg.cross: the vectors along axis {axis} of shapes "
                f"{tuple(a.shape)} and {tuple(b.shape)} must have 3 components each; use "
                "fnp.cross for 2-vectors"
            )
    return _matrices.cross(a, b, axis=axis)


def _stack_of_matrices(name: str, x):
    """``x`` as an array of at least two axes, of any dtype."""
    x = asarray(x)
    if x.ndim < 2:
        raise LinAlgError(f"fnp.linalg.{name}: the argument has shape {tuple(x.shape)}, but "
                          "a stack of matrices needs two or more axes; use "
                          f"fnp.{name} with explicit axes for other arrays")
    return x


def diagonal(x, /, *, offset=0):
    """``numpy.linalg.diagonal``: the diagonals of the matrices in the last two axes."""
    return _matrices.diagonal(_stack_of_matrices("diagonal", x), offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """``numpy.linalg.trace``: the traces of the matrices in the last two axes.

    >>> trace(np.arange(8.0).reshape(2, 2, 2))
    array([ 3., 11.])
    """
    return _matrices.trace(_stack_of_matrices("trace", x), offset, -2, -1, dtype)


def outer(x1, x2, /):
    """``numpy.linalg.outer``: the outer product of two 1-d arrays."""
    a, b = asarray(x1), asarray(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise LinAlgError(
            f"fnp.linalg.outer: both operands must be 1-d, got shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}; use fnp.outer, which flattens them"
        )
    return _contract.outer(a, b)


def matrix_rank(x, /, *, rtol=None, tol=None, hermitian: bool = False):
    """``numpy.linalg.matrix_rank``: how many singular values exceed the
    cutoff, ``tol`` (absolute) or ``rtol * max(s)`` (by default ``rtol`` is
    ``max(m, n) * eps``); an integer, with no derivative.  As in NumPy, the
    rank of a vector is 1 unless all its entries are 0 (a Python int).

    >>> matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]]))
    array(1)
    """
    if rtol is not None and tol is not None:
        raise ValueError("fnp.linalg.matrix_rank: both rtol= and tol= were given; pass one "
                         "(tol is absolute, rtol relative to the largest singular value)")
    x = asarray(x)
    if x.ndim < 2:
        # NumPy's rank of a vector (or scalar): 1 unless every entry is 0.
        nonzero = _reductions.any(_elementwise.not_equal(x, 0))
        return _shape._convert(nonzero, np.intp) if is_traced(nonzero) else int(nonzero)
    # hermitian=True takes the singular values from eigh, which needs square
    # matrices even when there are none (NumPy refuses those too).
    a = _matrix("matrix_rank", x, square=bool(hermitian))
    if a.size == 0:
        return np.zeros(a.shape[:-2], np.intp)
    s = svd(a, compute_uv=False, hermitian=hermitian)
    if tol is not None:
        cutoff = _per_matrix(tol)
    else:
        rel = max(a.shape[-2:]) * np.finfo(s.dtype).eps if rtol is None else rtol
        cutoff = _elementwise.multiply(_per_matrix(rel),
                                       _reductions.max(s, axis=-1, keepdims=True))
    return _reductions.sum(_elementwise.greater(s, cutoff), axis=-1, dtype=np.intp)
