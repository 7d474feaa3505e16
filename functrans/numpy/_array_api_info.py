"""The array API standard's inspection side: ``__array_api_version__``,
``__array_namespace_info__`` (devices, dtypes, capabilities) and the devices
that ``device=`` arguments accept.

functrans computes where its inputs are (``functrans.devices``): NumPy
arrays on the CPU, CuPy arrays on the GPU.  The devices are the strings
``"cpu"`` and ``"gpu"``, NumPy's own name for its device being ``"cpu"``.  A
traced array has no device of its own: one Jaxpr runs on either device, so
``tracer.device`` is ``TRACE_DEVICE``, which every ``device=`` argument
accepts: an array created there is a constant of the trace (a tracer), as
array API code expects of an array made "on the device of ``x``".

>>> import functrans.numpy as fnp
>>> info = fnp.__array_namespace_info__()
>>> info.default_dtypes()["real floating"], info.default_device()
(dtype('float64'), 'cpu')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from functrans.core import current_trace
from functrans.devices import device_of, device_put, devices

__all__ = ["__array_api_version__", "__array_namespace_info__"]

#: The version of the Python array API standard that functrans.numpy follows.
__array_api_version__ = "2024.12"


class _TraceDevice:
    """The device of a traced array: wherever the traced computation runs
    (a Jaxpr is not tied to a device; its inputs decide when it is run)."""

    def __repr__(self) -> str:
        return "functrans.numpy.TRACE_DEVICE"

    def __reduce__(self) -> str:
        return "TRACE_DEVICE"


TRACE_DEVICE = _TraceDevice()

_DEVICE_NAMES = ("cpu", "gpu")


def normalize_device(name: str, device: Any) -> str | None:
    """``device`` as ``"cpu"``, ``"gpu"`` or None (where the inputs are, which
    ``TRACE_DEVICE`` also means); a CuPy device counts as ``"gpu"``.  Anything
    else is refused with the devices there are."""
    if device is None or device is TRACE_DEVICE:
        return None
    if isinstance(device, str) and device in _DEVICE_NAMES:
        return device
    if type(device).__module__.partition(".")[0] == "cupy":
        return "gpu"
    raise ValueError(
        f"{name}: device={device!r} is not a functrans device; use 'cpu', 'gpu', None, "
        "or the .device of an array (functrans.numpy.__array_namespace_info__().devices() "
        "lists those of this machine)"
    )


def place(name: str, x: Any, device: Any) -> Any:
    """The concrete array ``x`` on ``device``: None leaves it where it is;
    ``TRACE_DEVICE`` (a traced array's ``.device``) makes it a constant of the
    innermost active trace, so that array API code creating arrays "on the
    device of ``x``" gets arrays of ``x``'s namespace, as with JAX, instead of
    NumPy arrays that array API code would refuse to mix with tracers."""
    if device is TRACE_DEVICE:
        trace = current_trace()
        return x if trace is None else trace.constant(np.asarray(x))
    target = normalize_device(name, device)
    if target is None or target == device_of(x):
        return x
    return device_put(x, target)


def _dtype_table() -> dict[str, np.dtype]:
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "float32", "float64", "complex64", "complex128"]  # fmt: skip
    return {n: np.dtype(n) for n in names}


class ArrayNamespaceInfo:
    """What ``functrans.numpy.__array_namespace_info__()`` returns: the
    devices, default dtypes, dtypes and capabilities of the namespace."""

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are reported missing:
        they work on arrays and on tracers that carry values, but not under
        ``jit``, whose tracers have none.  Array API libraries read these
        flags to pick code that traces (SciPy's ``apply_where`` uses ``where``
        instead of boolean-mask writes, as it does for JAX)."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> str:
        """``"cpu"``: NumPy arrays are made unless a ``device=`` says otherwise."""
        return "cpu"

    def devices(self) -> list[str]:
        """The devices of this machine: ``["cpu"]``, or ``["cpu", "gpu"]``
        when CuPy sees a GPU."""
        return devices()

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """NumPy's defaults on every device: float64, complex128, int64 (intp)."""
        normalize_device("default_dtypes", device)
        return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.intp), "indexing": np.dtype(np.intp)}  # fmt: skip

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The standard's dtypes, by name, of ``kind`` (None: all; a kind name
        of ``isdtype``, or a tuple of them: their union)."""
        normalize_device("dtypes", device)
        table = _dtype_table()
        if kind is None:
            return table
        return {n: d for n, d in table.items() if np.isdtype(d, kind)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The inspection object of the array API standard.

    >>> __array_namespace_info__().dtypes(kind="real floating")
    {'float32': dtype('float32'), 'float64': dtype('float64')}
    """
    return ArrayNamespaceInfo()
