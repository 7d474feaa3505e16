"""The reference backend: run a Jaxpr on NumPy arrays, by interpreting it or
by generating straight-line Python code that calls NumPy.

A package of rooms, each named for what it holds: ``interpreter`` (walk the
equations), ``codegen`` (generate and cache the code), ``calls`` (what each
equation calls), ``ownership`` (which outputs may share memory), ``buffers``
(arrays the code writes into, the scratch pool), ``pad_sums`` (a peephole of
the generated code), ``line_tables`` (generated code at the user's lines),
``parts`` (a long program compiled a part at a time) and ``backend``
(``HostBackend``, registered with ``core`` on import).  This face
re-exports the names other modules use.
"""

from functrans.backends.numpy.backend import HostBackend
from functrans.backends.numpy.buffers import ScratchPool, scratch
from functrans.backends.numpy.codegen import (
    Compiled,
    compiled,
    compiled_body,
    compiled_consuming,
    generate_source,
)
from functrans.backends.numpy.interpreter import as_array, eval_jaxpr, interpret
from functrans.backends.numpy.ownership import (
    copied,
    output_sources,
    owned,
    owned_outputs,
    shared_results,
)
from functrans.backends.numpy.parts import Parts
from functrans.passes.dce import last_uses

__all__ = [
    "Compiled",
    "HostBackend",
    "Parts",
    "ScratchPool",
    "as_array",
    "compiled",
    "compiled_body",
    "compiled_consuming",
    "copied",
    "eval_jaxpr",
    "generate_source",
    "interpret",
    "last_uses",
    "output_sources",
    "owned",
    "owned_outputs",
    "scratch",
    "shared_results",
]
