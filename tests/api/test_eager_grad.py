"""The cheap path of a repeated eager ``grad``: the function is traced on
every call, the traced program's structure finds its ``GradPlan`` in one
lookup, and the plan's forward and backward programs run.  Nothing is ever
reused on a guess: whatever the Python function does differently (its
globals, its closure, its control flow on values) shows in the trace, so a
changed function gets a new plan and a right gradient.  Structural checks
only; no timings."""

import gc
import itertools
import struct
import threading
import warnings

import numpy as np
import pytest
from _bits import bytes_equal as _same
from _modules import module_from_source

import functrans as ft
import functrans.numpy as fnp
from functrans import _api_util, _eager_grad, config, core
from functrans.interpreters import partial_eval, transpose

SCALE = 2.0


def _loss(x):
    return fnp.sum(fnp.sin(x) * x + x**2)


def _want(x):
    return np.sin(x) + x * np.cos(x) + 2.0 * x


def test_a_repeated_call_looks_up_one_plan_and_no_transform():
    x = np.linspace(-1.0, 1.0, 10)
    g = ft.grad(_loss)
    for _ in range(3):
        g(x)  # the first meetings build and cache the transforms
    plans = _eager_grad.grad_plan.cache_info()
    lin = partial_eval.linearize_jaxpr.cache_info()
    tr = transpose.transpose_jaxpr.cache_info()
    for _ in range(5):
        np.testing.assert_allclose(g(x), _want(x), rtol=1e-14)
    assert _eager_grad.grad_plan.cache_info().hits == plans.hits + 5
    assert _eager_grad.grad_plan.cache_info().misses == plans.misses
    assert partial_eval.linearize_jaxpr.cache_info()[:2] == lin[:2]
    assert transpose.transpose_jaxpr.cache_info()[:2] == tr[:2]


def test_a_changed_global_is_seen_on_the_next_call():
    global SCALE

    def loss(x):
        y = x * SCALE  # a Python float: a literal of the traced program
        return fnp.sum(y * y) if SCALE > 0 else fnp.sum(fnp.sin(y))

    g = ft.grad(loss)
    x = np.array([0.5, -1.5, 2.0])
    try:
        for scale in (2.0, 2.0, 3.0, 3.0, -1.0, -1.0, 2.0):
            SCALE = scale
            want = 2 * scale**2 * x if scale > 0 else scale * np.cos(scale * x)
            np.testing.assert_allclose(g(x), want, rtol=1e-14)
    finally:
        SCALE = 2.0


def test_a_changed_closure_is_seen_on_the_next_call():
    weights = np.array([1.0, 2.0, 3.0])
    state = {"square": True}

    def loss(x):
        y = x * weights  # an array constant: an input of the plan, read anew each call
        return fnp.sum(y * y) if state["square"] else fnp.sum(y)

    g = ft.grad(loss)
    x = np.array([0.5, -1.5, 2.0])
    for w, square in ((1.0, True), (1.0, True), (-4.0, True), (-4.0, False), (3.0, False)):
        weights[:] = w * np.array([1.0, 2.0, 3.0])
        state["square"] = square
        want = 2 * x * weights**2 if square else weights
        np.testing.assert_allclose(g(x), want, rtol=1e-14)


def test_control_flow_on_values_follows_every_call():
    def loss(x):
        if x.sum() > 0:  # traced again with values: the program is specialised
            return fnp.sum(x**3)
        return fnp.sum(fnp.exp(x))

    g = ft.grad(loss)
    for x in ([1.0, 2.0], [1.0, 2.0], [-1.0, -2.0], [-1.0, -2.0], [3.0, 0.5]):
        x = np.array(x)
        want = 3 * x**2 if x.sum() > 0 else np.exp(x)
        np.testing.assert_allclose(g(x), want, rtol=1e-14)


def test_a_redefined_function_gets_its_own_gradient():
    x = np.linspace(0.1, 1.0, 4)
    for _ in range(3):
        for power, want in ((2, 2 * x), (3, 3 * x**2)):
            g = ft.grad(lambda x, p=power: fnp.sum(x**p))
            np.testing.assert_allclose(g(x), want, rtol=1e-14)


