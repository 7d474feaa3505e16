"""The reductions the native tier folds into its loops, by primitive name:
the NumPy ufunc that combines each one's terms, and the value its
accumulator starts from (``identity``).

A table keyed by names rather than a column of the reductions'
declarations, as ``interpreters/structured.py`` keeps its band rules: it is
read by one opt-in consumer with a complete fallback (a reduction it does
not list, or lists but cannot compute bit for bit for the dtypes at hand,
stays a NumPy call in the NumPy tier, which runs every declaration's impl),
so no primitive has to declare anything for the native tier to be right;
and most of what decides a lowering is the tier's own knowledge (which of
NumPy's loops Numba computes alike, in which order NumPy sums), written in
``reductions.py`` and ``loop_reductions.py`` beside the code that relies on
it.  The elementwise primitives need no table: their lowering is the ufunc
their declaration's ``numpy_fn`` or ``numpy_kernel`` column gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Reductions that combine their terms with a NumPy ufunc.
UFUNCS = {"reduce_sum": np.add, "reduce_prod": np.multiply, "reduce_max": np.maximum,
          "reduce_min": np.minimum}
#: ``all`` and ``any``: the terms' truth values combined with a logical ufunc.
LOGICAL = {"reduce_and": np.logical_and, "reduce_or": np.logical_or}
#: Reductions to the position of an extreme along one axis.
ARG = frozenset({"argmax", "argmin"})
#: The reductions ``reductions.fold_reductions`` may put last in a group.
FOLDED = frozenset((*UFUNCS, *LOGICAL, *ARG))


def identity(name: str, dtype: np.dtype) -> Any:
    """The value the accumulator of reduction ``name`` (one of ``UFUNCS`` or
    ``LOGICAL``) starts from for a result of ``dtype``: 0 for sums, 1 for
    products, True for ``all``, False for ``any``, and for maxima and
    minima of integers and bools the dtype's least and greatest values."""
    if name == "reduce_sum":
        return 0
    if name == "reduce_prod":
        return 1
    if name in LOGICAL:
        return name == "reduce_and"
    if dtype.kind == "b":
        return name == "reduce_min"
    info = np.iinfo(dtype)
    return info.min if name == "reduce_max" else info.max
