"""Where jit could differ from eager evaluation, it does not (DESIGN.md,
"Semantics that must never be silently wrong"): captured arrays are
snapshotted when the function is traced, and a jitted function never
returns an array the caller passed in or one it keeps (a constant, a
snapshot, a scratch-pool buffer), nor a view of one."""

from __future__ import annotations

import importlib

import _gpu_fake
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.backends.numpy import scratch

jit_module = importlib.import_module("functrans.jit")  # functrans.jit is the function

# -- captured arrays are snapshotted -------------------------------------------------------


def test_a_captured_array_written_after_tracing_does_not_reach_the_program():
    a = np.ones(3)
    f = ft.jit(lambda x: x * a + fnp.sum(a))  # fnp.sum(a) is evaluated while tracing
    np.testing.assert_array_equal(f(np.ones(3)), [4.0, 4.0, 4.0])
    a[:] = 7.0
    np.testing.assert_array_equal(f(np.ones(3)), [4.0, 4.0, 4.0])  # not 10, a mix
    f.clear_cache()
    np.testing.assert_array_equal(f(np.ones(3)), [28.0, 28.0, 28.0])


def test_views_of_captured_arrays_are_snapshotted_too():
    base = np.arange(6.0)
    view = base.reshape(2, 3)[:, 1:]
    f = ft.jit(lambda x: x + view)
    want = f(np.zeros((2, 2)))
    base[:] = -1.0
    np.testing.assert_array_equal(f(np.zeros((2, 2))), want)


@pytest.fixture
def snapshots(monkeypatch):
    """The arrays jit copies, as they are copied."""
    taken = []

    def counting(x):
        taken.append(x)
        return snapshot(x)

    snapshot = jit_module._snapshot
    monkeypatch.setattr(jit_module, "_snapshot", counting)
    return taken


def test_a_snapshot_is_taken_once_per_compilation(snapshots):
    a = np.arange(3.0)
    f = ft.jit(lambda x: x * a)
    for _ in range(3):
        f(np.ones(3))
    assert len(snapshots) == 1 and snapshots[0] is a
    f(np.ones((2, 3)))  # a new signature: a new compilation, a new snapshot
    assert len(snapshots) == 2


def test_only_what_the_program_keeps_is_copied(snapshots):
    kept, dropped = np.arange(3.0), np.arange(3.0) + 10

    def g(x):
        unused = x * dropped  # noqa: F841  (dead code: dropped with its constant)
        return x * kept

    np.testing.assert_array_equal(ft.jit(g)(np.ones(3)), kept)
    assert [s is kept for s in snapshots] == [True]


def test_a_jitted_function_inside_jit_hands_over_its_snapshot(snapshots):
    a = np.arange(3.0)
    inner = ft.jit(lambda x: x * a)
    outer = ft.jit(lambda x: inner(x) + 1.0)
    np.testing.assert_array_equal(outer(np.ones(3)), a + 1.0)
    assert len(snapshots) == 1  # the inner program's copy, used by the outer as it is


def test_a_broadcast_capture_copies_only_the_data_under_it():
    row = np.arange(3.0)
    wide = np.broadcast_to(row, (100_000, 3))  # 2.4 MB as an array, 24 bytes of data
    f = ft.jit(lambda x: x * wide)
    (const,) = f.lower(np.ones((100_000, 3))).jaxpr.consts
    assert const.strides[0] == 0 and not np.shares_memory(const, row)
    np.testing.assert_array_equal(const, wide)
    want = f(np.ones((100_000, 3)))
    row[:] = 5.0
    np.testing.assert_array_equal(f(np.ones((100_000, 3))), want)


# -- results belong to the caller ---------------------------------------------------------

CONST = np.arange(6.0).reshape(2, 3)

#: name -> (function, arguments); every result must be memory of its own.
RETURNS_AN_INPUT = {
    "identity": (lambda x: x, (np.arange(6.0),)),
    "x * 1.0": (lambda x: x * 1.0, (np.arange(6.0),)),
    "x - 0.0": (lambda x: x - 0.0, (np.arange(6.0),)),
    "astype(same)": (lambda x: x.astype(np.float64), (np.arange(6.0),)),
    "real of a real": (fnp.real, (np.arange(6.0),)),
    "twice": (lambda x: (x, x), (np.arange(6.0),)),
    "twice, once simplified": (lambda x: (x * 1.0, x), (np.arange(6.0),)),
    "reshape": (lambda x: x.reshape(2, 3), (np.arange(6.0),)),
    "transpose": (lambda x: x.T, (np.arange(6.0).reshape(2, 3),)),
    "slice": (lambda x: x[1:], (np.arange(6.0),)),
    "broadcast": (lambda x: fnp.broadcast_to(x, (1000, 6)), (np.arange(6.0),)),  # a view
    "0-d": (lambda x: x, (np.array(2.0),)),
    "0-d view": (lambda x: x.reshape(()), (np.array([2.0]),)),
    "second argument": (lambda x, y: (x * 2.0, y), (np.arange(6.0), np.arange(3.0))),
    "zero-trip loop": (lambda x: lax.while_loop(lambda c: c[0] > 100.0, lambda c: c * 2.0, x),
                       (np.arange(6.0),)),
    "constant": (lambda x: (x * 2.0, CONST), (np.arange(6.0),)),
    "constant view": (lambda x: (x * 2.0, CONST.T), (np.arange(6.0),)),
    "constant * 1.0": (lambda x: (x * 2.0, CONST * 1.0), (np.arange(6.0),)),
    "constant plus input": (lambda x: (CONST.reshape(-1), x), (np.arange(6.0),)),
    # Common-subexpression elimination makes these one value returned twice.
    "one result twice": (lambda x: (x * 2.0, x * 2.0), (np.arange(6.0),)),
    "one 0-d result twice": (lambda x: (fnp.sum(x), fnp.sum(x)), (np.arange(6.0),)),
    "one result twice in a dict": (lambda x: {"a": fnp.sin(x), "b": fnp.sin(x)},
                                   (np.arange(6.0),)),
    "a result, then a view of it": (lambda x: (x * 2.0, (x * 2.0).reshape(2, 3)),
                                    (np.arange(6.0),)),
    "a view of a result, then it": (lambda x: ((x * 2.0)[1:], x * 2.0), (np.arange(6.0),)),
}


