"""The primitive set of functrans, installed as ``functrans.primitives``: each
primitive declared once with all of its rules, one module per family.
Importing this package registers them all in ``functrans.core.registry``."""

from functrans.primitives import (  # noqa: F401
    collectives,
    control_flow,
    custom,
    debugging,
    elementwise,
    fused,
    indexing,
    linalg,
    recorded_loop,
    reductions,
    shape,
    sort,
    special,
)
