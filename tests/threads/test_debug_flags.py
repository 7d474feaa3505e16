"""Turning debug_nans on and off while other work goes on: the switch drops
every jitted function's programs, must not fail on the set of jitted
functions changing meanwhile, and a program being lowered across the switch
is not kept."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import config
from functrans.backends.numpy import codegen


def test_switching_debug_nans_while_another_thread_makes_jitted_functions():
    stop = threading.Event()
    made: list = []

    def make():
        while not stop.is_set():
            made.append(ft.jit(lambda x: x))
            if len(made) > 500:
                made.clear()  # their weak references go while the set is copied

    thread = threading.Thread(target=make)
    thread.start()
    try:
        for i in range(2000):
            config.update("debug_nans", i % 2 == 0)
    finally:
        stop.set()
        thread.join()
        config.update("debug_nans", False)



def test_a_program_generated_across_a_switch_of_debug_nans_is_not_kept(monkeypatch):
    # The switch lands right after the code is generated without checks (as
    # from another thread): that program runs this call but is not cached.
    generate = codegen.generate_source

    def generate_then_switch(*args, **kwargs):
        out = generate(*args, **kwargs)
        if not config.debug_nans:
            config.update("debug_nans", True)
        return out

    monkeypatch.setattr(codegen, "generate_source", generate_then_switch)
    g = ft.jit(lambda x: fnp.log(x) + 0.0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert np.isnan(g(np.array([-1.0]))[0])
            with pytest.raises(FloatingPointError, match=r"'log' produced NaN"):
                g(np.array([-1.0]))
    finally:
        config.update("debug_nans", False)
