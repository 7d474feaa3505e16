"""functrans.disable_jit and functrans.eval_shape (functrans/jit.py,
functrans/api.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core

# -- disable_jit ----------------------------------------------------------------


def test_disable_jit_runs_the_python_function(capsys):
    seen = []

    @ft.jit
    def f(x):
        seen.append(type(x))
        return x * 2.0

    with ft.disable_jit():
        assert np.array_equal(f(np.ones(2)), [2.0, 2.0])
        assert np.array_equal(ft.grad(lambda x: fnp.sum(f(x)))(np.ones(2)), [2.0, 2.0])
        with ft.disable_jit(False):
            f(np.ones(2))
    assert seen[0] is np.ndarray and seen[1] is core.Tracer and seen[2] is core.Tracer
    assert f.cache_info().misses == 1  # only the block with jit back on compiled
    f(np.ones(2))
    assert f.cache_info().hits == 1


def test_disable_jit_is_per_thread():
    f = ft.jit(lambda x: x + 1.0)
    inside, other = threading.Event(), threading.Event()

    def worker():
        inside.wait()
        f(np.ones(1))  # jit stays on in this thread
        other.set()

    t = threading.Thread(target=worker)
    t.start()
    with ft.disable_jit():
        inside.set()
        other.wait(10)
        f(np.ones(1))
    t.join()
    assert f.cache_info().misses == 1


# -- eval_shape -----------------------------------------------------------------


def test_eval_shape_gives_the_output_tree_without_computing():
    huge = ft.ShapeDtypeStruct((10**6, 10**6), np.float32)  # 4 TB if it were made

    def f(a, b, *, scale):
        return {"row": a[0] * scale, "dot": (a @ b, b.shape[1])}

    out = ft.eval_shape(f, huge, np.ones((10**6, 3), np.float32), scale=2)
    assert set(out) == {"dot", "row"}
    row, (dot, n) = out["row"], out["dot"]
    assert (row.shape, row.dtype) == ((10**6,), np.float32)
    assert (dot.shape, dot.dtype) == ((10**6, 3), np.float32)
    assert (n.shape, n.dtype) == ((), np.int64)
    assert isinstance(row, ft.ShapeDtypeStruct)


def test_eval_shape_follows_numpy_promotion_and_names_bad_arguments():
    assert ft.eval_shape(lambda x: x * 2.0, np.ones(3, np.float32)).dtype == np.float32
    assert ft.eval_shape(lambda x: x + 1, 1.5).dtype == np.float64
    with pytest.raises(TypeError, match=r"eval_shape\(<lambda>\): argument \[0\]\[0\] is a "
                       r"object, which is not an array"):
        ft.eval_shape(lambda x: x, object())
