"""``r_`` and ``c_``: NumPy's index-expression concatenation
(``fnp.r_[a, 0, 4:6]``), with traced pieces allowed.

Slices become ``arange``/``linspace`` constants and directive strings
(``"0,2"``) set the axis and rank, all statically; the pieces are then cast to
their common dtype and joined with ``concatenate``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.r_[np.array([1, 2]), 0, 4:6]
array([1, 2, 0, 4, 5])
"""

from __future__ import annotations

import builtins

import numpy as np

from functrans import dtypes
from functrans.core import get_aval
from functrans.numpy import _shape
from functrans.numpy._shape import _convert
from functrans.numpy._util import asarray

__all__ = ["r_", "c_"]


class _AxisConcatenator:
    """``r_`` and ``c_``: NumPy's index-expression concatenation, with traced
    pieces allowed (slices and directive strings are static)."""

    def __init__(self, axis: int = 0, ndmin: int = 1, trans1d: int = -1):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        key = key if isinstance(key, tuple) else (key,)
        objs, weak = [], []
        for k, item in enumerate(key):
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, np.complexfloating)):
                    obj = np.linspace(start, item.stop, num=int(builtins.abs(step)))
                else:
                    obj = np.arange(start, item.stop, step)
                if ndmin > 1:
                    obj = np.array(obj, copy=None, ndmin=ndmin)
                    if trans1d != -1:
                        obj = obj.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError(f"fnp.r_/c_: the directive {item!r} is entry {k}, but a "
                                     "directive string must come first, as in "
                                     "r_['0,2', a, b]")
                if item in ("r", "c"):
                    raise NotImplementedError("r_/c_: the matrix directives 'r' and 'c' are not "
                                              "supported; use plain arrays")
                try:
                    parts = [int(p) for p in item.split(",")]
                except ValueError:
                    raise ValueError(f"fnp.r_/c_: unknown directive {item!r}; a directive is "
                                     "'axis[,ndmin[,trans1d]]' in ints, e.g. '0,2'") from None
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
                continue
            elif type(item) in dtypes.PYTHON_SCALAR_DTYPES:
                objs.append(item)
                weak.append(True)
                continue
            else:
                obj = asarray(item)
                item_ndim = obj.ndim
                if item_ndim < ndmin:
                    obj = _shape.reshape(obj, (1,) * (ndmin - item_ndim) + tuple(obj.shape))
                    if trans1d != -1:
                        k2 = ndmin - item_ndim
                        k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                        order = list(range(ndmin))
                        obj = _shape.transpose(obj, order[:k1] + order[k2:] + order[k1:k2])
            objs.append(obj)
            weak.append(False)
        avals = [get_aval(o) for o in objs]
        final = dtypes.result_type(*avals)
        arrays = []
        for obj in objs:
            obj = asarray(obj)
            if obj.ndim < ndmin:
                obj = _shape.reshape(obj, (1,) * (ndmin - obj.ndim) + tuple(obj.shape))
            arrays.append(_convert(obj, final))
        return _shape.concatenate(arrays, axis=axis)

    def __len__(self):
        return 0


r_ = _AxisConcatenator(0)

c_ = _AxisConcatenator(-1, ndmin=2, trans1d=0)