def _arrays(tree):
    leaves = ft.tree_util.tree_flatten(tree)[0]
    return [x for x in leaves if isinstance(x, np.ndarray)]


@pytest.mark.parametrize("name", sorted(RETURNS_AN_INPUT))
def test_results_never_share_memory_with_arguments_constants_or_each_other(name):
    fn, args = RETURNS_AN_INPUT[name]
    f = ft.jit(fn)
    for _ in range(2):  # compiling call and cached call
        outs = _arrays(f(*args))
        entry_consts = [c for c in f.lower(*args).jaxpr.consts if isinstance(c, np.ndarray)]
        kept = [*args, CONST, *entry_consts]
        for i, out in enumerate(outs):
            assert not any(np.shares_memory(out, k) for k in kept), name
            assert not any(np.shares_memory(out, o) for o in outs[i + 1:]), name
    # Writing into the results changes neither the arguments nor later results.
    want = [o.copy() for o in _arrays(fn(*args))]
    for out in _arrays(f(*args)):
        out[...] = -7.0
    for got, w in zip(_arrays(f(*args)), want):
        np.testing.assert_array_equal(got, w)


def test_results_of_arithmetic_are_returned_without_a_copy():
    source = ft.jit(lambda x, y: (x * y + 1.0, x.reshape(-1))).lower(
        np.ones((2, 3)), np.ones((2, 3))).source
    lines = source.splitlines()
    ret = lines[-1]
    assert "_owned(" in ret and ret.count("_owned(") == 1 and "_copied(" not in ret, source


def test_results_are_never_scratch_pool_buffers():
    n = 1 << 16  # 512 KiB of float64: the pool keeps these
    f = ft.jit(lambda x: (fnp.sin(x) * 2.0 + 1.0) * 3.0)
    x = np.linspace(0.0, 1.0, n)
    first = f(x)
    want = first.copy()
    second = f(x + 1.0)
    third = f(x)
    np.testing.assert_array_equal(first, want)
    pooled = [a for arrays in scratch.free.values() for a in arrays]
    for out in (first, second, third):
        assert not any(np.shares_memory(out, p) for p in pooled)
    assert not np.shares_memory(first, third) and not np.shares_memory(second, third)


def test_under_another_transform_a_concrete_result_is_a_copy():
    a = np.arange(3.0)
    f = ft.jit(lambda x: (x * 2.0, a))
    x = np.ones(3)
    (_, primal_a), _ = ft.jvp(f, (x,), (x,))
    primal_a[:] = 99.0  # not the program's constant
    np.testing.assert_array_equal(ft.jvp(f, (x,), (x,))[0][1], [0.0, 1.0, 2.0])
    assert not np.shares_memory(primal_a, a)


# -- the GPU program (on the stand-in for CuPy) ---------------------------------------------


@pytest.fixture
def fake():
    module, undo = _gpu_fake.install()
    try:
        yield module
    finally:
        undo()


def test_gpu_results_never_share_memory_with_arguments_or_constants(fake):
    d = ft.device_put(np.arange(6.0), "gpu")
    c = ft.device_put(np.ones(6), "gpu")
    f = ft.jit(lambda x: (x, x * 1.0, x, x.reshape(2, 3), c, c.reshape(3, 2), x * c,
                          fnp.sum(x), x * c, fnp.sin(x).reshape(2, 3), fnp.sin(x)))
    consts = [k._a for k in f.lower(d).jaxpr.consts]
    for _ in range(2):
        outs = f(d)
        assert all(type(o) is fake.ndarray for o in outs)
        data = [o._a for o in outs]
        for i, out in enumerate(data):
            assert not any(np.shares_memory(out, k) for k in [d._a, c._a, *consts])
            assert not any(np.shares_memory(out, o) for o in data[i + 1:])


def test_a_captured_device_array_is_snapshotted_on_the_device(fake):
    c = ft.device_put(np.arange(3.0), "gpu")
    f = ft.jit(lambda x: x * c)
    d = ft.device_put(np.ones(3), "gpu")
    np.testing.assert_array_equal(f(d).get(), [0.0, 1.0, 2.0])
    c[:] = 7.0
    out = f(d)
    assert type(out) is fake.ndarray
    np.testing.assert_array_equal(out.get(), [0.0, 1.0, 2.0])
    (const,) = f.lower(d).jaxpr.consts
    assert type(const) is fake.ndarray and not np.shares_memory(const._a, c._a)
