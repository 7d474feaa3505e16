"""Sparse derivatives: sparsity patterns found from the program, colourings,
and Jacobians and Hessians as ``scipy.sparse`` CSR arrays (docs/sparse.md).

>>> import functrans.sparse as fsp

Inputs of any shape are raveled in C order (several ``argnums``: concatenated
in order); a Jacobian's rows are the output raveled.  SciPy is required (the
``scipy`` extra); ``import functrans`` does not import this package.
"""

try:
    import scipy.sparse  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised with SciPy hidden
    raise ImportError(
        "functrans.sparse needs SciPy, which is not installed: pip install functrans[scipy]"
    ) from err

from functrans.sparse._api import (  # noqa: E402
    SparseDerivative,
    SparsePlan,
    hessian,
    hessian_sparsity,
    jacobian,
    jacobian_sparsity,
    spy,
)
from functrans.sparse._colouring import column_colouring, hessian_colouring  # noqa: E402

__all__ = [
    "SparseDerivative",
    "SparsePlan",
    "column_colouring",
    "hessian",
    "hessian_colouring",
    "hessian_sparsity",
    "jacobian",
    "jacobian_sparsity",
    "spy",
]
