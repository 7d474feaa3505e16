"""The first call of a transformed program: an eager gradient of a program met
for the first time is linearized at once (``partial_eval.linearize_now``: the
forward values computed while the JVP's linear part is recorded, then the
backward pass run on the values), with no known or transposed program built,
optimised or hashed; from the second meeting on the programs are built and
cached.  Both ways give the same bits, and the same linear program."""

import itertools
import warnings

import numpy as np
import pytest
from _bits import bytes_equal as _same
from _programs import dataflow, run_dataflow
from _specs import DIFFERENTIABLE, SPECS, bind_with
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import _eager_grad, core, lax
from functrans.interpreters import partial_eval as pe
from functrans.interpreters import transpose as tr
from functrans.passes import cse, dce, fold, simplify
from functrans.passes.pipeline import run_passes
from functrans.tree_util import tree_leaves, tree_map


@pytest.fixture(autouse=True)
def _short_programs_qualify(monkeypatch):
    """The programs here are short; long ones are the point, and a program of
    fewer than ``MIN_EQUATIONS`` equations is built even on its first call."""
    monkeypatch.setattr(pe, "MIN_EQUATIONS", 0)


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _forget():
    """Every program met so far is met again for the first time."""
    for cache in (pe._meetings, pe.linearize_jaxpr, tr.transpose_jaxpr, _eager_grad.grad_plan):
        cache.cache_clear()


PROGRAMS = {
    "loop": lambda x: fnp.sum(fnp.tanh(fnp.tanh(x * 0.9 + 0.1) * 1.01 * 0.9 + 0.1)),
    "repeats": lambda x: fnp.sum(fnp.sin(x) * fnp.sin(x) + x * x * x),
    "scalar residuals": lambda x: fnp.sum(x) * fnp.sum(x * x) + fnp.max(x),
    "matmul": lambda x: fnp.sum(fnp.dot(x.reshape(2, -1), x.reshape(-1, 2)) ** 2),
    "logsumexp": lambda x: fnp.log(fnp.sum(fnp.exp(x - fnp.max(x)))),
    "where": lambda x: fnp.sum(fnp.where(x > 0, x, -0.0 * x)),
    "slices": lambda x: fnp.sum(x[1:] * x[:-1]) + x[0] ** 3,
    "division": lambda x: fnp.sum(1.0 / x + fnp.sqrt(fnp.abs(x))),
    "casts": lambda x: fnp.sum(x.astype(np.float32) * 2).astype(x.dtype),
    "constant": lambda x: fnp.sum(x * np.arange(8.0)) + fnp.sum(np.ones(3)),
    "identity": lambda x: fnp.sum(x * 1.0 + 0.0 - 0.0),
}

