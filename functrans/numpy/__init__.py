"""NumPy's API on top of the functrans primitives.

Every function takes NumPy's arguments and gives NumPy's results (broadcasting,
NumPy 2 dtype promotion, 0-d arrays for 0-d results).  On plain arrays it
runs eagerly and returns ``numpy.ndarray``; on tracers it records primitives,
so it is differentiable, batchable and jittable.  ``_array_methods`` gives
tracers their array behaviour (operators, methods, indexing, ``.at``,
``__array_ufunc__``/``__array_function__``) from the same functions.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.sum(fnp.sin(np.zeros((2, 3))), axis=1)
array([0., 0.])
"""

from numpy import e, inf, nan, ndarray, newaxis, pi

from functrans.numpy import (
    _contract,
    _creation,
    _elementwise,
    _extra,
    _indexing,
    _reductions,
    _shape,
    linalg,
)
from functrans.numpy._contract import *  # noqa: F403
from functrans.numpy._creation import *  # noqa: F403
from functrans.numpy._elementwise import *  # noqa: F403
from functrans.numpy._extra import *  # noqa: F403  (scalar types that also cast)
from functrans.numpy._indexing import *  # noqa: F403
from functrans.numpy._reductions import *  # noqa: F403
from functrans.numpy._shape import *  # noqa: F403

__all__ = [
    "e", "inf", "nan", "ndarray", "newaxis", "pi",
    *_contract.__all__, *_creation.__all__, *_elementwise.__all__, *_indexing.__all__,
    *_reductions.__all__, *_shape.__all__, *_extra.__all__, "linalg",
]  # fmt: skip

# Last: the tracer behaviour forwards to the functions above.
from functrans.numpy import _array_methods  # noqa: E402

_array_methods.install()
