"""Backends evaluate Jaxprs on concrete arrays: ``numpy`` (the reference, always
there) and, once it lands, ``cupy`` for NVIDIA GPUs."""
