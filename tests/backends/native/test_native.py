"""jit's native tier (``compiler="native"``): choosing it, its errors, the
graph split between native kernels and NumPy calls, compilation per dtype
and rank, the on-disk cache, and results equal to the NumPy tier's."""

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
from _bits import bits_equal
from _bits import bytes_equal as _same

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax
from functrans.backends import native
from functrans.jit import JitCacheMiss

needs_numba = pytest.mark.skipif(not native.available(), reason="needs Numba")



def _close(a, b) -> bool:
    """Equal up to the last bits of transcendental functions, where Numba
    calls the C library and NumPy may use its own vectorised code (see
    tests/backends/native/test_numerics.py); NaN, inf and zeros where NumPy has them."""
    a, b = np.asarray(a), np.asarray(b)
    rtol = 8 * np.finfo(a.dtype).eps if a.dtype.kind == "f" else 0
    np.testing.assert_allclose(b, a, rtol=rtol, atol=0)
    return a.dtype == b.dtype and bool(np.all(np.signbit(a[a == 0]) == np.signbit(b[a == 0])))


def _both(f, *args):
    """``f`` jitted by both tiers, called on ``args``."""
    return ft.jit(f, compiler="numpy")(*args), ft.jit(f, compiler="native")(*args)


def _kernel(src: str):
    return native.cache._kernels[(src, config.native_cache_dir)]


# -- choosing the tier ---------------------------------------------------------


def test_the_default_compiler_is_auto():
    assert config.jit_compiler == "auto" or os.environ.get("FUNCTRANS_JIT_COMPILER")
    lowered = ft.jit(lambda x: np.sin(x) * x + 1.0, compiler="numpy").lower(np.ones(3))
    assert lowered.native_sources == []


def test_compiler_is_checked():
    def loss(x):
        return x

    with pytest.raises(ValueError, match=r"jit\(loss\): compiler must be 'auto', 'numpy' or "
                                         r"'native', got 'numba'"):
        ft.jit(loss, compiler="numba")


def test_config_checks_the_compiler():
    with pytest.raises(ValueError, match="jit_compiler must be 'auto', 'numpy' or 'native', "
                                         "got 'c'"):
        config.update("jit_compiler", "c")
    with pytest.raises(ValueError, match="native_cache_dir must be a folder path"):
        config.update("native_cache_dir", 3)


def test_without_numba_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setattr(native, "available", lambda: False)

    def model(x):
        return x

    with pytest.raises(native.NativeUnavailableError,
                       match=r"jit\(model\): compiler='native' needs Numba.*pip install "
                             r"'functrans\[native\]'.*compiler='numpy'"):
        ft.jit(model, compiler="native")


def test_the_environment_variable_sets_the_default():
    code = "import functrans as ft; print(ft.config.jit_compiler)"
    env = dict(os.environ, FUNCTRANS_JIT_COMPILER="native")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "native"
    env["FUNCTRANS_JIT_COMPILER"] = "fast"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "FUNCTRANS_JIT_COMPILER" in bad.stderr


