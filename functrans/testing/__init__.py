"""Helpers for testing code written with functrans (docs/testing.md).

``check_derivatives`` checks everything the transforms promise for a
function at a point; ``check_grads`` is its one-point subset with JAX's
signature (finite differences and forward against reverse mode).
``kink_distance`` says how close a point is to where a function's derivative
is not defined.  ``functrans.testing.strategies`` holds hypothesis strategies
for arrays, pytrees, points shaped like an example and well-conditioned
matrices, and ``derivative_test`` makes a property-based derivative test of
one line.  Those two import hypothesis, so they load only when used:
importing functrans or this package never imports it.
"""

from typing import Any

from functrans.testing._check_derivatives import Checked, check_derivatives
from functrans.testing._check_grads import check_grads
from functrans.testing._kinks import kink_distance

__all__ = ["Checked", "check_derivatives", "check_grads", "derivative_test", "kink_distance"]


def __getattr__(name: str) -> Any:
    # derivative_test needs hypothesis, an optional dependency: loaded on use.
    if name == "derivative_test":
        from functrans.testing._property_tests import derivative_test  # noqa: PLC0415

        return derivative_test
    raise AttributeError(f"module 'functrans.testing' has no attribute {name!r}")
