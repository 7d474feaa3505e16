"""Devices: ``device_put`` moves pytrees of arrays between the CPU (NumPy)
and the GPU (CuPy), ``devices`` lists what this machine has.

Computation follows its inputs: NumPy arrays in, NumPy arrays out; CuPy
arrays in, CuPy arrays out.  functrans never copies a GPU array to the host
on its own, and refuses to mix GPU and CPU arrays (other than scalars) in
one call: ``check_devices`` names both arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from functrans import array_types, core
from functrans.core import Tracer
from functrans.errors import DeviceError
from functrans.tree_util import keystr, tree_flatten_with_path, tree_map, tree_unflatten

__all__ = ["device_of", "device_put", "devices"]

DEVICES = ("cpu", "gpu")


def is_device_array(x: Any) -> bool:
    """True for an array of a device backend (a CuPy array); never imports CuPy."""
    t = type(x)
    return t is not np.ndarray and core.backend_of_type(t) is not None


def device_of(x: Any) -> str:
    """``"gpu"`` for a CuPy array, ``"cpu"`` for anything else."""
    return "gpu" if is_device_array(x) else "cpu"


def devices() -> list[str]:
    """The devices functrans can compute on here: ``"cpu"``, and ``"gpu"``
    when CuPy is installed and sees a CUDA GPU.

    >>> import functrans as ft
    >>> ft.devices()[0]
    'cpu'
    """
    from functrans.backends import cupy as gpu  # loaded for GPU work only

    try:
        import importlib.util

        if importlib.util.find_spec("cupy") is None:
            return ["cpu"]
    except (ImportError, ValueError):
        return ["cpu"]
    return ["cpu", "gpu"] if gpu.gpu_available() else ["cpu"]


def device_put(x: Any, device: str = "cpu") -> Any:
    """``x`` (a pytree of arrays and scalars) with every leaf on ``device``:
    ``"gpu"`` gives CuPy arrays, ``"cpu"`` NumPy arrays.  Leaves already
    there are returned as they are; traced values are left alone.

    >>> import functrans as ft, numpy as np
    >>> ft.device_put({"w": np.ones(2)}, "cpu")
    {'w': array([1., 1.])}
    """
    if device not in DEVICES:
        raise DeviceError(
            f"device_put: unknown device {device!r}; use 'cpu' or 'gpu' (see "
            "functrans.devices())"
        )
    x = _plain_leaves(x)
    if device == "gpu":
        from functrans.backends import cupy as gpu  # loaded for GPU work only

        cp = gpu.require_gpu("device_put(x, 'gpu')")

        def put(leaf):
            if isinstance(leaf, Tracer) or gpu.is_device_array(leaf):
                return leaf
            return cp.asarray(leaf)

        return tree_map(put, x)

    def get(leaf):
        if isinstance(leaf, Tracer):
            return leaf
        if is_device_array(leaf):
            return leaf.get()
        return np.asarray(leaf)

    return tree_map(get, x)


def _plain_leaves(x: Any) -> Any:
    """``x`` with each memmap leaf as the plain array viewing its buffer; a
    masked array, a matrix or another refused ndarray subclass is a
    TypeError (``array_types``), where np.asarray and cp.asarray would drop
    its mask or its semantics silently."""
    paths, leaves, tree = tree_flatten_with_path(x)
    if all(type(leaf) is np.ndarray or not isinstance(leaf, np.ndarray) for leaf in leaves):
        return x
    plain = []
    for path, leaf in zip(paths, leaves):
        if isinstance(leaf, np.ndarray):
            leaf = array_types.plain(leaf, f"device_put: x{keystr(path)}")
        plain.append(leaf)
    return tree_unflatten(tree, plain)


def _is_host_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.ndim > 0 and not is_device_array(x)


def _where(what: str, path: tuple, call: bool | str) -> str:
    if call == "args":  # the tree is the positional arguments
        return f"{what}{path[0]}{keystr(path[1:])}"
    if not call:
        return f"{what}{keystr(path)}"
    head, rest = path[0], keystr(path[2:])  # the tree is (args, kwargs)
    return f"{what}{path[1]}{rest}" if head == 0 else f"{what}{path[1]!r}{rest}"


def check_devices(label: str, what: str, tree: Any, leaves: list,
                  call: bool | str = False) -> str:
    """The device of a call's array leaves (``"gpu"`` if any is a CuPy
    array); a DeviceError naming two arguments when GPU arrays meet NumPy
    arrays (NumPy scalars and 0-d arrays may go with either).  With
    ``call=True``, ``tree`` is ``(args, kwargs)``; with ``call="args"``, the
    positional arguments."""
    on_gpu = False
    for x in leaves:
        if type(x) is not np.ndarray and is_device_array(x):
            on_gpu = True
            break
    if not on_gpu:
        return "cpu"
    if any(_is_host_array(x) for x in leaves):
        paths, flat, _ = tree_flatten_with_path(tree)
        gpu_path = next(p for p, x in zip(paths, flat) if is_device_array(x))
        cpu_path = next(p for p, x in zip(paths, flat) if _is_host_array(x))
        gpu_leaf = next(x for x in flat if is_device_array(x))
        cpu_leaf = next(x for x in flat if _is_host_array(x))
        raise DeviceError(
            f"{label}: {_where(what, gpu_path, call)} is a CuPy array "
            f"{core.get_aval(gpu_leaf).str_short()} on the GPU but "
            f"{_where(what, cpu_path, call)} "
            f"is a NumPy array {core.get_aval(cpu_leaf).str_short()} on the CPU; put them on "
            "one device with functrans.device_put(x, 'gpu') (or 'cpu')"
        )
    return "gpu"