def test_the_default_tier_does_not_import_numba():
    code = textwrap.dedent("""
        import sys, numpy as np, functrans as ft
        ft.jit(lambda x: np.sin(x) * x + 1.0)(np.ones(3))
        ft.jit(ft.grad(lambda x: (x * x).sum()))(np.ones(3))
        # (a loop's estimate asks the native lowering, which loads no Numba)
        ft.jit(lambda h, xs: ft.lax.scan(lambda c, x: (np.tanh(c * 0.5 + x), c % 3.0), h,
                                         xs))(np.ones(3), np.ones((4, 3)))
        assert "functrans.backends.native.loops" in sys.modules
        print("numba" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@needs_numba
def test_config_update_makes_native_the_default(monkeypatch):
    monkeypatch.setattr(config, "jit_compiler", "native")
    lowered = ft.jit(lambda x: np.sin(x) * x + 1.0).lower(np.ones(3))
    assert len(lowered.native_sources) == 1


# -- what runs natively, and the graph split -------------------------------------


@needs_numba
def test_an_elementwise_chain_is_one_kernel():
    def f(x, y):
        return np.sin(x) * y + x ** 2 - 1.5

    x, y = np.linspace(-3, 3, 11), np.linspace(0, 1, 11)
    lowered = ft.jit(f, compiler="native").lower(x, y)
    assert len(lowered.native_sources) == 1
    assert "np.sin(" in lowered.native_sources[0]
    assert _close(*_both(f, x, y))


@needs_numba
def test_reductions_and_unsupported_operations_stay_numpy():
    """A graph split: the kernels compute the elementwise groups, NumPy the
    reduction, the float maximum (whose zeros Numba orders otherwise) and
    the complex arithmetic in between."""

    def f(x):
        a = np.exp(x) * x + 1.0
        s = fnp.sum(a * a, axis=0)
        m = fnp.maximum(s, -0.0) * 2.0 + 1.0
        c = (fnp.asarray(x, np.complex128) * 1j).real
        return m, np.cos(c) * c - c

    x = np.array([[0.0, -0.0, np.inf], [-np.inf, np.nan, 2.0]])
    lowered = ft.jit(f, compiler="native").lower(x)
    assert len(lowered.native_sources) >= 2
    assert "maximum" not in "".join(lowered.native_sources)
    with np.errstate(all="ignore"):
        for want, got in zip(*_both(f, x)):
            assert _close(want, got)


@needs_numba
def test_ieee_special_values_come_out_as_numpy_gives_them():
    def f(x, y):
        return (x * y + x) / (y - x), np.sqrt(x * -1.0) + 0.0 * x, (x < y) & (x == x)

    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, 1e308])
    x, y = (t.ravel().copy() for t in np.meshgrid(v, v))
    with np.errstate(all="ignore"):
        for want, got in zip(*_both(f, x, y)):
            assert bits_equal(want, got)


@needs_numba
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint64])
def test_integer_semantics_are_numpy_s(dtype):
    """Wrapping overflow, unsigned division by zero (0), shifts and the
    promotion of weak Python numbers, as NumPy."""
    info = np.iinfo(dtype)

    def f(x, y):
        return (x * y + x - 3) // y, (x ^ y) | (x & 5), x * 2 + y

    x = np.array([0, 1, 7, info.max, info.min, info.max - 1], dtype)
    y = np.array([1, 2, 0 if info.min == 0 else -1, info.max, 3, 1], dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for want, got in zip(*_both(f, x, y)):
            assert bits_equal(want, got)


@needs_numba
@pytest.mark.parametrize("dtype, value", [(np.uint8, -1), (np.int8, 300), (np.uint64, -5)])
def test_python_ints_out_of_range_raise_as_in_numpy(dtype, value):
    """NumPy refuses a Python int its integer operand's dtype cannot hold; a
    native kernel would wrap it silently, so those equations stay NumPy's."""
    x = np.ones(3, dtype)
    for compiler in ("numpy", "native"):
        with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds"):
            ft.jit(lambda x: (x + value) * 2 + 1, compiler=compiler)(x)
        with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds"):
            ft.jit(lambda x, s: (x + s) * 2 + 1, compiler=compiler)(x, value)


@needs_numba
def test_weak_python_numbers_keep_float32():
    def f(x, s):
        return x * 2.5 + s * x - 1

    x = np.linspace(-1, 1, 7, dtype=np.float32)
    want, got = _both(f, x, 0.1)
    assert got.dtype == np.float32 and bits_equal(want, got)


@needs_numba
def test_bool_and_mixed_dtypes():
    def f(x, i, b):
        return (x * i + i) * b, (b | (x > 0)) & ~b, i * i - 3

    x = np.linspace(-2, 2, 6, dtype=np.float32)
    i = np.arange(6, dtype=np.int16)
    b = np.array([True, False] * 3)
    for want, got in zip(*_both(f, x, i, b)):
        assert bits_equal(want, got)


@needs_numba
@pytest.mark.parametrize("shapes", [[(3, 4), (4,)], [(3, 1), (1, 4)], [(2, 3, 4), ()],
                                    [(0,), (0,)], [(3, 0), (0,)], [(), ()]])
def test_broadcasting_scalars_and_empty_arrays(shapes):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(s) for s in shapes)

    def f(x, y):
        return np.abs(x) * y + x * 3.0 - y

    want, got = _both(f, x, y)
    assert got.shape == want.shape and bits_equal(want, got)
    assert isinstance(got, np.ndarray)


@needs_numba
def test_non_contiguous_and_read_only_inputs():
    def f(x, y):
        return x * y + np.abs(x) - 2.0

    base = np.arange(24.0).reshape(4, 6)
    x, y = base.T, base[::2, ::3].repeat(2, axis=0).repeat(3, axis=1).T.copy()
    y.flags.writeable = False
    want, got = _both(f, x, y)
    assert bits_equal(want, got)


@needs_numba
def test_results_are_new_arrays():
    f = ft.jit(lambda x: (x * 2.0 + 1.0, x * 2.0 + 1.0), compiler="native")
    x = np.ones(5)
    a, b = f(x)
    assert not np.shares_memory(a, b) and not np.shares_memory(a, x)
    np.testing.assert_array_equal(a, 3.0)


