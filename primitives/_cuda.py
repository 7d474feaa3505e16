"""The CUDA-expression rule of elementwise primitives (their ``cuda`` slot),
read by the GPU lowering in ``functrans.backends.cuda``."""

from __future__ import annotations

import numpy as np

from functrans.core import ShapedArray
from functrans.dtypes import ufunc_operand


class Cuda:
    """The GPU lowering of an elementwise primitive, its ``cuda`` rule.

    ``expr`` is a CUDA C expression in the operand names ``args`` with
    ``{T}``/``{R}`` for the compute type and its real part, or a dict of such
    expressions keyed by dtype kind letters (``"*"`` for the rest; None where
    the GPU has none), or a function of the equation's params giving either.
    Operands are first converted to their NumPy loop dtypes: ``loop``'s
    (a ufunc) when given, else the output dtype (``p``, a predicate, stays bool).
    """

    __slots__ = ("expr", "loop", "args", "_loops")

    def __init__(self, expr, loop: np.ufunc | None = None, args: tuple[str, ...] = ("x", "y")):
        self.expr = expr
        self.loop = loop
        self.args = args
        self._loops: dict[tuple, tuple] = {}

    def loop_dtypes(self, avals, out: ShapedArray) -> tuple[np.dtype, ...]:
        """The dtypes the operands (avals, weakness respected) are computed in."""
        key = tuple((a.dtype, a.weak_type) for a in avals) + (out.dtype,)
        loops = self._loops.get(key)
        if loops is None:
            if self.loop is None:
                loops = tuple(a.dtype if name == "p" else out.dtype
                              for name, a in zip(self.args, avals))
            else:
                ops = tuple(ufunc_operand(a.dtype, a.weak_type) for a in avals)
                loops = tuple(self.loop.resolve_dtypes(ops + (None,))[: len(avals)])
            self._loops[key] = loops
        return loops

    def template(self, kind: str, params: dict) -> str | None:
        """The expression for operands of dtype kind ``kind`` (None: none)."""
        expr = self.expr(**params) if callable(self.expr) else self.expr
        if isinstance(expr, dict):
            for kinds, variant in expr.items():
                if kind in kinds or kinds == "*":
                    return variant
            return None
        return expr
