"""Backends evaluate Jaxprs on concrete arrays: ``numpy`` (the reference, always
there) and ``cupy`` for NVIDIA GPUs (loaded when CuPy arrays first appear),
whose CUDA code ``cuda`` generates without needing CuPy or a GPU."""
