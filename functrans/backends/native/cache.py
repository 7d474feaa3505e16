"""Native kernels by source: in memory, and in Numba's on-disk cache in a
folder (``functrans.config.native_cache_dir``), where each kernel's source
is written as a module so that Numba can keep its machine code beside it."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import warnings
from typing import Any

_kernels: dict[tuple[str, str], Any] = {}  # (source, cache folder) -> Numba dispatcher
_kernels_lock = threading.Lock()


def _load(source: str, folder: str) -> Any:
    """The Numba dispatcher of ``source``, from memory, from the on-disk
    cache in ``folder`` ("" for none), or newly made.  With the disk cache
    on, the source is written to a file in the folder (named by its hash)
    and imported from there, which is what lets Numba cache the machine code
    beside it."""
    key = (source, folder)
    with _kernels_lock:
        found = _kernels.get(key)
        if found is not None:
            return found
        digest = hashlib.sha256(source.encode()).hexdigest()[:24]
        namespace = None
        if folder:
            try:
                namespace = _import_kernel(source, folder, digest)
            except OSError as e:  # an unwritable folder: the kernel still runs, uncached
                warnings.warn(f"functrans: native kernels are not cached on disk: {e}; set "
                              "functrans.config.native_cache_dir (FUNCTRANS_NATIVE_CACHE_DIR) "
                              "to a writable folder, or to '' to keep them in memory",
                              RuntimeWarning, stacklevel=2)
        if namespace is None:
            namespace = {"__name__": f"functrans_native_{digest}"}
            text = source.replace("cache=CACHE", "cache=False")
            exec(compile(text, f"<functrans native {digest}>", "exec"), namespace)
        _kernels[key] = namespace["kernel"]
        return namespace["kernel"]


def _load_compiled(source: str, folder: str, signature: tuple) -> tuple[Any, float]:
    """The dispatcher of ``source`` (see ``_load``) compiled for
    ``signature``, and the seconds that took (about 0 when both were
    cached)."""
    start = time.perf_counter()
    kernel = _load(source, folder)
    if signature not in kernel.overloads:
        kernel.compile(signature)
    return kernel, time.perf_counter() - start


def _import_kernel(source: str, folder: str, digest: str) -> dict:
    """The namespace of ``source`` written to ``folder`` and imported."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"ftk_{digest}.py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source.replace("cache=CACHE", "cache=True"))
        os.replace(tmp, path)  # atomic: other processes see all of it or nothing
    spec = importlib.util.spec_from_file_location(f"functrans_native_{digest}", path)
    if spec is None or spec.loader is None:
        raise OSError(f"cannot import the kernel file {path}")
    module = importlib.util.module_from_spec(spec)
    # Numba's cache finds the kernel's globals again by module name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return vars(module)