@needs_numba
def test_large_outputs_are_reused_only_when_nothing_holds_them():
    """A kernel writes into the arrays of its previous call only when no one
    else holds them: a result the caller kept is never overwritten."""
    f = ft.jit(lambda x: (np.abs(x) * 2.0 + 1.0, x * x - 3.0), compiler="native")
    x = np.arange(40_000.0)
    first = f(x)
    kept = [a.copy() for a in first]
    second = f(x + 1.0)
    for a, b in zip(first, second):
        assert not np.shares_memory(a, b)
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)
    view = second[0][::2]  # a view holds its base: still in use
    del second
    third = f(x + 2.0)
    assert not np.shares_memory(third[0], view)
    np.testing.assert_array_equal(view, (np.abs(x + 1.0) * 2.0 + 1.0)[::2])


@needs_numba
def test_gradients_and_transforms_of_a_native_function():
    """A native program composes: under grad and vmap its optimised Jaxpr
    (not the kernels) is what the transform sees."""

    def f(x):
        return fnp.sum(np.sin(x) * x + x ** 2)

    x = np.linspace(-2, 2, 9)
    g_native = ft.jit(ft.grad(f), compiler="native")
    assert _close(ft.jit(ft.grad(f))(x), g_native(x))
    jf = ft.jit(lambda x: np.sin(x) * x + x * x, compiler="native")
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(jf(x)))(x), ft.grad(f)(x))
    np.testing.assert_allclose(ft.vmap(jf)(x.reshape(3, 3)), jf(x).reshape(3, 3))


# -- scan loops ----------------------------------------------------------------------------


def _rnn_loss(w, xs):
    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, h

    return fnp.sum(lax.scan(step, np.zeros(w.shape[0]), xs)[1])


@needs_numba
def test_a_scan_and_its_reverse_sweep_are_native_loops():
    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((4, 4)) / 2, rng.standard_normal((30, 4))
    g = ft.jit(ft.grad(_rnn_loss), compiler="native")
    loops = [src for src in g.lower(w, xs).native_sources if "for step in range(length)" in src]
    assert len(loops) == 2  # the forward scan and the transposed one
    np.testing.assert_allclose(g(w, xs), ft.jit(ft.grad(_rnn_loss))(w, xs), rtol=1e-13)
    np.testing.assert_allclose(g(w.T, xs), ft.grad(_rnn_loss)(w.T, xs), rtol=1e-13)


@needs_numba
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_scan_carries_scalars_swaps_and_literals(reverse, n):
    def f(a, xs):
        def step(c, x):
            s, t, k = c
            return (t, s * x + 1.0, k + 1), (s - x, 2.0, k)

        return lax.scan(step, (a, a * 2.0, 0), xs, reverse=reverse)

    xs = np.linspace(-1.0, 1.0, n)
    want = ft.jit(f)(1.5, xs)
    got = ft.jit(f, compiler="native")(1.5, xs)
    assert any("for step" in s for s in ft.jit(f, compiler="native").lower(1.5, xs)
               .native_sources)
    for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        assert type(b) is np.ndarray and bits_equal(a, b)


@needs_numba
def test_a_scan_body_without_a_native_form_stays_numpy():
    def f(xs):
        def step(c, x):
            return c + fnp.sum(fnp.sort(x)), c

        return lax.scan(step, 0.0, xs)

    xs = np.arange(12.0).reshape(4, 3)[:, ::-1]
    lowered = ft.jit(f, compiler="native").lower(xs)
    assert not any("for step" in s for s in lowered.native_sources)
    for a, b in zip(ft.jit(f)(xs), ft.jit(f, compiler="native")(xs)):
        assert bits_equal(a, b)


# -- compiled per dtype and rank, never per shape ----------------------------------


@needs_numba
def test_one_compilation_per_rank_whatever_the_shapes():
    def f(x, y):
        return np.exp(x) * y - x / 3.0

    jf = ft.jit(f, compiler="native")
    sources = set()
    for n in (1, 3, 17, 250):
        x, y = np.linspace(0, 1, n), np.linspace(1, 2, n)
        assert _close(ft.jit(f)(x, y), jf(x, y))
        sources.update(jf.lower(x, y).native_sources)
    assert len(sources) == 1
    assert len(_kernel(sources.pop()).overloads) == 1
    assert jf.cache_info().misses == 4  # jit's own programs are still per shape
    matrix = np.ones((4, 5))
    jf(matrix, matrix)
    jf(np.ones((2, 7)), np.ones((2, 7)))
    assert len(set(jf.lower(matrix, matrix).native_sources) - sources) == 1