@pytest.mark.parametrize("case", ["int argument", "nested", "under jit", "tracer constant",
                                  "has_aux", "argnums"])
def test_the_other_paths_still_give_the_gradient(case):
    x = np.array([0.3, -0.7, 1.1])
    for _ in range(3):
        if case == "int argument":
            g, gn = ft.grad(lambda x, n: fnp.sum(x * n), argnums=(0, 1), allow_int=True)(x, 3)
            np.testing.assert_allclose(g, np.full(3, 3.0))
            assert gn.dtype == ft.dtypes.float0
        elif case == "nested":
            h = ft.grad(lambda x: fnp.sum(ft.grad(_loss)(x)))(x)
            np.testing.assert_allclose(h, 2 * np.cos(x) - x * np.sin(x) + 2.0, rtol=1e-14)
        elif case == "under jit":
            np.testing.assert_allclose(ft.jit(ft.grad(_loss))(x), _want(x), rtol=1e-14)
        elif case == "tracer constant":
            def outer(w):  # the inner function closes over a tracer of the outer trace
                return fnp.sum(ft.grad(lambda x: fnp.sum(x * w) ** 2)(x))

            w = x + 1.0
            want = 2 * x * np.sum(w) + 2 * np.sum(x * w)
            np.testing.assert_allclose(ft.grad(outer)(w), want, rtol=1e-14)
        elif case == "has_aux":
            (value, aux), g = ft.value_and_grad(lambda x: (_loss(x), x * 2), has_aux=True)(x)
            np.testing.assert_allclose(g, _want(x), rtol=1e-14)
            assert np.array_equal(aux, x * 2) and value == _loss(x)
        else:
            ga, gb = ft.grad(lambda a, b: fnp.sum(a * b * b), argnums=(0, 1))(x, x + 1)
            np.testing.assert_allclose(ga, (x + 1) ** 2)
            np.testing.assert_allclose(gb, 2 * x * (x + 1))


def test_a_plan_s_forms_at_other_lines_count_in_its_cache_s_equations():
    # Three functions of one program at three lines: the plan is made once
    # and placed at the two other lines, each form a program as large as it.
    def at_one(x):
        return fnp.sum(fnp.sin(x) * x)

    def at_two(x):
        return fnp.sum(fnp.sin(x) * x)

    def at_three(x):
        return fnp.sum(fnp.sin(x) * x)

    x = np.linspace(-1.0, 1.0, 5)
    size = len(ft.make_jaxpr(at_one)(x).jaxpr.eqns)
    _eager_grad.grad_plan.cache_clear()
    for k, f in enumerate((at_one, at_two, at_three)):
        g = ft.grad(f)
        for _ in range(3):  # built, compiled, run
            np.testing.assert_allclose(g(x), np.sin(x) + x * np.cos(x), rtol=1e-15)
        info = _eager_grad.grad_plan.cache_info()
        assert (info.currsize, info.misses, info.equations) == (1, 1, size * (k + 1))
    for f in (at_one, at_two):  # met again: no form added
        ft.grad(f)(x)
    assert _eager_grad.grad_plan.cache_info().equations == size * 3


def test_plans_are_dropped_when_the_value_checks_switch():
    x = np.array([0.5, 2.0])
    g = ft.value_and_grad(lambda x: fnp.sum(fnp.log(x)))
    for _ in range(3):
        g(x)
    assert _eager_grad.grad_plan.cache_info().currsize > 0
    config.update("debug_nans", True)
    try:
        assert _eager_grad.grad_plan.cache_info().currsize == 0
        for _ in range(3):
            with pytest.raises(FloatingPointError, match="debug_nans: the primitive 'log'"):
                g(np.array([-1.0, 2.0]))
    finally:
        config.update("debug_nans", False)
    np.testing.assert_allclose(g(x)[1], 1 / x)


def test_threads_share_plans_and_get_their_own_results():
    g = ft.grad(_loss)
    xs = [np.linspace(-1.0, 1.0, 10) * k for k in range(1, 9)]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(k):
        try:
            for _ in range(50):
                got = g(xs[k])
                if not np.array_equal(got, results.setdefault(k, got)):
                    raise AssertionError(f"thread {k}: results differ between calls")
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, x in enumerate(xs):
        np.testing.assert_allclose(results[k], _want(x), rtol=1e-14)


