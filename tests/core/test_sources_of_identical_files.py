"""The user's lines of programs made by identical code in two files: code
objects equal in contents (the same function at the same lines) compare
equal, so the programs they make are equal, sources and all, but for the
files; each call names its own file, straight-line and in a loop body,
whatever file the program's first equation comes from."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _modules import module_from_source

import functrans as ft

BAD = np.array([-1.0, 2.0])  # log(-1): "invalid value encountered in log"

BODY = ("import functrans.numpy as fnp\n\n\n"
        "def body(i, c, x):\n    return c + fnp.sum(fnp.log(x) * x)\n")


def _warned_at(fn, *args) -> set[tuple[str, int]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return {(w.filename, w.lineno) for w in caught if "invalid value" in str(w.message)}


def in_a_loop(x, body):
    return ft.lax.fori_loop(0, 2, lambda i, c: body(i, c, x), 0.0)


def after_a_line_here(x, body):
    return body(0, ft.numpy.sum(x * 1.0), x)


@pytest.mark.parametrize("transform", ["grad", "jit"])
@pytest.mark.parametrize("caller", [in_a_loop, after_a_line_here])
def test_identical_code_in_two_files_warns_at_each_file_s_line(tmp_path, caller, transform):
    one = module_from_source(tmp_path / "identical_one.py", BODY)
    two = module_from_source(tmp_path / "identical_two.py", BODY)
    assert one.body.__code__ == two.body.__code__  # what makes the programs equal
    run = {"grad": lambda body: ft.grad(lambda x: caller(x, body)),
           "jit": lambda body: ft.jit(lambda x: caller(x, body))}[transform]
    for _ in range(6):  # past the first calls, whose programs are interpreted
        run(one.body)(np.array([1.0, 2.0]))
    for _ in range(3):
        for module in (two, one, two):
            found = _warned_at(run(module.body), BAD)
            assert found and {file for file, _ in found} == {module.__file__}, found
