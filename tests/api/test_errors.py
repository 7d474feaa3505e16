"""The error classes of ``functrans.errors``: each derives from the builtin
exception NumPy or Python would raise, so ``except ValueError`` and friends
keep working, and each is raised where the docs say, with a message naming
the user's function."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from functrans.primitives.elementwise import add, neg, sin

import functrans as ft
import functrans.numpy as fnp
from functrans import core, errors

# class: the builtins it must also be
HIERARCHY = {
    errors.ShapeError: (ValueError,),
    errors.LinAlgError: (np.linalg.LinAlgError, ValueError),
    errors.DTypeError: (TypeError,),
    errors.AxisError: (np.exceptions.AxisError, ValueError, IndexError),
    errors.ConcretizationError: (TypeError,),
    errors.MemoryLayoutError: (ValueError,),
    errors.TracerConversionError: (errors.ConcretizationError, TypeError),
    errors.NotLinearError: (TypeError,),
    errors.LeakedTracerError: (RuntimeError,),
    errors.JaxprTypeError: (TypeError,),
    errors.MissingRuleError: (NotImplementedError,),
    errors.UnknownPrimitiveError: (KeyError,),
    errors.DeviceError: (ValueError,),
    errors.GPUUnavailableError: (RuntimeError,),
    errors.KernelCompileError: (RuntimeError,),
    errors.UnboundAxisError: (NameError,),
    errors.CollectiveTimeoutError: (TimeoutError,),
}


def _error_classes():
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, errors.FunctransError) and c is not errors.FunctransError]


def test_every_error_class_has_a_row():
    assert set(_error_classes()) == set(HIERARCHY)


@pytest.mark.parametrize("cls", sorted(HIERARCHY, key=lambda c: c.__name__))
def test_error_classes_derive_from_functrans_error_and_the_builtins(cls):
    assert issubclass(cls, errors.FunctransError)
    for base in HIERARCHY[cls]:
        assert issubclass(cls, base)
    assert cls.__doc__, f"{cls.__name__} needs a docstring saying when it is raised"


def test_unknown_primitive_error_message_is_not_quoted():
    # KeyError's str() would wrap the message in quotes.
    assert str(errors.UnknownPrimitiveError("unknown primitive 'x'")) == "unknown primitive 'x'"
    assert str(KeyError("unknown primitive 'x'")) == "\"unknown primitive 'x'\""


def test_builtin_handlers_catch_functrans_errors():
    def my_fun(x, y):
        return add(x, y)

    with pytest.raises(ValueError, match="my_fun"):  # a ShapeError
        ft.make_jaxpr(my_fun)(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match="<lambda>: neg: not defined"):  # a DTypeError
        ft.make_jaxpr(lambda x: neg(x))(np.ones(3, bool))
    with pytest.raises(TypeError, match="bool"):  # a ConcretizationError
        ft.make_jaxpr(lambda x: sin(x) if x else x)(np.ones(()))


def test_errors_raised_at_trace_time_keep_their_class():
    def my_fun(x):
        return neg(x)

    with pytest.raises(errors.DTypeError) as info:
        ft.make_jaxpr(my_fun)(np.ones(2, bool))
    assert type(info.value) is errors.DTypeError
    assert str(info.value).startswith("my_fun: neg: not defined for operands of type bool[2]")


def test_lookup_of_an_unknown_primitive():
    with pytest.raises(KeyError, match="unknown primitive 'nope'"):
        core.lookup_primitive("nope")


def test_indexing_a_numpy_array_with_a_traced_integer_says_what_to_use():
    table = np.arange(12.0).reshape(4, 3)

    def lookup(i):
        return table[i]

    with pytest.raises(errors.ConcretizationError,
                       match=r"^lookup: .*functrans\.numpy\.take\(array, index, axis=0\)"):
        ft.jit(lookup)(2)
    np.testing.assert_array_equal(ft.jit(lambda i: fnp.take(table, i, axis=0))(2), table[2])
