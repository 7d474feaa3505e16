"""Every optimisation pass is IEEE-exact (DESIGN.md, "Semantics that must
never be silently wrong"): random programs full of the patterns the
simplifier knows (literal 0.0, -0.0, 1.0, negations, equal operands) give,
at every special value (NaN, infinities, signed zeros, subnormals, the
largest numbers, the extreme integers), bit for bit what eager evaluation
gives, under ``jit``, through ``run_passes`` and with every operand a
constant (everything folded): the same dtype, shape and values, and the
same sign bit everywhere, NaNs included (IEEE 754 leaves the sign of a NaN
result to the implementation, but which one an operation returns is
deterministic, and it shows later: ``copysign``, the infinite imaginary part
of a complex square root).
"""

from __future__ import annotations

import numpy as np
import pytest
from _programs import dataflow, run_dataflow
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.backends.numpy import eval_jaxpr
from functrans.passes.dce import dce_closed
from functrans.passes.fold import fold
from functrans.passes.pipeline import run_passes

_F = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e308,
      -1e308, -2.5, 3.0, 1.0, -1.0]
_F32 = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.1754944e-38, 3.4e38, -3.4e38,
        -2.5, 3.0, 1.0, -1.0]
_C = [complex(r, i) for r, i in [(np.nan, 0.0), (0.0, np.nan), (np.inf, 1.0), (1.0, np.inf),
                                 (-np.inf, -0.0), (0.0, 0.0), (-0.0, -0.0), (-0.0, 0.0),
                                 (0.0, -0.0), (1e308, 1e308), (5e-324, -1.0), (-2.5, 3.0),
                                 (1.0, 0.0)]]
_I = [0, 1, -1, 7, -3, 2**63 - 1, -(2**63)]

#: Per dtype: the special values every input pairs with every other.
SPECIALS = {
    np.dtype(np.float64): np.array(_F),
    np.dtype(np.float32): np.array(_F32, np.float32),
    np.dtype(np.complex128): np.array(_C),
    np.dtype(np.int64): np.array(_I, np.int64),
}


def inputs(dtype):
    """Three arrays holding every pair of special values (x, y) and a third
    arrangement (the captured constant)."""
    s = SPECIALS[np.dtype(dtype)]
    n = len(s)
    return np.repeat(s, n), np.tile(s, n), np.tile(s[::-1], n)


# (name, function, dtype kinds it applies to).  Values may change dtype in a
# program (an int divided is a float), so ops for "i" also take floats.
ALL, REAL, FLOAT = "fciu", "fiu", "f"
UNARY = [
    ("x + 0.0", lambda a: a + 0.0, ALL), ("x + -0.0", lambda a: a + -0.0, ALL),
    ("0.0 + x", lambda a: 0.0 + a, ALL), ("-0.0 + x", lambda a: -0.0 + a, ALL),
    ("x - 0.0", lambda a: a - 0.0, ALL), ("x - -0.0", lambda a: a - -0.0, ALL),
    ("0.0 - x", lambda a: 0.0 - a, ALL),
    ("x * 1.0", lambda a: a * 1.0, ALL), ("1.0 * x", lambda a: 1.0 * a, ALL),
    ("x / 1.0", lambda a: a / 1.0, ALL), ("x * -1.0", lambda a: a * -1.0, ALL),
    ("x * 0.0", lambda a: a * 0.0, ALL), ("0.0 * x", lambda a: 0.0 * a, ALL),
    ("x + 0", lambda a: a + 0, ALL), ("0 + x", lambda a: 0 + a, ALL),
    ("x - 0", lambda a: a - 0, ALL), ("x * 1", lambda a: a * 1, ALL),
    ("1 * x", lambda a: 1 * a, ALL), ("x / 1", lambda a: a / 1, ALL),
    ("x - x", lambda a: a - a, ALL), ("x / x", lambda a: a / a, ALL),
    ("x * x", lambda a: a * a, ALL),
    ("-x", fnp.negative, ALL), ("--x", lambda a: fnp.negative(fnp.negative(a)), ALL),
    ("x ** 1", lambda a: a ** 1, ALL), ("x ** 0", lambda a: a ** 0, ALL),
    ("x ** 1.0", lambda a: a ** 1.0, FLOAT),
    ("where(isnan x, x, x)", lambda a: fnp.where(fnp.isnan(a), a, a), ALL),
    ("max(x, x)", lambda a: fnp.maximum(a, a), REAL),
    ("min(x, x)", lambda a: fnp.minimum(a, a), REAL),
    ("x + nan", lambda a: a + np.nan, ALL), ("x * inf", lambda a: a * np.inf, ALL),
    ("x + 1e308", lambda a: a + 1e308, ALL), ("x * 1e-300", lambda a: a * 1e-300, ALL),
    ("x + (-0-0j)", lambda a: a + complex(-0.0, -0.0), "c"),
    ("x * (1+0j)", lambda a: a * (1 + 0j), "c"),
    ("x.T.T", lambda a: a[:, None].T.T[:, 0], ALL),
    ("astype(same)", lambda a: a.astype(a.dtype), ALL),
    ("abs", fnp.abs, ALL), ("sqrt", fnp.sqrt, "fc"), ("exp", fnp.exp, "fc"),
]
BINARY = [
    ("x + y", fnp.add, ALL), ("x - y", fnp.subtract, ALL), ("x * y", fnp.multiply, ALL),
    ("x / y", fnp.divide, ALL),
    ("-(x - y)", lambda a, b: fnp.negative(a - b), ALL),
    ("x + -y", lambda a, b: a + fnp.negative(b), ALL),
    ("-y + x", lambda a, b: fnp.negative(b) + a, ALL),
    ("x - -y", lambda a, b: a - fnp.negative(b), ALL),
    ("-((-x) * y)", lambda a, b: fnp.negative(fnp.negative(a) * b), ALL),
    ("-(x * -y)", lambda a, b: fnp.negative(a * fnp.negative(b)), ALL),
    ("max(x, y)", fnp.maximum, REAL),
    ("where(x > y, x, y)", lambda a, b: fnp.where(a > b, a, b), REAL),
    ("x * y + x", lambda a, b: a * b + a, ALL),
]


