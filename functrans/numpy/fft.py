"""``functrans.numpy.fft``: NumPy's discrete Fourier transforms (the array
API's ``fft`` extension), differentiable, batchable and jittable.

A transform along one axis is a product with the DFT matrix, ``W[j, k] =
exp(-2 pi i j k / n)``, built in NumPy from ``j k mod n`` (so the angles stay
small and accurate) and applied with ``dot_general``.  Everything here is a
composition of existing operations: the derivatives are those of a linear
map (the transposed matrix), batching and the GPU come with ``dot_general``,
and no new primitive is needed.  NB: the cost is O(n^2) per transformed
axis, not the O(n log n) of NumPy's pocketfft: fine for the sizes of
signal-processing losses and spectral features (a few thousand points), not
for long signals.  Results agree with NumPy's to a few units in the last
place times the length.  An infinity or NaN in the input makes every output
along its axis NaN (each output sums every input times a phase, and a
phase's zero part times an infinity is NaN), where pocketfft's butterflies
keep some infinities: ``fft([1, inf, 2, 3])`` is NaN throughout here,
``[inf, -1-infj, -inf, -1+infj]`` in NumPy.

Dtypes follow NumPy 2: single precision stays single (float32 and complex64
give complex64), integers and bools compute in float64.

>>> import numpy as np
>>> import functrans as ft
>>> import functrans.numpy as fnp
>>> fnp.fft.fft(np.array([1.0, 2.0, 3.0, 4.0]))
array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
>>> ft.grad(lambda x: fnp.abs(fnp.fft.rfft(x)[1]) ** 2)(np.array([1.0, 0.0, -1.0, 0.0]))
array([ 4.,  0., -4.,  0.])
"""

from __future__ import annotations

import math
import operator

import numpy as np

from functrans.core import array_module, bind
from functrans.errors import AxisError
from functrans.numpy import _shape
from functrans.numpy._array_api_info import place
from functrans.numpy._elementwise import subtract
from functrans.numpy._padding import pad
from functrans.numpy._rearranging import roll
from functrans.numpy._util import asarray, is_traced, normalize_axis
from functrans.primitives.elementwise import conj, convert_element_type, imag, real
from functrans.primitives.linalg import dot_general_p

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fft2", "ifft2", "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]  # fmt: skip

_NORMS = ("backward", "ortho", "forward")


def _norm(name: str, norm) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise ValueError(f"fnp.fft.{name}: norm={norm!r}; use 'backward' (the default), "
                         "'ortho' or 'forward'")
    return norm


def _swap(norm: str) -> str:
    """The norm of the opposite direction (hfft is an inverse transform of
    the conjugate, scaled as the forward one)."""
    return {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def _scale(norm: str, n: int, inverse: bool) -> float:
    if norm == "ortho":
        return 1 / math.sqrt(n)
    return 1 / n if (norm == "forward") != inverse else 1.0


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    single = dtype in (np.float16, np.float32, np.complex64)
    return np.dtype(np.complex64 if single else np.complex128)


def _as_complex(x):
    dtype = _complex_dtype(x.dtype)
    return x if x.dtype == dtype else convert_element_type(x, dtype)


def _as_real(x):
    dtype = _complex_dtype(x.dtype).type(0).real.dtype
    if x.dtype.kind == "c":
        raise TypeError(f"a real array is needed, got {x.dtype}; use fft for complex input")
    return x if x.dtype == dtype else convert_element_type(x, dtype)


def _length(name: str, n, default: int) -> int:
    if n is None:
        if default < 1:
            # NumPy refuses a transform of no points, rather than return an
            # empty spectrum (or, for hfft of one point, a length 0 one).
            raise ValueError(f"fnp.fft.{name}: the transformed axis gives {default} points; "
                             "the transform needs n >= 1 (pass n=, or a longer axis)")
        return default
    if is_traced(n):
        raise TypeError(f"fnp.fft.{name}: n must be a Python int (it sets the result's shape), "
                        "got a traced value")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fnp.fft.{name}: n={n} points; the transform needs n >= 1")
    return n


def _resize(x, axis: int, n: int):
    """``x`` cut or zero-padded to ``n`` entries along ``axis``, as NumPy does."""
    m = x.shape[axis]
    if m > n:
        return _shape._slice_axis(x, axis, 0, n)
    if m < n:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, n - m)
        return pad(x, widths)
    return x


def _apply(x, axis: int, matrix: np.ndarray):
    """``x`` along ``axis`` times ``matrix`` (rows: the input positions), the
    result's new axis in the same place."""
    w = array_module([x]).asarray(matrix) if not is_traced(x) else matrix
    dims = (((axis,), (0,)), ((), ()))
    out = bind(dot_general_p, x, w, dimension_numbers=dims)
    return _shape.moveaxis(out, -1, axis)


