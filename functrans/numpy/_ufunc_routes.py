"""Where a ufunc that is not NumPy's own goes when it meets a traced array.

NumPy's ufuncs (``np.sin``) reach ``functrans.numpy`` by name in
``_array_methods``.  Other libraries make ufuncs too: SciPy's special
functions (``scipy.special.expit``, ``gammaln``, ``xlogy`` ...) are ufuncs
whose ``__array_ufunc__`` dispatch lands on a tracer exactly as ``np.sin``
does.  Their names are no guide to ``functrans.numpy`` (a library may name a
different function ``sin``), so they are routed only by the table below, to
the functrans function that implements each one.

A foreign ufunc carries no ``__module__``; its library is found by identity
in the libraries already imported (the ufunc came from one of them), so
routing imports no library: ``import functrans`` never imports SciPy.  The
functrans modules of the table sit above ``functrans.numpy`` in the layers
(``functrans.scipy``), so they are named here and imported on first use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

#: For each library whose ufuncs functrans implements: the functrans module of
#: its own functions, and each routed ufunc's functrans function as
#: ``"module:name"`` (a ufunc that has a NumPy twin goes to functrans.numpy's).
_ROUTES: dict[str, tuple[str, dict[str, str]]] = {
    "scipy.special": ("functrans.scipy.special", {
        name: f"functrans.scipy.special:{name}"
        for name in ("expit", "logit", "log_expit", "erf", "erfc", "ndtr", "erfinv", "gammaln",
                     "psi", "digamma", "xlogy", "xlog1py", "entr")
    } | {
        name: f"functrans.numpy:{name}" for name in ("cbrt", "exp2", "expm1", "log1p", "round")
    }),
}  # fmt: skip


def library_of(ufunc: np.ufunc) -> str | None:
    """The module a ufunc is public in: ``"numpy"`` for NumPy's, the library's
    module for one of the table's libraries, else None (unknown)."""
    module = getattr(ufunc, "__module__", None)
    if module is not None:
        return module
    for library in _ROUTES:
        loaded = sys.modules.get(library)
        if loaded is not None and _public_ufunc(loaded, ufunc.__name__) is ufunc:
            return library
    return None


def _public_ufunc(module: Any, name: str) -> np.ufunc | None:
    """``module.name`` as a ufunc: the ufunc itself, or the one a wrapper
    wraps (with ``SCIPY_ARRAY_API=1`` SciPy's special functions are wrappers
    around their ufuncs that choose an implementation by array namespace)."""
    f = getattr(module, name, None)
    f = getattr(f, "__wrapped__", f)
    return f if isinstance(f, np.ufunc) else None


class UfuncExtension:
    """A library's ufuncs that functrans implements, as an attribute of
    ``functrans.numpy``: ``functrans.numpy.special`` holds SciPy's special
    functions, the array API's planned ``special`` extension.  SciPy (with
    ``SCIPY_ARRAY_API=1``) looks for ``xp.special.<name>`` in the namespace of
    the arrays it is given before it converts arrays it does not know with
    ``np.asarray``; here it finds the function ``Tracer.__array_ufunc__``
    would run, inputs cast to the ufunc's loop, so dtypes are the ufunc's.
    A name functrans does not implement is missing (AttributeError), and
    SciPy takes its own next way."""

    def __init__(self, library: str):
        self._library = library

    def __getattr__(self, name: str) -> Callable:
        loaded = sys.modules.get(self._library)
        ufunc = None if loaded is None else _public_ufunc(loaded, name)
        target = None if ufunc is None else foreign_target(ufunc)
        if target is None:
            raise AttributeError(f"functrans implements no ufunc {self._library}.{name}")
        return target

    def __repr__(self) -> str:
        return f"<functrans.numpy's {self._library} ufuncs>"


def label(ufunc: np.ufunc) -> str:
    """How error messages name a ufunc: ``numpy.sin``, ``scipy.special.gamma``."""
    library = library_of(ufunc)
    return f"{library}.{ufunc.__name__}" if library else f"the ufunc {ufunc.__name__}"


def foreign_target(ufunc: np.ufunc) -> Callable | None:
    """The functrans function that computes a non-NumPy ufunc as the ufunc
    does (inputs cast to its loop's dtypes first), or None."""
    library = library_of(ufunc)
    target = _ROUTES.get(library or "", ("", {}))[1].get(ufunc.__name__)
    if target is None:
        return None
    module, name = target.split(":")
    fn = getattr(importlib.import_module(module), name)

    def call(*inputs: Any) -> Any:
        return fn(*_cast_to_loop(ufunc, inputs))

    call.__name__ = name
    return call


_PYTHON_SCALARS = (bool, int, float, complex)


def _cast_to_loop(ufunc: np.ufunc, inputs: tuple) -> list:
    """The inputs converted to the dtypes of the loop the ufunc would run
    (``gammaln`` of float16 computes in float32, of int64 in float64), so the
    result has the ufunc's dtype; Python scalars stay weak, as NumPy keeps them."""
    inputs = tuple(x if type(x) in _PYTHON_SCALARS or hasattr(x, "dtype") else np.asarray(x)
                   for x in inputs)
    dtypes = [type(x) if type(x) in _PYTHON_SCALARS else np.dtype(x.dtype) for x in inputs]
    try:
        loop = ufunc.resolve_dtypes((*dtypes, *[None] * ufunc.nout))
    except TypeError as e:
        raise TypeError(
            f"{label(ufunc)} has no loop for inputs of dtypes "
            f"{', '.join(getattr(d, '__name__', str(d)) for d in dtypes)}: {e}"
        ) from None
    return [x if type(x) in _PYTHON_SCALARS or x.dtype == dt else x.astype(dt)
            for x, dt in zip(inputs, loop)]


def missing_message(ufunc: np.ufunc) -> str:
    """The error for a non-NumPy ufunc functrans does not implement: its real
    module and what functrans offers instead."""
    library = library_of(ufunc)
    if library in _ROUTES:
        module, routes = _ROUTES[library]
        offered = ", ".join(sorted(n for n, t in routes.items() if t.startswith(module)))
        return (
            f"{library}.{ufunc.__name__} was applied to a traced array, but functrans "
            f"implements only these {library} ufuncs: {offered} ({module}); write "
            f"{ufunc.__name__} with functrans.numpy and {module} functions, or keep its "
            "argument out of the transformed computation"
        )
    where = f"{library}.{ufunc.__name__}" if library else (
        f"the ufunc {ufunc.__name__} (not NumPy's, from a library functrans does not know)")
    return (
        f"{where} was applied to a traced array, but functrans has no implementation of it; "
        "write it with functrans.numpy functions (or functrans.scipy.special ones), or "
        "keep its argument out of the transformed computation"
    )
