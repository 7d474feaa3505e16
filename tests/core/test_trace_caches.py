"""The caches on the way of a trace and of an eager ``grad`` call: the
abstract evaluations found by the ids of their avals (with the traces'
inputs' avals interned) and ``program_cache``'s entry order.  Each answer
must depend on every part of its key: a shape, dtype or weakness that a
cache confused would give a wrong program, not an error."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.core import ShapedArray
from functrans.core.tracing import array_aval, interned


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



def _typed_eval(x, *, k):
    # Params equal under == (and hashing alike) that give other results:
    # 1 and True, (0,) and (0.0,), 0.0 and -0.0, 2 and 2.0.
    text = repr(k)
    return ShapedArray(x.shape, np.float32 if ("True" in text or "." in text) else np.float64)


@pytest.fixture
def typed_probe():
    name = "test_trace_caches_typed_probe"
    prim = core.Primitive(name, abstract_eval=_typed_eval, impl=lambda x, *, k: x)
    try:
        yield prim
    finally:
        core.registry.pop(name, None)


def test_the_abstract_evaluations_with_params_tell_their_types_apart(typed_probe):
    # Traced in turn with each param, twice: the second round is answered
    # from the cache where a param is memoised, and must give its own result.
    x = ShapedArray((3,), np.float64)
    params = [1, True, (0,), (0.0,), (0, 1), (False, 1), 0.0, -0.0, 2, 2.0, "a", None]
    for _ in range(2):
        for k in params:
            assert _checked_out_aval(lambda a, k=k: core.bind(typed_probe, a, k=k), x) == \
                _typed_eval(x, k=k)


def test_interned_avals_keep_shape_dtype_and_weakness():
    a = interned(ShapedArray((3,), np.float64))
    assert interned(ShapedArray((3,), np.float64)) is a
    for other in (ShapedArray((3,), np.float32), ShapedArray((4,), np.float64),
                  ShapedArray((3,), np.float64, weak_type=True)):
        got = interned(other)
        assert got is not a and got == other and got.weak_type == other.weak_type


def test_the_aval_of_a_traced_array_argument_is_its_own_types():
    # array_aval finds the shared aval by shape, dtype and weakness: with the
    # other types interned first, each array still gets an aval of its own type.
    interned(ShapedArray((), np.float64, weak_type=True))
    interned(ShapedArray((3,), np.float32))
    interned(ShapedArray((4,), np.float64))
    arrays = (np.ones(()), np.ones(3), np.ones(4, np.float32), np.ones(3))
    for _ in range(2):  # the second round finds each one interned (as new_arg does)
        for x in arrays:
            got = array_aval(x)
            assert (got.shape, got.dtype, got.weak_type) == (x.shape, x.dtype, False)
            interned(got)
    assert all(array_aval(x) is interned(ShapedArray(x.shape, x.dtype)) for x in arrays)


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


def test_a_hit_a_guard_answers_makes_the_entry_the_newest_too():
    # A caller that recognises its last entry itself (eager grad's plan
    # guard) counts the hit with count_hit: the entry must then be kept
    # before one that no call has used since.
    @core.program_cache(maxsize=2, max_equations=10**6)
    def cached(jaxpr, tag):
        return [tag]

    def program(n):
        return core.trace_to_jaxpr(lambda x: [fnp.sin(x) * float(n)], [np.ones(n)])[0].jaxpr

    a, b, c = program(1), program(2), program(3)
    result_a = cached(a, "a")
    cached(b, "b")
    cached.count_hit((a, "a"), result_a)  # a used through the guard: newer than b
    cached(c, "c")
    assert cached(a, "a") is result_a  # kept: b went
    assert cached.cache_info()[:2] == (2, 3)
    cached.count_hit((b, "b"), ["b"])  # no longer kept: counted, nothing moved
    assert cached.cache_info().currsize == 2 and cached(a, "a") is result_a


def test_eager_grad_keeps_a_plan_its_guard_answers_for():
    from functrans import _eager_grad

    g = ft.grad(lambda x: fnp.sum(fnp.sin(x) * x))
    x = np.linspace(0.1, 1.0, 5)
    g(x)
    g(x)  # the guard holds the plan from now on
    plan = _eager_grad.grad_plan._newest.result
    for n in range(1, 4):  # other plans stored after it
        ft.grad(lambda x, n=n: fnp.sum(fnp.cos(x) ** n))(x)
    g(x)  # answered by the guard: the plan is the newest again
    assert _eager_grad.grad_plan._newest.result is plan
    assert list(_eager_grad.grad_plan._entries.values())[-1].result is plan


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


# -- the tape of a trace (``JaxprTrace``) and eager grad's ``PlanGuard`` ----------

_NAN_A = struct.unpack("=d", struct.pack("=Q", 0x7FF8000000000001))[0]
_NAN_B = struct.unpack("=d", struct.pack("=Q", 0x7FF8000000000002))[0]
_X3, _X33 = np.linspace(0.5, 1.5, 3), np.linspace(0.5, 1.5, 9).reshape(3, 3)
_C64, _C64B = np.arange(3.0), np.arange(3.0) + 7.0

#: Pairs of traces that record programs differing in one part each: the
#: tapes must tell them apart, as the programs' keys do.
_DIFFERENT = {
    "primitive": (fnp.sin, fnp.cos, (_X3,), (_X3,)),
    "operand order": (lambda x, y: x - y, lambda x, y: y - x, (_X3, _X3 + 1), (_X3, _X3 + 1)),
    "operand wiring": (lambda x: fnp.sin(x) * x, lambda x: fnp.sin(x) * fnp.sin(x),
                       (_X3,), (_X3,)),
    "params": (lambda x: fnp.sum(x, axis=0), lambda x: fnp.sum(x, axis=1), (_X33,), (_X33,)),
    "literal value": (lambda x: x * 2.0, lambda x: x * 3.0, (_X3,), (_X3,)),
    "literal side": (lambda x: x - 1.0, lambda x: 1.0 - x, (_X3,), (_X3,)),
    "literal type": (lambda x: x * 2.0, lambda x: x * 2, (_X3,), (_X3,)),
    "literal sign of zero": (lambda x: x * 0.0, lambda x: x * -0.0, (_X3,), (_X3,)),
    "literal NaN bits": (lambda x: x + _NAN_A, lambda x: x + _NAN_B, (_X3,), (_X3,)),
    "literal weakness": (lambda x: x * 2.0, lambda x: x * np.float64(2.0), (_X3,), (_X3,)),
    "input shape": (fnp.sin, fnp.sin, (_X3,), (np.ones(4),)),
    "input dtype": (fnp.sin, fnp.sin, (_X3,), (_X3.astype(np.float32),)),
    "input weakness": (fnp.sin, fnp.sin, (ShapedArray((), np.float64, weak_type=True),),
                       (ShapedArray((), np.float64),)),
    "constant against input": (lambda x: x * _C64, lambda x: x * x, (_X3,), (_X3,)),
    "constant type": (lambda x: fnp.sum(x) * _C64, lambda x: fnp.sum(x) * _C64.astype(np.float32),
                      (_X3,), (_X3,)),
    "result": (lambda x: fnp.sin(x) + fnp.cos(x), lambda x: fnp.sin(fnp.cos(x)) + x,
               (_X3,), (_X3,)),
}


def _taped(f, args, n_out=1):
    tape: list = []
    closed, _, _ = core.trace_to_jaxpr(
        (lambda *xs: [f(*xs)]) if n_out == 1 else (lambda *xs: list(f(*xs))), args, tape=tape)
    return tape, closed.jaxpr


@pytest.mark.parametrize("part", sorted(_DIFFERENT))
def test_tapes_differ_where_the_traced_programs_differ(part):
    f, g, args_f, args_g = _DIFFERENT[part]
    tape_f, jaxpr_f = _taped(f, args_f)
    tape_g, jaxpr_g = _taped(g, args_g)
    assert jaxpr_f != jaxpr_g
    assert tape_f != tape_g


def _sine_here(x):
    return fnp.sin(x)


def _sine_there(x):
    return fnp.sin(x)


def test_tapes_of_one_program_from_other_lines_differ():
    # The same program made on other lines: equal programs (their keys hold
    # no lines), but the errors and warnings of each name its own lines.
    tape_a, jaxpr_a = _taped(_sine_here, (_X3,))
    tape_b, jaxpr_b = _taped(_sine_there, (_X3,))
    assert jaxpr_a == jaxpr_b and tape_a != tape_b


def test_tapes_are_equal_where_the_traced_programs_are():
    def f(x, y):
        return fnp.sum(fnp.sin(x) * y + x ** 2 - 0.5, axis=0), y * _C64

    for args in ((_X3, _X3 + 1), (_X3 * 2, _X3)):
        (tape_a, jaxpr_a), (tape_b, jaxpr_b) = _taped(f, args, 2), _taped(f, args, 2)
        assert jaxpr_a == jaxpr_b and tape_a == tape_b
    # Another constant of the same type: an input of the same program.
    constant = [_C64]

    def scaled(x):
        return x * constant[0], x

    tape_a, jaxpr_a = _taped(scaled, (_X3,), 2)
    constant[0] = _C64B
    tape_b, jaxpr_b = _taped(scaled, (_X3,), 2)
    assert jaxpr_a == jaxpr_b and tape_a == tape_b
    # Results in another order: another program and another tape.
    tape_a, jaxpr_a = _taped(lambda x: (x, fnp.sin(x)), (_X3,), 2)
    tape_b, jaxpr_b = _taped(lambda x: (fnp.sin(x), x), (_X3,), 2)
    assert jaxpr_a != jaxpr_b and tape_a != tape_b


def test_one_grad_function_switching_programs_gets_each_ones_gradient():
    # One grad function whose traced program changes between calls in one
    # part only: the plan it ran last must not be taken for the other.
    state = {"scale": 0.0, "axis": 0}

    def loss(x):
        return fnp.sum(fnp.sum(x * state["scale"] + x, axis=state["axis"]) ** 2)

    g = ft.grad(loss)
    x = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    for _ in range(4):  # the first calls build, the later ones run the plans
        for scale, axis in ((0.0, 0), (-0.0, 0), (0.0, 1), (-0.0, 1)):
            state["scale"], state["axis"] = scale, axis
            s = np.sum(x * scale + x, axis=axis, keepdims=True)
            want = 2 * s * (scale + 1.0) + np.zeros_like(x)
            np.testing.assert_allclose(g(x), want, rtol=1e-14)
    # The sign of the zero scale shows in the gradient of sum(x * scale).
    h = ft.grad(lambda x: fnp.sum(x * state["scale"]))
    for _ in range(4):
        for scale in (0.0, -0.0):
            state["scale"] = scale
            got = h(x)
            assert got.tobytes() == np.full_like(x, scale).tobytes()


def _probe_eval(x, *, k):
    # Params equal under == (1 and 1.0) that give other results: as a key
    # compares params by ==, the results' avals and number tell them apart.
    if type(k) is int:
        return [ShapedArray(x.shape, np.float64)]
    return [ShapedArray(x.shape, np.float32), ShapedArray(x.shape, np.float64)]


@pytest.fixture
def probe():
    name = "test_trace_caches_probe"
    prim = core.Primitive(name, abstract_eval=_probe_eval, multiple_results=True,
                          impl=lambda x, *, k: [x] if type(k) is int else [x, x])
    try:
        yield prim
    finally:
        core.registry.pop(name, None)


def test_tapes_hold_the_results_types_and_where_a_constant_is_bound(probe):
    # Results of other types for params equal under ==.
    tape_f, jaxpr_f = _taped(lambda x: core.bind(probe, x, k=1)[0], (_X3,))
    tape_g, jaxpr_g = _taped(lambda x: core.bind(probe, x, k=1.0)[0], (_X3,))
    assert jaxpr_f != jaxpr_g and tape_f != tape_g
    # A constant bound after an equation of one result, against an equation
    # of two results of the same types: the numbers of the variables agree.
    probe.abstract_eval = lambda x, *, k: [x] * (1 if type(k) is int else 2)
    tape_f, jaxpr_f = _taped(lambda x: core.bind(probe, x, k=1)[0] * _C64, (_X3,))
    tape_g, jaxpr_g = _taped(lambda x: fnp.multiply(*core.bind(probe, x, k=1.0)), (_X3,))
    assert jaxpr_f != jaxpr_g and tape_f != tape_g


# -- equations written on the tape only, made when first read ----------------------


def _updated_in_place(x):
    y = x * 2.0
    y[0] = 1.0  # reads the equations so far (where the update's view stands)
    return fnp.sum(y * x) + 0.5


#: Programs whose taped traces write some equations on the tape only (this
#: trace's tracers and Python scalars) and record others at once (a NumPy
#: array or scalar operand, a constant bound midway, an update in place).
_MIXED = {
    "literals": lambda x: (x * 2.0 + -0.0 * x - _NAN_A) ** 3 * True + 1,
    "literals on either side": lambda x: (1.5 - x) / 2 + 3 / (x + 1) - (True - x) * 2j,
    "a constant midway": lambda x: fnp.sum(fnp.sin(x) * _C64 + 2.0, axis=0) * x,
    "a NumPy scalar operand": lambda x: fnp.sin(x) * np.float64(2.0) * 3.0 - x,
    "results of several equations": lambda x: fnp.linalg.slogdet(x * 0.5 + x.T)[1] * x,
    "an update in place": _updated_in_place,
}


def _literal_values(jaxpr) -> list:
    return [(type(a.val), a.key()) for e in jaxpr.eqns for a in e.inputs
            if type(a) is core.Literal]


@pytest.mark.parametrize("case", sorted(_MIXED))
def test_equations_made_from_the_tape_are_those_recorded_at_once(case):
    f = _MIXED[case]
    x = _X33
    taped, _, _ = core.trace_to_jaxpr(lambda x: [f(x)], [x], tape=[])
    untaped, _, _ = core.trace_to_jaxpr(lambda x: [f(x)], [x])
    a, b = taped.jaxpr, untaped.jaxpr
    assert a == b and str(a) == str(b)
    assert [e.source for e in a.eqns] == [e.source for e in b.eqns]
    assert _literal_values(a) == _literal_values(b)
    assert [type(c) for c in taped.consts] == [type(c) for c in untaped.consts]
    core.check_jaxpr(a)


def test_equations_read_midway_are_made_in_order():
    seen = []

    def f(x):
        y = fnp.sin(x * 2.0)
        seen.append([e.primitive.name for e in core.current_trace().eqns])
        return y + 1.0

    trace, _ = core.record(lambda x: [f(x)], [_X3], tape=[])
    assert seen == [["mul", "sin"]]
    assert [e.primitive.name for e in trace.closed().jaxpr.eqns] == ["mul", "sin", "add"]
