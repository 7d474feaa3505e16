"""An eager gradient of a long program is built over its first calls, a step
a call (``functrans._eager_grad.GradPlan``), and its programs are compiled a
part at a time (``functrans.backends.numpy.Parts``), so that no call pays
for all of it.  Every call gives the bits of the first, under threads,
across a fork and with debug_nans on, and no call compiles more than its
share.  Structural checks only; no timings."""

import itertools
import os
import threading
import warnings

import numpy as np
import pytest
from _programs import dataflow, run_dataflow
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import _eager_grad, config
from functrans.backends.numpy import Parts, codegen, interpret
from functrans.interpreters import partial_eval as pe
from functrans.tree_util import tree_leaves

#: A constant no other test's program uses: each test meets its programs first.
_fresh = itertools.count(1)


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch):
    """Parts of a few equations, so that the short programs here are cut, and
    built in steps however short."""
    monkeypatch.setattr(_eager_grad, "MIN_PART", 8)
    monkeypatch.setattr(pe, "MIN_EQUATIONS", 0)


def _loop(steps: int = 10):
    """A Python loop of 4 equations a step (41 equations), its own program."""
    a = 0.9 + next(_fresh) * 2.0**-40

    def loss(h):
        for _ in range(steps):
            h = fnp.tanh(h * a + 0.1) * 1.01
        return fnp.sum(h)

    loss.a, loss.steps = a, steps
    return loss


def _loop_grad(f, h):
    """The loop's gradient by hand: the forward values kept, then walked back."""
    ts = []
    for _ in range(f.steps):
        ts.append(np.tanh(h * f.a + 0.1))
        h = ts[-1] * 1.01
    g = np.ones_like(h)
    for t in reversed(ts):
        g = g * 1.01 * (1.0 - t * t) * f.a
    return g


def _plan(f, x, need_value=False):
    return _eager_grad.grad_plan(ft.make_jaxpr(f)(x).jaxpr, need_value)


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


