"""functrans.debug.print (functrans/debug.py, primitives/debugging.py) and how
the passes and transforms treat an equation with an effect."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core, debug, lax
from functrans.passes.pipeline import run_passes

X = np.array([0.5, 1.0])


def _printed(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def _f(x):
    y = fnp.sin(x)
    debug.print("y={}", y)
    return fnp.sum(y * y)


Y = f"y={np.sin(X)}"


@pytest.mark.parametrize("transform", [
    lambda f: f, ft.jit, ft.grad, lambda f: ft.jit(ft.grad(f)), lambda f: ft.grad(ft.jit(f)),
    ft.hessian, ft.jacrev, ft.jacfwd, lambda f: ft.jit(ft.hessian(f)),
    lambda f: (lambda x: ft.jvp(f, (x,), (x,))), lambda f: (lambda x: ft.vjp(f, x)[1](1.0)),
    lambda f: (lambda x: ft.value_and_grad(f)(x)),
], ids=["eager", "jit", "grad", "jit_grad", "grad_jit", "hessian", "jacrev", "jacfwd",
        "jit_hessian", "jvp", "vjp", "value_and_grad"])
def test_prints_the_values_once_per_call_under_every_transform(transform, capsys):
    g = transform(_f)
    g(X)
    assert _printed(capsys) == [Y]
    g(X)  # jit: the cached program prints too
    assert _printed(capsys) == [Y]


def test_prints_in_program_order_and_each_print_of_one_value(capsys):
    @ft.jit
    def f(x):
        debug.print("first {}", x)
        y = x * 2.0
        debug.print("second {}", y)
        debug.print("second {}", y)  # the same equation twice: CSE must not merge them
        return y

    f(np.ones(1))
    assert _printed(capsys) == ["first [1.]", "second [2.]", "second [2.]"]


def test_a_print_whose_value_nothing_uses_is_kept_and_not_folded(capsys):
    c = np.array([3.0])

    @ft.jit
    def f(x):
        debug.print("unused {}", fnp.exp(x))  # dead code but for the print
        debug.print("constant {} {}", c * 2.0, 7)  # all operands known at compile time
        debug.print("no operands")
        return x

    f(np.zeros(1))
    f(np.zeros(1))
    assert _printed(capsys) == ["unused [1.]", "constant [6.] 7", "no operands"] * 2


def test_passes_keep_an_effect_inside_a_loop_body_nothing_reads(capsys):
    def f(x):
        def body(c, xi):
            debug.print("step {}", xi)
            return c, c

        lax.scan(body, x[0], x)  # no result used
        return x * 2.0

    closed = ft.make_jaxpr(f)(X)
    scan = next(e for e in closed.eqns if e.primitive.name == "scan")
    assert core.has_effect(scan) and not core.has_effect(closed.eqns[-1])
    optimized = run_passes(closed)
    assert any(e.primitive.name == "scan" for e in optimized.eqns)
    ft.jit(f)(X)
    assert _printed(capsys) == ["step 0.5", "step 1.0"]


def test_vmap_prints_each_member_in_batch_order(capsys):
    xs = np.arange(6.0).reshape(3, 2)
    ft.vmap(lambda x, w: (debug.print("{} {}", x, w), x * w)[1], in_axes=(0, None))(xs, 2.0)
    assert _printed(capsys) == ["[0. 1.] 2.0", "[2. 3.] 2.0", "[4. 5.] 2.0"]
    # nested: the outer index first, as two loops would; batch axes anywhere
    ft.vmap(ft.vmap(lambda v: (debug.print("{}", v), v)[1]), in_axes=1)(xs)
    assert _printed(capsys) == ["0.0", "2.0", "4.0", "1.0", "3.0", "5.0"]
    ft.jit(ft.vmap(lambda v: (debug.print("{}", v), v)[1]))(np.arange(2.0))
    assert _printed(capsys) == ["0.0", "1.0"]


def test_prints_under_loops_and_branches_each_time_they_run(capsys):
    def f(x):
        x = lax.fori_loop(0, 2, lambda i, c: (debug.print("i={} c={}", i, c), c + 1.0)[1], x)
        return lax.cond(x > 0, lambda v: (debug.print("pos {}", v), v)[1],
                        lambda v: (debug.print("neg {}", v), v)[1], x)

    ft.jit(f)(np.float64(0.0))
    assert _printed(capsys) == ["i=0 c=0.0", "i=1 c=1.0", "pos 2.0"]
    ft.grad(f)(0.0)
    assert _printed(capsys) == ["i=0 c=0.0", "i=1 c=1.0", "pos 2.0"]


def test_pytrees_keywords_strings_and_format_specs(capsys):
    @ft.jit
    def f(x):
        debug.print("{name}: {tree[a]} {0:.3f}", x[0], name="x0", tree={"a": x})
        return x

    f(np.array([np.pi, -0.0]))
    assert _printed(capsys) == [f"x0: {np.array([np.pi, -0.0])} 3.142"]


def test_a_print_under_value_carrying_tracing_prints_once(capsys):
    def f(x):  # Python control flow on a value: traced again with values
        debug.print("x={}", x)
        return fnp.sum(x * x) if float(fnp.sum(lax.stop_gradient(x))) > 0 else fnp.sum(x)

    ft.grad(f)(X)
    assert _printed(capsys) == [f"x={X}"]


def test_format_errors_name_the_field_at_the_call():
    with pytest.raises(ValueError, match=r"reads positional argument 1, but 1 were given"):
        debug.print("{} {}", 1.0)
    with pytest.raises(ValueError, match=r"reads 'y', which is not among the keyword "
                       r"arguments \(x\); pass y=value"):
        debug.print("{y}", x=1.0)
    with pytest.raises(TypeError, match=r"the format must be a string, got a ndarray"):
        debug.print(np.ones(2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"bad format string"):
        debug.print("{", 1.0)


def test_a_loop_holding_a_print_under_value_carrying_tracing_prints_once_per_step(capsys):
    def f(x):
        def body(c, xi):
            debug.print("step {}", xi)
            return c + xi, c

        total = lax.scan(body, 0.0, x)[0]
        return total * 2.0 if float(lax.stop_gradient(total)) > 0 else total

    assert ft.grad(f)(X).tolist() == [2.0, 2.0]
    assert _printed(capsys) == ["step 0.5", "step 1.0"]


def test_reverse_mode_through_a_while_loop_runs_its_prints_again(capsys):
    """As docs/debugging.md says: the backward pass of a while loop runs the
    loop again, prints included."""
    def f(x):
        return lax.while_loop(lambda c: c[0] < 2,
                              lambda c: (debug.print("w {}", c[0]), (c[0] + 1, c[1] * 1.5))[1],
                              (0, x))[1]

    ft.jit(f)(1.0)
    assert _printed(capsys) == ["w 0", "w 1"]
    ft.grad(f)(1.0)
    assert _printed(capsys) == ["w 0", "w 1"] * 2


def test_a_print_in_a_checkpoint_or_custom_rule_prints_once(capsys):
    g = ft.checkpoint(lambda x: (debug.print("ck {}", x), fnp.sin(x))[1])
    ft.grad(g)(1.0)
    assert _printed(capsys) == ["ck 1.0"]


def test_two_equal_loops_holding_prints_are_not_merged(capsys):
    def body(c, xi):
        debug.print("step {}", xi)
        return c + xi, c

    @ft.jit
    def f(x):
        a = lax.scan(body, 0.0, x)[0]
        b = lax.scan(body, 0.0, x)[0]  # the same program: CSE would make it one
        return a + b

    assert f(X) == 3.0
    assert _printed(capsys) == ["step 0.5", "step 1.0"] * 2
