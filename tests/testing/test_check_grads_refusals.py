"""``check_grads`` refuses calls that would check nothing: ``order < 1``, no
mode, or no float or complex argument to differentiate with respect to; and
modes other than ``'fwd'`` and ``'rev'``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from functrans.testing import check_grads


def square(x):
    return x * x


@pytest.mark.parametrize("order", [0, -1])
def test_an_order_below_one_is_refused(order):
    with pytest.raises(ValueError, match=rf"check_grads\(square\): order={order} checks nothing"):
        check_grads(square, (np.array([1.0, 2.0]),), order=order)


def test_no_mode_is_refused():
    with pytest.raises(ValueError, match=r"check_grads\(square\): modes=\(\) checks nothing"):
        check_grads(square, (np.array([1.0, 2.0]),), modes=())


@pytest.mark.parametrize("modes, text", [
    (("fwd", "backward"), "modes must be 'fwd' and/or 'rev', got 'backward'"),
    ("fwd", "modes='fwd' is a string; give a tuple, modes=('fwd',)"),
])
def test_an_unknown_mode_is_refused_naming_the_function(modes, text):
    with pytest.raises(ValueError, match=re.escape(f"check_grads(square): {text}")):
        check_grads(square, (np.array([1.0, 2.0]),), modes=modes)


@pytest.mark.parametrize("args", [(np.array([1, 2]),), (np.array([1, 2]), np.array(True)), (3,)])
def test_integer_only_arguments_are_refused(args):
    with pytest.raises(ValueError) as info:
        check_grads(square, args)
    message = str(info.value)
    assert message.startswith("check_grads(square): no argument is a float or complex array")
    assert "args[0] is int" in message
    assert "np.asarray(x, dtype=float)" in message


def test_an_integer_argument_beside_a_float_one_is_held_fixed():
    check_grads(lambda x, n: x ** 2 * n, (np.array([1.0, 2.0]), np.array([3, 4])), order=2)
