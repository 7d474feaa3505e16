"""The primitive set of functrans, installed as ``functrans.primitives``: each
primitive declared once with all of its rules, one module per family.
Importing this package registers them in ``functrans.core.registry``; the
control-flow family (``cond``, ``while_loop``, ``scan`` and the recorded loops,
with the sub-program machinery they share) is imported on first use:
``functrans.lax`` imports it, and so does the first read of the registry."""

from functrans.primitives import (  # noqa: F401
    banded,
    collectives,
    custom,
    debugging,
    elementwise,
    fused,
    indexing,
    linalg,
    reductions,
    shape,
    sort,
    special,
)

from functrans import core

#: Loaded on first use: about a tenth of ``import functrans`` beyond NumPy.
_ON_DEMAND = ("control_flow", "recorded_loop", "_subjaxpr")
core.load_primitives_on_demand(*(f"functrans.primitives.{m}" for m in _ON_DEMAND))


def __getattr__(name: str):
    if name in _ON_DEMAND:
        import importlib

        return importlib.import_module(f"functrans.primitives.{name}")
    raise AttributeError(f"module 'functrans.primitives' has no attribute {name!r}")
