"""The user's lines of cached programs (``core.sources``): a program cached
on its structure serves every function that traces to it, and its warnings,
tracebacks and the programs the transforms make of it name the lines of the
function called, not those of the first function that built it."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
import traceback
import warnings

import numpy as np
import pytest
from _modules import module_from_source

import functrans as ft
import functrans.numpy as fnp
from functrans import core

THIS = __file__
GOOD = np.array([1.0, 2.0])
BAD = np.array([-1.0, 2.0])  # log(-1): "invalid value encountered in log"


def _line(fn, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _warned(fn, *args) -> set[tuple[str, int, str]]:
    """``(file, line, message)`` of each warning ``fn(*args)`` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return {(w.filename, w.lineno, str(w.message).split(" encountered")[0]) for w in caught}


# Two functions alike but for their lines (and a third for the module's own
# tests), defined at the top so that each test meets their programs fresh
# only through the caches.
def log_f(x):
    return fnp.sum(fnp.log(x) * x)


def log_g(x):
    return fnp.sum(fnp.log(x) * x)


def sqrt_f(x):
    return fnp.sum(fnp.sqrt(x) * x)


def sqrt_g(x):
    return fnp.sum(fnp.sqrt(x) * x)


def test_eager_grad_of_a_program_built_for_another_function_warns_at_its_own_line():
    for _ in range(6):  # the plan built and compiled for log_f
        ft.grad(log_f)(GOOD)
    g_line, f_line = _line(log_g, "fnp.log"), _line(log_f, "fnp.log")
    assert _warned(ft.grad(log_g), BAD) == {(THIS, g_line, "invalid value")}
    assert _warned(ft.grad(log_g), BAD) == {(THIS, g_line, "invalid value")}
    # and back: the first function names its own line again
    assert _warned(ft.grad(log_f), BAD) == {(THIS, f_line, "invalid value")}


def test_a_warning_of_the_backward_program_names_the_line_called():
    for _ in range(6):
        ft.grad(sqrt_f)(GOOD)
    # d sqrt(x) / dx at 0 divides by zero, and 0 * inf is invalid: both in
    # the backward pass, derived from sqrt_g's line.
    found = _warned(ft.grad(sqrt_g), np.array([0.0, 2.0]))
    assert found and {(file, line) for file, line, _ in found} == {
        (THIS, _line(sqrt_g, "fnp.sqrt"))}


def test_jit_of_grad_names_the_line_of_the_function_jitted():
    def f(x):
        return fnp.sum(fnp.sqrt(x) * fnp.log(x))

    def g(x):
        return fnp.sum(fnp.sqrt(x) * fnp.log(x))

    ft.jit(ft.grad(f))(GOOD)  # its transforms cached with f's lines
    for x in (BAD, np.array([0.0, 2.0])):  # the forward pass, and the backward one
        found = _warned(ft.jit(ft.grad(g)), x)
        assert found and {(file, line) for file, line, _ in found} == {(THIS, _line(g, "sqrt"))}
    # jit's own cache is the function's: two jitted functions alike keep theirs
    ft.jit(f)(GOOD)
    assert _warned(ft.jit(g), BAD) == {(THIS, _line(g, "sqrt"), "invalid value")}


def test_second_order_grad_names_the_line_called():
    def f(x):
        return fnp.sum(fnp.log(x) * fnp.sin(x))

    def g(x):
        return fnp.sum(fnp.log(x) * fnp.sin(x))

    for _ in range(6):
        ft.grad(lambda x: ft.grad(f)(x).sum())(GOOD)
    found = _warned(ft.grad(lambda x: ft.grad(g)(x).sum()), BAD)
    assert found and {(file, line) for file, line, _ in found} == {(THIS, _line(g, "log"))}


