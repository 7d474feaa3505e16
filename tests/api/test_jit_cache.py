"""The jit cache: a bounded least-recently-used cache per jitted function
(``functrans.config.jit_cache_size``), its counts, and its safety under
concurrent calls (DESIGN.md, "Threads"): threads at different and equal
shapes, concurrent misses on one signature, and jitted functions called
while another thread traces, all compared with a single-threaded reference."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import config


@pytest.fixture
def cache_size():
    """Sets ``jit_cache_size`` for one test."""
    saved = config.jit_cache_size
    yield functools.partial(config.update, "jit_cache_size")
    config.update("jit_cache_size", saved)


def _consistent(f) -> None:
    """The cache's three views of its entries agree."""
    slots = list(f._order.values())
    assert len(slots) == len(f._entries) == f.cache_info().entries <= config.jit_cache_size
    assert all(f._entries[s.key] is s for s in slots)
    assert all(s in slots for s in f._fast.values())


# -- bounded, least recently used ----------------------------------------------------------


def test_the_cache_keeps_the_most_recently_used_programs(cache_size):
    cache_size(3)
    f = ft.jit(lambda x: x * 2.0)
    for n in range(1, 11):
        np.testing.assert_array_equal(f(np.ones(n)), np.full(n, 2.0))
    info = f.cache_info()
    assert info == (0, 10, 3) and info.evictions == 7 and info.maxsize == 3
    f(np.ones(8))  # a hit makes 8 the most recently used: 9, 10, 8
    f(np.ones(11))  # evicts 9
    misses = f.cache_info().misses
    f(np.ones(10)), f(np.ones(8)), f(np.ones(11))
    assert f.cache_info().misses == misses
    np.testing.assert_array_equal(f(np.ones(9)), np.full(9, 2.0))  # compiled again
    assert f.cache_info().misses == misses + 1
    _consistent(f)


def test_a_hit_after_a_new_entry_is_most_recent_again(cache_size):
    # The hit path skips reordering when the slot is already the most recent:
    # a new entry must end that, or the hot entry is evicted next.
    cache_size(2)
    f = ft.jit(lambda x: x - 1.0)
    for n in (1, 2, 1, 3, 1, 4, 1):
        f(np.ones(n))
    info = f.cache_info()
    assert (info.hits, info.misses, info.evictions) == (3, 4, 2)
    _consistent(f)


def test_static_and_keyword_signatures_are_evicted_alike(cache_size):
    cache_size(2)
    f = ft.jit(lambda x, n, *, scale: x * n * scale, static_argnums=1)
    for n in (1, 2, 3, 1):
        np.testing.assert_array_equal(f(np.ones(2), n, scale=2.0), np.full(2, 2.0 * n))
    info = f.cache_info()
    assert (info.misses, info.entries, info.evictions) == (4, 2, 2)
    _consistent(f)


def test_a_new_size_applies_from_the_next_compilation(cache_size):
    f = ft.jit(lambda x: x + 1.0)
    for n in range(6):
        f(np.ones(n))
    cache_size(2)
    assert f.cache_info().entries == 6
    f(np.ones(7))
    assert f.cache_info().entries == 2 and f.cache_info().evictions == 5
    _consistent(f)


def test_cache_info_and_clear_cache():
    f = ft.jit(lambda x: x * 3.0)
    f(np.ones(2)), f(np.ones(2)), f(np.ones(3))
    hits, misses, entries = f.cache_info()
    assert (hits, misses, entries) == (1, 2, 2) and f.cache_info() == (1, 2, 2)
    assert repr(f.cache_info()) == "CacheInfo(hits=1, misses=2, entries=2)"
    f.clear_cache()
    assert f.cache_info() == (0, 0, 0) and f.cache_info().evictions == 0
    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])


def test_evictions_show_in_the_repr(cache_size):
    cache_size(1)
    f = ft.jit(lambda x: x)
    f(np.ones(1)), f(np.ones(2))
    assert repr(f.cache_info()) == "CacheInfo(hits=0, misses=2, entries=1, evictions=1)"


# -- the setting -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "many", None])
def test_the_cache_size_must_be_a_positive_integer(cache_size, bad):
    before = config.jit_cache_size
    with pytest.raises(ValueError, match=r"functrans.config: jit_cache_size must be a positive "
                                         r"integer, got .*; use a number such as 256"):
        config.update("jit_cache_size", bad)
    assert config.jit_cache_size == before


