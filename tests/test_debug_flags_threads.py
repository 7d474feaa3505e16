"""Turning debug_nans on and off while another thread makes jitted functions:
the switch drops every jitted function's programs, and must not fail on the
set of jitted functions changing meanwhile."""

from __future__ import annotations

import threading

import functrans as ft
from functrans import config


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
