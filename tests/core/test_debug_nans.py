"""debug_nans and debug_infs (functrans.config, core.check_values, the checks
of generated code), the user's line each equation keeps (Eqn.source), and
warnings from generated code naming that line."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from _modules import module_from_source

import functrans as ft
import functrans.numpy as fnp
from functrans import config, core

THIS = __file__


@pytest.fixture
def nans():
    config.update("debug_nans", True)
    yield
    config.update("debug_nans", False)


@pytest.fixture
def infs():
    config.update("debug_infs", True)
    yield
    config.update("debug_infs", False)


def _line(fn, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def log_of(x):
    y = fnp.log(x)
    return fnp.sum(y)


def sqrt_times_zero(x):
    return fnp.sum(fnp.sqrt(x) * 0.0)


LOG_LINE = _line(log_of, "fnp.log")
SQRT_LINE = _line(sqrt_times_zero, "fnp.sqrt")


@pytest.mark.parametrize("transform", [lambda f: f, ft.jit, lambda f: ft.jit(ft.jit(f)),
                                       lambda f: ft.vmap(f), lambda f: ft.jit(ft.vmap(f))],
                         ids=["eager", "jit", "jit_jit", "vmap", "jit_vmap"])
def test_the_first_nan_names_the_primitive_and_the_user_line(nans, transform):
    x = np.array([-1.0, 1.0]) if transform(log_of) is log_of else np.array([[-1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError) as info:
            transform(log_of)(x)
    assert str(info.value).startswith(
        "debug_nans: the primitive 'log' produced NaN (1 of 2 elements of its f64[")
    assert f"in log_of ({THIS}:{LOG_LINE}: y = fnp.log(x))" in str(info.value)
    assert "functrans.config.update('debug_nans', False) turns the check off" in str(info.value)


@pytest.mark.parametrize("transform", [ft.grad, lambda f: ft.jit(ft.grad(f)),
                                       lambda f: (lambda x: ft.vjp(f, x)[1](1.0))],
                         ids=["grad", "jit_grad", "vjp"])
def test_a_nan_of_the_backward_pass_names_the_line_it_derives_from(nans, transform):
    # d/dx sqrt(x) * 0 at 0 is 0.5 / sqrt(0) * 0 = inf * 0: NaN in the backward pass only
    x = np.array([0.0, 1.0])
    assert not np.isnan(sqrt_times_zero(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError) as info:
            transform(sqrt_times_zero)(x)
    message = str(info.value)
    assert "debug_nans: the primitive 'mul' produced NaN" in message
    assert (f"in an operation a transform derived from sqrt_times_zero ({THIS}:{SQRT_LINE}: "
            "return fnp.sum(fnp.sqrt(x) * 0.0))") in message


def log_shifted(x):
    return fnp.sum(fnp.log(x - 1.0))


LOG_SHIFTED_LINE = _line(log_shifted, "fnp.log")


@pytest.mark.parametrize("transform", [
    ft.grad, lambda f: ft.grad(lambda x: (f(x), x), has_aux=True),
    lambda f: ft.grad(lambda x: f(x) + 0.0 * fnp.sum(fnp.sin(fnp.cos(x)) ** 3 * x ** 2 - x) * 8),
], ids=["grad", "grad_has_aux", "grad_longer"])
def test_grad_checks_the_value_when_the_nan_is_only_there(transform):
    # d/dx log(x - 1) = 1 / (x - 1) is finite at 0.5: the value is the only NaN,
    # and grad, which does not return it, used to skip computing it.
    x = np.array([0.5, 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = transform(log_shifted)(x)
        assert np.isfinite(out[0] if isinstance(out, tuple) else out).all()
        for flag, what in (("debug_nans", "NaN"), ("debug_infs", "an infinity")):
            config.update(flag, True)
            try:
                with pytest.raises(FloatingPointError) as info:
                    transform(log_shifted)(x if flag == "debug_nans" else x + 0.5)
            finally:
                config.update(flag, False)
            assert str(info.value).startswith(f"{flag}: the primitive 'log' produced {what} (1 "
                                              "of 2 elements of its f64[2] result)")
            assert f"log_shifted ({THIS}:{LOG_SHIFTED_LINE}: " in str(info.value)


def test_infinities_are_checked_only_under_debug_infs(nans):
    f = ft.jit(lambda x: 1.0 / x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert f(np.array([0.0, -0.0])).tolist() == [np.inf, -np.inf]  # NaNs only: fine
        config.update("debug_infs", True)
        try:
            with pytest.raises(FloatingPointError, match=r"^debug_infs: the primitive 'div' "
                               r"produced an infinity \(2 of 2 elements of its f64\[2\] result\)"):
                f(np.array([0.0, -0.0]))
        finally:
            config.update("debug_infs", False)


def test_an_infinity_of_the_forward_pass_of_grad(infs):
    g = ft.grad(lambda x: fnp.sum(fnp.sqrt(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError, match=r"debug_infs: the primitive '(div|mul)' "
                           r"produced an infinity .* in an operation a transform derived from"):
            g(np.array([0.0, 1.0]))


def test_values_without_nans_integers_and_complex(nans, infs):
    f = ft.jit(lambda x, i: (x * 2.0, i // 1, fnp.exp(x * 1j)))
    out = f(np.array([-0.0, 1e300]), np.array([1, 2]))
    assert np.signbit(out[0][0]) and out[1].tolist() == [1, 2]
    with pytest.raises(FloatingPointError, match=r"'log' produced NaN .* of its c128\[\] result"):
        fnp.log(np.complex128(complex(np.nan, 0.0)) + 0.0)
    with pytest.raises(FloatingPointError, match=r"'mul' produced an infinity"):
        f(np.array([1e308, 1.0]), np.array([1, 2]))


def test_generated_code_has_no_checks_while_the_flags_are_off():
    f = ft.jit(lambda x: fnp.log(x) + 1.0)
    x = np.ones(3)
    assert "_check" not in f.lower(x).source
    config.update("debug_nans", True)
    try:
        assert "_check(" in f.lower(x).source
        assert f(x).tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(FloatingPointError):
            f(-x)  # compiled before the flag: the program was generated again
    finally:
        config.update("debug_nans", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(f(-x)).all()  # and again without the checks
    assert "_check" not in f.lower(x).source


def test_the_settings_are_checked_and_read_from_the_environment(monkeypatch):
    with pytest.raises(ValueError, match=r"debug_nans must be True or False, got 1"):
        config.update("debug_nans", 1)
    assert config.debug_nans is False
    assert config._parse_flag("debug_nans", "TRUE") is True
    assert config._parse_flag("debug_infs", "0") is False
    with pytest.raises(ValueError, match=r"debug_infs must be 1 or 0 \(true or false\), got "
                       r"the string 'yes'"):
        config._parse_flag("debug_infs", "yes")


# -- the user's line of each equation ----------------------------------------------


def test_equations_keep_the_user_line_through_transforms(nans):
    # (under debug_nans: otherwise a program cached for another function alike,
    # with that function's lines, may be reused)
    def f(x):
        y = fnp.sin(x)
        return fnp.sum(y * y)

    sin_line, sum_line = _line(f, "fnp.sin"), _line(f, "fnp.sum")
    closed = ft.make_jaxpr(ft.grad(f))(np.ones(2))
    where = [(e.primitive.name, core.source_location(e.source)) for e in closed.eqns]
    assert ("cos", (THIS, sin_line, "f")) in where and ("mul", (THIS, sum_line, "f")) in where
    assert all(file == THIS and function == "f" for _, (file, _, function) in where)
    # programs alike but for their lines are one program, but not under debug_nans
    g, h = _two_sines()
    assert g == g and g != h
    config.update("debug_nans", False)
    assert _two_sines()[0] == _two_sines()[1]


def _two_sines():
    g = ft.make_jaxpr(lambda x: fnp.sin(x))(np.ones(2)).jaxpr
    h = ft.make_jaxpr(lambda x: fnp.sin(x))(np.ones(2)).jaxpr
    return g, h


def test_a_cached_program_of_another_function_does_not_name_its_lines(nans):
    def f(x):
        return fnp.sum(fnp.sqrt(x) * 0.0)  # the same program as sqrt_times_zero's

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn, line in ((sqrt_times_zero, SQRT_LINE), (f, _line(f, "fnp.sqrt"))):
            with pytest.raises(FloatingPointError, match=rf"{THIS}:{line}:"):
                ft.grad(fn)(np.array([0.0, 1.0]))


def test_a_numpy_warning_in_generated_code_names_the_user_line(tmp_path):
    helper = tmp_path / "helper_module.py"
    module = module_from_source(helper, "import functrans.numpy as fnp\n\n\ndef reciprocal(x):\n"
                                "    return 1.0 / x\n")

    def f(x):
        y = fnp.log(x)
        return module.reciprocal(y)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ft.jit(f)(np.array([-1.0, 1.0]))
    where = {(str(w.message).split(" encountered")[0], w.filename, w.lineno) for w in caught}
    assert ("invalid value", THIS, _line(f, "fnp.log")) in where
    assert ("divide by zero", str(helper), 5) in where