def test_an_unknown_setting_is_named_with_the_known_ones():
    with pytest.raises(AttributeError, match=r"no setting named 'jit_cache_sise'; the settings "
                                             r"are jit_cache_size"):
        config.update("jit_cache_sise", 3)


def test_the_cache_size_is_read_from_the_environment_at_import():
    env = dict(os.environ, FUNCTRANS_JIT_CACHE_SIZE="7")
    code = "import functrans as ft; print(ft.config.jit_cache_size)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "7", done.stderr
    for bad, found in [("lots", "the string 'lots'"), ("0", "0")]:
        env["FUNCTRANS_JIT_CACHE_SIZE"] = bad
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode != 0
        assert f"jit_cache_size must be a positive integer, got {found}; use a number such as " \
               "256 (in the environment variable FUNCTRANS_JIT_CACHE_SIZE)" in done.stderr


# -- threads ---------------------------------------------------------------------------------

THREADS = 12
SHAPES = [(3,), (4,), (2, 3), (5,), (3,), (1, 4)]
WEIGHT = np.linspace(-1.0, 2.0, 4)


def _model(x):
    return fnp.sum(fnp.tanh(x * 1.5) ** 2) + fnp.sum(x) * WEIGHT[0]


def _run_threads(work, jobs):
    """``work`` over ``jobs`` in THREADS threads; a deadlock fails (timeout)."""
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(work, job) for job in jobs]
        return [fut.result(timeout=120) for fut in futures]


@pytest.mark.parametrize("size", [None, 2])
def test_threads_at_different_and_equal_shapes_match_one_thread(cache_size, size):
    if size is not None:
        cache_size(size)  # evictions racing with lookups and insertions
    rng = np.random.default_rng(0)
    jobs = [rng.standard_normal(SHAPES[i % len(SHAPES)]) for i in range(8 * THREADS)]
    reference = ft.jit(ft.value_and_grad(_model))
    want = [reference(x) for x in jobs]
    shared = ft.jit(ft.value_and_grad(_model))
    got = _run_threads(shared, jobs)
    for (v, g), (wv, wg) in zip(got, want):
        np.testing.assert_array_equal(v, wv)
        np.testing.assert_array_equal(g, wg)
    info = shared.cache_info()
    assert info.hits + info.misses == len(jobs)
    assert info.entries == min(len(set(SHAPES)), config.jit_cache_size)
    _consistent(shared)


def test_concurrent_misses_on_one_signature_all_get_a_correct_program():
    tracing = threading.Barrier(8, timeout=60)

    def g(x):
        tracing.wait()  # every thread is tracing at the same time
        return fnp.sin(x) * 2.0 + x

    f = ft.jit(g)
    x = np.linspace(0.0, 1.0, 5)
    with ThreadPoolExecutor(8) as pool:
        outs = [fut.result(timeout=120) for fut in [pool.submit(f, x) for _ in range(8)]]
    want = np.sin(x) * 2.0 + x
    for out in outs:
        np.testing.assert_array_equal(out, want)
    assert f.cache_info() == (0, 8, 1)  # all compiled; the cache keeps one program
    np.testing.assert_array_equal(f(x), want)  # a hit: no tracing, no barrier
    assert f.cache_info().hits == 1
    _consistent(f)


@functools.partial(ft.jit, static_argnums=1)
def _power(x, n):
    """x ** (n + 1), by recursion through the jitted function itself."""
    return x if n == 0 else x * _power(x, n - 1)


_inner = ft.jit(lambda x: fnp.cos(x) * 0.5)


def _outer_program(x):
    return _inner(x) + _power(x, 3) + _inner(x * 2.0)


def test_jitted_functions_called_while_tracing_in_many_threads():
    outer = ft.jit(_outer_program)
    rng = np.random.default_rng(1)
    jobs = [(rng.standard_normal(SHAPES[i % len(SHAPES)]), i % 4) for i in range(4 * THREADS)]

    def work(job):
        x, n = job
        return outer(x), _power(x, n)

    got = _run_threads(work, jobs)
    reference = ft.jit(_outer_program)
    for (out, power), (x, n) in zip(got, jobs):
        np.testing.assert_array_equal(out, reference(x))
        np.testing.assert_array_equal(power, _power(x, n))
        np.testing.assert_allclose(power, x ** (n + 1), rtol=1e-14)
    for f in (outer, _power, _inner):
        _consistent(f)
