"""The user's lines of cached programs (``core.sources``): a program cached
on its structure serves every function that traces to it, and its warnings,
tracebacks and the programs the transforms make of it name the lines of the
function called, not those of the first function that built it."""

from __future__ import annotations

import inspect
import traceback
import warnings

import numpy as np
import pytest
from _modules import module_from_source

import functrans as ft
import functrans.numpy as fnp
from functrans import core

THIS = __file__
GOOD = np.array([1.0, 2.0])
BAD = np.array([-1.0, 2.0])  # log(-1): "invalid value encountered in log"


def _line(fn, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _warned(fn, *args) -> set[tuple[str, int, str]]:
    """``(file, line, message)`` of each warning ``fn(*args)`` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return {(w.filename, w.lineno, str(w.message).split(" encountered")[0]) for w in caught}


# Two functions alike but for their lines (and a third for the module's own
# tests), defined at the top so that each test meets their programs fresh
# only through the caches.
def log_f(x):
    return fnp.sum(fnp.log(x) * x)


def log_g(x):
    return fnp.sum(fnp.log(x) * x)


def sqrt_f(x):
    return fnp.sum(fnp.sqrt(x) * x)


def sqrt_g(x):
    return fnp.sum(fnp.sqrt(x) * x)


def test_eager_grad_of_a_program_built_for_another_function_warns_at_its_own_line():
    for _ in range(6):  # the plan built and compiled for log_f
        ft.grad(log_f)(GOOD)
    g_line, f_line = _line(log_g, "fnp.log"), _line(log_f, "fnp.log")
    assert _warned(ft.grad(log_g), BAD) == {(THIS, g_line, "invalid value")}
    assert _warned(ft.grad(log_g), BAD) == {(THIS, g_line, "invalid value")}
    # and back: the first function names its own line again
    assert _warned(ft.grad(log_f), BAD) == {(THIS, f_line, "invalid value")}


def test_a_warning_of_the_backward_program_names_the_line_called():
    for _ in range(6):
        ft.grad(sqrt_f)(GOOD)
    # d sqrt(x) / dx at 0 divides by zero, and 0 * inf is invalid: both in
    # the backward pass, derived from sqrt_g's line.
    found = _warned(ft.grad(sqrt_g), np.array([0.0, 2.0]))
    assert found and {(file, line) for file, line, _ in found} == {
        (THIS, _line(sqrt_g, "fnp.sqrt"))}


def test_jit_of_grad_names_the_line_of_the_function_jitted():
    def f(x):
        return fnp.sum(fnp.sqrt(x) * fnp.log(x))

    def g(x):
        return fnp.sum(fnp.sqrt(x) * fnp.log(x))

    ft.jit(ft.grad(f))(GOOD)  # its transforms cached with f's lines
    for x in (BAD, np.array([0.0, 2.0])):  # the forward pass, and the backward one
        found = _warned(ft.jit(ft.grad(g)), x)
        assert found and {(file, line) for file, line, _ in found} == {(THIS, _line(g, "sqrt"))}
    # jit's own cache is the function's: two jitted functions alike keep theirs
    ft.jit(f)(GOOD)
    assert _warned(ft.jit(g), BAD) == {(THIS, _line(g, "sqrt"), "invalid value")}


def test_second_order_grad_names_the_line_called():
    def f(x):
        return fnp.sum(fnp.log(x) * fnp.sin(x))

    def g(x):
        return fnp.sum(fnp.log(x) * fnp.sin(x))

    for _ in range(6):
        ft.grad(lambda x: ft.grad(f)(x).sum())(GOOD)
    found = _warned(ft.grad(lambda x: ft.grad(g)(x).sum()), BAD)
    assert found and {(file, line) for file, line, _ in found} == {(THIS, _line(g, "log"))}


def test_a_program_cached_from_another_file_names_the_line_called(tmp_path):
    helper = tmp_path / "sources_helper.py"
    module = module_from_source(helper, "import functrans.numpy as fnp\n\n\n\n\ndef f(x):\n"
                                "    return fnp.sum(fnp.tanh(x) * fnp.log(x))\n")

    def g(x):
        return fnp.sum(fnp.tanh(x) * fnp.log(x))

    for _ in range(6):
        ft.grad(module.f)(GOOD)
    assert _warned(ft.grad(g), BAD) == {(THIS, _line(g, "fnp.log"), "invalid value")}
    for _ in range(3):
        assert _warned(ft.grad(module.f), BAD) == {(str(helper), 7, "invalid value")}


def test_an_operation_in_another_file_keeps_its_file_and_the_rest_the_caller_s(tmp_path):
    helper = tmp_path / "sources_reciprocal.py"
    module = module_from_source(helper, "def reciprocal(x):\n    return 1.0 / x\n")

    def f(x):
        return fnp.sum(module.reciprocal(fnp.cos(x) + fnp.log(x)) * fnp.exp(x))

    def g(x):
        return fnp.sum(module.reciprocal(fnp.cos(x) + fnp.log(x)) * fnp.exp(x))

    for _ in range(6):
        ft.grad(f)(GOOD)
    found = _warned(ft.grad(g), np.array([-1.0, 2.0]))
    assert (THIS, _line(g, "fnp.log"), "invalid value") in found
    assert {file for file, _, _ in found} <= {THIS, str(helper)}
    assert not any(line == _line(f, "fnp.log") for _, line, _ in found)


def test_a_traceback_through_cached_code_names_the_line_called():
    def f(a):
        return fnp.sum(fnp.linalg.inv(a) * a)

    def g(a):
        return fnp.sum(fnp.linalg.inv(a) * a)

    for _ in range(6):
        ft.grad(f)(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError) as info:
        ft.grad(g)(np.zeros((2, 2)))
    frames = [(fs.filename, fs.lineno) for fs in traceback.extract_tb(info.value.__traceback__)]
    assert (THIS, _line(g, "inv")) in frames and (THIS, _line(f, "inv")) not in frames


def test_resourced_programs_are_equal_and_name_the_new_sources():
    f_jaxpr = ft.make_jaxpr(log_f)(GOOD)
    g_jaxpr = ft.make_jaxpr(log_g)(GOOD)
    assert f_jaxpr == g_jaxpr and core.source_map(f_jaxpr, f_jaxpr) is None
    assert core.same_sources(f_jaxpr.jaxpr, ft.make_jaxpr(log_f)(GOOD).jaxpr)
    mapping = core.source_map(f_jaxpr, g_jaxpr)
    moved = core.resourced(f_jaxpr, mapping)
    assert moved == f_jaxpr and core.same_sources(moved.jaxpr, g_jaxpr.jaxpr)
    assert {core.source_location(e.source)[:2] for e in moved.eqns} == {
        (THIS, _line(log_g, "fnp.log"))}
