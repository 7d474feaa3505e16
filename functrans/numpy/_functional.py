"""Functions that apply the user's functions: ``piecewise``,
``apply_along_axis``, ``apply_over_axes`` and ``vectorize``.

The user's function is traced, not called per element: ``apply_along_axis``
and ``vectorize`` are ``vmap`` over the slices or elements (so they batch,
differentiate and ``jit`` like the function itself), and ``piecewise``
evaluates each piece on the whole array, its elements outside the piece's
condition replaced by one inside, and selects with ``where`` (NumPy calls
each piece on the selected elements only: an elementwise piece gives the
same values, and no NaN from outside its domain reaches a value or a
derivative).  ``vectorize`` of a function that needs its argument's
values (a Python ``if`` on it) loops over the elements instead where the
values are known (outside ``jit``), and says what to do where they are not.
On NumPy arrays with nothing traced, ``vectorize`` is NumPy's own.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.piecewise(np.array([-1.0, 2.0]), [np.array([True, False])], [lambda x: -x, lambda x: x**2])
array([1., 4.])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from functrans import api
from functrans.core import Tracer
from functrans.errors import ConcretizationError
from functrans.numpy import _creation, _memory_order, _reductions, _shape
from functrans.numpy import _elementwise as E
from functrans.numpy._util import asarray, is_traced, normalize_axis

__all__ = ["piecewise", "apply_along_axis", "apply_over_axes", "vectorize"]


def piecewise(x, condlist, funclist, *args, **kw):
    """``numpy.piecewise``: where ``condlist[i]`` holds, ``funclist[i](x)`` (or
    the constant ``funclist[i]``); with one more function than conditions,
    that one where none holds; elsewhere 0.  Later conditions win, and the
    result has ``x``'s dtype, as in NumPy.

    >>> piecewise(np.array([1, 5]), [np.array([True, False]), np.array([False, True])], [10, 20])
    array([10, 20])
    """
    x = asarray(x)
    if isinstance(condlist, (list, tuple)) and len(condlist) and \
            np.ndim(condlist[0]) == 0 and x.ndim != 0 and not isinstance(condlist[0], Tracer):
        condlist = [condlist]  # a list of bools for one condition, as NumPy reads it
    conds = [asarray(c) for c in (condlist if isinstance(condlist, (list, tuple))
                                  else [condlist])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"fnp.piecewise: {n} conditions and {len(funclist)} functions; give one "
                         f"function per condition, or one more for where none holds")
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"fnp.piecewise: condlist[{i}] has dtype {c.dtype.name}; conditions "
                            "must be bool arrays (compare first, x > 0)")
    if len(funclist) == n + 1:
        none = conds[0] if n else np.zeros(x.shape, bool)
        for c in conds[1:]:
            none = E.logical_or(none, c)
        conds = [*conds, E.logical_not(none) if n else np.ones(x.shape, bool)]
    y = _shape.broadcast_to(np.zeros((), x.dtype), tuple(x.shape))
    for cond, piece in zip(conds, funclist):
        value = piece(_own_part(x, cond), *args, **kw) if callable(piece) else piece
        value = asarray(value)
        value = value.astype(x.dtype) if value.dtype != x.dtype else value
        y = E.where(cond, value, y)
    # NumPy writes the pieces into np.zeros_like(x): x's memory order.
    return _memory_order.laid_out_like(y, x) if type(y) is Tracer else y


def _own_part(x, cond):
    """``x`` with the elements outside ``cond`` replaced by the first one inside,
    so a piece sees only values of its own part, as in NumPy (``sqrt(-x)`` for
    ``x < 0`` makes no NaN, in its value or its derivative, elsewhere)."""
    if x.ndim == 0:
        return x
    cond = _shape.broadcast_to(cond, tuple(x.shape))
    flat = _shape.ravel(x)
    first = flat[_reductions.argmax(_shape.ravel(cond))]
    return E.where(cond, x, first)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``numpy.apply_along_axis``: ``func1d`` on each 1-d slice of ``arr`` along
    ``axis``, its results in the slices' place (traced once, with ``vmap``).

    >>> apply_along_axis(lambda r: r[::-1].cumsum(), 1, np.array([[1, 2, 3]]))
    array([[3, 5, 6]])
    """
    arr = asarray(arr)
    ax = normalize_axis("apply_along_axis", axis, arr.ndim)
    moved = _shape.moveaxis(arr, ax, -1)
    outer = tuple(moved.shape[:-1])
    rows = _shape.reshape(moved, (-1, moved.shape[-1]))
    out = asarray(api.vmap(lambda r: asarray(func1d(r, *args, **kwargs)))(rows))
    res_dims = out.ndim - 1
    out = _shape.reshape(out, outer + tuple(out.shape[1:]))
    if type(out) is Tracer:
        # NumPy fills a C-ordered buffer of this shape and returns it with its
        # axes moved as below (a Fortran-ordered result for axis=0).
        out = _memory_order.laid_out(out, _memory_order.c_proxy(tuple(out.shape)))
    # The result's own axes go where ``axis`` was.
    return _shape.moveaxis(out, tuple(range(len(outer), len(outer) + res_dims)),
                           tuple(range(ax, ax + res_dims)))


