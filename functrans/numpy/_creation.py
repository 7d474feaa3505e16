"""Array creation under NumPy's names: array, asarray, zeros, ones, full, the
``*_like`` functions, empty, arange, linspace, eye, identity, meshgrid,
from_dlpack.

Shapes, sizes and dtypes are static, so these return concrete NumPy arrays
even inside a traced function; a traced array of the result's shape and
dtype comes out only where a traced value flows in (``array`` of a list of
tracers, ``full``/``full_like`` of a traced fill value, ``linspace`` between
traced end points).  ``empty`` and ``empty_like`` give zeros: uninitialised
memory would make results depend on chance.  ``device=`` (the array API's
keyword) takes ``"cpu"``, ``"gpu"``, None or an array's ``.device``.

>>> import functrans.numpy as fnp
>>> fnp.zeros((2, 2), dtype=fnp.int32)
array([[0, 0],
       [0, 0]], dtype=int32)
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from functrans import dtypes
from functrans.core import Tracer, bind, current_trace, get_aval
from functrans.devices import is_device_array
from functrans.numpy import _inplace, _memory_order, _shape
from functrans.numpy._array_api_info import normalize_device, place
from functrans.numpy._elementwise import add, divide, multiply, power, subtract
from functrans.numpy._elementwise import log10 as _log10
from functrans.numpy._elementwise import sign as _sign
from functrans.numpy._scalars import is_scalar, mark_array
from functrans.numpy._util import asarray as _asarray
from functrans.numpy._util import is_traced, normalize_axis
from functrans.primitives.elementwise import convert_element_type, floor, select_p
from functrans.primitives.shape import broadcast_in_dim_p, reshape_p, transpose_p

__all__ = [
    "array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
    "tri", "meshgrid",
    "from_dlpack", "ascontiguousarray", "asfortranarray", "require",
]  # fmt: skip


def asarray(a, dtype=None, order=None, *, device=None, copy=None):
    """``numpy.asarray``; tracers, and lists or tuples holding them, stay traced.
    ``order='C'`` or ``'F'`` copies an array laid out otherwise into that
    order, as NumPy does (``'A'``, ``'K'`` and None keep any layout).

    >>> asarray([1, 2], dtype=np.float32)
    array([1., 2.], dtype=float32)
    """
    normalize_device("asarray", device)
    out = _asarray(a, dtype)
    if not is_traced(out):
        if (copy is not None or order is not None) and not is_device_array(a):
            out = np.asarray(a, dtype=dtype, order=order, copy=copy)
        return place("asarray", out, device)
    if order not in ("C", "F", "A", "K", None):
        raise ValueError(f"asarray: order must be one of 'C', 'F', 'A', or 'K' (got {order!r}), "
                         "as NumPy says; give one of those")
    if copy and out is a:  # a tracer: a copy is a new tracer of its value
        return mark_array(out.copy(order=order or "K"))
    if type(out) is Tracer and order in ("C", "F"):
        out = _in_order(out, order, a)
    if type(out) is Tracer and out.ndim == 0:
        # NumPy's asarray of a scalar is a new 0-d array; of a 0-d array, the array
        return mark_array(out.copy() if out is a and is_scalar(out) else out)
    return out


def ascontiguousarray(a, dtype=None):
    """``numpy.ascontiguousarray``: ``a`` itself where it is C-contiguous,
    else a C-ordered copy, with at least one axis (a 0-d array becomes a
    view of one element).

    >>> ascontiguousarray(np.ones((2, 2)).T).flags.c_contiguous
    True
    """
    return _at_least_1d(asarray(a, dtype, order="C"))


def asfortranarray(a, dtype=None):
    """``numpy.asfortranarray``: ``a`` itself where it is Fortran-contiguous,
    else a Fortran-ordered copy, with at least one axis.

    >>> asfortranarray(np.ones((2, 2))).flags.f_contiguous
    True
    """
    return _at_least_1d(asarray(a, dtype, order="F"))


def _at_least_1d(x):
    if x.ndim or type(x) is not Tracer:
        return x if x.ndim else x.reshape(1)
    out = _shape.reshape(x, (1,))
    if not is_scalar(x):  # a view of a 0-d array (a new array of a scalar)
        _inplace.link(out, x, (np.reshape, _shape.reshape, ((1,),), {}, None))
    return out


def require(a, dtype=None, requirements=None):
    """``numpy.require`` for the requirements 'C' (C-contiguous), 'F'
    (Fortran-contiguous), 'A' (aligned: every array is) and 'E' (a base
    array: every result is): ``a`` itself where it meets them, else a copy.
    'W' and 'O' (writeable, owns its data) depend on where a traced array's
    memory comes from, which functrans does not follow: they are refused
    for traced arrays.

    >>> require(np.ones((2, 2)).T, requirements="C").flags.c_contiguous
    True
    """
    if not is_traced(a):
        return np.require(a, dtype, requirements)
    flags = {_REQUIREMENTS.get(r.upper(), r) for r in requirements or ()}
    unknown = flags - {"C", "F", "A", "E", "W", "O"}
    if unknown:
        raise KeyError(f"require: unknown requirements {sorted(unknown)}, as NumPy says; give "
                       "some of 'C', 'F', 'A', 'W', 'O', 'E'")
    if flags & {"W", "O"}:
        raise ValueError(
            f"require: requirements {sorted(flags & {'W', 'O'})} (writeable, owns its data) of a "
            "traced array are not supported: whether NumPy copies depends on where the array's "
            "memory comes from. Make a copy that has them: np.array(a, order=...)")
    if flags >= {"C", "F"}:
        raise ValueError('require: Cannot specify both "C" and "F" order, as NumPy says; give '
                         "one of them")
    order = "F" if "F" in flags else "C" if "C" in flags else None
    return asarray(a, dtype, order=order)


#: NumPy's long names of ``require``'s flags.
_REQUIREMENTS = {"C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F_CONTIGUOUS": "F",
                 "FORTRAN": "F", "ALIGNED": "A", "WRITEABLE": "W", "OWNDATA": "O",
                 "ENSUREARRAY": "E"}


def _in_order(x: Tracer, order: Any, given: Any) -> Tracer:
    """``x`` itself where it is laid out in ``order`` ('C' or 'F') already,
    else a copy laid out so, as ``np.asarray(x, order=order)``.  Where
    ``x``'s layout is not known, the result is followed as ``x`` itself and
    an update that would tell it from a copy is refused."""
    model = _memory_order.model(x)
    if model is not None:
        if np.asarray(model, order=order) is model:
            return x
        return x.copy(order=order)
    if x is not given:  # a new array (a conversion): nothing else holds it
        return _memory_order.laid_out(x, None)
    out = _memory_order.laid_out(x, None)
    _inplace.link(out, x, (functools.partial(np.asarray, order=order), _same_value, (), {}, None),
                  layout=True)
    return out


def _same_value(x):
    return x


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0):
    """``numpy.array``: a copy of ``object`` (lists of tracers are stacked),
    with at least ``ndmin`` axes, laid out in memory in ``order`` as NumPy's
    copy (``'K'``: as ``object``).

    >>> array([[1, 2]], ndmin=3).shape
    (1, 1, 2)
    """
    x = _asarray(object, dtype)
    if not is_traced(x):
        return np.array(x, copy=copy, order=order, subok=subok, ndmin=ndmin)
    if order is None:
        order = "K"
    if order == "A" and type(object) is Tracer:  # decided by object's layout, not x's
        model = _memory_order.model(object)
        order = None if model is None else "F" if model.flags.f_contiguous else "C"
    if x.ndim >= ndmin:
        if (copy or x.ndim == 0 and is_scalar(x)) and x is object:
            return mark_array(x.copy(order=order))  # a 0-d result is an array, not a scalar
        if order is None:  # a copy in an order not known
            return mark_array(_memory_order.laid_out(x, None))
        return mark_array(x if order == "K" else _in_order(x, order, object))
    return bind(reshape_p, x, new_sizes=(1,) * (ndmin - x.ndim) + x.shape)


def zeros(shape, dtype=None, *, device=None):
    """``numpy.zeros`` (float64 unless ``dtype`` says otherwise)."""
    return place("zeros", np.zeros(_shape_tuple(shape), dtype), device)


def ones(shape, dtype=None, *, device=None):
    """``numpy.ones`` (float64 unless ``dtype`` says otherwise)."""
    return place("ones", np.ones(_shape_tuple(shape), dtype), device)


def empty(shape, dtype=None, *, device=None):
    """``numpy.empty``, filled with zeros (see the module docstring)."""
    return zeros(shape, dtype, device=device)


def full(shape, fill_value, dtype=None, *, device=None):
    """``numpy.full``: ``fill_value`` (broadcast) in every position; traced when
    ``fill_value`` is.

    >>> full(3, 2.5)
    array([2.5, 2.5, 2.5])
    """
    shape = _shape_tuple(shape)
    if not is_traced(fill_value):
        return place("full", np.full(shape, fill_value, dtype), device)
    normalize_device("full", device)
    out = _broadcast_to(_asarray(fill_value, dtype), shape)
    if _memory_order.significant(shape) > 1:  # C-ordered, as NumPy's (not a broadcast)
        return _memory_order.laid_out(out, _memory_order.c_proxy(shape))
    return mark_array(out.copy() if out is fill_value else out)  # full((), v): a 0-d array


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    """A shape as a tuple of ints.  A traced size must carry its value
    (``__index__`` raises the concretization error otherwise): array shapes
    are static."""
    if isinstance(shape, (tuple, list, np.ndarray)):
        return tuple(operator.index(d) for d in shape)
    return (operator.index(shape),)


def _static(x: Any) -> Any:
    """A bound or a count as a Python number; a traced one must carry its
    value, since it decides the result's shape."""
    if not isinstance(x, Tracer):
        return x
    return operator.index(x) if x.dtype.kind in "biu" else float(x)


