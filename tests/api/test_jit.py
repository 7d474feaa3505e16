"""jit: caching, static arguments, lowering, composition with other transforms,
and its errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _bits import bits_equal

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.jit import JitCacheMiss


def f(x, y):
    return fnp.sin(x) * y + x ** 2


def test_values_match_the_unjitted_function():
    x, y = np.linspace(0, 1, 5), np.arange(5.0)
    np.testing.assert_allclose(ft.jit(f)(x, y), f(x, y))
    assert type(ft.jit(f)(x, y)) is np.ndarray


def test_cache_hits_on_same_avals_and_misses_on_new_shapes_and_dtypes():
    g = ft.jit(f)
    g(np.ones(3), np.ones(3))
    g(np.zeros(3), np.ones(3))
    assert g.cache_info() == (1, 1, 1)
    g(np.ones(4), np.ones(4))
    g(np.ones(3, np.float32), np.ones(3, np.float32))
    assert g.cache_info().misses == 3 and g.cache_info().entries == 3


def test_python_scalars_are_keyed_by_type_not_value():
    g = ft.jit(f)
    np.testing.assert_allclose(g(np.ones(2), 1.0), f(np.ones(2), 1.0))
    np.testing.assert_allclose(g(np.ones(2), 2.5), f(np.ones(2), 2.5))
    assert g.cache_info().misses == 1
    g(np.ones(2), 2)  # an int is another type
    assert g.cache_info().misses == 2


def test_a_python_scalar_stays_weak():
    out = ft.jit(lambda x, s: x * s)(np.ones(2, np.float32), 3.0)
    assert out.dtype == np.float32


def test_static_arguments_are_part_of_the_key():
    def power(x, n):
        for _ in range(n - 1):
            x = x * x
        return x

    g = ft.jit(power, static_argnums=1)
    np.testing.assert_allclose(g(np.full(2, 2.0), 3), [16.0, 16.0])
    np.testing.assert_allclose(g(np.full(2, 2.0), 2), [4.0, 4.0])
    assert g.cache_info().misses == 2
    h = ft.jit(lambda x, *, mode: x + 1 if mode == "add" else x * 2, static_argnames="mode")
    np.testing.assert_allclose(h(np.ones(2), mode="add"), [2.0, 2.0])
    np.testing.assert_allclose(h(np.ones(2), mode="mul"), [2.0, 2.0])


def test_pytree_structure_changes_make_a_new_entry_never_a_wrong_result():
    g = ft.jit(lambda t: t[0] + t[1] if isinstance(t, tuple) else t["a"] * t["b"])
    np.testing.assert_allclose(g((np.ones(2), np.ones(2))), [2.0, 2.0])
    np.testing.assert_allclose(g({"a": np.full(2, 3.0), "b": np.full(2, 2.0)}), [6.0, 6.0])
    assert g.cache_info().entries == 2


def test_constants_are_baked_in_at_trace_time():
    scale = np.array([2.0])
    g = ft.jit(lambda x: x * scale)
    g(np.ones(1))
    scale = np.array([10.0])  # rebinding the global does not reach the cached program  # noqa: F841
    np.testing.assert_allclose(g(np.ones(1)), [2.0])


def test_jit_composes_with_other_transforms_both_ways():
    x = np.array([0.3, 0.8])
    y = np.array([1.0, 2.0])
    want = ft.grad(lambda x: fnp.sum(f(x, y)))(x)
    np.testing.assert_allclose(ft.jit(ft.grad(lambda x: fnp.sum(f(x, y))))(x), want)
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(ft.jit(f)(x, y)))(x), want)
    np.testing.assert_allclose(ft.vmap(ft.jit(f))(np.stack([x, y]), np.stack([y, x])),
                               np.stack([f(x, y), f(y, x)]))
    np.testing.assert_allclose(ft.jit(ft.jit(f))(x, y), f(x, y))


def test_lower_gives_the_optimised_jaxpr_and_the_generated_source():
    lowered = ft.jit(f).lower(ft.ShapeDtypeStruct((3,), np.float64), 2.0)
    assert "sin" in str(lowered.jaxpr)
    assert lowered.source.startswith("def f(")
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(np.ones(3), 2.0), f(np.ones(3), 2.0))


def test_optimisation_removes_dead_and_repeated_work():
    def g(x):
        unused = fnp.exp(x)  # noqa: F841
        return fnp.sin(x) + fnp.sin(x) * 1.0 + 0.0

    text = str(ft.jit(g).lower(np.ones(3)).jaxpr)
    assert text.count("sin") == 1 and "exp" not in text and "mul" not in text


def test_explain_cache_misses_names_the_changed_leaf():
    g = ft.jit(f, explain_cache_misses=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g(np.ones(3), np.ones(3))
        g(np.ones(4), 1.0)
    messages = [str(w.message) for w in caught if issubclass(w.category, JitCacheMiss)]
    assert "first call" in messages[0]
    assert "[0][0]: f64[3] -> f64[4]" in messages[1]
    assert "[0][1]: f64[3] -> f64[]" in messages[1]


def test_python_control_flow_on_traced_values_raises_naming_the_function():
    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError, match=r"branchy: bool\(\) needs a concrete value.*"
                                                  r"test_jit\.py:\d+"):
        ft.jit(branchy)(np.ones(2))


def test_static_argument_errors():
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): static argument 1 of type list is not "
                                        r"hashable"):
        ft.jit(lambda x, n: x, static_argnums=1)(np.ones(2), [1, 2])
    with pytest.raises(ValueError, match=r"static_argnums value 3 is out of range"):
        ft.jit(lambda x: x, static_argnums=3)(np.ones(2))
    with pytest.raises(TypeError, match=r"static argument 1 is a traced value"):
        ft.grad(lambda x: ft.jit(lambda a, b: a * b, static_argnums=1)(x, x))(1.0)


# -- jit's static arguments ----------------------------------------------------------


def _times(x, c):
    return x * c


@pytest.mark.parametrize("order", [(True, 1, 1.0), (1.0, 1, True)])
def test_static_bool_int_float_are_separate_entries(order):
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([3, -2], np.int8)
    for c in order:
        got, want = jf(x, c), x * c
        assert got.dtype == want.dtype and np.array_equal(got, want), (c, got, want)


@pytest.mark.parametrize("order", [(0.0, -0.0), (-0.0, 0.0)])
def test_static_signed_zeros_are_separate_entries(order):
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([3.0, -2.0])
    for c in order:
        assert bits_equal(jf(x, c), x * c), c
        assert bits_equal(jf(x, (c,)[0]), x * c)
    jg = ft.jit(lambda x, cs: x * cs[0], static_argnames="cs")
    for c in order:
        assert bits_equal(jg(x, cs=(c,)), x * c), c


def test_static_numpy_scalars_keep_their_dtype():
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([1.5], np.float32)
    for c in (np.float32(2.0), np.float64(2.0), 2.0):
        got, want = jf(x, c), x * c
        assert got.dtype == want.dtype, (type(c), got.dtype, want.dtype)


def test_static_miss_message_names_the_values():
    jf = ft.jit(_times, static_argnums=1, explain_cache_misses=True)
    with pytest.warns(UserWarning, match="first call"):
        jf(np.ones(2), -0.0)
    with pytest.warns(UserWarning, match=r"static arguments changed: \(\(1, 0\.0\),\)"):
        jf(np.ones(2), 0.0)