def apply_over_axes(func, a, axes):
    """``numpy.apply_over_axes``: ``func(a, axis)`` for each axis in turn, the
    reduced axis kept (as ``keepdims`` would).

    >>> apply_over_axes(np.sum, np.ones((2, 3)), [0, 1])
    array([[6.]])
    """
    val = _creation.asarray(a)  # NumPy's: a 0-d array made of a scalar
    for axis in np.atleast_1d(axes).tolist():
        ax = normalize_axis("apply_over_axes", axis, val.ndim)
        res = asarray(func(val, ax))
        if res.ndim != val.ndim:
            res = _shape.expand_dims(res, ax)
            if res.ndim != val.ndim:
                raise ValueError("fnp.apply_over_axes: function is not returning an array of "
                                 "the correct shape (the input's rank, or one less)")
        val = res
    return val


class vectorize:
    """``numpy.vectorize``: ``pyfunc`` applied to each element of its
    broadcast arguments.  On traced arguments it is traced once, with
    ``vmap``; a ``pyfunc`` that needs the values (a Python branch on them)
    runs element by element where they are known.  ``excluded`` arguments
    are passed whole; ``otypes[0]`` is the result's dtype.

    >>> vectorize(lambda a, b: a - b if a > b else a + b)(np.array([1, 4]), 2)
    array([3, 2])
    """

    def __init__(self, pyfunc=None, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        if pyfunc is None:  # used as @vectorize(otypes=...) in NumPy 2.1+
            self._options = (otypes, doc, excluded, cache, signature)
            self.pyfunc = None
            return
        self.pyfunc = pyfunc
        self.otypes = otypes
        self.excluded = set(excluded or ())
        self.signature = signature
        self.__doc__ = doc if doc is not None else pyfunc.__doc__
        self._numpy = np.vectorize(pyfunc, otypes=otypes, excluded=excluded, cache=cache,
                                   signature=signature)
        functools.update_wrapper(self, pyfunc, updated=())

    def __call__(self, *args, **kwargs):
        if self.pyfunc is None:
            return vectorize(args[0], *self._options)
        if not is_traced(*args, *kwargs.values()):
            return self._numpy(*args, **kwargs)
        name = getattr(self.pyfunc, "__name__", "pyfunc")
        if self.signature is not None:
            raise NotImplementedError(
                f"fnp.vectorize({name}): signature= on traced arguments is not implemented; "
                "write the core operation on whole arrays, or use functrans.vmap over the loop "
                "axes")
        mapped = [i for i, _ in enumerate(args) if i not in self.excluded]
        keys = [k for k in kwargs if k not in self.excluded]
        arrays = [asarray(args[i]) for i in mapped] + [asarray(kwargs[k]) for k in keys]
        shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
        flat = [_shape.reshape(_shape.broadcast_to(a, shape), (-1,)) for a in arrays]

        def one(*elements: Any):
            call_args = list(args)
            for i, e in zip(mapped, elements):
                call_args[i] = e
            call_kwargs = dict(kwargs, **dict(zip(keys, elements[len(mapped):])))
            out = asarray(self.pyfunc(*call_args, **call_kwargs))
            if self.otypes:
                dtype = np.dtype(self.otypes[0])
                out = out.astype(dtype) if out.dtype != dtype else out
            return out

        size = int(np.prod(shape))
        if size == 0:
            if not self.otypes:
                raise ValueError(f"fnp.vectorize({name}): the arguments are empty, so there is "
                                 "no call to give the result's dtype; set otypes (NumPy's rule)")
            return np.zeros(shape, np.dtype(self.otypes[0]))
        try:
            out = api.vmap(one)(*flat)
        except ConcretizationError as e:
            if not all(getattr(a, "val", 0) is not None for a in flat if isinstance(a, Tracer)):
                raise ConcretizationError(
                    f"fnp.vectorize({name}): {name} needs the values of its arguments (a "
                    "Python branch or conversion on them), and they are traced here (jit or "
                    f"vmap); write {name} with functrans.numpy.where / functrans.lax.cond, or "
                    "call it outside jit"
                ) from e
            # The values are known: one call per element, each traced with its value.
            out = _shape.stack([one(*(f[i] for f in flat)) for i in range(size)])
        return _shape.reshape(out, shape + tuple(out.shape[1:]))