def _broadcast_to(x, shape: tuple[int, ...]):
    nd = len(shape)
    dims = tuple(range(nd - x.ndim, nd))
    return bind(broadcast_in_dim_p, x, shape=shape, broadcast_dimensions=dims)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.zeros_like``; concrete even when ``a`` is traced, laid out in
    memory as NumPy lays it out (``order``; see ``full_like``).

    >>> zeros_like(np.ones(2, np.int32))
    array([0, 0], dtype=int32)
    """
    return _filled_like("zeros_like", a, 0, dtype, order, shape, device)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.ones_like``; concrete even when ``a`` is traced, laid out in
    memory as NumPy lays it out (``order``; see ``full_like``)."""
    return _filled_like("ones_like", a, 1, dtype, order, shape, device)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.empty_like``, filled with zeros (see the module docstring)."""
    return _filled_like("empty_like", prototype, 0, dtype, order, shape, device)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.full_like``: ``fill_value`` cast to ``a``'s dtype (or ``dtype``);
    traced only when ``fill_value`` is.  The result is laid out in memory as
    NumPy lays it out, following ``a``'s layout for ``order='K'`` (and
    ``'A'``), which decides whether a later ``reshape`` of it is a view; where
    ``a``'s layout is not known, an update that would tell is refused.

    >>> full_like(np.zeros(2, np.int32), 2.7)
    array([2, 2], dtype=int32)
    """
    return _filled_like("full_like", a, fill_value, dtype, order, shape, device)