@needs_numba
def test_cache_info_and_explain_report_compile_time():
    jf = ft.jit(lambda x: np.cos(x) * x + 4.0, compiler="native", explain_cache_misses=True)
    with pytest.warns(JitCacheMiss, match=r"compiled in [0-9.]+ ms, [0-9.]+ ms of it "
                                             "native kernels"):
        jf(np.ones(3))
    info = jf.cache_info()
    assert info.compile_time >= info.native_compile_time > 0
    jf.clear_cache()
    assert jf.cache_info().compile_time == 0


def test_cache_info_reports_compile_time_for_the_numpy_tier():
    jf = ft.jit(lambda x: np.cos(x) * x + 4.0)
    jf(np.ones(3))
    assert jf.cache_info().compile_time > 0 and jf.cache_info().native_compile_time == 0


# -- the on-disk cache ------------------------------------------------------------------


_PROGRAM = textwrap.dedent("""
    import numpy as np, functrans as ft
    from functrans.backends import native
    f = ft.jit(lambda x: np.arcsinh(x) * x - 0.25 * x, compiler="native")
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(f(x), np.arcsinh(x) * x - 0.25 * x, rtol=1e-15)
    (source,) = f.lower(x).native_sources
    kernel = native.cache._kernels[(source, ft.config.native_cache_dir)]
    print(sum(kernel.stats.cache_hits.values()))
""")


@needs_numba
def test_a_new_process_loads_kernels_from_the_disk_cache(tmp_path):
    env = dict(os.environ, FUNCTRANS_NATIVE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    assert [int(r) for r in runs] == [0, 1]  # Numba's cache hits: compiled, then loaded
    assert [p.name.startswith("ftk_") for p in tmp_path.glob("*.py")] == [True]
    assert list((tmp_path / "__pycache__").glob("*.nbi"))


@needs_numba
def test_the_disk_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "native_cache_dir", "")
    jf = ft.jit(lambda x: np.arctan(x) * x - 0.125, compiler="native")
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(jf(x), np.arctan(x) * x - 0.125, rtol=1e-15)
    assert not list(tmp_path.iterdir())


@needs_numba
def test_an_unwritable_cache_folder_warns_and_still_runs(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(config, "native_cache_dir", str(blocker / "native"))
    jf = ft.jit(lambda x: np.arccos(x) * x - 0.375, compiler="native")
    x = np.linspace(-1, 1, 5)
    with pytest.warns(RuntimeWarning, match="not cached on disk.*native_cache_dir"):
        got = jf(x)
    np.testing.assert_allclose(got, np.arccos(x) * x - 0.375, rtol=1e-15)


# -- threads ----------------------------------------------------------------------------


@needs_numba
def test_concurrent_first_calls():
    def f(x):
        return np.log1p(x * x) * x + 0.5

    jf = ft.jit(f, compiler="native")
    xs = [np.linspace(0, k + 1, 10 + k) for k in range(6)]
    results: dict = {}

    def work(k):
        results[k] = jf(xs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, x in enumerate(xs):
        assert _close(ft.jit(f)(x), results[k])


@needs_numba
def test_a_program_numba_cannot_compile_runs_on_the_numpy_tier_with_a_debug_line(
        monkeypatch, caplog):
    # Numba has no float16 arithmetic: compiling it raises a bare
    # NotImplementedError('float16'). A kernel that meets it leaves the
    # program to the NumPy tier, which gives the same numbers.
    import numba

    def float16_kernel(group, name, cache_dir):
        numba.njit(lambda a: a[0] * a[1])(np.ones(2, np.float16))

    monkeypatch.setattr(native, "group_call", float16_kernel)
    x = np.linspace(-1.0, 1.0, 7, dtype=np.float32)
    f = ft.jit(lambda v: fnp.sin(v) * 2.0 + fnp.exp(v), compiler="native")
    with caplog.at_level("DEBUG", logger="functrans.jit"):
        got = f(x)
    np.testing.assert_array_equal(got, ft.jit(lambda v: fnp.sin(v) * 2.0 + fnp.exp(v))(x))
    assert f.lower(x).native_sources == []
    assert any("jit(<lambda>): the native tier cannot compile this program (Numba's "
               "NotImplementedError: float16); the NumPy tier runs it" in r.getMessage()
               for r in caplog.records)


@needs_numba
def test_functrans_own_not_implemented_errors_are_not_taken_for_numba_limits(monkeypatch):
    from functrans.errors import MissingRuleError

    def missing(group, name, cache_dir):
        raise MissingRuleError("primitive 'p' has no native rule")

    monkeypatch.setattr(native, "group_call", missing)
    with pytest.raises(MissingRuleError):
        ft.jit(lambda v: fnp.sin(v) * 2.0 + fnp.exp(v), compiler="native")(np.ones(3))


# -- the native tier ---------------------------------------------------------------

def _tiers(f, *args):
    pytest.importorskip("numba")
    return ft.jit(f)(*args), ft.jit(f, compiler="native")(*args)


_RNG = np.random.default_rng(3)
_LAYOUTS = {
    "empty": np.zeros((3, 0)),
    "size_one_axes": np.ones((1, 5, 1)),
    "fortran_1d_rows": np.asfortranarray(_RNG.standard_normal((1, 5))),
    "negative_stride": _RNG.standard_normal(20)[::-3],
    "strided_2d": _RNG.standard_normal((6, 8))[::2, 1::3],
    "special": np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5]),
}


