"""A print of constants only (no operand traced, or none at all) inside a
loop body is an equation of the body like any other: a transform re-emitting
the body (grad's JVP, vmap's batching) records it instead of printing it
while it traces, so it prints at each step, in program order, and is never
dropped."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


def scan_printing_constants(w, xs):
    def body(c, x):
        ft.debug.print("w={}", w)
        ft.debug.print("step")  # no operands at all
        return c + x * fnp.sin(w), None

    return lax.scan(body, 0.0, xs)[0]


@pytest.mark.parametrize("transform", [
    lambda f: f, ft.jit, ft.grad, lambda f: ft.jit(ft.grad(f)), ft.value_and_grad,
    lambda f: (lambda w, xs: ft.linearize(f, w, xs)[0]),
], ids=["eager", "jit", "grad", "jit_grad", "value_and_grad", "linearize"])
def test_each_step_prints_its_constants_in_program_order(transform, capsys):
    transform(scan_printing_constants)(2.0, np.arange(2.0))
    assert capsys.readouterr().out == "w=2.0\nstep\nw=2.0\nstep\n"


@pytest.mark.parametrize("transform", [ft.vmap, lambda f: ft.jit(ft.vmap(f))],
                         ids=["vmap", "jit_vmap"])
def test_under_vmap_an_unbatched_print_runs_once_a_step(transform, capsys):
    batched = transform(lambda w: scan_printing_constants(w, np.arange(2.0)))
    batched(np.array([1.0, 2.0]))
    assert capsys.readouterr().out == "w=1.0\nw=2.0\nstep\nw=1.0\nw=2.0\nstep\n"


def test_a_print_of_constants_is_recorded_not_run_while_tracing(capsys):
    def f(x):
        ft.debug.print("constant {}", np.float64(3.0))
        return x * 2.0

    jaxpr = ft.make_jaxpr(f)(1.0)
    assert "debug_print" in str(jaxpr) and capsys.readouterr().out == ""
    ft.eval_shape(f, 1.0)
    assert capsys.readouterr().out == ""
    ft.grad(f)(1.0)
    assert capsys.readouterr().out == "constant 3.0\n"