def _filled_like(name: str, a: Any, fill_value: Any, dtype: Any, order: Any, shape: Any,
                 device: Any):
    """A ``*_like`` result: ``fill_value`` in an array made by NumPy's rule
    from a model of ``a``'s layout (``_memory_order.model``)."""
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"{name}: order must be one of 'C', 'F', 'A', or 'K' (got {order!r}), "
                         "as NumPy says; give one of those")
    template = _asarray(a)
    dtype = template.dtype if dtype is None else np.dtype(dtype)
    shape = None if shape is None else _shape_tuple(shape)
    traced = type(template) is Tracer
    model = _memory_order.model(template) if traced else \
        template if isinstance(template, np.ndarray) else np.empty(template.shape, np.bool_)
    new_shape = tuple(template.shape) if shape is None else shape
    if model is None and _memory_order.significant(new_shape) > 1 and 0 not in new_shape:
        # NumPy's layout depends on a's, which is not known here: a traced
        # array whose layout is not known either.
        normalize_device(name, device)
        out = _asarray(full(new_shape, fill_value, dtype))
        if type(out) is not Tracer:
            out = (current_trace() or template._trace).constant(out)
        return _memory_order.laid_out(out, None)
    if model is None:
        model = np.empty(new_shape, np.bool_)
    if not is_traced(fill_value):
        out = np.full_like(model, fill_value, dtype, order, shape=shape)
        return place(name, out, device)
    normalize_device(name, device)
    out = full(new_shape, fill_value, dtype)
    want = np.empty_like(model, np.bool_, order, shape=shape)
    if _memory_order.significant(new_shape) <= 1:
        return out  # every layout is contiguous (and full marks a 0-d array)
    return _memory_order.laid_out(out, _memory_order.proxy_of(want))


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """``numpy.arange``: the values ``start, start + step, ...`` below ``stop``.

    >>> arange(1, 7, 2)
    array([1, 3, 5])
    """
    out = np.arange(_static(start), _static(stop), _static(step), dtype=dtype)
    return place("arange", out, device)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``numpy.linspace``: ``num`` evenly spaced values from ``start`` to ``stop``;
    traced when ``start`` or ``stop`` is.

    >>> linspace(0.0, 1.0, 5)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if not is_traced(start, stop):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
        return (place("linspace", out[0], device), out[1]) if retstep \
            else place("linspace", out, device)
    normalize_device("linspace", device)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    y, step = _traced_linspace(start, stop, num, endpoint)
    y = _move_first_axis(y, axis)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = floor(y)
    if dtype is not None:
        y = _convert(y, dtype)
    return (y, step) if retstep else y


