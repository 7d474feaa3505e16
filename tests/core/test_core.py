"""The IR and tracing of ``functrans.core``: printing, DOT output, structural
equality, ``check_jaxpr``, closure conversion, leaked tracers, concretization
(and value-carrying tracing), weak types, the two evaluators, and the rule and
registry lookups of primitives.

Programs are built from the primitives directly (``primitives.elementwise``
functions and ``prim.bind``), so these tests stand on the core alone.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from functrans.primitives.elementwise import add, convert_element_type, cos, gt, mul, sin

import functrans
from functrans import core
from functrans.backends import numpy as numpy_backend
from functrans.core import (
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Literal,
    Primitive,
    ShapedArray,
    ShapeDtypeStruct,
    Var,
    check_jaxpr,
    get_aval,
    registry,
    trace_to_jaxpr,
)
from functrans.errors import (
    ConcretizationError,
    FunctransError,
    JaxprTypeError,
    LeakedTracerError,
    MissingRuleError,
    UnknownPrimitiveError,
)

F64_3 = ShapedArray((3,), np.float64)
F32_3 = ShapedArray((3,), np.float32)
sin_p, add_p, mul_p = registry["sin"], registry["add"], registry["mul"]
reduce_sum_p = registry["reduce_sum"]


def trace(f, *args, **kw) -> ClosedJaxpr:
    closed, _, _ = trace_to_jaxpr(f, list(args), **kw)
    return closed


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------


def test_print_literals_params_and_several_outputs():
    def f(x, y):
        a = mul(x, 2.0)
        b = add(a, np.float32(1.5))
        s = reduce_sum_p.bind(b, axes=(0,))
        return [s, convert_element_type(y, np.float32), gt(y, 3)]

    closed = trace(f, F32_3, ShapedArray((), np.int64, weak_type=True))
    assert str(closed) == (
        "{ lambda ; a:f32[3] b:i64[]. let\n"
        "    c:f32[3] = mul a 2.0\n"
        "    d:f32[3] = add c 1.5:f32\n"
        "    e:f32[] = reduce_sum[axes=(0,)] d\n"
        "    f:f32[] = convert_element_type[new_dtype=float32] b\n"
        "    g:bool[] = gt b 3\n"
        "  in (e, f, g) }"
    )
    assert str(closed.jaxpr) == str(closed) == repr(closed)


def test_print_constants_and_a_passed_through_input():
    c = np.ones(3)
    closed = trace(lambda x: [sin(add(x, c)), x], np.ones(3))
    assert str(closed) == (
        "{ lambda a:f64[3] ; b:f64[3]. let\n"
        "    c:f64[3] = add b a\n"
        "    d:f64[3] = sin c\n"
        "  in (d, b) }"
    )


def test_print_without_equations_or_outputs():
    assert str(trace(lambda x: [x], np.ones(3))) == "{ lambda ; a:f64[3]. let\n  in (a,) }"
    assert str(trace(lambda x: [], np.ones((2, 0)))) == "{ lambda ; a:f64[2,0]. let\n  in () }"
    assert str(trace(lambda: [1.0])) == "{ lambda ; . let\n  in (1.0,) }"


def test_print_literal_dtypes():
    closed = trace(lambda x: [mul(x, True), add(x, 1j), add(x, np.int32(2))],
                   np.ones(2, np.int32))
    assert str(closed) == (
        "{ lambda ; a:i32[2]. let\n"
        "    b:i32[2] = mul a True\n"
        "    c:c128[2] = add a 1j\n"
        "    d:i32[2] = add a 2:i32\n"
        "  in (b, c, d) }"
    )


def test_variable_names_continue_past_z():
    def chain(x):
        for _ in range(30):
            x = sin(x)
        return [x]

    text = str(trace(chain, 1.0))
    assert " z:f64[] = sin y" in text and " aa:f64[] = sin z" in text
    assert text.endswith("    ae:f64[] = sin ad\n  in (ae,) }")


# --------------------------------------------------------------------------
# DOT
# --------------------------------------------------------------------------


def test_to_dot_has_a_node_per_equation_and_edges_along_the_data():
    c = np.ones(3)
    closed = trace(lambda x: [sin(add(x, c)), x, 2.0], np.ones(3))
    dot = closed.to_dot()
    assert dot == closed.jaxpr.to_dot()
    lines = dot.splitlines()
    assert lines[0] == "digraph jaxpr {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}")
    boxes = [line for line in lines if "shape=box" in line]
    assert len(boxes) == len(closed.eqns) == 2
    assert 'label="add\\nc:f64[3]"' in boxes[0] and 'label="sin\\nd:f64[3]"' in boxes[1]
    nodes = {m.group(1) for m in re.finditer(r"^  (\w+) \[label=", dot, re.M)}
    edges = re.findall(r"^  (\w+) -> (\w+);$", dot, re.M)
    assert all(a in nodes and b in nodes for a, b in edges)
    assert set(edges) == {("in_b", "eqn0"), ("const_a", "eqn0"), ("eqn0", "eqn1"),
                          ("eqn1", "out0"), ("in_b", "out1")}
    assert {"out0", "out1", "out2"} <= nodes  # a literal output is a node without an edge


def test_to_dot_draws_literal_operands():
    dot = trace(lambda x: [mul(x, 3.0)], np.ones(2)).to_dot()
    literal = re.search(r'^  (lit\w+) \[label="3.0", shape=plaintext\];$', dot, re.M)
    assert literal and f"  {literal.group(1)} -> eqn0;" in dot


# --------------------------------------------------------------------------
# Structural equality and hashing
# --------------------------------------------------------------------------


def _program(x):
    return [sin(mul(x, 2.0))]


def test_retraced_jaxprs_are_equal_and_hash_equal():
    a, b = trace(_program, np.ones(3)).jaxpr, trace(_program, np.zeros(3)).jaxpr
    assert a is not b and a.invars[0] is not b.invars[0]
    assert a == b and hash(a) == hash(b)
    cache = {a: "cached"}
    assert cache[b] == "cached"


def test_alpha_equivalent_hand_built_jaxprs_are_equal():
    def build(name_hint):
        x, y = Var(F64_3), Var(F64_3)
        out = Var(F64_3)
        return Jaxpr([], [x], [out], [Eqn(mul_p, (x, Literal(2.0, get_aval(2.0))), (y,), {}),
                                      Eqn(sin_p, (y,), (out,), {})])

    assert build(1) == build(2) and hash(build(1)) == hash(build(2))
    assert build(1) == trace(_program, np.ones(3)).jaxpr


@pytest.mark.parametrize("other", [
    lambda x: [sin(mul(x, 3.0))],                    # another literal
    lambda x: [sin(mul(x, np.float32(2.0)))],        # a literal of another dtype
    lambda x: [cos(mul(x, 2.0))],                    # another primitive
    lambda x: [sin(mul(2.0, x))],                    # operands swapped
    lambda x: [sin(mul(x, 2.0)), x],                 # another output list
    lambda x: [reduce_sum_p.bind(sin(mul(x, 2.0)), axes=(0,))],
])
def test_different_programs_are_unequal(other):
    assert trace(other, np.ones(3)).jaxpr != trace(_program, np.ones(3)).jaxpr


def test_different_params_and_avals_are_unequal():
    def total(axes):
        return lambda x: [reduce_sum_p.bind(x, axes=axes)]

    x = np.ones((2, 3))
    assert trace(total((0,)), x).jaxpr != trace(total((1,)), x).jaxpr
    assert trace(total((0,)), x).jaxpr == trace(total((0,)), x).jaxpr
    assert trace(_program, np.ones(3)).jaxpr != trace(_program, np.ones(4)).jaxpr
    assert trace(_program, np.ones(3)).jaxpr != trace(_program, np.ones(3, np.float32)).jaxpr
    # A Python scalar argument is weak, a 0-d array is not.
    assert trace(_program, 1.0).jaxpr != trace(_program, np.array(1.0)).jaxpr


def test_literals_compare_by_value_bits():
    def times(c):
        return lambda x: [mul(x, c)]

    x = np.ones(3)
    # -0.0 == 0.0 in Python, but x * -0.0 and x * 0.0 differ (1 / result).
    assert trace(times(-0.0), x).jaxpr != trace(times(0.0), x).jaxpr
    # nan != nan in Python, but the program x * nan equals itself.
    a, b = trace(times(float("nan")), x).jaxpr, trace(times(float("nan")), x).jaxpr
    assert a == b and hash(a) == hash(b)
    assert trace(times(1), x).jaxpr != trace(times(1.0), x).jaxpr
    assert trace(times(True), x).jaxpr != trace(times(1), x).jaxpr


def test_jaxprs_with_constants_compare_by_structure_closed_ones_by_identity():
    c1, c2 = np.ones(3), np.ones(3)
    a = trace(lambda x: [add(x, c1)], np.ones(3))
    b = trace(lambda x: [add(x, c2)], np.ones(3))
    assert a.jaxpr == b.jaxpr
    assert a != b  # other const arrays
    assert a == ClosedJaxpr(a.jaxpr, [c1]) and hash(a) == hash(ClosedJaxpr(a.jaxpr, [c1]))


# --------------------------------------------------------------------------
# check_jaxpr
# --------------------------------------------------------------------------


def test_check_jaxpr_accepts_traced_programs():
    check_jaxpr(trace(lambda x, y: [add(sin(x), mul(y, 2)), x, 3.0], np.ones(3), np.ones(1)))


def test_check_jaxpr_catches_a_wrong_output_aval():
    x, y = Var(F64_3), Var(F32_3)
    bad = Jaxpr([], [x], [y], [Eqn(sin_p, (x,), (y,), {})])
    with pytest.raises(JaxprTypeError, match=r"equation 0 \(sin\) produces \['f32\[3\]'\] but "
                                             r"its shape rule gives \['f64\[3\]'\]"):
        check_jaxpr(bad)


def test_check_jaxpr_catches_use_before_definition():
    x, y, z = Var(F64_3), Var(F64_3), Var(F64_3)
    bad = Jaxpr([], [x], [z], [Eqn(add_p, (x, y), (z,), {}), Eqn(sin_p, (x,), (y,), {})])
    with pytest.raises(JaxprTypeError, match=r"equation 0 \(add\) uses a variable before it "
                                             r"is defined"):
        check_jaxpr(bad)
    with pytest.raises(JaxprTypeError, match=r"the output list uses a variable before"):
        check_jaxpr(Jaxpr([], [x], [y], []))


def test_check_jaxpr_catches_double_binding():
    x, y = Var(F64_3), Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"variable Var\(f64\[3\]\) is bound twice"):
        check_jaxpr(Jaxpr([], [x], [x], [Eqn(sin_p, (x,), (x,), {})]))
    with pytest.raises(JaxprTypeError, match=r"bound twice"):
        check_jaxpr(Jaxpr([], [x, x], [x], []))
    with pytest.raises(JaxprTypeError, match=r"bound twice"):
        check_jaxpr(Jaxpr([], [x], [y], [Eqn(sin_p, (x,), (y,), {}), Eqn(sin_p, (x,), (y,), {})]))


def test_check_jaxpr_catches_a_failing_shape_rule_and_bad_literals():
    x, y, z = Var(F64_3), Var(ShapedArray((4,), np.float64)), Var(F64_3)
    bad = Jaxpr([], [x, y], [z], [Eqn(add_p, (x, y), (z,), {})])
    with pytest.raises(JaxprTypeError, match=r"equation 0 \(add\) fails its shape rule: add: "
                                             r"shapes f64\[3\] and f64\[4\] do not broadcast"):
        check_jaxpr(bad)
    lit = Literal(2.0, ShapedArray((), np.int32))
    with pytest.raises(JaxprTypeError, match=r"literal 2.0 has a wrong type in equation 0"):
        check_jaxpr(Jaxpr([], [x], [z], [Eqn(mul_p, (x, lit), (z,), {})]))


def test_check_jaxpr_catches_consts_of_the_wrong_type():
    closed = trace(lambda x: [add(x, np.ones(3))], np.ones(3))
    check_jaxpr(closed)
    with pytest.raises(JaxprTypeError, match=r"constvar of type f64\[3\] bound to a value of "
                                             r"type f32\[3\]"):
        check_jaxpr(ClosedJaxpr(closed.jaxpr, [np.ones(3, np.float32)]))


def test_check_jaxpr_catches_a_missing_const():
    closed = trace(lambda x: [add(x, np.ones(3))], np.ones(3))
    with pytest.raises(JaxprTypeError, match=r"1 constvars bound to 0 values"):
        check_jaxpr(ClosedJaxpr(closed.jaxpr, []))


def test_check_jaxpr_checks_the_jaxprs_in_params():
    x, y = Var(F64_3), Var(F32_3)
    bad = ClosedJaxpr(Jaxpr([], [x], [y], [Eqn(sin_p, (x,), (y,), {})]), [])
    a, b = Var(F64_3), Var(F32_3)
    outer = Jaxpr([], [a], [b], [Eqn(registry["checkpoint"], (a,), (b,),
                                     {"jaxpr": bad, "name": "f"})])
    with pytest.raises(JaxprTypeError, match=r"in a sub-Jaxpr of equation 0 \(checkpoint\): "
                                             r"equation 0 \(sin\) produces \['f32\[3\]'\]"):
        check_jaxpr(outer)


def test_the_printed_form_is_part_of_check_errors():
    x, y = Var(F64_3), Var(F32_3)
    with pytest.raises(JaxprTypeError) as info:
        check_jaxpr(Jaxpr([], [x], [y], [Eqn(sin_p, (x,), (y,), {})]))
    assert "b:f32[3] = sin a" in str(info.value)


# --------------------------------------------------------------------------
# Closure conversion and nested traces
# --------------------------------------------------------------------------


def test_an_outer_tracer_becomes_a_constvar_of_the_inner_jaxpr():
    seen = {}

    def outer(x):
        def inner(y):
            return [mul(sin(x), y)]  # closes over the outer tracer x

        closed = trace(inner, ShapedArray((3,), np.float64))
        seen["inner"] = closed
        assert closed.consts == [x]  # the outer tracer itself
        assert closed.jaxpr.constvars[0].aval == x.aval
        check_jaxpr(closed)
        # Evaluating the inner program inside the outer trace records into it.
        (out,) = core.eval_jaxpr(closed.jaxpr, closed.consts, add(x, 1.0))
        assert isinstance(out, core.Tracer) and out._trace is x._trace
        return [out]

    closed = trace(outer, np.ones(3))
    inner = seen["inner"]
    assert str(inner) == (
        "{ lambda a:f64[3] ; b:f64[3]. let\n"
        "    c:f64[3] = sin a\n"
        "    d:f64[3] = mul c b\n"
        "  in (d,) }"
    )
    assert [e.primitive.name for e in closed.eqns] == ["add", "sin", "mul"]
    assert not closed.jaxpr.constvars
    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(numpy_backend.eval_jaxpr(closed, x)[0], np.sin(x) * (x + 1))


def test_a_tracer_returned_from_an_inner_trace_of_the_outer_is_a_const():
    def outer(x):
        closed = trace(lambda y: [x, y], 1.0)
        assert closed.consts == [x] and closed.jaxpr.outvars[0] is closed.jaxpr.constvars[0]
        return [x]

    check_jaxpr(trace(outer, np.ones(2)))


def test_nested_value_carrying_traces():
    def inner(y):
        return [sin(y)] if gt(y, 0.0) else [cos(y)]

    def outer(x):
        closed, outs, concretized = trace_to_jaxpr(inner, [x], concrete=True)
        assert concretized
        return core.eval_jaxpr(closed.jaxpr, closed.consts, x)

    # The inner trace reads its value from the outer tracer's value ...
    closed, outs, concretized = trace_to_jaxpr(outer, [np.array(-1.0)], concrete=True)
    assert concretized  # ... so the outer Jaxpr is specialised too.
    assert [e.primitive.name for e in closed.eqns] == ["gt", "cos"]
    np.testing.assert_allclose(outs[0].val, np.cos(-1.0))
    # An outer trace without values has none to give.
    with pytest.raises(ConcretizationError, match=r"^inner: bool\(\) needs a concrete value"):
        trace_to_jaxpr(outer, [np.array(-1.0)], concrete=False)


# --------------------------------------------------------------------------
# Leaked tracers
# --------------------------------------------------------------------------


_stash: list = []


def test_a_leaked_tracer_raises_a_clear_error():
    def leaky(x):
        _stash.append(x)
        return [sin(x)]

    _stash.clear()
    trace(leaky, np.ones(3))
    (leaked,) = _stash
    message = (r"a tracer f64\[3\] created while tracing 'leaky' was used after that trace "
               r"ended \(at .*test_core.py:\d+\).*return the value from the function instead")
    with pytest.raises(LeakedTracerError, match=message):
        sin(leaked)
    with pytest.raises(LeakedTracerError, match=message):
        add(np.ones(3), leaked)  # not the first operand
    with pytest.raises(LeakedTracerError, match=r"created while tracing 'leaky'"):
        trace(lambda y: [add(y, leaked)], np.ones(3))  # inside another trace
    with pytest.raises(LeakedTracerError, match=r"created while tracing 'leaky'"):
        trace(lambda y: [add(leaked, y)], np.ones(3))
    assert issubclass(LeakedTracerError, RuntimeError)
    _stash.clear()


# --------------------------------------------------------------------------
# Concretization
# --------------------------------------------------------------------------


def _branchy(x):
    if gt(x, 0.0):
        return [sin(x)]
    return [cos(x)]


#: op, what the message names, the value traced, the advice it must give and
#: must not give.  Control flow gets control-flow advice; float(), complex()
#: and np.asarray() make constants, so theirs is how to keep an array.
_CONCRETIZING = [
    (bool, r"bool\(\)", np.array(1), ("functrans.lax.cond", "where", "static_argnums"), None),
    (int, r"int\(\)", np.array(1), ("functrans.lax.cond", "where", "static_argnums"), None),
    (lambda x: [0, 1, 2][x], r"use as an index \(__index__\)", np.array(1),
     ("functrans.lax.cond", "where", "static_argnums"), None),
    (float, r"float\(\)", np.array(1.0),
     ("functrans.numpy functions instead of math", "static_argnums"), "lax.cond"),
    (complex, r"complex\(\)", np.array(1.0),
     ("functrans.numpy functions instead of cmath", "static_argnums"), "lax.cond"),
    (np.asarray, r"np\.asarray\(\)", np.array(1.0),
     ("functrans.numpy.asarray(x)", "static_argnums"), "lax.cond"),
]


@pytest.mark.parametrize("op, what, value, ways_out, wrong_advice", _CONCRETIZING)
def test_concretizing_a_tracer_names_the_function_and_the_ways_out(op, what, value, ways_out,
                                                                   wrong_advice):
    def my_fun(x):
        op(x)
        return [x]

    with pytest.raises(ConcretizationError) as info:
        trace(my_fun, value)
    message = str(info.value)
    assert re.match(rf"my_fun: {what} needs a concrete value, but the value here is traced",
                    message)
    assert re.search(r"\(at .*test_core\.py:\d+\)", message)
    for way_out in ways_out:
        assert way_out in message
    assert wrong_advice is None or wrong_advice not in message
    assert isinstance(info.value, TypeError)


def test_a_float_or_bool_traced_value_is_not_an_index_as_in_numpy():
    for value in (np.array(1.0), np.array(True)):
        with pytest.raises(TypeError, match=r"my_fun: a traced .* was used as an index .*"
                                            r"only integer values can be indices"):
            def my_fun(x):
                [0, 1, 2][x]
                return [x]

            trace(my_fun, value)


def test_a_trace_ended_out_of_order_is_an_internal_error():
    outer, inner = core.JaxprTrace("outer"), core.JaxprTrace("inner")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="the trace of 'outer' ended out of order"):
        outer.__exit__(None, None, None)
    assert core.current_trace() is None  # the stack is not left wrong
    inner.__exit__(None, None, None)


def test_a_trace_asked_for_its_program_before_its_end_is_an_internal_error():
    trace = core.JaxprTrace("unfinished")
    with trace:
        (trace.new_arg(core.ShapedArray((2,), np.float64)) * 2.0)
    with pytest.raises(RuntimeError, match=r"^functrans: the trace of 'unfinished' was asked "
                                           r"for its program before its end \(internal error\)$"):
        trace.closed()
    trace.finish([])
    assert len(trace.closed().jaxpr.outvars) == 0


def test_python_if_on_a_traced_comparison():
    with pytest.raises(ConcretizationError, match=r"^_branchy: bool\(\) needs a concrete value"):
        trace(_branchy, np.array(2.0))
    with pytest.raises(ConcretizationError, match=r"^_branchy: "):
        functrans.make_jaxpr(_branchy)(2.0)


def test_len_and_iteration_of_0d_tracers():
    def f(x):
        with pytest.raises(TypeError, match=r"len\(\) of unsized object"):
            len(x)
        with pytest.raises(TypeError, match=r"iteration over a 0-d traced array"):
            iter(x)
        return [x]

    trace(f, 1.0)
    trace(lambda x: [x] if len(x) == 4 else [], np.ones((4, 2)))


def test_value_carrying_tracing_lets_python_branch_and_reports_it():
    closed, outs, concretized = trace_to_jaxpr(_branchy, [np.array(2.0)], concrete=True)
    assert concretized
    assert [e.primitive.name for e in closed.eqns] == ["gt", "sin"]
    np.testing.assert_allclose(outs[0].val, np.sin(2.0))
    closed, _, concretized = trace_to_jaxpr(_branchy, [np.array(-2.0)], concrete=True)
    assert [e.primitive.name for e in closed.eqns] == ["gt", "cos"]
    # Without branching on a value, the Jaxpr holds for every value.
    closed, outs, concretized = trace_to_jaxpr(_program, [np.array(2.0)], concrete=True)
    assert not concretized
    np.testing.assert_allclose(outs[0].val, np.sin(4.0))


def test_value_carrying_tracing_has_no_value_for_shape_only_arguments():
    with pytest.raises(ConcretizationError, match="needs a concrete value"):
        trace_to_jaxpr(_branchy, [ShapeDtypeStruct((), np.float64)], concrete=True)


def test_concretization_error_carries_the_traces_reason():
    with pytest.raises(ConcretizationError, match=r"traced because jit compiles it \(at "):
        trace_to_jaxpr(_branchy, [1.0], reason=" because jit compiles it")


# --------------------------------------------------------------------------
# Weak types
# --------------------------------------------------------------------------


def test_python_scalars_trace_as_weak_values():
    closed = trace(lambda x, n, b: [x, n, b], 2.0, 3, True)
    assert [a.weak_type for a in closed.in_avals] == [True, True, False]
    assert [a.dtype for a in closed.in_avals] == [np.float64, np.int64, np.bool_]
    assert not trace(lambda x: [x], np.float64(2.0)).in_avals[0].weak_type
    assert not trace(lambda x: [x], np.array(2.0)).in_avals[0].weak_type


@pytest.mark.parametrize("array, scalar, expected", [
    (np.ones(3, np.float32), 2.0, np.float32),
    (np.ones(3, np.int32), 2, np.int32),
    (np.ones(3, np.int32), 2.0, np.float64),
    (np.ones(3, np.float32), 2j, np.complex64),
    (np.ones(3, np.float32), np.float64(2.0), np.float64),
    (np.ones(3, np.float32), np.array(2.0), np.float64),
])
def test_weak_scalars_yield_to_array_dtypes_like_numpy(array, scalar, expected):
    assert (array * scalar).dtype == expected  # NumPy's own rule
    # As a traced argument (weak aval) and as a closed-over literal.
    as_arg = trace(lambda x, s: [mul(x, s)], array, scalar)
    as_literal = trace(lambda x: [mul(x, scalar)], array)
    for closed in (as_arg, as_literal):
        assert closed.out_avals[0].dtype == expected
        check_jaxpr(closed)
    np.testing.assert_array_equal(numpy_backend.eval_jaxpr(as_arg, array, scalar)[0],
                                  array * scalar)


def test_weak_operands_combine_as_weak_scalars():
    closed = trace(lambda s, t: [add(s, t)], 2.0, 3)
    assert closed.out_avals[0].dtype == np.float64


# --------------------------------------------------------------------------
# Evaluating Jaxprs
# --------------------------------------------------------------------------


def _many(x, y):
    a = sin(x)
    b = mul(a, y)
    return [add(b, a), b, x, 2.0]


def test_both_evaluators_agree_with_numpy():
    x, y = np.linspace(-1, 1, 5), np.float32(3.0)
    closed = trace(_many, x, y)
    check_jaxpr(closed)
    want = [np.sin(x) * y + np.sin(x), np.sin(x) * y, x, 2.0]
    for got in (numpy_backend.eval_jaxpr(closed, x, y),
                core.eval_jaxpr(closed.jaxpr, closed.consts, x, y),
                closed(x, y)):
        assert len(got) == 4
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
        assert got[2] is x


def test_evaluating_with_consts_and_literal_operands():
    c = np.arange(3.0)
    closed = trace(lambda x: [mul(add(x, c), np.float32(2))], np.ones(3))
    got = numpy_backend.eval_jaxpr(closed, np.ones(3))[0]
    np.testing.assert_array_equal(got, (1 + c) * 2)
    assert got.dtype == np.float64


def test_core_eval_jaxpr_under_a_trace_re_emits_the_program():
    inner = trace(_program, np.ones(3))
    outer = trace(lambda x: core.eval_jaxpr(inner.jaxpr, inner.consts, x), np.ones(3))
    assert outer.jaxpr == inner.jaxpr


def test_the_numpy_backend_frees_values_after_their_last_use():
    closed = trace(_many, np.ones(2), 1.0)
    drops = numpy_backend.last_uses(closed.jaxpr)
    a, b = (e.outputs[0] for e in closed.eqns[:2])
    # a (sin) dies at the add, after the mul; b is an output and never dies.
    assert drops[0] == [] and drops[1] == [id(closed.jaxpr.invars[1])]
    assert drops[2] == [id(a)] and all(id(b) not in d for d in drops)


# --------------------------------------------------------------------------
# Primitives: rules, registry, bind
# --------------------------------------------------------------------------


@pytest.fixture
def bare_primitive():
    prim = Primitive("test_core_bare", abstract_eval=lambda x: x, impl=lambda x: x)
    try:
        yield prim
    finally:
        del registry[prim.name]


def test_a_missing_rule_names_the_primitive_and_the_transform(bare_primitive):
    for kind, transform in [("jvp", "jvp"), ("transpose", "transpose"), ("batch", "vmap"),
                            ("cuda", "the GPU backend")]:
        with pytest.raises(MissingRuleError) as info:
            bare_primitive.rule(kind)
        assert str(info.value) == (
            f"primitive 'test_core_bare' has no {kind} rule, so {transform} cannot process "
            f"it; add a {kind}= rule where 'test_core_bare' is declared"
        )
    assert issubclass(MissingRuleError, NotImplementedError)
    assert registry["sin"].rule("jvp") is registry["sin"].jvp


def test_declaring_a_primitive_twice_fails(bare_primitive):
    with pytest.raises(ValueError, match=r"primitive 'test_core_bare' is declared twice"):
        Primitive("test_core_bare", abstract_eval=lambda x: x, impl=lambda x: x)


def test_lookup_primitive():
    assert core.lookup_primitive("sin") is registry["sin"]
    with pytest.raises(UnknownPrimitiveError) as info:
        core.lookup_primitive("sine")
    message = str(info.value)
    assert message.startswith("unknown primitive 'sine'; known primitives: abs, add, ")
    assert "sin, " in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, FunctransError)


def test_bind_without_tracers_runs_numpy_at_once():
    out = add_p.bind(np.ones(2), 1.0)
    assert type(out) is np.ndarray and out.tolist() == [2.0, 2.0]
    assert core.current_trace() is None


def test_bind_under_a_trace_records_an_equation():
    def f(x):
        assert core.current_trace() is x._trace
        y = sin_p.bind(x)
        assert isinstance(y, core.Tracer) and y.aval == x.aval
        assert "Tracer<f64[3]>" == repr(y)
        return [y]

    closed = trace(f, np.ones(3))
    assert [e.primitive for e in closed.eqns] == [sin_p]


def test_a_value_carrying_tracer_shows_its_value():
    def f(x):
        assert repr(x) == "Tracer<f64[]> = array(2.)"
        return [x]

    trace_to_jaxpr(f, [np.array(2.0)], concrete=True)


def test_a_0d_array_operand_is_written_as_a_literal_of_its_value_then():
    c = np.array(2.0)
    closed = trace(lambda x: [mul(x, c)], np.ones(2))
    key = hash(closed.jaxpr)
    assert isinstance(closed.eqns[0].inputs[1], Literal) and not closed.consts
    c[()] = 5.0  # writing into the array later changes nothing traced
    np.testing.assert_array_equal(numpy_backend.eval_jaxpr(closed, np.ones(2))[0], [2.0, 2.0])
    assert hash(closed.jaxpr) == key and str(closed.eqns[0].inputs[1].val) == "2.0"


def test_a_non_tracer_array_operand_is_captured_as_a_constant():
    c = np.arange(3.0)
    closed = trace(lambda x: [add(x, c), add(x, c)], np.ones(3))
    assert closed.consts == [c] and len(closed.jaxpr.constvars) == 1


# --------------------------------------------------------------------------
# Avals
# --------------------------------------------------------------------------


def test_get_aval():
    assert get_aval(1.0) == ShapedArray((), np.float64, weak_type=True)
    assert get_aval(1) == ShapedArray((), np.int64, weak_type=True)
    assert get_aval(True) == ShapedArray((), np.bool_)
    assert get_aval(1j) == ShapedArray((), np.complex128, weak_type=True)
    assert get_aval(np.float32(1)) == ShapedArray((), np.float32)
    assert get_aval(np.ones((2, 3), np.int32)) == ShapedArray((2, 3), np.int32)
    assert get_aval([[1.0, 2.0]]) == ShapedArray((1, 2), np.float64)
    assert get_aval(ShapeDtypeStruct((4,), "float32")) == ShapedArray((4,), np.float32)
    with pytest.raises(TypeError, match=r"object is not a valid array value"):
        get_aval(object())


def test_shaped_array_equality_hash_and_printing():
    a = ShapedArray((2, 3), "float64")
    assert a == ShapedArray((2, 3), np.float64) and hash(a) == hash(ShapedArray((2, 3), "f8"))
    assert a != ShapedArray((2, 3), np.float64, weak_type=True)
    assert a.strip_weak() is a
    assert ShapedArray((), np.float64, weak_type=True).strip_weak() == ShapedArray((), "f8")
    assert a.str_short() == "f64[2,3]" and a.ndim == 2 and a.size == 6
    assert ShapedArray((), bool).str_short() == "bool[]"
    assert repr(ShapedArray((), np.int64, True)) == "ShapedArray(i64[], weak)"
    assert a.update(dtype=np.float32) == ShapedArray((2, 3), np.float32)
