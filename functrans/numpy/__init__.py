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

# NumPy's constants, and its own scalar types, dtype class and dtype functions,
# so that code written for NumPy sees the same objects (``fnp.float32 is
# np.float32``).  A scalar type called on a traced value asks for its value, as
# it does in NumPy: ``x.astype(fnp.float32)`` and ``fnp.asarray(x,
# dtype=fnp.float32)`` cast traced values.  ``result_type``, ``can_cast`` and
# ``astype``, which take traced arrays, come from ``_dtype_functions``; the array
# API's inspection names from ``_array_api_info``.  NumPy's C type names
# (``intc``, ``double``, ...) are its own objects too.
from numpy import (
    bool,
    bool_,
    byte,
    cdouble,
    complex64,
    complex128,
    complexfloating,
    csingle,
    double,
    dtype,
    e,
    finfo,
    float16,
    float32,
    float64,
    floating,
    generic,
    half,
    iinfo,
    inexact,
    inf,
    int8,
    int16,
    int32,
    int64,
    int_,
    intc,
    integer,
    intp,
    isdtype,
    issubdtype,
    long,
    longlong,
    nan,
    ndarray,
    newaxis,
    number,
    pi,
    promote_types,
    short,
    signedinteger,
    single,
    ubyte,
    uint,
    uint8,
    uint16,
    uint32,
    uint64,
    uintc,
    uintp,
    ulong,
    ulonglong,
    unsignedinteger,
    ushort,
)

from functrans import dtypes as _dtypes
from functrans.numpy import (
    _array_api_info,
    _complex_numbers,
    _concatenators,
    _contract,
    _convolution,
    _creation,
    _differences,
    _dtype_functions,
    _elementwise,
    _elementwise_compositions,
    _functional,
    _histograms,
    _index_arithmetic,
    _indexing,
    _inplace,
    _matrices,
    _nan_reductions,
    _padding,
    _polynomials,
    _quantiles,
    _rearranging,
    _reductions,
    _samples,
    _searching,
    _sets,
    _shape,
    _sorting,
    _static_properties,
    _statistics,
    _ufunc_routes,
    fft,
    linalg,
    polynomial,
)
from functrans.numpy._array_api_info import *  # noqa: F403
from functrans.numpy._array_api_info import TRACE_DEVICE
from functrans.numpy._complex_numbers import *  # noqa: F403
from functrans.numpy._concatenators import *  # noqa: F403
from functrans.numpy._contract import *  # noqa: F403
from functrans.numpy._convolution import *  # noqa: F403
from functrans.numpy._creation import *  # noqa: F403
from functrans.numpy._differences import *  # noqa: F403
from functrans.numpy._dtype_functions import *  # noqa: F403
from functrans.numpy._elementwise import *  # noqa: F403
from functrans.numpy._elementwise_compositions import *  # noqa: F403
from functrans.numpy._functional import *  # noqa: F403
from functrans.numpy._histograms import *  # noqa: F403
from functrans.numpy._index_arithmetic import *  # noqa: F403
from functrans.numpy._indexing import *  # noqa: F403
from functrans.numpy._inplace import *  # noqa: F403
from functrans.numpy._matrices import *  # noqa: F403
from functrans.numpy._nan_reductions import *  # noqa: F403
from functrans.numpy._padding import *  # noqa: F403
from functrans.numpy._polynomials import *  # noqa: F403
from functrans.numpy._quantiles import *  # noqa: F403
from functrans.numpy._rearranging import *  # noqa: F403
from functrans.numpy._reductions import *  # noqa: F403
from functrans.numpy._samples import *  # noqa: F403
from functrans.numpy._searching import *  # noqa: F403
from functrans.numpy._sets import *  # noqa: F403
from functrans.numpy._shape import *  # noqa: F403
from functrans.numpy._sorting import *  # noqa: F403
from functrans.numpy._static_properties import *  # noqa: F403
from functrans.numpy._statistics import *  # noqa: F403

#: NOTE: aliases, not NumPy's extended precision: functrans computes in the
#: IEEE formats its backends share (NumPy, Numba, CUDA), so ``longdouble`` is
#: float64 and ``clongdouble`` complex128 here; code that asks for them gets
#: double precision.
longdouble = float64
clongdouble = complex128

__all__ = [
    "e", "inf", "nan", "ndarray", "newaxis", "pi",
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "intp", "uintp", "float16", "float32", "float64", "complex64", "complex128",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating",
    "byte", "ubyte", "short", "ushort", "intc", "uintc", "int_", "uint", "long", "ulong",
    "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble",
    "longdouble", "clongdouble",
    "dtype", "finfo", "iinfo", "isdtype", "issubdtype", "promote_types", "TRACE_DEVICE",
    *_contract.__all__, *_creation.__all__, *_elementwise.__all__, *_indexing.__all__,
    *_inplace.__all__, *_reductions.__all__, *_shape.__all__, *_dtype_functions.__all__,
    *_static_properties.__all__, *_complex_numbers.__all__, *_elementwise_compositions.__all__,
    *_rearranging.__all__, *_padding.__all__, *_concatenators.__all__, *_matrices.__all__,
    *_differences.__all__, *_sorting.__all__, *_array_api_info.__all__, *_searching.__all__,
    *_sets.__all__, *_quantiles.__all__, *_nan_reductions.__all__,
    *_statistics.__all__, *_convolution.__all__, *_samples.__all__,
    *_polynomials.__all__, *_histograms.__all__, *_index_arithmetic.__all__,
    *_functional.__all__, "fft", "linalg",
    "polynomial",
]  # fmt: skip

#: SciPy's special functions that functrans implements, where SciPy's array
#: API code looks for them in an array namespace (``xp.special.erf``).
special = _ufunc_routes.UfuncExtension("scipy.special")



def __getattr__(name: str):
    # ``fnp.bfloat16`` is ml_dtypes' type, loaded on first use: ml_dtypes is an
    # optional dependency and ``import functrans`` never loads it.
    if name == "bfloat16":
        return _dtypes.bfloat16_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Last: the tracer behaviour forwards to the functions above.
from functrans.numpy import _array_methods  # noqa: E402

_array_methods.install()
