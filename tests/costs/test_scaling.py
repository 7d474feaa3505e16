"""Costs that must stay linear in the size of a program: the objects a cached
Jaxpr keeps, and the host backend running a program it meets once without
generating code for it (an interpreter that must give what the code gives)."""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import pkgutil
import sys
import warnings

import numpy as np
import pytest
from functrans.primitives import fused, recorded_loop
from functrans.primitives.broadcasting import reduce_sum_p
from functrans.primitives.elementwise import _pow_avals as pow_avals
from functrans.primitives.elementwise import integer_pow_p
from functrans.primitives.linalg import _dot_avals as dot_avals
from functrans.primitives.linalg import dot_general_p

import functrans as ft
import functrans.numpy as fnp
from functrans import api, core, primitives
from functrans.backends import cuda
from functrans.backends import cupy as gpu
from functrans.backends import numpy as host
from functrans.backends.numpy import backend, codegen, line_tables
from functrans.core import ShapedArray, tracing
from functrans.interpreters import vmap


def _loop(steps, a=0.9):
    def f(h):
        for _ in range(steps):
            h = fnp.tanh(h * a + 0.1) * 1.01
        return fnp.sum(h)

    return f


def test_a_programs_structure_key_is_one_container():
    # The key of a 400-equation program: one tuple, not a few per equation.
    closed = ft.make_jaxpr(_loop(100))(np.ones(4))
    gc.collect()
    before = len(gc.get_objects())
    hash(closed.jaxpr)
    gc.collect()
    assert len(gc.get_objects()) - before < 10


