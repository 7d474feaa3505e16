"""jit's automatic tiering: a program starts in the NumPy tier and moves to
the native tier on its own when the rule says it pays, compiled in the
background; the forced tiers, the rule's refusals, compile failures,
timeouts and budgets, threads, fork, Numba missing, and interpreter exit."""

import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from _bits import bits_equal
from functrans.primitives.linalg import dot_general_p

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax, tiering
from functrans.backends import native, threads
from functrans.core import bind

needs_numba = pytest.mark.skipif(not native.available(), reason="needs Numba")


def poly_loss(x):
    """Arithmetic only: the native tier computes it as NumPy does, bit for bit."""
    return fnp.sum(x * x * 1.5 + x - 0.5 * x * x * x)


def sin_loss(x):
    return fnp.sum(fnp.sin(x) * x + x * x)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.sum((h @ w2 + b2 - y) ** 2)


def _tier(f):
    (info,) = f.cache_info().tiers
    return info


def _run_until_native(f, args, reference, timeout=120.0):
    """Call ``f`` until its program runs natively, checking every result
    against ``reference`` bit for bit; the number of calls."""
    deadline = time.monotonic() + timeout
    assert bits_equal(f(*args), reference)
    calls = 1
    while _tier(f).tier != "native":
        assert bits_equal(f(*args), reference)
        calls += 1
        assert time.monotonic() < deadline, _tier(f)
        if calls % 50 == 0:
            tiering.wait(1.0)
    return calls


@pytest.fixture
def eager(monkeypatch):
    """Programs move at their first call (compiled in the background)."""
    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    yield
    tiering.wait(120.0)


@pytest.fixture
def queued(monkeypatch):
    """The programs the rule queues, recorded instead of compiled."""
    seen = []
    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(tiering, "_submit", seen.append)
    return seen


def _python(code: str, env=None, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=os.getcwd())


# -- the rule --------------------------------------------------------------------------


def test_a_small_program_stays_in_the_numpy_tier(queued, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "measured")
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 10)
    for _ in range(300):
        f(x)
    info = _tier(f)
    assert info.tier == "numpy" and "the rule watches its calls" in info.reason
    assert info.signature == "f64[10]"
    assert queued == []


def test_a_hot_program_is_queued_once_its_time_pays_the_compile(queued, monkeypatch):
    # The rule: time in the NumPy tier x estimated gain >= estimated compile time.
    monkeypatch.setattr(config, "jit_tier_up", "measured")
    monkeypatch.setattr(tiering, "_COMPILE_BASE", 2e-3)
    monkeypatch.setattr(tiering, "_COMPILE_PER_EQN", 0.0)
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 20_000)
    calls = 0
    while not queued:
        f(x)
        calls += 1
        assert calls < 10_000
    (tier,) = queued
    assert tier.seconds * tier.assessment.gain >= 2e-3
    assert calls >= tiering.MIN_CALLS
    assert "compiling for the native tier (hot:" in _tier(f).reason
    for _ in range(5):  # queued once; calls are no longer timed
        f(x)
    assert len(queued) == 1 and not tier.watching


def rnn_loss(w, h, xs):
    """A float product in a loop body that reads a transpose made in the
    body: a strided view in the NumPy tier, which BLAS reads with other
    arguments than the kernel's contiguous copy."""
    return fnp.sum(lax.scan(lambda h, x: (fnp.tanh((w * x).T @ h), None), h, xs)[0])


