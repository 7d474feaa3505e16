"""Helpers for testing code written with functrans.

``check_grads`` compares a function's derivatives, to any order, against
finite differences and against each other.  ``functrans.testing.strategies``
holds hypothesis strategies for arrays, shapes, dtypes and pytrees of arrays,
for property-based tests of your own functions.  It is a submodule, imported
on its own (``from functrans.testing import strategies``), so that importing
functrans never imports hypothesis.
"""

from functrans.testing._check_derivatives import Checked, check_derivatives
from functrans.testing._check_grads import check_grads

__all__ = ["Checked", "check_derivatives", "check_grads"]