def _tables(kind):
    return ([f for _, f, kinds in UNARY if kind in kinds],
            [f for _, f, kinds in BINARY if kind in kinds])


def assert_bitwise(got, want, what=""):
    """Same dtype, shape and values, NaN where NaN, and the same sign bit
    everywhere (each part of a complex number on its own)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    parts = [(got.real, want.real), (got.imag, want.imag)] if want.dtype.kind == "c" \
        else [(got, want)]
    for g, w in parts:
        assert np.array_equal(g, w, equal_nan=True), (what, g[g != w], w[g != w])
        sign = np.signbit(g) != np.signbit(w)
        assert not sign.any(), (what, "signs differ", g[sign], w[sign])


def _all_constants(closed: core.ClosedJaxpr, values) -> core.ClosedJaxpr:
    """``closed`` with its inputs made constants of those values."""
    j = closed.jaxpr
    return core.ClosedJaxpr(core.Jaxpr(j.invars, [], j.outvars, j.eqns), list(values))


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(sorted(SPECIALS, key=str)))
    unary, binary = _tables(dtype.kind)
    return dtype, draw(dataflow(len(unary), len(binary), 3, 8))


@settings(max_examples=150, deadline=None)
@given(programs())
def test_optimised_programs_match_eager_evaluation_bit_for_bit(case):
    dtype, program = case
    unary, binary = _tables(dtype.kind)
    x, y, c = inputs(dtype)

    def f(a, b, k):
        return run_dataflow(program, unary, binary, [a, b, k])

    with np.errstate(all="ignore"):
        want = f(x, y, c)
        closed = ft.make_jaxpr(f)(x, y, c)
        results = {
            "jit": ft.jit(f)(x, y, c),
            "run_passes": eval_jaxpr(run_passes(closed), x, y, c),
            "folded": eval_jaxpr(run_passes(_all_constants(closed, [x, y, c]))),
            # the captured constant folded into the rest, the inputs traced
            "jit, captured": ft.jit(lambda a, b: f(a, b, c))(x, y),
        }
    for how, outs in results.items():
        for got, w in zip(outs, want):
            assert_bitwise(got, w, f"{how}: {program}")


# -- the rules one by one ----------------------------------------------------------------

F64, C128, I64 = np.dtype(np.float64), np.dtype(np.complex128), np.dtype(np.int64)

#: (expression, dtype, whether jit removes the operation)
RULES = [
    (lambda a: a + 0.0, F64, False),  # -0.0 + 0.0 = +0.0
    (lambda a: 0.0 + a, F64, False),
    (lambda a: a + -0.0, F64, True),
    (lambda a: -0.0 + a, F64, True),
    (lambda a: a - 0.0, F64, True),
    (lambda a: a - -0.0, F64, False),  # -0.0 - -0.0 = +0.0
    (lambda a: a + 0, F64, False),  # the int 0 is +0.0
    (lambda a: a * 1.0, F64, True),
    (lambda a: a * 1, F64, True),
    (lambda a: a / 1.0, F64, True),
    (lambda a: a * 1.0, C128, False),  # (inf + 1j) * 1 has a NaN part
    (lambda a: a / 1.0, C128, False),
    (lambda a: a + -0.0, C128, False),  # the real -0.0 gets a +0.0 imaginary part
    (lambda a: a + complex(-0.0, -0.0), C128, True),
    (lambda a: a - 0.0, C128, True),
    (lambda a: a + 0, I64, True),
    (lambda a: a - 0, I64, True),
    (lambda a: a * 1, I64, True),
    (lambda a: a + np.broadcast_to(np.float64(-0.0), (196,)), F64, True),  # a broadcast constant
    (lambda a: a + np.broadcast_to(np.float64(0.0), (196,)), F64, False),
]


@pytest.mark.parametrize("i", range(len(RULES)))
def test_each_identity_is_dropped_only_where_exact(i):
    fn, dtype, dropped = RULES[i]
    x = inputs(dtype)[0]
    lowered = ft.jit(fn).lower(x)
    assert (not lowered.jaxpr.eqns) == dropped, str(lowered.jaxpr)
    with np.errstate(all="ignore"):
        assert_bitwise(ft.jit(fn)(x), fn(x))


def test_negations_are_merged_only_where_exact():
    def names(fn, *args):
        return [e.primitive.name for e in ft.jit(fn).lower(*args).jaxpr.eqns]

    x, y, _ = inputs(F64)
    i, j, _ = inputs(I64)
    neg_sub = lambda a, b: fnp.negative(a - b)  # noqa: E731
    assert names(neg_sub, x, y) == ["sub", "neg"]  # x - x is +0.0, -(x - x) -0.0
    assert names(neg_sub, i, j) == ["sub"]  # integers: y - x
    neg_mul = lambda a, b: fnp.negative(fnp.negative(a) * b)  # noqa: E731
    assert names(neg_mul, i, j) == ["mul"]
    assert names(neg_mul, x, y) == ["neg", "mul", "neg"]  # a NaN y comes out negated
    add_neg = lambda a, b: a + fnp.negative(b)  # noqa: E731
    assert names(add_neg, i, j) == ["sub"]
    assert names(add_neg, x, y) == ["neg", "add"]  # x - y gives a NaN y as it is
    # An int negated, then converted by the addition: -INT_MIN wraps.
    assert names(add_neg, x[:49], j) == ["neg", "add"]
    with np.errstate(all="ignore"):
        for fn, args in [(neg_sub, (x, y)), (neg_sub, (i, j)), (neg_mul, (x, y)),
                         (neg_mul, (i, j)), (add_neg, (x, y)), (add_neg, (x[:49], j))]:
            assert_bitwise(ft.jit(fn)(*args), fn(*args))


def test_a_transposed_matrix_product_stays_as_written():
    # dot(b.T, a.T) may sum in another order than dot(a, b).T (whether the last
    # bits differ depends on the BLAS kernel): the product is kept as written.
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((200, 300)), rng.standard_normal((300, 2))
    f = lambda p, q: fnp.transpose(fnp.matmul(p, q))  # noqa: E731
    assert [e.primitive.name for e in ft.jit(f).lower(a, b).jaxpr.eqns] == \
        ["dot_general", "transpose"]
    assert_bitwise(ft.jit(f)(a, b), f(a, b))


def test_fold_evaluates_on_the_constants_backend():
    # A device constant is folded by the device backend (as bind would run
    # it), not handed to the NumPy impl.
    import _gpu_fake

    fake, undo = _gpu_fake.install()
    try:
        c = ft.device_put(np.array([0.5, -0.0, 2.0]), "gpu")
        var = core.Var(core.ShapedArray((3,), np.float64))
        out = core.Var(core.ShapedArray((3,), np.float64))
        closed = core.ClosedJaxpr(core.Jaxpr([var], [], [out], [
            core.Eqn(core.registry["sin"], (var,), (out,), {})]), [c])
        folded = dce_closed(fold(closed))
        assert not folded.jaxpr.eqns
        (value,) = folded.consts
        assert type(value) is fake.ndarray
        assert_bitwise(value.get(), np.sin(np.array([0.5, -0.0, 2.0])))
    finally:
        undo()