def test_a_trace_records_a_plain_equation_as_before():
    # The recording fast path keeps the equation's pieces: inputs, outputs,
    # params, source; a value-carrying trace still carries values.
    closed = ft.make_jaxpr(lambda x: fnp.sum(x * 2.0, axis=0))(np.ones((2, 3)))
    mul, total = closed.jaxpr.eqns
    assert mul.primitive.name == "mul" and mul.inputs[0] is closed.jaxpr.invars[0]
    assert total.params == {"axes": (0,)} and total.inputs[0] is mul.outputs[0]
    assert mul.source is not None and core.source_location(mul.source)[0] == __file__
    trace = core.JaxprTrace("f", concrete=True)
    with trace:
        t = trace.new_arg(core.ShapedArray((2,), np.float64), np.array([1.0, 2.0]))
        assert np.array_equal((t * 3.0).val, [3.0, 6.0])


def test_python_scalars_share_one_aval_and_literals_key_by_their_bits():
    assert core.get_aval(1.5) is core.get_aval(-2.0) is core.get_aval(float("nan"))
    assert core.get_aval(3) is core.get_aval(-7) and core.get_aval(True) is core.get_aval(False)
    assert core.get_aval(1.5).weak_type and not core.get_aval(True).weak_type
    payload = struct.unpack("=d", struct.pack("=Q", 0x7FF8000000000001))[0]
    values = (0.0, -0.0, float("nan"), -float("nan"), payload, 1.5)
    keys = [core.Literal(v, core.get_aval(v)).key() for v in values]
    assert len(set(keys)) == len(values)
    for v, key in zip(values, keys):  # the bytes an array of the value holds
        assert key[3:] == (np.dtype(np.float64), np.asarray(v).tobytes())
    programs = [ft.make_jaxpr(lambda x, c=c: x * c)(np.ones(2)) for c in values]
    assert len({p.jaxpr for p in programs}) == len(values)
    assert ft.make_jaxpr(lambda x: x * -0.0)(np.ones(2)).jaxpr == programs[1].jaxpr


def _long_loss(h):
    for _ in range(500):
        h = fnp.tanh(h * 0.9 + 0.1) * 1.01
    return fnp.sum(h)


def _equations_alive() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is core.Eqn)


def _warm_grad_of_long_loss():
    """grad(_long_loss) and its input after its caches are filled and the
    collector has run, so what later calls leave alive can be counted."""
    g = ft.grad(_long_loss)
    h = np.linspace(-1.0, 1.0, 4)
    for _ in range(4):  # the calls that build its plan's programs
        g(h)
    gc.collect()
    return g, h


def test_no_collection_walks_a_call_s_trace():
    # The collector stays paused until the call's trace and programs have
    # died by reference counting: a collection starting in the middle would
    # walk its thousands of objects (and move them to an older generation,
    # which full collections walk again and again).
    g, h = _warm_grad_of_long_loss()
    cached = _equations_alive()
    seen = []

    def count(phase, info):
        if phase == "start":
            seen.append(_equations_alive())

    threshold = gc.get_threshold()
    gc.set_threshold(100)  # collections often: one would start inside a call if it could
    gc.callbacks.append(count)
    try:
        for _ in range(3):
            g(h)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*threshold)
    assert seen and all(n == cached for n in seen), (cached, seen)


def test_program_caches_keep_no_call_s_trace():
    # A cache hit keeps the key the entry was stored under, so the program
    # traced by this call dies with the call.
    g, h = _warm_grad_of_long_loss()
    gc.disable()
    try:
        before = {id(o) for o in gc.get_objects() if type(o) is core.Eqn}
        g(h)
        left = [o for o in gc.get_objects() if type(o) is core.Eqn and id(o) not in before]
    finally:
        gc.enable()
    assert left == []


