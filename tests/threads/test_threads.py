"""Transforms running in many threads at once (DESIGN.md, "Threads").

Trace state is per thread, so concurrent ``grad``/``jit``/``vmap`` calls of
different functions at different shapes never see each other's traces; the
results are compared with a single-threaded reference.  CI also runs this
file under ``python -O``, where an ``assert`` guarding an invariant would
vanish.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core, lax
from functrans.errors import LeakedTracerError


def _loss(x):
    return fnp.sum(fnp.sin(x) * x + x**2)


def _branchy(x):
    # Python control flow on values: the concrete retrace, per thread.
    return fnp.sum(x**3) if x[0] > 0 else fnp.sum(fnp.cos(x))


def _looped(x):
    return fnp.sum(lax.fori_loop(0, 3, lambda i, y: fnp.tanh(y * 0.9 + 0.1), x))


THREADS, ROUNDS = 12, 6

_JIT_GRAD = ft.jit(ft.grad(_loss))
_JIT_HESSIAN = ft.jit(ft.hessian(_looped))

#: name -> function of one array argument; each is called at several shapes.
WORKLOADS = {
    "eager grad": ft.grad(_loss),
    "grad with a branch": ft.grad(_branchy),
    "jit(grad), shared": lambda x: _JIT_GRAD(x),
    "jit(hessian), shared": lambda x: _JIT_HESSIAN(x),
    "fresh jit(grad)": lambda x: ft.jit(ft.grad(_branchy_free))(x),
    "vmap(grad)": lambda x: ft.vmap(ft.grad(_loss))(x.reshape(1, -1)),
    "hessian": ft.hessian(_branchy),
    "jacrev of a loop": ft.jacrev(lambda x: lax.fori_loop(0, 2, lambda i, y: fnp.sin(y), x)),
}


def _branchy_free(x):
    return fnp.sum(fnp.exp(-x * x))


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(n) + (1.5 if k % 2 else -1.5)
            for k, n in enumerate((1, 2, 3, 5, 8))]


def _reference():
    return {(name, k): fn(x) for name, fn in WORKLOADS.items() for k, x in enumerate(_inputs())}


def test_many_threads_give_the_single_threaded_results():
    reference = _reference()
    jobs = [(name, k, x) for name, fn in WORKLOADS.items() for k, x in enumerate(_inputs())]
    start = threading.Barrier(THREADS)

    def work(offset):
        start.wait()
        out = []
        for i in range(len(jobs) * ROUNDS):
            name, k, x = jobs[(offset * 7 + i) % len(jobs)]
            out.append((name, k, WORKLOADS[name](x)))
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        results = [r for rs in pool.map(work, range(THREADS)) for r in rs]
    assert len(results) == THREADS * ROUNDS * len(jobs)
    for name, k, got in results:
        np.testing.assert_allclose(got, reference[name, k], rtol=1e-12, atol=1e-12,
                                   err_msg=f"{name} at input {k}")
    # Nothing was left poisoned: the single-threaded results are unchanged.
    after = _reference()
    for key, want in reference.items():
        np.testing.assert_allclose(after[key], want, rtol=1e-12, atol=1e-12)


def test_a_thread_does_not_see_another_threads_trace():
    inside, release = threading.Event(), threading.Event()
    seen = []

    def slow(x):
        inside.set()
        release.wait(5)
        return fnp.sum(x * x)

    t = threading.Thread(target=lambda: ft.grad(slow)(np.ones(2)))
    t.start()
    assert inside.wait(5)
    seen.append(core.current_trace())
    np.testing.assert_allclose(ft.grad(_loss)(np.zeros(2)), 0.0)
    release.set()
    t.join(5)
    assert seen == [None]


def test_a_tracer_leaked_to_another_thread_is_reported():
    box = []
    ready, done = threading.Event(), threading.Event()

    def keep(x):
        box.append(x)
        ready.set()
        done.wait(5)
        return fnp.sum(x)

    t = threading.Thread(target=lambda: ft.grad(keep)(np.ones(2)))
    t.start()
    assert ready.wait(5)
    try:
        # The tracer belongs to the other thread's trace: using it here records
        # into no trace of this thread and must not corrupt that one.
        with pytest.raises(LeakedTracerError, match="used in another thread"):
            ft.grad(lambda y: fnp.sum(y * box[0]))(np.ones(2))
    finally:
        done.set()
        t.join(5)