INPUTS = {
    "f64": np.linspace(-1.0, 1.0, 8),
    "specials": np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.0, 3.0]),
    "f32": np.linspace(0.5, 2.0, 8).astype(np.float32),
}


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_first_call_gives_the_bits_of_later_calls(name, inputs):
    f, x = PROGRAMS[name], INPUTS[inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _forget()
        grads = [ft.grad(f)(x) for _ in range(3)]
        _forget()
        pairs = [ft.value_and_grad(f)(x) for _ in range(3)]
        _forget()
        pulled = []
        for _ in range(3):
            out, vjp_fn = ft.vjp(f, x)
            pulled.append((out, vjp_fn(np.ones((), out.dtype))[0]))
    for later in grads[1:]:
        assert _same_bits(grads[0], later)
    for (v0, g0), (v, g) in zip(pairs, pairs[1:]):
        assert _same_bits(v0, v) and _same_bits(g0, g)
    assert _same_bits(pairs[0][1], grads[0])
    for (o0, c0), (o, c) in zip(pulled, pulled[1:]):
        assert _same_bits(o0, o) and _same_bits(c0, c)


def test_first_call_builds_no_programs_and_the_second_caches_them():
    f = PROGRAMS["loop"]
    x = INPUTS["f64"]
    _forget()
    first = ft.grad(f)(x)
    assert pe.linearize_jaxpr.cache_info().misses == 0
    assert tr.transpose_jaxpr.cache_info().misses == 0
    assert _same_bits(first, ft.grad(f)(x))
    _forget()
    one = np.ones(())
    outs = [ft.vjp(f, x) for _ in range(3)]
    cts = [vjp_fn(one)[0] for _, vjp_fn in outs]
    assert pe.linearize_jaxpr.cache_info().misses == 1  # the second call built it
    assert pe.linearize_jaxpr.cache_info().hits == 1  # and the third found it
    assert tr.transpose_jaxpr.cache_info().misses == 1
    assert all(_same_bits(cts[0], c) for c in cts[1:])
    # A vjp_fn of a first call applied again runs the cached transposed program.
    _forget()
    _, vjp_fn = ft.vjp(f, x)
    again = [vjp_fn(one)[0] for _ in range(3)]
    assert tr.transpose_jaxpr.cache_info().misses == 1
    assert all(_same_bits(again[0], c) for c in again[1:] + cts)


def test_the_linear_program_is_partial_evaluations():
    """The program ``linearize_now`` records equals (up to the names of its
    variables) the optimised linear part of ``linearize_jaxpr``, residuals in
    the same order: the backward pass is the same either way."""
    for f in PROGRAMS.values():
        for x in INPUTS.values():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                _check_linear_program(f, [x])


def _check_linear_program(f, args):
    opened, consts = core.open_jaxpr(ft.make_jaxpr(f)(*args))
    values = list(consts) + list(args)
    flags = (False,) * len(consts) + (True,) * len(args)
    assert pe.can_linearize_now(opened, values)
    outs, residuals, linear = pe.linearize_now(opened, values, flags)
    known, cached, n_out = pe.linearize_jaxpr(opened, flags)
    assert linear.jaxpr == cached.jaxpr
    ran = core.run_jaxpr(known, values)
    assert len(ran) == n_out + len(residuals)
    for a, b in zip(ran, outs + residuals):
        assert _same_bits(a, b)


UNARY = [fnp.sin, fnp.tanh, fnp.exp, lambda x: x * 0.5, lambda x: -x, fnp.sum,
         lambda x: x * x, fnp.cos]
BINARY = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y,
          lambda x, y: fnp.maximum(x, y), lambda x, y: fnp.where(x > y, x, y)]


@settings(max_examples=40, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 2, 8),
       st.sampled_from([np.float64, np.float32]))