def test_a_program_cached_from_another_file_names_the_line_called(tmp_path):
    helper = tmp_path / "sources_helper.py"
    module = module_from_source(helper, "import functrans.numpy as fnp\n\n\n\n\ndef f(x):\n"
                                "    return fnp.sum(fnp.tanh(x) * fnp.log(x))\n")

    def g(x):
        return fnp.sum(fnp.tanh(x) * fnp.log(x))

    for _ in range(6):
        ft.grad(module.f)(GOOD)
    assert _warned(ft.grad(g), BAD) == {(THIS, _line(g, "fnp.log"), "invalid value")}
    for _ in range(3):
        assert _warned(ft.grad(module.f), BAD) == {(str(helper), 7, "invalid value")}


def test_an_operation_in_another_file_keeps_its_file_and_the_rest_the_caller_s(tmp_path):
    helper = tmp_path / "sources_reciprocal.py"
    module = module_from_source(helper, "def reciprocal(x):\n    return 1.0 / x\n")

    def f(x):
        return fnp.sum(module.reciprocal(fnp.cos(x) + fnp.log(x)) * fnp.exp(x))

    def g(x):
        return fnp.sum(module.reciprocal(fnp.cos(x) + fnp.log(x)) * fnp.exp(x))

    for _ in range(6):
        ft.grad(f)(GOOD)
    found = _warned(ft.grad(g), np.array([-1.0, 2.0]))
    assert (THIS, _line(g, "fnp.log"), "invalid value") in found
    assert {file for file, _, _ in found} <= {THIS, str(helper)}
    assert not any(line == _line(f, "fnp.log") for _, line, _ in found)


def test_a_traceback_through_cached_code_names_the_line_called():
    def f(a):
        return fnp.sum(fnp.linalg.inv(a) * a)

    def g(a):
        return fnp.sum(fnp.linalg.inv(a) * a)

    for _ in range(6):
        ft.grad(f)(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError) as info:
        ft.grad(g)(np.zeros((2, 2)))
    frames = [(fs.filename, fs.lineno) for fs in traceback.extract_tb(info.value.__traceback__)]
    assert (THIS, _line(g, "inv")) in frames and (THIS, _line(f, "inv")) not in frames


