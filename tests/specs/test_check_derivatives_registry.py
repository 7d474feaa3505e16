"""``check_derivatives`` over the whole primitive registry (``tests/_specs.py``):
every differentiable primitive, bound on its float operands with the others
held fixed, checked to second order (forward and reverse mode against the
reference, Jacobians, Hessians, ``vmap``, ``jit``) at points the specs draw
away from kinks and singular points, float64 and float32 alike.  No correct
rule may fail: this is the checker's false-alarm test as much as the rules'
test.  The default run draws one point per primitive; the ``slow`` sweep
draws more."""

from __future__ import annotations

import pytest
from _specs import DIFFERENTIABLE, SPECS, bind_with, zero_derivative
from hypothesis import given, settings
from hypothesis import strategies as st

from functrans.testing import check_derivatives


def _check(name, data):
    case = SPECS[name].draw(data.draw)
    if zero_derivative(name, case):
        return
    f = bind_with(name, case, case.diff, gauge=True)
    check_derivatives(f, [case.values[i] for i in case.diff], order=2)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=6, derandomize=True)
@given(data=st.data())
def test_every_primitive(name, data):
    _check(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=25)
@given(data=st.data())
def test_every_primitive_sweep(name, data):
    _check(name, data)
