"""Low-level operations beyond NumPy's API: ``stop_gradient`` now; control flow
(``cond``, ``while_loop``, ``scan`` ...) joins it as those primitives land."""

from __future__ import annotations

from typing import Any

from functrans.tree_util import tree_map
from primitives.custom import stop_gradient_p

__all__ = ["stop_gradient"]


def stop_gradient(x: Any) -> Any:
    """``x`` unchanged, but with zero derivative under every transform.

    >>> import functrans as ft
    >>> ft.grad(lambda x: x * ft.lax.stop_gradient(x))(3.0)
    array(3.)
    """
    return tree_map(stop_gradient_p.bind, x)