def test_programs_whose_native_results_could_differ_do_not_move(queued, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    args = (np.eye(4) * 0.5, np.full(4, 0.5), np.ones(50))
    f = ft.jit(rnn_loss)
    f(*args)
    assert _tier(f).reason == (
        "its native results could differ from the NumPy tier's in the last bits (float "
        "products in loop bodies); jit_tier_numerics='close' lets it move")
    assert queued == []
    monkeypatch.setattr(config, "jit_tier_numerics", "close")
    g = ft.jit(rnn_loss)
    g(*args)
    assert len(queued) == 1


def test_transcendental_functions_move_in_exact_numerics(queued, monkeypatch):
    # The exact lowering leaves them the NumPy tier's calls (scalars in loop
    # bodies: NumPy's own loop on one element), the arithmetic around fused.
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    f = ft.jit(ft.grad(sin_loss))
    f(np.linspace(-1, 1, 1000))
    (tier,) = queued
    assert tier.assessment.numerics == "exact" and tier.assessment.exact
    closed = tier.closed
    exact, close = tiering.assess(closed, "exact"), tiering.assess(closed, "close")
    # sin and cos save nothing in exact numerics: 4 of 6 equations fused
    assert exact.exact and exact.gain < close.gain and exact.compile_seconds < close.compile_seconds
    assert not close.exact and close.differs == "transcendental functions"
    body = ft.jit(lambda c, xs: lax.scan(lambda c, x: (c + fnp.sin(c * x), None), c, xs)[0])
    loop = body.lower(np.float64(1.0), np.ones(100)).jaxpr
    assert tiering.assess(loop, "exact").exact
    assert tiering.assess(loop, "close").differs == (
        "transcendental functions of scalars in loop bodies")


def test_large_transcendentals_pay_only_on_several_cores(queued, monkeypatch):
    # At n=1e6 NumPy's sin and cos are most of the time: on one core fusing
    # the arithmetic around them would not pay (measured: the same speed);
    # on several, NumPy's calls are made on chunks by all of them.
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(tiering, "have_numexpr", lambda: False)
    monkeypatch.setattr(threads, "_set", 1)  # (config.native_threads)
    f = ft.jit(ft.grad(sin_loss))
    f(np.linspace(-1, 1, 10**6))
    assert _tier(f).reason == (
        "native kernels would remove only 17% of its estimated time (its transcendental "
        "functions dominate, which native kernels compute with NumPy's own loops in exact "
        "numerics, as fast as its calls on one thread or under 2**18 elements; 30% needed)")
    assert queued == []
    monkeypatch.setattr(threads, "_set", 2)
    g = ft.jit(ft.grad(sin_loss))
    g(np.linspace(-1, 1, 10**6))
    (tier,) = queued
    assert tier.assessment.exact and tier.assessment.gain == pytest.approx(0.5, abs=0.01)


def test_numexpr_s_transcendental_functions_keep_exact_programs_in_the_numpy_tier(
        queued, monkeypatch):
    # With numexpr (the fast extra) the NumPy tier computes large float64
    # groups with numexpr's functions, not NumPy's.
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(tiering, "have_numexpr", lambda: True)

    def exp_loss(x):  # mostly arithmetic: it would move without numexpr
        return fnp.sum(fnp.exp(x * 0.1) + x * x * 1.5 + x - 0.5 * x * x * x)

    f = ft.jit(ft.grad(exp_loss))
    f(np.ones(1 << 18))
    assert _tier(f).reason == (
        "its native results could differ from the NumPy tier's in the last bits "
        "(transcendental functions numexpr computes in the NumPy tier); "
        "jit_tier_numerics='close' lets it move")
    assert queued == []
    f(np.ones(1000))  # a group too small for numexpr
    assert len(queued) == 1


def test_the_assessment_asks_for_numexpr_only_for_equations_numexpr_could_take(monkeypatch):
    # Asking the import system cost 40 us an equation: a sixth of the first
    # call of jit(grad) of a long loop on small arrays.
    asked = []
    monkeypatch.setattr(tiering, "have_numexpr", lambda: asked.append(1) or True)

    def loop(x):
        for _ in range(50):
            x = fnp.tanh(x * 0.9 + 0.1) * 1.01
        return fnp.sum(x)

    assert tiering.assess(ft.make_jaxpr(ft.grad(loop))(np.ones(16))).exact
    assert asked == []
    verdict = tiering.assess(ft.make_jaxpr(ft.grad(loop))(np.ones(1 << 18)))
    assert asked and not verdict.exact


def test_selections_count_as_native_and_exact():
    piecewise = ft.grad(lambda x: fnp.sum(fnp.where(x > 0, x * x, -0.5 * x)))
    closed = ft.jit(piecewise).lower(np.ones(1000)).jaxpr
    assert any(e.primitive.name == "select" for e in closed.jaxpr.eqns)
    verdict = tiering.assess(closed)
    assert verdict.exact and verdict.never is None
    args = (np.ones(1000, bool), np.ones(1000), np.zeros(1000))
    alone = ft.jit(lambda c, a, b: fnp.where(c, a, b)).lower(*args).jaxpr
    assert [e.primitive.name for e in alone.jaxpr.eqns] == ["select"]
    assert tiering.assess(alone).never is None and tiering.assess(alone).exact


def scan_rnn_loss(w, xs):
    def step(h, x):
        h = fnp.tanh(w @ h + x)
        return h, h

    return fnp.sum(lax.scan(step, fnp.zeros(xs.shape[1]), xs)[1])


def _body_products_exact(product, *operands) -> bool:
    """``assess``'s exactness of a scan whose body applies ``product`` (and
    has a native form)."""
    def f(*ops):
        return lax.scan(lambda c, _: (c, product(*(x * c for x in ops))), 1.0, None,
                        length=3)[1]

    verdict = tiering.assess(ft.jit(f).lower(*operands).jaxpr)
    assert verdict.gain > 0.5, verdict
    return verdict.exact


def test_float_products_in_loop_bodies_are_exact_where_numpy_s_is_one_matmul():
    m, v, w, s = np.ones((4, 3)), np.ones(3), np.ones(4), np.ones((2, 4, 3))

    def dot(contract, batch=((), ())):
        return lambda x, y: bind(dot_general_p, x, y, dimension_numbers=(contract, batch))

    assert _body_products_exact(lambda m, v: m @ v, m, v)
    assert _body_products_exact(dot(((0,), (1,))), v, m)  # NumPy: np.dot(v, m.T), a view
    assert _body_products_exact(dot(((0,), (0,))), m, m)  # m.T @ m: syrk in both
    assert _body_products_exact(lambda s, t: s @ t, s, np.ones((2, 3, 5)))  # a stack
    assert _body_products_exact(lambda v, w: fnp.outer(v, w) * 2.0, v, w)
    # a transpose made in the body is a strided view in the NumPy tier, so is a ufunc's result
    assert not _body_products_exact(lambda m, w: m.T @ w, m, w)
    assert not _body_products_exact(lambda m, w: fnp.tanh(m.T) @ w, m, w)
    # ... unless an operand of the ufunc is C-ordered with the result's shape: NumPy's
    # iterator then allocates the result in C order, contiguous
    assert _body_products_exact(lambda m, x, w: fnp.tanh(m.T + x) @ w, m, m.T, w)
    assert _body_products_exact(lambda m, x, w: fnp.tanh(x + m.T) @ w, m, m.T, w)
    assert not _body_products_exact(lambda m, w: (m.T + w) @ w, m, w)  # w broadcast
    assert not _body_products_exact(lambda m, w: (m.T + m.T) @ w, m, w)
    # one-element operands: np.dot scales the other one, keeping a -0.0 matmul sums to +0.0
    assert not _body_products_exact(lambda v, m: v @ m, np.ones(1), np.ones((1, 3)))
    # NumPy moves and merges axes, then calls matmul: the kernel too, on the same layout
    assert _body_products_exact(fnp.tensordot, s, m)
    assert _body_products_exact(dot(((1,), (1,)), ((0,), (0,))), m, m)  # rows . rows
    assert _body_products_exact(dot(((0,), (1,))), w, s)  # a reshape that copies
    assert not _body_products_exact(lambda s, m: fnp.tensordot(s, m.T), s, m.T)  # a view


def test_a_matrix_heavy_program_never_moves(queued, monkeypatch):
    # Per-example gradients of an MLP: the native tier is slower than the
    # NumPy tier there (the products stay BLAS calls, the kernels add work).
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(config, "jit_tier_numerics", "close")
    rng = np.random.default_rng(0)
    params = (rng.normal(size=(32, 64)), np.zeros(64), rng.normal(size=(64, 8)), np.zeros(8))
    per_example = ft.jit(ft.vmap(ft.grad(mlp_loss), in_axes=(None, 0, 0)))
    for _ in range(3):
        per_example(params, rng.normal(size=(128, 32)), rng.normal(size=(128, 8)))
    info = _tier(per_example)
    assert info.tier == "numpy"
    assert "matrix products and other NumPy calls dominate" in info.reason
    assert queued == []


def test_what_has_no_native_form_never_moves(queued, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    half = ft.jit(lambda x: x * x + x)  # float16: Numba has no float16 arithmetic
    half(np.ones(1000, np.float16))
    assert _tier(half).reason.startswith("nothing in it has a native form")

    def shifted(c, x):  # a concatenation in a loop body: the loop stays NumPy calls
        c = c[1:] * 0.5 + c[:-1] + x
        return fnp.concatenate([c, c[:1]]), None

    loop = ft.jit(lambda c, xs: lax.scan(shifted, c, xs)[0])
    loop(np.ones(8), np.ones((100, 7)))
    reason = _tier(loop).reason
    assert "a loop body holds concatenate" in reason and "slice" not in reason
    assert queued == []


def test_loops_the_native_lowering_refuses_are_not_watched(queued, monkeypatch):
    """The estimate asks the loop lowering (without loading Numba): a body
    form it does not build (an integer remainder, which Numba computes
    otherwise than NumPy; a float maximum or a transcendental function of
    two operands reading one broadcast, NumPy's loop on strides) leaves
    the loop to the NumPy tier from the start, saying what, instead of
    watching it and compiling for nothing."""
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(config, "jit_tier_numerics", "exact")
    counted = ft.jit(lambda n, xs: lax.scan(lambda c, x: (c % 7 + x, None), n, xs)[0])
    counted(np.int64(5), np.arange(100))
    assert "a loop body holds rem on i64[]" in _tier(counted).reason

    for name, fn in (("max", fnp.maximum), ("atan2", fnp.arctan2)):
        loop = ft.jit(lambda c, y, xs, fn=fn: lax.scan(
            lambda c, x: (fn(c, y) * 0.5 + x, None), c, xs)[0])
        loop(np.ones((2, 3)), np.ones((2, 1)), np.ones((50, 3)))
        reason = _tier(loop).reason
        assert f"a loop body holds {name} on f64[2,3], f64[2,1]" in reason, reason
    assert queued == []


def test_a_loop_lowering_that_fails_in_the_estimate_leaves_the_program_running(
        queued, monkeypatch):
    from functrans.backends.native import loops

    def broken(e, exact):
        raise NotImplementedError("no such form")

    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(loops, "refusal", broken)
    f = ft.jit(lambda h, xs: lax.scan(lambda c, x: (c * 0.5 + x, None), h, xs)[0])
    assert np.array_equal(f(np.ones(3), np.ones((4, 3))), np.full(3, 1.9375))
    assert "native lowering failed on (NotImplementedError: no such form)" in _tier(f).reason
    assert queued == []


def test_loops_indexing_rows_by_their_counter_move(eager):
    """Rows picked by the loop counter (a gather) and broadcasts in a
    gradient's loop body have native forms: the loop moves, with the NumPy
    tier's bits."""
    xs = np.linspace(-1.0, 1.0, 50 * 8).reshape(50, 8)
    w = np.linspace(-0.2, 0.2, 64).reshape(8, 8)

    def rnn(h, xs):
        return lax.fori_loop(0, 50, lambda i, h: fnp.tanh(h * 0.9 + xs[i]), h)

    def while_rnn_loss(w, xs):
        def step(c):
            i, h, total = c
            h = fnp.tanh(w @ h + fnp.take(xs, i, axis=0))
            return i + 1, h, total + fnp.sum(h)

        return lax.while_loop(lambda c: c[0] < len(xs), step, (0, np.zeros(8), 0.0))[2]

    for f, args in [(rnn, (np.zeros(8), xs)), (ft.grad(while_rnn_loss), (w, xs))]:
        jf = ft.jit(f)
        want = ft.jit(f, compiler="numpy")(*args)
        assert bits_equal(jf(*args), want)
        assert tiering.wait(120.0)
        assert _tier(jf).tier == "native", _tier(jf).reason
        assert bits_equal(jf(*args), want)


def test_a_compile_estimated_over_the_budget_is_never_started(queued, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(tiering, "PROGRAM_BUDGET", 0.1)
    f = ft.jit(ft.grad(poly_loss))
    f(np.ones(100))
    assert "exceeds the budget of 0.1 s per program" in _tier(f).reason
    assert queued == []


def test_forced_tiers_and_settings(queued, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    f = ft.jit(ft.grad(poly_loss), compiler="numpy")
    f(np.ones(100))
    assert _tier(f) == ("f64[100]", "numpy", "compiler='numpy'")
    monkeypatch.setattr(config, "jit_compiler", "numpy")  # FUNCTRANS_JIT_COMPILER=numpy
    g = ft.jit(ft.grad(poly_loss))
    g(np.ones(100))
    assert _tier(g).reason == "compiler='numpy'"
    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(config, "jit_tier_up", "never")
    h = ft.jit(ft.grad(poly_loss))
    h(np.ones(100))
    assert _tier(h).reason == "jit_tier_up='never'"
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    config.update("debug_nans", True)
    try:
        k = ft.jit(ft.grad(poly_loss))
        k(np.ones(100))
        assert _tier(k).reason == "debug_nans or debug_infs is on"
    finally:
        config.update("debug_nans", False)
    assert queued == []
    with pytest.raises(ValueError, match="jit_tier_up must be 'measured', 'eager' or 'never', "
                                         "got 'soon'"):
        config.update("jit_tier_up", "soon")
    with pytest.raises(ValueError, match="jit_tier_numerics must be 'exact' or 'close'"):
        config.update("jit_tier_numerics", "ulp")


def test_the_environment_variables_choose_the_tiers():
    code = "import functrans as ft; print(ft.config.jit_compiler, ft.config.jit_tier_up)"
    env = dict(os.environ, FUNCTRANS_JIT_COMPILER="numpy", FUNCTRANS_JIT_TIER_UP="never")
    assert _python(code, env).stdout.split() == ["numpy", "never"]
    env.pop("FUNCTRANS_JIT_COMPILER")
    env.pop("FUNCTRANS_JIT_TIER_UP")
    assert _python(code, env).stdout.split() == ["auto", "measured"]


def test_a_program_that_may_not_move_is_not_timed(queued):
    f = ft.jit(ft.grad(poly_loss), compiler="numpy")
    f(np.ones(10))
    (slot,) = f._order.values()
    assert not slot.entry.tier.watching


def test_budget_spent_leaves_programs_in_the_numpy_tier(eager, monkeypatch, caplog):
    monkeypatch.setattr(tiering, "_spent", tiering.TOTAL_BUDGET)
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 1000)
    with caplog.at_level(logging.DEBUG, logger="functrans.jit"):
        reference = f(x)
        assert tiering.wait(60.0)
    assert _tier(f).reason == "the native compile budget of this process (300 s) is spent"
    assert "stays in the NumPy tier: the native compile budget" in caplog.text
    assert bits_equal(f(x), reference)


# -- with Numba: the move itself -------------------------------------------------------


@needs_numba
def test_the_move_keeps_the_numpy_tiers_bits(eager):
    x = np.array([-0.0, 0.0, 5e-324, -1e-300, 1e150, -3.5, 0.25, 7.0, 1e-8] * 1000)
    reference = ft.jit(ft.grad(poly_loss), compiler="numpy")(x)
    f = ft.jit(ft.grad(poly_loss))
    _run_until_native(f, (x,), reference)
    info = _tier(f)
    assert info.reason.startswith("moved by the rule after") and "kernels)" in info.reason
    for _ in range(3):
        assert bits_equal(f(x), reference)
    assert f.cache_info().native_compile_time > 0
    y = np.linspace(-2, 2, 7)  # another signature starts in the NumPy tier again
    assert bits_equal(f(y), ft.jit(ft.grad(poly_loss), compiler="numpy")(y))


@needs_numba
def test_a_scan_rnn_gradient_moves_with_exact_numerics(eager):
    """Its products in the loop bodies are NumPy's matmul loop: the NumPy
    tier's bits, so it moves under the default numerics."""
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((16, 16)) * 0.3, rng.standard_normal((200, 16)))
    assert tiering.assess(ft.jit(ft.grad(scan_rnn_loss)).lower(*args).jaxpr).exact
    reference = ft.jit(ft.grad(scan_rnn_loss), compiler="numpy")(*args)
    f = ft.jit(ft.grad(scan_rnn_loss))
    _run_until_native(f, args, reference)
    for _ in range(3):
        assert bits_equal(f(*args), reference)


@needs_numba
def test_a_vmapped_scan_rnn_moves_with_exact_numerics(eager):
    """Its body's carry is ``tanh(transpose(w @ h) + x)``: NumPy allocates
    the sum in C order (``x`` is C-ordered), so the next step's product
    reads a contiguous carry, as the kernel's; the product is NumPy's
    matmul loop, and the program moves under the default numerics."""
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((3, 40, 4))
    xs[0, 5, 1], xs[1, 7, 2], xs[2, 9, 0] = np.nan, np.inf, -0.0
    args = (rng.standard_normal((4, 4)) * 0.5, xs)
    program = ft.vmap(scan_rnn_loss, (None, 0))
    reference = ft.jit(program, compiler="numpy")(*args)
    f = ft.jit(program)
    _run_until_native(f, args, reference)
    for _ in range(3):
        assert bits_equal(f(*args), reference)


@needs_numba
def test_a_close_program_moves_when_allowed(eager, monkeypatch):
    monkeypatch.setattr(config, "jit_tier_numerics", "close")
    x = np.linspace(-3, 3, 5000)
    reference = ft.jit(ft.grad(sin_loss), compiler="numpy")(x)
    f = ft.jit(ft.grad(sin_loss))
    f(x)
    deadline = time.monotonic() + 120
    while _tier(f).tier != "native":
        np.testing.assert_array_max_ulp(f(x), reference, maxulp=4)
        assert time.monotonic() < deadline
        tiering.wait(0.5)
    np.testing.assert_array_max_ulp(f(x), reference, maxulp=4)


@needs_numba
def test_the_move_under_threads(eager):
    x = np.linspace(-1, 1, 30_000)
    reference = ft.jit(ft.grad(poly_loss), compiler="numpy")(x)
    f = ft.jit(ft.grad(poly_loss))
    f(x)
    wrong, done = [], threading.Event()

    def caller():
        while not done.is_set():
            if not bits_equal(f(x), reference):
                wrong.append(1)

    threads = [threading.Thread(target=caller) for _ in range(6)]
    for t in threads:
        t.start()
    try:
        assert tiering.wait(120.0)
        time.sleep(0.2)  # the callers run on the native program a while
    finally:
        done.set()
        for t in threads:
            t.join()
    assert _tier(f).tier == "native" and not wrong
    assert f.cache_info().entries == 1


@needs_numba
def test_a_failed_compile_stays_in_the_numpy_tier_for_good(eager, monkeypatch, caplog):
    attempts = []

    def broken(closed, cache_dir="", budget=None, exact=False):
        attempts.append(1)
        raise RuntimeError("no kernel for you")

    monkeypatch.setattr(native, "lower", broken)
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 1000)
    with caplog.at_level(logging.DEBUG, logger="functrans.jit"):
        reference = f(x)
        assert tiering.wait(120.0)
    assert _tier(f) == ("f64[1000]", "numpy",
                        "its native compile failed (RuntimeError: no kernel for you)")
    assert "jit(grad_of_poly_loss): stays in the NumPy tier: its native compile failed" \
        in caplog.text
    for _ in range(20):
        assert bits_equal(f(x), reference)
    assert tiering.wait(10.0) and len(attempts) == 1


@needs_numba
def test_a_compile_over_its_budget_stays_in_the_numpy_tier(eager, monkeypatch):
    monkeypatch.setattr(tiering, "PROGRAM_BUDGET", 1e-9)
    monkeypatch.setattr(tiering, "_COMPILE_BASE", 0.0)
    monkeypatch.setattr(tiering, "_COMPILE_PER_EQN", 0.0)
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 1000)
    reference = f(x)
    assert tiering.wait(120.0)
    info = _tier(f)
    assert info.tier == "numpy"
    assert re.match(r"its native compile (ran over budget|took .* over the budget)", info.reason)
    assert bits_equal(f(x), reference)