def test_random_programs_first_and_later_calls(program, dtype):
    def f(x, y):
        return sum(fnp.sum(o) for o in run_dataflow(program, UNARY, BINARY, [x, y]))

    x = np.array([0.5, -0.0, 2.0, np.inf], dtype)
    y = np.array([1.5, 0.0, -1.0, 3.0], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _check_linear_program(f, [x, y])
        _forget()
        grads = [ft.grad(f, argnums=(0, 1))(x, y) for _ in range(3)]
    for later in grads[1:]:
        assert all(_same_bits(a, b) for a, b in zip(grads[0], later))


def _scan_program(x):
    return fnp.sum(lax.scan(lambda c, _: (fnp.sin(c), None), x, None, length=3)[0])


def test_loops_effects_checks_and_tracers_take_the_cached_path():
    x = INPUTS["f64"]
    scan = core.open_jaxpr(ft.make_jaxpr(_scan_program)(x))[0]
    assert not pe.can_linearize_now(scan, [x])
    plain = core.open_jaxpr(ft.make_jaxpr(PROGRAMS["loop"])(x))[0]
    assert pe.can_linearize_now(plain, [x])
    ft.config.update("debug_nans", True)
    try:
        assert not pe.can_linearize_now(plain, [x])
    finally:
        ft.config.update("debug_nans", False)
    # A program with a loop still gives the same bits on its first call.
    _forget()
    assert _same_bits(ft.grad(_scan_program)(x), ft.grad(_scan_program)(x))
    # Inside a trace (grad of grad) the programs are built as before.
    hess = ft.grad(lambda x: ft.grad(lambda y: fnp.sum(fnp.sin(y) ** 2))(x).sum())
    _forget()
    assert _same_bits(hess(x), hess(x))


def test_passes_leave_a_program_with_nothing_to_do_as_it_is():
    """Each pass hands back the very program it was given when it changes
    nothing (the pipeline stops after one round)."""
    x = INPUTS["f64"]
    closed = ft.make_jaxpr(PROGRAMS["loop"])(x)
    for run in (fold.fold, simplify.simplify, cse.cse, dce.dce_closed):
        assert run(closed) is closed


def test_passes_substitute_after_a_first_change():
    """The passes skip their substitution until a first rewrite; the ones after
    it must still be renamed (a merge, a fold, a dropped identity)."""
    x = INPUTS["f64"]

    def f(x):
        a, b = fnp.sin(x), fnp.sin(x)  # merged by cse
        c = (a * 1.0) + fnp.sum(fnp.ones(3) * 2.0)  # * 1.0 dropped, the sum folded
        return fnp.sum(b * c + a)

    closed = ft.make_jaxpr(f)(x)
    optimised = run_passes(closed)
    core.check_jaxpr(optimised)
    assert len(optimised.eqns) < len(closed.eqns)
    assert _same_bits(core.run_jaxpr(optimised, [x])[0], core.run_jaxpr(closed, [x])[0])


def _peak_of_vjp(f, x) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        _, vjp_fn = ft.vjp(f, x)
        vjp_fn(np.ones(()))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_first_call_frees_forward_values_at_their_last_use(monkeypatch):
    """The forward values of a first call go when the JVP has read them for the
    last time, unless they are residuals: its peak memory is no more than
    the built programs' first, interpreted runs (both keep the residuals
    for the backward pass)."""
    x = np.linspace(-1.0, 1.0, 1_000_000)

    def f(x):
        y = fnp.sin(x) * x + x ** 2
        z = fnp.tanh(y) * 0.5 + fnp.cos(x)
        return fnp.sum(z * z)

    _forget()
    at_once = _peak_of_vjp(f, x)
    _forget()
    monkeypatch.setattr(pe, "can_linearize_now", lambda *args: False)
    built = _peak_of_vjp(f, x)
    assert at_once <= built + x.nbytes // 2


def test_short_programs_are_built_on_their_first_call(monkeypatch):
    monkeypatch.setattr(pe, "MIN_EQUATIONS", 32)
    x = INPUTS["f64"]
    one = np.ones(())
    _forget()
    ft.vjp(PROGRAMS["loop"], x)[1](one)  # 9 equations
    assert pe.linearize_jaxpr.cache_info().misses == 1

    def long(x):
        for _ in range(10):
            x = fnp.tanh(x * 0.9 + 0.1) * 1.01
        return fnp.sum(x)

    _forget()
    first = ft.vjp(long, x)[1](one)[0]
    assert pe.linearize_jaxpr.cache_info().misses == 0
    assert _same_bits(first, ft.vjp(long, x)[1](one)[0])


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_every_primitive_first_call_gives_the_built_programs_bits(name, data):
    """``vjp`` of each differentiable primitive (bound with its float operands
    free): the first call, linearized at once, and the second, through the
    built programs, give the same outputs and cotangents bit for bit."""
    case = SPECS[name].draw(data.draw)
    f = bind_with(name, case, case.diff)
    diff = [case.values[i] for i in case.diff]
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _forget()
        for _ in range(2):
            out, vjp_fn = ft.vjp(f, *diff)
            cts = tree_map(lambda o: np.ones_like(o) if np.asarray(o).dtype.kind in "fc"
                           else np.zeros_like(o), out)
            results.append(tree_leaves(out) + list(vjp_fn(cts)))
    for a, b in zip(*results):
        assert _same_bits(a, b), name


def test_a_program_that_cannot_be_linearized_at_once_is_built_on_its_first_call():
    """Its first ``grad`` builds both of its plan's programs; a program that
    can be is linearized at once and builds nothing."""
    x = INPUTS["f64"]
    _forget()
    ft.grad(_scan_program)(x)
    plan = _eager_grad.grad_plan(ft.make_jaxpr(_scan_program)(x).jaxpr, False)
    assert plan.forward is not None and plan.backward is not None
    ft.grad(PROGRAMS["loop"])(x)
    plan = _eager_grad.grad_plan(ft.make_jaxpr(PROGRAMS["loop"])(x).jaxpr, False)
    assert plan.met == 1 and plan.forward is None and plan.backward is None


# -- the first call, linearized at once (adversarial cases) ----------------------------

_fresh = itertools.count(1)


def _long(c: float):
    """A 36-equation program (linearized at once on its first call) whose
    structure is new for each ``c``."""

    def f(x):
        h = x
        for _ in range(12):
            h = fnp.tanh(h) * x * c + h[::-1]
        return h

    return f


def _mixed(x, y):
    h = x
    for _ in range(6):
        h = fnp.where(h > 0, fnp.sin(h) * y, h * 2.0 - 0.0)
        h = h + fnp.cumsum(h) * 0.01
        h = h.at[1].set(h[0] * 3)
        h = h + fnp.max(h) - fnp.min(h) * fnp.mean(h)
        h = fnp.concatenate([h[1:], h[:1]]) * fnp.exp(-fnp.abs(h))
        h = fnp.sqrt(h * h + 1.0) / (1.0 + 2)
    return fnp.sum(h * y)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("x", [
    [0.5, -0.0, 1.0, np.nan, 2.0], [0.5, np.inf, 1.0, -np.inf, 2.0], [0.0, -0.0, 0.0, -0.0, 0.0],
])
def test_first_call_bits_equal_later_calls(x):
    x, y = np.array(x), np.array([1.0, 2.0, -0.0, 3.0, 4.0])
    runs = [ft.value_and_grad(_mixed, argnums=(0, 1))(x, y) for _ in range(3)]
    for later in runs[1:]:
        assert all(map(_same, ft.tree_util.tree_leaves(runs[0]), ft.tree_util.tree_leaves(later)))


@pytest.mark.parametrize("ct", [np.ones(4, np.float32), np.ones(4, np.int64), [1.0] * 4,
                                np.ones(4, bool), np.ones((1, 4)), np.ones(3), 2.0])
def test_first_vjp_takes_cotangents_as_later_ones(ct):
    """The first pull (the backward pass run at once) takes or refuses a
    cotangent as every later one does, with the same bits."""
    f = _long(1.0 + next(_fresh) * 1e-3)
    x = np.linspace(-1, 1, 4)
    got = []
    for _ in range(3):
        _, pull = ft.vjp(f, x)
        for _ in range(2):
            try:
                r = pull(ct)[0]
                got.append((r.dtype, r.shape, r.tobytes()))
            except TypeError as e:
                got.append(str(e))
    assert len(set(got)) == 1


@pytest.mark.parametrize("how", ["vjp_first", "vjp_later", "vjp_short", "linear_transpose",
                                 "jvp"])
def test_complex_scalar_for_a_real_output_is_refused(how):
    """A Python complex is weakly typed, but no real cotangent or tangent:
    the first (linearized at once) pull dropped its imaginary part, later
    ones failed inside float(), a short program's gave a complex gradient of
    a real argument."""
    f = _long(1.0 + next(_fresh) * 1e-3)
    x = np.linspace(-1, 1, 4)

    def loss(x):
        return fnp.sum(f(x))

    calls = {
        "vjp_first": lambda: ft.vjp(loss, x)[1](1 + 2j),
        "vjp_later": lambda: (ft.vjp(loss, x), ft.vjp(loss, x)[1](1 + 2j)),
        "vjp_short": lambda: ft.vjp(fnp.sin, 0.5)[1](1 + 2j),
        "linear_transpose": lambda: ft.linear_transpose(lambda x: 2 * x, 0.5)(1 + 2j),
        "jvp": lambda: ft.jvp(fnp.sin, (0.5,), (1 + 2j,)),
    }
    with pytest.raises(TypeError, match=r"has type c128\[\] but f64\[\] is expected"):
        calls[how]()


def test_complex_cotangent_of_a_complex_output_still_taken():
    _, pull = ft.vjp(lambda x: fnp.sin(x) * (1 + 0j), 0.5)
    np.testing.assert_allclose(pull(1 + 2j)[0], np.cos(0.5))


def test_error_in_first_call_leaves_later_calls_right():
    state = {"raise": True}

    def f(x):
        h = x
        for _ in range(20):
            h = fnp.sin(h) * h + 0.5
        if state.pop("raise", False):
            raise ValueError("raised while tracing")
        return fnp.sum(h)

    x = np.linspace(0, 1, 3)
    with pytest.raises(ValueError, match="raised while tracing"):
        ft.grad(f)(x)
    first, second = ft.grad(f)(x), ft.grad(f)(x)
    assert _same(first, second)
    np.testing.assert_allclose(first, ft.jit(ft.grad(f))(x), rtol=1e-12)