INPUTS = {
    "f64": np.linspace(-1.0, 1.0, 8),
    "specials": np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.0, 3.0]),
    "f32": np.linspace(0.5, 2.0, 8).astype(np.float32),
}


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("transform", [ft.grad, ft.value_and_grad])
def test_every_call_gives_the_bits_of_the_first(transform, inputs):
    f, x = _loop(), INPUTS[inputs]
    g = transform(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        results = [g(x) for _ in range(12)]
    plan = _plan(f, x, transform is ft.value_and_grad)
    assert plan.forward.done and plan.backward.done  # every way of running was taken
    flat = [r if isinstance(r, tuple) else (r,) for r in results]
    for later in flat[1:]:
        assert all(_same_bits(a, b) for a, b in zip(flat[0], later))


def test_a_step_a_call(monkeypatch):
    """The first call builds nothing; the second the JVP program, the third
    splits it into the forward program and the linear one, the fourth
    transposes that into the backward one; then each call compiles at most
    ``part`` equations (at least one part) until both are compiled.  Before
    the plans were built in steps, the third call compiled both programs
    whole."""
    compiled_now = []
    make = codegen.Compiled.__init__

    def counting(self, closed, *args, **kwargs):
        compiled_now[-1] += len(closed.eqns)
        make(self, closed, *args, **kwargs)

    monkeypatch.setattr(codegen.Compiled, "__init__", counting)
    f, x = _loop(), INPUTS["f64"]
    g = ft.grad(f)
    steps = []
    for _ in range(12):
        compiled_now.append(0)
        g(x)
        plan = _plan(f, x)
        steps.append((plan.jvp is not None, plan.forward is not None,
                      plan.backward is not None))
    assert steps[:4] == [(False, False, False), (True, False, False), (False, True, False),
                         (False, True, True)]
    assert compiled_now[:4] == [0, 0, 0, 0]
    assert len(plan.forward.equations) > 1 and len(plan.backward.equations) > 1
    assert max(compiled_now) <= plan.part
    assert sum(compiled_now) == sum(plan.forward.equations) + sum(plan.backward.equations)
    assert plan.forward.done and plan.backward.done


def test_threads_meeting_a_program_at_once_get_the_bits_of_one_thread():
    f, x = _loop(), INPUTS["f64"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = ft.value_and_grad(f)
        got: list = []
        errors: list[BaseException] = []
        start = threading.Barrier(6)

        def work():
            try:
                start.wait()
                for _ in range(8):
                    got.append(g(x))
            except BaseException as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        alone = [ft.value_and_grad(f)(x) for _ in range(3)]
    assert not errors, errors
    assert len(got) == 48
    for v, gr in got + alone:
        assert _same_bits(v, alone[0][0]) and _same_bits(gr, alone[0][1])
    np.testing.assert_allclose(alone[0][1], _loop_grad(f, x), rtol=1e-12)
    assert _plan(f, x, True).backward is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_forked_while_a_step_is_taken_computes_without_waiting():
    """A plan whose lock another thread held at the fork stays locked in the
    child: the child's calls never wait for it, and give the parent's bits."""
    f, x = _loop(), INPUTS["f64"]
    g = ft.grad(f)
    want = [g(x) for _ in range(2)]
    plan = _plan(f, x)
    read, write = os.pipe()
    with plan.lock:  # as if another thread were taking a step
        pid = os.fork()
        if pid == 0:  # the child: report and leave at once, whatever happens
            try:
                got = [g(x) for _ in range(4)]
                ok = all(_same_bits(a, want[0]) for a in got) and plan.backward is None
                os.write(write, b"ok" if ok else b"differs")
            finally:
                os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as r:
        report = r.read()
    os.waitpid(pid, 0)
    assert report == b"ok"
    assert all(_same_bits(g(x), want[0]) for _ in range(6))


def test_debug_nans_is_checked_on_every_call_of_a_long_program():
    def f(x):
        h = x
        for _ in range(10):
            h = fnp.tanh(h * 0.9 + 0.1) * 1.01
        return fnp.sum(fnp.log(h)) + fnp.sum(fnp.log(x))

    g = ft.value_and_grad(f)
    x = np.linspace(0.5, 1.0, 8)
    config.update("debug_nans", True)
    try:
        results = [g(x) for _ in range(6)]
        for _ in range(3):
            with pytest.raises(FloatingPointError, match="debug_nans: the primitive 'log'"):
                g(-x)
    finally:
        config.update("debug_nans", False)
    results += [g(x) for _ in range(8)]
    for v, gr in results[1:]:
        assert _same_bits(v, results[0][0]) and _same_bits(gr, results[0][1])


UNARY = [fnp.sin, fnp.tanh, lambda x: x * 0.5, lambda x: -x, fnp.sum, lambda x: x.T,
         lambda x: x * x, fnp.cos]
BINARY = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: fnp.maximum(x, y),
          lambda x, y: fnp.where(x > y, x, y)]


@settings(max_examples=40, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 2, 12), st.integers(1, 5), st.data())
def test_a_program_in_parts_gives_the_bits_of_the_whole(program, size, data):
    """However it is cut and however many of its parts are compiled, and
    taking its arguments over or not."""
    def f(x, y):
        return run_dataflow(program, UNARY, BINARY, [x, y])

    x = np.array([[0.5, -0.0], [np.inf, np.nan]])
    y = np.array([[1.5, 0.0], [-1.0, 3.0]])
    closed = ft.make_jaxpr(f)(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = interpret(closed, [x, y])
        parts = Parts(closed, size)
        consuming = Parts(closed, size, consume=True,
                          writable=(False, data.draw(st.booleans())))
        for _ in range(len(parts.equations) + 1):
            got = parts.run([x, y])
            taken = [x, np.array(y)]
            got_consuming = consuming.run(taken)
            assert taken == []
            assert len(got) == len(want) == len(got_consuming)
            for w, a, b in zip(want, got, got_consuming):
                assert _same_bits(w, a) and _same_bits(w, b)
            parts.compile_next(data.draw(st.integers(0, 6)))
            consuming.compile_next(size)
    assert parts.done and consuming.done


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_backward_program_is_specialised_to_the_cotangent_one(dtype):
    """``sum(f(x))``'s backward program broadcasts no ones and multiplies by
    none (before: a broadcast of the cotangent and a product per use), and
    gives the bits of the first call, which multiplies by the ones."""
    def f(x):
        return fnp.sum(fnp.sin(x) * x + x ** 2)

    x = np.array([0.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e-300, 3.0], dtype)
    g = ft.grad(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        results = [g(x) for _ in range(4)]
    plan = _plan(f, x)
    names = [e.primitive.name for p in plan.backward._parts for e in p.eqns]
    assert names == ["add", "mul", "add"]
    assert all(_same_bits(results[0], r) for r in results[1:])


_W = np.linspace(0.5, 1.5, 8)


def _with_aux(x):
    h = x
    for _ in range(10):
        h = fnp.tanh(h * 0.9 + 0.1) * 1.01
    return fnp.sum(h * _W), {"n": fnp.argmax(h), "h": h[:3]}


def _two_arguments(x, y):
    for _ in range(10):
        x = fnp.sin(x) * y + 0.5
    return fnp.sum(x * y)


def _python_scalar(s):
    for _ in range(12):
        s = fnp.tanh(s * 1.1) + 0.25
    return s


def _gathers(x):
    idx = np.array([3, 1, 1, 7])
    h = x
    for _ in range(10):
        h = fnp.cos(h[idx].sum() + h) * 0.8
    return fnp.max(h) + fnp.sum(h[::2] ** 3)


_X, _Y = np.linspace(-1.0, 1.0, 8), np.linspace(0.2, 0.9, 8)
CALLS = {
    "aux, integer aux": (ft.value_and_grad(_with_aux, has_aux=True), (_X,)),
    "two arguments": (ft.grad(_two_arguments, argnums=(0, 1)), (_X, _Y)),
    "python scalar": (ft.value_and_grad(_python_scalar), (0.3,)),
    "gathers, constants": (ft.grad(_gathers), (_X,)),
}


@pytest.mark.parametrize("name", CALLS)
def test_aux_arguments_scalars_and_constants_over_the_building_calls(name):
    g, args = CALLS[name]
    results = [tree_leaves(g(*args)) for _ in range(14)]
    for later in results[1:]:
        assert len(later) == len(results[0])
        assert all(_same_bits(a, b) for a, b in zip(results[0], later))
    for a, b in zip(results[0], tree_leaves(ft.jit(g)(*args))):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_an_argument_a_part_takes_a_view_of_is_not_written_by_a_later_part():
    """``y.T`` taken in one part and read after ``sin(y)`` in a later one: the
    compiled later part must not write ``sin(y)`` into ``y``, which it could
    take for its own dead argument (before: the result read ``sin(y).T``)."""
    def f(x, y):
        t = y.T
        z = fnp.sin(y)
        return x + t, z

    x = np.array([[0.5, -0.0], [np.inf, np.nan]])
    y = np.array([[1.5, 0.0], [-1.0, 3.0]])
    closed = ft.make_jaxpr(f)(x, y)
    want = interpret(closed, [x, y])
    parts = Parts(closed, 1, consume=True, writable=(False, True))
    while not parts.done:
        parts.compile_next(1)
    got = parts.run([x, y.copy()])
    assert all(_same_bits(w, g) for w, g in zip(want, got))


@settings(max_examples=25, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 2, 14))
def test_random_programs_over_the_building_calls(program):
    """Eager grad of random programs with views among their steps, cut into
    parts of a few equations: every call gives the first call's bits."""
    def f(x, y):
        outs = run_dataflow(program, UNARY, BINARY, [x, y])
        return sum(fnp.sum(o * (1.0 + 0.25 * k)) for k, o in enumerate(outs))

    x = np.array([[0.5, -0.0], [2.0, -1.5]])
    y = np.array([[1.5, 0.0], [-1.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = ft.grad(f, argnums=(0, 1))
        grads = [g(x, y) for _ in range(10)]
    for later in grads[1:]:
        assert all(_same_bits(a, b) for a, b in zip(grads[0], later))