def _held_compiles(monkeypatch):
    """Native compiles that wait for the returned event: (started, release)."""
    started, release = threading.Event(), threading.Event()
    lower = native.lower

    def held(closed, cache_dir="", budget=None, exact=False):
        started.set()
        assert release.wait(120.0)
        return lower(closed, cache_dir, budget=budget, exact=exact)

    monkeypatch.setattr(native, "lower", held)
    return started, release


@needs_numba
def test_a_program_cleared_from_the_cache_while_it_compiles_is_not_installed(
        eager, monkeypatch, caplog):
    started, release = _held_compiles(monkeypatch)
    f = ft.jit(ft.grad(poly_loss))
    x = np.linspace(-1, 1, 1000)
    reference = f(x)
    try:
        assert started.wait(120.0)
        f.clear_cache()
        with caplog.at_level(logging.DEBUG, logger="functrans.jit"):
            assert bits_equal(f(x), reference)  # traced again, and queued again
            release.set()
            assert tiering.wait(120.0)
    finally:
        release.set()
    assert ("jit(grad_of_poly_loss): stays in the NumPy tier: it left the cache while its "
            "native compile ran") in caplog.text
    info = f.cache_info()
    assert info.entries == 1 and info.tiers[0].tier == "native"  # the second program moved
    assert bits_equal(f(x), reference)


