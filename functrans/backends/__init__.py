"""Backends evaluate Jaxprs on concrete arrays: ``numpy`` (the reference, always
there) and ``cupy`` for NVIDIA GPUs (loaded when CuPy arrays first appear),
whose CUDA code ``cuda`` generates without needing CuPy or a GPU."""

from functrans import core


def _load_cupy() -> None:
    # CuPy is optional: its backend (and CuPy itself) load on first sight of
    # one of its arrays, never with ``import functrans``.
    from functrans.backends import cupy  # noqa: F401  (registers cupy.ndarray)


core.lazy_backends.update(cupy=_load_cupy, cupyx=_load_cupy)

from functrans.backends import numpy  # noqa: E402,F401,I001  (registers the host backend)
