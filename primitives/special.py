"""Special functions as elementwise table rows: erf, erfc, erfinv, lgamma,
digamma and polygamma.

They are rows of the same kind as those of ``primitives/elementwise.py``
(``Row(name, numpy, deriv, ...)`` turned into a Primitive by the same
builder), kept in their own module because their NumPy-backend impls come
from SciPy, which is optional: SciPy is imported when one of them first runs,
never when functrans is imported, and a missing SciPy gives an ImportError
naming the extra to install.  Shape rules, tracing, differentiation and
batching need no SciPy at all.

They take real operands (bools and integers become float64, float16 and
float32 give float32, as SciPy's loops do); each derivative is written with
the library's ops, so it is differentiable again: erf' = 2/sqrt(pi)
exp(-x^2), erfinv' = sqrt(pi)/2 exp(erfinv(x)^2), lgamma' = digamma,
digamma' = polygamma(1, .), and polygamma(n, .)' = polygamma(n + 1, .).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives.elementwise import Row, declare

from functrans.core import ShapedArray, get_aval
from functrans.errors import DTypeError

_SCIPY_HINT = "pip install functrans[scipy]"
_special = None


def scipy_special():
    """``scipy.special``, imported on first use."""
    global _special
    if _special is None:
        try:
            import scipy.special
        except ImportError:
            raise ImportError(
                "functrans needs SciPy to evaluate special functions (erf, gammaln, "
                f"digamma, ...) on NumPy arrays; install it with `{_SCIPY_HINT}`"
            ) from None
        _special = scipy.special
    return _special


def _real_float(name: str, aval: ShapedArray) -> np.dtype:
    kind = aval.dtype.kind
    if kind in "biu":
        return np.dtype(np.float64)
    if kind == "f":
        return np.dtype(np.float64) if aval.dtype == np.float64 else np.dtype(np.float32)
    raise DTypeError(
        f"{name}: expected a real (bool, integer or float) operand, got {aval.str_short()}; "
        "take .real first, or write the function with complex-capable ops"
    )


def _dtype_rule(name: str) -> Callable:
    """One float dtype for the result, from the last operand (polygamma's
    order ``n`` does not take part)."""

    def rule(*avals: ShapedArray) -> np.dtype:
        for a in avals[:-1]:
            if a.dtype.kind not in "biuf":
                raise DTypeError(f"{name}: expected real operands, got {a.str_short()}")
        return _real_float(name, avals[-1])

    return rule


def _scipy_fn(name: str, scipy_name: str) -> Callable:
    rule = _dtype_rule(name)

    def fn(*xs):
        dtype = rule(*(get_aval(x) for x in xs))
        with np.errstate(all="ignore"):
            out = getattr(scipy_special(), scipy_name)(*xs)
        return np.asarray(out).astype(dtype, copy=False)

    fn.__name__ = fn.__qualname__ = scipy_name
    return fn


def _cupyx_fn(name: str) -> Callable:
    """The GPU impl of a function CUDA's math library lacks: CuPy's own
    ``cupyx.scipy.special`` kernel, in the dtype of the row's rule."""
    rule = _dtype_rule(name)

    def fn(*xs):
        # CuPy is optional: imported here, where a device array is already at hand.
        from cupyx.scipy import special as cupyx_special

        dtype = rule(*(get_aval(x) for x in xs))
        return getattr(cupyx_special, name)(*xs).astype(dtype, copy=False)

    fn.__name__ = fn.__qualname__ = name
    return fn


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _gauss(x):
    return ew.exp(ew.neg(ew.mul(x, x)))


# fmt: off
ROWS = [
    Row("erf",       _scipy_fn("erf", "erf"),
        lambda x, y: ew.mul(_TWO_OVER_SQRT_PI, _gauss(x)), cuda="erf(x)",
        dtype_rule=_dtype_rule("erf"), doc="`scipy.special.erf(x)`"),
    Row("erfc",      _scipy_fn("erfc", "erfc"),
        lambda x, y: ew.mul(-_TWO_OVER_SQRT_PI, _gauss(x)), cuda="erfc(x)",
        dtype_rule=_dtype_rule("erfc"), doc="`scipy.special.erfc(x)`"),
    Row("erfinv",    _scipy_fn("erfinv", "erfinv"),
        lambda x, y: ew.mul(_SQRT_PI_OVER_TWO, ew.exp(ew.mul(y, y))), cuda="erfinv(x)",
        dtype_rule=_dtype_rule("erfinv"), doc="`scipy.special.erfinv(x)`"),
    Row("lgamma",    _scipy_fn("lgamma", "gammaln"),
        lambda x, y: digamma(x), cuda="lgamma(x)",
        dtype_rule=_dtype_rule("lgamma"), doc="`scipy.special.gammaln(x)`"),
    Row("digamma",   _scipy_fn("digamma", "psi"),
        lambda x, y: polygamma(1, x), gpu=_cupyx_fn("digamma"),
        dtype_rule=_dtype_rule("digamma"), doc="`scipy.special.digamma(x)`"),
    # polygamma(n, x): no derivative in the (integer) order n.
    Row("polygamma", _scipy_fn("polygamma", "polygamma"),
        (lambda n, x, out: 0.0, lambda n, x, out: polygamma(ew.add(n, 1), x)),
        gpu=_cupyx_fn("polygamma"),
        dtype_rule=_dtype_rule("polygamma"), doc="`scipy.special.polygamma(n, x)`"),
]
# fmt: on

#: Primitive objects by name.
special = {r.name: declare(r) for r in ROWS}
erf_p, erfc_p, erfinv_p, lgamma_p, digamma_p, polygamma_p = special.values()


def erf(x):
    return erf_p.bind(x)


def erfc(x):
    return erfc_p.bind(x)


def erfinv(x):
    return erfinv_p.bind(x)


def lgamma(x):
    return lgamma_p.bind(x)


def digamma(x):
    return digamma_p.bind(x)


def polygamma(n, x):
    return polygamma_p.bind(n, x)