@pytest.mark.parametrize("transform", [
    lambda f: ft.value_and_grad(f),
    lambda f: (lambda x: ft.jvp(f, (x,), (x,))),
    lambda f: (lambda x: ft.vjp(f, x)[1](1.0)),
    lambda f: ft.vmap(lambda x: f(x[None])),
    lambda f: (lambda x: ft.linearize(f, x)[0]),
], ids=["value_and_grad", "jvp", "vjp", "vmap", "linearize"])
def test_the_first_interpreted_call_warns_and_raises_at_the_line_called(transform):
    # A program met the first time runs interpreted, its callables called by
    # the interpreter: their warnings and tracebacks must still name the
    # user's line, as the generated code's of the later calls do.
    def fresh(x):  # a new function, so its programs are new
        return fnp.sum(fnp.log(x + 0.0) * x)

    line = _line(fresh, "fnp.log")
    for _ in range(3):  # the first call interpreted, the later ones compiled
        assert _warned(transform(fresh), BAD) == {(THIS, line, "invalid value")}
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError) as info:
        transform(fresh)(BAD)
    frames = [(fs.filename, fs.lineno) for fs in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == (THIS, line)


def test_the_interpreter_places_each_call_at_its_own_line_and_file(tmp_path):
    from functrans.backends.numpy.interpreter import interpret

    other = module_from_source(tmp_path / "elsewhere_logs.py", """
import functrans.numpy as fnp

def log_of(x):
    return fnp.log(x)
""")

    def f(x):
        y = fnp.sqrt(x)
        return [other.log_of(x) + y]

    closed = core.trace_to_jaxpr(f, [BAD])[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        interpret(closed, [BAD])
    got = {(w.filename, w.lineno) for w in caught}
    assert got == {(THIS, _line(f, "fnp.sqrt")), (other.__file__, 5)}


def test_a_placed_caller_runs_a_c_function_that_imports_on_its_first_call():
    # The interpreter's callers once had no builtins: NumPy's ufunc.outer,
    # which imports on its first call in a process, crashed the interpreter
    # (a segmentation fault) when called from one.  A fresh process, so that
    # it is the first call.
    code = ("import numpy as np\n"
            "from functrans.backends.numpy.line_tables import caller_at\n"
            "def f(): pass\n"
            "call = caller_at((f.__code__, 0, False))\n"
            "print(call(np.multiply.outer, np.ones(8), np.ones(3)).shape)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "(8, 3)", done.stderr[-2000:]


def test_resourced_programs_are_equal_and_name_the_new_sources():
    f_jaxpr = ft.make_jaxpr(log_f)(GOOD)
    g_jaxpr = ft.make_jaxpr(log_g)(GOOD)
    assert f_jaxpr == g_jaxpr and core.source_map(f_jaxpr, f_jaxpr) is None
    assert core.same_sources(f_jaxpr.jaxpr, ft.make_jaxpr(log_f)(GOOD).jaxpr)
    mapping = core.source_map(f_jaxpr, g_jaxpr)
    moved = core.resourced(f_jaxpr, mapping)
    assert moved == f_jaxpr and core.same_sources(moved.jaxpr, g_jaxpr.jaxpr)
    assert {core.source_location(e.source)[:2] for e in moved.eqns} == {
        (THIS, _line(log_g, "fnp.log"))}


# Two functions of one program called in turn: each call names its own line,
# gives the bits a call of one alone gives, and, once both have met their
# programs, places no compiled code at other lines again (Placings).
def inv_f(a):
    return fnp.sum(fnp.linalg.inv(a) * fnp.log(a + 2.0))


def inv_g(a):
    return fnp.sum(fnp.linalg.inv(a) * fnp.log(a + 2.0))


def _one_grad_at_two_sites(f, g):
    """One grad function whose traced program is ``f``'s or ``g``'s in turn."""
    state = {"fn": f}
    grad = ft.grad(lambda x: state["fn"](x))

    def at(fn):
        def call(x):
            state["fn"] = fn
            return grad(x)
        return call

    return at(f), at(g)


ALTERNATING = {
    "eager grad": lambda f, g: (ft.grad(f), ft.grad(g)),
    "eager grad, new functions": lambda f, g: (lambda x: ft.grad(f)(x),
                                               lambda x: ft.grad(g)(x)),
    "one grad function at two sites": _one_grad_at_two_sites,
    "vmap": lambda f, g: (lambda x: ft.vmap(f)(x[None]), lambda x: ft.vmap(g)(x[None])),
    "linearize": lambda f, g: (lambda x: ft.linearize(f, x)[1](x),
                               lambda x: ft.linearize(g, x)[1](x)),
    "vjp": lambda f, g: (lambda x: ft.vjp(f, x)[1](np.float64(1.0)),
                         lambda x: ft.vjp(g, x)[1](np.float64(1.0))),
    "jit": lambda f, g: (ft.jit(f), ft.jit(g)),
    "jit(grad)": lambda f, g: (ft.jit(ft.grad(f)), ft.jit(ft.grad(g))),
}


def _placing_counter(monkeypatch) -> list:
    """The compiled programs placed at other lines from now on."""
    from functrans.backends.numpy import codegen

    placed: list = []
    original = codegen.Compiled.resourced

    def counted(self, mapping):
        placed.append(self)
        return original(self, mapping)

    monkeypatch.setattr(codegen.Compiled, "resourced", counted)
    return placed


def _alike(a, b) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes()
               for x, y in zip(ft.tree_util.tree_leaves(a), ft.tree_util.tree_leaves(b)))


@pytest.mark.parametrize("case", ALTERNATING)
def test_two_functions_of_one_program_called_in_turn_each_name_their_own_line(
        case, monkeypatch):
    def f(x):
        return fnp.sum(fnp.log(x) * fnp.sqrt(x))

    def g(x):
        return fnp.sum(fnp.log(x) * fnp.sqrt(x))

    call_f, call_g = ALTERNATING[case](f, g)
    first = call_f(GOOD)  # interpreted, or linearized at once: the bits to keep
    for _ in range(8):  # both programs built and compiled, each met at its lines
        assert _alike(call_f(GOOD), first) and _alike(call_g(GOOD), first)
    placed = _placing_counter(monkeypatch)
    f_line, g_line = _line(f, "fnp.log"), _line(g, "fnp.log")
    for _ in range(3):
        assert {(file, line) for file, line, _ in _warned(call_f, BAD)} == {(THIS, f_line)}
        assert {(file, line) for file, line, _ in _warned(call_g, BAD)} == {(THIS, g_line)}
        assert _alike(call_f(GOOD), first) and _alike(call_g(GOOD), first)
    assert placed == []
    ft.config.update("debug_nans", True)
    try:
        for _ in range(2):
            for call, line, other in ((call_f, f_line, g_line), (call_g, g_line, f_line)):
                with pytest.raises(FloatingPointError) as info, warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    call(BAD)
                message = str(info.value)
                assert f"{THIS}:{line}:" in message and f"{THIS}:{other}:" not in message
    finally:
        ft.config.update("debug_nans", False)


def test_two_threads_calling_two_functions_of_one_program_in_turn():
    singular, good = np.zeros((2, 2)), np.eye(2) * 0.5
    want = ft.grad(inv_f)(good)
    f_line, g_line = _line(inv_f, "linalg"), _line(inv_g, "linalg")
    grads = {"f": ft.grad(inv_f), "g": ft.grad(inv_g)}
    start = threading.Barrier(2)
    wrong: list = []

    def run():
        start.wait()
        for round in range(20):
            for name, line, other in (("f", f_line, g_line), ("g", g_line, f_line)):
                if not _alike(grads[name](good), want):
                    wrong.append((name, "value"))
                try:
                    grads[name](singular)
                    wrong.append((name, "no error"))
                except np.linalg.LinAlgError as e:
                    frames = {(fs.filename, fs.lineno)
                              for fs in traceback.extract_tb(e.__traceback__)}
                    # From the sixth round on the code is compiled (a program
                    # run interpreted names the interpreter's line).
                    if round >= 6 and ((THIS, line) not in frames or (THIS, other) in frames):
                        wrong.append((name, "line", round))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def _sites(n: int) -> list:
    """``n`` functions of one program, each at other lines of one file."""
    found = []
    for k in range(n):
        source = "\n" * (10 * k) + "def site(x):\n    return fnp.sum(fnp.log(x) * x)\n"
        namespace = {"fnp": fnp}
        exec(compile(source, "<sites>", "exec"), namespace)
        found.append(namespace["site"])
    return found


def test_a_cached_program_keeps_its_forms_at_the_lines_used_last_and_counts_them():
    placed = []

    def resource(value, mapping):
        placed.append(value)
        return core.resourced(value, mapping)

    @core.program_cache(maxsize=8, max_equations=10**6, resource=resource)
    def cached(closed):
        return closed

    programs = [ft.make_jaxpr(site)(GOOD) for site in _sites(core.sources.PLACINGS + 2)]
    size = len(programs[0].eqns)
    assert cached(programs[0]) is programs[0]
    first = cached(programs[1])
    assert len(placed) == 1 and first is not programs[0]
    # Called in turn, each finds its own form: nothing placed again.
    for _ in range(2):
        assert cached(programs[0]) is programs[0] and cached(programs[1]) is first
    assert len(placed) == 1
    assert core.same_sources(first.jaxpr, programs[1].jaxpr)
    # Met from more sites than kept: the least recently used form goes.
    for p in programs[2:]:
        assert core.same_sources(cached(p).jaxpr, p.jaxpr)
    assert len(placed) == len(programs) - 1
    assert cached.cache_info().equations == size * (1 + core.sources.PLACINGS)
    assert core.same_sources(cached(programs[-1]).jaxpr, programs[-1].jaxpr)
    assert len(placed) == len(programs) - 1
    assert core.same_sources(cached(programs[1]).jaxpr, programs[1].jaxpr)  # placed again
    assert len(placed) == len(programs) and cached(programs[0]) is programs[0]


def test_a_grad_plan_keeps_a_few_placings_of_its_code():
    from functrans import _eager_grad

    sites = _sites(core.sources.PLACINGS + 2)
    want = np.log(GOOD) + 1.0
    grads = [ft.grad(site) for site in sites]
    for _ in range(8):
        for g in grads:
            np.testing.assert_allclose(g(GOOD), want, rtol=1e-15)
    jaxpr = ft.make_jaxpr(sites[0])(GOOD).jaxpr
    plan = _eager_grad.grad_plan(jaxpr, False)
    assert len(plan.placings) == core.sources.PLACINGS
    for k, g in enumerate(grads):
        assert {line for _, line, _ in _warned(g, BAD)} == {10 * k + 2}


@pytest.fixture
def bound_directly():
    """Two primitives a user binds with ``core.bind`` (one with two results)."""
    one = core.Primitive("test_sources_bound_directly", abstract_eval=lambda x: x.strip_weak(),
                         impl=lambda x: np.asarray(x))
    two = core.Primitive("test_sources_bound_directly_twice", multiple_results=True,
                         abstract_eval=lambda x: [x.strip_weak()] * 2,
                         impl=lambda x: [np.asarray(x), np.asarray(x)])
    try:
        yield one, two
    finally:
        core.registry.pop(one.name, None)
        core.registry.pop(two.name, None)


@pytest.mark.parametrize("tape", [None, []], ids=["equations", "tape"])
def test_an_equation_a_user_binds_names_the_line_that_binds_it(bound_directly, tape):
    # The recording starts its walk up the stack at the frame that called
    # core.bind, here the user's own: each path (the tape's for one and for
    # several results, the equations') names that line, not one above it.
    one, two = bound_directly

    def f(x):
        y = core.bind(one, x)
        first, second = core.bind(two, y)
        return [first * second]

    lines = inspect.getsourcelines(f)[1]
    trace, _ = core.record(f, [np.ones(3)], tape=tape)
    got = [core.source_location(e.source)[:2] for e in trace.closed().jaxpr.eqns]
    assert got == [(__file__, lines + 1), (__file__, lines + 2), (__file__, lines + 3)]


def _helper_adding_logs(x):
    return fnp.log(x) + x  # called by the functions below: its line is the innermost user's


@pytest.mark.parametrize("tape", [None, []], ids=["equations", "tape"])
def test_operations_through_the_library_s_wrappers_name_the_innermost_user_line(tape):
    # ufuncs, operators, x ** 2 and sum record through bind_in_wrapper, which
    # skips its caller's frame unseen: called from the user's code, from a
    # user's helper, through NumPy's dispatch and through a library function
    # calling ufuncs, each equation must name the innermost user line.
    def f(x):
        a = fnp.sin(x)
        b = a * x
        c = x ** 2
        d = _helper_adding_logs(c)
        e = np.cos(d)
        g = fnp.sinc(e)
        return [fnp.sum(b + g)]

    trace, _ = core.record(f, [np.ones(3)], tape=tape)
    got = [(e.primitive.name, core.source_location(e.source)[:2])
           for e in trace.closed().jaxpr.eqns]
    at = {text: (THIS, _line(f, text)) for text in ("sin(x)", "a * x", "x ** 2", "cos", "sinc",
                                                     "sum")}
    helper = (THIS, _line(_helper_adding_logs, "fnp.log"))
    assert got[:6] == [("sin", at["sin(x)"]), ("mul", at["a * x"]), ("integer_pow", at["x ** 2"]),
                       ("log", helper), ("add", helper), ("cos", at["cos"])]
    assert {where for _, where in got[6:-2]} == {at["sinc"]}  # sinc's own operations
    assert got[-2:] == [("add", at["sum"]), ("reduce_sum", at["sum"])]
