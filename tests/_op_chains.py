"""Random programs for the whole-program derivative tests
(tests/specs/test_derivatives.py, tests/api/test_jacobians.py): chains of
1-6 steps written with the NumPy API, each mapping a state of shape (n, m)
to a new one, so that every chain is a valid program.  The per-primitive
rows are in tests/_specs.py.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import strategies as fts

# Each op maps the state ``x`` (shape (n, m)) to a new state of that shape; it
# may read the first input ``x0`` and the second input ``w`` (shape (m,)).
OPS = {
    "sin": lambda x, x0, w: np.sin(x),
    "tanh": lambda x, x0, w: fnp.tanh(x),
    "square": lambda x, x0, w: x * x,
    "exp": lambda x, x0, w: np.exp(0.3 * x),
    "log": lambda x, x0, w: np.log(1.5 + np.sin(x)),
    "sqrt": lambda x, x0, w: np.sqrt(x * x + 1.0),
    "times_input": lambda x, x0, w: x * x0,
    "plus_cos_input": lambda x, x0, w: x + np.cos(x0),
    "divide": lambda x, x0, w: x / (2.0 + np.sin(x0)),
    "scale_columns": lambda x, x0, w: x * w,
    "pow": lambda x, x0, w: (1.0 + x * x) ** (0.5 * np.tanh(w)),
    "integer_pow": lambda x, x0, w: x ** 3,
    "center_rows": lambda x, x0, w: x - fnp.mean(x, axis=1, keepdims=True),
    "sum_columns": lambda x, x0, w: x + fnp.sum(x, axis=0),
    "prod_columns": lambda x, x0, w: x * fnp.prod(1.0 + 0.1 * x, axis=0, keepdims=True),
    "max_rows": lambda x, x0, w: x - fnp.max(x, axis=1, keepdims=True),
    "maximum": lambda x, x0, w: np.maximum(x, 0.3 * x0),
    "relu_leaky": lambda x, x0, w: fnp.where(x > 0, x, 0.1 * x),
    "abs": lambda x, x0, w: np.abs(x) + x,
    "cumsum": lambda x, x0, w: np.cumsum(x, axis=1),
    "cumprod": lambda x, x0, w: fnp.cumprod(0.5 * x, axis=0),
    "flip": lambda x, x0, w: x[::-1],
    "roll": lambda x, x0, w: fnp.concatenate([x[1:], x[:1]], axis=0),
    "transpose_scale": lambda x, x0, w: (x.T * fnp.sum(x0, axis=1)).T,
    "matmul_const": lambda x, x0, w: np.linspace(-1, 1, x.shape[0] ** 2).reshape(
        x.shape[0], x.shape[0]) @ x,
    "gram": lambda x, x0, w: x @ (x0.T @ x0) / 4.0,
    "einsum": lambda x, x0, w: fnp.einsum("ij,j->ij", x, w) + x,
    "permute_flat": lambda x, x0, w: fnp.reshape(
        fnp.reshape(x, (-1,))[np.arange(x.size)[::-1]], x.shape),
    "stop_gradient": lambda x, x0, w: x * ft.lax.stop_gradient(x),
    "float32_round_trip": lambda x, x0, w: x.astype(np.float32).astype(np.float64) * 0.5 + x,
}


#: Ops at whose kinks (or in whose rounding, or by whose stop_gradient)
#: finite differences and the derivative legitimately differ.
NOT_SMOOTH = frozenset({"maximum", "relu_leaky", "abs", "max_rows", "float32_round_trip",
                        "stop_gradient"})


@st.composite
def programs(draw):
    """``(ops, x0, w)``: a chain of 1-6 ``OPS`` and the inputs to run it on."""
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ops = draw(st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6))
    x0 = draw(fts.arrays(dtype=np.float64, shape=(n, m), min_value=-1.5, max_value=1.5))
    w = draw(fts.arrays(dtype=np.float64, shape=(m,), min_value=-1.5, max_value=1.5))
    return ops, x0, w


def program(ops):
    """The function ``(x0, w) -> state`` that runs ``ops`` in order."""

    def f(x0, w):
        x = x0
        for op in ops:
            x = OPS[op](x, x0, w)
        return x

    f.__name__ = "_then_".join(ops)
    return f