def _traced_linspace(start, stop, num: int, endpoint: bool):
    """NumPy's recipe, ``arange(num) * step + start`` with ``stop`` written
    into the last place, over traced end points; returns ``(y, step)``."""
    if isinstance(start, (list, tuple)) or isinstance(stop, (list, tuple)):
        start, stop = _asarray(start), _asarray(stop)
    # NumPy computes in the operands' dtype (Python scalars weak), made inexact.
    inexact = dtypes.result_type(get_aval(start), get_aval(stop), get_aval(0.0))
    start, stop = _asarray(start, inexact), _asarray(stop, inexact)
    ndim = len(np.broadcast_shapes(start.shape, stop.shape))
    steps = np.arange(num, dtype=inexact).reshape((num,) + (1,) * ndim)
    delta = subtract(stop, start)
    div = num - 1 if endpoint else num
    step = divide(delta, div) if div > 0 else np.nan
    # NB: NumPy switches to (y / div) * delta where the step underflows to 0;
    # a traced step has no value to branch on, so this always scales by step.
    y = add(multiply(steps, delta if div == 0 else step), start)
    if endpoint and num > 1:
        last = (np.arange(num) == num - 1).reshape(steps.shape)
        y = bind(select_p, last, stop, y)
    return y, step


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``numpy.logspace``: ``base ** linspace(start, stop, num)``; traced when
    ``start``, ``stop`` or ``base`` is.

    >>> logspace(0.0, 3.0, 4)
    array([   1.,   10.,  100., 1000.])
    """
    if not is_traced(start, stop, base):
        return np.logspace(start, stop, num, endpoint, base, dtype, axis)
    # NumPy's recipe: a base with axes is broadcast with the end points
    # (brought to one rank) and given the new axis; a scalar base stays a
    # scalar (a Python float weak: float32 end points give float32).
    if not get_aval(base).shape:
        y = linspace(start, stop, num, endpoint, axis=axis)
    else:
        rank = max(len(get_aval(v).shape) for v in (start, stop, base))
        start, stop, base = (_at_least(v, rank) for v in (start, stop, base))
        y = linspace(start, stop, num, endpoint, axis=axis)
        base = _shape.expand_dims(base, axis)
    out = power(base, y)
    return out if dtype is None else _convert(out, np.dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``numpy.geomspace``: ``num`` values from ``start`` to ``stop`` spaced
    evenly on a log scale (both of one sign, neither zero), ends exact;
    traced when ``start`` or ``stop`` is (real values).

    >>> geomspace(1.0, 1000.0, 4)
    array([   1.,   10.,  100., 1000.])
    """
    if not is_traced(start, stop):
        return np.geomspace(start, stop, num, endpoint, dtype, axis)
    start, stop = _asarray(start), _asarray(stop)
    # NumPy's dtype: of the end points, float(num) and a 0-d array of dtype
    # (float64 when None, so float32 end points give float64).
    inexact = dtypes.result_type(get_aval(start), get_aval(stop), get_aval(float(num)),
                                 get_aval(np.zeros((), dtype)))
    if inexact.kind == "c":
        raise TypeError("fnp.geomspace: traced complex end points are not supported; pass "
                        "concrete ones (NumPy arrays or Python numbers) or real ones")
    start, stop = _convert(start, inexact), _convert(stop, inexact)
    # NumPy's recipe: the sign taken out, logspace of the log10s, the ends
    # written exactly, the sign put back.  A zero end point gives NaN or inf
    # here, where NumPy (seeing values) raises.
    sign = _sign(start)
    start, stop = divide(start, sign), divide(stop, sign)
    y = logspace(_log10(start), _log10(stop), num, endpoint, 10.0, inexact)
    if num > 0:
        at = np.arange(num).reshape((num,) + (1,) * (y.ndim - 1))
        y = bind(select_p, at == 0, start, y)
        if endpoint and num > 1:
            y = bind(select_p, at == num - 1, stop, y)
    y = _move_first_axis(multiply(sign, y), axis)
    return y if dtype is None else _convert(y, np.dtype(dtype))


