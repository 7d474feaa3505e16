"""The primitive set of functrans: each primitive declared once with all of its
rules, one module per family.  Importing this package registers them all in
``functrans.core.registry``."""

import functrans  # noqa: F401,I001  (first: importing primitives on its own then works too)
from primitives import (  # noqa: F401
    control_flow,
    custom,
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
