"""Dispatch of concrete arrays to backends, and value checks: the backend of
each array type (``device_backends``, ``host_backend``, loaded on first sight
through ``lazy_backends``), ``apply_impl`` (one primitive, eagerly),
``array_module``, ``plain_array`` and ``check_values`` (``debug_nans``).

``host_backend`` is set with ``set_host_backend`` and read as
``dispatch.host_backend``, so no module keeps a copy made before it was set.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from functrans import array_types, dtypes
from functrans.core import checks
from functrans.core.avals import ShapedArray
from functrans.core.context import Source, format_source, user_source
from functrans.core.primitives import Primitive

#: The backend of each array type other than ``numpy.ndarray`` (None: a value
#: NumPy handles, such as a Python scalar).  A backend has ``name``,
#: ``array_module()``, ``apply(prim, args, params)`` (one primitive, eagerly)
#: and ``run(closed, args)`` (a whole Jaxpr); ``functrans.backends.cupy``
#: registers ``cupy.ndarray`` when a CuPy array is first seen.
device_backends: dict[type, Any] = {}

#: The backend of NumPy arrays and Python scalars, set by
#: ``functrans.backends.numpy`` when it is imported (with ``functrans``).
host_backend: Any = None


def set_host_backend(backend: Any) -> None:
    """Make ``backend`` the backend of NumPy arrays and Python scalars."""
    global host_backend
    host_backend = backend


#: Loaders of the backends of array types from other libraries, by the
#: library's top-level module name (``"cupy"``): called on first sight of such
#: an array, so that importing functrans never imports CuPy.  Filled in by
#: ``functrans.backends``.
lazy_backends: dict[str, Callable[[], None]] = {}


def backend_of_type(t: type) -> Any:
    """The backend of arrays of type ``t``, or None for NumPy's."""
    try:
        return device_backends[t]
    except KeyError:
        pass
    load = lazy_backends.get(getattr(t, "__module__", "").partition(".")[0])
    if load is not None:
        load()  # registers its array types
    return device_backends.setdefault(t, None)


def array_module(values: Iterable[Any]) -> Any:
    """NumPy, or the array module (CuPy) of the device backend of one of
    ``values``: for impls that allocate arrays and work on either backend."""
    for x in values:
        if type(x) is not np.ndarray:
            backend = backend_of_type(type(x))
            if backend is not None:
                return backend.array_module()
    return np


def plain_array(x: np.ndarray) -> np.ndarray:
    """The ndarray subclass ``x`` as the plain ndarray functrans computes with
    (a memmap's view), or a TypeError naming the user's line, the type and
    what to pass instead (``array_types``)."""
    return array_types.plain(x, lambda: f"{format_source(user_source())}: an operand")


def apply_impl(prim: Primitive, args: Sequence[Any], params: dict):
    """Run ``prim``'s impl for the backend of its operands: NumPy's unless one
    of them is a device array.  An ndarray subclass is refused or taken as a
    plain ndarray (``plain_array``)."""
    for i, x in enumerate(args):
        t = type(x)
        if t is not np.ndarray:
            if isinstance(x, np.ndarray):
                args = [*args[:i], plain_array(x), *args[i + 1:]]
                continue
            backend = backend_of_type(t)
            if backend is not None:
                return backend.apply(prim, args, params)
    return prim.impl(*args, **params)


def check_values(prim: Primitive, outs: Sequence[Any], source: Source | None) -> None:
    """Raise ``FloatingPointError`` if a result of ``prim`` (made at ``source``)
    holds a NaN (``debug_nans``) or an infinity (``debug_infs``)."""
    nans, infs = checks.value_checks
    for x in outs:
        if isinstance(x, (float, complex)):
            x = np.asarray(x)
        dtype = getattr(x, "dtype", None)
        if dtype is None or not dtypes.is_inexact(dtype):
            continue
        xp = array_module((x,))
        for on, test, what, flag in ((nans, xp.isnan, "NaN", "debug_nans"),
                                     (infs, xp.isinf, "an infinity", "debug_infs")):
            bad = int(test(x).sum()) if on else 0
            if bad:
                aval = ShapedArray(tuple(x.shape), dtype)
                raise FloatingPointError(
                    f"{flag}: the primitive '{prim.name}' produced {what} ({bad} of "
                    f"{aval.size} elements of its {aval.str_short()} result) in "
                    f"{format_source(source)}. Check the operands there (a value outside "
                    f"the function's domain, a division by zero, an overflow); "
                    f"functrans.config.update('{flag}', False) turns the check off"
                )