def _at_least(v, rank: int):
    """``v`` as an array of ``rank`` axes (leading ones added), as NumPy's
    ``np.array(v, ndmin=rank)``."""
    v = v if is_traced(v) else np.asarray(v)
    missing = rank - len(get_aval(v).shape)
    return _shape.reshape(v, (1,) * missing + tuple(get_aval(v).shape)) if missing else v


def tri(N, M=None, k=0, dtype=float, *, like=None):
    """``numpy.tri``: ones at and below the ``k``-th diagonal of an ``N`` by
    ``M`` array, zeros elsewhere.

    >>> tri(2, 3)
    array([[1., 0., 0.],
           [1., 1., 0.]])
    """
    return np.tri(_static(N), _static(M), _static(k), dtype)


def _convert(x, dtype):
    return x if x.dtype == dtype else convert_element_type(x, dtype)


def _move_first_axis(y, axis: Any):
    axis = normalize_axis("linspace", axis, y.ndim)
    if axis == 0:
        return y
    perm = list(range(1, y.ndim))
    perm.insert(axis, 0)
    return bind(transpose_p, y, permutation=tuple(perm))


def eye(N, M=None, k=0, dtype=float, *, device=None):
    """``numpy.eye``: ones on the ``k``-th diagonal of an ``N`` by ``M`` array.

    >>> eye(2, 3, k=1)
    array([[0., 1., 0.],
           [0., 0., 1.]])
    """
    return place("eye", np.eye(_static(N), _static(M), _static(k), dtype), device)


def identity(n, dtype=None):
    """``numpy.identity``: the ``n`` by ``n`` identity matrix."""
    return np.identity(_static(n), dtype)


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """``numpy.meshgrid``: coordinate arrays from 1-d coordinate vectors;
    ``indexing="xy"`` swaps the first two axes (Cartesian), ``"ij"`` does not.

    >>> [g.shape for g in meshgrid(np.arange(3), np.arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"fnp.meshgrid: indexing={indexing!r}; use 'xy' or 'ij'")
    xs = [_reshape_1d(x) for x in xi]
    shape = [x.size for x in xs]
    if indexing == "xy" and len(xs) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        axis = 1 - i if indexing == "xy" and len(xs) > 1 and i < 2 else i
        dims = [1] * len(xs)
        dims[axis] = x.size
        grid = bind(reshape_p, x, new_sizes=tuple(dims))
        out.append(grid if sparse else _broadcast_to(grid, tuple(shape)))
    return tuple(out)


def _reshape_1d(x):
    x = _asarray(x)
    return x if x.ndim == 1 else bind(reshape_p, x, new_sizes=(x.size,))


def from_dlpack(x, /, *, device=None, copy=None):
    """``numpy.from_dlpack``: an array from any object with ``__dlpack__`` (a
    NumPy, CuPy or PyTorch array), on ``device`` when given.  Traced arrays
    cannot be exported (they have no memory yet); pass them as they are.
    """
    if isinstance(x, Tracer):
        raise TypeError(
            f"{x._trace.fun_name}: fnp.from_dlpack of a traced {x.aval.str_short()} array: "
            "a traced array has no memory to share through DLPack; use the array itself "
            "(functrans.numpy functions take it as it is)"
        )
    out = (x.copy() if copy else x) if is_device_array(x) else np.from_dlpack(x, copy=copy)
    return place("from_dlpack", out, device)
