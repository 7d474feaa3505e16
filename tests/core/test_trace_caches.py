"""The caches on the way of a trace and of an eager ``grad`` call: the
abstract evaluations found by the ids of their avals (with the traces'
inputs' avals interned) and ``program_cache``'s entry order.  Each answer
must depend on every part of its key: a shape, dtype or weakness that a
cache confused would give a wrong program, not an error."""

from __future__ import annotations

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.core import ShapedArray
from functrans.core.tracing import interned


def _checked_out_aval(f, *args) -> ShapedArray:
    """The aval of ``f``'s one equation traced at ``args``, checked against
    its primitive's own rule (no cache on the way)."""
    closed, _, _ = core.trace_to_jaxpr(lambda *xs: [f(*xs)], args)
    (eqn,) = closed.jaxpr.eqns
    want = eqn.primitive.abstract_eval(*[v.aval for v in eqn.inputs], **eqn.params)
    got = eqn.outputs[0].aval
    assert got == want and got.weak_type == want.weak_type
    return got


def test_the_abstract_evaluations_by_aval_ids_tell_each_type_apart():
    # Traced in turn on each type, twice: the second round is answered from
    # the caches, and must give each type's own result.
    cases = [ShapedArray((3,), np.float64), ShapedArray((3,), np.float32),
             ShapedArray((4,), np.float64), ShapedArray((), np.float64, weak_type=True),
             ShapedArray((), np.float64), ShapedArray((2, 3), np.float32)]
    for _ in range(2):
        for arg in cases:
            assert _checked_out_aval(fnp.sin, arg).dtype == arg.dtype
            assert _checked_out_aval(lambda a: a * a, arg).shape == arg.shape
    # Two operands: each one's type counts (float32 with float64 promotes).
    f32, f64 = ShapedArray((3,), np.float32), ShapedArray((3,), np.float64)
    for _ in range(2):
        assert _checked_out_aval(lambda a, b: a * b, f32, f32) == f32
        assert _checked_out_aval(lambda a, b: a * b, f32, f64) == f64
        assert _checked_out_aval(lambda a, b: a * b, f64, f32) == f64
        assert _checked_out_aval(lambda a, b: a * b, f64, f64) == f64


def test_interned_avals_keep_shape_dtype_and_weakness():
    a = interned(ShapedArray((3,), np.float64))
    assert interned(ShapedArray((3,), np.float64)) is a
    for other in (ShapedArray((3,), np.float32), ShapedArray((4,), np.float64),
                  ShapedArray((3,), np.float64, weak_type=True)):
        got = interned(other)
        assert got is not a and got == other and got.weak_type == other.weak_type


def test_eager_grad_of_one_function_at_each_type_in_turn():
    # The same Python function meets float64 and float32 arrays and shapes in
    # turn: each call's gradient is of its own dtype and shape and value.
    g = ft.grad(lambda x: fnp.sum(fnp.sin(x) * x + x ** 2))
    for _ in range(3):
        for x in (np.linspace(0.1, 1.0, 10), np.linspace(0.1, 1.0, 10).astype(np.float32),
                  np.linspace(0.1, 1.0, 4)):
            got = g(x)
            want = np.sin(x) + x * np.cos(x) + 2 * x
            assert got.dtype == x.dtype and got.shape == x.shape
            np.testing.assert_allclose(got, want, rtol=1e-5 if x.dtype == np.float32 else 1e-14)


def test_a_hit_on_an_older_entry_makes_it_the_newest_again():
    calls = []

    @core.program_cache(maxsize=2, max_equations=10**6)
    def cached(jaxpr, tag):
        calls.append(tag)
        return tag

    def program(n):
        return core.trace_to_jaxpr(lambda x: [fnp.sin(x) * float(n)], [np.ones(n)])[0].jaxpr

    a, b, c = program(1), program(2), program(3)
    # a is met again before and after b is stored: the second hit must move
    # it past b, though the first already made it the newest once.
    assert [cached(a, "a"), cached(a, "a"), cached(b, "b"), cached(a, "a")] == list("aaba")
    cached(c, "c")  # evicts the least recently used: b, not a
    assert cached(a, "a") == "a" and calls == ["a", "b", "c"]
    cached(b, "b")
    assert calls == ["a", "b", "c", "b"]
    info = cached.cache_info()
    assert (info.hits, info.misses, info.currsize) == (3, 4, 2)
    cached.cache_clear()
    assert cached.cache_info()[:4] == (0, 0, 2, 0)


def _fresh_key(jaxpr: core.Jaxpr) -> tuple:
    """``jaxpr``'s structure key walked anew, in a program of its own."""
    return core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns)._structure()


def test_an_opened_program_takes_the_key_its_equations_give():
    c1, c2 = np.arange(3.0), np.float32(2.0) * np.ones((2, 3), np.float32)

    def f(x, y):
        return [fnp.sum(fnp.sin(x * c1) + 2.5) * y, fnp.sum(c2 * y) + c1[0]]

    args = (np.ones(3), np.float64(3.0))
    for checking in (False, True):
        ft.config.update("debug_nans", checking)
        try:
            closed, _, _ = core.trace_to_jaxpr(f, args)
            j = closed.jaxpr
            assert len(j.constvars) >= 2  # c1 and c2 captured
            hash(j)  # memoised: the opened program's key is made from it
            opened = j.opened()
            assert opened._key is not None and opened._key == _fresh_key(opened)
            assert hash(opened) == hash(core.Jaxpr(opened.constvars, opened.invars,
                                                   opened.outvars, opened.eqns))
            assert core.open_jaxpr(closed)[0].jaxpr._key == opened._key
        finally:
            ft.config.update("debug_nans", False)
    # Memoised with the checks off, opened with them on: walked anew, with lines.
    closed, _, _ = core.trace_to_jaxpr(f, args)
    hash(closed.jaxpr)
    ft.config.update("debug_nans", True)
    try:
        opened = closed.jaxpr.opened()
        assert opened._structure() == _fresh_key(opened)
    finally:
        ft.config.update("debug_nans", False)