@pytest.mark.parametrize("x", [np.ones(3), 2.5, np.ones((2, 2), np.float32)])
@pytest.mark.parametrize("argnums", [0, -1])
def test_one_argument_is_taken_as_the_general_path_takes_it(x, argnums):
    fast = _api_util.diff_args("grad(f)", argnums, (x,), False, False)
    general = _api_util.diff_args("grad(f)", (argnums,), (x,), False, False)
    assert fast[0] == general[0] == (0,) and fast[2] == general[2]
    assert len(fast[1]) == 1 and fast[1][0] is x is general[1][0]


def test_one_argument_the_checks_refuse_still_names_it():
    with pytest.raises(ft.errors.DTypeError, match=r"grad\(f\): argument 0 has integer"):
        _api_util.diff_args("grad(f)", 0, (np.arange(3),), False, False)
    with pytest.raises(TypeError, match=r"argument \[0\]\['a'\] is a str"):
        _api_util.diff_args("grad(f)", 0, ({"a": "text"},), False, False)


# -- eager grad's plan and its in-place residuals ------------------------------------


@pytest.mark.parametrize("name", ["aux_is_residual", "aux_views", "twice", "broadcast",
                                  "cse", "matmul"])
def test_value_and_aux_survive_later_calls(name):
    """Values and aux that are (or view) residuals the backward pass may
    write into stay as returned, over five calls, large arrays (the scratch
    pool's size) included, and equal jit's."""
    progs = {
        "aux_is_residual": lambda x: (fnp.sum(fnp.sin(x) * x), fnp.sin(x)),
        "aux_views": lambda x: (fnp.sum(fnp.tanh(x) ** 2),
                                (fnp.tanh(x)[::-1], fnp.tanh(x).reshape(100, -1).T)),
        "twice": lambda x: (fnp.sum(fnp.cos(x) * fnp.cos(x)), (fnp.cos(x), fnp.cos(x))),
        "broadcast": lambda x: (fnp.sum(fnp.sin(x)[:, None] * fnp.cos(x[:3])[None, :]),
                                fnp.cos(x[:3])),
        "cse": lambda x: (fnp.sum((x * 2.0) * (x * 2.0) * fnp.sin(x * 2.0)), x * 2.0),
        "matmul": lambda x: (fnp.sum(fnp.sin(x.reshape(100, -1)) @ fnp.cos(x.reshape(-1, 100))),
                             fnp.cos(x.reshape(-1, 100))),
    }
    vg = ft.value_and_grad(progs[name], has_aux=True)
    rng = np.random.default_rng(0)
    kept = []
    for n in (6 * 100, 200 * 100, 200 * 100, 200 * 100, 200 * 100):
        x = rng.standard_normal(n)
        r = vg(x)
        kept.append((x, r, ft.tree_util.tree_map(np.copy, r)))
    for x, r, copied in kept:
        want = ft.jit(vg)(x)
        for got, snap, exp in zip(*map(ft.tree_util.tree_leaves, (r, copied, want))):
            assert _same(got, snap)
            np.testing.assert_allclose(got, exp, rtol=1e-12, atol=1e-12)


def test_closure_constants_of_one_structure_give_their_own_gradient():
    for c in (np.array([1.0, 2.0, 3.0]), np.array([5.0, -1.0, 0.5])):
        before = c.copy()

        def f(x, c=c):
            return fnp.sum(fnp.sin(c * x) * c)

        for _ in range(3):
            np.testing.assert_array_equal(ft.grad(f)(np.ones(3)), np.cos(c) * c * c)
        assert _same(c, before)


def test_grad_from_threads_at_once():
    def f(x):
        h = x
        for _ in range(40):
            h = fnp.sin(h) * h + 0.1
        return fnp.sum(h * h)

    g = ft.grad(f)
    xs = [np.linspace(0, 1, 20_000) + i for i in range(4)]
    want = [g(x) for x in xs]
    bad = []

    def work(i):
        for _ in range(5):
            if not _same(g(xs[i]), want[i]):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


# -- random chains: the first call, the plan interpreted, the plan compiled -----------