def _phases(n_in: int, n_out: int, n: int, sign: float) -> np.ndarray:
    """``exp(sign 2 pi i j k / n)`` for j < n_in, k < n_out, in float64; the
    quarter turns exactly 1, i, -1, -i (where cos(pi / 2) would be 6e-17), as
    pocketfft has them."""
    jk = np.outer(np.arange(n_in), np.arange(n_out)) % n
    w = np.exp(sign * 2j * np.pi * jk / n)
    quarter = (4 * jk) % n == 0
    w[quarter] = np.array([1, sign * 1j, -1, -sign * 1j])[(4 * jk[quarter]) // n]
    return w


def _c2c(name: str, a, n, axis, norm, inverse: bool):
    x = _as_complex(asarray(a))
    if x.ndim == 0:
        raise AxisError(f"fnp.fft.{name}: axis {axis} is out of bounds for a 0-d array; "
                        "the transform needs an array of rank 1 or more")
    ax = normalize_axis(f"fft.{name}", axis, x.ndim)
    n = _length(name, n, x.shape[ax])
    x = _resize(x, ax, n)
    w = _phases(n, n, n, 1.0 if inverse else -1.0) * _scale(_norm(name, norm), n, inverse)
    return _apply(x, ax, w.astype(x.dtype))


def fft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.fft``: the discrete Fourier transform along ``axis``, of
    ``n`` points (``a`` cut or zero-padded)."""
    return _c2c("fft", a, n, axis, norm, inverse=False)


def ifft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.ifft``: the inverse transform along ``axis``.

    >>> ifft(fft(np.array([1.0, 2.0, 0.5]))).real
    array([1. , 2. , 0.5])
    """
    return _c2c("ifft", a, n, axis, norm, inverse=True)


def _r2c(name: str, a, n, axis, norm):
    try:
        x = _as_real(asarray(a))
    except TypeError as e:
        raise TypeError(f"fnp.fft.{name}: {e}") from None
    if x.ndim == 0:
        raise AxisError(f"fnp.fft.{name}: axis {axis} is out of bounds for a 0-d array; "
                        "the transform needs an array of rank 1 or more")
    ax = normalize_axis(f"fft.{name}", axis, x.ndim)
    n = _length(name, n, x.shape[ax])
    x = _resize(x, ax, n)
    w = _phases(n, n // 2 + 1, n, -1.0) * _scale(_norm(name, norm), n, inverse=False)
    return _apply(convert_element_type(x, _complex_dtype(x.dtype)), ax,
                  w.astype(_complex_dtype(x.dtype)))


def rfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.rfft``: the transform of real input, the ``n // 2 + 1``
    non-negative frequencies."""
    return _r2c("rfft", a, n, axis, norm)


def _c2r(name: str, a, n, axis, norm):
    """The real signal of ``n`` points whose spectrum's non-negative half is
    ``a`` (the imaginary parts at frequency 0 and n/2 are ignored, as NumPy
    ignores them): ``sum_k w_k Re(X_k exp(2 pi i j k / n))`` with ``w_k`` 2
    for the frequencies that stand for a pair, 1 for 0 and n/2."""
    x = _as_complex(asarray(a))
    if x.ndim == 0:
        raise AxisError(f"fnp.fft.{name}: axis {axis} is out of bounds for a 0-d array; "
                        "the transform needs an array of rank 1 or more")
    ax = normalize_axis(f"fft.{name}", axis, x.ndim)
    n = _length(name, n, 2 * (x.shape[ax] - 1))
    m = n // 2 + 1
    x = _resize(x, ax, m)
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    w = _phases(m, n, n, 1.0) * (weights * _scale(_norm(name, norm), n, inverse=True))[:, None]
    rdtype = np.dtype(x.dtype.type(0).real.dtype)
    cos, sin = w.real.astype(rdtype), w.imag.astype(rdtype)
    return subtract(_apply(real(x), ax, cos), _apply(imag(x), ax, sin))


def _real_like(a, out):
    """``out`` (a real signal) in float16 where ``a`` is float16: NumPy's
    transforms to a real result keep half precision (computing in single),
    those to a complex one give complex64."""
    return convert_element_type(out, np.float16) if asarray(a).dtype == np.float16 else out


def irfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.irfft``: the real signal (of ``n`` points, by default
    ``2 * (m - 1)``) whose ``rfft`` is ``a``.

    >>> irfft(rfft(np.array([1.0, 2.0, 0.5, 4.0])))
    array([1. , 2. , 0.5, 4. ])
    """
    return _real_like(a, _c2r("irfft", a, n, axis, norm))


def hfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.hfft``: the real spectrum of a signal with Hermitian
    symmetry, given by its first half ``a``."""
    x = _as_complex(asarray(a))
    return _real_like(a, _c2r("hfft", conj(x), n, axis, _swap(_norm("hfft", norm))))


def ihfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.ihfft``: the inverse of ``hfft`` (of a real signal)."""
    return conj(_r2c("ihfft", a, n, axis, _swap(_norm("ihfft", norm))))


def _axes_and_sizes(name: str, x, s, axes):
    """NumPy's rule: ``axes`` default to the last ``len(s)`` axes (all when
    ``s`` is None too); ``s`` to the axes' lengths."""
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = [normalize_axis(f"fft.{name}", ax, x.ndim) for ax in axes]
    if s is None:
        return axes, [None] * len(axes)
    s = list(s)
    if len(s) != len(axes):
        raise ValueError(f"fnp.fft.{name}: s={tuple(s)} and axes={tuple(axes)} differ in "
                         "length; give one size per axis")
    return axes, s


def _untransformed(name: str, x, norm):
    """A transform over no axes (of a 0-d array, or ``axes=()``): NumPy's
    fftn and ifftn give their argument back as it is, dtype and all."""
    _norm(name, norm)
    return x


def _no_axes(name: str, x) -> AxisError:
    # An IndexError, as NumPy's (it indexes the empty list of axes), and a
    # ValueError, as bad arguments are.
    return AxisError(f"fnp.fft.{name}: no axes to transform (the argument has shape "
                     f"{tuple(x.shape)}); give an array of rank 1 or more and at least one axis")


def fftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.fftn``: the transform over ``axes`` (all by default)."""
    x = asarray(a)
    axes, s = _axes_and_sizes("fftn", x, s, axes)
    if not axes:
        return _untransformed("fftn", x, norm)
    for ax, n in zip(axes, s):
        x = _c2c("fftn", x, n, ax, norm, inverse=False)
    return _as_complex(x)


def ifftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.ifftn``: the inverse transform over ``axes``."""
    x = asarray(a)
    axes, s = _axes_and_sizes("ifftn", x, s, axes)
    if not axes:
        return _untransformed("ifftn", x, norm)
    for ax, n in zip(axes, s):
        x = _c2c("ifftn", x, n, ax, norm, inverse=True)
    return _as_complex(x)


def rfftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.rfftn``: ``rfft`` over the last of ``axes``, then ``fft``
    over the others."""
    x = asarray(a)
    axes, s = _axes_and_sizes("rfftn", x, s, axes)
    if not axes:
        raise _no_axes("rfftn", x)
    x = _r2c("rfftn", x, s[-1], axes[-1], norm)
    for ax, n in zip(axes[:-1], s[:-1]):
        x = _c2c("rfftn", x, n, ax, norm, inverse=False)
    return x


def irfftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.irfftn``: ``ifft`` over all of ``axes`` but the last, then
    ``irfft`` over the last (``2 * (m - 1)`` points unless ``s`` says)."""
    x = asarray(a)
    axes, s = _axes_and_sizes("irfftn", x, s, axes)
    if not axes:
        raise _no_axes("irfftn", x)
    for ax, n in zip(axes[:-1], s[:-1]):
        x = _c2c("irfftn", x, n, ax, norm, inverse=True)
    return _real_like(x, _c2r("irfftn", x, s[-1], axes[-1], norm))


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """``numpy.fft.fft2``: ``fftn`` over the last two axes."""
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """``numpy.fft.ifft2``: ``ifftn`` over the last two axes."""
    return ifftn(a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """``numpy.fft.rfft2``: ``rfftn`` over the last two axes."""
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """``numpy.fft.irfft2``: ``irfftn`` over the last two axes."""
    return irfftn(a, s, axes, norm)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """``numpy.fft.fftfreq``: the sample frequencies of an ``n``-point
    transform with sample spacing ``d``.

    >>> fftfreq(4, d=0.5)
    array([ 0. ,  0.5, -1. , -0.5])
    """
    out = np.fft.fftfreq(operator.index(n), d)
    return place("fftfreq", out if dtype is None else out.astype(dtype), device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """``numpy.fft.rfftfreq``: the non-negative sample frequencies, as ``rfft``
    returns them."""
    out = np.fft.rfftfreq(operator.index(n), d)
    return place("rfftfreq", out if dtype is None else out.astype(dtype), device)


def _shift(x, axes, sign: int):
    x = asarray(x)
    axes = range(x.ndim) if axes is None else ([axes] if np.ndim(axes) == 0 else axes)
    axes = [normalize_axis("fft.fftshift", ax, x.ndim) for ax in axes]
    if not axes:
        return x
    return roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)


def fftshift(x, axes=None):
    """``numpy.fft.fftshift``: the zero frequency moved to the middle."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """``numpy.fft.ifftshift``: ``fftshift`` undone."""
    return _shift(x, axes, -1)
