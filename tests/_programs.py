"""Random straight-line programs for the tests of the optimisation passes and
of generated code: each step applies a unary or binary operation (by index
into the caller's tables) to earlier values, starting from the inputs."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hypothesis import strategies as st

import functrans.numpy as fnp


@st.composite
def dataflow(draw, n_unary: int, n_binary: int, n_inputs: int, max_steps: int):
    """``(steps, outs)``: steps ``(kind, op index, operand indices)`` over the
    growing list of values, and the indices of the values returned."""
    steps, n = [], n_inputs
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.integers(0, n_unary - 1)),
                          (draw(st.integers(0, n - 1)),)))
        else:
            steps.append(("b", draw(st.integers(0, n_binary - 1)),
                          (draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)))))
        n += 1
    outs = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
    return steps, outs


def run_dataflow(program, unary: Sequence[Callable], binary: Sequence[Callable],
                 inputs: Sequence[Any]) -> list[Any]:
    steps, outs = program
    values = list(inputs)
    for kind, op, args in steps:
        fn = unary[op] if kind == "u" else binary[op]
        values.append(fn(*(values[i] for i in args)))
    return [values[i] for i in outs]


def scalar_program(program, unary: Sequence[Callable], binary: Sequence[Callable]) -> Callable:
    """A scalar function of one array running ``program``: a weighted sum of
    its outputs (the weights keep outputs from cancelling), for Hessians."""
    def f(x):
        outs = run_dataflow(program, unary, binary, [x])
        return sum(fnp.sum(o * (1.0 + 0.1 * k)) for k, o in enumerate(outs))

    return f


def vector_program(program, unary: Sequence[Callable], binary: Sequence[Callable]) -> Callable:
    """A vector function of one array running ``program``: its outputs
    raveled and concatenated, for Jacobians."""
    def f(x):
        outs = run_dataflow(program, unary, binary, [x])
        return fnp.concatenate([o.reshape(-1) for o in outs])

    return f
