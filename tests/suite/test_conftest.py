"""The test suite's ``check_transform_outputs`` (tests/conftest.py): every
Jaxpr a transform or the pass pipeline returns is type-checked, wherever the
entry point is looked up from."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
from conftest import CHECKED, _holders

import functrans as ft
from functrans import core
from functrans.errors import JaxprTypeError


def test_every_reference_to_an_entry_point_is_checked():
    for module, attr in CHECKED:
        wrapper = getattr(importlib.import_module(module), attr)
        original = wrapper.__wrapped__
        stale = [m.__name__ for m in _holders()
                 if any(value is original for value in vars(m).values())]
        assert not stale, f"{module}.{attr} is not checked where {stale} look it up"
    # Looked up by name from modules that import it (api, jit, the interpreters).
    for name in ("functrans.api", "functrans.jit", "functrans.interpreters.vmap"):
        assert hasattr(sys.modules[name].run_passes, "__wrapped__"), name


def test_an_ill_typed_result_names_the_entry_point():
    closed = ft.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.ones(3))
    sin = closed.jaxpr.eqns[0]
    wrong = core.Var(core.ShapedArray((4,), np.float64))  # sin of f64[3] is f64[3]
    bad = core.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, [wrong],
                     [core.Eqn(sin.primitive, sin.inputs, (wrong,), sin.params)])
    run_passes = sys.modules["functrans.jit"].run_passes
    with pytest.raises(JaxprTypeError, match=r"pipeline\.run_passes returned an ill-typed "
                                             r"Jaxpr: equation 0 \(sin\) produces"):
        run_passes(core.ClosedJaxpr(bad, closed.consts))
