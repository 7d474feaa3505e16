"""The shape rules' errors: every primitive's row in ``tests/_specs.py``
lists bad shapes, axes, dtypes and params (``Spec.errors``), checked on the
rule itself and when traced inside a user function, which the message must
name.  A row without errors either draws every dtype and must refuse exactly
those NumPy refuses (checked in tests/specs/test_values.py) or has a shape rule
that accepts every operand.
"""

from __future__ import annotations

import numpy as np
import pytest
from _specs import SPECS

import functrans
from functrans import core
from functrans.core import ShapeDtypeStruct, registry
from functrans.errors import AxisError, DTypeError, FunctransError, ShapeError

# (primitive, operand avals, params, error class, message pattern)
ERRORS = [(name, *bad) for name, spec in SPECS.items() for bad in spec.errors]
#: "<primitive>-<k>": the k-th bad call of the primitive's row
IDS = [f"{name}-{k}" for name, spec in SPECS.items() for k in range(len(spec.errors))]
TRACEABLE = [(row, i) for row, i in zip(ERRORS, IDS) if row[1]]  # those with operands


@pytest.mark.parametrize("name, avals, params, error, match", ERRORS, ids=IDS)
def test_shape_rule_errors(name, avals, params, error, match):
    with pytest.raises(error, match=match):
        registry[name].abstract_eval(*avals, **params)


@pytest.mark.parametrize("name, avals, params, error, match", [row for row, _ in TRACEABLE],
                         ids=[i for _, i in TRACEABLE])
def test_shape_rule_errors_at_trace_time_name_the_function(name, avals, params, error, match):
    prim = registry[name]

    def my_fun(*xs):
        return [prim.bind(*xs, **params)]

    args = [ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    with pytest.raises(error, match=match) as info:
        core.trace_to_jaxpr(my_fun, args)
    if issubclass(error, FunctransError):
        assert str(info.value).startswith("my_fun: ")


def test_every_shape_rule_has_error_cases():
    uncovered = sorted(name for name, spec in SPECS.items()
                       if not (spec.errors or spec.impl.numpy_dtypes or spec.accepts_all))
    assert not uncovered, f"rows without errors in tests/_specs.py: {uncovered}"
    claimed = sorted(name for name, spec in SPECS.items() if spec.accepts_all and spec.errors)
    assert not claimed, f"rows that accept every operand but list errors: {claimed}"


def test_trace_time_error_names_the_user_function_and_the_types():
    from functrans.primitives.elementwise import add

    def my_fun(x, y):
        return [add(x, y)]

    args = [ShapeDtypeStruct((3,), np.float64), ShapeDtypeStruct((4,), np.float64)]
    with pytest.raises(ShapeError, match=r"my_fun") as info:
        functrans.make_jaxpr(my_fun)(*args)
    assert "f64[3]" in str(info.value) and "f64[4]" in str(info.value)
    with pytest.raises(ShapeError, match=r"^my_fun: add: shapes f64\[3\] and f64\[4\]"):
        core.trace_to_jaxpr(my_fun, args)


def test_error_classes_derive_from_the_builtin_numpy_would_raise():
    assert issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, TypeError)
    assert issubclass(AxisError, IndexError) and issubclass(AxisError, ValueError)
