"""A Jaxpr's cache key holds its equations' lines exactly while debug_nans or
debug_infs is on, also for a Jaxpr whose key was first computed (and
memoised) with both off."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import config, core


def first(x):
    return fnp.log(x) * 2.0


def second(x):
    return fnp.log(x) * 2.0


def _line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if "fnp.log" in text)


def test_a_key_memoised_with_the_flags_off_takes_the_lines_once_they_are_on():
    x = np.array([-1.0, 1.0])
    a, b = ft.make_jaxpr(first)(x), ft.make_jaxpr(second)(x)
    assert a == b and hash(a) == hash(b)  # one program while the flags are off
    config.update("debug_nans", True)
    try:
        assert a != b  # two lines, two programs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for program, fn in ((a, first), (b, second), (a, first)):
                with pytest.raises(FloatingPointError,
                                   match=rf"in {fn.__name__} \({__file__}:{_line(fn)}:"):
                    core.run_jaxpr(program, [x])
    finally:
        config.update("debug_nans", False)
    assert a == b and hash(a) == hash(b)


def test_program_caches_survive_switching_the_checks():
    """A program's hash holds its sources while debug_nans is on, so a cache
    keyed on programs must not keep keys stored in the other state (their
    eviction raised KeyError: 296 tests failed in one suite run)."""
    calls = []
    cached = core.program_cache(maxsize=2, max_equations=10**6)(
        lambda closed: calls.append(closed) or len(calls))
    programs = [ft.make_jaxpr(lambda x, k=k: x * float(k))(1.0) for k in range(4)]
    try:
        for i, program in enumerate(programs):
            config.update("debug_nans", i == 0)
            cached(program)
            cached(program)
    finally:
        config.update("debug_nans", False)
    assert len(calls) == 4 and cached.cache_info().currsize <= 2
