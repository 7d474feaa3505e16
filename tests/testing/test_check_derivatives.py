"""``check_derivatives``: it passes correct functions in every dtype, catches
wrong derivative rules down to a relative 1e-6 in float64 (forward, reverse,
second derivatives only, some entries only), reports the check, the argument,
the worst entry, both values and the tolerance, and refuses to check
nothing.  ``derivative_test`` runs it under hypothesis and shrinks a failure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_derivatives, derivative_test, kink_distance
from functrans.testing import strategies as fts


def _custom_jvp(f, derivative):
    """``f`` with the JVP rule ``t -> derivative(x) * t``."""
    wrapped = ft.custom_jvp(f)

    @wrapped.defjvp
    def rule(primals, tangents):
        return wrapped(primals[0]), derivative(primals[0]) * tangents[0]

    return wrapped


def _custom_vjp(f, derivative):
    wrapped = ft.custom_vjp(f)
    wrapped.defvjp(lambda x: (f(x), x), lambda x, ct: (derivative(x) * ct,))
    return wrapped


X = np.array([0.3, -1.2, 0.8])
ROOT = Path(__file__).resolve().parents[2]


# -------------------------------------------------------- correct functions


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128])
def test_correct_functions_pass_in_every_dtype(dtype):
    def f(x, w):
        return {"y": np.tanh(x @ w) * np.exp(x[:, 0:1]), "s": fnp.sum(np.sin(w) ** 2)}

    x = np.array([[0.3, -0.5], [0.9, 0.1], [-0.4, 0.7]]).astype(dtype)
    w = np.array([[0.2, -0.1, 0.4], [0.5, 0.3, -0.6]]).astype(dtype)
    checked = check_derivatives(f, (x, w), order=2)
    assert "order 1: forward mode (jvp) against the reference" in checked.checks
    assert "order 2: reverse mode against forward mode (dot product)" in checked.checks


def test_third_derivatives_are_checked_at_order_three():
    checked = check_derivatives(lambda x: np.sin(x) * x, (X,), order=3)
    assert "order 3: forward mode (jvp) against the reference" in checked.checks
    wrong_third = _custom_jvp(np.sin, lambda x: np.cos(x) + 1e-6 * (
        x - ft.lax.stop_gradient(x)) ** 2)
    check_derivatives(wrong_third, (X,), order=2)
    with pytest.raises(AssertionError, match="order 3, checking x -> jvp"):
        check_derivatives(wrong_third, (X,), order=3)


def test_the_reference_is_the_complex_step_where_f_is_real_analytic():
    assert check_derivatives(lambda x: np.sin(x) * x, (X,)).reference.startswith("complex step")
    # abs of a complex number is its modulus: not analytic, so Richardson.
    assert check_derivatives(lambda x: np.abs(x) * x, (X,)).reference.startswith("Richardson")
    assert check_derivatives(np.sin, (X,), reference="richardson").reference.startswith(
        "Richardson")


def test_integer_arguments_are_held_fixed_and_pytrees_are_named():
    def f(params, n):
        return params["w"] ** n + params["b"]

    args = ({"w": np.array([0.5, 1.5]), "b": np.array(0.25)}, np.array([2, 3]))
    check_derivatives(f, args)
    wrong = _custom_jvp(lambda w: w ** 2, lambda w: 2 * w * (1 + 1e-6))
    with pytest.raises(AssertionError, match=re.escape("at args[0]['w'], entry (1,)")):
        check_derivatives(lambda p, n: wrong(p["w"]) * n + p["b"], args, modes=("rev",))


def test_sparse_jacobians_and_hessians_are_checked_against_dense_ones():
    pytest.importorskip("scipy")
    checked = check_derivatives(lambda x: x[1:] * x[:-1] + np.sin(x[1:]), (X,), sparse=True)
    assert "order 1: sparse Jacobian against dense" in checked.checks
    assert "order 2: sparse Hessian against dense" in checked.checks


# ---------------------------------------------------------- wrong functions


@pytest.mark.parametrize("error", [-2.0, 1e-3, 1e-6])
def test_a_forward_rule_off_by_a_relative_error_is_caught(error):
    f = _custom_jvp(np.sin, lambda x: np.cos(x) * (1 + error))
    with pytest.raises(AssertionError) as info:
        check_derivatives(f, (X,))
    message = str(info.value)
    assert message.startswith("check_derivatives(sin): forward mode (jvp) disagrees with the "
                              "reference along a random direction\n  order 1, checking f\n")
    assert re.search(r"got: +-?\d", message) and re.search(r"expected: +-?\d", message)
    assert re.search(r"tolerance: [\d.e-]+ \(rtol 1e-08 of the largest derivative for float64, "
                     r"plus 10x the reference's error estimate", message)


def test_a_forward_rule_wrong_for_some_entries_only_is_caught_at_that_entry():
    f = _custom_jvp(np.sin, lambda x: np.cos(x) * fnp.where(x > 0.5, 1 + 1e-6, 1.0))
    with pytest.raises(AssertionError, match=r"at out, entry \(2,\)"):
        check_derivatives(f, (X,), directions=0)


def test_a_wrong_second_derivative_only_is_caught():
    # cos(x) + 1e-6 (x - stop_gradient(x)): cos(x) everywhere, with a
    # derivative 1e-6 off.
    f = _custom_jvp(np.sin, lambda x: np.cos(x) + 1e-6 * (x - ft.lax.stop_gradient(x)))
    check_derivatives(f, (X,), order=1)
    with pytest.raises(AssertionError, match="order 2, checking x -> jvp\\(f, x, v\\)"):
        check_derivatives(f, (X,), order=2)


#: Points where QR's second derivatives (of its R, and of Q and R together) are
#: zero but computed from terms that cancel, amplified by 1 / r[0, 0]: the
#: derivative rules leave rounding of 1e-13 there, which the reverse-against-
#: forward dot product, jacfwd == jacrev and the two Hessians once took for a
#: mismatch (an exact 0 against 3.6e-13, with a tolerance of 3.1e-14).
_QR_NEAR_ZERO = [
    (np.array([[[[2.00573559, 0.15636812]], [[-2.05020892, -1.34216828]]],
               [[[-0.08341817, 1.64204209]], [[0.01540647, 2.44860098]]]]), True),
    (np.array([[[0.01450009, -1.74401245]], [[1.00515489, -1.87123249]]]), True),
    (np.array([[0.04840373, -1.65172695]]), False),
    (np.array([[-0.02611613, 0.96728742, -1.81277559]]), False),
]


@pytest.mark.parametrize("x, r_only", _QR_NEAR_ZERO)
def test_second_derivatives_that_cancel_to_zero_are_no_false_alarm(x, r_only):
    def qr(a):
        q, r = fnp.linalg.qr(a)
        return r if r_only else (q, r)

    checked = check_derivatives(qr, (x,), order=2)
    assert "order 2: reverse mode against forward mode (dot product)" in checked.checks
    assert "order 2: forward-over-reverse == reverse-over-reverse" in checked.checks


def test_a_wrong_second_derivative_of_that_size_is_still_caught():
    # The allowance near zero scales with the function's values: at values of
    # 1e-12, a second derivative off by an absolute 3.6e-13 is a mismatch.
    scale = 1e-12

    def derivative(x):
        return scale * np.cos(x) + 0.36 * scale * (x - ft.lax.stop_gradient(x))

    f = _custom_jvp(lambda x: scale * np.sin(x), derivative)
    check_derivatives(f, (X,), order=1)
    with pytest.raises(AssertionError, match="order 2, checking"):
        check_derivatives(f, (X,), order=2)


def test_a_custom_vjp_is_checked_against_the_reference_directly():
    right = _custom_vjp(np.sin, np.cos)
    checked = check_derivatives(right, (X,))
    assert "order 1: reverse mode (vjp) against the reference" in checked.checks
    assert any("forward mode" in check and "custom_vjp(sin)" in why
               for check, why in checked.skipped)
    wrong = _custom_vjp(np.sin, lambda x: np.cos(x) * (1 + 1e-6))
    with pytest.raises(AssertionError, match="reverse mode \\(vjp\\) disagrees with the "
                       "reference\n  order 1, checking f\n  at args\\[0\\], entry"):
        check_derivatives(wrong, (X,))


def test_a_wrong_transpose_rule_is_caught_in_reverse_mode_only(monkeypatch):
    reduce_sum = ft.core.registry["reduce_sum"]
    right = reduce_sum.transpose

    def wrong(ct, *args, **params):
        return [None if c is None else c * (1 + 1e-6) for c in right(ct, *args, **params)]

    monkeypatch.setattr(reduce_sum, "transpose", wrong)
    # A program no earlier test differentiated (linearized programs are cached).
    f = lambda x: fnp.sum(np.sin(x) * 1.2345678, axis=1)  # noqa: E731
    x = np.array([[0.3, -1.2, 0.8], [0.5, 0.1, -0.7]])
    check_derivatives(f, (x,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="reverse mode \\(vjp\\) disagrees with the reference"):
        check_derivatives(f, (x,), order=1)


def test_a_wrong_batching_rule_is_caught(monkeypatch):
    sin = ft.core.registry["sin"]
    right = sin.batch

    def wrong(values, dims, **params):
        out, dim = right(values, dims, **params)
        return out * (1 + 1e-9), dim

    monkeypatch.setattr(sin, "batch", wrong)
    with pytest.raises(AssertionError, match="vmap disagrees with a Python loop over the batch"):
        # A program no earlier test batched (batched programs are cached).
        check_derivatives(lambda x: np.sin(x * 1.2345678), (X,), order=1)


# ------------------------------------------------------------------ refusals


def test_a_check_of_nothing_is_refused():
    with pytest.raises(ValueError, match=r"check_derivatives\(sin\): order=0 checks nothing"):
        check_derivatives(np.sin, (X,), order=0)
    with pytest.raises(ValueError, match=r"check_derivatives\(sin\): no argument is a float"):
        check_derivatives(np.sin, (np.array([1, 2]),))
    only_vjp = _custom_vjp(np.sin, np.cos)
    with pytest.raises(ValueError, match=r"every check was skipped, so nothing was checked: "
                       r"order 1: forward mode: custom_vjp\(sin\)"):
        check_derivatives(only_vjp, (X,), order=1, modes=("fwd",), jit=False, vmap=False)


def test_no_mode_is_refused_rather_than_checking_only_vmap_and_jit():
    # modes=() once ran vmap, jit and the Hessian's symmetry and passed.
    with pytest.raises(ValueError, match=re.escape(
            "check_derivatives(sin): modes=() checks nothing; "
            "give modes=('fwd', 'rev'), ('fwd',) or ('rev',)")):
        check_derivatives(np.sin, (X,), modes=())


@pytest.mark.parametrize("modes, text", [
    (("fwd", "backward"), "modes must be 'fwd' and/or 'rev', got 'backward'"),
    ("rev", "modes='rev' is a string; give a tuple, modes=('rev',)"),
])
def test_an_unknown_mode_is_refused_naming_the_function(modes, text):
    with pytest.raises(ValueError, match=re.escape(f"check_derivatives(sin): {text}")):
        check_derivatives(np.sin, (X,), modes=modes)


def test_an_unknown_reference_is_refused():
    with pytest.raises(ValueError, match=re.escape(
            "check_derivatives(sin): reference must be 'auto' or 'richardson', got 'complex'")):
        check_derivatives(np.sin, (X,), reference="complex")


# ---------------------------------------------------- kinks and strategies


def test_kink_distance_finds_the_nearest_kink_or_singular_point():
    assert kink_distance(lambda x: fnp.sum(np.abs(x - 1.0)), np.array([0.5, 1.001])) == \
        pytest.approx(1e-3, rel=1e-9)
    assert kink_distance(lambda x: fnp.where(x > 0.2, x, 0.0), np.array([0.25])) == \
        pytest.approx(0.05 / 1.0)
    assert kink_distance(lambda x: np.log(x) + np.sqrt(x + 1.0), np.array([0.01])) == \
        pytest.approx(0.01)
    assert kink_distance(lambda x: fnp.max(x), np.array([2.0, 2.004, -1.0])) == \
        pytest.approx(0.004 / 2.004)
    assert kink_distance(np.sin, X) == np.inf


def test_kink_distance_is_not_hidden_by_an_infinite_or_nan_entry():
    # |inf - 0| / inf is NaN: it once hid the kink of the other entry.
    total_abs = lambda x: fnp.sum(np.abs(x))  # noqa: E731
    assert kink_distance(total_abs, np.array([np.inf, 0.0])) == 0.0
    assert kink_distance(total_abs, np.array([np.inf, 0.5])) == pytest.approx(0.5)
    assert kink_distance(total_abs, np.array([np.nan, 0.5])) == 0.0
    assert kink_distance(lambda x: np.maximum(x, 1.0), np.array([np.inf, 1.0])) == 0.0
    assert kink_distance(lambda x: np.maximum(x, -np.inf), np.array([0.5])) == 1.0
    assert kink_distance(total_abs, np.array([-0.0, 2.0])) == 0.0


def test_kink_distance_ignores_integer_operands_and_empty_axes():
    # An integer argument is held fixed: abs and % at its zeros are no kink.
    assert kink_distance(lambda x, n: x * np.abs(n), np.array([0.5]), np.array([0, 2])) == np.inf
    assert kink_distance(lambda x, n: x * (n % 3), np.array([0.5]), np.array([3])) == np.inf
    assert kink_distance(lambda x: x % 2, np.array([4.5])) == pytest.approx(0.25 / 2.25)
    assert kink_distance(lambda x: fnp.sort(x, axis=1), np.zeros((3, 0))) == np.inf
    assert kink_distance(lambda x: fnp.max(x, axis=1), np.zeros((0, 3))) == np.inf


@settings(max_examples=30, suppress_health_check=[HealthCheck.filter_too_much])
@given(x=fts.arrays(np.float64, (4,), min_value=-2, max_value=2))
def test_assume_smooth_keeps_finite_differences_valid(x):
    def f(x):
        return np.abs(x) * np.maximum(x, 0.3) + fnp.sort(x)

    fts.assume_smooth(f, (x,))
    check_derivatives(f, (x,), order=2)


# ----------------------------------------------------------- derivative_test


@derivative_test(order=2, free_axes=(0, 1), max_examples=15)
def test_derivative_test_on_a_correct_function():
    def f(a, x):
        # diagonally dominant at every draw (entries of a in [-2, 2], at most
        # a few rows): well-conditioned, so finite differences hold
        return np.linalg.solve(a / 4 + 4 * np.eye(a.shape[0]), np.tanh(x))

    return f, (np.eye(3), np.zeros(3))


def test_derivative_test_shrinks_a_failure_to_the_smallest_input():
    # Wrong only where some |x| > 1, with the sizes of its one axis free.
    wrong = _custom_jvp(np.sin, lambda x: np.cos(x) * fnp.where(np.abs(x) > 1, 1.001, 1.0))

    @derivative_test(order=1, free_axes=0, max_examples=100, derandomize=True)
    def test_wrong():
        return wrong, (np.zeros(4),)

    with pytest.raises(AssertionError, match="forward mode") as info:
        test_wrong()
    assert test_wrong.__name__ == "test_wrong"
    # Shrunk to one entry, beyond 1 where the rule is wrong.
    shrunk = re.search(r"args=\(array\(\[(-?[\d.]+)\]\),\)", "\n".join(info.value.__notes__))
    assert shrunk and abs(float(shrunk.group(1))) > 1, info.value.__notes__


def test_importing_functrans_testing_does_not_import_hypothesis():
    code = ("import sys, functrans.testing as t; t.check_derivatives; "
            "assert 'hypothesis' not in sys.modules; t.derivative_test; "
            "assert 'hypothesis' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