def _closed(f, *args):
    return ft.make_jaxpr(f)(*args)


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda x: fnp.sin(x) * 2.0 + x, (np.linspace(-1, 1, 5),)),
        (lambda x: (fnp.sum(x), x), (np.arange(3.0),)),  # a 0-d output, an input returned
        (lambda x: (fnp.sum(x), x * -1.0), (np.array([np.nan, -0.0, np.inf]),)),
        (lambda x, n: (x * n, fnp.reshape(x, (2, 2)).T), (np.arange(4.0), np.int32(3))),
        (lambda x: fnp.sort(x)[::-1], (np.array([3.0, np.nan, -0.0, 0.0]),)),
        (lambda x: x, (np.zeros((0, 2)),)),
    ],
)
def test_interpreting_a_program_gives_what_its_generated_code_gives(f, args):
    closed = _closed(f, *args)
    want = host.Compiled(closed).fn(*args)
    got = host.interpret(closed, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
        np.testing.assert_array_equal(g, w)


def test_a_program_met_once_is_interpreted_and_compiled_when_met_again():
    closed = _closed(lambda x: fnp.cos(x) * 3.0 - 1.0, np.ones(3))
    misses = host.compiled.cache_info().misses
    first = core.run_jaxpr(closed, [np.ones(3)])
    assert host.compiled.cache_info().misses == misses  # no code generated
    second = core.run_jaxpr(closed, [np.ones(3)])
    assert host.compiled.cache_info().misses == misses + 1
    np.testing.assert_array_equal(first[0], second[0])


def test_the_collector_is_paused_while_tracing_and_enabled_again_after():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return fnp.sin(x)

    assert gc.isenabled()
    ft.grad(lambda x: fnp.sum(f(x)))(np.ones(3))
    assert seen == [False] and gc.isenabled()

    def fails(x):
        raise ValueError("in the user's function")

    with pytest.raises(ValueError, match="in the user's function"):
        ft.grad(fails)(np.ones(3))
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled():
    gc.disable()
    try:
        ft.grad(lambda x: fnp.sum(fnp.cos(x)))(np.ones(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_in_several_threads_end_with_the_collector_enabled():
    import threading

    barrier = threading.Barrier(4)

    def f(x):
        barrier.wait(timeout=10)  # every thread is inside its trace at once
        return fnp.sum(fnp.tanh(x))

    errors = []

    def work():
        try:
            ft.grad(f)(np.ones(3))
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and gc.isenabled()


def test_import_functrans_loads_no_optional_library_nor_the_lazy_namespaces():
    import subprocess
    import sys

    heavy = ["scipy", "numexpr", "cupy", "numba", "mpi4py", "graphviz", "matplotlib",
             "hypothesis", "functrans.optimize", "functrans.optimizers", "functrans.sparse"]
    code = ("import sys, functrans\n"
            f"print([m for m in {heavy!r} if m in sys.modules])\n"
            "functrans.optimize.minimize\n"
            "print('functrans.optimize' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.split("\n")[:2] == ["[]", "True"]


def test_the_shape_rule_of_a_repeated_param_less_equation_runs_once(monkeypatch):
    tanh = core.registry["tanh"]
    calls = []
    rule = tanh.abstract_eval
    monkeypatch.setattr(tanh, "abstract_eval", lambda *avals: calls.append(1) or rule(*avals))
    core._avals_out.clear()
    tracing._avals_out_by_id.clear()  # the same answers found by aval ids
    ft.make_jaxpr(_loop(100))(np.ones(4))
    assert len(calls) == 1


def test_shared_params_are_one_dict_per_names_types_and_values():
    assert core.shared_params(axes=(0, 1)) is core.shared_params(axes=(0, 1))
    assert core.shared_params(y=2) is not core.shared_params(y=True)  # 2 == True
    assert core.shared_params(y=2) == {"y": 2}


def test_shape_rules_with_shared_params_run_once_and_keep_ranks_and_dtypes_apart(monkeypatch):
    calls = []
    for prim in (reduce_sum_p, integer_pow_p):
        monkeypatch.setattr(prim, "abstract_eval", lambda *avals, rule=prim.abstract_eval,
                            **params: calls.append(1) or rule(*avals, **params))
    tracing._avals_out_by_id.clear()

    def f(x):
        return fnp.sum(x ** 2) + fnp.sum(x, axis=0)[0] + fnp.sum(x ** 2, axis=-1)[0]

    for _ in range(3):
        jaxpr = ft.make_jaxpr(f)(np.ones((2, 3))).jaxpr
        assert jaxpr.outvars[0].aval == ShapedArray((), np.dtype(np.float64))
    assert len(calls) == 4  # x ** 2, every axis, axis 0, axis 1: once each
    every = core.shared_params(axes=(0, 1))  # found by its id, the rule not asked
    assert any(key[:2] == (reduce_sum_p, id(every)) for key in tracing._avals_out_by_id)
    # Another rank and dtype with the same params are other keys.
    assert ft.make_jaxpr(f)(np.ones((3, 3, 3), np.float32)).jaxpr.outvars[0].aval \
        == ShapedArray((3,), np.dtype(np.float32))
    assert len(calls) == 8
    # The same params in a dict of their own: found by value, the same result.
    tracer_aval = ShapedArray((2, 3), np.dtype(np.float64))
    assert core._abstract_eval(reduce_sum_p, [tracer_aval], {"axes": (0, 1)}) \
        == ShapedArray((), np.dtype(np.float64))
    np.testing.assert_array_equal(ft.grad(lambda x: fnp.sum(x ** 2))(np.arange(3.0)),
                                  [0.0, 2.0, 4.0])


def test_memoised_shape_rules_keep_weak_types_dtypes_and_errors_apart():
    f32 = np.ones(3, np.float32)
    assert ft.make_jaxpr(lambda x: x + 1.0)(f32).jaxpr.outvars[0].aval.dtype == np.float32
    assert ft.make_jaxpr(lambda x: x + np.float64(1.0))(f32).jaxpr.outvars[0].aval.dtype \
        == np.float64
    for _ in range(2):  # a failed shape rule is not remembered as a result
        with pytest.raises(Exception, match="do not broadcast"):
            ft.make_jaxpr(lambda x, y: x * y)(np.ones(3), np.ones(4))


def test_the_passes_and_code_generation_run_with_the_collector_paused(monkeypatch):
    from functrans.passes import pipeline

    seen = []

    def recording_pass(closed):
        seen.append(("pass", gc.isenabled()))
        return closed

    generate = codegen.generate_source

    def recording_generate(*args, **kwargs):
        seen.append(("codegen", gc.isenabled()))
        return generate(*args, **kwargs)

    monkeypatch.setattr(pipeline, "PASSES", (recording_pass,))
    monkeypatch.setattr(codegen, "generate_source", recording_generate)
    closed = _closed(lambda x: x * 2.0, np.ones(2))
    pipeline.run_passes(closed)
    host.Compiled(closed)
    assert seen == [("pass", False), ("codegen", False)] and gc.isenabled()


def test_program_caches_are_bounded_by_equations_and_keep_the_newest():
    made = []

    @core.program_cache(maxsize=100, max_equations=900)
    def transform(closed):
        made.append(closed)
        return len(made)

    programs = [_closed(_loop(100, a), np.ones(2)) for a in (0.1, 0.2, 0.3)]  # 401 eqns each
    assert [transform(p) for p in programs] == [1, 2, 3]
    info = transform.cache_info()
    assert (info.currsize, info.equations, info.misses) == (2, 802, 3)
    assert transform(programs[2]) == 3 and transform(programs[0]) == 4  # the oldest went
    big = _closed(_loop(300), np.ones(2))  # over the bound alone: kept, alone
    transform(big)
    assert transform(big) == 5 and transform.cache_info().currsize == 1
    transform.cache_clear()
    assert transform.cache_info() == core.CacheInfo(0, 0, 100, 0, 0)


def test_the_caches_of_transformed_and_compiled_programs_are_bounded_by_equations():
    from functrans.interpreters.partial_eval import _without_first_output, linearize_jaxpr
    from functrans.interpreters.transpose import transpose_jaxpr

    for cache in (linearize_jaxpr, _without_first_output, transpose_jaxpr, host.compiled,
                  host.compiled_body, backend._runner):
        assert isinstance(cache.cache_info(), core.CacheInfo)


_LRU_CACHE = type(functools.lru_cache(maxsize=1)(lambda: None))


def _lru_caches_of_programs() -> list[str]:
    """The library's functions cached with functools.lru_cache (or cache)
    whose first parameter is a program: each should be a program_cache."""
    found = []
    for package in (ft, primitives):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name == "functrans.__main__":  # the tour, no library code
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if type(obj) is not _LRU_CACHE:
                    continue
                params = list(inspect.signature(obj.__wrapped__).parameters.values())
                if params and "Jaxpr" in str(params[0].annotation):
                    found.append(f"{info.name}.{name}")
    return found


def test_every_cache_keyed_on_a_program_is_a_program_cache():
    # One mechanism for caches keyed on programs: bounded by the equations
    # they hold, and dropped when debug_nans/debug_infs switch (a program's
    # hash then holds its equations' sources).
    assert _lru_caches_of_programs() == []
    caches = (vmap._batch_jaxpr, vmap._jaxpr_axes, api._hvp_jaxpr, gpu.compiled,
              cuda.jaxpr_kernel, fused.numexpr_plan, recorded_loop._body_reads)
    assert all(isinstance(c, core.ProgramCache) for c in caches)
    x = np.linspace(0.5, 1.5, 4)
    ft.vmap(lambda r: fnp.sin(r) * r)(np.outer(x, x))
    ft.hvp(lambda v: fnp.sum(fnp.log(v) * v), (x,), (x,))
    assert vmap._batch_jaxpr.cache_info().currsize > 0
    assert api._hvp_jaxpr.cache_info().currsize > 0
    ft.config.update("debug_nans", True)
    try:
        assert all(c.cache_info().currsize == 0 for c in caches)
    finally:
        ft.config.update("debug_nans", False)


def test_with_debug_nans_on_a_first_run_is_checked_too():
    closed = _closed(lambda x: fnp.log(x) * 2.0, np.ones(2))
    ft.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="'log' produced NaN"), \
                np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            core.run_jaxpr(closed, [np.array([-1.0, 1.0])])
    finally:
        ft.config.update("debug_nans", False)


def test_generated_code_names_user_lines_far_apart_and_going_back(tmp_path):
    # Lines 4 and 305: a line table delta of more than one byte, forward, then
    # back up the file in the backward pass (sqrt's derivative divides by 0).
    path = tmp_path / "far_lines.py"
    path.write_text("import functrans.numpy as fnp\n\n\ndef f(x):\n    y = fnp.sqrt(x)\n"
                    + "\n" * 299 + "    return fnp.sum(fnp.log(y - 1.0))\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ft.jit(ft.value_and_grad(namespace["f"]))(np.array([0.0, 4.0]))
    where = [(str(w.message).split(" encountered")[0], w.filename, w.lineno) for w in caught]
    assert ("invalid value", str(path), 305) in where
    assert ("divide by zero", str(path), 5) in where
    assert [w for w in where if w[1] != str(path)] == []


_ON_DEMAND = ["functrans.lax", "functrans.distributed", "functrans.primitives.control_flow",
              "functrans.primitives.recorded_loop", "functrans.primitives._subjaxpr",
              "functrans.optimize", "functrans.optimizers", "functrans.sparse",
              "functrans.scipy", "functrans.backends.cupy", "functrans.backends.native"]


def _loaded_after(code: str) -> list[list[str]]:
    """For each line ``code`` prints after ``import functrans``: the modules of
    ``_ON_DEMAND`` loaded at that point (a fresh interpreter)."""
    import subprocess
    import sys

    show = f"print([m for m in {_ON_DEMAND!r} if m in sys.modules])"
    script = "import sys, functrans\n" + show + "\n" + "".join(
        f"{line}\n{show}\n" for line in code.splitlines())
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    return [eval(line) for line in proc.stdout.splitlines()]


def test_a_bare_import_leaves_control_flow_lax_and_the_namespaces_unloaded():
    # Tracing and differentiating need none of them either.
    bare, imported, traced = _loaded_after("import functrans.numpy as fnp, numpy as np\n"
                                 "functrans.jit(functrans.grad(lambda x: fnp.sum(fnp.sin(x))))"
                                 "(np.ones(3))")
    assert bare == imported == traced == []


def test_reading_the_registry_loads_the_primitives_left_for_first_use():
    # Each way of reading it: lookup by name, membership, walking it.
    for read in ("functrans.core.lookup_primitive('while_loop')",
                 "'scan' in functrans.core.registry", "sorted(functrans.core.registry)",
                 "len(functrans.core.registry)"):
        bare, after = _loaded_after(read)
        assert bare == []
        assert after == ["functrans.primitives.control_flow", "functrans.primitives.recorded_loop",
                         "functrans.primitives._subjaxpr"], read
    bare, after = _loaded_after("functrans.lax.fori_loop")
    assert "functrans.primitives.control_flow" in after and "functrans.lax" in after


def test_threads_reading_the_registry_at_once_all_see_every_primitive():
    import subprocess
    import sys

    code = ("import threading, functrans\n"
            "seen = []\n"
            "def read():\n"
            "    seen.append('scan' in functrans.core.registry and 'while_loop' in "
            "functrans.core.registry)\n"
            "threads = [threading.Thread(target=read) for _ in range(8)]\n"
            "[t.start() for t in threads]\n"
            "[t.join() for t in threads]\n"
            "print(seen)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == str([True] * 8)


def test_eager_grad_on_float_arrays_skips_the_checks_walking_argument_paths(monkeypatch):
    from functrans import _api_util

    def refuse(*args, **kwargs):
        raise AssertionError("argument paths walked on a call that passes every check")

    monkeypatch.setattr(_api_util, "tree_flatten_with_path", refuse)
    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(x * x))(x), 2 * x)
    assert ft.grad(lambda a, b: a * b, argnums=(0, 1))(2.0, 3.0) == (3.0, 2.0)


@pytest.mark.parametrize("call, message", [
    (lambda: ft.grad(fnp.sum)(np.arange(3)), r"argument 0 has integer or bool type i64\[3\]"),
    (lambda: ft.grad(lambda x: x, holomorphic=True)(np.ones(())),
     "holomorphic=True needs complex inputs"),
    (lambda: ft.jacfwd(lambda x: x)(np.ones(2, complex)), "jacfwd needs real inputs"),
    (lambda: ft.grad(lambda x: x)(np.array([1.0], dtype=object)), "is an object array"),
    (lambda: ft.grad(lambda x: x)("1.0"), "is a str, which is not an array"),
])
def test_arguments_the_quick_path_does_not_take_still_meet_their_checks(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_a_closed_programs_hash_is_kept_and_made_again_when_the_checks_switch(monkeypatch):
    closed = _closed(lambda x: fnp.sin(x) * 2.0, np.ones(2))
    made = []
    original = core.Jaxpr.__hash__
    monkeypatch.setattr(core.Jaxpr, "__hash__", lambda self: made.append(1) or original(self))
    first = hash(closed)
    assert hash(closed) == first and len(made) == 1
    ft.config.update("debug_nans", True)
    try:
        with_lines = hash(closed)
    finally:
        ft.config.update("debug_nans", False)
    assert len(made) == 2 and with_lines != first
    assert hash(closed) == first and len(made) == 3


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10 renumbers the parsed source only")
def test_the_rewritten_line_table_gives_each_instruction_the_renumbered_sources_line():
    def loss(x):
        m = fnp.max(x)
        return m + fnp.log(fnp.sum(fnp.exp(x - m))) + 0.5 * fnp.sum(x[1:] * x[:-1])

    def lines(code):
        return {o: line for start, stop, line in code.co_lines() for o in range(start, stop, 2)}

    for transform in (ft.hessian, ft.grad):
        closed = ft.make_jaxpr(transform(loss))(np.linspace(0.0, 1.0, 9))
        source, namespace = host.generate_source(closed, "h")
        at_line = namespace.pop(line_tables.LINES)
        rewritten, renumbered = dict(namespace), dict(namespace)
        exec(compile(source, "<generated>", "exec"), rewritten)
        line_tables.move_to_user_lines(rewritten["h"], at_line)
        exec(line_tables.compile_at_user_lines(source, "h", at_line), renumbered)
        a, b = rewritten["h"].__code__, renumbered["h"].__code__
        assert a.co_filename == b.co_filename == __file__
        assert lines(a) == lines(b) and len(set(lines(a).values())) >= 2


def _python_lines(fn) -> int:
    """The Python lines ``fn()`` runs (trace 'line' events): a count of work
    that, unlike a time, the machine's load leaves alone."""
    lines = 0

    def count(frame, event, arg):
        nonlocal lines
        lines += event == "line"
        return count

    previous = sys.gettrace()  # a coverage tool's, which gets its place back
    sys.settrace(count)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return lines


def _indexing_loop(steps):
    def f(x):
        s = 0.0
        for i in range(steps):
            s = s + fnp.sin(x[i]) * x[i + 1]
        return s

    return f


def _straight_line(steps):
    """A loop written out: a function of ``steps`` lines, each making its
    own equations (the code object a source's line is looked up in grows
    with the program).  Not ``_loop``'s operations: the transformed
    programs cached for those carry ``_loop``'s lines."""
    body = "    h = fnp.sin(h * 0.8 - 0.2) * 1.02\n" * steps
    namespace = {"fnp": fnp}
    exec(compile(f"def f(h):\n{body}    return fnp.sum(h)\n", "<straight_line>", "exec"),
         namespace)
    return namespace["f"]


@pytest.mark.parametrize("program, transform", [
    (_loop, ft.jit),
    (_loop, lambda f: ft.jit(ft.grad(f))),
    (_straight_line, lambda f: ft.jit(ft.grad(f))),
    (_indexing_loop, lambda f: ft.jit(ft.grad(f))),
    (_loop, lambda f: ft.jit(ft.hessian(f))),
])
def test_the_work_of_a_jit_cache_miss_grows_linearly_with_the_program(program, transform):
    # Tracing, the passes, code generation and the line table of a fresh
    # program of 4x the steps run at most 4x the lines (10% for start-up).
    def miss(steps):
        x = np.linspace(-1.0, 1.0, steps + 1 if program is _indexing_loop else 4)
        f = transform(program(steps))
        return _python_lines(lambda: f(x))

    miss(3)  # lazy imports and first-use caches
    small, large = miss(40), miss(160)
    assert large <= 4.4 * small, (small, large)


def test_the_work_of_an_eager_first_call_grows_linearly_with_the_program():
    # The first call of grad of a program met for the first time: tracing,
    # the JVP walk on the values, the passes on the linear program and the
    # backward pass on the values run at most 4x the lines for 4x the steps.
    constants = iter(np.linspace(0.5, 0.6, 8))  # a new program each time: no cache matches

    def first_call(steps):
        g = ft.grad(_loop(steps, float(next(constants))))
        x = np.linspace(-1.0, 1.0, 4)
        return _python_lines(lambda: g(x))

    first_call(10)  # lazy imports and first-use caches
    small, large = first_call(40), first_call(160)
    assert large <= 4.4 * small, (small, large)


def test_generated_code_chooses_an_out_buffer_without_a_branch_per_equation():
    # A branch per equation (an if-expression choosing ``out=``) made
    # compile() of long programs a fifth slower.
    import dis

    def chain(h, b):
        for _ in range(200):
            h = fnp.tanh(h * 0.9 + b) * 1.01
        return h

    x = np.linspace(-1.0, 1.0, 100_000)
    f = ft.jit(chain)
    source = f.lower(x, x).source
    assert ", _reuse(" in source and ", _take_c_order(" in source
    code = compile(source, "<generated>", "exec").co_consts[0]
    jumps = [i for i in dis.get_instructions(code) if "JUMP" in i.opname]
    assert len(jumps) < 5


def test_the_code_compile_reads_grows_linearly_and_calls_no_keyword_per_equation():
    # compile() is C, out of _python_lines' sight: its work follows the lines
    # it reads and the bytecode it writes, which for 4x the steps stay at 4x.
    # A ufunc's output is its last operand, not ``out=``: a keyword call
    # compiled 15% slower (and ran 45 ns slower).
    import dis

    def generated(steps):
        source = ft.jit(ft.grad(_loop(steps))).lower(np.linspace(-1.0, 1.0, 4)).source
        return source, compile(source, "<generated>", "exec").co_consts[0]

    def instructions(code):  # (an index past 255 takes a prefix: not more work)
        return [i.opname for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]

    (small_source, small), (large_source, large) = generated(40), generated(160)
    assert large_source.count("\n") <= 4.4 * small_source.count("\n")
    assert len(instructions(large)) <= 4.4 * len(instructions(small))
    keywords = [i for i in instructions(large) if i in ("KW_NAMES", "CALL_KW", "CALL_FUNCTION_KW")]
    assert ", v" in large_source and keywords == [], large_source[:400]


def test_a_result_written_into_its_dying_operand_takes_its_name_not_a_del_line():
    # A ``del`` line after nearly every equation was a quarter of compile()'s
    # time on long programs; rebinding the operand's name lets it go as well.
    x = np.linspace(-1.0, 1.0, 4)
    source = ft.jit(ft.grad(_loop(160))).lower(x).source
    assert source.count("    del ") < 0.2 * source.count(" = f"), source[:400]
    assert "    v1 = f2(v1, k3, v1)\n" in ft.jit(lambda x: fnp.sin(x) * 2.0).lower(x).source


def _remembered(avals):
    return {a: (integer_pow_p.abstract_eval(a, y=2),
                reduce_sum_p.abstract_eval(a, axes=()),
                dot_general_p.abstract_eval(a, a, dimension_numbers=(((), ()), ((), ()))))
            for a in avals}


def test_remembered_avals_keep_weak_and_dtypes_apart():
    avals = [ShapedArray((), np.float64, weak_type=True), ShapedArray((), np.float64),
             ShapedArray((), np.float32), ShapedArray((), np.int8),
             ShapedArray((), np.int64, weak_type=True), ShapedArray((), np.bool_)]
    pow_avals.clear()
    dot_avals.clear()
    first = _remembered(avals)
    pow_avals.clear()
    dot_avals.clear()
    assert _remembered(avals[::-1]) == first
    for a, (p, s, d) in first.items():
        x = np.zeros((), a.dtype)
        assert s.dtype == np.sum(x).dtype, (a, s)
        assert d.dtype == np.dot(x, x).dtype, (a, d)
        if a.dtype != np.bool_:
            assert p.dtype == (x ** 2).dtype, (a, p)