@pytest.mark.native
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_native_matches_numpy_tier_on_layouts(layout):
    x = _LAYOUTS[layout]

    def f(x):
        return (x * 1.5 + x * x - fnp.abs(x), fnp.sum(x * 2.0 + 1.0),
                fnp.sum(x * 2.0, axis=0, keepdims=True), fnp.sum(x * x + 1, axis=-1),
                fnp.max(x * 1.0, axis=None, initial=-np.inf))

    for a, b in zip(*_tiers(f, x)):
        assert _same(a, b)


@pytest.mark.native
@pytest.mark.xfail(strict=True, reason=(
    "a native kernel writes its result in C order where the NumPy tier's ufuncs "
    "follow the operands' layout (F order here), so a float sum over several axes "
    "after it, a NumPy call that sums in memory order, adds the terms in another order"))
@pytest.mark.parametrize("layout", ["fortran", "transposed_3d"])
def test_native_sum_after_a_kernel_of_non_c_operands(layout):
    # Memory order (1e16, -1e16, 1, 1, 0, ...) sums x * 3 - x to 4, C order to 2.
    base = np.zeros(12)
    base[:4] = [1e16, -1e16, 1.0, 1.0]
    x = (np.asfortranarray(base[:4].reshape(2, 2).T) if layout == "fortran"
         else base.reshape(3, 2, 2).transpose(2, 1, 0))
    a, b = _tiers(lambda x: fnp.sum(x * 3.0 - x), x)
    assert a == 4.0
    assert _same(a, b)


@pytest.mark.native
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int64])
def test_native_integers_wrap_as_numpy(dtype):
    x = np.arange(-128, 128).astype(dtype)

    def f(x):
        return (x * x + x * 3 - 7, fnp.sum(x * x + 1), fnp.max(x * 3), fnp.min(x + 100),
                fnp.prod(x[:20] + 1), fnp.argmax(x * 0 + 5), fnp.argmin(x // 64))

    for a, b in zip(*_tiers(f, x)):
        assert _same(a, b)


@pytest.mark.native
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("n", [2**18 - 1, 2**18 + 1])
def test_native_around_the_threading_threshold(n):
    x = np.random.default_rng(4).standard_normal(n)
    x[::1000] = np.nan

    def f(x):
        return (x * 1.5 - 0.0, fnp.sum(x * x), fnp.argmax(x * 2),
                fnp.sum(x.astype(np.float32) * 1.5),
                fnp.sum((x * 100).astype(np.int8) * np.int8(3)))

    for a, b in zip(*_tiers(f, x)):
        assert _same(a, b)


@pytest.mark.native
def test_native_ties_signed_zeros_and_bools():
    def f(x, b):
        return (fnp.argmax(x * 1.0), fnp.argmin(x * 1.0), fnp.max(x * 0.0), fnp.min(x * -0.0),
                b & ~b[::-1], fnp.sum(b), fnp.all(b | True), fnp.where(b, x, -x) * 2)

    x = np.array([1.0, np.nan, 3.0, np.nan, -1.0, -0.0, 0.0, 3.0])
    b = np.array([True, False, True, True, False, False, True, False])
    for a, c in zip(*_tiers(f, x, b)):
        assert _same(a, c)


@pytest.mark.native
def test_native_from_threads_and_after_fork():
    pytest.importorskip("numba")
    x = np.random.default_rng(5).standard_normal(2**19)

    def f(x):
        return fnp.sin(x) * x + 1.0, fnp.sum(x * x)

    g = ft.jit(f, compiler="native")
    want = ft.jit(f)(x)
    bad = []

    def work():
        for _ in range(5):
            if not all(map(_same, g(x), want)):
                bad.append(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its status
        os._exit(0 if all(map(_same, g(x), want)) else 3)
    assert os.waitpid(pid, 0)[1] == 0
