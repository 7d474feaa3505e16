"""Which NumPy arrays functrans computes with: ``numpy.ndarray``, and
``numpy.memmap`` as the plain buffer it is; every other ndarray subclass is
refused, since functrans computes with plain arrays and would silently drop
what the subclass changes (``np.matrix``'s ``*``, a masked array's mask, a
record array's fields, a unit).  The transforms' argument checks
(``_api_util``), ``device_put`` and eager dispatch and tracing (``core``)
call ``plain``;
docs/subclasses.md gives the table.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from functrans.dtypes import float0

#: Why each refused well-known subclass is refused, and what to pass instead
#: (the argument is called ``x`` in the fix).  Looked up along the type's MRO,
#: so that subclasses of these (``np.ma.mrecords.MaskedRecords``) get their
#: base's reason.
_REASONS: dict[type, str] = {
    np.matrix: (
        "np.matrix changes NumPy's semantics (* and ** are matrix products, reductions and "
        "indexing stay 2-D), which functrans does not implement; pass np.asarray(x) and write "
        "@ for a matrix product"
    ),
    np.ma.MaskedArray: (
        "functrans does not implement masked arrays and would compute with the values under "
        "the mask; apply the mask explicitly: pass x.filled(v) with a value v that is neutral "
        "for the computation (0 for a sum), or pass x.data and np.ma.getmaskarray(x) and use "
        "fnp.where on the mask"
    ),
    np.recarray: (
        "record arrays hold records, not numbers; pass each field as its own array (x['name'] "
        "or np.asarray(x.name))"
    ),
}


def refusal(x: np.ndarray) -> str | None:
    """Why functrans refuses the ndarray (or ndarray subclass) ``x``, with the
    fix, or None when it computes with it: a plain ndarray or a memmap of a
    numeric dtype."""
    t = type(x)
    if t is not np.ndarray and not isinstance(x, np.memmap):
        for base in t.__mro__:
            reason = _REASONS.get(base)
            if reason is not None:
                return reason
        return (
            f"functrans computes with plain ndarrays and would drop what {t.__name__} adds to "
            "them (its results would be plain ndarrays with NumPy's semantics); pass "
            "np.asarray(x) if that is what the function needs"
        )
    if x.dtype.fields is not None and x.dtype != float0:  # (float0: JAX's integer tangents)
        return (
            f"its dtype {x.dtype} is structured (records, not numbers); pass each field as its "
            "own array (x['name'])"
        )
    return None


def describe(x: np.ndarray) -> str:
    """``a numpy.ma.MaskedArray (f64[3])``: the type's public name and the
    shape, for messages."""
    t = type(x)
    module = t.__module__
    for public, namespace in (("numpy.ma", np.ma), ("numpy", np)):
        # numpy.ma.core.MaskedArray is numpy.ma.MaskedArray to the user
        if module.startswith(public) and getattr(namespace, t.__name__, None) is t:
            module = public
            break
    return f"a {module}.{t.__name__} of shape {x.shape} and dtype {x.dtype}"


def plain(x: np.ndarray, where: str | Callable[[], str]) -> np.ndarray:
    """``x`` as the plain ndarray functrans computes with (a memmap's view,
    which shares its buffer, so that results computed from it are plain
    ndarrays), or the TypeError saying why it is refused and what to pass
    instead.  ``where`` names the value for the message (``"jit(f):
    argument [0]"``), or is called to name it where that costs something
    (a stack walk for the user's line)."""
    reason = refusal(x)
    if reason is not None:
        raise TypeError(f"{where if isinstance(where, str) else where()} is {describe(x)}; "
                        f"{reason}")
    return x if type(x) is np.ndarray else x.view(np.ndarray)