_fresh = itertools.count(1)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_random_chains_first_plan_and_compiled_calls_bit_equal():
    """``value_and_grad`` of random chains (repeated to 32 equations or more,
    so the first call is linearized at once), with their state as aux: the
    first call, the plan's interpreted and compiled runs (the backward pass
    writing into residuals) and ``vjp`` (no plan) agree bit for bit, and
    earlier results are unchanged by later calls."""
    hypothesis = pytest.importorskip("hypothesis")
    from _op_chains import program, programs

    @hypothesis.settings(max_examples=25, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(programs())
    def check(drawn):
        ops, x0, w = drawn
        ops = ops * (1 + 36 // len(ops))
        chain = program(ops)
        c = 1.0 + next(_fresh) * 1e-6  # a structure of its own: its first call is first

        def f(x0, w):
            state = chain(x0, w)
            return fnp.sum(fnp.sin(state) * c), state

        vg = ft.value_and_grad(f, argnums=(0, 1), has_aux=True)
        runs = [vg(x0, w) for _ in range(4)]
        copies = [ft.tree_util.tree_map(np.copy, r) for r in runs]
        _, pull, _ = ft.vjp(f, x0, w, has_aux=True)
        grads = pull(np.ones(()))
        for r, copied in zip(runs, copies):
            leaves = ft.tree_util.tree_leaves(r)
            assert all(map(_same, leaves, ft.tree_util.tree_leaves(copied)))
            assert all(map(_same, leaves, ft.tree_util.tree_leaves(runs[0])))
            assert all(map(_same, ft.tree_util.tree_leaves(r[1]), grads))

    check()


def test_the_plan_guard_takes_its_last_plan_only_for_the_same_tape_and_value_wish():
    guard = _eager_grad.PlanGuard()
    x = np.linspace(-1.0, 1.0, 4)

    def traced(f):
        trace, _ = core.record(lambda x: [f(x)], [x], tape=[])
        return trace

    t = traced(_loss)
    plan = guard.plan(t, False)
    again = traced(_loss)  # another trace of the same program
    assert again.tape is not t.tape and guard.plan(again, False) is plan
    with_value = guard.plan(t, True)
    assert with_value is not plan and with_value.need_value
    other_t = traced(lambda x: fnp.sum(fnp.cos(x)))
    other = guard.plan(other_t, True)
    assert other is not with_value and other.jaxpr == other_t.closed().jaxpr
    # While debug_nans is on the guard stands aside and remembers nothing.
    config.update("debug_nans", True)
    try:
        checked = guard.plan(t, True)
        assert checked is not with_value and guard.recent[0].plan is other
    finally:
        config.update("debug_nans", False)


_SITE = """import functrans.numpy as fnp


def site(x):
    return fnp.sum(fnp.log(x) * x)


def body(i, x):
    return fnp.log(x) * x
"""


def test_the_plan_guard_knows_the_lines_of_a_plan_only_for_the_code_it_checked(tmp_path):
    # Two modules of the same source in two files: their code objects are
    # equal (their tapes too), but an equation of each stands in its own file.
    a = module_from_source(tmp_path / "site_a.py", _SITE)
    b = module_from_source(tmp_path / "site_b.py", _SITE)
    x = np.linspace(0.5, 1.5, 4)
    f, bw = object(), object()  # stand-ins for a plan's built parts

    def traced(f):
        return core.record(lambda x: [f(x)], [x], tape=[])[0]

    def known(entry, trace, forward=f, backward=bw):
        return guard.parts_at_lines(entry, trace, forward, backward)

    guard = _eager_grad.PlanGuard()
    entry = guard.entry(traced(a.site), False)
    assert known(entry, traced(a.site)) is None  # no call has checked them
    guard.found_at_lines(entry, traced(a.site))
    entry = guard.entry(traced(a.site), False)
    assert entry.code is not None and entry.code[1] is a.site.__code__
    assert known(entry, traced(a.site)) == (f, bw)
    other = traced(b.site)
    assert other.tape == traced(a.site).tape and guard.entry(other, False) is entry
    assert known(entry, other) is None
    # One function's two sites: one plan, one first code object, two tapes;
    # the site checked (and made the most recent since) tells nothing of
    # the other's lines.
    def two_sites(x, first):
        if first:
            return fnp.sum(fnp.log(x) * x)
        return fnp.sum(fnp.log(x) * x)

    at_one = traced(lambda x: two_sites(x, True))
    at_two = traced(lambda x: two_sites(x, False))
    guard.found_at_lines(guard.entry(at_one, False), at_one)  # the plan's own lines
    entry_two = guard.entry(at_two, False)
    assert guard.entry(at_one, False).plan is entry_two.plan and at_one.tape != at_two.tape
    assert known(guard.entry(at_one, False), at_one) == (f, bw)
    assert known(entry_two, at_two) is None
    # A program with a sub-program: the tape holds none of the sub-program's
    # sources, so its lines are never taken as known.
    looped = traced(lambda x: fnp.sum(ft.lax.fori_loop(0, 2, a.body, x)))
    guard.found_at_lines(guard.entry(looped, False), looped)
    entry = guard.entry(looped, False)
    assert not entry[2].flat and known(entry, looped) is None


def test_the_plan_guard_keeps_a_plan_s_form_at_another_function_s_lines():
    # A second function of the same program at other lines runs the plan's
    # form placed there: found once, then taken from its guard by the tape,
    # without making its program again (which cost 40% more a call).
    def first(x):
        return fnp.sum(fnp.sin(x) * x + x ** 2)

    def second(x):
        return fnp.sum(fnp.sin(x) * x + x ** 2)

    x = np.linspace(0.5, 1.5, 4)
    g1, g2 = ft.grad(first), ft.grad(second)
    for _ in range(8):  # the plan built and compiled at first's lines
        g1(x)
    made = []
    closed = core.JaxprTrace.closed

    def counted(trace):
        made.append(trace)  # kept alive: distinct traces stay distinct
        return closed(trace)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core.JaxprTrace, "closed", counted)
        for _ in range(5):
            np.testing.assert_allclose(g2(x), np.sin(x) + x * np.cos(x) + 2 * x, rtol=1e-14)
    assert len({id(t) for t in made if t.fun_name == "second"}) == 1  # its first call only
    # The form is the plan's at second's lines: a warning names second's line.
    def first_log(x):
        return fnp.sum(fnp.log(x) * x)

    def second_log(x):
        return fnp.sum(fnp.log(x) * x)

    g1log, g2log = ft.grad(first_log), ft.grad(second_log)
    for _ in range(8):
        g1log(x)
    for _ in range(3):
        g2log(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g2log(np.array([-1.0, 2.0]))
    assert caught
    assert {w.lineno for w in caught} == {second_log.__code__.co_firstlineno + 1}


def test_one_grad_function_of_two_files_warns_at_the_line_of_each(tmp_path):
    a = module_from_source(tmp_path / "site_a.py", _SITE)
    b = module_from_source(tmp_path / "site_b.py", _SITE)
    state = {"module": a}
    g = ft.grad(lambda x: state["module"].site(x))
    good, bad = np.array([0.5, 2.0]), np.array([-1.0, 2.0])
    for _ in range(6):  # built and compiled, then met at both files' lines
        for module in (a, b):
            state["module"] = module
            g(good)
    for _ in range(2):
        for module in (a, b, b, a):
            state["module"] = module
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                g(bad)
            assert {w.filename for w in caught} == {module.__file__}


def test_eager_grad_with_python_scalars_on_either_side_of_an_operation():
    # The tape's path for a tracer and a Python scalar keeps the operands'
    # order: 1.5 - x is not x - 1.5, nor 3 / x x / 3.
    def f(x):
        return fnp.sum((1.5 - x) / 2 + 3 / (x + 1) - x * 0.5 + (2 - x) ** 2 - True * x)

    x = np.array([0.5, 1.0, 3.0])
    want = -0.5 - 3 / (x + 1) ** 2 - 0.5 - 2 * (2 - x) - 1.0
    for _ in range(3):  # the first call, then the plan's
        np.testing.assert_allclose(ft.grad(f)(x), want, rtol=1e-15)
    g = ft.grad(f)
    for _ in range(3):
        np.testing.assert_allclose(g(x), want, rtol=1e-15)