# -- processes ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["missing", "broken"])
def test_without_numba_programs_stay_in_the_numpy_tier(how, tmp_path):
    env = dict(os.environ)
    if how == "broken":  # an install whose import fails (a missing shared library)
        (tmp_path / "numba").mkdir()
        (tmp_path / "numba" / "__init__.py").write_text("raise OSError('no libllvmlite')\n")
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.getcwd()])
    out = _python(f"""
        import sys
        if {how == "missing"}:
            sys.modules["numba"] = None  # its import fails, as on a platform without wheels
        import numpy as np, functrans as ft, functrans.numpy as fnp
        from functrans import tiering
        ft.config.update("jit_tier_up", "eager")
        f = ft.jit(ft.grad(lambda x: fnp.sum(x * x * 1.5 + x)))
        x = np.linspace(-1, 1, 100)
        first = f(x)
        assert tiering.wait(60.0)
        assert np.array_equal(f(x), first) and np.allclose(first, 3.0 * x + 1.0)
        print(f.cache_info().tiers[0].reason)
    """, env)
    assert out.returncode == 0, out.stderr
    error = "ModuleNotFoundError" if how == "missing" else "OSError: no libllvmlite"
    assert out.stdout.startswith(f"Numba cannot be imported ({error}")


def test_the_ordinary_rule_starts_no_compiler_thread_for_small_programs():
    out = _python("""
        import sys, threading, numpy as np, functrans as ft, functrans.numpy as fnp
        f = ft.jit(ft.grad(lambda x: fnp.sum(fnp.sin(x) * x)))
        g = ft.jit(ft.grad(lambda x: fnp.sum(x * x * 1.5 + x)))
        for _ in range(500):
            f(np.ones(10)); g(np.ones(100))
        print("numba" in sys.modules,
              any(t.name == "functrans-native-compiler" for t in threading.enumerate()))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("changed", [False, True])
def test_the_compiler_thread_switches_threads_often_while_it_compiles(
        eager, monkeypatch, changed):
    # A caller looping over a small program holds the GIL: the compiler
    # thread, giving it up at each file read, waited the whole switch
    # interval for it back (Numba's import took over 20 s behind such a loop).
    seen = []

    def compile_(tier):
        seen.append(sys.getswitchinterval())
        if changed:  # the program's own change meanwhile is left alone
            sys.setswitchinterval(0.002)
        tier.stay("recorded")

    monkeypatch.setattr(tiering, "_compile", compile_)
    before = sys.getswitchinterval()
    try:
        f = ft.jit(ft.grad(poly_loss))
        f(np.linspace(-1, 1, 1000))
        assert tiering.wait(60.0)
        assert seen == [pytest.approx(tiering.SWITCH_INTERVAL)]
        assert _tier(f).reason == "recorded"
        assert sys.getswitchinterval() == (pytest.approx(0.002) if changed else before)
    finally:
        sys.setswitchinterval(before)


@needs_numba
def test_exit_is_prompt_with_a_compile_in_flight():
    start = time.monotonic()
    out = _python("""
        import numpy as np, functrans as ft, functrans.numpy as fnp
        from functrans import tiering
        ft.config.update("jit_tier_up", "eager")
        f = ft.jit(ft.grad(lambda x: fnp.sum(x * x * 1.5 + x - x * x * x)))
        f(np.ones(1000))
        print(tiering._running is not None or len(tiering._queue) == 1)
    """, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
    assert time.monotonic() - start < 30


@needs_numba
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_works_and_moves_on_its_own():
    out = _python("""
        import os, warnings, numpy as np, functrans as ft, functrans.numpy as fnp
        from functrans import tiering
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        loss = lambda x: fnp.sum(x * x * 1.5 + x - x * x * x)
        x = np.linspace(-1, 1, 1000)
        want = ft.jit(ft.grad(loss), compiler="numpy")(x)

        # 1. A compile in flight at the fork: the child stays in the NumPy tier.
        ft.config.update("jit_tier_up", "eager")
        f = ft.jit(ft.grad(loss))
        f(x)
        while tiering._running is None and tiering._queue:
            pass
        pid = os.fork()
        if pid == 0:
            ok = all(np.array_equal(f(x), want) for _ in range(20))
            g = ft.jit(ft.grad(lambda x: fnp.sum(x * x + x)))
            ok &= np.allclose(g(x), 2 * x + 1)
            ok &= tiering.wait(30.0) and g.cache_info().tiers[0].tier == "numpy"
            ok &= "forked while a native compile was running" in g.cache_info().tiers[0].reason
            os._exit(0 if ok else 1)
        assert os.waitpid(pid, 0)[1] == 0, "child 1"
        assert tiering.wait(120.0) and f.cache_info().tiers[0].tier == "native"

        # 2. Nothing in flight: the child starts its own compiler thread.
        ft.config.update("jit_tier_up", "measured")
        h = ft.jit(ft.grad(lambda x: fnp.sum(x * x * 2.5 - x)))
        h(x)
        pid = os.fork()
        if pid == 0:
            h.cache_info()
            (slot,) = h._order.values()
            slot.entry.tier.queue()
            ok = tiering.wait(120.0) and h.cache_info().tiers[0].tier == "native"
            ok &= np.allclose(h(x), 5.0 * x - 1.0)
            os._exit(0 if ok else 1)
        assert os.waitpid(pid, 0)[1] == 0, "child 2"
        print("ok")
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_estimate_splits_where_the_native_tier_splits():
    # tiering keeps its own copy of the size (importing it would load the
    # native backend with functrans): the two must agree.
    from functrans.backends.native import elementwise

    assert tiering.SPLIT_ELEMENTS == elementwise.SPLIT_ELEMENTS


@needs_numba
def test_the_estimate_counts_the_threads_the_native_tier_runs():
    # The gain of a split call is counted for the native tier's thread
    # count: FUNCTRANS_NATIVE_THREADS where set, else the cores this process
    # may use (its affinity), read without importing Numba.
    code = ("import os, sys\n"
            "from functrans import config, tiering\n"
            "from functrans.backends import threads\n"
            "print(config.native_threads, threads.count(), 'numba' in sys.modules)\n"
            "from functrans.backends.native import elementwise\n"
            "print(elementwise._threads())\n"
            "if hasattr(os, 'sched_setaffinity'):\n"
            "    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "config.update('native_threads', 0)\n"
            "print(elementwise._threads() == (1 if hasattr(os, 'sched_setaffinity') "
            "else os.cpu_count()))\n")
    env = {**os.environ, "FUNCTRANS_NATIVE_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["3", "3", "False", "3", "True"]


def test_a_bad_thread_count_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="native_threads must be a non-negative integer"):
        config.update("native_threads", -1)
    with pytest.raises(ValueError, match="native_threads must be a non-negative integer"):
        config.update("native_threads", True)
    env = {**os.environ, "FUNCTRANS_NATIVE_THREADS": "four"}
    run = subprocess.run([sys.executable, "-c", "import functrans"], env=env,
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert ("native_threads must be a non-negative integer (0: the cores this process may "
            "use), got the string 'four' (in the environment variable "
            "FUNCTRANS_NATIVE_THREADS)") in run.stderr


# -- the trial after a move ------------------------------------------------------------


def _trial(numpy_seconds: float, native_seconds: float, exact: bool = True, undone=True):
    """A tier moved after 100 NumPy-tier calls of ``numpy_seconds`` each,
    then timed for its trial at ``native_seconds`` a call; its undo calls."""
    undos = []
    tier = tiering.Tier("numpy", "", tiering.Assessment(0.5, 0.4, exact, None))
    tier.calls, tier.seconds = 100, 100 * numpy_seconds
    tier.moved(2, lambda: undos.append(1) or undone)
    for _ in range(tiering._TRIAL_SKIP + tiering.TRIAL_CALLS + 10):
        tier.timed(native_seconds)
    return tier, undos


def test_a_moved_program_says_it_is_on_trial_until_the_verdict():
    tier = tiering.Tier("numpy", "", tiering.Assessment(0.5, 0.4, True, None))
    tier.calls, tier.seconds = 100, 100 * 3e-6
    tier.moved(2, lambda: True)
    assert tier.reason == "moved by the rule after 100 calls and 0.3 ms in the NumPy tier " \
        "(2 kernels); on trial"
    for _ in range(tiering._TRIAL_SKIP + tiering.TRIAL_CALLS - 1):
        tier.timed(2e-6)
        assert tier.reason.endswith("; on trial")
    tier.timed(2e-6)
    assert tier.reason == "moved by the rule after 100 calls and 0.3 ms in the NumPy tier " \
        "(2 kernels); 2.0 us a native call against 3.0 us in the NumPy tier"
    # No trial where the results could differ: no such words.
    tier = tiering.Tier("numpy", "", tiering.Assessment(0.5, 0.4, False, None))
    tier.calls, tier.seconds = 100, 1e-4
    tier.moved(1, lambda: True)
    assert tier.reason.endswith("(1 kernels)")


def test_a_move_that_made_the_calls_slower_is_undone():
    tier, undos = _trial(2e-6, 3e-6)
    assert undos == [1] and tier.name == "numpy" and tier.undo is None
    assert tier.reason == ("moved back after 64 native calls: 3.0 us a native call against "
                           "2.0 us in the NumPy tier")
    tier, undos = _trial(3e-6, 2e-6)  # faster: kept, and the figures said
    assert undos == [] and tier.name == "native" and tier.undo is None
    assert tier.reason.endswith("kernels); 2.0 us a native call against 3.0 us in the NumPy tier")
    # Results that could differ from the NumPy tier's are never switched back and forth.
    tier, undos = _trial(2e-6, 3e-6, exact=False)
    assert undos == [] and tier.name == "native"
    # A program that left the cache meanwhile stays where it is.
    tier, undos = _trial(2e-6, 3e-6, undone=False)
    assert undos == [1] and tier.name == "native"


@needs_numba
def test_the_trial_moves_a_program_back_with_the_numpy_tiers_bits(monkeypatch):
    # The NumPy tier's calls made to look a thousand times faster than they
    # were: the native calls of the trial are slower, and the program moves
    # back; made to look slower, it stays.
    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(config, "jit_tier_up", "measured")
    x = np.linspace(-1.0, 1.0, 1000)
    reference = ft.jit(ft.grad(poly_loss), compiler="numpy")(x)
    for factor, where in ((1e-3, "numpy"), (1e3, "native")):
        f = ft.jit(ft.grad(poly_loss))
        assert bits_equal(f(x), reference)
        tier = list(f._order.values())[0].entry.tier
        assert tier.watching
        tier.calls, tier.seconds = 100, 100 * factor * 1e-5
        tier.queue()
        assert tiering.wait(120.0)
        for _ in range(tiering._TRIAL_SKIP + tiering.TRIAL_CALLS + 5):
            assert bits_equal(f(x), reference)
        info = _tier(f)
        assert info.tier == where, info
        assert ("moved back after 64 native calls" in info.reason) == (where == "numpy")
