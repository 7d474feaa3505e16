"""functrans: trace pure NumPy-style functions into Jaxprs and transform them.

>>> import functrans as ft
>>> import functrans.numpy as fnp
"""

import importlib.util as _importlib_util
import sys as _sys
from pathlib import Path as _Path


def _map_the_checkouts_primitives() -> None:
    """Run from a source checkout, load its top-level ``primitives/`` folder as
    ``functrans.primitives``, as the installer maps it.

    Python finds the checkout's ``functrans/`` before any installed copy when it
    runs from the repository root (``python -m functrans`` puts the current
    folder first), and that folder has no ``primitives`` inside.  An installed
    package has its own ``functrans/primitives/`` and is left alone.
    """
    here = _Path(__file__).resolve().parent
    folder = here.parent / "primitives"
    if (here / "primitives").is_dir() or not (folder / "__init__.py").is_file():
        return
    spec = _importlib_util.spec_from_file_location(
        "functrans.primitives", folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        return
    module = _importlib_util.module_from_spec(spec)
    _sys.modules[spec.name] = module
    spec.loader.exec_module(module)


_map_the_checkouts_primitives()

from functrans import (  # noqa: F401,E402,I001
    core,  # noqa: F401  (first: everything stands on it)
    primitives,  # registers the primitive set
    backends,  # registers the NumPy backend and the lazy CuPy one
    numpy,
    tree_util,
)
from functrans.api import (  # noqa: E402
    ShapeDtypeStruct,
    eval_shape,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from functrans.custom_derivatives import checkpoint, custom_jvp, custom_vjp  # noqa: E402
from functrans.devices import device_put, devices  # noqa: E402
from functrans.jit import disable_jit, jit  # noqa: E402
from functrans import config, debug  # noqa: E402,I001  (debug.print, config.debug_nans ...)

__all__ = [
    "ShapeDtypeStruct",
    "checkpoint",
    "config",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "device_put",
    "devices",
    "disable_jit",
    "distributed",
    "eval_shape",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linear_transpose",
    "linearize",
    "make_jaxpr",
    "numpy",
    "optimize",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    # functrans.sparse needs SciPy, an optional dependency: loaded on first use.
    if name == "sparse":
        import importlib

        return importlib.import_module("functrans.sparse")
    # functrans.optimizers and functrans.optimize: loaded on first use, as they
    # are not needed to trace (optimize alone took 15-38 ms of the import).
    if name in ("optimizers", "optimize"):
        import importlib

        return importlib.import_module(f"functrans.{name}")
    # functrans.lax (and with it the control-flow primitives) and
    # functrans.distributed: loaded on first use, as plain tracing needs neither.
    if name in ("lax", "distributed"):
        import importlib

        return importlib.import_module(f"functrans.{name}")
    raise AttributeError(f"module 'functrans' has no attribute {name!r}")
