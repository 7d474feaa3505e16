"""A jitted function's name becomes the generated program's name (it shows
in tracebacks); names the generated code gives its own values (``f1`` for an
operation, ``c0`` for a constant ...) are renamed, on the CPU and the GPU."""

from __future__ import annotations

import _gpu_fake
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

W = np.arange(3.0)


def _named(name):
    def fn(x):
        return (fnp.sin(x) * 2.0 + 1.0) * W

    fn.__name__ = name
    return fn


NAMES = ["f0", "f1", "f2", "c0", "c1", "k2", "t3", "v0", "v1"]


@pytest.mark.parametrize("name", NAMES)
def test_a_function_named_like_a_generated_value_runs(name):
    f = ft.jit(_named(name))
    x = np.linspace(-1.0, 1.0, 3)
    np.testing.assert_array_equal(f(x), _named(name)(x))
    assert f.lower(x).source.startswith(f"def f_{name}(")


@pytest.mark.parametrize("name", ["f", "f1x", "fn1", "F1", "loss"])
def test_other_names_are_kept(name):
    assert ft.jit(_named(name)).lower(np.ones(3)).source.startswith(f"def {name}(")


@pytest.mark.parametrize("name", ["f0", "f1"])
def test_on_the_gpu_too(name):
    _, undo = _gpu_fake.install()
    try:
        d = ft.device_put(np.linspace(-1.0, 1.0, 3), "gpu")
        w = ft.device_put(W, "gpu")

        def fn(x):
            return (fnp.sin(x) * 2.0 + 1.0) * w, fnp.sum(x)

        fn.__name__ = name
        got = ft.jit(fn)(d)
        np.testing.assert_allclose(got[0].get(), fn(d)[0].get())
    finally:
        undo()
